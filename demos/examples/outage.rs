//! The outage demo: a breaker (trip after 3 strikes, cooldown 4 ticks) in front of an
//! upstream that fails, one call per tick. Act one is a 503 outage (strikes), act two a
//! revoked key (a trip verdict). Every figure in the summary comes from the breaker's own
//! counters.
//!
//! ```text
//! cargo run -p demos --example outage
//! ```

use std::fmt::Write;

use breaker_core::{Classify, Clock, Duration, Instant, ManualClock, Phase, Policy, SharedBreaker, Verdict};

/// One tick is one millisecond of the breaker's clock.
const TICK: Duration = Duration::from_millis(1);
static POLICY: Policy = Policy::new(3, Duration::from_millis(4));

/// What the upstream answered.
#[derive(Debug)]
enum UpstreamError {
    /// 503: might pass.
    Unavailable,
    /// 401: the key is revoked; no retry can help.
    KeyRevoked,
}

impl Classify for UpstreamError {
    fn verdict(&self) -> Verdict {
        match self {
            UpstreamError::Unavailable => Verdict::Strike,
            UpstreamError::KeyRevoked => Verdict::Trip,
        }
    }
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Closed => "closed",
        Phase::Open => "open",
        Phase::HalfOpen => "half-open",
    }
}

/// Runs one act and returns its breaker for the summary.
fn act(
    out: &mut String,
    title: &str,
    ticks: u32,
    upstream: impl Fn(u32) -> Result<(), UpstreamError>,
) -> SharedBreaker {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    writeln!(out, "  {title}").unwrap();
    writeln!(out, "    {:<6} {:<11} what happened", "tick", "breaker").unwrap();
    for tick in 0..ticks {
        clock.set(Instant::ZERO.wrapping_add(TICK.checked_mul(tick).unwrap()));
        let result = match breaker.try_acquire(&clock) {
            Err(_) => None,
            Ok(permit) => {
                let probe = permit.is_probe();
                let result = upstream(tick);
                match &result {
                    Ok(()) => permit.success(),
                    Err(e) => permit.failure(e.verdict()),
                }
                Some((probe, result))
            }
        };
        let after = breaker.phase(clock.now());
        let what = match result {
            None => "call SKIPPED - not sent, not billed, not waited on".to_string(),
            Some((true, Ok(()))) => "probe SUCCEEDED - breaker closes".to_string(),
            Some((false, Ok(()))) => "ok".to_string(),
            Some((_, Err(e))) => {
                let retryable = e.verdict() == Verdict::Strike;
                let trips = if after == Phase::Open { " - breaker TRIPS" } else { "" };
                format!("failed (retryable: {retryable}){trips}")
            }
        };
        writeln!(out, "    {:<6} {:<11} {what}", tick, phase_name(after)).unwrap();
    }
    writeln!(out).unwrap();
    breaker
}

/// The whole demo's text.
pub fn render() -> String {
    let mut out = String::new();
    writeln!(
        out,
        "CIRCUIT BREAKER (trip after {} strikes, cooldown {} ticks)",
        POLICY.trip(),
        POLICY.cooldown().as_millis()
    )
    .unwrap();
    writeln!(out).unwrap();

    let outage = 4..=9u32;
    let one = act(&mut out, "act one: 503s from tick 4 to 9", 16, |tick| {
        if outage.contains(&tick) {
            Err(UpstreamError::Unavailable)
        } else {
            Ok(())
        }
    });
    let two = act(&mut out, "act two: key revoked at tick 2", 8, |tick| {
        if tick >= 2 {
            Err(UpstreamError::KeyRevoked)
        } else {
            Ok(())
        }
    });

    let (one, two) = (one.counters(), two.counters());
    let probes = match one.probes {
        1 => "one probe".to_string(),
        n => format!("{n} probes"),
    };
    let lines = [
        format!(
            "act one's outage lasted {} ticks but only {} calls felt it: the",
            outage.count(),
            one.failures
        ),
        format!(
            "breaker ate the middle as {} skips (nothing sent, nothing billed,",
            one.skips
        ),
        format!("no timeout waited out) and spent {probes} discovering the recovery."),
        format!(
            "act two never reached {} strikes - the 401's journaled verdict",
            number_word(POLICY.trip())
        ),
        "(retryable: false) tripped the breaker on FIRST contact, and the".to_string(),
        format!(
            "probe kept finding the same wall ({} real calls, {} skipped).",
            two.failures, two.skips
        ),
        "strike counts are for errors that might pass; testimony that the".to_string(),
        "error can never pass deserves an instant trip.".to_string(),
    ];
    for line in lines {
        writeln!(out, "  {line}").unwrap();
    }
    out
}

fn number_word(n: u32) -> String {
    match n {
        2 => "two".into(),
        3 => "three".into(),
        4 => "four".into(),
        n => n.to_string(),
    }
}

#[allow(dead_code)] // The output test includes this file as a module and calls `render`.
fn main() {
    print!("{}", render());
}
