// A tower layer gates every call of its service; an annotated function's registry entry
// already gates the function itself, so the layer over it would count each outcome twice.
use breaker_core::tower::CircuitBreakerLayer;
use breaker_core::{circuit_breaker, registry, Classify, Refused, StdClock};

#[derive(Debug)]
pub struct Down;
impl Classify for Down {}
impl From<Refused> for Down {
    fn from(_: Refused) -> Self {
        Down
    }
}

#[circuit_breaker(name = "ui/fetch", trip = 2)]
fn fetch() -> Result<(), Down> {
    Ok(())
}

fn main() {
    let entry = registry::get("ui/fetch").unwrap();
    let _layer = CircuitBreakerLayer::new(entry, StdClock);
    let _ = fetch();
}
