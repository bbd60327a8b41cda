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
pub mod chain;
mod convert;
#[cfg(feature = "defmt")]
mod defmt;
mod display;
mod global_clock;
#[cfg(feature = "embedded-hal")]
pub mod hal;
#[cfg(feature = "std")]
mod io_error;
mod ladder;
mod linker;
mod machine;
mod outcome;
mod policy;
mod quota;
mod quota_guard;
#[cfg(feature = "std")]
mod quota_log;
pub mod registry;
mod retry;
mod rng;
pub mod router;
#[cfg(feature = "serde")]
mod serde;
mod shared;
mod snapshot;
#[cfg(feature = "state-file")]
mod state_file;
#[cfg(feature = "std")]
mod stderr_log;
mod table;
mod time;
#[cfg(feature = "tower")]
pub mod tower;
pub mod window;
pub mod word;

pub use breaker::{Breaker, CallError, Counters, Observer, Permit, Refused};
pub use chain::{
    Backup, BackupReport, BackupSpent, Backups, ChainError, ChainObserver, ChainPhase, ChainReport, FallbackChain,
    FallbackEvent, Route, Turn, DEFAULT_CHAIN_POLICY,
};
pub use convert::DurationOutOfRange;
pub use global_clock::{reset_global_clock, set_global_clock, GlobalClock};
#[cfg(feature = "embedded-hal")]
pub use hal::{ByErrorKind, ClassifyHal, DeviceBreakers, DeviceTableError, Guarded, GuardedError, PickBreaker};
pub use ladder::{
    BlockingSleep, ByClassify, Classifier, DefaultSleep, Gate, Ladder, Notify, OwnedPass, Pass, Retried, Sleep, Stop,
};
pub use machine::{Phase, Reason, RefusalReason, State, Transition};
pub use outcome::{Classify, Outcome, Verdict};
pub use policy::{Policy, PolicyError, MAX_BACKOFF_STEP, MAX_PROBES, MAX_TRIP};
pub use quota::{
    Alarm, Forecast, Light, Priority, Quota, QuotaGauge, QuotaPolicy, QuotaPolicyError, Reading, Sample, Share,
};
pub use quota_guard::{LastQuota, QuotaGuard, QuotaObserver, Steer};
#[cfg(feature = "std")]
pub use quota_log::{Console, QuotaLog, StdoutConsole};
pub use retry::{Delays, Jitter, RetryPolicy, RetryPolicyError, MAX_RETRIES};
pub use router::{Choice, HealthRouter, RouterError, Row, Tool};
pub use shared::{Permit as SharedPermit, SharedBreaker};
pub use snapshot::{DecodeError, Snapshot};
#[cfg(feature = "state-file")]
pub use state_file::{SavedState, SavedStatus, StateFile, StateFileError, StateFileProblem};
#[cfg(feature = "std")]
pub use stderr_log::StderrLog;
#[cfg(feature = "std")]
pub use time::StdClock;
pub use time::{Clock, Duration, Instant, ManualClock};
pub use window::{
    Bucket, CallWindow, TimeWindow, Window, WindowSize, WindowSnapshot, WindowStats, WindowStore, Windowed,
    MAX_BUCKET_CALLS, MAX_WINDOW_CALLS, MIN_WINDOW_TIME, WINDOW_BUCKETS,
};
pub use word::{WordOp, WordStep, WordTicket};

// The attribute's documentation lives here, on the re-export, where its links resolve
// (the macro crate cannot depend on this one); rustdoc shows it above the macro crate's
// own short paragraph.
#[cfg(feature = "macros")]
#[doc = include_str!("attribute.md")]
pub use breaker_macros::circuit_breaker;
