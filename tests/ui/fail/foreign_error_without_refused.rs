//! An error type from another crate: the orphan rule forbids `impl From<Refused>` and
//! `impl Classify` for it here, so the notes point at `refused = ...` and `classify = ...`.
use breaker_core::circuit_breaker;

#[circuit_breaker]
fn parse(text: &str) -> Result<u8, std::num::ParseIntError> {
    text.parse()
}

fn main() {}
