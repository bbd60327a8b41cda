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
impl Classify for Timeout {}

#[circuit_breaker]
async fn call() -> Result<(), Timeout> {
    Err(Timeout)
}

fn main() {}
