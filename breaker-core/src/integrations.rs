//! The breaker in other worlds: the static registry and its table, the global clock,
//! logs, conversions, `Display`, foreign error types, serde, tower, embedded-hal, the
//! quota guard's state file, defmt and metrics.

#[cfg(feature = "anyhow")]
pub(crate) mod anyhow_error;
pub(crate) mod convert;
#[cfg(feature = "defmt")]
pub(crate) mod defmt;
pub(crate) mod display;
pub(crate) mod global_clock;
#[cfg(feature = "embedded-hal")]
pub mod hal;
pub(crate) mod health;
#[cfg(feature = "std")]
pub(crate) mod io_error;
pub(crate) mod linker;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "std")]
pub(crate) mod quota_log;
pub mod registry;
#[cfg(feature = "rtic-time")]
pub(crate) mod rtic_clock;
#[cfg(feature = "serde")]
pub(crate) mod serde;
#[cfg(feature = "state-file")]
pub(crate) mod state_file;
#[cfg(feature = "std")]
pub(crate) mod stderr_log;
pub(crate) mod table;
#[cfg(feature = "svg")]
pub mod timeline;
#[cfg(feature = "tower")]
pub mod tower;
#[cfg(feature = "tracing")]
pub(crate) mod tracing_log;
