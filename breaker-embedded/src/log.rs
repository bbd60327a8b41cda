//! Transition and registry logs through defmt, in the spirit of Squad's console lines.

use breaker_core::registry::{self, Entry};
use breaker_core::{Clock, Counters, Duration, Instant, Observer, Phase, Reason, State, Transition};

use crate::EmbassyClock;

/// An [`Observer`] that logs every transition of a breaker through defmt, one line each,
/// with the message and the fields of breaker-core's `tracing` events and the labels of its
/// metrics (`breaker`, `from`, `to`: [`Phase::key`], `reason`: [`Reason::key`]), so that
/// firmware logs read like a host's traces and dashboards:
///
/// ```text
/// WARN  circuit breaker opened breaker=radio from=closed to=open reason=strikes next_probe_in_ms=350
/// INFO  circuit breaker half-open: probing breaker=radio from=open to=half_open reason=cooldown_elapsed
/// INFO  circuit breaker closed breaker=radio from=half_open to=closed reason=recovered
/// ```
///
/// An opening logs at `warn` level, the rest at `info`; set `DEFMT_LOG` accordingly.
/// `next_probe_in_ms` says how much of the cooldown is left when the line is written: the
/// whole cooldown, except after a lapsed probe lease, whose re-open is backdated to the
/// lease's end; a forced opening has none (it waits for a reset). It reads
/// [`EmbassyClock`] for that, so use it with breakers that read the same clock (as every
/// `#[circuit_breaker]` function of `breaker-embedded` does unless given a `clock`). The
/// keys are defmt literals, interned on the host: they take no flash.
///
/// `#[circuit_breaker(log)]` functions log through it, each named by its registry name.
/// A breaker written by hand takes it as its observer:
///
/// ```
/// use breaker_embedded::{DefmtLog, Duration, Policy, SharedBreaker};
///
/// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
/// static SENSOR: SharedBreaker<DefmtLog> = SharedBreaker::with_observer(&POLICY, DefmtLog::new("sensor"));
/// # let _ = &SENSOR;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, defmt::Format)]
pub struct DefmtLog {
    name: &'static str,
}

impl DefmtLog {
    /// A logger that names the breaker `name` in every line.
    pub const fn new(name: &'static str) -> DefmtLog {
        DefmtLog { name }
    }

    /// The name written in every line.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl Observer for DefmtLog {
    // Out of line: one copy of the logging code however many places report transitions.
    #[inline(never)]
    fn on_transition(&self, transition: &Transition) {
        let name = self.name;
        let (from, why) = (PhaseKey(transition.from), ReasonKey(transition.why));
        match Line::of(transition, EmbassyClock.now()) {
            Line::Opened { left, .. } => defmt::warn!(
                "circuit breaker opened breaker={=str} from={} to=open reason={} next_probe_in_ms={=u32}",
                name,
                from,
                why,
                left.as_millis()
            ),
            Line::OpenedUntilReset => {
                defmt::warn!(
                    "circuit breaker opened breaker={=str} from={} to=open reason={}",
                    name,
                    from,
                    why
                )
            }
            Line::Probing => defmt::info!(
                "circuit breaker half-open: probing breaker={=str} from={} to=half_open reason={}",
                name,
                from,
                why
            ),
            Line::Closed { .. } => {
                defmt::info!(
                    "circuit breaker closed breaker={=str} from={} to=closed reason={}",
                    name,
                    from,
                    why
                )
            }
        }
    }
}

/// What one transition line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    Opened { why: Words, left: Duration },
    OpenedUntilReset,
    Probing,
    Closed { why: Words },
}

/// A [`Phase`] as its key ([`Phase::key`]), written as a defmt literal: interned on the
/// host, so it takes no flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PhaseKey(Phase);

impl defmt::Format for PhaseKey {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self.0 {
            Phase::Closed => defmt::write!(f, "closed"),
            Phase::Open => defmt::write!(f, "open"),
            Phase::HalfOpen => defmt::write!(f, "half_open"),
        }
    }
}

/// A [`Reason`] as its key ([`Reason::key`]), written as a defmt literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ReasonKey(Reason);

