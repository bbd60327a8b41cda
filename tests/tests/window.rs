//! Failure-rate and slow-call windows: one test per rule of `breaker_core::window`, each
//! on both breakers, and resilience4j's documented examples reproduced.

use std::sync::atomic::{AtomicU32, Ordering};

use breaker_core::{
    Breaker, CallError, Clock, Duration, Instant, ManualClock, Observer, Outcome, Phase, Policy, PolicyError, Reason,
    SharedBreaker, TimeWindow, Transition, Verdict, WindowSize, WindowStats, Windowed,
};

fn ms(n: u32) -> Instant {
    Instant::from_millis(n)
}

fn secs(n: u32) -> Instant {
    Instant::from_millis(n * 1000)
}

fn leak(p: Policy) -> &'static Policy {
    Box::leak(Box::new(p))
}

/// A windowed breaker of either kind, driven the same way, so that every rule is checked on
/// both storages.
trait Subject {
    fn outcome(&mut self, outcome: Outcome, at: Instant);
    /// A success that took `took` (started at `at`).
    fn timed_success(&mut self, at: Instant, took: Duration);
    fn phase(&self, at: Instant) -> Phase;
    fn stats(&self, at: Instant) -> WindowStats;
    fn reset(&mut self, at: Instant);
    fn counters_trips(&self) -> u32;
}

struct Single(Breaker<Windowed<breaker_core::CallWindow>>);
struct SingleTime(Breaker<Windowed<TimeWindow>>);
struct Shared(&'static SharedBreaker<Windowed<breaker_core::CallWindow>>);
struct SharedTime(&'static SharedBreaker<Windowed<TimeWindow>>);

macro_rules! single_subject {
    ($t:ty) => {
        impl Subject for $t {
            fn outcome(&mut self, outcome: Outcome, at: Instant) {
                let p = self.0.try_acquire(at).expect("closed breakers let calls through");
                self.0.record(p, outcome, at);
            }
            fn timed_success(&mut self, at: Instant, took: Duration) {
                let p = self.0.try_acquire(at).expect("closed");
                self.0
                    .record_timed(p, Outcome::Success, at, at.wrapping_add(took));
            }
            fn phase(&self, at: Instant) -> Phase {
                self.0.phase(at)
            }
            fn stats(&self, at: Instant) -> WindowStats {
                self.0.window_stats(at).expect("a windowed breaker has a window")
            }
            fn reset(&mut self, at: Instant) {
                self.0.reset(at)
            }
            fn counters_trips(&self) -> u32 {
                self.0.counters().trips
            }
        }
    };
}
single_subject!(Single);
single_subject!(SingleTime);

macro_rules! shared_subject {
    ($t:ty) => {
        impl Subject for $t {
            fn outcome(&mut self, outcome: Outcome, at: Instant) {
                let clock = ManualClock::new(at);
                let r = self.0.call(&clock, || match outcome {
                    Outcome::Success => Ok(()),
                    Outcome::Error(v) => Err(V(v)),
                });
                assert!(
                    !matches!(r, Err(CallError::Refused(_))),
                    "closed breakers let calls through"
                );
            }
            fn timed_success(&mut self, at: Instant, took: Duration) {
                let clock = ManualClock::new(at);
                let r = self.0.call(&clock, || {
                    clock.advance(took);
                    Ok::<_, V>(())
                });
                assert!(r.is_ok());
            }
            fn phase(&self, at: Instant) -> Phase {
                self.0.phase(at)
            }
            fn stats(&self, at: Instant) -> WindowStats {
                self.0.window_stats(at).expect("a windowed breaker has a window")
            }
            fn reset(&mut self, at: Instant) {
                self.0.reset(at)
            }
            fn counters_trips(&self) -> u32 {
                self.0.counters().trips
            }
        }
    };
}
shared_subject!(Shared);
shared_subject!(SharedTime);

/// An error carrying its verdict.
#[derive(Debug)]
struct V(Verdict);

impl breaker_core::Classify for V {
    fn verdict(&self) -> Verdict {
        self.0
    }
}

/// Both storages of a count-window policy.
fn both(policy: Policy) -> [Box<dyn Subject>; 2] {
    [
        Box::new(Single(Breaker::windowed(policy, Windowed::calls(())))),
        Box::new(Shared(Box::leak(Box::new(SharedBreaker::windowed(
            leak(policy),
            Windowed::calls(()),
        ))))),
    ]
}

/// Both storages of a time-window policy.
fn both_time(policy: Policy) -> [Box<dyn Subject>; 2] {
    [
        Box::new(SingleTime(Breaker::windowed(policy, Windowed::time(())))),
        Box::new(SharedTime(Box::leak(Box::new(SharedBreaker::windowed(
            leak(policy),
            Windowed::time(()),
        ))))),
    ]
}

const S: Outcome = Outcome::Success;
const F: Outcome = Outcome::STRIKE;

fn feed(b: &mut dyn Subject, outcomes: &[Outcome], at: Instant) {
    for o in outcomes {
        b.outcome(*o, at);
    }
}

// ---- resilience4j's documented examples --------------------------------------------------

#[test]
fn resilience4j_a_count_window_of_10_always_holds_10_measurements() {
    let policy = Policy::failure_rate(100, WindowSize::Calls(10), Duration::from_secs(60));
    for mut b in both(policy) {
        feed(&mut *b, &[S; 10], ms(0));
        assert_eq!(b.stats(ms(0)).calls, 10);
        feed(&mut *b, &[F, S], ms(0));
        // Still 10: the two oldest measurements were evicted.
        assert_eq!(
            b.stats(ms(0)),
            WindowStats {
                calls: 10,
                failures: 1,
                slow: 0
            }
        );
    }
}

#[test]
fn resilience4j_with_a_minimum_of_10_calls_9_failures_do_not_trip_and_the_10th_does() {
    // "If minimumNumberOfCalls is 10, then at least 10 calls must be recorded before the
    // failure rate can be calculated. If only 9 calls have been recorded the CircuitBreaker
    // will not transition to open even if all 9 calls have failed."
    let policy = Policy::failure_rate(
        50,
        WindowSize::Calls(100.min(breaker_core::MAX_WINDOW_CALLS)),
        Duration::from_secs(60),
    )
    .with_min_calls(10);
    for mut b in both(policy) {
        feed(&mut *b, &[F; 9], ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Closed, "9 failures, below the minimum");
        b.outcome(F, ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Open);
    }
}

#[test]
fn resilience4j_50_percent_over_10_calls_with_a_minimum_of_5() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(60)).with_min_calls(5);
    for mut b in both(policy) {
        // Two of four failed: 50 %, but only 4 calls.
        feed(&mut *b, &[S, F, S, F], ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Closed);
        // A success completes the minimum at 2 of 5: 40 %, below.
        b.outcome(S, ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Closed);
        // 3 of 6: exactly 50 %, "equal or greater than the threshold": open.
        b.outcome(F, ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Open);
    }
}

