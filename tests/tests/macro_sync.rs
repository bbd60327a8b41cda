//! `#[circuit_breaker]` on sync functions: trips, refuses without running the body, probes
//! and closes, all on a manual clock with no sleeping.

use std::sync::atomic::{AtomicU32, Ordering};

use breaker_core::{circuit_breaker, registry, Classify, Duration, Instant, ManualClock, Phase, Refused, Verdict};

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[derive(Debug, PartialEq)]
enum UpstreamError {
    Unavailable,
    Unauthorized,
    BadRequest,
    Refused(Refused),
}

impl From<Refused> for UpstreamError {
    fn from(r: Refused) -> Self {
        UpstreamError::Refused(r)
    }
}

impl Classify for UpstreamError {
    fn verdict(&self) -> Verdict {
        match self {
            UpstreamError::Unavailable => Verdict::Strike,
            UpstreamError::Unauthorized => Verdict::Trip,
            UpstreamError::BadRequest | UpstreamError::Refused(_) => Verdict::Neutral,
        }
    }
}

static RUNS: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(trip = 3, cooldown = "4s", clock = CLOCK, name = "sync::fetch")]
fn fetch(answer: Result<u32, UpstreamError>) -> Result<u32, UpstreamError> {
    RUNS.fetch_add(1, Ordering::Relaxed);
    let value = answer?;
    Ok(value + 1)
}

fn runs() -> u32 {
    RUNS.load(Ordering::Relaxed)
}

#[test]
fn trips_refuses_probes_and_closes() {
    let entry = registry::get("sync::fetch").unwrap();
    assert_eq!(fetch(Ok(1)), Ok(2));
    for _ in 0..3 {
        assert_eq!(fetch(Err(UpstreamError::Unavailable)), Err(UpstreamError::Unavailable));
    }
    assert_eq!(entry.state().phase(), Phase::Open);
    let before = runs();
    match fetch(Ok(1)) {
        Err(UpstreamError::Refused(r)) => {
            assert_eq!(r.to_string(), "circuit breaker open: call refused");
            assert_eq!(r.retry_in, Some(Duration::from_secs(4)));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(runs(), before, "a refused call must not run the body");
    assert!(!entry.would_allow());

    CLOCK.advance(Duration::from_secs(4));
    assert!(entry.would_allow());
    assert_eq!(entry.state().phase(), Phase::Open, "the oracle took nothing");
    assert_eq!(fetch(Ok(41)), Ok(42), "the probe goes through");
    assert_eq!(entry.state().phase(), Phase::Closed);

    // A trip verdict opens on first contact; a neutral outcome changes nothing.
    assert_eq!(fetch(Err(UpstreamError::BadRequest)), Err(UpstreamError::BadRequest));
    assert_eq!(entry.state().phase(), Phase::Closed);
    assert_eq!(
        fetch(Err(UpstreamError::Unauthorized)),
        Err(UpstreamError::Unauthorized)
    );
    assert_eq!(entry.state().phase(), Phase::Open);
    let c = entry.counters();
    assert_eq!((c.trips, c.skips, c.probes), (2, 1, 1));
    entry.reset();
    assert_eq!(fetch(Ok(0)), Ok(1));
}

/// An alias named like a `Result` is taken as one (the attribute cannot see through it).
type UpstreamResult<T> = Result<T, UpstreamError>;

#[circuit_breaker(trip = 1, cooldown = "4s", clock = CLOCK, name = "sync::aliased")]
fn aliased(up: bool) -> UpstreamResult<u32> {
    if up {
        Ok(7)
    } else {
        Err(UpstreamError::Unavailable)
    }
}

#[test]
fn a_result_alias_is_a_result() {
    assert_eq!(aliased(true), Ok(7));
    assert_eq!(aliased(false), Err(UpstreamError::Unavailable));
    assert!(matches!(aliased(true), Err(UpstreamError::Refused(_))));
    assert_eq!(registry::get("sync::aliased").unwrap().state().phase(), Phase::Open);
}
