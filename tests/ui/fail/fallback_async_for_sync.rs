use breaker_core::Classify;

#[derive(Debug)]
pub struct Nack;
impl Classify for Nack {}

async fn send_cached(frame: &[u8]) -> Result<usize, Nack> {
    Ok(frame.len())
}

#[breaker_core::circuit_breaker(fallback = send_cached)]
fn send(frame: &[u8]) -> Result<usize, Nack> {
    Ok(frame.len())
}

fn main() {}
