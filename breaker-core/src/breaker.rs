//! The breaker itself: time, policy, outcomes, the state word's layout, the transition
//! rules, and the two storages that apply them (single-owner and shared), with snapshots.

pub(crate) mod atomic;
pub(crate) mod call_async;
pub(crate) mod circuit;
pub mod counts;
pub(crate) mod layout;
pub(crate) mod live;
pub(crate) mod machine;
pub(crate) mod outcome;
#[cfg(not(target_os = "none"))]
pub(crate) mod padded;
pub(crate) mod policy;
pub(crate) mod refusal;
pub(crate) mod shared;
pub(crate) mod single;
pub(crate) mod snapshot;
pub(crate) mod time;
pub mod word;
