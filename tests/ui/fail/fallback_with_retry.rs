use breaker_core::{Classify, Refused};

#[derive(Debug)]
pub enum Nack {
    Refused(Refused),
}
impl Classify for Nack {}
impl From<Refused> for Nack {
    fn from(r: Refused) -> Self {
        Nack::Refused(r)
    }
}

fn send_cached(frame: &[u8]) -> Result<usize, Nack> {
    Ok(frame.len())
}

#[breaker_core::circuit_breaker(retry = 2, fallback = send_cached)]
fn send(frame: &[u8]) -> Result<usize, Nack> {
    Ok(frame.len())
}

fn main() {}
