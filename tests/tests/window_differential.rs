//! Windowed breakers, single-owner and shared, against a plain reference: a `VecDeque` of
//! the closed state's samples, judged the way `breaker_core::window` documents, written
//! without packing, atomics or fast paths. Random histories of calls (with durations),
//! held permits reported late (stale or not), clock moves (backwards and across the
//! counter's wrap), resets, predicted trips and recoveries must give the same phase,
//! window contents, counters and snapshots on all three: for each storage (a `CallWindow`,
//! a `CallRing` of small and of large windows up to 1008 calls, a `TimeWindow` of ten and
//! of sixty buckets), with and without slow failures counted as slow calls.

use std::collections::VecDeque;

use breaker_core::{
    Breaker, CallError, CallRing, CallWindow, Classify, Clock, Counters, Duration, Instant, ManualClock, Outcome,
    Permit, Phase, Policy, Reason, SharedBreaker, SharedPermit, TimeWindow, Verdict, WindowSize, WindowStats, Windowed,
};
use proptest::prelude::*;
use tests::differential::kept;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sample {
    Ok,
    Fail,
    Slow,
    /// A slow failure, with a rule that counts them as slow calls too.
    SlowFail,
}

/// The reference: the closed state's samples, oldest first, each with its bucket number
/// (time windows) and the generation it was taken in.
struct Reference {
    policy: Policy,
    /// The breaker is closed (else open or half-open: no window).
    closed: bool,
    /// Bumped on every transition: a permit of an older epoch is stale.
    epoch: u64,
    samples: VecDeque<(u32, Sample)>,
    /// A time window's buckets.
    buckets: u32,
    /// Bucket numbers count modulo this: the buckets times the largest power of two that
    /// keeps it at most 2^22 (10 x 2^18 for ten buckets), as documented.
    numbers: u32,
}

impl Reference {
    fn new(policy: Policy, buckets: u32) -> Reference {
        let mut numbers = buckets;
        while numbers * 2 <= 1 << 22 {
            numbers *= 2;
        }
        Reference {
            policy,
            closed: true,
            epoch: 0,
            samples: VecDeque::new(),
            buckets,
            numbers,
        }
    }

    fn rule(&self) -> breaker_core::Window {
        self.policy.window().unwrap()
    }

    fn width(&self) -> Option<u32> {
        match self.rule().size() {
            WindowSize::Calls(_) => None,
            WindowSize::Time(span) => Some(span.as_millis() / self.buckets),
        }
    }

    /// The current bucket for a reading in bucket `n`: the newest bucket held if it is
    /// ahead by less than the window (no time passed), else `n`.
    fn current(&self, n: u32) -> u32 {
        let (numbers, buckets) = (self.numbers, self.buckets);
        let ahead = self
            .samples
            .iter()
            .map(|(b, _)| (b + numbers - n) % numbers)
            .filter(|a| *a < buckets)
            .max()
            .unwrap_or(0);
        (n + ahead) % numbers
    }

    fn live(&self, now: Instant) -> Vec<Sample> {
        match self.width() {
            None => self.samples.iter().map(|(_, s)| *s).collect(),
            Some(w) => {
                let (numbers, buckets) = (self.numbers, self.buckets);
                let cur = self.current(now.as_millis() / w % numbers);
                self.samples
                    .iter()
                    .filter(|(b, _)| (cur + numbers - b) % numbers < buckets)
                    .map(|(_, s)| *s)
                    .collect()
            }
        }
    }

    fn stats(&self, now: Instant) -> WindowStats {
        if !self.closed {
            return WindowStats::default();
        }
        let live = self.live(now);
        WindowStats {
            calls: live.len() as u32,
            failures: live
                .iter()
                .filter(|s| matches!(s, Sample::Fail | Sample::SlowFail))
                .count() as u32,
            slow: live
                .iter()
                .filter(|s| matches!(s, Sample::Slow | Sample::SlowFail))
                .count() as u32,
        }
    }

    fn transition(&mut self, closed: bool) {
        self.closed = closed;
        self.epoch += 1;
        self.samples.clear();
    }

