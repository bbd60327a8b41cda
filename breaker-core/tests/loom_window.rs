//! Model checks of a shared breaker's failure-rate window with loom: every interleaving
//! (up to a bound on preemptions, to keep the run short) of callers racing into one
//! window, and of a window racing a transition.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p breaker-core --test loom_window --release
//! ```
#![cfg(loom)]

use breaker_core::{
    CallRing, CallWindow, Classify, Clock, Duration, Instant, ManualClock, Outcome, Phase, Policy, SharedBreaker,
    TimeWindow, Verdict, WindowSize, WindowStats, WindowStore, Windowed,
};
use loom::sync::Arc;
use loom::thread;

#[derive(Debug)]
struct Nack;
impl Classify for Nack {}

static START: ManualClock = ManualClock::new(Instant::ZERO);
/// 100 ms on: a call started at zero and reported now took 100 ms.
static LATER: ManualClock = ManualClock::new(Instant::from_millis(100));
/// 1.5 s on: another bucket of a 10 s time window.
static NEXT_SECOND: ManualClock = ManualClock::new(Instant::from_millis(1_500));

fn now() -> Instant {
    START.now()
}

/// Every interleaving with at most 3 preemptions: the races below need one or two, and
/// the bound keeps the time window's ten-bucket reads from exploding the run time.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

fn count_window(policy: &'static Policy) -> Arc<SharedBreaker<Windowed<CallWindow>>> {
    Arc::new(SharedBreaker::windowed(policy, Windowed::calls(())))
}

/// A call that fails, through a windowed breaker of any storage.
fn fail<W: WindowStore>(b: &SharedBreaker<Windowed<W>>) {
    let _ = b.call(&START, || Err::<(), _>(Nack));
}

/// A call that succeeds, through a windowed breaker of any storage.
fn succeed<W: WindowStore>(b: &SharedBreaker<Windowed<W>>) {
    let _ = b.call(&START, || Ok::<_, Nack>(()));
}

/// Runs `a` and `b` on two threads at once and waits for both.
fn race<T: Send + Sync + 'static>(
    target: &Arc<T>,
    a: impl FnOnce(&T) + Send + 'static,
    b: impl FnOnce(&T) + Send + 'static,
) {
    let (x, y) = (target.clone(), target.clone());
    let t1 = thread::spawn(move || a(&x));
    let t2 = thread::spawn(move || b(&y));
    t1.join().unwrap();
    t2.join().unwrap();
}

#[test]
fn two_failures_racing_into_a_window_are_both_counted_and_trip_once() {
    // 60 % of at least 3: a success and one failure (1 of 2) do not trip; a success and
    // two failures (2 of 3) do. It trips only if neither failure was lost.
    static POLICY: Policy = Policy::failure_rate(60, WindowSize::Calls(4), Duration::from_millis(10)).with_min_calls(3);
    model(|| {
        let b = count_window(&POLICY);
        succeed(&b);
        race(&b, fail, fail);
        assert_eq!(b.phase(now()), Phase::Open);
        let c = b.counters();
        assert_eq!((c.failures, c.trips), (2, 1));
    });
}

#[test]
fn a_success_racing_a_failure_loses_neither() {
    static POLICY: Policy = Policy::failure_rate(100, WindowSize::Calls(8), Duration::from_millis(10));
    model(|| {
        let b = count_window(&POLICY);
        race(&b, succeed, fail);
        assert_eq!(
            b.window_stats(now()),
            Some(WindowStats {
                calls: 2,
                failures: 1,
                slow: 0
            })
        );
        assert_eq!(b.phase(now()), Phase::Closed);
    });
}

#[test]
fn a_slow_success_racing_a_failure_lands_in_both_rules_words() {
    static POLICY: Policy = Policy::failure_rate(100, WindowSize::Calls(8), Duration::from_millis(10))
        .with_slow_calls(Duration::from_millis(50), 100);
    model(|| {
        let b = count_window(&POLICY);
        race(
            &b,
            |b| {
                // Taken at zero, reported at 100 ms: slow.
                let p = b.try_acquire(&LATER).unwrap();
                p.record_timed(Outcome::Success, Instant::ZERO);
            },
            fail,
        );
        assert_eq!(
            b.window_stats(now()),
            Some(WindowStats {
                calls: 2,
                failures: 1,
                slow: 1
            })
        );
    });
}

