//! Failure-rate and slow-call tripping over a fixed-size window of recent outcomes.
//!
//! By default a breaker trips on consecutive strikes ([`Policy::new`]). A *windowed* policy
//! ([`Policy::failure_rate`]) replaces that one rule of the closed state: the breaker
//! trips when, over a window of recent calls, the failure rate (or the slow-call rate)
//! reaches a threshold percentage, once the window holds at least a minimum number of
//! calls. Everything else is the one state machine: trip verdicts still trip at once,
//! neutrals count for nothing, and open, half-open, probes, leases and backoff follow the
//! policy exactly as for consecutive strikes. The anchors are resilience4j's count-based
//! and time-based sliding windows (failure-rate and slow-call-rate thresholds, minimum
//! number of calls) and Polly's failure ratio over a sampling duration; this one lives in
//! fixed memory, needs no heap, and is updated without a lock.
//!
//! ```
//! use breaker_core::{Breaker, Duration, Instant, Outcome, Phase, Policy, WindowSize, Windowed};
//!
//! // resilience4j's example: 50 % over the last 10 calls, judged from 5 calls on.
//! let policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(30)).with_min_calls(5);
//! let mut b = Breaker::windowed(policy, Windowed::calls(()));
//! let t = Instant::ZERO;
//! for outcome in [Outcome::Success, Outcome::STRIKE, Outcome::Success, Outcome::STRIKE] {
//!     let p = b.try_acquire(t).unwrap();
//!     b.record(p, outcome, t); // 4 calls: below the minimum, whatever the rate
//! }
//! assert_eq!(b.phase(t), Phase::Closed);
//! let p = b.try_acquire(t).unwrap();
//! b.record(p, Outcome::STRIKE, t); // 3 of 5 failed: 60 % >= 50 %
//! assert_eq!(b.phase(t), Phase::Open);
//! ```
//!
//! # The rule
//!
//! In the closed state, every call that a fresh permit let through is a *sample* of the
//! window: a success (a *slow* one if the policy has a slow-call rule and the call took
//! longer than its duration), or a strike (a failure; also a slow one if the policy counts
//! slow failures, [`Policy::with_slow_failures`]). After each sample the window is
//! judged: with `calls` samples in it, `failures` of them failures and `slow` of them slow,
//!
//! - it trips with [`Reason::FailureRate`] if `calls >= min_calls` and
//!   `failures * 100 >= failure_rate * calls`,
//! - else with [`Reason::SlowCalls`] if the policy has a slow-call rule, `calls >= min_calls`
//!   and `slow * 100 >= slow_rate * calls`,
//!
//! whichever outcome the sample was: a success can complete the minimum number of calls
//! of a window whose rate is already over the threshold (resilience4j judges after every
//! call too). "Reaches" means equal or greater, as in resilience4j.
//!
//! - A **trip verdict** ([`Verdict::Trip`], `TripFor`) trips at once,
//!   as with consecutive strikes, whatever the window says or holds.
//! - A **neutral** outcome is not a sample: it changes neither the window nor its count.
//! - A **slow call** is a *successful* call that took longer than the policy's slow-call
//!   duration (strictly longer). By default a failure is a failure however long it took;
//!   it is not counted twice. With [`Policy::with_slow_failures`] a failure that took
//!   longer counts in both rates, a failure *and* a slow call, as resilience4j counts
//!   them (its slow-call rate is over all calls, failed or not). The default stays: a
//!   slow-call rule then measures a dependency that answers, but late, apart from one that
//!   fails (a timeout that fails after the slow-call duration would otherwise count twice).
//!   Timing a call reads the clock when the call starts and when it ends, and only
//!   breakers whose policy has a slow-call rule do it.
//! - Probes are not samples: half-open follows the policy's probe rules, and a failed
//!   probe re-opens as usual.
//! - Outcomes of stale permits (granted before the last transition) are not samples.
//!
//! The judging rule lives in the state machine (`machine.rs`), like every other
//! transition, and both breakers apply it: the window only counts. A windowed trip is
//! *generation-guarded*: it takes effect only if the breaker is still closed in the
//! generation the judged samples belong to, so a window that was overtaken by another
//! transition (a reset, a trip verdict, a window trip of another caller) can never trip
//! the breaker that has moved on.
//!
//! # The window is cleared on every transition
//!
//! As in resilience4j, the window only lives while the breaker is closed: every
//! transition clears it. Leaving the closed state ends its generation, and samples of an
//! ended generation are never counted again; entering the closed state (a recovery, a
//! reset) starts from an empty window. A breaker that recovers after an outage is judged on
//! calls made after the recovery only.
//!
//! # Two kinds of window, three storages
//!
//! - [`WindowSize::Calls`]`(n)`: the last `n` samples, `1 <= n <=` [`MAX_RING_CALLS`]
//!   (1008; resilience4j's default is 100). A new sample pushes out the oldest once `n`
//!   are held. The window holds fewer than `n` samples only after a transition (or at
//!   start). Two storages keep it:
//!   - a [`CallWindow`] ([`Windowed::calls`]), up to [`MAX_WINDOW_CALLS`] (51) samples:
//!     one bit per sample in one word per rule, 16 bytes;
//!   - a [`CallRing`] ([`Windowed::ring`]), any `n` up to 1008: two bits per sample in a
//!     ring of 64 words behind one cursor word, 520 bytes.
//!
//!   The two count exactly alike; a breaker whose window fits in 51 keeps the small one,
//!   and pays nothing for the large one.
//! - [`WindowSize::Time`]`(span)`: the samples of the last `span`, kept in a
//!   [`TimeWindow<B>`](TimeWindow) of `B` buckets of `span / B` each: [`WINDOW_BUCKETS`]
//!   (10) by default ([`Windowed::time`]; a 10 s window counts per second), any number
//!   from 1 to [`MAX_WINDOW_BUCKETS`] chosen by the storage's type
//!   ([`Windowed::time_buckets`]: `TimeWindow<60>` over 60 s counts per second, as
//!   resilience4j's time window does). The window is the current bucket and the `B - 1`
//!   before it, so it covers between `(B - 1) / B` of `span` and `span`. `span` is at
//!   least 1 s, a whole multiple of 10 ms, and a whole number of ms per bucket. A bucket
//!   holds at most [`MAX_BUCKET_CALLS`] calls: a full bucket halves its three counts
//!   (calls, failures, slow calls) and goes on counting, so beyond 1023 calls per bucket
//!   its rates are estimates weighted toward its newest calls, and a burst of failures
//!   after a burst of successes is still seen. Each bucket is 8 bytes (80 with ten, 480
//!   with sixty).
//!
//! The policy chooses the kind and its thresholds; the breaker holds the storage, in its
//! observer slot: a [`Windowed`] pairs a [`CallWindow`], a [`CallRing`] or a
//! [`TimeWindow`] with the breaker's real observer. Build windowed breakers with
//! [`Breaker::windowed`] and [`SharedBreaker::windowed`](crate::SharedBreaker::windowed),
//! which check (at compile time, in a `static`) that the storage holds the policy's window
//! (its kind; a count window's size, [`PolicyError::NeedsCallRing`] beyond 51; a time
//! window's whole ms per bucket and minimum number of calls,
//! [`PolicyError::BucketsOutOfRange`]); [`Breaker::new`] and the other constructors refuse
//! a windowed policy, so a policy can never silently lose its window.
//!
//! ```
//! use breaker_core::{CallRing, Duration, Policy, SharedBreaker, WindowSize, Windowed};
//!
//! // resilience4j's default count window (100 calls), ten times over.
//! static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(1000), Duration::from_secs(60));
//! static UPSTREAM: SharedBreaker<Windowed<CallRing>> = SharedBreaker::windowed(&POLICY, Windowed::ring(()));
//! # let _ = &UPSTREAM;
//! ```
//!
//! ```
//! use breaker_core::{Duration, ManualClock, Instant, Policy, SharedBreaker, TimeWindow, WindowSize, Windowed};
//!
//! static POLICY: Policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(30))
//!     .with_min_calls(20)
//!     .with_slow_calls(Duration::from_secs(2), 80);
//! static UPSTREAM: SharedBreaker<Windowed<TimeWindow>> = SharedBreaker::windowed(&POLICY, Windowed::time(()));
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//!
//! #[derive(Debug, PartialEq)]
//! struct Timeout;
//! impl breaker_core::Classify for Timeout {} // a strike
//!
//! assert_eq!(UPSTREAM.call(&CLOCK, || Ok::<_, Timeout>(7)), Ok(7));
//! assert_eq!(UPSTREAM.window_stats(Instant::ZERO).map(|s| s.calls), Some(1));
//! ```
//!
//! # Slow calls caught while still out
//!
//! A slow-call rule times a call when it returns: a dependency that hangs returns late or
//! never, and its calls are counted only then. With *in-flight slots*, a
//! [`SharedBreaker`](crate::SharedBreaker) counts a call that passes the slow-call
//! duration while still out as slow *from that moment*, so the breaker of a hung
//! dependency opens, at the moment the slow-call rate is reached, while the hung calls are
//! still out (resilience4j times calls only when they end). The storage says so:
//! [`Windowed::in_flight`] pairs a window with `K` slots ([`InFlight<W, K>`](InFlight),
//! fixed memory, one atomic word per slot).
//!
//! ```
//! use breaker_core::{CallWindow, Clock, Duration, InFlight, Instant, ManualClock, Outcome, Phase, Policy, SharedBreaker, WindowSize, Windowed};
//!
//! static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(30))
//!     .with_min_calls(5)
//!     .with_slow_calls(Duration::from_secs(1), 50);
//! static UPSTREAM: SharedBreaker<Windowed<InFlight<CallWindow, 8>>> =
//!     SharedBreaker::windowed(&POLICY, Windowed::in_flight(CallWindow::new(), ()));
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//!
//! // Five calls go out and hang.
//! let hung: Vec<_> = (0..5).map(|_| UPSTREAM.try_acquire(&CLOCK).unwrap()).collect();
//! CLOCK.set(Instant::from_millis(1_001));
//! // The next gate check counts all five slow (5 of 5): the breaker opens, and refuses.
//! assert!(UPSTREAM.try_acquire(&CLOCK).is_err());
//! assert_eq!(UPSTREAM.phase(CLOCK.now()), Phase::Open);
//! // When they return at last, they are stale: nothing is counted twice.
//! for p in hung {
//!     p.record_timed(Outcome::Success, Instant::ZERO);
//! }
//! ```
//!
//! The rules:
//!
//! - **Which calls are watched.** Closed-state calls let through by the shared breaker's
//!   own gate ([`SharedBreaker::try_acquire`](crate::SharedBreaker::try_acquire),
//!   [`call`](crate::SharedBreaker::call) and its forms, `call_or_else`), of a policy with
//!   a slow-call rule. A call claims a free slot when it is let through, holding its
//!   start (the gate's clock reading) and its permit's generation, and frees it when it
//!   returns (its permit answered or dropped; a panic in `call` drops it too). Without a
//!   slow-call rule no slot is used, nor by a call that shadow mode lets through where the
//!   live breaker would refuse it.
//! - **The gate.** Every gate check of such a breaker reads the clock and, while closed,
//!   scans the slots before deciding: each call of the current generation out *longer*
//!   than the slow-call duration and not counted yet is marked counted (one
//!   compare-and-swap: of two gates racing, one counts it) and pushed into the window as
//!   a slow sample, and the window is judged after each, by the same generation-guarded
//!   trip as any sample. A gate whose scan trips the breaker refuses its own call.
//! - **One sample per call.** A call counted slow while out has had its sample: when it
//!   returns, whatever it answers, the window takes nothing more from it. A success adds
//!   nothing; a failure adds no failure sample (the window saw it hang: it stays a slow
//!   call, in the slow-call rate only, whether or not the policy counts slow failures:
//!   a sample cannot be changed once in the window, where every later sample moves it
//!   along, and a second sample would count the call twice);
//!   a permit dropped unanswered leaves the slow sample. The machine's part is as for any
//!   call: a trip verdict still trips at once, and the counters
//!   ([`SharedBreaker::counters`](crate::SharedBreaker::counters)) count its outcome. A
//!   call that returns before any gate saw it slow takes its own sample as without slots:
//!   timed by `call` and [`Permit::record_timed`](crate::SharedPermit::record_timed), not
//!   by [`Permit::record`](crate::SharedPermit::record). Which of the two happens is settled on its slot: the gate's
//!   compare-and-swap and the returning call's swap cannot both win.
//! - **A slot shortage.** A call that finds no free slot is not watched while out: it is
//!   timed when it returns, as without slots. `K` is the number of calls out that can be
//!   watched at once; the gate reads all `K` slots on every check.
//! - **Probes** are not window samples, so they hold no slot: a probe that hangs is the
//!   probe lease's business ([`Policy::with_probe_lease`]), as without slots.
//! - **Transitions.** Every transition clears the window (a new generation); the slots
//!   are not cleared: a slot of an ended generation is ignored by the gate, and freed by
//!   its own call when it returns (as a stale permit, not a sample). Until then it is not
//!   free: calls out across a transition take slots from the new generation's calls. A
//!   call let through as the breaker leaves the closed state may claim a slot in the
//!   generation that ended: the same.
//! - **Cost.** Only a breaker whose storage has slots pays: its gate reads the clock,
//!   scans `K` words, and a closed call claims and frees a slot (a compare-and-swap and a
//!   swap); its calls go through a permit. A windowed breaker without slots, and every
//!   breaker without a window, run the same instructions as before.
//! - **Which breaker.** A single-owner [`Breaker`] has no gate racing its calls: it keeps
//!   its window as without slots (an `InFlight` storage there is only its window), and
//!   times each call when it is recorded. The composites that hold a shared breaker
//!   through their own tickets (the tower service, a chain, the retry ladder) are not
//!   watched either: their calls are timed when they return.
//!
//! The loom model checks (`breaker-core/tests/loom_inflight.rs`) run a gate marking a
//! slot racing that call's own return (one sample, exactly), two gates racing to mark
//! one slot (one slow sample), a slot claimed racing a transition (the old
//! generation's slot never counted in the new window), and a gate racing another call's
//! return when the window trips only with both samples (it trips, once).
//!
//! # What it costs
//!
//! Consecutive strikes stay the default and keep their code: the windowed paths are chosen
//! at compile time by the observer type, so a breaker without a window runs the same
//! instructions as before on its closed-state and refusal paths (12 and 43 on x86-64).
//! What it does pay is 12 bytes more per policy (the rule's field) and one test in the
//! closed-state strike rule: 42 bytes of text on the Cortex-M3 firmware. A windowed
//! breaker's closed-state call must record its sample, so it writes shared memory, with
//! one exception:
//!
//! - A count window holding `n` clean successes is not changed by one more: such a call
//!   writes nothing (a healthy breaker's steady state). After a failure or a slow call, each
//!   call writes until that sample has slid out. That holds for both storages; a
//!   [`CallRing`]'s writing call costs more than a [`CallWindow`]'s (two compare-and-swaps,
//!   on its cursor and on the ring, and two ring reads, against one compare-and-swap per
//!   rule).
//!
//! A time window counts every call: one compare-and-swap per call, one clock read (the
//! sample's bucket) plus the two reads of a slow-call rule, and a read of its `B` buckets
//! to judge the window (ten by default: sixty cost more per call). `bench/README.md` has the figures beside recloser's and
//! failsafe's rate rules.
//!
//! # Sharing without a lock
//!
//! A [`SharedBreaker`](crate::SharedBreaker) updates its window without a lock (an
//! interrupt handler may record while a thread is in the middle of an update) and never
//! decides a trip on a half-updated window:
//!
//! - Every window word is one 64-bit atomic that holds everything a rule needs: a
//!   [`CallWindow`] has one word per rule (failures, and slow calls if the policy has that
//!   rule), each with its samples *and* their number; a [`CallRing`]'s cursor holds the
//!   counts of both rules, the position and the newest sample (the samples themselves are
//!   in its ring, read only to push out the oldest); a time window's bucket holds its
//!   calls, failures and slow calls together. A sample is added with one compare-and-swap on one
//!   word, and a verdict is computed from the value that compare-and-swap wrote (a count
//!   window) or from one reading of the buckets, all of the same generation, the newest
//!   one with the sample in it (a time window). No outcome is lost when calls race: a
//!   compare-and-swap that lost the race is retried on the new value.
//! - Every word carries the breaker's 12-bit generation. A sample is added only to words
//!   of its permit's generation; a word of another generation means the window has been
//!   cleared since (or is being cleared), and the sample is dropped unjudged.
//! - A [`CallRing`] counts a sample in its cursor's compare-and-swap and writes it into the
//!   ring after: a caller that finds the newest sample possibly not written yet writes it
//!   itself (the same bits: writing twice changes nothing) before it reads the ring or
//!   adds its own. No caller waits for another, and the sample pushed out is always read
//!   from a ring that holds it.
//! - Entering the closed state writes an empty window of the new generation into every
//!   word *before* the transition lands (inside the transition's compare-and-swap loop),
//!   so the first permit of the new generation already finds it cleared.
//! - The trip itself is the machine's generation-guarded trip, applied by compare-and-swap
//!   like every transition.
//!
//! The loom model checks (`breaker-core/tests/loom_window.rs`) run these races: two
//! failures racing into a window that trips only with both, a success racing a failure, a
//! slow success racing a failure, a reset racing a sample that would trip the old window,
//! a call let through by a recovery racing it, a window trip racing a trip verdict, time
//! buckets racing; and for a [`CallRing`]: a sample pushed out while its own caller has
//! counted but not yet written it, racing failures that trip once, a reset racing a sample.
//!
//! # Limits worth knowing
//!
//! - A [`CallWindow`] holds at most 51 samples: each of its words is one 64-bit atomic
//!   holding the 12-bit generation, a marker bit and the samples (one bit each), which is
//!   what lets it change in one compare-and-swap with no lock. A [`CallRing`] holds at most
//!   1008: its ring has 1024 positions, and the 16 that a word takes over when the ring
//!   comes round must already be out of the window.
//! - A [`CallRing`] numbers its positions modulo 2^19: a caller that stalls between
//!   counting its sample and writing it while 262,144 other samples are added could write
//!   its sample over a newer one.
//! - A [`Snapshot`](crate::Snapshot) keeps a [`CallRing`]'s newest 51 samples and a time
//!   window's newest ten buckets (its format has room for no more), and a slow failure as a
//!   failure only.
//! - Generations wrap after 2048 transitions: a permit held across exactly a multiple of
//!   2048 transitions would pass for fresh here too (see [`Breaker`]).
//! - A time window's buckets are numbered by the millisecond counter, which wraps every
//!   49.7 days: at the wrap the window starts afresh. A clock that steps back by less
//!   than the window's span counts its samples in the newest bucket (no time passed); one
//!   that steps back further starts the window afresh. A bucket left untouched for
//!   2,621,440 bucket widths (3 days with 100 ms buckets, 30 with 1 s ones) and then
//!   reached again at exactly that distance would be read as current.

