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
mod atomic;
mod breaker;
#[cfg(feature = "defmt")]
mod defmt;
mod global_clock;
mod ladder;
mod linker;
mod machine;
mod outcome;
mod policy;
pub mod registry;
mod retry;
mod rng;
mod shared;
mod snapshot;
#[cfg(feature = "std")]
mod stderr_log;
mod time;
pub mod word;

pub use breaker::{Breaker, CallError, Counters, Observer, Permit, Refused};
pub use global_clock::{reset_global_clock, set_global_clock, GlobalClock};
pub use ladder::{
    BlockingSleep, ByClassify, Classifier, DefaultSleep, Gate, Ladder, Notify, OwnedPass, Pass, Retried, Sleep, Stop,
};
pub use machine::{Phase, Reason, RefusalReason, State, Transition};
pub use outcome::{Classify, Outcome, Verdict};
pub use policy::{Policy, PolicyError, MAX_BACKOFF_STEP, MAX_PROBES, MAX_TRIP};
pub use retry::{Delays, Jitter, RetryPolicy, RetryPolicyError, MAX_RETRIES};
pub use shared::{Permit as SharedPermit, SharedBreaker};
pub use snapshot::{DecodeError, Snapshot};
#[cfg(feature = "std")]
pub use stderr_log::StderrLog;
#[cfg(feature = "std")]
pub use time::StdClock;
pub use time::{Clock, Duration, Instant, ManualClock};
pub use word::{WordOp, WordStep, WordTicket};

/// Wraps a function returning `Result<T, E>` in its own static [`SharedBreaker`], listed in
/// the [`registry`]. See the attribute's own documentation for its arguments.
#[cfg(feature = "macros")]
pub use breaker_macros::circuit_breaker;
