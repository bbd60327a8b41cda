// `anyhow::Error` is classified by breaker-core's `anyhow` feature: without it, one error
// at the error type names the feature (not an impossible `impl Classify for anyhow::Error`).
use breaker_core::circuit_breaker;

#[circuit_breaker(trip = 3)]
fn fetch() -> anyhow::Result<u32> {
    Ok(1)
}

#[circuit_breaker(trip = 3)]
fn fetch_spelled_out() -> Result<u32, anyhow::Error> {
    Ok(2)
}

fn main() {
    let _ = (fetch(), fetch_spelled_out());
}
