use breaker_core::Classify;

#[derive(Debug)]
pub struct Nack;
impl Classify for Nack {}

#[breaker_core::circuit_breaker(fallback = send)]
fn send(frame: &[u8]) -> Result<usize, Nack> {
    Ok(frame.len())
}

pub struct Radio;

impl Radio {
    #[breaker_core::circuit_breaker(fallback = Self::send)]
    pub fn send(&self, frame: &[u8]) -> Result<usize, Nack> {
        Ok(frame.len())
    }
}

fn main() {}
