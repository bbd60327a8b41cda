use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

const TRIP: u32 = 3;

#[circuit_breaker(trip = TRIP)]
fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