impl defmt::Format for ReasonKey {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self.0 {
            Reason::Strikes => defmt::write!(f, "strikes"),
            Reason::TripVerdict => defmt::write!(f, "trip_verdict"),
            Reason::ProbeFailed => defmt::write!(f, "probe_failed"),
            Reason::LeaseExpired => defmt::write!(f, "lease_expired"),
            Reason::CooldownElapsed => defmt::write!(f, "cooldown_elapsed"),
            Reason::Recovered => defmt::write!(f, "recovered"),
            Reason::ForcedOpen => defmt::write!(f, "forced_open"),
            Reason::Reset => defmt::write!(f, "reset"),
            Reason::Predicted => defmt::write!(f, "predicted"),
            Reason::QuotaRed => defmt::write!(f, "quota_red"),
            Reason::FailureRate => defmt::write!(f, "failure_rate"),
            Reason::SlowCalls => defmt::write!(f, "slow_calls"),
        }
    }
}

/// A [`Reason`] in [`Reason::words`], written as defmt literals: interned on the host
/// like every defmt string, so the words take no flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Words(pub(crate) Reason);

impl defmt::Format for Words {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self.0 {
            Reason::Strikes => defmt::write!(f, "strikes"),
            Reason::TripVerdict => defmt::write!(f, "trip verdict"),
            Reason::ProbeFailed => defmt::write!(f, "probe failed"),
            Reason::LeaseExpired => defmt::write!(f, "probe lease expired"),
            Reason::CooldownElapsed => defmt::write!(f, "cooldown elapsed"),
            Reason::Recovered => defmt::write!(f, "recovered"),
            Reason::ForcedOpen => defmt::write!(f, "forced"),
            Reason::Reset => defmt::write!(f, "reset"),
            Reason::Predicted => defmt::write!(f, "predicted"),
            Reason::QuotaRed => defmt::write!(f, "quota red"),
            Reason::FailureRate => defmt::write!(f, "failure rate"),
            Reason::SlowCalls => defmt::write!(f, "slow calls"),
        }
    }
}

impl Line {
    fn of(t: &Transition, now: Instant) -> Line {
        match t.to {
            Phase::Open if t.why == Reason::ForcedOpen => Line::OpenedUntilReset,
            Phase::Open => Line::Opened {
                why: Words(t.why),
                left: t.cooldown.saturating_sub(now.since(t.at)),
            },
            Phase::HalfOpen => Line::Probing,
            Phase::Closed => Line::Closed { why: Words(t.why) },
        }
    }
}

/// Logs one line per breaker in the [registry](crate::registry) (every
/// `#[circuit_breaker]` function of the firmware, called or not), at `info` level:
///
/// ```text
/// INFO  circuit breakers: 2 registered
/// INFO  breaker radio: closed | failures 3, skips 3, trips 1, probes 1, lease expiries 0
/// INFO  breaker sensor: open, cooling down (402 ms left) | failures 4, skips 3, trips 2, probes 1, lease expiries 0
/// ```
///
/// Each line is taken at one reading of that breaker's own clock. The state is read
/// with the pure oracle: dumping the registry never takes a probe slot.
pub fn log_registry() {
    defmt::info!("circuit breakers: {=usize} registered", registry::entries().len());
    for entry in registry::iter() {
        log_entry(entry);
    }
}

/// Logs one registry entry the way [`log_registry`] does.
pub fn log_entry(entry: &Entry) {
    let report = entry.report();
    defmt::info!(
        "breaker {=str}: {} | {}",
        report.name,
        Brief(report.state),
        Tally(report.counters)
    );
}

/// A [`State`] in a few words, for defmt: `closed`, `closed (2 strikes)`,
/// `open, cooling down (348 ms left)`, `open (forced, until reset)`,
/// `half-open (probe out)`, `half-open (1 probe passed)`.
///
/// ```
/// use breaker_embedded::{Brief, State};
///
/// let state = State::Closed { strikes: 2 };
/// defmt::info!("radio is {}", Brief(state)); // radio is closed (2 strikes)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Brief(pub State);

