//! The bare attribute: every argument at its documented default.
#![deny(warnings)]

use breaker_core::{circuit_breaker, registry, Classify, Duration, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker]
fn call() -> Result<u8, Error> {
    Ok(1)
}

fn main() {
    assert_eq!(call().unwrap(), 1);
    let entry = registry::get(concat!(module_path!(), "::call")).unwrap();
    let p = entry.policy();
    assert_eq!((p.trip(), p.probes_to_close(), p.backoff_multiplier()), (3, 1, 1));
    assert_eq!(p.cooldown(), Duration::from_secs(30));
    assert_eq!(p.probe_lease(), Duration::from_secs(30));
    assert_eq!(p.max_cooldown(), Duration::from_secs(30));
}