    /// A probe's outcome: not a sample; a success closes (probes to close: 1), a failure
    /// re-opens, a neutral outcome changes nothing.
    fn probe(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Success => self.transition(true),
            Outcome::Error(Verdict::Neutral) => {}
            Outcome::Error(_) => self.transition(false),
        }
    }

    /// A closed call of `epoch` ended at `now` after `took`.
    fn call(&mut self, epoch: u64, outcome: Outcome, took: Duration, now: Instant) {
        if !self.closed || epoch != self.epoch {
            return; // refused, or stale: not a sample
        }
        let rule = self.rule();
        let sample = match outcome {
            Outcome::Success => match rule.slow_calls() {
                Some((slower_than, _)) if took > slower_than => Sample::Slow,
                _ => Sample::Ok,
            },
            Outcome::Error(Verdict::Strike) => match rule.slow_calls() {
                Some((slower_than, _)) if rule.slow_failures() && took > slower_than => Sample::SlowFail,
                _ => Sample::Fail,
            },
            Outcome::Error(Verdict::Neutral) => return,
            Outcome::Error(_) => return self.transition(false), // a trip verdict
        };
        match (rule.size(), self.width()) {
            (WindowSize::Calls(n), _) => {
                self.samples.push_back((0, sample));
                while self.samples.len() > n as usize {
                    self.samples.pop_front();
                }
            }
            (_, Some(w)) => {
                let (numbers, buckets) = (self.numbers, self.buckets);
                let cur = self.current(now.as_millis() / w % numbers);
                // The bucket's slot is taken over: whatever else it held is gone.
                self.samples.retain(|(b, _)| *b == cur || b % buckets != cur % buckets);
                self.samples.push_back((cur, sample));
            }
            _ => unreachable!(),
        }
        // Judged after every sample.
        let s = self.stats(now);
        let min = rule.min_calls();
        let reached = |marked: u32, pct: u32| s.calls >= min && s.calls > 0 && marked * 100 >= pct * s.calls;
        let slow = rule.slow_calls().is_some_and(|(_, pct)| reached(s.slow, pct));
        if reached(s.failures, rule.failure_rate()) || slow {
            self.transition(false);
        }
    }
}

#[derive(Debug)]
struct E(Verdict);

impl Classify for E {
    fn verdict(&self) -> Verdict {
        self.0
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// A call made now that takes this long and ends with this outcome.
    Call(Outcome, u32),
    /// A permit taken now and kept.
    Hold,
    /// The `i`-th kept permit reports.
    Report(usize, Outcome),
    Advance(u32),
    Back(u32),
    NearWrap(u32),
    Reset,
    Trip,
    /// Wait out the cooldown and close with a successful probe.
    Recover,
    /// `n` calls in a row, each a strike one time in `fail` and slow (60 ms) one time in
    /// `slow`, 0 to 2 ms apart, drawn from `seed`: enough to fill and slide a large window.
    Run {
        n: u32,
        fail: u32,
        slow: u32,
        seed: u64,
    },
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        5 => Just(Outcome::Success),
        4 => Just(Outcome::STRIKE),
        1 => Just(Outcome::TRIP),
        1 => Just(Outcome::NEUTRAL),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (outcome(), 0u32..60).prop_map(|(o, t)| Op::Call(o, t)),
        2 => Just(Op::Hold),
        2 => (any::<usize>(), outcome()).prop_map(|(i, o)| Op::Report(i, o)),
        4 => (0u32..400).prop_map(Op::Advance),
        1 => (0u32..3000).prop_map(Op::Back),
        1 => (0u32..500).prop_map(Op::NearWrap),
        1 => Just(Op::Reset),
        1 => Just(Op::Trip),
        2 => Just(Op::Recover),
    ]
}

/// A windowed policy of `size`, its other settings drawn: `min` calls at most (and at most
/// the window), the slow-call rule and its slow failures.
fn settings(size: impl Strategy<Value = WindowSize>, min: u32) -> impl Strategy<Value = Policy> {
    let slow = proptest::option::of((1u32..40, 1u32..=100, any::<bool>()));
    (size, 1u32..=100, 1..=min, slow).prop_map(|(size, rate, min, slow)| {
        let p = Policy::failure_rate(rate, size, Duration::from_millis(500));
        let most = match size {
            WindowSize::Calls(n) => n,
            WindowSize::Time(_) => 12,
        };
        let p = p.with_min_calls(min.min(most));
        match slow {
            Some((ms, pct, slow_failures)) => p
                .with_slow_calls(Duration::from_millis(ms), pct)
                .with_slow_failures(slow_failures),
            None => p,
        }
    })
}

