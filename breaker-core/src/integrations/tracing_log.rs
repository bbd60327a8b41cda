//! Transition events through `tracing`: one event per transition, nothing per call.

use crate::{Observer, Phase, Reason, Transition};

/// An [`Observer`] that emits one [`tracing`](https://docs.rs/tracing) event per
/// transition of a breaker (feature `tracing`), and nothing per call: a breaker that stays
/// in one phase is silent, whatever its traffic.
///
/// Every event has the target `breaker` and these fields:
///
/// | field | value |
/// |---|---|
/// | `breaker` | the name given to [`TracingLog::new`] (the registry name, by convention) |
/// | `from`, `to` | [`Phase::key`]: `closed`, `open`, `half_open` |
/// | `reason` | [`Reason::key`]: `strikes`, `trip_verdict`, `probe_failed`, ... |
/// | `next_probe_in_ms` | opened: the cooldown starting at the transition, in milliseconds (absent when forced open: it waits for a reset) |
///
/// Levels follow the severities Polly gives the same events: an opening is `WARN` (the
/// upstream is failing; the breaker is doing its job, so not `ERROR`), half-open and
/// closed are `INFO`.
///
/// ```text
/// WARN breaker: circuit breaker opened breaker="upstream" from="closed" to="open" reason="strikes" next_probe_in_ms=30000
/// INFO breaker: circuit breaker half-open: probing breaker="upstream" from="open" to="half_open" reason="cooldown_elapsed"
/// INFO breaker: circuit breaker closed breaker="upstream" from="half_open" to="closed" reason="recovered"
/// ```
///
/// ```
/// use breaker_core::{Duration, Policy, SharedBreaker, TracingLog};
///
/// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
/// static UPSTREAM: SharedBreaker<TracingLog> = SharedBreaker::with_observer(&POLICY, TracingLog::new("upstream"));
/// # let _ = &UPSTREAM;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TracingLog {
    name: &'static str,
}

impl TracingLog {
    /// An observer that names the breaker `name` in every event.
    pub const fn new(name: &'static str) -> TracingLog {
        TracingLog { name }
    }

    /// The name in every event.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl Observer for TracingLog {
    // Out of line: one copy of the event code however many places report transitions.
    #[inline(never)]
    fn on_transition(&self, t: &Transition) {
        let (breaker, from, to, reason) = (self.name, t.from.key(), t.to.key(), t.why.key());
        match t.to {
            Phase::Open if t.why == Reason::ForcedOpen => {
                tracing::warn!(target: "breaker", breaker, from, to, reason, "circuit breaker forced open until reset")
            }
            Phase::Open => tracing::warn!(
                target: "breaker",
                breaker,
                from,
                to,
                reason,
                next_probe_in_ms = t.cooldown.as_millis(),
                "circuit breaker opened"
            ),
            Phase::HalfOpen => {
                tracing::info!(target: "breaker", breaker, from, to, reason, "circuit breaker half-open: probing")
            }
            Phase::Closed => tracing::info!(target: "breaker", breaker, from, to, reason, "circuit breaker closed"),
        }
    }
}
