use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[derive(Debug)]
struct Timeout;
impl From<Refused> for Timeout {
    fn from(_: Refused) -> Self {
        Timeout
    }
}

#[circuit_breaker]
fn call() -> Result<(), Timeout> {
    Err(Timeout)
}

fn main() {}
