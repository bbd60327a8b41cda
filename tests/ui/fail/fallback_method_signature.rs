use breaker_core::Classify;

#[derive(Debug)]
pub struct Nack;
impl Classify for Nack {}

pub struct Radio;

impl Radio {
    /// A fallback of a method takes the receiver first; this one forgot it.
    fn send_cached(frame: &[u8]) -> Result<usize, Nack> {
        Ok(frame.len())
    }

    #[breaker_core::circuit_breaker(fallback = Self::send_cached)]
    pub fn send(&self, frame: &[u8]) -> Result<usize, Nack> {
        Ok(frame.len())
    }
}

fn main() {}