#[test]
fn resilience4j_the_success_that_completes_the_minimum_trips_a_failing_window() {
    // resilience4j judges after every recorded call, successes included.
    let policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(60)).with_min_calls(5);
    for mut b in both(policy) {
        feed(&mut *b, &[F, F, F, F], ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Closed);
        b.outcome(S, ms(0)); // 4 of 5 failed
        assert_eq!(b.phase(ms(0)), Phase::Open);
    }
}

#[test]
fn resilience4j_slow_calls_more_than_half_of_the_calls_longer_than_5_seconds_trip() {
    // "when more than 50% of the recorded calls took longer than 5 seconds."
    let policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(60))
        .with_min_calls(4)
        .with_slow_calls(Duration::from_secs(5), 50);
    for mut b in both(policy) {
        b.timed_success(ms(0), Duration::from_secs(6));
        b.timed_success(ms(0), Duration::from_millis(10));
        b.timed_success(ms(0), Duration::from_secs(5)); // exactly 5 s: not slower than 5 s
        assert_eq!(b.stats(ms(0)).slow, 1);
        b.timed_success(ms(0), Duration::from_secs(7)); // 2 of 4: 50 %
        assert_eq!(b.phase(ms(0)), Phase::Open);
    }
}

#[test]
fn resilience4j_a_10_second_time_window_has_10_one_second_buckets() {
    let policy = Policy::failure_rate(100, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(60));
    for mut b in both_time(policy) {
        for s in 0..10 {
            b.outcome(S, secs(s));
        }
        assert_eq!(b.stats(secs(9)).calls, 10);
        // At 10 s the bucket of second 0 has left the window; at 19.999 s only second 10's
        // and 9 ..= 19's remain.
        b.outcome(S, secs(10));
        assert_eq!(b.stats(secs(10)).calls, 10);
        assert_eq!(b.stats(ms(18_999)).calls, 2);
        assert_eq!(b.stats(secs(20)).calls, 0);
    }
}

// ---- the rules ---------------------------------------------------------------------------

#[test]
fn min_calls_holds_off_even_a_window_of_failures() {
    let policy = Policy::failure_rate(10, WindowSize::Calls(20), Duration::from_secs(60)).with_min_calls(8);
    for mut b in both(policy) {
        feed(&mut *b, &[F; 7], ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Closed);
        b.outcome(F, ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Open);
    }
}

#[test]
fn the_default_minimum_of_a_count_window_is_the_whole_window() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(6), Duration::from_secs(60));
    assert_eq!(policy.window().unwrap().min_calls(), 6);
    for mut b in both(policy) {
        feed(&mut *b, &[F; 5], ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Closed);
        b.outcome(S, ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Open);
    }
}

#[test]
fn consecutive_strikes_do_not_trip_a_windowed_breaker() {
    // 51 strikes in a row, but the rate rule never reaches 100 % below its minimum.
    let policy = Policy::failure_rate(100, WindowSize::Calls(51), Duration::from_secs(60)).with_min_calls(51);
    assert_eq!(policy.trip(), 0);
    for mut b in both(policy) {
        feed(&mut *b, &[F; 50], ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Closed);
        b.outcome(F, ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Open);
    }
}

#[test]
fn a_trip_verdict_still_trips_at_once() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(60));
    for mut b in both(policy) {
        b.outcome(S, ms(0));
        b.outcome(Outcome::TRIP, ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Open);
    }
}

#[test]
fn neutrals_are_not_samples() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(60)).with_min_calls(2);
    for mut b in both(policy) {
        feed(&mut *b, &[Outcome::NEUTRAL; 10], ms(0));
        assert_eq!(b.stats(ms(0)), WindowStats::default());
        feed(&mut *b, &[S, Outcome::NEUTRAL, S], ms(0));
        assert_eq!(b.stats(ms(0)).calls, 2);
    }
}

#[test]
fn the_window_is_cleared_on_every_transition() {
    let cooldown = Duration::from_secs(10);
    let policy = Policy::failure_rate(50, WindowSize::Calls(10), cooldown).with_min_calls(4);
    for mut b in both(policy) {
        feed(&mut *b, &[S, S, F], ms(0));
        assert_eq!(b.stats(ms(0)).calls, 3);
        b.reset(ms(0));
        assert_eq!(b.stats(ms(0)), WindowStats::default(), "a reset clears it");
        feed(&mut *b, &[F, F, F, F], ms(0));
        assert_eq!(b.phase(ms(0)), Phase::Open);
        assert_eq!(b.stats(ms(0)), WindowStats::default(), "open: no window");
        // The probe is not a sample; its success closes, and the window starts empty.
        b.outcome(S, secs(10));
        assert_eq!(b.phase(secs(10)), Phase::Closed);
        assert_eq!(b.stats(secs(10)), WindowStats::default());
        // One failure after recovery does not re-trip on the pre-outage failures.
        feed(&mut *b, &[F, S, S], secs(10));
        assert_eq!(b.phase(secs(10)), Phase::Closed);
        assert_eq!(b.stats(secs(10)).failures, 1);
        assert_eq!(b.counters_trips(), 1);
    }
}

#[test]
fn a_time_window_is_cleared_on_every_transition() {
    let policy =
        Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(5)).with_min_calls(2);
    for mut b in both_time(policy) {
        b.outcome(F, secs(1));
        b.outcome(F, secs(2));
        assert_eq!(b.phase(secs(2)), Phase::Open);
        b.outcome(S, secs(7)); // the probe
        assert_eq!(b.phase(secs(7)), Phase::Closed);
        // The failures of seconds 1 and 2 are still within 10 s, but not in the window.
        assert_eq!(b.stats(secs(7)), WindowStats::default());
        b.outcome(F, secs(8));
        assert_eq!(b.phase(secs(8)), Phase::Closed);
    }
}

#[test]
fn slow_calls_count_only_successes_longer_than_the_duration() {
    let policy = Policy::failure_rate(100, WindowSize::Calls(10), Duration::from_secs(60))
        .with_min_calls(10)
        .with_slow_calls(Duration::from_millis(200), 100);
    for mut b in both(policy) {
        b.timed_success(ms(0), Duration::from_millis(201));
        b.timed_success(ms(0), Duration::from_millis(200));
        b.outcome(F, ms(0)); // a failure is a failure, never also slow
        assert_eq!(
            b.stats(ms(0)),
            WindowStats {
                calls: 3,
                failures: 1,
                slow: 1
            }
        );
    }
}

