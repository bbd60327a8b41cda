//! What the scenario (`common/scenario.rs`) needs of its runtime, on RTIC: the breaker
//! crate, the clock its guarded functions read, and the monotonic's timers (the other
//! packages' `rt` is `common/rt_embassy.rs`, over embassy-time).

use core::future::Future;

pub use breaker_core as breaker;
use breaker_core::{RticClock, State};
use rtic_monotonics::systick::prelude::*;
use rtic_monotonics::TimeoutError;

use crate::Mono;

/// The scenario's instants: the monotonic's (32-bit ticks of 1 ms).
pub type Instant = <Mono as Monotonic>::Instant;

/// The clock the scenario's guarded functions read (`clock = crate::rt::CLOCK`): the
/// RTIC monotonic, through breaker-core's `RticClock`.
pub static CLOCK: RticClock<Mono> = RticClock::new();

/// `ms` milliseconds after `epoch`.
pub fn after(epoch: Instant, ms: u64) -> Instant {
    epoch + (ms as u32).millis()
}

/// Waits until `at`.
pub async fn delay_until(at: Instant) {
    Mono::delay_until(at).await;
}

/// Waits `ms` milliseconds.
pub async fn delay_ms(ms: u64) {
    Mono::delay((ms as u32).millis()).await;
}

/// Runs `future` for at most `ms` milliseconds: an error (and the future dropped) if it
/// has not finished by then.
pub async fn timeout_ms<F: Future>(ms: u64, future: F) -> Result<F::Output, TimeoutError> {
    Mono::timeout_after((ms as u32).millis(), future).await
}

/// A breaker state in a log line (breaker-core's own defmt format; `breaker-embedded`
/// has a terser one of the same name).
pub struct Brief(pub State);

impl defmt::Format for Brief {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}", self.0);
    }
}
