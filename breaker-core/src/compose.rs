//! What composes breakers, each through the one state machine: the fallback chain, the
//! health router, the predictive quota gauge, the retry ladder and its retry budget, the
//! failure-rate window and the transition history, the table of breakers per key.

pub mod chain;
pub mod history;
pub mod keyed;
pub(crate) mod ladder;
pub(crate) mod quota;
pub(crate) mod quota_guard;
pub(crate) mod retry;
pub(crate) mod retry_budget;
pub(crate) mod rng;
pub mod router;
pub mod window;
