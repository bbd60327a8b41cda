//! Half-open judged by a failure rate (`half_open_calls`, `half_open_rate`), beside
//! consecutive strikes and beside a failure-rate window; each breaker's policy is what the
//! arguments say.
#![deny(warnings)]

use breaker_core::{circuit_breaker, registry, Classify, Refused, WindowSize};

#[derive(Debug, PartialEq)]
pub enum Error {
    Timeout,
    Refused,
}
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}

#[circuit_breaker(trip = 2, half_open_calls = 10, half_open_rate = 50, name = "strikes")]
fn strikes(ok: bool) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(Error::Timeout)
    }
}

#[circuit_breaker(window = 20, half_open_rate = 100, half_open_calls = 15, probes = 1, name = "windowed")]
fn windowed() -> Result<u8, Error> {
    Ok(1)
}

fn main() {
    assert_eq!(strikes(true), Ok(()));
    assert_eq!(strikes(false), Err(Error::Timeout));
    assert_eq!(windowed(), Ok(1));

    let p = registry::get("strikes").unwrap().policy();
    assert_eq!((p.trip(), p.probes_to_close(), p.half_open_rate()), (2, 1, Some((10, 50))));
    let p = registry::get("windowed").unwrap().policy();
    assert_eq!(p.window().map(|w| w.size()), Some(WindowSize::Calls(20)));
    assert_eq!(p.half_open_rate(), Some((15, 100)));
    assert_eq!(registry::get("windowed").unwrap().policy().probes_to_close(), 1);
}