/// Small windowed policies, so that short histories trip, recover and slide.
fn policy() -> impl Strategy<Value = Policy> {
    let size = prop_oneof![
        (1u32..9).prop_map(WindowSize::Calls),
        (100u32..301).prop_map(|w| WindowSize::Time(Duration::from_millis(w * 10))),
        // Whole ms per bucket of sixty (17 to 50 ms): these run in sixty buckets too.
        (17u32..51).prop_map(|w| WindowSize::Time(Duration::from_millis(w * 60))),
    ];
    settings(size, 11)
}

/// The storages a policy of `size` can be given: `large` picks the ring for a count window
/// (which needs it beyond 51 calls), the sixty buckets for a time window of whole
/// milliseconds per bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Storage {
    Calls,
    Ring,
    Time,
    Time60,
}

fn storage(size: WindowSize, large: bool) -> Storage {
    match size {
        WindowSize::Calls(n) if large || n > breaker_core::MAX_WINDOW_CALLS => Storage::Ring,
        WindowSize::Calls(_) => Storage::Calls,
        WindowSize::Time(span) if large && span.as_millis() % 60 == 0 => Storage::Time60,
        WindowSize::Time(_) => Storage::Time,
    }
}

/// What a held permit's gate gave.
#[derive(Debug, PartialEq, Eq)]
enum Held {
    Refused,
    /// A closed call's permit, kept.
    Kept,
    /// The probe slot: answered at once with a success (probes are not samples).
    ProbeSucceeded,
}

/// One storage kind: the single-owner and shared breakers of a policy, driven as one.
trait Pair {
    /// A call through both that takes `took` ms of the clock; whether each let it through.
    fn call(&mut self, clock: &ManualClock, outcome: Outcome, took: u32) -> (bool, bool);
    fn hold(&mut self, clock: &ManualClock, epoch: u64) -> Held;
    /// The `i`-th held permit reports; its epoch and when it was taken.
    fn report(&mut self, i: usize, clock: &ManualClock, outcome: Outcome) -> Option<(u64, Instant)>;
    fn check(&self, now: Instant) -> (Phase, Option<WindowStats>, Counters);
    fn reset(&mut self, now: Instant);
    fn trip(&mut self, now: Instant);
    /// The wait left before a probe (zero unless open).
    fn remaining(&self, now: Instant) -> Duration;
}

/// A permit of each breaker, when they were taken, and the reference's epoch then.
type HeldPermit<W> = (Permit, SharedPermit<'static, ManualClock, Windowed<W>>, Instant, u64);

struct Both<W: breaker_core::WindowStore + 'static> {
    single: Breaker<Windowed<W>>,
    shared: &'static SharedBreaker<Windowed<W>>,
    clock: &'static ManualClock,
    /// Permits held, with when they were taken and the reference's epoch then.
    held: Vec<HeldPermit<W>>,
}

impl<W: breaker_core::WindowStore + 'static> Both<W> {
    fn compare(&self, now: Instant) -> (Phase, Option<WindowStats>, Counters) {
        let (a, b) = (self.single.state(now), self.shared.state(now));
        assert_eq!(a, b, "states differ");
        let (sa, sb) = (self.single.window_stats(now), self.shared.window_stats(now));
        assert_eq!(sa, sb, "windows differ");
        assert_eq!(kept(self.single.counters()), self.shared.counters(), "counters differ");
        let (mut x, mut y) = (self.single.snapshot(now), self.shared.snapshot(now));
        x.counters = kept(x.counters);
        y.counters = kept(y.counters);
        assert_eq!(x, y, "snapshots differ");
        (a.phase(), sa, self.shared.counters())
    }
}

