//! The retry ladder in front of a breaker: attempt counts, what ends a ladder (a refusal,
//! a trip verdict, a neutral outcome, a breaker left open, the retries, the budget), the
//! delays' bounds for every jitter and seed, the budget never exceeded, both breakers as
//! gates, and cancellation of the async ladder mid-sleep and mid-attempt.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use breaker_core::{
    Breaker, CallError, Classify, Clock, Duration, Instant, Jitter, ManualClock, Phase, Policy, Refusal, RefusalReason,
    Retried, RetryPolicy, SharedBreaker, State, Stop, Verdict,
};
use proptest::prelude::*;

const fn ms(n: u32) -> Duration {
    Duration::from_millis(n)
}

/// What an attempt answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Ok,
    Nack,
    Revoked,
    RetryAfter(u32),
    BadRequest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinkError {
    Nack,
    Revoked,
    RetryAfter(u32),
    BadRequest,
}

impl Classify for LinkError {
    fn verdict(&self) -> Verdict {
        match self {
            LinkError::Nack => Verdict::Strike,
            LinkError::Revoked => Verdict::Trip,
            LinkError::RetryAfter(s) => Verdict::TripFor(Duration::from_secs(*s)),
            LinkError::BadRequest => Verdict::Neutral,
        }
    }
}

fn answer(a: Answer) -> Result<u32, LinkError> {
    match a {
        Answer::Ok => Ok(7),
        Answer::Nack => Err(LinkError::Nack),
        Answer::Revoked => Err(LinkError::Revoked),
        Answer::RetryAfter(s) => Err(LinkError::RetryAfter(s)),
        Answer::BadRequest => Err(LinkError::BadRequest),
    }
}

/// Runs a blocking ladder whose attempts answer `script` in turn (then `Ok`), each taking
/// `attempt_ms` of the manual clock; sleeping moves the clock. Returns the result and the
/// sleeps.
fn climb(
    policy: &RetryPolicy,
    breaker: &SharedBreaker,
    clock: &ManualClock,
    attempt_ms: u32,
    script: &[Answer],
) -> (Retried<u32, LinkError>, Vec<Duration>) {
    let sleeps = RefCell::new(Vec::new());
    let next = Cell::new(0);
    let retried = policy
        .ladder(breaker, clock)
        .seed(1)
        .sleep(|d| {
            sleeps.borrow_mut().push(d);
            clock.advance(d);
        })
        .call(|| {
            let a = script.get(next.get()).copied().unwrap_or(Answer::Ok);
            next.set(next.get() + 1);
            clock.advance(ms(attempt_ms));
            answer(a)
        });
    (retried, sleeps.into_inner())
}

fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

fn breaker(trip: u32, cooldown_ms: u32) -> SharedBreaker {
    SharedBreaker::new(leak(Policy::new(trip, ms(cooldown_ms))))
}

static RETRY3: RetryPolicy = RetryPolicy::new(3, ms(100));

#[test]
fn attempt_counts_are_exact() {
    let b = breaker(10, 1000);
    let clock = ManualClock::new(Instant::ZERO);
    let (r, sleeps) = climb(&RETRY3, &b, &clock, 0, &[Answer::Ok]);
    assert_eq!((r.result, r.attempts, r.stop), (Ok(7), 1, Stop::Succeeded));
    assert!(sleeps.is_empty());

    let (r, sleeps) = climb(&RETRY3, &b, &clock, 0, &[Answer::Nack, Answer::Nack]);
    assert_eq!((r.result, r.attempts, r.stop), (Ok(7), 3, Stop::Succeeded));
    assert_eq!(sleeps, [ms(100), ms(200)]);

    let (r, sleeps) = climb(&RETRY3, &b, &clock, 0, &[Answer::Nack; 4]);
    assert_eq!(
        (r.result, r.attempts, r.stop),
        (Err(CallError::Inner(LinkError::Nack)), 4, Stop::Exhausted)
    );
    assert_eq!(sleeps, [ms(100), ms(200), ms(400)]);
    assert_eq!(r.retry_in(), None);
}

