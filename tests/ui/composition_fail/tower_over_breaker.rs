// Every service a tower layer makes holds a clone of its breaker handle; a single-owner
// `Breaker` is not one: each clone would be a breaker of its own.
use breaker_core::tower::CircuitBreakerLayer;
use breaker_core::{Breaker, Duration, Policy, StdClock};
use tower::Layer;

fn main() {
    let layer = CircuitBreakerLayer::new(Breaker::new(Policy::new(2, Duration::from_secs(30))), StdClock);
    let _service = layer.layer(tower::service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x) }));
}
