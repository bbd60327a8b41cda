//! A wrapped function without `clock = ...` reads the global clock: on a host that is
//! `StdClock` with no setup, and a test can install a manual clock instead and drive the
//! breaker through its cooldown without sleeping. (Its own test binary: the global clock
//! is process-wide.)

use breaker_core::{
    circuit_breaker, registry, reset_global_clock, set_global_clock, Clock, Duration, GlobalClock, Instant,
    ManualClock, Phase, Refused,
};

#[derive(Debug, PartialEq)]
enum Error {
    Down,
    Refused,
}

impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}

/// Not `Classify`: the verdict comes from a function.
fn verdict(_: &Error) -> breaker_core::Verdict {
    breaker_core::Verdict::Strike
}

#[circuit_breaker(trip = 1, cooldown = "2m", classify = verdict)]
fn call(up: bool) -> Result<(), Error> {
    if up {
        Ok(())
    } else {
        Err(Error::Down)
    }
}

static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(5));

#[test]
fn a_manual_clock_drives_the_default_clock_without_sleeping() {
    let name = concat!(module_path!(), "::call");
    assert_eq!(name, "macro_global_clock::call");
    let entry = registry::get(name).unwrap();

    // No setup: the std clock.
    assert_eq!(call(true), Ok(()));

    set_global_clock(|| CLOCK.now());
    assert_eq!(GlobalClock.now(), Instant::from_millis(5));
    assert_eq!(entry.now(), Instant::from_millis(5));
    assert_eq!(call(false), Err(Error::Down));
    assert_eq!(entry.state().phase(), Phase::Open);
    CLOCK.advance(Duration::from_secs(119));
    assert_eq!(call(true), Err(Error::Refused));
    CLOCK.advance(Duration::from_secs(1));
    assert_eq!(call(true), Ok(()));
    assert_eq!(entry.state().phase(), Phase::Closed);

    CLOCK.set(Instant::from_millis(4_000_000_000));
    reset_global_clock();
    assert_ne!(
        GlobalClock.now(),
        Instant::from_millis(4_000_000_000),
        "back on the std clock"
    );
}
