// A type alias the attribute cannot see through: it says how to write it.
use breaker_core::circuit_breaker;

#[derive(Debug)]
pub struct AppError;
impl From<breaker_core::Refused> for AppError {
    fn from(_: breaker_core::Refused) -> Self {
        AppError
    }
}
impl breaker_core::Classify for AppError {}

pub type Reply<T> = Result<T, AppError>;

#[circuit_breaker(trip = 3, cooldown = "30s")]
fn fetch() -> Reply<u32> {
    Ok(1)
}

fn main() {}
