//! Error types the user does not own: `std::io::Error` carries a refusal (recoverable with
//! `downcast`) and classifies itself by kind; `anyhow::Error` (feature `anyhow`) finds a
//! refusal inside it and calls it neutral; boxed errors follow the same rules.

use std::io::{Error, ErrorKind};

use breaker_core::{
    CallError, Classify, Clock, Duration, Instant, ManualClock, Phase, Policy, RefusalReason, Refused, SharedBreaker,
    Verdict,
};

fn refusal() -> Refused {
    Refused {
        reason: RefusalReason::Open,
        retry_in: Some(Duration::from_secs(3)),
    }
}

#[test]
fn a_refusal_becomes_a_connection_refused_io_error_and_comes_back_by_downcast() {
    let error = Error::from(refusal());
    assert_eq!(error.kind(), ErrorKind::ConnectionRefused);
    assert_eq!(error.to_string(), "circuit breaker open: call refused");
    assert!(error.get_ref().unwrap().is::<Refused>());
    assert_eq!(error.downcast::<Refused>().unwrap(), refusal());
}

#[test]
fn io_errors_are_classified_by_kind_as_documented() {
    let table = [
        (ErrorKind::TimedOut, Verdict::Strike),
        (ErrorKind::ConnectionRefused, Verdict::Strike),
        (ErrorKind::ConnectionReset, Verdict::Strike),
        (ErrorKind::ConnectionAborted, Verdict::Strike),
        (ErrorKind::NotConnected, Verdict::Strike),
        (ErrorKind::BrokenPipe, Verdict::Strike),
        (ErrorKind::UnexpectedEof, Verdict::Strike),
        (ErrorKind::InvalidData, Verdict::Strike),
        (ErrorKind::Other, Verdict::Strike),
        (ErrorKind::PermissionDenied, Verdict::Trip),
        (ErrorKind::InvalidInput, Verdict::Neutral),
        (ErrorKind::NotFound, Verdict::Neutral),
        (ErrorKind::AlreadyExists, Verdict::Neutral),
        (ErrorKind::Unsupported, Verdict::Neutral),
        (ErrorKind::Interrupted, Verdict::Neutral),
        (ErrorKind::WouldBlock, Verdict::Neutral),
    ];
    for (kind, verdict) in table {
        assert_eq!(Error::from(kind).verdict(), verdict, "{kind:?}");
        assert_eq!(Error::new(kind, "with a message").verdict(), verdict, "{kind:?}");
    }
    // Our own refusal is `ConnectionRefused` too, but it is never counted as a failure.
    assert_eq!(Error::from(refusal()).verdict(), Verdict::Neutral);
}

#[test]
fn an_io_result_runs_through_a_shared_breaker_as_it_is() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(10));
    static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let invalid = || Err::<(), _>(Error::from(ErrorKind::InvalidInput));
    let timeout = || Err::<(), _>(Error::from(ErrorKind::TimedOut));
    // The caller's own bad input never trips it.
    for _ in 0..5 {
        assert!(matches!(BREAKER.call(&clock, invalid), Err(CallError::Inner(_))));
    }
    assert_eq!(BREAKER.phase(clock.now()), Phase::Closed);
    for _ in 0..2 {
        assert!(matches!(BREAKER.call(&clock, timeout), Err(CallError::Inner(_))));
    }
    assert_eq!(BREAKER.phase(clock.now()), Phase::Open);
}

#[test]
fn a_refusal_inside_anyhow_is_neutral_and_found_by_downcast() {
    let error = anyhow::Error::from(refusal()).context("fetching the forecast");
    assert_eq!(error.verdict(), Verdict::Neutral);
    assert_eq!(error.downcast_ref::<Refused>(), Some(&refusal()));
    assert_eq!(anyhow::anyhow!("503").verdict(), Verdict::Strike);
    // An I/O error inside goes by its kind, context or not.
    let denied = anyhow::Error::from(Error::from(ErrorKind::PermissionDenied)).context("opening the key file");
    assert_eq!(denied.verdict(), Verdict::Trip);
    let bad_input = anyhow::Error::from(Error::from(ErrorKind::InvalidInput));
    assert_eq!(bad_input.verdict(), Verdict::Neutral);
}

#[test]
fn boxed_errors_follow_the_same_rules() {
    type BoxError = Box<dyn std::error::Error + Send + Sync>;
    let refused: BoxError = refusal().into();
    assert_eq!(refused.verdict(), Verdict::Neutral);
    let io: BoxError = Error::from(ErrorKind::PermissionDenied).into();
    assert_eq!(io.verdict(), Verdict::Trip);
    let other: BoxError = "upstream said 503".into();
    assert_eq!(other.verdict(), Verdict::Strike);
    let unsync: Box<dyn std::error::Error> = Box::new(refusal());
    assert_eq!(unsync.verdict(), Verdict::Neutral);
}
