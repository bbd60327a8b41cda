use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

/// Owns a buffer; not `Clone`.
pub struct Frame(Vec<u8>);

#[circuit_breaker(retry = 3)]
fn call(frame: Frame, len: usize) -> Result<(), Error> {
    drop(frame);
    let _ = len;
    Ok(())
}

fn main() {}