#[test]
fn no_retry_after_a_refusal() {
    let b = breaker(1, 30_000);
    let clock = ManualClock::new(Instant::ZERO);
    b.trip(breaker_core::Reason::Predicted, clock.now());
    clock.advance(ms(10_000));
    let (r, sleeps) = climb(&RETRY3, &b, &clock, 0, &[]);
    assert_eq!(r.attempts, 0, "nothing was sent");
    assert_eq!(r.stop, Stop::Refused);
    assert!(sleeps.is_empty(), "no sleeping against an open breaker");
    match r.result {
        Err(CallError::Refused(refused)) => {
            assert_eq!(refused.reason, RefusalReason::Open);
            assert_eq!(refused.retry_in, Some(ms(20_000)));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.retry_in(), Some(ms(20_000)));
    assert_eq!(clock.now(), Instant::from_millis(10_000));
}

#[test]
fn no_retry_after_a_trip_verdict_or_a_neutral_outcome() {
    for (script, verdict) in [
        (Answer::Revoked, Verdict::Trip),
        (Answer::BadRequest, Verdict::Neutral),
        (Answer::RetryAfter(1), Verdict::TripFor(Duration::from_secs(1))),
    ] {
        let b = breaker(3, 500);
        let clock = ManualClock::new(Instant::ZERO);
        let (r, sleeps) = climb(&RETRY3, &b, &clock, 5, &[Answer::Nack, script]);
        assert_eq!(r.attempts, 2, "{script:?}");
        assert_eq!(r.stop, Stop::NotRetryable(verdict));
        assert!(matches!(r.result, Err(CallError::Inner(_))));
        assert_eq!(sleeps, [ms(100)], "only the strike was retried");
    }
}

#[test]
fn a_trip_for_hold_longer_than_the_remaining_budget_is_not_waited_out() {
    static BUDGETED: RetryPolicy = RetryPolicy::new(5, ms(100)).with_budget(ms(2_000));
    let b = breaker(3, 500);
    let clock = ManualClock::new(Instant::ZERO);
    let (r, sleeps) = climb(&BUDGETED, &b, &clock, 10, &[Answer::Nack, Answer::RetryAfter(60)]);
    assert_eq!(r.stop, Stop::NotRetryable(Verdict::TripFor(Duration::from_secs(60))));
    assert_eq!(sleeps, [ms(100)]);
    assert_eq!(
        clock.now(),
        Instant::from_millis(120),
        "returned at once, the hold not slept"
    );
    assert_eq!(
        b.state(clock.now()),
        State::Open {
            remaining: ms(60_000),
            forced: false
        }
    );
}

#[test]
fn a_strike_that_trips_the_breaker_ends_the_ladder_without_sleeping() {
    let b = breaker(2, 30_000);
    let clock = ManualClock::new(Instant::ZERO);
    let (r, sleeps) = climb(&RETRY3, &b, &clock, 0, &[Answer::Nack; 4]);
    assert_eq!(r.attempts, 2);
    assert_eq!(
        r.stop,
        Stop::Opened {
            retry_in: Some(ms(30_000))
        }
    );
    assert_eq!(
        r.result,
        Err(CallError::Inner(LinkError::Nack)),
        "the real error is returned"
    );
    assert_eq!(sleeps, [ms(100)]);
    assert_eq!(r.retry_in(), Some(ms(30_000)));
    // Stopped on an open breaker: a refusal by the one question every error answers,
    // though the last strike is in `result`.
    assert!(Refusal::is_refused(&r));
    assert_eq!(Refusal::retry_in(&r), Some(ms(30_000)));
    // The pure oracle was read, the gate never asked again: no skip was counted.
    assert_eq!(b.counters().skips, 0);
}

#[test]
fn a_cooldown_no_longer_than_the_next_delay_makes_the_next_attempt_the_probe() {
    // Strike, strike (trips; a cooldown of 150 ms, or exactly the 200 ms delay, is over
    // when the sleep is), then the probe succeeds.
    for cooldown in [150, 200] {
        let b = breaker(2, cooldown);
        let clock = ManualClock::new(Instant::ZERO);
        let (r, sleeps) = climb(&RETRY3, &b, &clock, 0, &[Answer::Nack, Answer::Nack]);
        assert_eq!(
            (r.result, r.attempts, r.stop),
            (Ok(7), 3, Stop::Succeeded),
            "{cooldown} ms"
        );
        assert_eq!(sleeps, [ms(100), ms(200)]);
        assert_eq!(b.counters().probes, 1);
        assert_eq!(b.phase(clock.now()), Phase::Closed);
    }
}

#[test]
fn every_jitter_and_policy_error_has_its_text() {
    assert_eq!(
        [Jitter::None, Jitter::Full, Jitter::Equal, Jitter::Decorrelated].map(Jitter::name),
        ["none", "full", "equal", "decorrelated"]
    );
    for (error, text) in [
        (RetryPolicy::try_new(256, ms(1)), "retries must be at most 255"),
        (RetryPolicy::try_new(1, ms(0)), "retry delay must be longer than zero"),
        (
            RETRY3.try_with_multiplier(0),
            "retry multiplier must be between 1 and 255",
        ),
        (
            RETRY3.try_with_max_delay(ms(99)),
            "max retry delay must not be shorter than the retry delay",
        ),
        (RETRY3.try_with_budget(ms(0)), "retry budget must be longer than zero"),
    ] {
        let error = error.unwrap_err();
        assert_eq!((error.message(), error.to_string()), (text, text.to_string()));
    }
}

#[test]
fn a_forced_open_breaker_ends_the_ladder() {
    let b = breaker(3, 100);
    let clock = ManualClock::new(Instant::ZERO);
    let mut calls = 0;
    let r = RETRY3.ladder(&b, &clock).sleep(|d| clock.advance(d)).call(|| {
        calls += 1;
        b.force_open(clock.now());
        Err::<u32, _>(LinkError::Nack)
    });
    assert_eq!((calls, r.attempts, r.stop), (1, 1, Stop::Opened { retry_in: None }));
}

#[test]
fn the_budget_shortens_the_last_sleep_and_counts_the_attempts() {
    static BUDGETED: RetryPolicy = RetryPolicy::new(10, ms(100)).with_budget(ms(1_000));
    let b = breaker(50, 1000);
    let clock = ManualClock::new(Instant::ZERO);
    // Attempts take 50 ms: 0-50, sleep 100, 150-200, sleep 200, 400-450, sleep 400,
    // 850-900, sleep shortened to 100 (the budget ends at 1000), 1000-1050, then nothing left.
    let (r, sleeps) = climb(&BUDGETED, &b, &clock, 50, &[Answer::Nack; 20]);
    assert_eq!(sleeps, [ms(100), ms(200), ms(400), ms(100)]);
    assert_eq!((r.attempts, r.stop), (5, Stop::BudgetSpent));
    assert_eq!(clock.now(), Instant::from_millis(1_050));
}

#[test]
fn notify_sees_each_strike_and_delay_and_classify_overrides_the_verdict() {
    let b = breaker(10, 1000);
    let clock = ManualClock::new(Instant::ZERO);
    let mut told = Vec::new();
    let mut n = 0;
    let r = RETRY3
        .ladder(&b, &clock)
        .sleep(|d| clock.advance(d))
        .classify(|e: &LinkError| {
            if *e == LinkError::BadRequest {
                Verdict::Strike
            } else {
                e.verdict()
            }
        })
        .notify(|e: &LinkError, d| told.push((*e, d)))
        .call(|| {
            n += 1;
            if n < 3 {
                Err(LinkError::BadRequest)
            } else {
                Ok(n)
            }
        });
    assert_eq!((r.result, r.attempts), (Ok(3), 3));
    assert_eq!(
        told,
        [(LinkError::BadRequest, ms(100)), (LinkError::BadRequest, ms(200))]
    );
}

#[test]
fn a_single_owner_breaker_is_a_gate_too() {
    let mut b = Breaker::new(Policy::new(2, ms(30_000)));
    let clock = ManualClock::new(Instant::ZERO);
    let r = RETRY3
        .ladder(&mut b, &clock)
        .sleep(|d| clock.advance(d))
        .call(|| Err::<u32, _>(LinkError::Nack));
    assert_eq!(
        (r.attempts, r.stop),
        (
            2,
            Stop::Opened {
                retry_in: Some(ms(30_000))
            }
        )
    );
    let c = b.counters();
    assert_eq!((c.calls, c.failures, c.trips), (2, 2, 1));
    let r = RETRY3.ladder(&mut b, &clock).call(|| Ok::<u32, LinkError>(1));
    assert_eq!((r.attempts, r.stop), (0, Stop::Refused));
}

#[test]
fn the_default_seed_differs_from_ladder_to_ladder() {
    static JITTERED: RetryPolicy = RetryPolicy::new(1, ms(1_000_000)).with_jitter(Jitter::Full);
    let b = breaker(100, 1000);
    let clock = ManualClock::new(Instant::ZERO);
    let draws: Vec<Duration> = (0..8)
        .map(|_| {
            let mut slept = Duration::ZERO;
            let _ = JITTERED
                .ladder(&b, &clock)
                .sleep(|d| slept = d)
                .call(|| Err::<(), _>(LinkError::Nack));
            slept
        })
        .collect();
    let mut distinct = draws.clone();
    distinct.sort();
    distinct.dedup();
    assert!(
        distinct.len() >= 7,
        "callers failing at the same instant drew {draws:?}"
    );
}

// ---- the async ladder and cancellation --------------------------------------------------

/// A sleep on the manual clock that stays pending until the clock reaches its deadline.
struct ClockSleep<'c> {
    clock: &'c ManualClock,
    until: Instant,
}

