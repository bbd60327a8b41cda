use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker(trip = #[cfg(any())] 3, cooldown = "30s")]
fn call() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(log = #[cfg(any())] true)]
fn logged() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(window = #[cfg(any())] 20)]
fn windowed() -> Result<(), Error> {
    Ok(())
}

fn main() {}
