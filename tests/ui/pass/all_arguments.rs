//! Every argument at once, including `classify` for an error type without `Classify`, a
//! `clock` of the user's own, compound durations, `count_calls`, and `log` (its lines go to stderr).
#![deny(warnings)]

use breaker_core::{circuit_breaker, registry, Duration, Instant, ManualClock, Phase, Refused, Verdict};

#[derive(Debug, PartialEq)]
pub enum Error {
    Revoked,
    Refused,
}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}

fn verdict(e: &Error) -> Verdict {
    match e {
        Error::Revoked => Verdict::Trip,
        Error::Refused => Verdict::Neutral,
    }
}

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[circuit_breaker(
    trip = 255,
    cooldown = "1m30s",
    probe_lease = "250ms",
    probes = 15,
    backoff = 2,
    max_cooldown = "1h",
    name = "billing::charge",
    log,
    count_calls,
    classify = verdict,
    clock = CLOCK,
    crate = ::breaker_core,
)]
fn charge(ok: bool) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(Error::Revoked)
    }
}

fn main() {
    assert_eq!(charge(false), Err(Error::Revoked));
    assert_eq!(charge(true), Err(Error::Refused));
    let entry = registry::get("billing::charge").unwrap();
    assert_eq!(entry.state().phase(), Phase::Open);
    let p = entry.policy();
    assert_eq!((p.trip(), p.probes_to_close(), p.backoff_multiplier()), (255, 15, 2));
    assert_eq!(p.cooldown(), Duration::from_secs(90));
    assert_eq!(p.probe_lease(), Duration::from_millis(250));
    assert_eq!(p.max_cooldown(), Duration::from_mins(60));
    assert!(p.counts_calls());
    CLOCK.advance(Duration::from_secs(90));
    assert_eq!(charge(true), Ok(()));
    // `count_calls`: the admitted calls and the success are counted (the refusal is a skip).
    let c = entry.counters();
    assert_eq!((c.calls, c.successes, c.failures, c.skips), (2, 1, 1, 1));
}