#[test]
fn a_reset_racing_a_sample_never_trips_on_the_cleared_window() {
    // One failure of at least 2 in the window: the racing failure, under a permit taken
    // before the reset, would make 2 of 2. The reset clears the window: whichever lands
    // first, the breaker ends closed with an empty window (a trip before the reset is
    // undone by it; after it, the stale sample is dropped), never opened by the old window
    // after the reset, and the old sample never lands in the new window.
    static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_millis(10)).with_min_calls(2);
    model(|| {
        let b: &'static SharedBreaker<Windowed<CallWindow>> =
            Box::leak(Box::new(SharedBreaker::windowed(&POLICY, Windowed::calls(()))));
        fail(b);
        let before_reset = b.try_acquire(&START).unwrap();
        let t1 = thread::spawn(move || before_reset.failure(Verdict::Strike));
        let t2 = thread::spawn(move || b.reset(now()));
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(b.phase(now()), Phase::Closed);
        assert_eq!(b.window_stats(now()), Some(WindowStats::default()));
        assert!(b.counters().trips <= 1);
    });
}

#[test]
fn a_call_racing_a_reset_counts_in_the_window_of_its_own_generation() {
    // The same race with a whole call: it may start after the reset (its failure is then
    // the new window's first sample) or before (then it is cleared, or stale); the breaker
    // never opens on the old window after the reset.
    static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_millis(10)).with_min_calls(2);
    model(|| {
        let b = count_window(&POLICY);
        fail(&b);
        race(&b, fail, |b| b.reset(now()));
        assert_eq!(b.phase(now()), Phase::Closed);
        let stats = b.window_stats(now()).unwrap();
        let after = WindowStats {
            calls: 1,
            failures: 1,
            slow: 0,
        };
        assert!(stats == WindowStats::default() || stats == after, "{stats:?}");
        if b.counters().trips == 1 {
            assert_eq!(stats, WindowStats::default(), "tripped before the reset, cleared by it");
        }
    });
}

#[test]
fn a_window_trip_racing_a_trip_verdict_opens_once() {
    static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_millis(10)).with_min_calls(2);
    model(|| {
        let b = count_window(&POLICY);
        fail(&b);
        race(&b, fail, |b| {
            let _ = b.call(&START, || Err::<(), _>(Trip));
        });
        assert_eq!(b.phase(now()), Phase::Open);
        assert_eq!(b.counters().trips, 1, "the generation guard stops the second trip");
    });
}

#[derive(Debug)]
struct Trip;
impl Classify for Trip {
    fn verdict(&self) -> Verdict {
        Verdict::Trip
    }
}

#[test]
fn time_window_samples_racing_into_one_bucket_and_across_buckets_are_all_counted() {
    static POLICY: Policy = Policy::failure_rate(
        100,
        WindowSize::Time(Duration::from_secs(10)),
        Duration::from_millis(10),
    );
    model(|| {
        let b: Arc<SharedBreaker<Windowed<TimeWindow>>> =
            Arc::new(SharedBreaker::windowed(&POLICY, Windowed::time(())));
        race(
            &b,
            |b| {
                let _ = b.call(&START, || Err::<(), _>(Nack));
            },
            |b| {
                let _ = b.call(&NEXT_SECOND, || Ok::<_, Nack>(()));
            },
        );
        race(
            &b,
            |b| {
                let _ = b.call(&NEXT_SECOND, || Ok::<_, Nack>(()));
            },
            |b| {
                let _ = b.call(&NEXT_SECOND, || Err::<(), _>(Nack));
            },
        );
        assert_eq!(
            b.window_stats(NEXT_SECOND.now()),
            Some(WindowStats {
                calls: 4,
                failures: 2,
                slow: 0
            })
        );
    });
}

#[test]
fn a_recovery_racing_a_stale_sample_starts_from_an_empty_window() {
    // A permit taken while closed is reported while the probe that closes the breaker
    // again succeeds: the old sample must not land in the new window.
    static POLICY: Policy =
        Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_millis(100)).with_min_calls(1);
    model(|| {
        let b: &'static SharedBreaker<Windowed<CallWindow>> =
            Box::leak(Box::new(SharedBreaker::windowed(&POLICY, Windowed::calls(()))));
        let stale = b.try_acquire(&START).unwrap();
        fail(b); // 1 of 1: open
        let probe = b.try_acquire(&LATER).unwrap();
        assert!(probe.is_probe());
        let t1 = thread::spawn(move || probe.success());
        let t2 = thread::spawn(move || stale.failure(Verdict::Strike));
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(b.phase(LATER.now()), Phase::Closed);
        assert_eq!(b.window_stats(LATER.now()), Some(WindowStats::default()));
    });
}

#[test]
fn a_call_let_through_by_a_recovery_counts_in_the_new_window() {
    // The window is cleared for the new generation before the recovery lands, so a call
    // let through right after it (refused before it: the probe is out) always finds the
    // cleared window of its own generation, and its sample is never dropped.
    static POLICY: Policy =
        Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_millis(100)).with_min_calls(2);
    model(|| {
        let b: &'static SharedBreaker<Windowed<CallWindow>> =
            Box::leak(Box::new(SharedBreaker::windowed(&POLICY, Windowed::calls(()))));
        fail(b);
        fail(b);
        let probe = b.try_acquire(&LATER).unwrap();
        assert!(probe.is_probe());
        let t1 = thread::spawn(move || probe.success());
        let t2 = thread::spawn(move || {
            b.call(&LATER, || Err::<(), _>(Nack))
                .is_err_and(|e| e.into_inner().is_some())
        });
        t1.join().unwrap();
        let admitted = t2.join().unwrap();
        assert_eq!(b.phase(LATER.now()), Phase::Closed);
        let expected = if admitted {
            WindowStats {
                calls: 1,
                failures: 1,
                slow: 0,
            }
        } else {
            WindowStats::default()
        };
        assert_eq!(b.window_stats(LATER.now()), Some(expected));
    });
}

