#![doc = include_str!("../README.md")]
#![no_std]
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]
#![forbid(unsafe_code)]

#[cfg(any(feature = "std", test))]
extern crate std;

mod atomic;
mod breaker;
mod machine;
mod outcome;
mod policy;
mod shared;
mod snapshot;
mod time;

pub use breaker::{Breaker, CallError, Counters, Observer, Permit, Refused};
pub use machine::{Phase, Reason, RefusalReason, State, Transition};
pub use outcome::{Classify, Outcome, Verdict};
pub use policy::{Policy, PolicyError, MAX_BACKOFF_STEP, MAX_PROBES, MAX_TRIP};
pub use shared::{Permit as SharedPermit, SharedBreaker};
pub use snapshot::{DecodeError, Snapshot};
#[cfg(feature = "std")]
pub use time::StdClock;
pub use time::{Clock, Duration, Instant, ManualClock};