impl Future for ClockSleep<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.clock.now().since(self.until) > Duration::ZERO || self.clock.now() == self.until {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// An attempt that stays pending until `release` is set.
struct Hang<'a>(&'a Cell<bool>);

impl Future for Hang<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.get() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn the_async_ladder_retries_on_its_sleep_function() {
    let b = breaker(10, 1000);
    let clock = ManualClock::new(Instant::ZERO);
    let n = Cell::new(0);
    let fut = RETRY3
        .ladder(&b, &clock)
        .sleep(|d| ClockSleep {
            clock: &clock,
            until: clock.now().wrapping_add(d),
        })
        .call_async(async || {
            n.set(n.get() + 1);
            if n.get() < 3 {
                Err(LinkError::Nack)
            } else {
                Ok(n.get())
            }
        });
    let mut fut = pin!(fut);
    assert!(poll_once(fut.as_mut()).is_pending(), "asleep after the first strike");
    clock.advance(ms(100));
    assert!(poll_once(fut.as_mut()).is_pending(), "asleep after the second");
    clock.advance(ms(199));
    assert!(poll_once(fut.as_mut()).is_pending(), "never woken early");
    clock.advance(ms(1));
    match poll_once(fut.as_mut()) {
        Poll::Ready(r) => assert_eq!((r.result, r.attempts), (Ok(3), 3)),
        Poll::Pending => panic!("should be done"),
    }
}

