use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

trait Link {
    #[circuit_breaker]
    fn send(&self) -> Result<(), Error>;
}

fn main() {}
