//! The `config` example: breakers, a router, a ladder, a tower stack and a fallback chain
//! built from a configuration at start-up, with no `static` and no leak; a bad configuration
//! is an error naming the problem; a changed one reloads the running breakers' policies,
//! keeping their state.

#[allow(dead_code)] // its `main` is the example's
#[path = "../examples/config.rs"]
mod config;

use breaker_core::{CallError, Clock, Duration, Instant, ManualClock, Phase};

#[test]
fn the_built_in_configuration_runs_the_outage_through_every_composite() {
    let (cfg, breakers) = config::build(config::DEFAULT_CONFIG).unwrap();
    let clock = ManualClock::new(Instant::ZERO);
    assert_eq!(
        config::run(&cfg, &breakers, &clock),
        [
            "ladder: 2 attempts, stopped: Exhausted; search is open",
            "router: search served by search-mirror",
            "tower: refused while open: true",
            "after 10000 ms: probe succeeded; search is closed",
            "chain: search down, turn served by search-mirror",
        ]
    );
    // Nothing else holds the breakers: dropping the map frees them (no leak, no static).
    let search = std::sync::Arc::downgrade(&breakers["search"]);
    drop(breakers);
    assert!(search.upgrade().is_none());
}

#[test]
fn a_policy_from_the_file_is_the_breakers_policy() {
    let text = config::DEFAULT_CONFIG.replace("\"cooldown_ms\": 10000", "\"cooldown_ms\": 20000");
    let (cfg, breakers) = config::build(&text).unwrap();
    assert_eq!(breakers["search"].policy().cooldown().as_millis(), 20_000);
    let lines = config::run(&cfg, &breakers, &ManualClock::new(Instant::ZERO));
    assert_eq!(lines[3], "after 20000 ms: probe succeeded; search is closed");
}

#[test]
fn a_bad_configuration_is_an_error_naming_the_problem() {
    let unknown = config::DEFAULT_CONFIG.replace("[\"search-mirror\"]", "[\"search-backup\"]");
    let e = config::build(&unknown).unwrap_err();
    assert!(e.contains("unknown tool \"search-backup\""), "{e}");
    let bad_policy = config::DEFAULT_CONFIG.replace("\"trip\": 2", "\"trip\": 0");
    let e = config::build(&bad_policy).unwrap_err();
    assert!(e.starts_with("configuration: "), "{e}");
    assert!(e.contains("trip"), "{e}");
    assert!(config::build("{not json").unwrap_err().starts_with("configuration: "));
}

#[derive(Debug)]
struct Down;
impl breaker_core::Classify for Down {}

#[test]
fn a_changed_configuration_reloads_the_running_breakers_keeping_their_state() {
    let (_, breakers) = config::build(config::DEFAULT_CONFIG).unwrap();
    let clock = ManualClock::new(Instant::ZERO);
    let search = &breakers["search"];
    // One strike of the two the file's policy trips on.
    let _ = search.call(&clock, || Err::<(), _>(Down));
    let text = config::DEFAULT_CONFIG.replace("\"trip\": 2", "\"trip\": 4");
    assert_eq!(
        config::reload(&breakers, &text).unwrap(),
        ["reloaded search: trip 4, cooldown 10000 ms"]
    );
    assert_eq!(search.policy().trip(), 4);
    // The strike was kept: three more trip it under the new policy, not one.
    for _ in 0..2 {
        let _ = search.call(&clock, || Err::<(), _>(Down));
        assert_eq!(search.phase(clock.now()), Phase::Closed);
    }
    let _ = search.call(&clock, || Err::<(), _>(Down));
    assert_eq!(search.phase(clock.now()), Phase::Open);
    assert_eq!(search.counters().failures, 4);

    // The same text again changes nothing.
    assert!(config::reload(&breakers, &text).unwrap().is_empty());

    // A shorter cooldown applies to the opening in progress.
    let shorter = text.replace("\"cooldown_ms\": 10000", "\"cooldown_ms\": 1000");
    config::reload(&breakers, &shorter).unwrap();
    clock.advance(Duration::from_millis(1000));
    assert!(search.call(&clock, || Ok::<_, Down>(())).is_ok());
    assert_eq!(search.phase(clock.now()), Phase::Closed);
}

#[test]
fn a_configuration_that_does_not_fit_the_running_program_changes_nothing() {
    let (_, breakers) = config::build(config::DEFAULT_CONFIG).unwrap();
    let before = *breakers["search"].policy();
    let removed = r#"{"upstreams": {"search": {"trip": 9, "cooldown_ms": 1000, "probe_lease_ms": 1000,
        "probes_to_close": 1, "backoff_multiplier": 1, "max_cooldown_ms": 1000}},
        "substitutes": [], "retries": 0}"#;
    let e = config::reload(&breakers, removed).unwrap_err();
    assert!(e.contains("the tools changed"), "{e}");
    assert!(config::reload(&breakers, "{not json").is_err());
    let bad = config::DEFAULT_CONFIG.replace("\"trip\": 2", "\"trip\": 0");
    assert!(config::reload(&breakers, &bad).is_err());
    assert_eq!(*breakers["search"].policy(), before);
    let clock = ManualClock::new(Instant::ZERO);
    assert!(!matches!(
        breakers["search"].call(&clock, || Ok::<_, Down>(())),
        Err(CallError::Refused(_))
    ));
}