#[test]
fn dropping_the_async_ladder_mid_sleep_leaves_the_breaker_as_the_last_attempt_did() {
    let b = breaker(3, 1000);
    let clock = ManualClock::new(Instant::ZERO);
    {
        let fut = RETRY3
            .ladder(&b, &clock)
            .sleep(|d| ClockSleep {
                clock: &clock,
                until: clock.now().wrapping_add(d),
            })
            .call_async(async || Err::<u32, _>(LinkError::Nack));
        let mut fut = pin!(fut);
        assert!(poll_once(fut.as_mut()).is_pending());
    }
    assert_eq!(b.state(clock.now()), State::Closed { strikes: 1 });
    assert_eq!(b.counters().failures, 1);
}

#[test]
fn dropping_the_async_ladder_mid_probe_counts_the_probe_as_failed() {
    let b = breaker(1, 1000);
    let clock = ManualClock::new(Instant::ZERO);
    b.trip(breaker_core::Reason::Predicted, clock.now());
    clock.advance(ms(1000));
    let release = Cell::new(false);
    {
        let fut = RETRY3
            .ladder(&b, &clock)
            .sleep(|d| ClockSleep {
                clock: &clock,
                until: clock.now().wrapping_add(d),
            })
            .call_async(async || {
                Hang(&release).await;
                Ok::<u32, LinkError>(1)
            });
        let mut fut = pin!(fut);
        assert!(poll_once(fut.as_mut()).is_pending());
        assert_eq!(
            b.state(clock.now()),
            State::HalfOpen {
                probing: true,
                streak: 0
            }
        );
    }
    assert_eq!(
        b.phase(clock.now()),
        Phase::Open,
        "a dropped probe counts as failed, at once"
    );
    assert_eq!(b.counters().probes, 1);
}

