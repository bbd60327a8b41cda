//! A shared breaker's state word from outside: read it, run the machine on a given word, install one. What replicates a breaker through a store's compare-and-swap.
//!
//! A [`SharedBreaker`]'s whole state is one 64-bit word that its own operations change by
//! compare-and-swap. A breaker shared between *processes* keeps that word in a store with
//! an atomic compare-and-swap of its own (a Redis script, a database row): each replica
//! computes the next word with this breaker's state machine ([`SharedBreaker::step_word`]),
//! swaps it into the store, and on success installs it in its local breaker
//! ([`SharedBreaker::replace_word`]) and counts it ([`SharedBreaker::account`]). Nothing
//! here holds a transition rule: every step is the one [`SharedBreaker::try_acquire`],
//! a permit's `record`, [`SharedBreaker::trip`], [`SharedBreaker::force_open`] and
//! [`SharedBreaker::reset`] run.
//!
//! This is a low-level interface, for integrations such as `breaker-redis`. The word's bit
//! layout is private: a word means something only to a breaker of the same version of this
//! crate with the same [`Policy`], which is what a store's value should say
//! next to it (and check before [`SharedBreaker::admits_word`]).
//!
//! ```
//! use breaker_core::{Duration, Instant, Outcome, Policy, SharedBreaker, WordOp};
//!
//! static POLICY: Policy = Policy::new(1, Duration::from_secs(10));
//! // Two replicas, and the word their store holds.
//! let (a, b) = (SharedBreaker::new(&POLICY), SharedBreaker::new(&POLICY));
//! let mut store = a.word();
//!
//! // Replica a's call fails: the step runs on the store's word and lands there.
//! let now = Instant::from_millis(1_000);
//! let ticket = a.step_word(store, WordOp::Acquire, now).admitted().unwrap().unwrap();
//! let step = a.step_word(store, WordOp::Record(ticket, Outcome::STRIKE), now);
//! store = step.word(); // the store's compare-and-swap from the old word
//! a.account(&step); // a counts its failure and the trip, and tells its observer
//! a.replace_word(a.word(), store).unwrap();
//!
//! // Replica b installs the store's word: its local breaker refuses without asking.
//! b.replace_word(b.word(), store).unwrap();
//! assert!(!b.would_allow(now));
//! assert_eq!(a.counters().trips, 1);
//! ```

use core::cell::Cell;

use crate::atomic::Ordering;
use crate::layout::{Core, Ticket};
use crate::machine::{Events, SharedBuilder, Transitions};
use crate::policy::MAX_BACKOFF_STEP;
use crate::{Instant, Observer, Outcome, Phase, Policy, Reason, Refused, SharedBreaker, Transition};

/// One operation of the state machine, to run on a word with [`SharedBreaker::step_word`]
/// or on a breaker's own word with [`SharedBreaker::apply`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WordOp {
    /// The mutating gate, as [`SharedBreaker::try_acquire`] runs it.
    Acquire,
    /// The outcome of a call admitted with this ticket, as a permit's `record` reports it.
    Record(WordTicket, Outcome),
    /// [`SharedBreaker::trip`] with this reason.
    Trip(Reason),
    /// [`SharedBreaker::force_open`].
    ForceOpen,
    /// [`SharedBreaker::reset`].
    Reset,
}

impl WordOp {
    /// Applies this operation to the word `b` is building; the gate's decision for
    /// [`WordOp::Acquire`].
    fn run(self, b: &mut SharedBuilder, policy: &Policy, now: Instant) -> Option<Result<WordTicket, Refused>> {
        match self {
            WordOp::Acquire => return Some(b.acquire(policy, now).map(WordTicket::from_ticket)),
            WordOp::Record(ticket, outcome) => b.record(policy, ticket.ticket(), outcome, now),
            WordOp::Trip(why) => b.trip(policy, why, now, crate::Duration::ZERO),
            WordOp::ForceOpen => b.force_open(now),
            WordOp::Reset => b.reset(now),
        }
        None
    }
}