impl<W: breaker_core::WindowStore + 'static> Pair for Both<W> {
    fn call(&mut self, clock: &ManualClock, outcome: Outcome, took: u32) -> (bool, bool) {
        let start = clock.now();
        // The single owner: the gate at the start, the report at the end.
        let a = match self.single.try_acquire(start) {
            Ok(p) => {
                let end = start.wrapping_add(Duration::from_millis(took));
                self.single.record_timed(p, outcome, start, end);
                true
            }
            Err(_) => false,
        };
        // The shared one times the call itself (the clock moves during it), then the
        // clock is put back for the next breaker's turn.
        let b = !matches!(
            self.shared.call(self.clock, || {
                self.clock.advance(Duration::from_millis(took));
                match outcome {
                    Outcome::Success => Ok(()),
                    Outcome::Error(v) => Err(E(v)),
                }
            }),
            Err(CallError::Refused(_))
        );
        self.clock.set(start);
        (a, b)
    }

    fn hold(&mut self, clock: &ManualClock, epoch: u64) -> Held {
        let now = clock.now();
        match (self.single.try_acquire(now), self.shared.try_acquire(self.clock)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.is_probe(), b.is_probe());
                if a.is_probe() {
                    self.single.record(a, Outcome::Success, now);
                    b.success();
                    Held::ProbeSucceeded
                } else {
                    self.held.push((a, b, now, epoch));
                    Held::Kept
                }
            }
            (Err(x), Err(y)) => {
                assert_eq!(x, y);
                Held::Refused
            }
            _ => panic!("gates differ"),
        }
    }

    fn report(&mut self, i: usize, clock: &ManualClock, outcome: Outcome) -> Option<(u64, Instant)> {
        if self.held.is_empty() {
            return None;
        }
        let (a, b, started, epoch) = self.held.swap_remove(i % self.held.len());
        let now = clock.now();
        assert_eq!(self.single.is_stale(&a, now), b.is_stale());
        self.single.record_timed(a, outcome, started, now);
        b.record_timed(outcome, started);
        Some((epoch, started))
    }

    fn remaining(&self, now: Instant) -> Duration {
        match self.single.state(now) {
            breaker_core::State::Open { remaining, .. } => remaining,
            _ => Duration::ZERO,
        }
    }

    fn check(&self, now: Instant) -> (Phase, Option<WindowStats>, Counters) {
        self.compare(now)
    }

    fn reset(&mut self, now: Instant) {
        self.single.reset(now);
        self.shared.reset(now);
    }

    fn trip(&mut self, now: Instant) {
        self.single.trip(Reason::Predicted, now);
        self.shared.trip(Reason::Predicted, now);
    }
}

fn both<W: breaker_core::WindowStore + 'static>(
    policy: Policy,
    clock: &'static ManualClock,
    new: fn() -> Windowed<W>,
) -> Box<dyn Pair> {
    let leaked: &'static Policy = Box::leak(Box::new(policy));
    Box::new(Both::<W> {
        single: Breaker::try_with_observer(policy, new()).expect("the storage fits"),
        shared: Box::leak(Box::new(
            SharedBreaker::try_with_policy_and_observer(leaked, new()).expect("the storage fits"),
        )),
        clock,
        held: Vec::new(),
    })
}

/// A call through the pair and the reference alike.
fn call(
    pair: &mut dyn Pair,
    reference: &mut Reference,
    clock: &ManualClock,
    outcome: Outcome,
    took: u32,
) -> Result<(), TestCaseError> {
    let now = clock.now();
    let closed = reference.closed;
    let (a, b) = pair.call(clock, outcome, took);
    prop_assert_eq!(a, b, "gates differ");
    if closed {
        prop_assert!(a, "a closed breaker lets calls through");
        let epoch = reference.epoch;
        let end = now.wrapping_add(Duration::from_millis(took));
        reference.call(epoch, outcome, Duration::from_millis(took), end);
    } else if a {
        reference.probe(outcome);
    }
    Ok(())
}

