//! Squad's console lines for a quota-guarded breaker: an observer that prints one event per transition, on a host.

use core::cell::RefCell;
use core::fmt;
use std::string::String;
use std::sync::Mutex;

use crate::{Duration, LastQuota, Observer, Phase, Quota, QuotaObserver, Reason, Transition};

/// Where a [`QuotaLog`] writes its lines.
///
/// [`StdoutConsole`] prints them; a `RefCell<String>` or a `Mutex<String>` collects them
/// (for tests, or a demo that prefixes each line). Implement it to add a timestamp or to
/// send the lines to your own logger.
pub trait Console {
    /// Writes one line (without its newline).
    fn line(&self, line: fmt::Arguments<'_>);
}

/// The process's standard output, one line per event; a closed or full stdout loses the
/// line instead of panicking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StdoutConsole;

impl Console for StdoutConsole {
    fn line(&self, line: fmt::Arguments<'_>) {
        use std::io::Write as _;
        let _ = std::writeln!(std::io::stdout(), "{line}");
    }
}

impl Console for RefCell<String> {
    fn line(&self, line: fmt::Arguments<'_>) {
        use fmt::Write as _;
        let mut out = self.borrow_mut();
        let _ = out.write_fmt(line);
        out.push('\n');
    }
}

impl Console for Mutex<String> {
    fn line(&self, line: fmt::Arguments<'_>) {
        use fmt::Write as _;
        // A panic elsewhere while holding the lock does not stop the log.
        let mut out = self.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let _ = out.write_fmt(line);
        out.push('\n');
    }
}

impl<C: Console + ?Sized> Console for &C {
    fn line(&self, line: fmt::Arguments<'_>) {
        (**self).line(line)
    }
}

/// Squad's console events, one [`Observer`] for a [`QuotaGuard`](crate::QuotaGuard)'s
/// breaker (feature `std`):
///
/// ```text
/// 🛑 Circuit opened — quota predicted low (342/5000)
/// ⏸ Circuit open — cooling down (480s left)
/// 🔄 Circuit half-open — probing...
/// ✓ Circuit closed — quota recovered
/// ```
///
/// An opening prints the first two lines: why it opened, with the last quota the guard
/// observed ([`QuotaObserver::on_quota`]), and the cooldown it starts, in whole seconds
/// rounded up. "quota predicted low" is [`Reason::Predicted`] (a predicted exhaustion),
/// "quota red" is [`Reason::QuotaRed`] (the light is red: `🛑 Circuit opened — quota red
/// (42/5000)`); other openings say their reason's [words](Reason::words), as in
/// `🛑 Circuit opened — trip verdict (0/5000)` for a 429, or `probe failed`. Before any
/// quota was observed the parenthesis is left out. A forced opening prints
/// `⏸ Circuit open — until reset`, a reset `✓ Circuit closed — reset`.
///
/// [`QuotaLog::cooling_down`] prints the second line on its own, for a round refused while
/// open. Lines go to a [`Console`]: standard output by default.
///
/// ```
/// use std::cell::RefCell;
///
/// use breaker_core::{Breaker, Duration, Instant, Policy, Priority, Quota, QuotaGuard, QuotaLog, QuotaPolicy};
///
/// let log = QuotaLog::with_console(RefCell::new(String::new()));
/// let breaker = Breaker::with_observer(Policy::new(3, Duration::from_mins(8)), log);
/// let mut guard = QuotaGuard::<_>::new(breaker, QuotaPolicy::new());
/// guard.observe(Quota::new(2_000, 5_000), Instant::ZERO);
/// // 1 658 in 10 s: the 342 left last about 2 s.
/// guard.observe(Quota::new(342, 5_000), Instant::from_millis(10_000));
/// assert_eq!(
///     guard.breaker().observer().console().borrow().as_str(),
///     "🛑 Circuit opened — quota predicted low (342/5000)\n⏸ Circuit open — cooling down (480s left)\n"
/// );
/// ```
pub struct QuotaLog<C: Console = StdoutConsole> {
    console: C,
    last: LastQuota,
}

impl QuotaLog<StdoutConsole> {
    /// A log on standard output.
    pub const fn new() -> QuotaLog<StdoutConsole> {
        QuotaLog::with_console(StdoutConsole)
    }
}

impl Default for QuotaLog<StdoutConsole> {
    fn default() -> Self {
        QuotaLog::new()
    }
}

impl<C: Console> QuotaLog<C> {
    /// A log that writes to `console`.
    pub const fn with_console(console: C) -> QuotaLog<C> {
        QuotaLog {
            console,
            last: LastQuota::new(),
        }
    }

    /// Where the lines go.
    pub fn console(&self) -> &C {
        &self.console
    }

    /// The last quota heard of.
    pub fn last_quota(&self) -> Option<Quota> {
        self.last.get()
    }

    /// Prints `⏸ Circuit open — cooling down (Ns left)` for a wait of `left` (for a call
    /// refused while open: its [`Refused::retry_in`](crate::Refused::retry_in)).
    pub fn cooling_down(&self, left: Duration) {
        self.console.line(format_args!(
            "⏸ Circuit open — cooling down ({}s left)",
            whole_seconds_up(left)
        ));
    }

