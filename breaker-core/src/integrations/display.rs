//! `Display` for what a person reads: phases, states, reasons, refusals, counters, reports.
//!
//! The words are the ones `breaker-embedded`'s `Brief` and the transition logs use, with
//! durations printed as [`Duration`](crate::Duration) prints them (`"348ms"`, `"30s"`).

use core::fmt;

use crate::registry::Report;
use crate::{Counters, Phase, Reason, RefusalReason, Refused, State};

/// `closed`, `open`, `half-open`.
impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Phase::Closed => "closed",
            Phase::Open => "open",
            Phase::HalfOpen => "half-open",
        })
    }
}

/// [`Reason::words`]: `strikes`, `probe failed`, ...
impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.words())
    }
}

/// `cooling down`, `probe out`, `forced open`, `quota low`.
impl fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            RefusalReason::Open => "cooling down",
            RefusalReason::Probing => "probe out",
            RefusalReason::ForcedOpen => "forced open",
            RefusalReason::QuotaLow => "quota low",
        })
    }
}

/// A state in a few words: `closed`, `closed (2 strikes)`, `open, cooling down (348ms
/// left)`, `open, cooled down: the next call probes` (no wait left), `open (forced, until
/// reset)`, `half-open (probe out)`, `half-open (1 probe
/// passed)`. Padding and alignment (`{:<30}`) apply to the whole text.
impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written into a small buffer first, so that `{:<30}` pads the whole text.
        let mut buf = Buf::new();
        let _ = match *self {
            State::Closed { strikes: 0 } => fmt::Write::write_str(&mut buf, "closed"),
            State::Closed { strikes: 1 } => fmt::Write::write_str(&mut buf, "closed (1 strike)"),
            State::Closed { strikes } => fmt::write(&mut buf, format_args!("closed ({strikes} strikes)")),
            State::Open { forced: true, .. } => fmt::Write::write_str(&mut buf, "open (forced, until reset)"),
            // The cooldown is over: the breaker would let a call through, as the probe.
            State::Open { remaining, .. } if remaining == crate::Duration::ZERO => {
                fmt::Write::write_str(&mut buf, "open, cooled down: the next call probes")
            }
            State::Open { remaining, .. } => {
                fmt::write(&mut buf, format_args!("open, cooling down ({remaining} left)"))
            }
            State::HalfOpen { probing: true, .. } => fmt::Write::write_str(&mut buf, "half-open (probe out)"),
            State::HalfOpen { streak: 1, .. } => fmt::Write::write_str(&mut buf, "half-open (1 probe passed)"),
            State::HalfOpen { streak, .. } => fmt::write(&mut buf, format_args!("half-open ({streak} probes passed)")),
        };
        f.pad(buf.as_str())
    }
}

/// The counters a shared breaker keeps, on one line: `failures 3, skips 1, trips 1,
/// probes 0, lease expiries 0`. The alternate form (`{:#}`) adds the three only a
/// single-owner [`Breaker`](crate::Breaker) counts: calls, successes, neutrals.
impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            write!(
                f,
                "calls {}, successes {}, neutrals {}, ",
                self.calls, self.successes, self.neutrals
            )?;
        }
        write!(
            f,
            "failures {}, skips {}, trips {}, probes {}, lease expiries {}",
            self.failures, self.skips, self.trips, self.probes, self.lease_expiries
        )
    }
}

/// One registered breaker on one line, as `breaker-embedded`'s `log_entry` writes it:
/// `radio: open, cooling down (202ms left) | failures 3, skips 1, trips 1, probes 0,
/// lease expiries 0`. [`registry::table`](crate::registry::table) aligns many of them. In
/// [shadow mode](crate::SharedBreaker#shadow-mode) the state is followed by `, shadow`
/// (`radio: open, cooling down (202ms left), shadow | ...`): its skips are would-be
/// refusals.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shadow = if self.shadow { ", shadow" } else { "" };
        write!(f, "{}: {}{} | {}", self.name, self.state, shadow, self.counters)
    }
}

/// `circuit breaker open: call refused`; the alternate form (`{:#}`) adds why and, while
/// cooling down, how long is left: `circuit breaker open: call refused (cooling down,
/// retry in 12s)`. A call the quota gauge's amber light held back
/// ([`RefusalReason::QuotaLow`]) says so, and that the breaker is closed: `call held back:
/// quota low, circuit breaker closed` (`{:#}` adds `(high-priority calls only)`).
impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reason == RefusalReason::QuotaLow {
            // The quota gauge's amber light: the breaker is closed, the call was held back.
            f.write_str("call held back: quota low, circuit breaker closed")?;
            if f.alternate() {
                f.write_str(" (high-priority calls only)")?;
            }
            return Ok(());
        }
        f.write_str("circuit breaker open: call refused")?;
        if f.alternate() {
            match self.retry_in {
                Some(wait) => write!(f, " ({}, retry in {wait})", self.reason)?,
                None => write!(f, " ({})", self.reason)?,
            }
        }
        Ok(())
    }
}

