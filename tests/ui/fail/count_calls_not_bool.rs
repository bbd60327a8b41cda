use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker(trip = 3, count_calls = "yes")]
fn call() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(trip = 3, count_calls(true))]
fn called_like_a_function() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(trip = 3, count_calls, count_calls = false)]
fn given_twice() -> Result<(), Error> {
    Ok(())
}

fn main() {}