mod calls;
mod inflight;
mod ring;
mod rule;
mod time;

use core::fmt;

pub use calls::CallWindow;
pub use inflight::InFlight;
pub(crate) use inflight::{claim, overdue, release, NO_SLOT};
pub use ring::CallRing;
pub use rule::{
    Window, WindowSize, MAX_BUCKET_CALLS, MAX_RING_CALLS, MAX_WINDOW_BUCKETS, MAX_WINDOW_CALLS, MIN_WINDOW_TIME,
    WINDOW_BUCKETS,
};
pub(crate) use sealed::{Pushed, Sample, Shape, Tally};
pub use time::TimeWindow;

use crate::layout::Core;
use crate::machine::Transition;
#[cfg(doc)]
use crate::{Breaker, Reason};
use crate::{Duration, Instant, Observer, Outcome, Phase, Policy, PolicyError, Verdict};

/// A window's contents at one instant, for dashboards and tests
/// ([`SharedBreaker::window_stats`](crate::SharedBreaker::window_stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WindowStats {
    /// Samples in the window (successes and strikes; neutrals are not samples).
    pub calls: u32,
    /// Of them, failures.
    pub failures: u32,
    /// Of them, slow calls: slow successes (and slow failures, with
    /// [`Policy::with_slow_failures`]).
    pub slow: u32,
}

