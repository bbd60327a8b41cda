use breaker_core::{circuit_breaker, Classify};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}

#[circuit_breaker(refused = |_: breaker_core::Refused| Error)]
fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