#[test]
fn a_slow_call_rate_trips_with_its_own_reason() {
    let heard = Box::leak(Box::new(Heard::default()));
    let policy = leak(
        Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(60))
            .with_min_calls(4)
            .with_slow_calls(Duration::from_millis(100), 75),
    );
    let b = SharedBreaker::windowed(policy, Windowed::calls(&*heard));
    let clock = ManualClock::new(ms(0));
    for took in [150, 10, 150, 150] {
        let _ = b.call(&clock, || {
            clock.advance(Duration::from_millis(took));
            Ok::<_, V>(())
        });
    }
    assert_eq!(b.phase(clock.now()), Phase::Open);
    assert_eq!(heard.reasons(), vec![Reason::SlowCalls]);
}

#[test]
fn a_failure_rate_trips_with_its_own_reason_and_the_usual_cooldown() {
    let heard = Box::leak(Box::new(Heard::default()));
    let policy = leak(Policy::failure_rate(50, WindowSize::Calls(2), Duration::from_secs(30)));
    let b = SharedBreaker::windowed(policy, Windowed::calls(&*heard));
    let clock = ManualClock::new(ms(0));
    let _ = b.call(&clock, || Err::<(), _>(V(Verdict::Strike)));
    let _ = b.call(&clock, || Ok::<_, V>(()));
    let t = heard.0.borrow()[0];
    assert_eq!(
        (t.from, t.to, t.why, t.cooldown),
        (Phase::Closed, Phase::Open, Reason::FailureRate, Duration::from_secs(30))
    );
}

#[test]
fn a_stale_permit_is_not_a_sample_and_its_window_never_trips() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(60)).with_min_calls(2);
    let mut b = Breaker::windowed(policy, Windowed::calls(()));
    let held = b.try_acquire(ms(0)).unwrap();
    let p = b.try_acquire(ms(0)).unwrap();
    b.record(p, F, ms(0)); // 1 of 1: below the minimum
    b.reset(ms(1)); // the held permit is stale now
    assert!(b.is_stale(&held, ms(2)));
    b.record(held, F, ms(2)); // would make 2 of 2 with the old window
    assert_eq!(b.phase(ms(2)), Phase::Closed);
    assert_eq!(b.window_stats(ms(2)), Some(WindowStats::default()));

    let shared: &'static SharedBreaker<Windowed> =
        Box::leak(Box::new(SharedBreaker::windowed(leak(policy), Windowed::calls(()))));
    let clock = ManualClock::new(ms(0));
    let held = shared.try_acquire(&clock).unwrap();
    shared.try_acquire(&clock).unwrap().failure(Verdict::Strike);
    shared.reset(ms(1));
    held.failure(Verdict::Strike);
    assert_eq!(shared.phase(ms(2)), Phase::Closed);
    assert_eq!(shared.window_stats(ms(2)), Some(WindowStats::default()));
}

#[test]
fn probes_are_not_samples() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(2), Duration::from_secs(1))
        .with_probes_to_close(2)
        .with_min_calls(2);
    for mut b in both(policy) {
        feed(&mut *b, &[F, F], ms(0));
        b.outcome(S, secs(1)); // probe 1
        assert_eq!(b.phase(secs(1)), Phase::HalfOpen);
        b.outcome(S, secs(1)); // probe 2: closes
        assert_eq!(b.phase(secs(1)), Phase::Closed);
        assert_eq!(b.stats(secs(1)).calls, 0);
    }
}

#[test]
fn a_windowed_probe_that_panics_is_counted_as_failed_not_wedged() {
    let policy = leak(Policy::failure_rate(50, WindowSize::Calls(2), Duration::from_secs(1)).with_min_calls(2));
    let b = SharedBreaker::windowed(policy, Windowed::calls(()));
    let clock = ManualClock::new(ms(0));
    for _ in 0..2 {
        let failed = b.call_classified(&clock, || Err::<(), u8>(1), |_| Verdict::Strike);
        assert!(matches!(failed, Err(CallError::Inner(1))));
    }
    assert_eq!(b.phase(ms(0)), Phase::Open);
    clock.set(secs(1));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = b.call_classified(
            &clock,
            || -> Result<(), u8> { panic!("driver bug") },
            |_| Verdict::Strike,
        );
    }));
    assert!(result.is_err());
    assert_eq!(b.phase(secs(1)), Phase::Open);
    assert_eq!((b.counters().probes, b.counters().probe_failures), (1, 1));
}

#[test]
fn a_healthy_count_window_reads_no_clock_and_stays_as_it_is() {
    let reads = Box::leak(Box::new(CountingClock::default()));
    let policy = leak(Policy::failure_rate(50, WindowSize::Calls(8), Duration::from_secs(60)));
    let b = SharedBreaker::windowed(policy, Windowed::calls(()));
    for _ in 0..100 {
        assert!(b.call(&*reads, || Ok::<_, V>(())).is_ok());
    }
    assert_eq!(reads.0.load(Ordering::Relaxed), 0, "a count window needs no time");
    // Full of clean successes: another one leaves the window as it is (the code returns
    // before its compare-and-swap, so nothing is written).
    let before = format!("{:?}", b.observer().window());
    assert!(b.call(&*reads, || Ok::<_, V>(())).is_ok());
    assert_eq!(format!("{:?}", b.observer().window()), before);
    assert_eq!(b.window_stats(Instant::ZERO).map(|s| s.calls), Some(8));
}

#[test]
fn calls_are_timed_only_with_a_slow_call_rule() {
    let count = Policy::failure_rate(50, WindowSize::Calls(8), Duration::from_secs(60));
    let timed = count.with_slow_calls(Duration::from_secs(1), 50);
    let time = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(60));
    let clock = CountingClock::default();
    let reads = |f: &dyn Fn()| {
        clock.0.store(0, Ordering::Relaxed);
        f();
        clock.0.load(Ordering::Relaxed)
    };
    let a = SharedBreaker::windowed(leak(count), Windowed::calls(()));
    let b = SharedBreaker::windowed(leak(timed), Windowed::calls(()));
    let c = SharedBreaker::windowed(leak(time), Windowed::time(()));
    assert_eq!(reads(&|| drop(a.call(&clock, || Ok::<_, V>(())))), 0);
    assert_eq!(reads(&|| drop(b.call(&clock, || Ok::<_, V>(())))), 2, "start and end");
    assert_eq!(
        reads(&|| drop(c.call(&clock, || Ok::<_, V>(())))),
        1,
        "the sample's bucket"
    );
}