impl From<Tally> for WindowStats {
    fn from(t: Tally) -> WindowStats {
        WindowStats {
            calls: t.calls,
            failures: t.failures,
            slow: t.slow,
        }
    }
}

/// One bucket of a saved time window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bucket {
    /// Samples counted in the bucket, at most [`MAX_BUCKET_CALLS`].
    pub calls: u16,
    /// Of them, failures.
    pub failures: u16,
    /// Of them, slow successes (`failures + slow <= calls`).
    pub slow: u16,
}

/// A window's samples in a [`Snapshot`](crate::Snapshot): what a reboot keeps of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WindowSnapshot {
    /// No window: a policy of consecutive strikes, a breaker that is not closed (the
    /// window only lives while closed), or a snapshot of format version 1.
    #[default]
    None,
    /// A count window's last `len` samples (`len <=` [`MAX_WINDOW_CALLS`]: a [`CallRing`]
    /// keeps its newest 51), newest first:
    /// bit `i` of `failures` (of `slow`) is set when the sample `i` calls ago failed (was
    /// slow). No bit at or above `len` is set, and no bit in both.
    Calls {
        /// Samples held.
        len: u8,
        /// Failures, one bit per sample.
        failures: u64,
        /// Slow successes, one bit per sample.
        slow: u64,
    },
    /// A time window's buckets, newest first: `buckets[0]` is the bucket current when the
    /// snapshot was taken, `buckets[k]` the one `k` bucket widths before it (the newest ten
    /// of a window of more buckets). On restore they are placed the same number of buckets
    /// before the restoring breaker's current one (those its window has room for).
    Time {
        /// The buckets.
        buckets: [Bucket; WINDOW_BUCKETS as usize],
    },
}

