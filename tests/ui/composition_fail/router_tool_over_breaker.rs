// A router tool is shared by every caller; a single-owner `Breaker` needs `&mut` per call.
use breaker_core::{Breaker, Duration, HealthRouter, Instant, ManualClock, Policy, Row, Tool};

fn main() {
    let breaker = Breaker::new(Policy::new(2, Duration::from_secs(30)));
    let clock = ManualClock::new(Instant::ZERO);
    let _router = HealthRouter::new([Row::new(Tool::shared("search", &breaker, &clock), &[])]);
}