#[test]
fn a_clock_that_steps_back_counts_in_the_newest_bucket() {
    let policy =
        Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(60)).with_min_calls(3);
    for mut b in both_time(policy) {
        b.outcome(S, secs(20));
        b.outcome(F, secs(17)); // 3 s back: no time passed
        assert_eq!(b.stats(secs(20)).calls, 2);
        // Both are in second 20's bucket: at 29 s (the window 20 ..= 29) both still count.
        assert_eq!(b.stats(secs(29)).calls, 2);
        // Far back (more than the window): the window starts afresh from there.
        b.outcome(F, secs(5));
        assert_eq!(b.stats(secs(5)).calls, 1);
    }
}

#[test]
fn a_time_window_counts_calls_across_the_clock_wrap_afresh_and_never_panics() {
    let policy =
        Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(1)), Duration::from_secs(60)).with_min_calls(3);
    for mut b in both_time(policy) {
        let near = Instant::from_millis(u32::MAX - 50);
        b.outcome(S, near);
        b.outcome(S, near.wrapping_add(Duration::from_millis(100)));
        let s = b.stats(near.wrapping_add(Duration::from_millis(100)));
        assert!(s.calls <= 2);
        assert_eq!(b.phase(near.wrapping_add(Duration::from_millis(100))), Phase::Closed);
    }
}

#[test]
fn a_windowed_breaker_recovers_through_the_usual_probe_and_backoff() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(2), Duration::from_secs(10))
        .with_backoff(2, Duration::from_secs(60))
        .with_min_calls(2);
    for mut b in both(policy) {
        feed(&mut *b, &[F, F], ms(0));
        b.outcome(F, secs(10)); // the probe fails: re-open with a doubled cooldown
        assert_eq!(b.phase(secs(29)), Phase::Open);
        assert_eq!(b.phase(secs(30)), Phase::Open); // (not closed; the probe is allowed now)
        b.outcome(S, secs(30));
        assert_eq!(b.phase(secs(30)), Phase::Closed);
    }
}

// ---- policies ----------------------------------------------------------------------------

#[test]
fn nonsense_windows_are_rejected() {
    let c = Duration::from_secs(1);
    assert_eq!(
        Policy::try_failure_rate(0, WindowSize::Calls(5), c),
        Err(PolicyError::RateOutOfRange)
    );
    assert_eq!(
        Policy::try_failure_rate(101, WindowSize::Calls(5), c),
        Err(PolicyError::RateOutOfRange)
    );
    assert_eq!(
        Policy::try_failure_rate(50, WindowSize::Calls(0), c),
        Err(PolicyError::WindowOutOfRange)
    );
    assert_eq!(
        Policy::try_failure_rate(50, WindowSize::Calls(1009), c),
        Err(PolicyError::WindowOutOfRange)
    );
    assert!(Policy::try_failure_rate(50, WindowSize::Calls(51), c).is_ok());
    assert!(Policy::try_failure_rate(50, WindowSize::Calls(52), c).is_ok());
    assert!(Policy::try_failure_rate(50, WindowSize::Calls(breaker_core::MAX_RING_CALLS), c).is_ok());
    assert_eq!(
        Policy::try_failure_rate(50, WindowSize::Time(Duration::from_millis(990)), c),
        Err(PolicyError::WindowOutOfRange)
    );
    assert_eq!(
        Policy::try_failure_rate(50, WindowSize::Time(Duration::from_millis(1005)), c),
        Err(PolicyError::WindowOutOfRange)
    );
    assert_eq!(
        Policy::try_failure_rate(50, WindowSize::Calls(5), Duration::ZERO),
        Err(PolicyError::ZeroCooldown)
    );
    let p = Policy::failure_rate(50, WindowSize::Calls(5), c);
    assert_eq!(p.try_with_min_calls(0), Err(PolicyError::MinCallsOutOfRange));
    assert_eq!(p.try_with_min_calls(6), Err(PolicyError::MinCallsOutOfRange));
    assert_eq!(
        p.try_with_slow_calls(Duration::ZERO, 50),
        Err(PolicyError::ZeroSlowCall)
    );
    assert_eq!(p.try_with_slow_calls(c, 0), Err(PolicyError::RateOutOfRange));
    let t = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), c);
    assert_eq!(t.window().unwrap().min_calls(), 10);
    assert!(t.try_with_min_calls(10 * breaker_core::MAX_BUCKET_CALLS).is_ok());
    assert_eq!(
        t.try_with_min_calls(10 * 1023 + 1),
        Err(PolicyError::MinCallsOutOfRange)
    );
    let strikes = Policy::new(3, c);
    assert_eq!(strikes.try_with_min_calls(2), Err(PolicyError::NotWindowed));
    assert_eq!(strikes.try_with_slow_calls(c, 50), Err(PolicyError::NotWindowed));
    assert_eq!(strikes.try_with_slow_failures(true), Err(PolicyError::NotWindowed));
    assert!(strikes.window().is_none());
    // Slow failures need the slow-call rule first.
    assert_eq!(
        p.try_with_slow_failures(true),
        Err(PolicyError::SlowFailuresNeedSlowCalls)
    );
    assert_eq!(
        p.try_with_slow_failures(false)
            .map(|q| q.window().unwrap().slow_failures()),
        Ok(false)
    );
    let timed = p.with_slow_calls(c, 50).with_slow_failures(true);
    assert!(timed.window().unwrap().slow_failures());
    // A later slow-call rule keeps the setting.
    assert!(timed.with_slow_calls(c, 80).window().unwrap().slow_failures());
    assert_eq!(timed.window().unwrap().slow_calls(), Some((c, 50)));
}

#[test]
fn a_windowed_policy_needs_a_windowed_breaker_of_its_kind() {
    let count = Policy::failure_rate(50, WindowSize::Calls(5), Duration::from_secs(1));
    let time = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(1)), Duration::from_secs(1));
    let strikes = Policy::new(3, Duration::from_secs(1));
    let panics = |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err();
    assert!(panics(&|| {
        let _ = Breaker::new(count);
    }));
    assert!(panics(&|| {
        let _ = Breaker::with_observer(count, ());
    }));
    assert!(panics(&|| {
        let _ = SharedBreaker::new(leak(count));
    }));
    assert!(panics(&|| {
        let _ = Breaker::windowed(time, Windowed::calls(()));
    }));
    assert!(panics(&|| {
        let _ = Breaker::windowed(count, Windowed::time(()));
    }));
    assert!(panics(&|| {
        let _ = Breaker::windowed(strikes, Windowed::calls(()));
    }));
    assert!(!panics(&|| {
        let _ = Breaker::windowed(count, Windowed::calls(()));
    }));
    assert!(!panics(&|| {
        let _ = SharedBreaker::windowed(leak(time), Windowed::time(()));
    }));
}

