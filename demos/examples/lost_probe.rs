//! loopctl's tool breaker (trip 3, cooldown 30 s, probe lease 30 s) on a manual clock.
//!
//! The probe's caller hangs and never answers. The lease expires; the breaker re-opens
//! *backdated to the lease's end*, so the dead tool gets no free 30 seconds, and the next
//! probe, once the cooldown has run from that point, finds the tool healthy again.
//!
//! ```text
//! cargo run -p demos --example lost_probe
//! ```

use breaker_core::{Clock, Duration, Instant, ManualClock, Phase, Policy, Reason, SharedBreaker, Transition, Verdict};

static POLICY: Policy = Policy::new(3, Duration::from_secs(30)).with_probe_lease(Duration::from_secs(30));
static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

fn secs(t: Instant) -> String {
    let ms = t.as_millis();
    format!("{:>3}.{:03}s", ms / 1000, ms % 1000)
}

fn name(p: Phase) -> &'static str {
    match p {
        Phase::Closed => "closed",
        Phase::Open => "open",
        Phase::HalfOpen => "half-open",
    }
}

fn log_transition(t: &Transition) {
    let why = match t.why {
        Reason::Strikes => "3 consecutive failures",
        Reason::TripVerdict => "a trip verdict",
        Reason::ProbeFailed => "the probe failed",
        Reason::LeaseExpired => "the probe's lease expired unanswered",
        Reason::CooldownElapsed => "the cooldown elapsed; this caller is the probe",
        Reason::Recovered => "the probe succeeded",
        Reason::ForcedOpen => "forced open",
        Reason::Reset => "reset",
        Reason::Predicted => "a prediction said the upstream is about to fail",
        Reason::QuotaRed => "the quota's light is red",
        Reason::FailureRate => "the failure rate over the window reached its threshold",
        Reason::SlowCalls => "the share of slow calls over the window reached its threshold",
    };
    println!(
        "           >> {} -> {} as of {}: {why}",
        name(t.from),
        name(t.to),
        secs(t.at)
    );
}

static BREAKER: SharedBreaker<fn(&Transition)> = SharedBreaker::with_observer(&POLICY, log_transition);

fn at(s: u32) {
    CLOCK.set(Instant::ZERO.wrapping_add(Duration::from_secs(s)));
}

fn say(what: &str) {
    println!("  {}  {what}", secs(CLOCK.now()));
}

fn refused_or_not(label: &str) {
    match BREAKER.try_acquire(&CLOCK) {
        Ok(p) => {
            say(&format!("{label}: let through (unexpected)"));
            p.success();
        }
        Err(r) => match r.retry_in {
            Some(wait) => say(&format!("{label}: refused ({r}), probe possible in {wait}")),
            None => say(&format!("{label}: refused ({r}): the one probe is out")),
        },
    }
}

fn main() {
    println!("LOST PROBE (trip 3, cooldown 30s, probe lease 30s; times are the breaker's clock)");
    println!();
    at(0);
    for i in 1..=3 {
        let permit = BREAKER.try_acquire(&CLOCK).expect("closed");
        say(&format!("call {i}: the tool times out"));
        permit.failure(Verdict::Strike);
    }
    at(10);
    refused_or_not("call 4");
    at(30);
    let hung = BREAKER.try_acquire(&CLOCK).expect("the cooldown has elapsed");
    assert!(hung.is_probe());
    say("call 5: granted as THE probe ... and its caller hangs, never answering");
    at(45);
    refused_or_not("call 6");
    println!(
        "           (a dashboard asks the pure oracle: would a call be allowed? {})",
        BREAKER.would_allow(CLOCK.now())
    );
    at(75);
    say("call 7 arrives; the lease ended at 60s, unanswered:");
    refused_or_not("call 7");
    println!("           (backdated: the cooldown counts from 60s, not from 75s)");
    at(90);
    let probe = BREAKER
        .try_acquire(&CLOCK)
        .expect("cooldown elapsed since the lease's end");
    say("call 8: granted as the next probe; the tool is healthy again");
    probe.success();
    say(&format!("the breaker is {}", name(BREAKER.phase(CLOCK.now()))));
    at(120);
    say(&format!(
        "the hung caller finally returns a timeout: its permit is stale ({}), so it",
        hung.is_stale()
    ));
    say("counts as a failure but moves nothing");
    hung.failure(Verdict::Strike);
    say(&format!("the breaker is still {}", name(BREAKER.phase(CLOCK.now()))));
    let c = BREAKER.counters();
    println!();
    println!(
        "  failures {}, skips {}, trips {}, probes {}, lease expiries {}",
        c.failures, c.skips, c.trips, c.probes, c.lease_expiries
    );
}