/// What a call admitted by a step carries until it reports: the generation of the word it
/// was admitted in, and whether it is the half-open probe. Its outcome counts only while
/// the word is still in that generation (see the transition table's stale permits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WordTicket {
    gen: u16,
    probe: bool,
}

impl WordTicket {
    /// The ticket of a call admitted on the hot path, if `word` is closed with no strikes
    /// pending: there the gate admits without changing the word or reading the clock (the
    /// same test [`SharedBreaker::call`] makes).
    #[inline(always)]
    pub const fn hot(word: u64) -> Option<WordTicket> {
        match Core::hot_ticket(word) {
            Some(t) => Some(WordTicket::from_ticket(t)),
            None => None,
        }
    }

    /// Whether this call is the half-open probe.
    pub const fn is_probe(self) -> bool {
        self.probe
    }

    const fn from_ticket(t: Ticket) -> WordTicket {
        WordTicket {
            gen: t.gen,
            probe: t.probe,
        }
    }

    const fn ticket(self) -> Ticket {
        Ticket {
            gen: self.gen,
            probe: self.probe,
        }
    }
}

/// One step of the machine on a word, computed by [`SharedBreaker::step_word`] and not
/// yet stored anywhere: the next word, the gate's decision, and what to count and tell
/// ([`SharedBreaker::account`]) once the word has landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WordStep {
    word: u64,
    admitted: Option<Result<WordTicket, Refused>>,
    events: Events,
    transitions: Transitions,
}

impl WordStep {
    /// The word after the step. Equal to the word it ran on when the step changes nothing
    /// (a refusal, a closed-state success with no strikes pending, a stale outcome).
    pub const fn word(&self) -> u64 {
        self.word
    }

    /// For [`WordOp::Acquire`], the gate's decision: a ticket, or the refusal. `None` for
    /// every other operation.
    pub const fn admitted(&self) -> Option<Result<WordTicket, Refused>> {
        self.admitted
    }

    /// The phase changes of the step, in order (at most two: a lapsed probe lease noticed
    /// at the gate, then the next probe).
    pub fn transitions(&self) -> impl Iterator<Item = &Transition> {
        self.transitions.iter().flatten()
    }
}

impl<O: ?Sized + Observer, P: core::borrow::Borrow<Policy>, S: crate::counts::CountStore> SharedBreaker<O, P, S> {
    /// The state word, as [`SharedBreaker::step_word`] takes it. One atomic load (and,
    /// for a breaker whose policy counts every call, the count mark of its closed word
    /// taken off: a word from here is the same whatever the policy counts).
    #[inline(always)]
    pub fn word(&self) -> u64 {
        Core::unmarked(self.word_cell().load(Ordering::Acquire))
    }

    /// Runs `op` on `word` at `now` with this breaker's policy: pure, nothing stored,
    /// nothing counted. Exactly the step this breaker's own operations make.
    pub fn step_word(&self, word: u64, op: WordOp, now: Instant) -> WordStep {
        let policy = self.policy();
        let mut b = SharedBuilder::new(Core::unpack(word));
        let admitted = op.run(&mut b, policy, now);
        WordStep {
            word: b.core.pack(),
            admitted,
            events: b.events,
            transitions: b.transitions,
        }
    }

    /// Runs `op` on this breaker's own word, through its compare-and-swap loop, counting
    /// and telling the observer as its own operations do: what a replica cut off from its
    /// store falls back to. Returns the gate's decision for [`WordOp::Acquire`].
    pub fn apply(&self, op: WordOp, now: Instant) -> Option<Result<WordTicket, Refused>> {
        let admitted = Cell::new(None);
        self.update(&|b| admitted.set(op.run(b, self.policy(), now)));
        admitted.get()
    }

