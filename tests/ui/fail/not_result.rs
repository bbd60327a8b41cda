use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker]
fn call() -> Option<u32> {
    Some(1)
}

fn main() {}