#[test]
fn dropping_an_owned_breakers_ladder_mid_probe_counts_the_probe_as_failed_too() {
    let mut b = Breaker::new(Policy::new(1, ms(1000)));
    let clock = ManualClock::new(Instant::ZERO);
    b.trip(breaker_core::Reason::Predicted, clock.now());
    clock.advance(ms(1000));
    let release = Cell::new(false);
    {
        let fut = RETRY3
            .ladder(&mut b, &clock)
            .sleep(|d| ClockSleep {
                clock: &clock,
                until: clock.now().wrapping_add(d),
            })
            .call_async(async || {
                Hang(&release).await;
                Ok::<u32, LinkError>(1)
            });
        let mut fut = pin!(fut);
        assert!(poll_once(fut.as_mut()).is_pending());
    }
    assert_eq!(b.phase(clock.now()), Phase::Open);
    // And a dropped ordinary attempt is neutral.
    b.reset(clock.now());
    {
        let fut = RETRY3
            .ladder(&mut b, &clock)
            .sleep(|d| ClockSleep {
                clock: &clock,
                until: clock.now().wrapping_add(d),
            })
            .call_async(async || {
                Hang(&release).await;
                Ok::<u32, LinkError>(1)
            });
        let mut fut = pin!(fut);
        assert!(poll_once(fut.as_mut()).is_pending());
    }
    assert_eq!(b.state(clock.now()), State::Closed { strikes: 0 });
    assert_eq!(b.counters().neutrals, 1);
}

// ---- properties ------------------------------------------------------------------------

fn jitter() -> impl Strategy<Value = Jitter> {
    prop_oneof![
        Just(Jitter::None),
        Just(Jitter::Full),
        Just(Jitter::Equal),
        Just(Jitter::Decorrelated)
    ]
}

