//! The last transitions of a breaker, kept in a fixed ring: no heap, `no_std`, lock-free.
//!
//! [`History`] is an [`Observer`] that records every transition it is told of into a ring of
//! `N` slots, then tells the observer it wraps. Nothing happens per call: a breaker tells
//! its observer only when its phase changes, so a breaker with a history costs on its
//! closed-state path exactly what it costs without one. The ring is read back through
//! [`Observer::history`], which works through `dyn Observer` too: that is how the
//! [`registry`](crate::registry) finds it, and how every [`Report`](crate::registry::Report)
//! (and its JSON, with the `serde` feature) carries a breaker's recent transitions.
//!
//! ```
//! use breaker_core::{registry, Duration, History, Instant, ManualClock, Phase, Policy, SharedBreaker};
//!
//! static POLICY: Policy = Policy::new(1, Duration::from_secs(30));
//! // The last 16 transitions, and no other observer.
//! static UPLINK: SharedBreaker<History<16>> = SharedBreaker::with_observer(&POLICY, History::new(()));
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//! breaker_core::register!(UPLINK, "doc-history/uplink", CLOCK);
//!
//! UPLINK.force_open(Instant::ZERO);
//! UPLINK.reset(Instant::from_millis(5_000));
//! let report = registry::get("doc-history/uplink").unwrap().report();
//! let phases: Vec<Phase> = report.history.unwrap().iter().map(|t| t.to).collect();
//! assert_eq!(phases, [Phase::Open, Phase::Closed]); // oldest first
//! ```
//!
//! # Concurrent writers
//!
//! Each slot is two atomic words, each tagged with the number of the transition it holds
//! (its ticket, taken with one `fetch_add`). A writer never waits for another: it takes a
//! ticket and stores each word by compare-and-swap unless the slot already holds a newer
//! ticket's (retrying only when another writer has just changed that word), so when more
//! than `N` transitions race for the ring the newest win every slot. A reader keeps a slot
//! only when both words carry the ticket it expects there, so it never sees half of one
//! transition and half of another; a transition still being written, or one overwritten
//! while it reads, is left out. Transitions of a shared breaker that race on different threads are recorded in the
//! order their threads reach the history, which may differ from the order they took effect
//! by a few microseconds: each one's [`Transition::at`] says when it did.

use core::fmt;
use core::hash::{Hash, Hasher};

use crate::atomic::{AtomicU64, Ordering};
use crate::{Duration, Instant, Observer, Phase, Quota, QuotaObserver, Reason, Transition, WindowStore};

/// The most transitions a [`History`] keeps: its `N` is 1 to this.
pub const MAX_HISTORY: usize = 1024;

/// An [`Observer`] keeping the last `N` transitions (1 to [`MAX_HISTORY`]) in a fixed ring,
/// and telling `O` (`()` for nobody) of each one. See [`crate::history`].
///
/// It holds `N` slots of 16 bytes and an 8-byte counter, in the breaker itself (a
/// `static`, typically): no heap. A windowed breaker keeps its window beside it:
/// `Windowed::calls(History::new(observer))`.
///
/// ```
/// use breaker_core::{Breaker, Duration, History, Instant, Outcome, Phase, Policy, Reason};
///
/// let mut b = Breaker::with_observer(Policy::new(1, Duration::from_secs(10)), History::<4>::new(()));
/// let p = b.try_acquire(Instant::ZERO).unwrap();
/// b.record(p, Outcome::STRIKE, Instant::ZERO);
/// let recent = b.observer().recent();
/// let t = recent.last().unwrap();
/// assert_eq!((t.from, t.to, t.why, t.cooldown), (Phase::Closed, Phase::Open, Reason::Strikes, Duration::from_secs(10)));
/// assert_eq!(recent.recorded(), 1);
/// ```
pub struct History<const N: usize, O = ()> {
    /// The next ticket: how many transitions were ever recorded.
    next: AtomicU64,
    slots: [Slot; N],
    observer: O,
}

impl<const N: usize, O> History<N, O> {
    const CHECKED: () = assert!(
        N >= 1 && N <= MAX_HISTORY,
        "a History keeps 1 to MAX_HISTORY transitions"
    );

