//! The `tower` feature without a server: refusal in `call` (the inner service untouched),
//! `poll_ready` passed through, classification of errors and of whole results, one
//! breaker shared by every clone, a dropped probe future counting as a failed probe, and
//! a breaker whose policy is known only at run time, held in an `Arc`.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use breaker_core::tower::{BoxError, CircuitBreakerLayer, RefusedError};
use breaker_core::{Clock, Duration, Instant, ManualClock, Outcome, Phase, Policy, SharedBreaker};
use tower::{service_fn, Layer, Service};

mod tower_support;
use tower_support::Unready;

/// Polls a future that never waits (every service here answers at once).
fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future waited"),
    }
}

fn ready<S: Service<R>, R>(svc: &mut S) {
    match svc.poll_ready(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(())) => {}
        _ => panic!("not ready"),
    }
}

fn is_refusal(e: &BoxError) -> bool {
    let by_type = e.downcast_ref::<RefusedError>().is_some();
    // The one question every error answers agrees with the downcast.
    assert_eq!(breaker_core::Refusal::is_refused(e), by_type);
    by_type
}

#[test]
fn an_open_breaker_refuses_in_call_without_calling_the_inner_service_and_every_clone_shares_it() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
    static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    static CALLS: AtomicU32 = AtomicU32::new(0);

    let inner = service_fn(|fail: bool| async move {
        CALLS.fetch_add(1, Ordering::Relaxed);
        if fail {
            Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
        } else {
            Ok("ok")
        }
    });
    let layer = CircuitBreakerLayer::new(&BREAKER, &CLOCK);
    let mut a = layer.layer(inner);
    let mut b = a.clone();

    ready(&mut a);
    assert_eq!(now(a.call(false)).unwrap(), "ok");
    // One strike through each clone: the same breaker counts both and opens.
    ready(&mut a);
    assert!(!is_refusal(&now(a.call(true)).unwrap_err()));
    ready(&mut b);
    assert!(!is_refusal(&now(b.call(true)).unwrap_err()));
    assert_eq!(BREAKER.phase(Instant::ZERO), Phase::Open);
    assert_eq!(CALLS.load(Ordering::Relaxed), 3);

    // Refused by every clone, and by a service the layer makes later, inner untouched.
    let mut c = layer.layer(inner);
    for svc in [&mut a, &mut b, &mut c] {
        ready(svc);
        let e = now(svc.call(false)).unwrap_err();
        assert!(is_refusal(&e));
        assert_eq!(e.to_string(), "circuit breaker open: call refused");
        // The wait left travels in the (allocation-free) boxed refusal.
        assert_eq!(breaker_core::Refusal::retry_in(&e), Some(Duration::from_secs(30)));
        assert_eq!(
            format!("{e:#}"),
            "circuit breaker open: call refused (cooling down, retry in 30s)"
        );
        // An outer breaker counts it as neutral.
        assert_eq!(breaker_core::Classify::verdict(&e), breaker_core::Verdict::Neutral);
    }
    assert_eq!(CALLS.load(Ordering::Relaxed), 3);
    assert_eq!(BREAKER.counters().skips, 3);

    // After the cooldown: one probe, it succeeds, closed.
    CLOCK.advance(Duration::from_secs(30));
    ready(&mut b);
    assert_eq!(now(b.call(false)).unwrap(), "ok");
    assert_eq!(BREAKER.phase(CLOCK.now()), Phase::Closed);
}

#[test]
fn a_forced_opening_travels_in_the_boxed_refusal_as_such_without_a_wait() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
    static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let inner = service_fn(|_: ()| async { Ok::<_, std::io::Error>("ok") });
    let mut svc = CircuitBreakerLayer::new(&BREAKER, &CLOCK).layer(inner);
    BREAKER.force_open(CLOCK.now());
    ready(&mut svc);
    let e = now(svc.call(())).unwrap_err();
    let refused = breaker_core::Refusal::refusal(&e).unwrap();
    assert_eq!(refused.reason, breaker_core::RefusalReason::ForcedOpen);
    assert_eq!(refused.retry_in, None);
    let error = e.downcast_ref::<RefusedError>().unwrap();
    assert_eq!(
        (error.refused(), breaker_core::Refusal::refusal(error)),
        (refused, Some(refused))
    );
    assert_eq!(format!("{error:?}"), format!("RefusedError({refused:?})"));
}

