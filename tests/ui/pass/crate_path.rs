//! `crate = path`: the runtime crate reached through a re-export.
#![deny(warnings)]

mod runtime {
    pub use breaker_core as breaker;
}

use breaker_core::{Classify, Refused};

#[derive(Debug, PartialEq)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[breaker_core::circuit_breaker(crate = crate::runtime::breaker, name = "reexported")]
fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {
    assert_eq!(call(), Ok(()));
    assert!(runtime::breaker::registry::get("reexported").is_ok());
}