    /// An empty history in front of `observer`.
    ///
    /// # Panics
    /// If `N` is 0 or above [`MAX_HISTORY`]: a compile error.
    ///
    /// ```compile_fail
    /// use breaker_core::History;
    ///
    /// static NOTHING_KEPT: History<0> = History::new(()); // a History keeps 1 to MAX_HISTORY transitions
    /// ```
    #[cfg(not(loom))]
    pub const fn new(observer: O) -> History<N, O> {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECKED;
        History {
            next: AtomicU64::new(0),
            slots: [const { Slot::new() }; N],
            observer,
        }
    }

    /// An empty history in front of `observer` (not `const` under loom).
    #[cfg(loom)]
    pub fn new(observer: O) -> History<N, O> {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECKED;
        History {
            next: AtomicU64::new(0),
            slots: core::array::from_fn(|_| Slot::new()),
            observer,
        }
    }

    /// Records `transition` as the newest; the oldest is forgotten once `N` are kept.
    /// Lock-free: a few atomic operations, never waiting for another thread or an
    /// interrupted handler.
    pub fn record(&self, transition: &Transition) {
        let ticket = self.next.fetch_add(1, Ordering::AcqRel);
        let (head, tail) = encode(ticket, transition);
        let slot = &self.slots[(ticket % N as u64) as usize];
        store_newer(&slot.head, head, 32, HEAD_TAG_MASK);
        store_newer(&slot.tail, tail, 38, TAIL_TAG_MASK);
    }

    /// The transitions kept, read at this moment: see [`Recent`].
    pub fn recent(&self) -> Recent<'_> {
        Recent {
            slots: &self.slots,
            end: self.next.load(Ordering::Acquire),
        }
    }

    /// The observer told of every transition after it is recorded.
    pub fn observer(&self) -> &O {
        &self.observer
    }
}

impl<const N: usize, O: Observer> Observer for History<N, O> {
    #[inline]
    fn on_transition(&self, transition: &Transition) {
        self.record(transition);
        self.observer.on_transition(transition);
    }

    #[inline(always)]
    fn window(&self) -> Option<&dyn WindowStore> {
        self.observer.window()
    }

    #[inline(always)]
    fn history(&self) -> Option<Recent<'_>> {
        Some(self.recent())
    }
}

/// A [`QuotaGuard`](crate::QuotaGuard)'s breaker may keep a history too: the samples go on
/// to `O`.
impl<const N: usize, O: QuotaObserver> QuotaObserver for History<N, O> {
    fn on_quota(&self, quota: &Quota) {
        self.observer.on_quota(quota)
    }
}

impl<const N: usize, O: fmt::Debug> fmt::Debug for History<N, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("recent", &self.recent())
            .field("observer", &self.observer)
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, O: defmt::Format> defmt::Format for History<N, O> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "History {{ recent: {}, observer: {} }}",
            self.recent(),
            self.observer
        )
    }
}

/// The transitions a [`History`] held when it was read, oldest first: a copy of its
/// counter and a view of its slots, `Copy` and cheap to pass around (what a
/// [`Report`](crate::registry::Report) carries).
///
/// Iterating reads the slots then: a transition recorded after the reading is never
/// shown; one that a later transition has overwritten since is left out (so is one still
/// being written by another thread at the reading). Two readings are equal when they
/// yield the same transitions.
#[derive(Clone, Copy)]
pub struct Recent<'a> {
    slots: &'a [Slot],
    end: u64,
}

/// Nothing kept, nothing recorded, capacity 0.
impl Default for Recent<'_> {
    fn default() -> Self {
        Recent { slots: &[], end: 0 }
    }
}

impl<'a> Recent<'a> {
    /// The transitions, oldest first.
    pub fn iter(&self) -> RecentIter<'a> {
        RecentIter {
            slots: self.slots,
            next: self.end.saturating_sub(self.slots.len() as u64),
            end: self.end,
        }
    }

    /// The newest transition, if any.
    pub fn last(&self) -> Option<Transition> {
        self.iter().next_back()
    }

    /// How many transitions the history keeps at most (its `N`).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// How many transitions were ever recorded, forgotten ones included.
    pub fn recorded(&self) -> u64 {
        self.end
    }

    /// Whether nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.end == 0
    }
}

