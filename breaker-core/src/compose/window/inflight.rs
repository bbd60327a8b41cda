//! Slow calls caught while still out: a window storage with `K` slots holding the start
//! instants of the closed-state calls out, checked by a shared breaker's gate.

use core::fmt;

use super::sealed::{Kind, Store};
use super::{CallWindow, Pushed, Sample, Shape, Tally, Window, WindowSnapshot};
use crate::atomic::{AtomicU64, Ordering};
use crate::{Duration, Instant};

/// A window's storage `W` ([`CallWindow`], [`CallRing`](super::CallRing) or
/// [`TimeWindow`](super::TimeWindow)) with `K` *in-flight slots*: a
/// [`SharedBreaker`](crate::SharedBreaker) whose policy has a slow-call rule
/// ([`Policy::with_slow_calls`](crate::Policy::with_slow_calls)) then counts a call that
/// passes the slow-call duration *while still out* as slow from that moment, so a breaker
/// whose upstream hangs opens before the hung calls return. Build it with
/// [`Windowed::in_flight`](super::Windowed::in_flight); the rules are in
/// [`crate::window`] ("Slow calls caught while still out").
///
/// Fixed memory: `K` atomic words (1 to 254) beside the window's own. Each slot is
///
/// ```text
/// bit  63      occupied: a call out holds it
/// bit  62      counted: the gate has counted the call slow while it was out
/// bits 48..60  the generation of the call's permit
/// bits  0..32  the instant the call was let through, in ms
/// ```
///
/// A call claims a free slot with one compare-and-swap, the gate marks it counted with
/// another (only one gate wins a slot), and the call frees it with one swap that tells it
/// whether it was counted. So a call's one sample is taken exactly once: by a gate that
/// marked its slot, or by the call itself when it returns, never both.
///
/// ```
/// use breaker_core::{CallWindow, Duration, InFlight, Policy, SharedBreaker, WindowSize, Windowed};
///
/// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(30))
///     .with_min_calls(5)
///     .with_slow_calls(Duration::from_secs(1), 50);
/// // Up to 16 calls out watched at once.
/// static UPSTREAM: SharedBreaker<Windowed<InFlight<CallWindow, 16>>> =
///     SharedBreaker::windowed(&POLICY, Windowed::in_flight(CallWindow::new(), ()));
/// # let _ = &UPSTREAM;
/// ```
///
/// No slot, or more than 254, is a compile error in a `static`:
///
/// ```compile_fail
/// use breaker_core::{CallWindow, Duration, InFlight, Policy, SharedBreaker, WindowSize, Windowed};
///
/// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(30))
///     .with_slow_calls(Duration::from_secs(1), 50);
/// static UPSTREAM: SharedBreaker<Windowed<InFlight<CallWindow, 0>>> =
///     SharedBreaker::windowed(&POLICY, Windowed::in_flight(CallWindow::new(), ()));
/// ```
pub struct InFlight<W = CallWindow, const K: usize = 8> {
    window: W,
    slots: [AtomicU64; K],
}

/// A slot held by a call out.
const OCCUPIED: u64 = 1 << 63;
/// A slot whose call the gate has counted slow.
const COUNTED: u64 = 1 << 62;
const GEN_AT: u32 = 48;
const GEN_MASK: u64 = 0xFFF;

/// The slot index a call without a slot carries (none free, or not watched).
pub(crate) const NO_SLOT: u8 = u8::MAX;

/// A slot held by a call of generation `gen` let through at `start`.
const fn held(gen: u16, start: Instant) -> u64 {
    OCCUPIED | (gen as u64 & GEN_MASK) << GEN_AT | start.as_millis() as u64
}

const fn gen_of(slot: u64) -> u16 {
    (slot >> GEN_AT & GEN_MASK) as u16
}

const fn start_of(slot: u64) -> Instant {
    Instant::from_millis(slot as u32)
}

impl<W, const K: usize> InFlight<W, K> {
    /// Panics (a compile error in a `static`) unless `K` is 1 to 254.
    const CHECKED: () = assert!(K >= 1 && K < NO_SLOT as usize, "InFlight: 1 to 254 slots");

    /// `window` with `K` free slots.
    #[cfg(not(loom))]
    pub const fn new(window: W) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECKED;
        InFlight {
            window,
            slots: [const { AtomicU64::new(0) }; K],
        }
    }

    /// `window` with `K` free slots (not `const` under loom).
    #[cfg(loom)]
    pub fn new(window: W) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECKED;
        InFlight {
            window,
            slots: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The window's storage.
    pub fn window(&self) -> &W {
        &self.window
    }

    /// How many slots are held by calls out (of any generation), at this instant.
    pub fn out(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.load(Ordering::Acquire) & OCCUPIED != 0)
            .count()
    }
}