    /// Counts `step`'s events in this breaker's counters and tells its observer of the
    /// step's transitions: for a step that landed in a store. The word is not touched
    /// (install it with [`SharedBreaker::replace_word`]).
    pub fn account(&self, step: &WordStep) {
        self.count_events(&step.events);
        for t in step.transitions() {
            self.observer().on_transition(t);
        }
    }

    /// Installs `new` as the state word if the word is `current` (one compare-and-swap);
    /// otherwise returns the word found. Counters and observer are not touched. Permits
    /// granted before keep counting only if `new` is in their generation.
    pub fn replace_word(&self, current: u64, new: u64) -> Result<(), u64> {
        // The words in and out are without the count mark (see `word`); the word kept
        // has it if the policy counts every call.
        let counting = self.counting();
        let cell = self.word_cell();
        let mut actual = cell.load(Ordering::Acquire);
        loop {
            let found = Core::unmarked(actual);
            if found != current {
                return Err(found);
            }
            let next = Core::unpack(new).pack_marked(counting);
            match cell.compare_exchange(actual, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(()),
                Err(moved) => actual = moved,
            }
        }
    }

    /// Whether `word` is a state this breaker's policy can reach: a known phase, the probe
    /// slot only in half-open, `forced` only in open, fewer strikes than the trip count
    /// (closed; in half-open fewer probe failures than a half-open failure rate's
    /// threshold), a streak below the probe successes that close (half-open only), a backoff step
    /// within bounds. A word from a store that fails this is not to be obeyed.
    pub fn admits_word(&self, word: u64) -> bool {
        let c = Core::unpack(word);
        let policy = self.policy();
        let phase_known = word & 0b11 != 0b11;
        phase_known
            && (!c.probe_out() || c.is(Phase::HalfOpen))
            && (!c.forced() || c.is(Phase::Open))
            && if c.is(Phase::HalfOpen) {
                u32::from(c.strikes()) < policy.probe_failures_to_open()
            } else {
                u32::from(c.strikes()) < policy.trip() && (c.strikes() == 0 || c.is(Phase::Closed))
            }
            && (u32::from(c.streak()) < policy.probe_successes_to_close() && (c.streak() == 0 || c.is(Phase::HalfOpen)))
            && c.step() <= MAX_BACKOFF_STEP
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Duration, Policy, RefusalReason, Verdict};

    static POLICY: Policy = Policy::new(2, Duration::from_millis(100)).with_probe_lease(Duration::from_millis(50));

    fn at(ms: u32) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn a_step_on_the_own_word_is_what_apply_does() {
        let stepped = SharedBreaker::new(&POLICY);
        let applied = SharedBreaker::new(&POLICY);
        let ops = [
            WordOp::Acquire,
            WordOp::Trip(Reason::Predicted),
            WordOp::Acquire,
            WordOp::ForceOpen,
            WordOp::Reset,
        ];
        for (i, op) in ops.into_iter().enumerate() {
            let now = at(i as u32 * 40);
            let step = stepped.step_word(stepped.word(), op, now);
            stepped.replace_word(stepped.word(), step.word()).unwrap();
            stepped.account(&step);
            assert_eq!(applied.apply(op, now), step.admitted(), "op {i}");
            assert_eq!(applied.word(), stepped.word(), "op {i}");
        }
        assert_eq!(applied.counters(), stepped.counters());
    }

    #[test]
    fn stepping_a_word_stores_and_counts_nothing() {
        let b = SharedBreaker::new(&POLICY);
        let before = b.word();
        let ticket = WordTicket::hot(before).unwrap();
        let step = b.step_word(before, WordOp::Record(ticket, Outcome::Error(Verdict::Trip)), at(5));
        assert_ne!(step.word(), before);
        assert_eq!(step.transitions().count(), 1);
        assert_eq!((b.word(), b.counters().failures, b.counters().trips), (before, 0, 0));
        b.account(&step);
        assert_eq!((b.word(), b.counters().failures, b.counters().trips), (before, 1, 1));
    }

