use breaker_core::Classify;

#[derive(Debug)]
pub struct Nack;
impl Classify for Nack {}

#[breaker_core::circuit_breaker(fallback = |frame: &[u8]| Ok(frame.len()))]
fn send(frame: &[u8]) -> Result<usize, Nack> {
    Ok(frame.len())
}

#[breaker_core::circuit_breaker(fallback = "send_cached")]
fn send_again(frame: &[u8]) -> Result<usize, Nack> {
    Ok(frame.len())
}

fn main() {}