#[test]
fn a_call_in_flight_debugs_with_its_permit() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
    static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let inner = service_fn(|_: ()| std::future::ready(Ok::<_, std::io::Error>("ok")));
    let mut svc = CircuitBreakerLayer::new(&BREAKER, &CLOCK).layer(inner);
    ready(&mut svc);
    let call = svc.call(());
    assert!(
        format!("{call:?}").contains("OwnedPermit { probe: false, answered: false }"),
        "{call:?}"
    );
    assert_eq!(now(call).unwrap(), "ok");
}

#[test]
fn a_probe_future_dropped_unanswered_counts_as_a_failed_probe() {
    static POLICY: Policy = Policy::new(1, Duration::from_secs(5));
    static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    // An inner service whose answer never comes.
    let hangs = service_fn(|_: ()| std::future::pending::<Result<(), std::io::Error>>());
    let mut svc = CircuitBreakerLayer::new(&BREAKER, &CLOCK).layer(hangs);
    BREAKER.trip(breaker_core::Reason::Predicted, Instant::ZERO);
    CLOCK.advance(Duration::from_secs(5));

    ready(&mut svc);
    let probe = svc.call(());
    // The probe slot is taken: a second caller is refused at once.
    ready(&mut svc);
    assert!(is_refusal(&now(svc.call(())).unwrap_err()));
    assert_eq!(
        BREAKER.state(Instant::from_millis(5_000)),
        breaker_core::State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    // The client went away (a timeout above fired): the probe counts as failed now.
    drop(probe);
    assert_eq!(BREAKER.phase(Instant::from_millis(5_000)), Phase::Open);
    assert_eq!(BREAKER.counters().failures, 1);
}

#[test]
fn a_result_classifier_turns_a_5xx_response_into_a_strike() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
    static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    fn by_status(result: &Result<u16, std::io::Error>) -> Outcome {
        match result {
            Ok(500..=599) => Outcome::STRIKE,
            Ok(_) => Outcome::Success,
            Err(e) => Outcome::Error(breaker_core::Classify::verdict(e)),
        }
    }
    let status = service_fn(|code: u16| async move { Ok::<_, std::io::Error>(code) });
    let mut svc = CircuitBreakerLayer::new(&BREAKER, &CLOCK)
        .classify(by_status)
        .layer(status);
    // A 404 is a success: it ends the streak of 5xx, so only the last two trip it.
    for code in [200, 503, 404, 503, 502] {
        ready(&mut svc);
        assert_eq!(now(svc.call(code)).unwrap(), code);
    }
    assert_eq!(BREAKER.phase(Instant::ZERO), Phase::Open);
    assert_eq!(BREAKER.counters().failures, 3);
    assert_eq!(BREAKER.counters().trips, 1);
}

#[test]
fn a_breaker_with_a_run_time_policy_is_shared_through_an_arc() {
    let clock = ManualClock::new(Instant::ZERO);
    let trip: u32 = "1".parse().unwrap();
    let policy = Policy::try_new(trip, Duration::from_secs(1)).unwrap();
    let breaker = Arc::new(SharedBreaker::with_policy(policy));
    let invalid = service_fn(|_: ()| async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::InvalidInput)) });
    let denied = service_fn(|_: ()| async { Err::<(), _>(std::io::Error::from(std::io::ErrorKind::PermissionDenied)) });
    let layer = CircuitBreakerLayer::new(breaker.clone(), &clock);
    let mut a = layer.layer(invalid);
    let mut b = layer.layer(denied);
    // Invalid input is the caller's own mistake: neutral, however often.
    for _ in 0..3 {
        ready(&mut a);
        assert!(!is_refusal(&now(a.call(())).unwrap_err()));
    }
    assert_eq!(breaker.phase(Instant::ZERO), Phase::Closed);
    // Permission denied trips at once, for both services.
    ready(&mut b);
    assert!(!is_refusal(&now(b.call(())).unwrap_err()));
    ready(&mut a);
    assert!(is_refusal(&now(a.call(())).unwrap_err()));
    assert_eq!(Arc::strong_count(&breaker), 4);
}

#[test]
fn poll_ready_passes_the_inner_services_readiness_through() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
    static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    let mut svc = CircuitBreakerLayer::new(&BREAKER, &CLOCK).layer(Unready(0));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Service::<bool>::poll_ready(&mut svc, &mut cx).is_pending());
    match Service::<bool>::poll_ready(&mut svc, &mut cx) {
        Poll::Ready(Err(e)) => assert_eq!(e.to_string(), "overloaded"),
        other => panic!("{other:?}"),
    }
    assert_eq!(BREAKER.counters(), breaker_core::Counters::ZERO);
}