#[test]
fn a_window_beside_a_policy_of_strikes_is_ignored() {
    // `with_observer` takes any observer; a `Windowed` one beside consecutive strikes does
    // nothing, and the breaker trips on strikes as usual.
    let b = SharedBreaker::with_observer(leak(Policy::new(2, Duration::from_secs(1))), Windowed::calls(()));
    let clock = ManualClock::new(ms(0));
    for _ in 0..2 {
        let _ = b.call(&clock, || Err::<(), _>(V(Verdict::Strike)));
    }
    assert_eq!(b.phase(ms(0)), Phase::Open);
    assert_eq!(b.window_stats(ms(0)), None);
}

// ---- helpers -----------------------------------------------------------------------------

#[derive(Default)]
struct Heard(std::cell::RefCell<Vec<Transition>>);

impl Heard {
    fn reasons(&self) -> Vec<Reason> {
        self.0
            .borrow()
            .iter()
            .filter(|t| t.to == Phase::Open)
            .map(|t| t.why)
            .collect()
    }
}

impl Observer for &Heard {
    fn on_transition(&self, t: &Transition) {
        self.0.borrow_mut().push(*t);
    }
}

/// A clock that counts its readings (and always reads zero).
#[derive(Default)]
struct CountingClock(AtomicU32);

impl Clock for CountingClock {
    fn now(&self) -> Instant {
        self.0.fetch_add(1, Ordering::Relaxed);
        Instant::ZERO
    }
}

#[test]
fn a_windowed_policy_known_only_at_run_time_needs_no_static() {
    // Owned and behind an `Arc`: the window lives in the `Windowed` observer, the policy
    // wherever `P` keeps it.
    let policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(30));
    let owned = SharedBreaker::with_policy_and_observer(policy, Windowed::calls(()));
    let shared = SharedBreaker::with_policy_and_observer(std::sync::Arc::new(policy), Windowed::calls(()));
    let clock = ManualClock::new(secs(1));
    for ok in [true, false, true, false] {
        let call = || if ok { Ok(()) } else { Err(Verdict::Strike) };
        let _ = owned.call_classified(&clock, call, |v| *v);
        let _ = shared.call_classified(&clock, call, |v| *v);
    }
    assert_eq!(owned.phase(secs(1)), Phase::Open, "2 failures in 4 calls is 50 %");
    assert_eq!(shared.phase(secs(1)), Phase::Open);
    let time =
        Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(30)).with_min_calls(2);
    let timed = SharedBreaker::with_policy_and_observer(time, Windowed::time(()));
    let _ = timed.call_classified(&clock, || Err::<(), _>(Verdict::Strike), |v| *v);
    let _ = timed.call_classified(&clock, || Err::<(), _>(Verdict::Strike), |v| *v);
    assert_eq!(timed.phase(secs(1)), Phase::Open);
}

#[test]
fn a_policy_without_the_window_it_needs_is_an_error_not_a_panic() {
    let count = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30));
    let time = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(30));
    let strikes = Policy::new(3, Duration::from_secs(30));
    assert_eq!(
        SharedBreaker::try_with_policy(count).err(),
        Some(PolicyError::NeedsWindow)
    );
    assert_eq!(
        SharedBreaker::try_with_policy_and_observer(count, ()).err(),
        Some(PolicyError::NeedsWindow)
    );
    assert_eq!(
        SharedBreaker::try_with_policy_and_observer(count, Windowed::time(())).err(),
        Some(PolicyError::NeedsCountWindow)
    );
    assert_eq!(
        SharedBreaker::try_with_policy_and_observer(time, Windowed::calls(())).err(),
        Some(PolicyError::NeedsTimeWindow)
    );
    assert!(SharedBreaker::try_with_policy_and_observer(time, Windowed::time(())).is_ok());
    assert!(SharedBreaker::try_with_policy(strikes).is_ok());
    // Consecutive strikes beside a window's storage: the window is unused, the breaker
    // trips on the third strike in a row as its policy says.
    let unused = SharedBreaker::try_with_policy_and_observer(strikes, Windowed::calls(())).unwrap();
    let clock = ManualClock::new(secs(1));
    for _ in 0..3 {
        let _ = unused.call_classified(&clock, || Err::<(), _>(Verdict::Strike), |v| *v);
    }
    assert_eq!(unused.phase(secs(1)), Phase::Open);
    assert_eq!(
        PolicyError::NeedsWindow.to_string(),
        "this policy trips on a failure rate over a window: build the breaker with `windowed`"
    );
}

#[test]
#[should_panic(expected = "this policy has a count window (WindowSize::Calls): give the breaker `Windowed::calls(..)`")]
fn the_panicking_constructor_names_the_storage_the_policy_needs() {
    let count = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30));
    let _ = SharedBreaker::with_policy_and_observer(count, Windowed::time(()));
}

#[test]
fn the_single_owner_breaker_takes_a_run_time_policy_of_either_kind() {
    let count = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(30));
    assert_eq!(
        Breaker::try_with_observer(count, ()).err(),
        Some(PolicyError::NeedsWindow)
    );
    assert_eq!(
        Breaker::try_with_observer(count, Windowed::time(())).err(),
        Some(PolicyError::NeedsCountWindow)
    );
    let mut b = Breaker::try_with_observer(count, Windowed::calls(())).unwrap();
    for outcome in [Outcome::Success, Outcome::STRIKE, Outcome::Success, Outcome::STRIKE] {
        let p = b.try_acquire(secs(1)).unwrap();
        b.record(p, outcome, secs(1));
    }
    assert_eq!(b.phase(secs(1)), Phase::Open);
    assert!(Breaker::try_with_observer(Policy::new(3, Duration::from_secs(1)), ()).is_ok());
}

// ---- large count windows, sixty buckets, slow failures -------------------------------------

