//! `#[circuit_breaker(history = N)]`: the function's breaker keeps its last `N`
//! transitions, oldest first, in the registry's report (and so in the JSON and the status
//! page), with `log` and with a failure-rate window as well; without it, none.

use breaker_core::{circuit_breaker, registry, Classify, Duration, Instant, ManualClock, Phase, Reason, Refused};

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[derive(Debug)]
enum Down {
    Nack,
    Refused,
}
impl Classify for Down {}
impl From<Refused> for Down {
    fn from(_: Refused) -> Self {
        Down::Refused
    }
}

#[circuit_breaker(name = "history/three", trip = 1, cooldown = "1s", history = 3, clock = CLOCK)]
fn three(up: bool) -> Result<(), Down> {
    if up {
        Ok(())
    } else {
        Err(Down::Nack)
    }
}

#[circuit_breaker(name = "history/logged-window", window = 2, failure_rate = 50, history = 8, log, clock = CLOCK)]
fn logged_window(up: bool) -> Result<(), Down> {
    if up {
        Ok(())
    } else {
        Err(Down::Nack)
    }
}

#[circuit_breaker(name = "history/none", trip = 1, clock = CLOCK)]
fn none() -> Result<(), Down> {
    Err(Down::Nack)
}

// The largest history the attribute takes is breaker-core's largest.
#[circuit_breaker(name = "history/max", history = 1024, clock = CLOCK)]
fn max() -> Result<(), Down> {
    Ok(())
}

#[test]
fn the_attribute_takes_histories_up_to_breaker_cores_largest() {
    assert_eq!(breaker_core::MAX_HISTORY, 1024);
    max().unwrap();
    assert_eq!(steps("history/max"), []);
}

fn steps(name: &str) -> Vec<(Phase, Phase, Reason)> {
    let report = registry::get(name).unwrap().report();
    report
        .history
        .expect("a history")
        .iter()
        .map(|t| (t.from, t.to, t.why))
        .collect()
}

#[test]
fn the_last_n_transitions_are_in_the_report_oldest_first() {
    use Phase::{Closed, HalfOpen, Open};
    assert_eq!(steps("history/three"), []);
    // Open, half-open, closed; open, half-open, closed: six transitions, the last three kept.
    for _ in 0..2 {
        let _ = three(false);
        CLOCK.advance(Duration::from_secs(1));
        three(true).unwrap();
    }
    assert_eq!(
        steps("history/three"),
        [
            (Closed, Open, Reason::Strikes),
            (Open, HalfOpen, Reason::CooldownElapsed),
            (HalfOpen, Closed, Reason::Recovered),
        ]
    );
    assert!(matches!(three(false), Err(Down::Nack)));
    assert_eq!(steps("history/three")[2], (Closed, Open, Reason::Strikes));

    // With `log` and a window: the same history, the rate as the reason.
    let _ = logged_window(true);
    let _ = logged_window(false);
    assert_eq!(steps("history/logged-window"), [(Closed, Open, Reason::FailureRate)]);

    // Without `history`, the report has none.
    let _ = none();
    assert!(registry::get("history/none").unwrap().report().history.is_none());
}
