use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker(classify = try::verdict)]
fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