fn retry_policy() -> impl Strategy<Value = RetryPolicy> {
    (
        0u32..=20,
        1u32..=5_000,
        1u32..=5,
        0u32..=100_000,
        jitter(),
        prop::option::of(1u32..=200_000),
    )
        .prop_map(|(retries, delay, multiplier, extra_cap, jitter, budget)| {
            let p = RetryPolicy::new(retries, ms(delay))
                .with_multiplier(multiplier)
                .with_max_delay(ms(delay + extra_cap))
                .with_jitter(jitter);
            match budget {
                Some(b) => p.with_budget(ms(b)),
                None => p,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn delays_stay_within_their_bounds_for_every_jitter_and_seed(policy in retry_policy(), seed: u64) {
        let delays: Vec<u32> = policy.delays(seed).map(Duration::as_millis).collect();
        prop_assert_eq!(&delays, &policy.delays(seed).map(Duration::as_millis).collect::<Vec<_>>());
        prop_assert!(delays.len() <= policy.retries() as usize);
        if policy.budget().is_none() {
            prop_assert_eq!(delays.len(), policy.retries() as usize);
        }
        let (base, cap, m) = (u64::from(policy.delay().as_millis()), u64::from(policy.max_delay().as_millis()), u64::from(policy.multiplier()));
        let mut ceiling = base;
        let mut previous = base;
        let mut total = 0u64;
        for (n, &d) in delays.iter().enumerate() {
            let d = u64::from(d);
            total += d;
            // The budget may shorten the last delay, never lengthen one.
            let last_trimmed = policy.budget().is_some() && n + 1 == delays.len();
            match policy.jitter() {
                Jitter::None => prop_assert!(d == ceiling || (last_trimmed && d < ceiling)),
                Jitter::Full => prop_assert!(d <= ceiling),
                Jitter::Equal => prop_assert!(d <= ceiling && (d >= ceiling / 2 || last_trimmed)),
                Jitter::Decorrelated => {
                    prop_assert!(d <= cap && d <= previous * m && (d >= base || last_trimmed));
                    previous = d;
                }
            }
            ceiling = (ceiling * m).min(cap);
        }
        if let Some(budget) = policy.budget() {
            prop_assert!(total <= u64::from(budget.as_millis()));
        }
    }

    #[test]
    fn the_ladder_never_exceeds_its_budget_and_counts_every_attempt(
        policy in retry_policy(),
        trip in 1u32..=10,
        cooldown in 1u32..=10_000,
        durations in prop::collection::vec(0u32..=3_000, 1..30),
        answers in prop::collection::vec(prop_oneof![
            8 => Just(Answer::Nack),
            1 => Just(Answer::Ok),
            1 => Just(Answer::Revoked),
            1 => Just(Answer::BadRequest),
            1 => Just(Answer::RetryAfter(5)),
        ], 1..30),
        start in any::<u32>(),
        pre_strikes in 0u32..=3,
    ) {
        let policy = leak(policy);
        let b = breaker(trip, cooldown);
        let clock = ManualClock::new(Instant::from_millis(start));
        for _ in 0..pre_strikes {
            let _ = b.call(&clock, || Err::<(), _>(LinkError::Nack));
        }
        let open_before = !b.would_allow(clock.now());
        let t0 = clock.now();
        let attempts = Cell::new(0u32);
        let starts = RefCell::new(Vec::new());
        let sleep_ends = RefCell::new(Vec::new());
        let last_end = Cell::new(t0);
        let r = policy
            .ladder(&b, &clock)
            .seed(u64::from(start))
            .sleep(|d| {
                clock.advance(d);
                sleep_ends.borrow_mut().push(clock.now().since(t0));
            })
            .call(|| {
                let i = attempts.get() as usize;
                attempts.set(attempts.get() + 1);
                starts.borrow_mut().push(clock.now().since(t0));
                clock.advance(ms(durations[i % durations.len()]));
                last_end.set(clock.now());
                answer(answers[i % answers.len()])
            });
        // Attempt counts are exact, and never above the policy's.
        prop_assert_eq!(r.attempts, attempts.get());
        prop_assert!(r.attempts <= policy.max_attempts());
        // No sleep ends and no attempt starts past the budget.
        if let Some(budget) = policy.budget() {
            for t in sleep_ends.borrow().iter().chain(starts.borrow().iter()) {
                prop_assert!(*t <= budget, "{} past a {} budget", t, budget);
            }
        }
        // Only strikes are retried: every attempt but the last failed with a strike.
        let n = r.attempts as usize;
        for i in 0..n.saturating_sub(1) {
            prop_assert_eq!(answers[i % answers.len()], Answer::Nack);
        }
        // The stop reason matches what happened.
        match r.stop {
            Stop::Succeeded => prop_assert!(r.result.is_ok()),
            Stop::Refused => {
                prop_assert!(matches!(r.result, Err(CallError::Refused(_))));
                prop_assert!(n == 0 || answers[(n - 1) % answers.len()] == Answer::Nack);
            }
            Stop::NotRetryable(v) => {
                prop_assert!(v != Verdict::Strike);
                prop_assert!(matches!(r.result, Err(CallError::Inner(_))));
            }
            Stop::Opened { retry_in } => {
                prop_assert_eq!(answers[(n - 1) % answers.len()], Answer::Nack);
                let state = b.state(last_end.get());
                let still_open = matches!(state, State::Open { .. });
                prop_assert!(still_open);
                prop_assert_eq!(r.retry_in(), retry_in);
            }
            Stop::Exhausted => prop_assert_eq!(r.attempts, policy.max_attempts()),
            Stop::BudgetSpent => prop_assert!(policy.budget().is_some()),
            Stop::RetryBudgetSpent => prop_assert!(false, "no retry budget was given"),
        }
        if open_before {
            prop_assert_eq!(r.stop, Stop::Refused);
            prop_assert_eq!(r.attempts, 0);
        }
        // After a refusal or a trip verdict the clock did not move any further.
        if matches!(r.stop, Stop::Refused | Stop::NotRetryable(_) | Stop::Opened { .. }) && n > 0 {
            prop_assert_eq!(clock.now(), last_end.get());
        }
    }
}

#[test]
fn a_success_after_a_strike_resets_the_strikes() {
    // The ladder's first-attempt success skips the record only while the breaker has
    // nothing to forget; a success after a strike must reach the breaker and reset it.
    let b = breaker(2, 1000);
    let clock = ManualClock::new(Instant::ZERO);
    let (r, _) = climb(&RETRY3, &b, &clock, 0, &[Answer::Nack]);
    assert_eq!((r.result, r.attempts), (Ok(7), 2));
    assert_eq!(b.state(clock.now()), State::Closed { strikes: 0 });
    // One more strike is then the first of two, not the one that trips.
    let (r, _) = climb(&RETRY3, &b, &clock, 0, &[Answer::Nack]);
    assert_eq!(r.result, Ok(7));
    assert_eq!(b.phase(clock.now()), Phase::Closed);
}

#[test]
fn a_windowed_breakers_successes_through_the_ladder_are_samples() {
    use breaker_core::{WindowSize, Windowed};
    // Four successes, then a call whose two attempts fail: 2 failures in the last 4
    // samples is 50 %, which trips; had the successes not been counted, the window would
    // hold 2 samples, below its minimum of 4, and stay closed.
    let policy = leak(Policy::failure_rate(50, WindowSize::Calls(4), ms(1000)));
    let b = SharedBreaker::windowed(policy, Windowed::calls(()));
    let clock = ManualClock::new(Instant::ZERO);
    let once = RetryPolicy::new(1, ms(10));
    let climb_once = |fail: bool| {
        once.ladder(&b, &clock).seed(1).sleep(|d| clock.advance(d)).call(|| {
            if fail {
                answer(Answer::Nack)
            } else {
                answer(Answer::Ok)
            }
        })
    };
    for _ in 0..4 {
        assert_eq!(climb_once(false).result, Ok(7));
    }
    assert_eq!(b.phase(clock.now()), Phase::Closed);
    let r = climb_once(true);
    assert_eq!(r.attempts, 2);
    assert_eq!(b.phase(clock.now()), Phase::Open);
}

#[test]
fn a_ladder_shows_its_policy_and_seed_and_sleeps_for_real_by_default() {
    static ONCE: RetryPolicy = RetryPolicy::new(1, ms(30));
    let breaker = breaker(3, 1_000);
    let clock = ManualClock::new(Instant::ZERO);
    let ladder = ONCE.ladder(&breaker, &clock);
    assert_eq!(ladder.seed_given(), None);
    assert!(std::ptr::eq(ladder.policy(), &ONCE));
    let ladder = ladder.seed(42);
    assert_eq!(ladder.seed_given(), Some(42));
    assert_eq!(
        format!("{ladder:?}"),
        format!("Ladder {{ policy: {ONCE:?}, seed: Some(42), sleep: DefaultSleep, .. }}")
    );
    // No sleep given: the thread sleeps the retry's delay (never less; more on a busy host).
    let started = std::time::Instant::now();
    let tries = Cell::new(0);
    let r = ladder.call(|| {
        tries.set(tries.get() + 1);
        if tries.get() == 1 {
            Err(LinkError::Nack)
        } else {
            Ok(1)
        }
    });
    assert_eq!((r.result, r.attempts), (Ok(1), 2));
    assert!(started.elapsed() >= std::time::Duration::from_millis(30));
}