/// The private part of [`WindowStore`]: what a breaker asks of its window.
pub(crate) mod sealed {
    use super::{Window, WindowSnapshot};
    use crate::Instant;

    /// One closed-state call as the window counts it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Sample {
        /// A success, not slow.
        Ok,
        /// A strike.
        Fail,
        /// A success slower than the policy's slow-call duration.
        Slow,
        /// A strike slower than the policy's slow-call duration, with a rule that counts
        /// slow failures ([`Policy::with_slow_failures`](crate::Policy::with_slow_failures)):
        /// a failure and a slow call.
        SlowFail,
    }

    impl Sample {
        /// Whether it counts as a failure.
        pub const fn fails(self) -> bool {
            matches!(self, Sample::Fail | Sample::SlowFail)
        }

        /// Whether it counts as a slow call.
        pub const fn slow(self) -> bool {
            matches!(self, Sample::Slow | Sample::SlowFail)
        }
    }

    /// What a window's storage can hold: its kind, and a count window's most calls or a
    /// time window's number of buckets.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Shape {
        /// A time window's (a count window's otherwise).
        pub time: bool,
        /// A count window's most samples, or a time window's buckets.
        pub size: u32,
    }

    /// What a window holds, as the judging rule reads it: `failures` of `calls` samples failed,
    /// `slow` of `timed` samples were slow. (`timed` is `calls`, except that a count window
    /// keeps its two rules in two words, which racing samples reach one after the other.)
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Tally {
        pub calls: u32,
        pub failures: u32,
        pub timed: u32,
        pub slow: u32,
    }

    /// The result of adding one sample to a window.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Pushed {
        /// The window is of another generation (cleared since, or being cleared): the sample
        /// was dropped, and there is nothing to judge.
        Stale,
        /// The sample changed nothing (a count window full of clean successes got another,
        /// or a full bucket): the window was already judged as it is.
        Unchanged,
        /// The window now holds this.
        Changed(Tally),
    }

    /// Implemented by [`CallWindow`](super::CallWindow) and
    /// [`TimeWindow`](super::TimeWindow) only.
    pub trait Store: Sync + core::fmt::Debug {
        /// What this storage holds.
        fn shape(&self) -> Shape;
        /// Adds `sample`, taken under a permit of generation `gen`, at `now`.
        fn push(&self, rule: &Window, gen: u16, sample: Sample, now: Instant) -> Pushed;
        /// Empties the window for generation `gen` (on entering the closed state).
        fn clear(&self, gen: u16);
        /// What the window of generation `gen` holds at `now`; `None` while it holds
        /// another generation's samples (cleared since, or being cleared).
        fn tally(&self, rule: &Window, gen: u16, now: Instant) -> Option<Tally>;
        /// The samples of generation `gen` at `now`, to store across a reboot.
        fn save(&self, rule: &Window, gen: u16, now: Instant) -> WindowSnapshot;
        /// Takes `saved` as the window of generation `gen` at `now` (empty if `saved` is of
        /// another kind).
        fn load(&self, rule: &Window, gen: u16, saved: &WindowSnapshot, now: Instant);
        /// The in-flight slots a shared breaker's gate watches (none but an
        /// [`InFlight`](super::InFlight)'s).
        #[inline(always)]
        fn slots(&self) -> &[crate::atomic::AtomicU64] {
            &[]
        }
    }

    /// The kind of window a storage type holds, for the constructors' checks.
    pub trait Kind {
        /// What the storage holds.
        const SHAPE: Shape;
    }
}

