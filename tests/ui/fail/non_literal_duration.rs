use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

const COOLDOWN: &str = "30s";

#[circuit_breaker(cooldown = COOLDOWN)]
fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
