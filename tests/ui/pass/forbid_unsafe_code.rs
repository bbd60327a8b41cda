//! The expansion (the registry's linker-section entry included) is accepted by a crate
//! that forbids `unsafe` code and denies every warning and clippy's default lints.
#![forbid(unsafe_code)]
#![deny(warnings, clippy::all)]

use breaker_core::{circuit_breaker, registry, Classify, Refused};

#[derive(Debug, PartialEq)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker(name = "safe::call")]
fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {
    assert_eq!(call(), Ok(()));
    assert!(registry::get("safe::call").is_ok());
}