impl<W: fmt::Debug, const K: usize> fmt::Debug for InFlight<W, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InFlight")
            .field("window", &self.window)
            .field("slots", &K)
            .field("out", &self.out())
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl<W: defmt::Format, const K: usize> defmt::Format for InFlight<W, K> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "InFlight {{ window: {}, slots: {}, out: {} }}",
            self.window,
            K,
            self.out()
        )
    }
}

impl<W: Kind, const K: usize> Kind for InFlight<W, K> {
    const SHAPE: Shape = W::SHAPE;
}

impl<W: super::WindowStore, const K: usize> Store for InFlight<W, K> {
    fn shape(&self) -> Shape {
        self.window.shape()
    }

    #[inline(always)]
    fn push(&self, rule: &Window, gen: u16, sample: Sample, now: Instant) -> Pushed {
        self.window.push(rule, gen, sample, now)
    }

    fn clear(&self, gen: u16) {
        // The slots stay: each is freed by its own call, and a slot of an older
        // generation is ignored by the gate.
        self.window.clear(gen)
    }

    fn tally(&self, rule: &Window, gen: u16, now: Instant) -> Option<Tally> {
        self.window.tally(rule, gen, now)
    }

    fn save(&self, rule: &Window, gen: u16, now: Instant) -> WindowSnapshot {
        self.window.save(rule, gen, now)
    }

    fn load(&self, rule: &Window, gen: u16, saved: &WindowSnapshot, now: Instant) {
        self.window.load(rule, gen, saved, now)
    }

    #[inline(always)]
    fn slots(&self) -> &[AtomicU64] {
        &self.slots
    }
}

impl<W: super::WindowStore, const K: usize> super::WindowStore for InFlight<W, K> {}

/// Claims a free slot for a call of generation `gen` let through at `start`: its index,
/// or [`NO_SLOT`] if every slot is held (the call is then not watched while out).
pub(crate) fn claim(slots: &[AtomicU64], gen: u16, start: Instant) -> u8 {
    let mine = held(gen, start);
    for (i, slot) in slots.iter().enumerate() {
        if slot.load(Ordering::Relaxed) == 0
            && slot
                .compare_exchange(0, mine, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            return i as u8;
        }
    }
    NO_SLOT
}

/// Frees slot `i`, held by the caller: whether a gate counted its call slow while it was
/// out (its sample is then taken, and the caller takes none).
pub(crate) fn release(slots: &[AtomicU64], i: u8) -> bool {
    match slots.get(i as usize) {
        Some(slot) => slot.swap(0, Ordering::AcqRel) & COUNTED != 0,
        None => false,
    }
}

/// The gate's scan: marks counted every slot of generation `gen` whose call has been out
/// longer than `slow` at `now` and is not counted yet, calling `seen` once for each slot
/// this caller marked (another caller marking the same slot first wins it).
pub(crate) fn overdue(slots: &[AtomicU64], gen: u16, now: Instant, slow: Duration, mut seen: impl FnMut()) {
    for slot in slots {
        let mut s = slot.load(Ordering::Acquire);
        loop {
            if s & (OCCUPIED | COUNTED) != OCCUPIED
                || gen_of(s) != gen & GEN_MASK as u16
                || now.since(start_of(s)) <= slow
            {
                break;
            }
            // Freed and claimed again in between by a call of the same generation and start
            // (the same word), that call is out as long as the one read: counting it is
            // as right.
            match slot.compare_exchange(s, s | COUNTED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    seen();
                    break;
                }
                // Freed, or claimed again, or counted by another gate: judge what it holds.
                Err(actual) => s = actual,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_claimed_counted_once_and_freed() {
        let f: InFlight<(), 2> = InFlight::new(());
        let t0 = Instant::from_millis(1_000);
        assert_eq!(claim(&f.slots, 3, t0), 0);
        assert_eq!(claim(&f.slots, 3, t0), 1);
        assert_eq!(claim(&f.slots, 3, t0), NO_SLOT);
        assert_eq!(f.out(), 2);
        let slow = Duration::from_secs(1);
        let mut n = 0;
        // Exactly the duration is not slow: strictly longer is.
        overdue(&f.slots, 3, Instant::from_millis(2_000), slow, || n += 1);
        assert_eq!(n, 0);
        // Another generation's slots are ignored.
        overdue(&f.slots, 4, Instant::from_millis(2_001), slow, || n += 1);
        assert_eq!(n, 0);
        overdue(&f.slots, 3, Instant::from_millis(2_001), slow, || n += 1);
        assert_eq!(n, 2);
        overdue(&f.slots, 3, Instant::from_millis(9_000), slow, || n += 1);
        assert_eq!(n, 2);
        assert!(release(&f.slots, 1));
        assert_eq!(claim(&f.slots, 3, t0), 1);
        assert!(!release(&f.slots, 1));
        assert!(release(&f.slots, 0));
        assert!(!release(&f.slots, NO_SLOT));
        assert_eq!(f.out(), 0);
    }
}