    /// The lines [`on_transition`](Observer::on_transition) prints for `transition`, each
    /// passed to `line`, with `last` as the last quota heard of.
    pub fn lines(transition: &Transition, last: Option<Quota>, mut line: impl FnMut(fmt::Arguments<'_>)) {
        let t = transition;
        match t.to {
            Phase::Open => {
                let why = match t.why {
                    Reason::Predicted => "quota predicted low",
                    Reason::QuotaRed => "quota red",
                    other => other.words(),
                };
                match last {
                    Some(q) => line(format_args!("🛑 Circuit opened — {why} ({q})")),
                    None => line(format_args!("🛑 Circuit opened — {why}")),
                }
                if t.why == Reason::ForcedOpen {
                    line(format_args!("⏸ Circuit open — until reset"));
                } else {
                    line(format_args!(
                        "⏸ Circuit open — cooling down ({}s left)",
                        whole_seconds_up(t.cooldown)
                    ));
                }
            }
            Phase::HalfOpen => line(format_args!("🔄 Circuit half-open — probing...")),
            Phase::Closed => match t.why {
                Reason::Recovered => line(format_args!("✓ Circuit closed — quota recovered")),
                other => line(format_args!("✓ Circuit closed — {}", other.words())),
            },
        }
    }
}

fn whole_seconds_up(d: Duration) -> u32 {
    d.as_millis().div_ceil(1000)
}

impl<C: Console> Observer for QuotaLog<C> {
    fn on_transition(&self, transition: &Transition) {
        Self::lines(transition, self.last.get(), |l| self.console.line(l));
    }
}

impl<C: Console> QuotaObserver for QuotaLog<C> {
    fn on_quota(&self, quota: &Quota) {
        self.last.set(*quota);
    }
}

impl<C: Console> fmt::Debug for QuotaLog<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuotaLog").field("last", &self.last.get()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use super::*;
    use crate::Instant;

    fn lines(to: Phase, why: Reason, cooldown_ms: u32, last: Option<Quota>) -> Vec<String> {
        let t = Transition {
            from: Phase::Closed,
            to,
            why,
            at: Instant::ZERO,
            cooldown: Duration::from_millis(cooldown_ms),
        };
        let mut out = Vec::new();
        QuotaLog::<StdoutConsole>::lines(&t, last, |l| out.push(std::format!("{l}")));
        out
    }

    #[test]
    fn the_seeds_four_lines_come_out_exactly() {
        let q = Some(Quota::new(342, 5000));
        assert_eq!(
            lines(Phase::Open, Reason::Predicted, 480_000, q),
            [
                "🛑 Circuit opened — quota predicted low (342/5000)",
                "⏸ Circuit open — cooling down (480s left)"
            ]
        );
        assert_eq!(
            lines(Phase::HalfOpen, Reason::CooldownElapsed, 0, q),
            ["🔄 Circuit half-open — probing..."]
        );
        assert_eq!(
            lines(Phase::Closed, Reason::Recovered, 0, q),
            ["✓ Circuit closed — quota recovered"]
        );
    }

    #[test]
    fn a_red_light_and_a_prediction_print_distinct_lines() {
        let q = Some(Quota::new(42, 5000));
        assert_eq!(
            lines(Phase::Open, Reason::QuotaRed, 480_000, q),
            [
                "🛑 Circuit opened — quota red (42/5000)",
                "⏸ Circuit open — cooling down (480s left)"
            ]
        );
        assert_ne!(
            lines(Phase::Open, Reason::QuotaRed, 480_000, q)[0],
            lines(Phase::Open, Reason::Predicted, 480_000, q)[0]
        );
    }

    #[test]
    fn other_openings_say_their_reason() {
        let q = Some(Quota::new(0, 5000));
        assert_eq!(
            lines(Phase::Open, Reason::ProbeFailed, 240_000, q),
            [
                "🛑 Circuit opened — probe failed (0/5000)",
                "⏸ Circuit open — cooling down (240s left)"
            ]
        );
        assert_eq!(
            lines(Phase::Open, Reason::TripVerdict, 1_500, None),
            [
                "🛑 Circuit opened — trip verdict",
                "⏸ Circuit open — cooling down (2s left)"
            ]
        );
        assert_eq!(
            lines(Phase::Open, Reason::ForcedOpen, 0, q),
            ["🛑 Circuit opened — forced (0/5000)", "⏸ Circuit open — until reset"]
        );
        assert_eq!(lines(Phase::Closed, Reason::Reset, 0, q), ["✓ Circuit closed — reset"]);
    }

    #[test]
    fn the_last_quota_is_remembered_for_the_next_opening() {
        let log = QuotaLog::with_console(Mutex::new(String::new()));
        assert_eq!(log.last_quota(), None);
        log.on_quota(&Quota::new(2_100, 5_000));
        assert_eq!(log.last_quota(), Some(Quota::new(2_100, 5_000)));
        log.on_transition(&Transition {
            from: Phase::Closed,
            to: Phase::Open,
            why: Reason::Predicted,
            at: Instant::ZERO,
            cooldown: Duration::from_mins(2),
        });
        log.cooling_down(Duration::from_millis(59_001));
        assert_eq!(
            log.console().lock().unwrap().as_str(),
            "🛑 Circuit opened — quota predicted low (2100/5000)\n\
             ⏸ Circuit open — cooling down (120s left)\n\
             ⏸ Circuit open — cooling down (60s left)\n"
        );
    }

    #[test]
    fn a_borrowed_cell_collects_the_lines_and_the_log_debugs_as_its_last_quota() {
        let cell = RefCell::new(String::new());
        let log = QuotaLog::with_console(&cell);
        log.on_quota(&Quota::new(7, 10));
        log.cooling_down(Duration::from_secs(3));
        log.cooling_down(Duration::from_secs(1));
        assert_eq!(
            cell.borrow().as_str(),
            "⏸ Circuit open — cooling down (3s left)\n⏸ Circuit open — cooling down (1s left)\n"
        );
        assert_eq!(
            std::format!("{log:?}"),
            std::format!("QuotaLog {{ last: {:?} }}", Some(Quota::new(7, 10)))
        );
    }
}