    #[test]
    fn only_one_of_two_replicas_stepping_the_same_word_lands_the_probe() {
        // Both see the cooldown over on the same stored word; the store's compare-and-swap
        // lets the first in, and the second steps again on what it finds: a refusal.
        let (a, b) = (SharedBreaker::new(&POLICY), SharedBreaker::new(&POLICY));
        let open = a.step_word(a.word(), WordOp::Trip(Reason::Predicted), at(0)).word();
        let mut store = open;
        let step_a = a.step_word(open, WordOp::Acquire, at(100));
        let step_b = b.step_word(open, WordOp::Acquire, at(100));
        assert!(step_a.admitted().unwrap().unwrap().is_probe());
        assert!(step_b.admitted().unwrap().unwrap().is_probe());
        // a's swap lands; b's finds the word changed and steps on the new one.
        assert_eq!(store, open);
        store = step_a.word();
        let again = b.step_word(store, WordOp::Acquire, at(100));
        assert_eq!(again.admitted().unwrap().unwrap_err().reason, RefusalReason::Probing);
        assert_eq!(again.word(), store);
    }

    #[test]
    fn replace_word_is_a_compare_and_swap() {
        let b = SharedBreaker::new(&POLICY);
        let w = b.word();
        let open = b.step_word(w, WordOp::ForceOpen, at(1)).word();
        assert_eq!(b.replace_word(open, w), Err(w));
        assert_eq!(b.replace_word(w, open), Ok(()));
        assert!(!b.would_allow(at(1_000)));
    }

    #[test]
    fn words_the_policy_cannot_reach_are_not_admitted() {
        let b = SharedBreaker::new(&POLICY);
        let word = |phase, probe, forced, strikes, streak, step| {
            Core::from_fields(phase, probe, forced, strikes, streak, step, 7, at(3)).pack()
        };
        assert!(b.admits_word(word(Phase::Closed, false, false, 1, 0, 0)));
        assert!(b.admits_word(word(Phase::HalfOpen, true, false, 0, 0, 15)));
        assert!(b.admits_word(word(Phase::Open, false, true, 0, 0, 3)));
        assert!(
            !b.admits_word(word(Phase::Closed, false, false, 2, 0, 0)),
            "strikes >= trip"
        );
        assert!(
            !b.admits_word(word(Phase::Open, true, false, 0, 0, 0)),
            "probe while open"
        );
        assert!(
            !b.admits_word(word(Phase::Closed, false, true, 0, 0, 0)),
            "forced while closed"
        );
        assert!(
            !b.admits_word(word(Phase::HalfOpen, false, false, 0, 1, 0)),
            "streak >= probes"
        );
        assert!(
            !b.admits_word(word(Phase::Open, false, false, 1, 0, 0)),
            "strikes while open"
        );
        assert!(
            !b.admits_word(word(Phase::Closed, false, false, 0, 0, 0) | 0b11),
            "phase 3"
        );
        assert!(
            !b.admits_word(word(Phase::HalfOpen, false, false, 1, 0, 0)),
            "probe failures without a half-open rate"
        );
    }

    #[test]
    fn a_half_open_rate_admits_the_failures_and_successes_it_counts() {
        // 10 calls at 50 %: re-opens at 5 failures, closes at 6 successes.
        static RATED: Policy = Policy::new(2, Duration::from_millis(100)).with_half_open_rate(10, 50);
        let b = SharedBreaker::new(&RATED);
        let word =
            |strikes, streak| Core::from_fields(Phase::HalfOpen, false, false, strikes, streak, 0, 7, at(3)).pack();
        assert!(b.admits_word(word(4, 5)));
        assert!(!b.admits_word(word(5, 0)), "failures that re-open");
        assert!(!b.admits_word(word(0, 6)), "successes that close");
    }
}