impl<'a> IntoIterator for Recent<'a> {
    type Item = Transition;
    type IntoIter = RecentIter<'a>;

    fn into_iter(self) -> RecentIter<'a> {
        self.iter()
    }
}

impl fmt::Debug for Recent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Recent<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Recent<'_> {}

impl Hash for Recent<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for t in self.iter() {
            t.hash(state);
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Recent<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "[");
        for (i, t) in self.iter().enumerate() {
            if i > 0 {
                defmt::write!(f, ", ");
            }
            defmt::write!(f, "{}", t);
        }
        defmt::write!(f, "]");
    }
}

/// The iterator of [`Recent::iter`]: oldest first, or newest first with `.rev()`.
#[derive(Clone, Debug)]
pub struct RecentIter<'a> {
    slots: &'a [Slot],
    /// The ticket of the next transition from the front, and one past the back.
    next: u64,
    end: u64,
}

impl RecentIter<'_> {
    fn read(&self, ticket: u64) -> Option<Transition> {
        let n = self.slots.len() as u64;
        let slot = self.slots.get((ticket % n) as usize)?;
        decode(
            ticket,
            slot.head.load(Ordering::Acquire),
            slot.tail.load(Ordering::Acquire),
        )
    }
}

impl Iterator for RecentIter<'_> {
    type Item = Transition;

    fn next(&mut self) -> Option<Transition> {
        while self.next < self.end {
            let ticket = self.next;
            self.next += 1;
            if let Some(t) = self.read(ticket) {
                return Some(t);
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, usize::try_from(self.end - self.next).ok())
    }
}

impl DoubleEndedIterator for RecentIter<'_> {
    fn next_back(&mut self) -> Option<Transition> {
        while self.next < self.end {
            self.end -= 1;
            if let Some(t) = self.read(self.end) {
                return Some(t);
            }
        }
        None
    }
}

/// One transition in two words, each tagged with its ticket:
///
/// - `head`: the ticket's low 32 bits, then the instant (32 bits);
/// - `tail`: the ticket's low 26 bits, `from` and `to` (2 bits each), the reason (4 bits),
///   the cooldown (30 bits: [`Duration::MAX`] is 2^30 - 1 ms).
///
/// A fresh slot's words are all ones: tags no ticket below [`MAX_HISTORY`] has, and only
/// such tickets are looked for in a slot never written.
struct Slot {
    head: AtomicU64,
    tail: AtomicU64,
}

impl Slot {
    #[cfg(not(loom))]
    const fn new() -> Slot {
        Slot {
            head: AtomicU64::new(u64::MAX),
            tail: AtomicU64::new(u64::MAX),
        }
    }

    #[cfg(loom)]
    fn new() -> Slot {
        Slot {
            head: AtomicU64::new(u64::MAX),
            tail: AtomicU64::new(u64::MAX),
        }
    }
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Slot")
    }
}

const HEAD_TAG_MASK: u64 = 0xFFFF_FFFF;
const TAIL_TAG_BITS: u32 = 26;
const TAIL_TAG_MASK: u64 = (1 << TAIL_TAG_BITS) - 1;
const COOLDOWN_BITS: u32 = 30;
const COOLDOWN_MASK: u64 = (1 << COOLDOWN_BITS) - 1;

const REASONS: [Reason; 12] = [
    Reason::Strikes,
    Reason::TripVerdict,
    Reason::ProbeFailed,
    Reason::LeaseExpired,
    Reason::CooldownElapsed,
    Reason::Recovered,
    Reason::ForcedOpen,
    Reason::Reset,
    Reason::Predicted,
    Reason::QuotaRed,
    Reason::FailureRate,
    Reason::SlowCalls,
];
const PHASES: [Phase; 3] = [Phase::Closed, Phase::Open, Phase::HalfOpen];

fn reason_bits(why: Reason) -> u64 {
    REASONS.iter().position(|r| *r == why).unwrap_or(0) as u64
}

fn phase_bits(phase: Phase) -> u64 {
    PHASES.iter().position(|p| *p == phase).unwrap_or(0) as u64
}

