//! Squad's console lines through defmt: the transitions of a quota-guarded breaker on firmware.

use breaker_core::{Clock, Duration, LastQuota, Observer, Phase, Quota, QuotaObserver, Reason, Transition};

use crate::log::Words;
use crate::EmbassyClock;

/// An [`Observer`] that logs a [`QuotaGuard`](crate::QuotaGuard)'s breaker through defmt in
/// Squad's words, one line per event (`breaker-core`'s `QuotaLog` prints the same on a host):
///
/// ```text
/// WARN  🛑 Circuit opened — quota predicted low (342/5000)
/// INFO  ⏸ Circuit open — cooling down (480s left)
/// INFO  🔄 Circuit half-open — probing...
/// INFO  ✓ Circuit closed — quota recovered
/// ```
///
/// The opening names the last quota the guard observed (it is a
/// [`QuotaObserver`]); other reasons than a prediction say their words (`trip verdict`
/// for a 429, `probe failed`). "Cooling down" is the time left when the line is written,
/// in whole seconds rounded up, read from [`EmbassyClock`]: use it with breakers that read
/// that clock. The words are defmt literals, interned on the host: they take no flash.
///
/// ```
/// use breaker_embedded::{DefmtQuotaLog, Duration, Policy, QuotaGuard, QuotaPolicy, SharedBreaker};
///
/// static POLICY: Policy = Policy::new(3, Duration::from_secs(2)).with_backoff(2, Duration::from_secs(60));
/// static RADIO: SharedBreaker<DefmtQuotaLog> = SharedBreaker::with_observer(&POLICY, DefmtQuotaLog::new());
/// let guard = QuotaGuard::<_, 8>::new(&RADIO, QuotaPolicy::new());
/// # let _ = guard;
/// ```
#[derive(Debug)]
pub struct DefmtQuotaLog {
    last: LastQuota,
}

impl DefmtQuotaLog {
    /// A logger that has heard of no quota yet.
    pub const fn new() -> DefmtQuotaLog {
        DefmtQuotaLog { last: LastQuota::new() }
    }

    /// The last quota heard of.
    pub fn last_quota(&self) -> Option<Quota> {
        self.last.get()
    }

    /// Logs `⏸ Circuit open — cooling down (Ns left)` for a wait of `left` (a call refused
    /// while open: its `Refused::retry_in`).
    pub fn cooling_down(&self, left: Duration) {
        defmt::info!("⏸ Circuit open — cooling down ({=u32}s left)", seconds_up(left));
    }
}

impl Default for DefmtQuotaLog {
    fn default() -> Self {
        DefmtQuotaLog::new()
    }
}

impl defmt::Format for DefmtQuotaLog {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "DefmtQuotaLog {{ last: {} }}", self.last.get())
    }
}

fn seconds_up(d: Duration) -> u32 {
    d.as_millis().div_ceil(1000)
}

impl Observer for DefmtQuotaLog {
    // Out of line: one copy of the logging code however many places report transitions.
    #[inline(never)]
    fn on_transition(&self, t: &Transition) {
        match t.to {
            Phase::Open => {
                match (t.why, self.last.get()) {
                    (Reason::Predicted, Some(q)) => defmt::warn!(
                        "🛑 Circuit opened — quota predicted low ({=u32}/{=u32})",
                        q.remaining,
                        q.total
                    ),
                    (Reason::Predicted, None) => defmt::warn!("🛑 Circuit opened — quota predicted low"),
                    (why, Some(q)) => defmt::warn!(
                        "🛑 Circuit opened — {} ({=u32}/{=u32})",
                        Words(why),
                        q.remaining,
                        q.total
                    ),
                    (why, None) => defmt::warn!("🛑 Circuit opened — {}", Words(why)),
                }
                if t.why == Reason::ForcedOpen {
                    defmt::info!("⏸ Circuit open — until reset");
                } else {
                    self.cooling_down(t.cooldown.saturating_sub(EmbassyClock.now().since(t.at)));
                }
            }
            Phase::HalfOpen => defmt::info!("🔄 Circuit half-open — probing..."),
            Phase::Closed => match t.why {
                Reason::Recovered => defmt::info!("✓ Circuit closed — quota recovered"),
                other => defmt::info!("✓ Circuit closed — {}", Words(other)),
            },
        }
    }
}

impl QuotaObserver for DefmtQuotaLog {
    fn on_quota(&self, quota: &Quota) {
        self.last.set(*quota);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;

    #[test]
    fn the_logged_lines_are_the_seeds() {
        // The lines are defmt literals; they must say what the seed (and `QuotaLog`) says.
        let source = include_str!("quota_log.rs");
        for line in [
            "\"🛑 Circuit opened — quota predicted low ({=u32}/{=u32})\"",
            "\"⏸ Circuit open — cooling down ({=u32}s left)\"",
            "\"🔄 Circuit half-open — probing...\"",
            "\"✓ Circuit closed — quota recovered\"",
        ] {
            assert!(source.contains(line), "quota_log.rs lacks {line}");
        }
    }

    #[test]
    fn the_last_quota_is_remembered() {
        let log = DefmtQuotaLog::new();
        assert_eq!(log.last_quota(), None);
        log.on_quota(&Quota::new(342, 5000));
        assert_eq!(log.last_quota(), Some(Quota::new(342, 5000)));
        assert_eq!(seconds_up(Duration::from_millis(479_001)), 480);
        assert_eq!(seconds_up(Duration::ZERO), 0);
    }
}