/// The storage of a windowed breaker's samples: [`CallWindow`], [`CallRing`] or
/// [`TimeWindow`], alone or with in-flight slots ([`InFlight`]). Sealed: only those
/// implement it. A breaker reaches its window through
/// [`Observer::window`], which [`Windowed`] answers.
pub trait WindowStore: sealed::Store {}

impl WindowStore for CallWindow {}
impl WindowStore for CallRing {}
impl<const B: usize> WindowStore for TimeWindow<B> {}

/// A window's storage paired with a breaker's observer: the observer of a windowed
/// breaker. It tells `observer` of every transition, and gives the breaker its window.
///
/// `Windowed<CallWindow>` (the default) holds the samples of a [`WindowSize::Calls`]
/// policy, `Windowed<TimeWindow>` those of a [`WindowSize::Time`] one; the second
/// parameter is the real observer (`()` for none).
///
/// ```
/// use breaker_core::{CallWindow, Duration, Policy, SharedBreaker, StderrLog, WindowSize, Windowed};
///
/// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30));
/// static LOGGED: SharedBreaker<Windowed<CallWindow, StderrLog>> =
///     SharedBreaker::windowed(&POLICY, Windowed::calls(StderrLog::new("upstream")));
/// # let _ = &LOGGED;
/// ```
pub struct Windowed<W = CallWindow, O = ()> {
    window: W,
    observer: O,
}

