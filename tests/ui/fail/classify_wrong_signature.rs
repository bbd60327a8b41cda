use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

fn verdict(_: Error) -> breaker_core::Verdict {
    breaker_core::Verdict::Trip
}

#[circuit_breaker(classify = verdict)]
fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
