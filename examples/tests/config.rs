//! The `config` example: breakers, a router, a ladder and a tower stack built from a
//! configuration at start-up, with no `static` and no leak; a bad configuration is an error
//! naming the problem.

#[allow(dead_code)] // its `main` is the example's
#[path = "../examples/config.rs"]
mod config;

use breaker_core::{Instant, ManualClock};

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