impl<O> Windowed<CallWindow, O> {
    /// An empty count window ([`WindowSize::Calls`]) beside `observer`.
    #[cfg(not(loom))]
    pub const fn calls(observer: O) -> Self {
        Windowed {
            window: CallWindow::new(),
            observer,
        }
    }

    /// An empty count window beside `observer` (not `const` under loom).
    #[cfg(loom)]
    pub fn calls(observer: O) -> Self {
        Windowed {
            window: CallWindow::new(),
            observer,
        }
    }
}

impl<O> Windowed<CallRing, O> {
    /// An empty large count window ([`WindowSize::Calls`] of up to [`MAX_RING_CALLS`])
    /// beside `observer`.
    #[cfg(not(loom))]
    pub const fn ring(observer: O) -> Self {
        Windowed {
            window: CallRing::new(),
            observer,
        }
    }

    /// An empty large count window beside `observer` (not `const` under loom).
    #[cfg(loom)]
    pub fn ring(observer: O) -> Self {
        Windowed {
            window: CallRing::new(),
            observer,
        }
    }
}

impl<O> Windowed<TimeWindow, O> {
    /// An empty time window ([`WindowSize::Time`]) of [`WINDOW_BUCKETS`] buckets beside
    /// `observer`.
    #[cfg(not(loom))]
    pub const fn time(observer: O) -> Self {
        Windowed::time_buckets(observer)
    }

    /// An empty time window beside `observer` (not `const` under loom).
    #[cfg(loom)]
    pub fn time(observer: O) -> Self {
        Windowed::time_buckets(observer)
    }
}

