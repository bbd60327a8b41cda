//! The registry's answer to "is this service healthy?": up, degraded or down, by its
//! breakers alone, so that a breaker doing its job does not get a process restarted.

use core::fmt;

use crate::registry::{entries, Entry, Table};
use crate::Phase;

/// How a service is doing, judged by its breakers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HealthStatus {
    /// Every breaker is closed.
    Up,
    /// Some breaker is open or half-open, none of the critical ones: the service answers,
    /// with that dependency refused or rerouted. An orchestrator should keep it running.
    Degraded,
    /// A breaker marked critical is open or half-open: the service cannot do its work.
    Down,
}

impl HealthStatus {
    /// `"up"`, `"degraded"`, `"down"`: the word the JSON and the text say.
    pub const fn key(self) -> &'static str {
        match self {
            HealthStatus::Up => "up",
            HealthStatus::Degraded => "degraded",
            HealthStatus::Down => "down",
        }
    }
}

/// `up`, `degraded`, `down`.
impl fmt::Display for HealthStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.key())
    }
}

/// The registry's breakers, with the overall [`HealthStatus`]: [`registry::health`](health)
/// makes one. With the `serde` feature it serializes as
/// `{"status": "degraded", "breakers": [ .. each breaker's report .. ]}`.
///
/// ```
/// use breaker_core::registry::{self, HealthStatus};
/// use breaker_core::{Duration, Instant, ManualClock, Policy, SharedBreaker};
///
/// static POLICY: Policy = Policy::new(1, Duration::from_secs(30));
/// static SEARCH: SharedBreaker = SharedBreaker::new(&POLICY);
/// static DATABASE: SharedBreaker = SharedBreaker::new(&POLICY);
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
/// breaker_core::register!(SEARCH, "doc-health/search", CLOCK);
/// breaker_core::register!(DATABASE, "doc-health/database", CLOCK);
///
/// // The database is critical: without it the service can do nothing.
/// let critical = ["doc-health/database"];
/// assert_eq!(registry::health(&critical).status(), HealthStatus::Up);
/// SEARCH.force_open(Instant::ZERO);
/// assert_eq!(registry::health(&critical).status(), HealthStatus::Degraded);
/// DATABASE.force_open(Instant::ZERO);
/// assert_eq!(registry::health(&critical).status(), HealthStatus::Down);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Health<'a> {
    entries: &'a [Entry],
    critical: &'a [&'a str],
}

/// The whole registry's health: [`HealthStatus::Down`] when a breaker named in `critical`
/// is open or half-open, [`HealthStatus::Degraded`] when any other is, else
/// [`HealthStatus::Up`]. Each breaker is read at a reading of its own clock with the pure
/// oracle: asking never takes a probe. A name in `critical` that is not registered counts
/// for nothing.
pub fn health<'a>(critical: &'a [&'a str]) -> Health<'a> {
    Health::new(entries(), critical)
}

impl<'a> Health<'a> {
    /// The health of `entries`, with `critical` the names that make the service down.
    pub const fn new(entries: &'a [Entry], critical: &'a [&'a str]) -> Health<'a> {
        Health { entries, critical }
    }

    /// The entries judged.
    pub const fn entries(&self) -> &'a [Entry] {
        self.entries
    }

    /// The names marked critical.
    pub const fn critical(&self) -> &'a [&'a str] {
        self.critical
    }

    /// The entries as a [`Table`].
    pub const fn table(&self) -> Table<'a> {
        Table::new(self.entries)
    }

    /// The overall status now.
    pub fn status(&self) -> HealthStatus {
        self.entries
            .iter()
            .filter(|e| e.state().phase() != Phase::Closed)
            .map(|e| {
                if self.critical.contains(&e.name()) {
                    HealthStatus::Down
                } else {
                    HealthStatus::Degraded
                }
            })
            .max()
            .unwrap_or(HealthStatus::Up)
    }
}

#[cfg(test)]
mod tests {
    use super::HealthStatus;

    #[test]
    fn a_status_displays_as_its_word_padded_as_asked() {
        let text = std::format!(
            "{}|{:>9}|{:<5}|",
            HealthStatus::Up,
            HealthStatus::Degraded,
            HealthStatus::Down
        );
        assert_eq!(text, "up| degraded|down |");
    }
}
