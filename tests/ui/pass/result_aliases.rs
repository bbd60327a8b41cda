//! Return types written through aliases: `io::Result<T>`, a crate's own `Result<T>`, and
//! the full path to `core::result::Result`.
#![deny(warnings)]

use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug, PartialEq)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

pub type Result<T> = core::result::Result<T, Error>;

#[circuit_breaker]
fn own_alias() -> Result<u8> {
    Ok(1)
}

#[circuit_breaker]
fn full_path() -> core::result::Result<u8, Error> {
    Ok(2)
}

/// `std::io::Error` carries a refusal through `io::Error::other` in a wrapper type.
pub struct IoError(std::io::Error);
impl From<Refused> for IoError {
    fn from(r: Refused) -> Self {
        IoError(std::io::Error::other(r))
    }
}
impl Classify for IoError {}

#[circuit_breaker]
fn io_like() -> core::result::Result<usize, IoError> {
    let n = std::io::Write::write(&mut Vec::new(), b"abc").map_err(IoError)?;
    Ok(n)
}

fn main() {
    assert_eq!(own_alias(), Ok(1));
    assert_eq!(full_path(), Ok(2));
    assert!(matches!(io_like(), Ok(3)));
}