impl<const B: usize, O> Windowed<TimeWindow<B>, O> {
    /// An empty time window ([`WindowSize::Time`]) of `B` buckets beside `observer`; the
    /// type says `B`:
    ///
    /// ```
    /// use breaker_core::{Duration, Policy, SharedBreaker, TimeWindow, WindowSize, Windowed};
    ///
    /// // resilience4j's time window: one bucket per second, here 60 of them.
    /// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(60)), Duration::from_secs(30));
    /// static UPSTREAM: SharedBreaker<Windowed<TimeWindow<60>>> = SharedBreaker::windowed(&POLICY, Windowed::time_buckets(()));
    /// # let _ = &UPSTREAM;
    /// ```
    #[cfg(not(loom))]
    pub const fn time_buckets(observer: O) -> Self {
        Windowed {
            window: TimeWindow::new(),
            observer,
        }
    }

    /// An empty time window of `B` buckets beside `observer` (not `const` under loom).
    #[cfg(loom)]
    pub fn time_buckets(observer: O) -> Self {
        Windowed {
            window: TimeWindow::new(),
            observer,
        }
    }
}

impl<W: WindowStore + sealed::Kind, const K: usize, O> Windowed<InFlight<W, K>, O> {
    /// `window` (an empty [`CallWindow`], [`CallRing`] or [`TimeWindow`]) with `K` in-flight
    /// slots, beside `observer`: a [`SharedBreaker`](crate::SharedBreaker) whose policy has
    /// a slow-call rule then counts a call out longer than the slow-call duration as slow
    /// while it is still out, at its gate (see "Slow calls caught while still out" above).
    /// `K`, 1 to 254 (a compile error otherwise, in a `static`), is how many calls out can
    /// be watched at once; the type says it (`Windowed<InFlight<CallWindow, 16>>`), or takes
    /// the default of 8 (`Windowed<InFlight>`).
    ///
    /// ```
    /// use breaker_core::{Duration, InFlight, Policy, SharedBreaker, TimeWindow, WindowSize, Windowed};
    ///
    /// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(30))
    ///     .with_slow_calls(Duration::from_secs(2), 80);
    /// static UPSTREAM: SharedBreaker<Windowed<InFlight<TimeWindow, 32>>> =
    ///     SharedBreaker::windowed(&POLICY, Windowed::in_flight(TimeWindow::new(), ()));
    /// # let _ = &UPSTREAM;
    /// ```
    #[cfg(not(loom))]
    pub const fn in_flight(window: W, observer: O) -> Self {
        Windowed {
            window: InFlight::new(window),
            observer,
        }
    }

    /// `window` with `K` in-flight slots beside `observer` (not `const` under loom).
    #[cfg(loom)]
    pub fn in_flight(window: W, observer: O) -> Self {
        Windowed {
            window: InFlight::new(window),
            observer,
        }
    }
}

impl<W, O> Windowed<W, O> {
    /// The window's storage.
    pub fn window(&self) -> &W {
        &self.window
    }

    /// The observer told of every transition.
    pub fn observer(&self) -> &O {
        &self.observer
    }
}

impl<W: WindowStore, O: Observer> Observer for Windowed<W, O> {
    #[inline]
    fn on_transition(&self, transition: &Transition) {
        self.observer.on_transition(transition)
    }

    #[inline(always)]
    fn window(&self) -> Option<&dyn WindowStore> {
        Some(&self.window)
    }

    #[inline(always)]
    fn history(&self) -> Option<crate::Recent<'_>> {
        self.observer.history()
    }
}

/// A windowed breaker steered by a quota guard: its observer hears of each quota sample.
impl<W: WindowStore, O: crate::QuotaObserver> crate::QuotaObserver for Windowed<W, O> {
    fn on_quota(&self, quota: &crate::Quota) {
        self.observer.on_quota(quota)
    }
}

impl<W: fmt::Debug, O: fmt::Debug> fmt::Debug for Windowed<W, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Windowed")
            .field("window", &self.window)
            .field("observer", &self.observer)
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl<W: defmt::Format, O: defmt::Format> defmt::Format for Windowed<W, O> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Windowed {{ window: {}, observer: {} }}", self.window, self.observer)
    }
}

/// Whether a breaker whose window storage is `W` can run `rule`: only a window of the
/// kind `W` holds.
pub(crate) const fn fits_kind<W: sealed::Kind>(rule: &Window) -> Result<(), PolicyError> {
    if !rule.is_some() {
        Err(PolicyError::NeedsNoWindow)
    } else {
        fits_storage(rule, Some(W::SHAPE))
    }
}

