//! A refused or failed call as a value: how `CallError` and `Refused` print, what they
//! chain to as errors, and how the call's own error is taken back out.

use std::error::Error as _;
use std::fmt;

use breaker_core::{
    CallError, Classify, Duration, Instant, ManualClock, Policy, RefusalReason, Refused, SharedBreaker,
};

#[derive(Debug, PartialEq)]
struct Timeout;

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("upstream timed out")
    }
}

impl std::error::Error for Timeout {}
impl Classify for Timeout {}

const REFUSED: Refused = Refused {
    reason: RefusalReason::Open,
    retry_in: Some(Duration::from_secs(3)),
};

#[test]
fn the_calls_own_error_comes_back_out() {
    assert_eq!(CallError::Inner(Timeout).into_inner(), Some(Timeout));
    assert_eq!(CallError::<Timeout>::Refused(REFUSED).into_inner(), None);
}

#[test]
fn a_call_error_prints_as_what_happened() {
    assert_eq!(CallError::Inner(Timeout).to_string(), "upstream timed out");
    assert_eq!(
        CallError::<Timeout>::Refused(REFUSED).to_string(),
        "circuit breaker open: call refused"
    );
    assert_eq!(REFUSED.to_string(), "circuit breaker open: call refused");
}

#[test]
fn a_call_error_chains_to_its_cause() {
    let inner = CallError::Inner(Timeout);
    assert_eq!(
        inner.source().map(|e| e.to_string()).as_deref(),
        Some("upstream timed out")
    );
    let refused = CallError::<Timeout>::Refused(REFUSED);
    let source = refused.source().expect("the refusal");
    assert_eq!(source.downcast_ref::<Refused>(), Some(&REFUSED));
    assert!(REFUSED.source().is_none());
}

#[test]
fn a_real_refusal_is_the_same_value() {
    static POLICY: Policy = Policy::new(1, Duration::from_secs(3));
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    assert_eq!(b.call(&clock, || Err::<(), _>(Timeout)), Err(CallError::Inner(Timeout)));
    assert_eq!(
        b.call(&clock, || Ok::<_, Timeout>(())),
        Err(CallError::Refused(REFUSED))
    );
}

/// `Refusal` on a refusal, on a call's error (refused or the call's own), and through a
/// reference to either: the refusal and its wait, or none.
#[test]
fn a_refusal_is_found_in_every_error_that_can_hold_one() {
    use breaker_core::Refusal;
    let refused = Refused {
        reason: RefusalReason::Open,
        retry_in: Some(Duration::from_secs(30)),
    };
    let wait = Some(Duration::from_secs(30));
    let as_refused: CallError<Timeout> = CallError::Refused(refused);
    let as_inner: CallError<Timeout> = CallError::Inner(Timeout);
    assert_eq!(
        (refused.refusal(), refused.is_refused(), refused.retry_in()),
        (Some(refused), true, wait)
    );
    assert_eq!(
        (as_refused.refusal(), as_refused.is_refused(), as_refused.retry_in()),
        (Some(refused), true, wait)
    );
    assert_eq!(
        (as_inner.refusal(), as_inner.is_refused(), as_inner.retry_in()),
        (None, false, None)
    );
    // Through a reference: the impl for `&T`.
    fn by_ref<R: Refusal>(r: &R) -> (Option<Refused>, Option<Duration>) {
        (<&R as Refusal>::refusal(&r), <&R as Refusal>::retry_in(&r))
    }
    assert_eq!(by_ref(&as_refused), (Some(refused), wait));
    assert_eq!(by_ref(&refused), (Some(refused), wait));
    assert_eq!(by_ref(&as_inner), (None, None));
}
