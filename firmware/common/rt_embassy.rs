//! What the scenario (`scenario.rs`) needs of its runtime, on embassy: the breaker
//! crate, the clock its guarded functions read, and embassy-time's timers. `m3` and `m0`
//! include this file as their `rt` module; the RTIC firmware has its own `rt`, over its
//! monotonic, so that all three run the same scenario.

use core::future::Future;

pub use breaker_embedded as breaker;
pub use breaker_embedded::Brief;
use embassy_time::{with_timeout, Duration, TimeoutError, Timer};

/// The scenario's instants: embassy's.
pub type Instant = embassy_time::Instant;

/// The clock the scenario's guarded functions read (`clock = crate::rt::CLOCK`):
/// embassy time, the attribute's default in breaker-embedded.
pub static CLOCK: breaker_embedded::EmbassyClock = breaker_embedded::EmbassyClock;

/// `ms` milliseconds after `epoch`.
#[inline]
pub fn after(epoch: Instant, ms: u64) -> Instant {
    Instant::from_ticks(epoch.as_ticks().saturating_add(Duration::from_millis(ms).as_ticks()))
}

/// Waits until `at`. (The three waits hand back embassy's own futures: a wrapping
/// `async fn` would add a state machine per call site to every firmware.)
#[inline]
pub fn delay_until(at: Instant) -> Timer {
    Timer::at(at)
}

/// Waits `ms` milliseconds.
#[inline]
pub fn delay_ms(ms: u64) -> Timer {
    Timer::after_millis(ms)
}

/// Runs `future` for at most `ms` milliseconds: an error (and the future dropped) if it
/// has not finished by then.
#[inline]
pub fn timeout_ms<F: Future>(ms: u64, future: F) -> impl Future<Output = Result<F::Output, TimeoutError>> {
    with_timeout(Duration::from_millis(ms), future)
}