#[test]
fn a_count_window_beyond_51_calls_needs_a_ring() {
    let big = Policy::failure_rate(50, WindowSize::Calls(1000), Duration::from_secs(1));
    assert_eq!(
        SharedBreaker::try_with_policy_and_observer(big, Windowed::calls(())).err(),
        Some(PolicyError::NeedsCallRing)
    );
    assert_eq!(
        Breaker::try_with_observer(big, Windowed::calls(())).err(),
        Some(PolicyError::NeedsCallRing)
    );
    assert!(SharedBreaker::try_with_policy_and_observer(big, Windowed::ring(())).is_ok());
    // A ring holds small windows too; it is a count window's storage, not a time window's.
    let small = Policy::failure_rate(50, WindowSize::Calls(5), Duration::from_secs(1));
    assert!(SharedBreaker::try_with_policy_and_observer(small, Windowed::ring(())).is_ok());
    let time = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(1));
    assert_eq!(
        SharedBreaker::try_with_policy_and_observer(time, Windowed::ring(())).err(),
        Some(PolicyError::NeedsTimeWindow)
    );
    assert_eq!(
        PolicyError::NeedsCallRing.to_string(),
        "this policy's count window holds more than 51 calls: give the breaker `Windowed::ring(..)`"
    );
}

#[test]
fn a_window_of_1000_calls_trips_on_the_call_that_reaches_the_rate() {
    // resilience4j's shape, ten times its default window: 50 % of the last 1000 calls.
    static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(1000), Duration::from_secs(60));
    static BIG: SharedBreaker<Windowed<breaker_core::CallRing>> = SharedBreaker::windowed(&POLICY, Windowed::ring(()));
    let mut single = Breaker::windowed(POLICY, Windowed::ring(()));
    let clock = ManualClock::new(secs(1));
    let call = |single: &mut Breaker<Windowed<breaker_core::CallRing>>, ok: bool| {
        let p = single.try_acquire(secs(1)).unwrap();
        single.record(p, if ok { S } else { F }, secs(1));
        let _ = BIG.call(&clock, || if ok { Ok(()) } else { Err(V(Verdict::Strike)) });
    };
    // 999 calls, every other one a failure from the second on: below the minimum (1000)
    // whatever the rate.
    for i in 0..999 {
        call(&mut single, i % 2 == 0);
    }
    let held = WindowStats {
        calls: 999,
        failures: 499,
        slow: 0,
    };
    assert_eq!(single.window_stats(secs(1)), Some(held));
    assert_eq!(BIG.window_stats(secs(1)), Some(held));
    // The 1000th, a success: 499 of 1000 failed, 49.9 %.
    call(&mut single, true);
    assert_eq!(BIG.phase(secs(1)), Phase::Closed);
    // A full window slides: the next failure pushes out the oldest call (a success), and
    // makes 500 of 1000.
    call(&mut single, false);
    assert_eq!(single.phase(secs(1)), Phase::Open);
    assert_eq!(BIG.phase(secs(1)), Phase::Open);
    assert_eq!(core::mem::size_of::<breaker_core::CallRing>(), 520);
    assert_eq!(core::mem::size_of::<breaker_core::CallWindow>(), 16);
}

#[test]
fn a_healthy_ring_slides_without_counting_its_old_failures() {
    let policy = Policy::failure_rate(10, WindowSize::Calls(200), Duration::from_secs(60));
    let mut b = Breaker::windowed(policy, Windowed::ring(()));
    let t = secs(1);
    // 19 failures among the first 20 calls, then 1000 successes: the window (the last
    // 200) forgot them after 200 more calls.
    for i in 0..1020 {
        let p = b.try_acquire(t).unwrap();
        b.record(p, if i < 20 && i != 3 { F } else { S }, t);
        if i == 199 {
            assert_eq!(b.window_stats(t).map(|s| (s.calls, s.failures)), Some((200, 19)));
        }
    }
    assert_eq!(b.phase(t), Phase::Closed);
    assert_eq!(b.window_stats(t).map(|s| (s.calls, s.failures)), Some((200, 0)));
}

#[test]
fn a_60_second_window_in_60_buckets_counts_per_second() {
    // resilience4j's time window: one bucket per second, here over a minute.
    static POLICY: Policy =
        Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(60)), Duration::from_secs(30))
            .with_min_calls(100);
    static MINUTE: SharedBreaker<Windowed<TimeWindow<60>>> =
        SharedBreaker::windowed(&POLICY, Windowed::time_buckets(()));
    let mut single: Breaker<Windowed<TimeWindow<60>>> = Breaker::windowed(POLICY, Windowed::time_buckets(()));
    let clock = ManualClock::new(Instant::ZERO);
    // Two calls in each second 0 ..= 59, the second of each pair a failure from second 30 on.
    for s in 0..60u32 {
        for k in 0..2 {
            clock.set(secs(s).wrapping_add(Duration::from_millis(100 * k)));
            let fail = s >= 30 && k == 1;
            let p = single.try_acquire(clock.now()).unwrap();
            single.record(p, if fail { F } else { S }, clock.now());
            let _ = MINUTE.call(&clock, || if fail { Err(V(Verdict::Strike)) } else { Ok(()) });
        }
    }
    let at = |s: u32, ms: u32| secs(s).wrapping_add(Duration::from_millis(ms));
    let full = WindowStats {
        calls: 120,
        failures: 30,
        slow: 0,
    };
    assert_eq!(MINUTE.window_stats(at(59, 999)), Some(full));
    assert_eq!(single.window_stats(at(59, 999)), Some(full));
    // Each second, one bucket (1 s wide, not ten seconds' worth) leaves the window.
    assert_eq!(MINUTE.window_stats(secs(60)).map(|s| s.calls), Some(118));
    assert_eq!(MINUTE.window_stats(secs(61)).map(|s| s.calls), Some(116));
    // At 89 s the window is seconds 30 ..= 89: the failing half minute.
    assert_eq!(
        MINUTE.window_stats(secs(89)).map(|s| (s.calls, s.failures)),
        Some((60, 30))
    );
    assert_eq!(
        single.window_stats(secs(89)).map(|s| (s.calls, s.failures)),
        Some((60, 30))
    );
    assert_eq!(
        MINUTE.window_stats(secs(118)).map(|s| (s.calls, s.failures)),
        Some((2, 1))
    );
    assert_eq!(MINUTE.window_stats(secs(119)).map(|s| s.calls), Some(0));
    // At 89 s: 30 of 60 failed, but 60 calls are below the minimum of 100; 39 failures more
    // make 99 calls, the 40th 100 calls of which 70 failed: it trips.
    clock.set(secs(89));
    for _ in 0..39 {
        let _ = MINUTE.call(&clock, || Err::<(), _>(V(Verdict::Strike)));
    }
    assert_eq!(MINUTE.phase(secs(89)), Phase::Closed);
    let _ = MINUTE.call(&clock, || Err::<(), _>(V(Verdict::Strike)));
    assert_eq!(MINUTE.phase(secs(89)), Phase::Open);
    assert_eq!(core::mem::size_of::<TimeWindow<60>>(), 480);
    assert_eq!(core::mem::size_of::<TimeWindow>(), 80);
}