fn run(policy: Policy, storage: Storage, ops: &[Op]) -> Result<(), TestCaseError> {
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new(Instant::from_millis(1_000))));
    let mut pair = match storage {
        Storage::Calls => both::<CallWindow>(policy, clock, || Windowed::calls(())),
        Storage::Ring => both::<CallRing>(policy, clock, || Windowed::ring(())),
        Storage::Time => both::<TimeWindow>(policy, clock, || Windowed::time(())),
        Storage::Time60 => both::<TimeWindow<60>>(policy, clock, || Windowed::time_buckets(())),
    };
    let mut reference = Reference::new(policy, if storage == Storage::Time60 { 60 } else { 10 });
    let mut trips = 0u32;
    for op in ops {
        let now = clock.now();
        match *op {
            Op::Call(outcome, took) => call(&mut *pair, &mut reference, clock, outcome, took)?,
            Op::Run { n, fail, slow, seed } => {
                let mut x = seed | 1;
                for _ in 0..n {
                    // xorshift64: the run's outcomes and durations.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let outcome = if x % u64::from(fail) == 0 {
                        Outcome::STRIKE
                    } else {
                        Outcome::Success
                    };
                    let took = if (x >> 20) % u64::from(slow) == 0 { 60 } else { 0 };
                    call(&mut *pair, &mut reference, clock, outcome, took)?;
                    // Time passes (no bucket fills up: the reference does not halve them).
                    clock.advance(Duration::from_millis((x >> 40) as u32 % 3));
                }
            }
            Op::Hold => match pair.hold(clock, reference.epoch) {
                Held::Kept => prop_assert!(reference.closed),
                Held::Refused => prop_assert!(!reference.closed),
                Held::ProbeSucceeded => {
                    prop_assert!(!reference.closed);
                    reference.probe(Outcome::Success);
                }
            },
            Op::Report(i, outcome) => {
                if let Some((epoch, started)) = pair.report(i, clock, outcome) {
                    // The call took from when its permit was taken until now.
                    reference.call(epoch, outcome, now.since(started), now);
                }
            }
            Op::Advance(ms) => clock.set(now.wrapping_add(Duration::from_millis(ms))),
            Op::Back(ms) => clock.set(now.wrapping_sub(Duration::from_millis(ms))),
            Op::NearWrap(ms) => clock.set(Instant::from_millis(u32::MAX - ms)),
            Op::Reset => {
                pair.reset(now);
                reference.transition(true);
            }
            Op::Trip => {
                pair.trip(now);
                reference.transition(false);
            }
            Op::Recover => {
                if !reference.closed {
                    // Wait out what is left of the cooldown, then probe with a success.
                    clock.set(now.wrapping_add(pair.remaining(now)));
                    let (a, b) = pair.call(clock, Outcome::Success, 0);
                    prop_assert!(a && b, "the cooldown is over: the probe goes through");
                    reference.probe(Outcome::Success);
                }
            }
        }
        let now = clock.now();
        let (phase, stats, counters) = pair.check(now);
        prop_assert_eq!(
            phase == Phase::Closed,
            reference.closed,
            "phase {:?} after {:?}",
            phase,
            op
        );
        prop_assert_eq!(stats, Some(reference.stats(now)), "window after {:?}", op);
        prop_assert!(counters.trips >= trips);
        trips = counters.trips;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4_000))]

    #[test]
    fn windowed_breakers_match_the_vecdeque_reference(
        policy in policy(),
        large in any::<bool>(),
        ops in prop::collection::vec(op(), 1..150),
    ) {
        let storage = storage(policy.window().unwrap().size(), large);
        run(policy, storage, &ops)?;
    }
}

/// Large count windows (52 to 1008 calls, in a `CallRing`): runs of hundreds of calls fill
/// them and slide them, among the other operations. (Not time windows: a run after the
/// clock stepped back piles into one bucket, past the 1023 calls at which a bucket halves
/// its counts, which the reference does not model.)
fn large_policy() -> impl Strategy<Value = Policy> {
    let size = prop_oneof![
        3 => (52u32..=breaker_core::MAX_RING_CALLS).prop_map(WindowSize::Calls),
        1 => Just(WindowSize::Calls(1000)),
    ];
    settings(size, 1008)
}

fn large_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => op(),
        2 => (1u32..1500, 1u32..40, 1u32..40, any::<u64>()).prop_map(|(n, fail, slow, seed)| Op::Run { n, fail, slow, seed }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn large_windows_match_the_vecdeque_reference(policy in large_policy(), ops in prop::collection::vec(large_op(), 1..40)) {
        let storage = storage(policy.window().unwrap().size(), true);
        run(policy, storage, &ops)?;
    }
}