fn encode(ticket: u64, t: &Transition) -> (u64, u64) {
    let head = (ticket & HEAD_TAG_MASK) << 32 | u64::from(t.at.as_millis());
    let tail = (ticket & TAIL_TAG_MASK) << 38
        | phase_bits(t.from) << 36
        | phase_bits(t.to) << 34
        | reason_bits(t.why) << COOLDOWN_BITS
        | (u64::from(t.cooldown.as_millis()) & COOLDOWN_MASK);
    (head, tail)
}

/// Stores `new` in `word` unless the word already holds a newer ticket's: tags (the
/// `mask` bits at `shift`) compare by wrapping distance, as a slot's tickets only grow.
fn store_newer(word: &AtomicU64, new: u64, shift: u32, mask: u64) {
    let tag = new >> shift & mask;
    let mut current = word.load(Ordering::Relaxed);
    loop {
        let ahead = tag.wrapping_sub(current >> shift & mask) & mask;
        if ahead == 0 || ahead > mask / 2 {
            return;
        }
        match word.compare_exchange(current, new, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => current = now,
        }
    }
}

/// The transition of `ticket` from a slot's words, if both carry its tag.
fn decode(ticket: u64, head: u64, tail: u64) -> Option<Transition> {
    if head >> 32 != ticket & HEAD_TAG_MASK || tail >> 38 != ticket & TAIL_TAG_MASK {
        return None;
    }
    Some(Transition {
        from: *PHASES.get((tail >> 36 & 0b11) as usize)?,
        to: *PHASES.get((tail >> 34 & 0b11) as usize)?,
        why: *REASONS.get((tail >> COOLDOWN_BITS & 0b1111) as usize)?,
        at: Instant::from_millis(head as u32),
        cooldown: Duration::from_millis((tail & COOLDOWN_MASK) as u32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn t(i: u32) -> Transition {
        Transition {
            from: PHASES[i as usize % 3],
            to: PHASES[(i as usize + 1) % 3],
            why: REASONS[i as usize % REASONS.len()],
            at: Instant::from_millis(i.wrapping_mul(1_000_003)),
            cooldown: Duration::from_millis(i * 7 % (1 << 30)),
        }
    }

    #[test]
    fn every_field_survives_the_two_words() {
        for (i, why) in REASONS.iter().enumerate() {
            for from in PHASES {
                for to in PHASES {
                    let original = Transition {
                        from,
                        to,
                        why: *why,
                        at: Instant::from_millis(u32::MAX - i as u32),
                        cooldown: Duration::MAX,
                    };
                    for ticket in [0, 1, 1023, 1 << 26, u64::from(u32::MAX), u64::MAX - 1] {
                        let (head, tail) = encode(ticket, &original);
                        assert_eq!(decode(ticket, head, tail), Some(original));
                        assert_eq!(decode(ticket + 1, head, tail), None, "another ticket's slot");
                    }
                }
            }
        }
    }

    #[test]
    fn a_fresh_slot_holds_no_ticket_a_reader_looks_for() {
        for ticket in 0..MAX_HISTORY as u64 {
            assert_eq!(decode(ticket, u64::MAX, u64::MAX), None);
        }
    }

    #[test]
    fn empty_then_filled_then_wrapped_oldest_first() {
        let h = History::<3>::new(());
        assert!(h.recent().is_empty());
        assert_eq!(h.recent().iter().count(), 0);
        assert_eq!(h.recent().last(), None);
        assert_eq!(h.recent().capacity(), 3);
        h.record(&t(0));
        h.record(&t(1));
        assert_eq!(h.recent().iter().collect::<Vec<_>>(), [t(0), t(1)]);
        for i in 2..8 {
            h.record(&t(i));
        }
        let recent = h.recent();
        assert_eq!(recent.iter().collect::<Vec<_>>(), [t(5), t(6), t(7)]);
        assert_eq!(recent.iter().rev().collect::<Vec<_>>(), [t(7), t(6), t(5)]);
        assert_eq!(recent.last(), Some(t(7)));
        assert_eq!(recent.recorded(), 8);
    }

    #[test]
    fn a_readings_iterator_hints_at_most_the_tickets_left_and_at_least_none() {
        let h = History::<3>::new(());
        assert_eq!(h.recent().iter().size_hint(), (0, Some(0)));
        for i in 0..5 {
            h.record(&t(i));
        }
        let mut it = h.recent().iter();
        assert_eq!(it.size_hint(), (0, Some(3)));
        assert_eq!(it.next(), Some(t(2)));
        assert_eq!(it.size_hint(), (0, Some(2)));
        assert_eq!(it.next_back(), Some(t(4)));
        assert_eq!(it.size_hint(), (0, Some(1)));
    }

    #[test]
    fn a_reading_debugs_as_the_list_of_its_transitions() {
        let h = History::<3>::new(());
        assert_eq!(std::format!("{:?}", h.recent()), "[]");
        h.record(&t(0));
        h.record(&t(1));
        assert_eq!(std::format!("{:?}", h.recent()), std::format!("{:?}", [t(0), t(1)]));
    }

    #[test]
    fn a_reading_keeps_its_moment_and_drops_what_was_overwritten_since() {
        let h = History::<2>::new(());
        h.record(&t(0));
        h.record(&t(1));
        let before = h.recent();
        h.record(&t(2)); // overwrites t(0)'s slot; t(2) is newer than the reading
        assert_eq!(before.iter().collect::<Vec<_>>(), [t(1)]);
        assert_ne!(before, h.recent());
        assert_eq!(h.recent().iter().collect::<Vec<_>>(), [t(1), t(2)]);
    }

    #[test]
    fn a_late_writer_of_an_older_ticket_leaves_the_newer_in_its_slot() {
        let slot = Slot::new();
        let (new_head, new_tail) = encode(1, &t(1));
        let (old_head, old_tail) = encode(0, &t(0));
        store_newer(&slot.head, new_head, 32, HEAD_TAG_MASK);
        store_newer(&slot.head, old_head, 32, HEAD_TAG_MASK);
        store_newer(&slot.tail, old_tail, 38, TAIL_TAG_MASK);
        store_newer(&slot.tail, new_tail, 38, TAIL_TAG_MASK);
        let words = (slot.head.load(Ordering::Relaxed), slot.tail.load(Ordering::Relaxed));
        assert_eq!(decode(1, words.0, words.1), Some(t(1)));
        // Across the tags' wrap too: a slot holding ticket 2^32 - 16 takes 2^32 + 16.
        let before_wrap = encode((1 << 32) - 16, &t(2)).0;
        let after_wrap = encode((1 << 32) + 16, &t(3)).0;
        slot.head.store(before_wrap, Ordering::Relaxed);
        store_newer(&slot.head, after_wrap, 32, HEAD_TAG_MASK);
        assert_eq!(slot.head.load(Ordering::Relaxed), after_wrap);
        store_newer(&slot.head, before_wrap, 32, HEAD_TAG_MASK);
        assert_eq!(slot.head.load(Ordering::Relaxed), after_wrap);
    }

    #[test]
    fn a_slot_half_written_by_a_newer_ticket_reads_as_neither() {
        // The head of ticket 1 beside the tail of ticket 0 (a writer between its two
        // stores), and the other way round: no transition is made of the mix.
        let (head0, tail0) = encode(0, &t(0));
        let (head1, tail1) = encode(1, &t(1));
        for ticket in [0, 1] {
            assert_eq!(decode(ticket, head1, tail0), None);
            assert_eq!(decode(ticket, head0, tail1), None);
        }
        assert_eq!(std::format!("{:?}", Slot::new()), "Slot");
    }

    #[test]
    fn a_ticket_less_than_half_the_tag_space_ahead_is_newer() {
        let word = AtomicU64::new(encode(0, &t(0)).0);
        let far = encode(HEAD_TAG_MASK / 2, &t(1)).0;
        store_newer(&word, far, 32, HEAD_TAG_MASK);
        assert_eq!(word.load(Ordering::Relaxed), far);
        // Half the space or more ahead is taken for behind (an older ticket's late write).
        let behind = encode(HEAD_TAG_MASK, &t(2)).0;
        store_newer(&word, behind, 32, HEAD_TAG_MASK);
        assert_eq!(word.load(Ordering::Relaxed), far);
    }

    #[test]
    fn the_ring_is_sixteen_bytes_a_slot_and_an_eight_byte_counter() {
        // The figure `History`'s documentation states.
        assert_eq!(core::mem::size_of::<History<4>>(), 4 * 16 + 8);
        assert_eq!(core::mem::size_of::<History<32>>(), 32 * 16 + 8);
    }

    #[test]
    fn a_windowed_breaker_keeps_its_history_beside_its_window() {
        let windowed = crate::Windowed::calls(History::<2>::new(()));
        windowed.on_transition(&t(1));
        assert!(Observer::window(&windowed).is_some());
        let recent = Observer::history(&windowed).expect("Windowed answers for its observer");
        assert_eq!(recent.iter().collect::<Vec<_>>(), [t(1)]);
        assert!(Observer::history(&()).is_none());
    }

    #[test]
    fn a_history_in_front_of_a_window_passes_the_window_and_the_quota_on() {
        struct Quotas(core::cell::Cell<u32>);
        impl Observer for Quotas {
            fn on_transition(&self, _: &Transition) {}
        }
        impl QuotaObserver for Quotas {
            fn on_quota(&self, quota: &Quota) {
                self.0.set(quota.remaining);
            }
        }
        let h = History::<2, _>::new(crate::Windowed::calls(()));
        assert!(Observer::window(&h).is_some());
        let h = History::<2, _>::new(Quotas(core::cell::Cell::new(0)));
        h.on_quota(&Quota::new(7, 10));
        assert_eq!(h.observer().0.get(), 7);
    }

    #[test]
    fn readings_compare_and_hash_by_their_transitions() {
        use core::hash::BuildHasher;
        let (a, b) = (History::<2>::new(()), History::<3>::new(()));
        assert!(a.recent().is_empty());
        for i in [1, 2] {
            a.record(&t(i));
            b.record(&t(i));
        }
        assert!(!a.recent().is_empty());
        // Equal: the same transitions, from histories of different sizes.
        assert_eq!(a.recent(), b.recent());
        let state = std::hash::RandomState::new();
        assert_eq!(state.hash_one(a.recent()), state.hash_one(b.recent()));
        b.record(&t(3));
        assert_ne!(a.recent(), b.recent());
        assert_ne!(state.hash_one(a.recent()), state.hash_one(b.recent()));
    }

    #[test]
    fn a_history_debugs_as_its_reading_and_its_observer() {
        let h = History::<2>::new(());
        h.record(&t(1));
        assert_eq!(
            std::format!("{h:?}"),
            std::format!("History {{ recent: [{:?}], observer: () }}", t(1))
        );
    }

    #[test]
    fn one_slot_keeps_the_last() {
        let h = History::<1>::new(());
        for i in 0..5 {
            h.record(&t(i));
            assert_eq!(h.recent().iter().collect::<Vec<_>>(), [t(i)]);
        }
    }

    #[test]
    fn threads_recording_at_once_lose_nothing_within_capacity() {
        let h = History::<64>::new(());
        std::thread::scope(|s| {
            for thread in 0..4u32 {
                let h = &h;
                s.spawn(move || {
                    for i in 0..16 {
                        h.record(&t(thread * 100 + i));
                    }
                });
            }
        });
        let mut seen: Vec<Transition> = h.recent().iter().collect();
        assert_eq!(seen.len(), 64);
        // Each thread's own transitions stay in its order.
        for thread in 0..4u32 {
            let own: Vec<Transition> = seen
                .iter()
                .copied()
                .filter(|x| (0..16).any(|i| *x == t(thread * 100 + i)))
                .collect();
            assert_eq!(own, (0..16).map(|i| t(thread * 100 + i)).collect::<Vec<_>>());
        }
        let mut all: Vec<Transition> = (0..4).flat_map(|th| (0..16).map(move |i| t(th * 100 + i))).collect();
        let key = |x: &Transition| x.at.as_millis();
        seen.sort_by_key(key);
        all.sort_by_key(key);
        assert_eq!(seen, all);
    }
}