#[test]
fn a_time_window_needs_whole_ms_per_bucket_and_room_for_min_calls() {
    let c = Duration::from_secs(1);
    // 1 s in 60 buckets: 16.67 ms each, refused; 1.2 s: 20 ms each.
    let odd = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(1)), c);
    assert_eq!(
        SharedBreaker::try_with_policy_and_observer(odd, Windowed::<TimeWindow<60>>::time_buckets(())).err(),
        Some(PolicyError::BucketsOutOfRange)
    );
    let fine = Policy::failure_rate(50, WindowSize::Time(Duration::from_millis(1200)), c);
    assert!(SharedBreaker::try_with_policy_and_observer(fine, Windowed::<TimeWindow<60>>::time_buckets(())).is_ok());
    // Two buckets count at most 2 x 1023 calls: a minimum of 3000 would never be reached.
    let many = fine.with_min_calls(3000);
    assert_eq!(
        Breaker::try_with_observer(many, Windowed::<TimeWindow<2>>::time_buckets(())).err(),
        Some(PolicyError::BucketsOutOfRange)
    );
    assert!(Breaker::try_with_observer(many, Windowed::<TimeWindow<3>>::time_buckets(())).is_ok());
    // The edge: 2 x 1023 is reachable, one more is not.
    let two = |min| Breaker::try_with_observer(fine.with_min_calls(min), Windowed::<TimeWindow<2>>::time_buckets(()));
    assert!(two(2 * 1023).is_ok());
    assert_eq!(two(2 * 1023 + 1).err(), Some(PolicyError::BucketsOutOfRange));
}

#[test]
fn slow_failures_count_in_the_slow_call_rate_only_when_asked() {
    // 10 calls: 4 slow failures (3 s), 2 fast failures, 3 slow successes, 1 fast success.
    let calls: [(bool, u32); 10] = [
        (false, 3000),
        (true, 3000),
        (false, 10),
        (false, 3000),
        (true, 3000),
        (true, 10),
        (false, 3000),
        (false, 10),
        (true, 3000),
        (false, 3000),
    ];
    let base = Policy::failure_rate(100, WindowSize::Calls(10), Duration::from_secs(60))
        .with_slow_calls(Duration::from_secs(2), 70);
    let run = |policy: Policy| {
        let mut single = Breaker::windowed(policy, Windowed::calls(()));
        let shared = SharedBreaker::windowed(leak(policy), Windowed::ring(()));
        let clock = ManualClock::new(secs(1));
        for (ok, took) in calls {
            let start = clock.now();
            let p = single.try_acquire(start).unwrap();
            let outcome = if ok { S } else { F };
            single.record_timed(p, outcome, start, start.wrapping_add(Duration::from_millis(took)));
            let _ = shared.call(&clock, || {
                clock.advance(Duration::from_millis(took));
                if ok {
                    Ok(())
                } else {
                    Err(V(Verdict::Strike))
                }
            });
            clock.set(start);
        }
        let (a, b) = (single.window_stats(secs(1)), shared.window_stats(secs(1)));
        assert_eq!(a, b);
        (a.unwrap(), single.phase(secs(1)), shared.phase(secs(1)))
    };
    // The default: a failure is a failure however long it took. 3 slow of 10: 30 %.
    let (stats, ..) = run(base);
    assert_eq!(
        stats,
        WindowStats {
            calls: 10,
            failures: 6,
            slow: 3
        }
    );
    // resilience4j's way: the 4 slow failures are slow calls too, 7 of 10: 70 %, which
    // trips on the tenth call (at the ninth, 6 of 9 is 66.7 %).
    let counted = base.with_slow_failures(true);
    let (stats, single, shared) = run(counted);
    assert_eq!((single, shared), (Phase::Open, Phase::Open));
    assert_eq!(stats, WindowStats::default()); // cleared by the trip
    let (stats, ..) = run(counted.with_slow_calls(Duration::from_secs(2), 71));
    assert_eq!(
        stats,
        WindowStats {
            calls: 10,
            failures: 6,
            slow: 7
        }
    );
    // A time window counts them the same way.
    let timed = Policy::failure_rate(100, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(60))
        .with_min_calls(10)
        .with_slow_calls(Duration::from_secs(2), 71)
        .with_slow_failures(true);
    let mut b = Breaker::windowed(timed, Windowed::time(()));
    for (ok, took) in calls {
        let p = b.try_acquire(secs(1)).unwrap();
        b.record_timed(
            p,
            if ok { S } else { F },
            secs(1),
            secs(1).wrapping_add(Duration::from_millis(took)),
        );
    }
    assert_eq!(
        b.window_stats(secs(1)),
        Some(WindowStats {
            calls: 10,
            failures: 6,
            slow: 7
        })
    );
}

#[test]
fn a_snapshot_keeps_a_slow_failure_as_a_failure() {
    let policy = Policy::failure_rate(100, WindowSize::Calls(10), Duration::from_secs(60))
        .with_slow_calls(Duration::from_secs(2), 100)
        .with_slow_failures(true);
    let mut b = Breaker::windowed(policy, Windowed::calls(()));
    for ok in [false, true] {
        let p = b.try_acquire(secs(1)).unwrap();
        b.record_timed(p, if ok { S } else { F }, secs(1), secs(4));
    }
    assert_eq!(
        b.window_stats(secs(4)).map(|s| (s.calls, s.failures, s.slow)),
        Some((2, 1, 2))
    );
    let snapshot = b.snapshot(secs(4));
    assert_eq!(
        snapshot.window,
        breaker_core::WindowSnapshot::Calls {
            len: 2,
            failures: 0b10,
            slow: 0b01
        }
    );
    let mut back = Breaker::windowed(policy, Windowed::calls(()));
    back.restore(&snapshot, secs(0));
    assert_eq!(
        back.window_stats(secs(0)).map(|s| (s.calls, s.failures, s.slow)),
        Some((2, 1, 1))
    );
}

#[test]
fn a_windowed_observer_passes_quotas_on_and_debugs_as_its_window_and_observer() {
    use breaker_core::{Quota, QuotaObserver};

    #[derive(Debug, Default)]
    struct Quotas(std::cell::Cell<u32>);
    impl Observer for Quotas {
        fn on_transition(&self, _: &Transition) {}
    }
    impl QuotaObserver for Quotas {
        fn on_quota(&self, quota: &Quota) {
            self.0.set(quota.remaining);
        }
    }
    let windowed = Windowed::calls(Quotas::default());
    windowed.on_quota(&Quota::new(7, 10));
    assert_eq!(windowed.observer().0.get(), 7);
    let text = format!("{windowed:?}");
    let window = format!("{:?}", windowed.window());
    assert_eq!(
        text,
        format!("Windowed {{ window: {window}, observer: Quotas(Cell {{ value: 7 }}) }}")
    );
}

