use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker(trip = 0, cooldown = "5 s", probes = 99, colour = "red")]
const fn call() -> Option<()> {
    None
}

fn main() {}