fn ring(policy: &'static Policy) -> Arc<SharedBreaker<Windowed<CallRing>>> {
    Arc::new(SharedBreaker::windowed(policy, Windowed::ring(())))
}

#[test]
fn samples_racing_into_a_ring_are_counted_and_written_whoever_writes_them() {
    // A ring window of 2, full of successes. A failure races two successes: the second
    // success pushes out the sample two before it, which may be the failure, counted but
    // not yet written by its caller (the success then writes it first, and reads it back).
    // However they interleave, the window never trips (at most 1 of 2 failed), and once two
    // more successes have pushed every racing sample out, it holds no failure: none was
    // lost, counted twice or written wrong.
    static POLICY: Policy = Policy::failure_rate(100, WindowSize::Calls(2), Duration::from_millis(10));
    model(|| {
        let b = ring(&POLICY);
        succeed(&b);
        succeed(&b);
        race(&b, fail, |b| {
            succeed(b);
            succeed(b);
        });
        let stats = b.window_stats(now()).unwrap();
        assert!(stats.calls == 2 && stats.failures <= 1, "{stats:?}");
        assert_eq!(b.phase(now()), Phase::Closed);
        succeed(&b);
        succeed(&b);
        assert_eq!(
            b.window_stats(now()),
            Some(WindowStats {
                calls: 2,
                failures: 0,
                slow: 0
            })
        );
    });
}

#[test]
fn a_ring_of_one_reads_its_racers_sample_from_the_cursor_or_the_ring() {
    // The narrowest window: the sample pushed out is always the newest, often the one
    // still on its way. A success and a failure race after a success: whichever lands
    // first, the failure makes the window 1 of 1 failed, and trips it exactly once.
    static POLICY: Policy = Policy::failure_rate(100, WindowSize::Calls(1), Duration::from_millis(10));
    model(|| {
        let b = ring(&POLICY);
        succeed(&b);
        race(&b, succeed, fail);
        assert_eq!(b.phase(now()), Phase::Open);
        let c = b.counters();
        assert_eq!((c.failures, c.trips), (1, 1));
    });
}

#[test]
fn racing_successes_slide_a_ring_of_one_without_a_trip() {
    static POLICY: Policy = Policy::failure_rate(100, WindowSize::Calls(1), Duration::from_millis(10));
    model(|| {
        let b = ring(&POLICY);
        race(&b, succeed, succeed);
        succeed(&b);
        assert_eq!(b.phase(now()), Phase::Closed);
        assert_eq!(b.window_stats(now()).map(|s| (s.calls, s.failures)), Some((1, 0)));
        assert_eq!(b.counters().trips, 0);
    });
}

#[test]
fn two_failures_racing_into_a_ring_trip_it_once() {
    // As with the small window: it trips only if neither failure was lost.
    static POLICY: Policy =
        Policy::failure_rate(60, WindowSize::Calls(100), Duration::from_millis(10)).with_min_calls(3);
    model(|| {
        let b = ring(&POLICY);
        succeed(&b);
        race(&b, fail, fail);
        assert_eq!(b.phase(now()), Phase::Open);
        let c = b.counters();
        assert_eq!((c.failures, c.trips), (2, 1));
    });
}

#[test]
fn a_reset_racing_a_ring_sample_never_trips_on_the_cleared_window() {
    static POLICY: Policy =
        Policy::failure_rate(50, WindowSize::Calls(64), Duration::from_millis(10)).with_min_calls(2);
    model(|| {
        let b: &'static SharedBreaker<Windowed<CallRing>> =
            Box::leak(Box::new(SharedBreaker::windowed(&POLICY, Windowed::ring(()))));
        fail(b);
        let before_reset = b.try_acquire(&START).unwrap();
        let t1 = thread::spawn(move || before_reset.failure(Verdict::Strike));
        let t2 = thread::spawn(move || b.reset(now()));
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(b.phase(now()), Phase::Closed);
        assert_eq!(b.window_stats(now()), Some(WindowStats::default()));
        assert!(b.counters().trips <= 1);
        // The new window counts from scratch: one failure of at least two does not trip.
        fail(b);
        assert_eq!(b.window_stats(now()).map(|s| (s.calls, s.failures)), Some((1, 1)));
    });
}