/// Whether a breaker with window storage of `shape` (`None`: no storage) can run `rule`: a
/// window needs storage of its kind and size; a policy of consecutive strikes runs beside
/// any storage, which it ignores.
pub(crate) const fn fits_storage(rule: &Window, shape: Option<Shape>) -> Result<(), PolicyError> {
    let Some(shape) = shape else {
        return if rule.is_some() {
            Err(PolicyError::NeedsWindow)
        } else {
            Ok(())
        };
    };
    if !rule.is_some() {
        return Ok(());
    }
    match rule.size() {
        WindowSize::Time(_) if !shape.time => Err(PolicyError::NeedsTimeWindow),
        WindowSize::Calls(_) if shape.time => Err(PolicyError::NeedsCountWindow),
        WindowSize::Calls(n) if n > shape.size => Err(PolicyError::NeedsCallRing),
        WindowSize::Time(span)
            if shape.size == 0
                || span.as_millis() % shape.size != 0
                || rule.min_calls() > shape.size * MAX_BUCKET_CALLS =>
        {
            Err(PolicyError::BucketsOutOfRange)
        }
        _ => Ok(()),
    }
}

/// Panics (a compile error in a `static`) unless `rule` is a window of the kind `W` holds.
pub(crate) const fn check_kind<W: sealed::Kind>(rule: &Window) {
    if let Err(e) = fits_kind::<W>(rule) {
        e.fail()
    }
}

/// Panics (a compile error in a `static`) if `rule` is a window: the constructors of
/// breakers without window storage call it.
pub(crate) const fn check_no_window(rule: &Window) {
    if let Err(e) = fits_storage(rule, None) {
        e.fail()
    }
}

/// The window a breaker with `observer` and `rule` uses, if any: a window storage *and*
/// a windowed policy (a `Windowed` observer beside a policy of consecutive strikes is
/// ignored, and the breaker behaves as one of consecutive strikes). The policy is asked
/// first: a type-erased observer (the registry's `AnyBreaker`) answers through a virtual
/// call, which a policy of consecutive strikes then never makes.
#[inline(always)]
pub(crate) fn of<'a, O: ?Sized + Observer>(observer: &'a O, rule: &Window) -> Option<&'a dyn WindowStore> {
    if rule.is_some() {
        observer.window()
    } else {
        None
    }
}

/// [`of`] for a breaker keeping its policy in `policy`: the rule first, unless reading it
/// costs more than a load (a live policy), in which case the observer first, whose answer
/// for an observer without a window is known at compile time.
#[inline(always)]
pub(crate) fn of_store<'a, O: ?Sized + Observer, P: crate::PolicyStore>(
    observer: &'a O,
    policy: &P,
) -> Option<&'a dyn WindowStore> {
    if P::COSTLY_READ {
        let window = observer.window()?;
        policy.read().rule().is_some().then_some(window)
    } else {
        of(observer, policy.read().rule())
    }
}

/// The sample a closed call's `outcome` is, if any: a success (slow if it took `elapsed`,
/// longer than the rule's slow-call duration), a strike (slow too if the rule counts slow
/// failures and it took longer); nothing for a trip verdict (which
/// trips at once, clearing the window) or a neutral outcome.
pub(crate) fn sample(rule: &Window, outcome: Outcome, elapsed: Option<Duration>) -> Option<Sample> {
    match outcome {
        Outcome::Success => Some(rule.success(elapsed)),
        Outcome::Error(Verdict::Strike) => Some(rule.failure(elapsed)),
        Outcome::Error(_) => None,
    }
}

/// What the window of a breaker in state `core` holds at `now`: `None` without a window,
/// empty unless closed.
pub(crate) fn stats<O: ?Sized + Observer>(
    observer: &O,
    policy: &Policy,
    core: Core,
    now: Instant,
) -> Option<WindowStats> {
    let rule = policy.rule();
    let w = of(observer, rule)?;
    if !core.is(Phase::Closed) {
        return Some(WindowStats::default());
    }
    Some(
        w.tally(rule, core.gen(), now)
            .map(WindowStats::from)
            .unwrap_or_default(),
    )
}

/// The window of a breaker in state `core`, to store across a reboot: `None` without a
/// window or unless closed.
pub(crate) fn save<O: ?Sized + Observer>(observer: &O, policy: &Policy, core: Core, now: Instant) -> WindowSnapshot {
    let rule = policy.rule();
    match of(observer, rule) {
        Some(w) if core.is(Phase::Closed) => w.save(rule, core.gen(), now),
        _ => WindowSnapshot::None,
    }
}

/// Takes `saved` as the window of a breaker restored to `core` (an empty window unless
/// closed).
pub(crate) fn load<O: ?Sized + Observer>(
    observer: &O,
    policy: &Policy,
    core: Core,
    saved: &WindowSnapshot,
    now: Instant,
) {
    let rule = policy.rule();
    if let Some(w) = of(observer, rule) {
        let saved = if core.is(Phase::Closed) {
            saved
        } else {
            &WindowSnapshot::None
        };
        w.load(rule, core.gen(), saved, now);
    }
}

/// Whether a step with these transitions entered the closed state (so the window must be
/// cleared for the new generation).
pub(crate) fn enters_closed(transitions: &crate::machine::Transitions) -> bool {
    transitions.iter().flatten().any(|t| t.to == Phase::Closed)
}