/// A fixed buffer for one state's words (the longest is well under its size); text past
/// the end is cut, never a panic.
pub(crate) struct Buf {
    bytes: [u8; 64],
    len: usize,
}

impl Buf {
    pub(crate) const fn new() -> Buf {
        Buf { bytes: [0; 64], len: 0 }
    }

    pub(crate) fn as_str(&self) -> &str {
        let written = self.bytes.get(..self.len).unwrap_or(&[]);
        // Only whole `str`s are ever copied in, so this cannot fail; an empty string if it did.
        core::str::from_utf8(written).unwrap_or("")
    }
}

impl fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let slot = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::format;
    use std::string::ToString;

    use super::*;
    use crate::Duration;

    #[test]
    fn states_read_like_the_embedded_brief() {
        let cases = [
            (State::Closed { strikes: 0 }, "closed"),
            (State::Closed { strikes: 1 }, "closed (1 strike)"),
            (State::Closed { strikes: 2 }, "closed (2 strikes)"),
            (
                State::Open {
                    remaining: Duration::from_millis(348),
                    forced: false,
                },
                "open, cooling down (348ms left)",
            ),
            (
                State::Open {
                    remaining: Duration::ZERO,
                    forced: false,
                },
                "open, cooled down: the next call probes",
            ),
            (
                State::Open {
                    remaining: Duration::ZERO,
                    forced: true,
                },
                "open (forced, until reset)",
            ),
            (
                State::HalfOpen {
                    probing: true,
                    streak: 0,
                },
                "half-open (probe out)",
            ),
            (
                State::HalfOpen {
                    probing: false,
                    streak: 1,
                },
                "half-open (1 probe passed)",
            ),
            (
                State::HalfOpen {
                    probing: false,
                    streak: 3,
                },
                "half-open (3 probes passed)",
            ),
        ];
        for (state, words) in cases {
            assert_eq!(state.to_string(), words);
        }
        assert_eq!(format!("[{:<12}]", State::Closed { strikes: 0 }), "[closed      ]");
        assert_eq!(format!("[{:>9}]", Phase::HalfOpen), "[half-open]");
    }

    #[test]
    fn refusals_say_why_in_the_alternate_form() {
        let cooling = Refused {
            reason: RefusalReason::Open,
            retry_in: Some(Duration::from_secs(12)),
        };
        assert_eq!(cooling.to_string(), "circuit breaker open: call refused");
        assert_eq!(
            format!("{cooling:#}"),
            "circuit breaker open: call refused (cooling down, retry in 12s)"
        );
        let probing = Refused {
            reason: RefusalReason::Probing,
            retry_in: None,
        };
        assert_eq!(format!("{probing:#}"), "circuit breaker open: call refused (probe out)");
        assert_eq!(RefusalReason::ForcedOpen.to_string(), "forced open");
        assert_eq!(Reason::LeaseExpired.to_string(), "probe lease expired");
    }

    #[test]
    fn counters_and_reports_print_on_one_line() {
        let c = Counters {
            calls: 9,
            successes: 5,
            failures: 3,
            neutrals: 1,
            skips: 1,
            trips: 1,
            probes: 0,
            lease_expiries: 0,
            ..Counters::ZERO
        };
        assert_eq!(
            c.to_string(),
            "failures 3, skips 1, trips 1, probes 0, lease expiries 0"
        );
        assert_eq!(
            format!("{c:#}"),
            "calls 9, successes 5, neutrals 1, failures 3, skips 1, trips 1, probes 0, lease expiries 0"
        );
        let report = Report {
            name: "radio",
            policy: crate::Policy::new(3, Duration::from_secs(30)),
            now: crate::Instant::ZERO,
            state: State::Open {
                remaining: Duration::from_millis(202),
                forced: false,
            },
            counters: c,
            would_allow: false,
            shadow: false,
            history: None,
        };
        assert_eq!(
            report.to_string(),
            "radio: open, cooling down (202ms left) | failures 3, skips 1, trips 1, probes 0, lease expiries 0"
        );
        let shadowed = Report {
            would_allow: true,
            shadow: true,
            ..report
        };
        assert_eq!(
            shadowed.to_string(),
            "radio: open, cooling down (202ms left), shadow | failures 3, skips 1, trips 1, probes 0, lease expiries 0"
        );
    }

    #[test]
    fn the_buffer_cuts_instead_of_panicking() {
        let mut b = Buf::new();
        for _ in 0..10 {
            let _ = fmt::Write::write_str(&mut b, "0123456789");
        }
        assert_eq!(b.as_str().len(), 60);
    }
}
