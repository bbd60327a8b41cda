use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker(window = 20, slow_call = "2s", slow_rate = 80, in_flight = 255)]
fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
