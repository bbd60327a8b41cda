//! Transition logs on a host: one line on stderr per transition.

use core::fmt;

use crate::{Observer, Phase, Reason, Transition};

/// An [`Observer`] that writes every transition of a breaker to stderr, one line each,
/// in the words `breaker-embedded`'s `DefmtLog` uses:
///
/// ```text
/// breaker radio: opened (strikes), cooling down 30s
/// breaker radio: half-open: probing
/// breaker radio: closed (recovered)
/// ```
///
/// It is what `#[circuit_breaker(log)]` functions log through when the `std` feature is
/// on (without `std` they log nothing; use `breaker-embedded` for defmt logs). Like every
/// observer it runs on the caller's thread, after the transition took effect, once per
/// transition: nothing is written while the breaker stays in one phase. Lines are written
/// straight to the process's stderr (a test harness does not capture them), and a
/// stderr that cannot be written to loses the line instead of panicking.
///
/// "Cooling down" is the cooldown that started at the transition's
/// [`at`](Transition::at): the logger reads no clock, so it is right whatever clock the
/// breaker reads. A re-open after a lapsed probe lease is backdated to the lease's end,
/// so when that line is written a little of its cooldown is already gone.
///
/// ```
/// use breaker_core::{Duration, Policy, SharedBreaker, StderrLog};
///
/// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
/// static UPSTREAM: SharedBreaker<StderrLog> = SharedBreaker::with_observer(&POLICY, StderrLog::new("upstream"));
/// # let _ = &UPSTREAM;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StderrLog {
    name: &'static str,
}

impl StderrLog {
    /// A logger that names the breaker `name` in every line.
    pub const fn new(name: &'static str) -> StderrLog {
        StderrLog { name }
    }

    /// The name written in every line.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Writes the line [`on_transition`](Observer::on_transition) writes for `transition`,
    /// without the newline.
    ///
    /// ```
    /// use breaker_core::{Duration, Instant, Phase, Reason, StderrLog, Transition};
    ///
    /// let opened = Transition {
    ///     from: Phase::Closed,
    ///     to: Phase::Open,
    ///     why: Reason::Strikes,
    ///     at: Instant::ZERO,
    ///     cooldown: Duration::from_secs(30),
    /// };
    /// let mut line = String::new();
    /// StderrLog::new("radio").write_line(&opened, &mut line).unwrap();
    /// assert_eq!(line, "breaker radio: opened (strikes), cooling down 30s");
    /// ```
    pub fn write_line<W: fmt::Write + ?Sized>(&self, transition: &Transition, out: &mut W) -> fmt::Result {
        let name = self.name;
        let t = transition;
        match t.to {
            Phase::Open if t.why == Reason::ForcedOpen => write!(out, "breaker {name}: opened (forced), until reset"),
            Phase::Open => write!(
                out,
                "breaker {name}: opened ({}), cooling down {}",
                t.why.words(),
                t.cooldown
            ),
            Phase::HalfOpen => write!(out, "breaker {name}: half-open: probing"),
            Phase::Closed => write!(out, "breaker {name}: closed ({})", t.why.words()),
        }
    }
}

impl Observer for StderrLog {
    fn on_transition(&self, transition: &Transition) {
        use std::io::Write as _;
        // A log line is not worth a panic: a closed or full stderr loses the line, nothing else.
        let _ = std::writeln!(std::io::stderr(), "{}", Line(self, transition));
    }
}

/// One line, formatted straight into stderr's buffer.
struct Line<'a>(&'a StderrLog, &'a Transition);

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write_line(self.1, f)
    }
}

#[cfg(test)]
mod tests {
    use std::string::String;

    use super::*;
    use crate::{Duration, Instant};

    fn line(to: Phase, why: Reason, cooldown_ms: u32) -> String {
        let t = Transition {
            from: Phase::Closed,
            to,
            why,
            at: Instant::from_millis(1000),
            cooldown: Duration::from_millis(cooldown_ms),
        };
        let mut out = String::new();
        StderrLog::new("radio").write_line(&t, &mut out).unwrap();
        out
    }

    #[test]
    fn every_reason_has_its_words() {
        assert_eq!(
            line(Phase::Open, Reason::Strikes, 350),
            "breaker radio: opened (strikes), cooling down 350ms"
        );
        assert_eq!(
            line(Phase::Open, Reason::TripVerdict, 90_000),
            "breaker radio: opened (trip verdict), cooling down 90s"
        );
        assert_eq!(
            line(Phase::Open, Reason::ProbeFailed, 120_000),
            "breaker radio: opened (probe failed), cooling down 2m"
        );
        assert_eq!(
            line(Phase::Open, Reason::LeaseExpired, 1_500),
            "breaker radio: opened (probe lease expired), cooling down 1500ms"
        );
        assert_eq!(
            line(Phase::Open, Reason::ForcedOpen, 0),
            "breaker radio: opened (forced), until reset"
        );
        assert_eq!(
            line(Phase::HalfOpen, Reason::CooldownElapsed, 0),
            "breaker radio: half-open: probing"
        );
        assert_eq!(
            line(Phase::Closed, Reason::Recovered, 0),
            "breaker radio: closed (recovered)"
        );
        assert_eq!(line(Phase::Closed, Reason::Reset, 0), "breaker radio: closed (reset)");
        assert_eq!(
            line(Phase::Open, Reason::Predicted, 120_000),
            "breaker radio: opened (predicted), cooling down 2m"
        );
        assert_eq!(
            line(Phase::Open, Reason::FailureRate, 30_000),
            "breaker radio: opened (failure rate), cooling down 30s"
        );
        assert_eq!(
            line(Phase::Open, Reason::SlowCalls, 30_000),
            "breaker radio: opened (slow calls), cooling down 30s"
        );
    }
}