#[test]
fn a_restored_window_counts_a_sample_both_failed_and_slow_as_a_failure_only() {
    let policy = Policy::failure_rate(100, WindowSize::Calls(10), Duration::from_secs(60))
        .with_slow_calls(Duration::from_secs(2), 100);
    let b = Breaker::windowed(policy, Windowed::calls(()));
    let mut snapshot = b.snapshot(secs(0));
    // Three samples: the newest failed and slow, the next failed, the oldest slow.
    snapshot.window = breaker_core::WindowSnapshot::Calls {
        len: 3,
        failures: 0b011,
        slow: 0b101,
    };
    let mut back = Breaker::windowed(policy, Windowed::calls(()));
    back.restore(&snapshot, secs(0));
    assert_eq!(
        back.window_stats(secs(0)).map(|s| (s.calls, s.failures, s.slow)),
        Some((3, 2, 1))
    );
}

#[test]
fn only_a_closed_breaker_s_window_is_saved() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(60)).with_min_calls(2);
    let mut b = Breaker::windowed(policy, Windowed::calls(()));
    let p = b.try_acquire(secs(0)).unwrap();
    b.record(p, Outcome::STRIKE, secs(0));
    assert_ne!(b.snapshot(secs(0)).window, breaker_core::WindowSnapshot::None);
    let p = b.try_acquire(secs(0)).unwrap();
    b.record(p, Outcome::STRIKE, secs(0));
    assert_eq!(b.phase(secs(0)), Phase::Open);
    // Open: the window that opened it is done with (a recovery starts a new one).
    assert_eq!(b.snapshot(secs(0)).window, breaker_core::WindowSnapshot::None);
}

#[test]
fn a_ring_debugs_its_figures() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(100), Duration::from_secs(60)).with_min_calls(10);
    let mut b = Breaker::windowed(policy, Windowed::ring(()));
    for outcome in [Outcome::STRIKE, Outcome::Success, Outcome::Success] {
        let p = b.try_acquire(secs(0)).unwrap();
        b.record(p, outcome, secs(0));
    }
    let text = format!("{:?}", b.observer().window());
    assert!(text.starts_with("CallRing { gen: "), "{text}");
    assert!(text.ends_with(", calls: 3, failures: 1, slow: 0 }"), "{text}");
}

#[test]
fn a_ring_counts_right_after_its_positions_wrap() {
    // The ring numbers positions modulo 2^19: 600,000 calls go round once, and the window
    // still holds exactly the last 100 (one failure in seven).
    let policy = Policy::failure_rate(50, WindowSize::Calls(100), Duration::from_secs(60)).with_min_calls(100);
    let mut b = Breaker::windowed(policy, Windowed::ring(()));
    let calls = 600_000u32;
    for i in 0..calls {
        let p = b.try_acquire(secs(0)).unwrap();
        b.record(p, if i % 7 == 0 { Outcome::STRIKE } else { Outcome::Success }, secs(0));
    }
    let failures = (calls - 100..calls).filter(|i| i % 7 == 0).count() as u32;
    assert_eq!(
        b.window_stats(secs(0)).map(|s| (s.calls, s.failures)),
        Some((100, failures))
    );
    assert_eq!(b.phase(secs(0)), Phase::Closed);
}

#[test]
fn slow_failures_can_be_turned_off_again_and_the_slow_rate_keeps_the_flag() {
    let slow = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(60))
        .with_slow_calls(Duration::from_secs(1), 40);
    let on = slow.with_slow_failures(true);
    let rule = on.window().unwrap();
    assert!(rule.slow_failures());
    assert!(
        on.with_slow_failures(true).window().unwrap().slow_failures(),
        "set twice"
    );
    let again = on.with_slow_calls(Duration::from_secs(2), 30).window().unwrap();
    assert!(again.slow_failures(), "a slow-call rule set after keeps the flag");
    let off = on.with_slow_failures(false).window().unwrap();
    assert!(!off.slow_failures());
    assert!(!slow.with_slow_failures(false).window().unwrap().slow_failures());
    // The rule itself is untouched by the flag.
    assert_eq!(off.slow_calls(), rule.slow_calls());
    assert_eq!(
        format!("{rule:?}"),
        format!(
            "Window {{ size: Calls(10), failure_rate: 50, min_calls: {}, slow_calls: {:?}, slow_failures: true }}",
            rule.min_calls(),
            rule.slow_calls()
        )
    );
}

#[test]
fn a_time_window_debugs_as_its_buckets() {
    let policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(60));
    let mut b = Breaker::windowed(policy, Windowed::time(()));
    let p = b.try_acquire(secs(0)).unwrap();
    b.record(p, Outcome::STRIKE, secs(0));
    let text = format!("{:?}", b.observer().window());
    assert!(text.starts_with('[') && text.ends_with(']'), "{text}");
    assert!(text.contains(", 1, 1, 0)"), "one bucket of one failed call: {text}");
}

#[test]
fn a_time_bucket_full_at_1023_calls_halves_its_counts_and_goes_on() {
    // Six buckets of 10 s; every call in the first one. 1,023 calls (101 failed, 61 slow),
    // then one more: the bucket keeps half of each count (calls rounded up) and adds it.
    let policy = Policy::failure_rate(100, WindowSize::Time(Duration::from_secs(60)), Duration::from_secs(60))
        .with_min_calls(2_000)
        .with_slow_calls(Duration::from_secs(1), 100);
    let mut b = Breaker::windowed(policy, Windowed::time(()));
    for i in 0..1_023u32 {
        let p = b.try_acquire(secs(3)).unwrap();
        let outcome = if i < 101 { Outcome::STRIKE } else { Outcome::Success };
        let started = if (101..162).contains(&i) { secs(1) } else { secs(3) };
        b.record_timed(p, outcome, started, secs(3));
    }
    let stats = |b: &Breaker<Windowed<TimeWindow>>| b.window_stats(secs(3)).map(|s| (s.calls, s.failures, s.slow));
    assert_eq!(stats(&b), Some((1_023, 101, 61)));
    let p = b.try_acquire(secs(3)).unwrap();
    b.record_timed(p, Outcome::Success, secs(3), secs(3));
    assert_eq!(stats(&b), Some((512 + 1, 50, 30)));
}
