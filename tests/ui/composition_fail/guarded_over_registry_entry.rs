// `Guarded` gates every transaction of its peripheral; a registry entry guards its own
// function only.
use breaker_core::hal::Guarded;
use breaker_core::{circuit_breaker, registry, Classify, Refused, StdClock};
use embedded_hal::i2c::{ErrorKind, ErrorType, I2c, Operation};

#[derive(Debug)]
pub struct Down;
impl Classify for Down {}
impl From<Refused> for Down {
    fn from(_: Refused) -> Self {
        Down
    }
}

#[circuit_breaker(name = "ui/sense", trip = 2)]
fn sense() -> Result<(), Down> {
    Ok(())
}

struct Bus;
impl ErrorType for Bus {
    type Error = ErrorKind;
}
impl I2c for Bus {
    fn transaction(&mut self, _: u8, _: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        Ok(())
    }
}

fn main() {
    let entry = registry::get("ui/sense").unwrap();
    let mut bus = Guarded::new(Bus, entry, StdClock);
    let _ = bus.write(0x48, &[1]);
    let _ = sense();
}
