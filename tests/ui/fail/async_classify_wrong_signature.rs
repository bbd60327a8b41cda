use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

// Returns a bool: `classify` wants `fn(&E) -> Verdict`.
fn is_fatal(_: &Error) -> bool {
    true
}

#[circuit_breaker(classify = is_fatal)]
async fn call() -> Result<(), Error> {
    Ok(())
}

fn main() {}
