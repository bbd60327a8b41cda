#![doc = include_str!("../README.md")]
#![no_std]
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]
// `unsafe` is denied everywhere but in `linker`, the one small module that needs it, and
// the tower layer's refusal box (`tower::RefusedError::boxed`, one line).
#![deny(unsafe_code)]

#[cfg(any(feature = "std", test))]
extern crate std;

// Lets `#[circuit_breaker]` name this crate `::breaker_core` from inside it too.
extern crate self as breaker_core;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
// Grouped by layer (the folders say the architecture); the paths the crate's own code
// uses, `crate::machine` and the like, stay flat through the imports below.
mod breaker;
mod compose;
mod integrations;

pub use breaker::counts;
pub use breaker::word;
pub use compose::{chain, history, keyed, router, window};
#[cfg(feature = "embedded-hal")]
pub use integrations::hal;
#[cfg(feature = "metrics")]
pub use integrations::metrics;
pub use integrations::registry;
#[cfg(feature = "svg")]
pub use integrations::timeline;
#[cfg(feature = "tower")]
pub use integrations::tower;

#[cfg(not(target_os = "none"))]
use breaker::padded;
use breaker::{atomic, circuit, layout, live, machine, outcome, policy, refusal, shared, single, snapshot, time};
use compose::{ladder, quota, quota_guard, retry, retry_budget, rng};
#[cfg(feature = "std")]
use integrations::quota_log;
#[cfg(feature = "state-file")]
use integrations::state_file;
#[cfg(feature = "std")]
use integrations::stderr_log;
#[cfg(feature = "tracing")]
use integrations::tracing_log;
use integrations::{convert, display, global_clock, health, linker, table};

pub use chain::{
    Backup, BackupReport, BackupSpent, Backups, ChainError, ChainObserver, ChainPhase, ChainReport, FallbackChain,
    FallbackEvent, Route, Turn, DEFAULT_CHAIN_POLICY,
};
pub use circuit::{Attempt, CallTicket, CircuitBreaker, GuardsCalls, SharedTicket};
pub use convert::DurationOutOfRange;
pub use global_clock::{reset_global_clock, set_global_clock, GlobalClock};
#[cfg(feature = "embedded-hal")]
pub use hal::{ByErrorKind, ClassifyHal, DeviceBreakers, DeviceTableError, Guarded, GuardedError, PickBreaker};
pub use history::{History, Recent, RecentIter, MAX_HISTORY};
#[cfg(feature = "rtic-time")]
pub use integrations::rtic_clock::{MonotonicMillis, RticClock};
#[cfg(feature = "std")]
pub use keyed::{KeyedBreakerMap, MapEntry};
pub use keyed::{KeyedBreakers, KeyedEntry, KeyedTable, KeyedTicket, TableError, TableKey};
pub use ladder::{
    Allowance, BlockingSleep, ByClassify, Classifier, DefaultSleep, Ladder, Notify, Retried, Sleep, Stop,
};
pub use live::{LivePolicy, PolicyStore, ReadPolicy, Reloadable};
pub use machine::{Phase, Reason, RefusalReason, State, Transition};
pub use outcome::{Classify, Outcome, Verdict};
pub use policy::{Policy, PolicyError, MAX_BACKOFF_STEP, MAX_PROBES, MAX_TRIP};
pub use quota::{
    Alarm, Forecast, Light, Priority, Quota, QuotaGauge, QuotaPolicy, QuotaPolicyError, Reading, Sample, Share,
};
pub use quota_guard::{LastQuota, QuotaGuard, QuotaObserver, Steer};
#[cfg(feature = "std")]
pub use quota_log::{Console, QuotaLog, StdoutConsole};
pub use refusal::Refusal;
pub use retry::{Delays, Jitter, RetryPolicy, RetryPolicyError, MAX_RETRIES};
pub use retry_budget::{RetryBudget, RetryBudgetError, RetryBudgetSnapshot};
pub use router::{Choice, HealthRouter, RouterError, Row, Tool, ToolGate};
pub use shared::{Permit as SharedPermit, SharedBreaker};
pub use single::{Breaker, CallError, Counters, Observer, Permit, Refused, TransitionCounts};
pub use snapshot::{DecodeError, Snapshot};
#[cfg(feature = "state-file")]
pub use state_file::{SavedState, SavedStatus, StateFile, StateFileError, StateFileProblem};
#[cfg(feature = "std")]
pub use stderr_log::StderrLog;
#[cfg(feature = "std")]
pub use time::StdClock;
pub use time::{Clock, Duration, Instant, ManualClock};
#[cfg(feature = "svg")]
pub use timeline::Timeline;
#[cfg(feature = "tracing")]
pub use tracing_log::TracingLog;
pub use window::{
    Bucket, CallRing, CallWindow, InFlight, TimeWindow, Window, WindowSize, WindowSnapshot, WindowStats, WindowStore,
    Windowed, MAX_BUCKET_CALLS, MAX_RING_CALLS, MAX_WINDOW_BUCKETS, MAX_WINDOW_CALLS, MIN_WINDOW_TIME, WINDOW_BUCKETS,
};
pub use word::{WordOp, WordStep, WordTicket};

// The attribute's documentation lives here, on the re-export, where its links resolve
// (the macro crate cannot depend on this one); rustdoc shows it above the macro crate's
// own short paragraph.
#[cfg(feature = "macros")]
#[doc = include_str!("attribute.md")]
pub use breaker_macros::circuit_breaker;
