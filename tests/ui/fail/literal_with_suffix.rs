use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker(cooldown = "30s"ms)]
fn call() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(name = "radio"x)]
fn named() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(trip = 3x)]
fn counted() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(retry = 2x, retry_jitter = "full"x)]
fn retried() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(window = 20x)]
fn windowed() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(window = "10s"ms)]
fn timed() -> Result<(), Error> {
    Ok(())
}

// A suffix naming an integer type is fine.
#[circuit_breaker(trip = 3u8)]
fn typed() -> Result<(), Error> {
    Ok(())
}

#[circuit_breaker(window = 20u8)]
fn typed_window() -> Result<(), Error> {
    Ok(())
}

fn main() {}
