use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

pub struct Radio;

impl Radio {
    #[circuit_breaker(retry = 3)]
    pub fn call(self) -> Result<(), Error> {
        Ok(())
    }
}

fn main() {}
