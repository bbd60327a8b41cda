#![doc = include_str!("../README.md")]
#![no_std]
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]
#![forbid(unsafe_code)]

// Lets `#[circuit_breaker]` name this crate `::breaker_embedded` from inside it too.
extern crate self as breaker_embedded;

mod clock;
mod log;
mod quota_log;
mod sleep;

pub use breaker_core::*;

// Shadows the glob's `circuit_breaker` (breaker-core's, whose code names `::breaker_core`).
/// The `#[circuit_breaker]` attribute, documented at [`breaker_core::circuit_breaker`],
/// with this crate's defaults: the functions it wraps read [`EmbassyClock`], log through
/// [`DefmtLog`] with `log`, and sleep between retries with [`EmbassySleep`].
#[doc(inline)]
pub use breaker_core::__private::circuit_breaker_embedded as circuit_breaker;
pub use clock::{embassy_duration, EmbassyClock};
pub use log::{log_entry, log_registry, Brief, DefmtLog};
pub use quota_log::DefmtQuotaLog;
pub use sleep::EmbassySleep;

/// What `#[circuit_breaker]` expands to reaches only this module when the attribute is
/// used through `breaker-embedded`. Not public API.
///
/// It is `breaker_core`'s, with three changes: the default clock is [`EmbassyClock`], so an
/// annotated function reads embassy time with no further setup, the observer of
/// `#[circuit_breaker(log)]` functions is [`DefmtLog`], so they log through defmt, and
/// `#[circuit_breaker(retry = ..)]` functions sleep with [`EmbassySleep`].
#[doc(hidden)]
pub mod __private {
    pub use breaker_core::__private::*;

    // Shadows the glob's `DefaultClock` (breaker-core's global clock).
    pub use crate::EmbassyClock as DefaultClock;
    // Shadows the glob's `Log` (stderr with `std`, nothing without).
    pub use crate::DefmtLog as Log;
    // Shadows the glob's `DefaultSleep`: retried functions sleep on embassy-time.
    pub use crate::EmbassySleep as DefaultSleep;
}