impl defmt::Format for Brief {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self.0 {
            State::Closed { strikes: 0 } => defmt::write!(f, "closed"),
            State::Closed { strikes: 1 } => defmt::write!(f, "closed (1 strike)"),
            State::Closed { strikes } => defmt::write!(f, "closed ({=u32} strikes)", strikes),
            State::Open { forced: true, .. } => defmt::write!(f, "open (forced, until reset)"),
            State::Open { remaining, .. } => {
                defmt::write!(f, "open, cooling down ({=u32} ms left)", remaining.as_millis())
            }
            State::HalfOpen { probing: true, .. } => defmt::write!(f, "half-open (probe out)"),
            State::HalfOpen { streak: 1, .. } => defmt::write!(f, "half-open (1 probe passed)"),
            State::HalfOpen { streak, .. } => defmt::write!(f, "half-open ({=u32} probes passed)", streak),
        }
    }
}

/// The counters a shared breaker keeps, on one line.
struct Tally(Counters);

impl defmt::Format for Tally {
    fn format(&self, f: defmt::Formatter<'_>) {
        let c = &self.0;
        defmt::write!(
            f,
            "failures {=u32}, skips {=u32}, trips {=u32}, probes {=u32}, lease expiries {=u32}",
            c.failures,
            c.skips,
            c.trips,
            c.probes,
            c.lease_expiries
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;

    fn t(to: Phase, why: Reason, at: u32, cooldown_ms: u32) -> Transition {
        Transition {
            from: Phase::Closed,
            to,
            why,
            at: Instant::from_millis(at),
            cooldown: Duration::from_millis(cooldown_ms),
        }
    }

    #[test]
    fn an_opening_says_why_and_how_long() {
        let line = Line::of(&t(Phase::Open, Reason::Strikes, 1000, 350), Instant::from_millis(1000));
        assert_eq!(
            line,
            Line::Opened {
                why: Words(Reason::Strikes),
                left: Duration::from_millis(350)
            }
        );
        let line = Line::of(
            &t(Phase::Open, Reason::TripVerdict, 1000, 250),
            Instant::from_millis(1000),
        );
        assert_eq!(
            line,
            Line::Opened {
                why: Words(Reason::TripVerdict),
                left: Duration::from_millis(250)
            }
        );
    }

    #[test]
    fn a_backdated_reopening_shows_the_time_left() {
        // The lease ended at 1000 and the lapse was noticed at 1100: 100 ms are gone.
        let line = Line::of(
            &t(Phase::Open, Reason::LeaseExpired, 1000, 350),
            Instant::from_millis(1100),
        );
        assert_eq!(
            line,
            Line::Opened {
                why: Words(Reason::LeaseExpired),
                left: Duration::from_millis(250)
            }
        );
        // Noticed after the whole cooldown: nothing left, never a negative or huge wait.
        let line = Line::of(
            &t(Phase::Open, Reason::LeaseExpired, 1000, 350),
            Instant::from_millis(9000),
        );
        assert_eq!(
            line,
            Line::Opened {
                why: Words(Reason::LeaseExpired),
                left: Duration::ZERO
            }
        );
    }

    #[test]
    fn the_logged_words_are_the_reasons_words() {
        // `Words` writes defmt literals (no strings in flash); they must say what
        // `Reason::words` says (and `StderrLog` prints).
        let source = include_str!("log.rs");
        for reason in [
            Reason::Strikes,
            Reason::TripVerdict,
            Reason::ProbeFailed,
            Reason::LeaseExpired,
            Reason::CooldownElapsed,
            Reason::Recovered,
            Reason::ForcedOpen,
            Reason::Reset,
            Reason::Predicted,
            Reason::FailureRate,
            Reason::SlowCalls,
        ] {
            let arm = std::format!("Reason::{reason:?} => defmt::write!(f, \"{}\")", reason.words());
            assert!(source.contains(&arm), "log.rs lacks `{arm}`");
        }
    }

    #[test]
    fn other_phases() {
        let now = Instant::from_millis(5);
        assert_eq!(
            Line::of(&t(Phase::Open, Reason::ForcedOpen, 0, 0), now),
            Line::OpenedUntilReset
        );
        assert_eq!(
            Line::of(&t(Phase::HalfOpen, Reason::CooldownElapsed, 0, 0), now),
            Line::Probing
        );
        assert_eq!(
            Line::of(&t(Phase::Closed, Reason::Recovered, 0, 0), now),
            Line::Closed {
                why: Words(Reason::Recovered)
            }
        );
        assert_eq!(
            Line::of(&t(Phase::Closed, Reason::Reset, 0, 0), now),
            Line::Closed {
                why: Words(Reason::Reset)
            }
        );
    }
}
