#![doc = include_str!("../README.md")]
#![no_std]
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]
// `unsafe` is denied everywhere but in `linker`, the one small module that needs it.
#![deny(unsafe_code)]

#[cfg(any(feature = "std", test))]
extern crate std;

// Lets `#[circuit_breaker]` name this crate `::breaker_core` from inside it too.
extern crate self as breaker_core;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
#[cfg(feature = "anyhow")]
mod anyhow_error;
mod atomic;
mod breaker;
mod call_async;
mod convert;
#[cfg(feature = "defmt")]
mod defmt;
mod display;
mod global_clock;
#[cfg(feature = "std")]
mod io_error;
mod linker;
mod machine;
mod outcome;
mod policy;
pub mod registry;
#[cfg(feature = "serde")]
mod serde;
mod shared;
mod snapshot;
#[cfg(feature = "std")]
mod stderr_log;
mod table;
mod time;
#[cfg(feature = "tower")]
pub mod tower;

pub use breaker::{Breaker, CallError, Counters, Observer, Permit, Refused};
pub use convert::DurationOutOfRange;
pub use global_clock::{reset_global_clock, set_global_clock, GlobalClock};
pub use machine::{Phase, Reason, RefusalReason, State, Transition};
pub use outcome::{Classify, Outcome, Verdict};
pub use policy::{Policy, PolicyError, MAX_BACKOFF_STEP, MAX_PROBES, MAX_TRIP};
pub use shared::{Permit as SharedPermit, SharedBreaker};
pub use snapshot::{DecodeError, Snapshot};
#[cfg(feature = "std")]
pub use stderr_log::StderrLog;
#[cfg(feature = "std")]
pub use time::StdClock;
pub use time::{Clock, Duration, Instant, ManualClock};

// The attribute's documentation lives here, on the re-export, where its links resolve
// (the macro crate cannot depend on this one); rustdoc shows it above the macro crate's
// own short paragraph.
#[cfg(feature = "macros")]
#[doc = include_str!("attribute.md")]
pub use breaker_macros::circuit_breaker;
