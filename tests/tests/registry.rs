//! The static registry: every annotated function is listed, called or not; lookup, reset
//! and force_open by name; duplicate names reported, never merged.

use breaker_core::registry::{self, LookupError};
use breaker_core::{
    circuit_breaker, CircuitBreaker, Classify, Clock, Duration, Instant, ManualClock, Phase, Refused, State,
};

static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(1_000));

#[derive(Debug, PartialEq)]
struct Failed;
impl Classify for Failed {}
impl From<Refused> for Failed {
    fn from(_: Refused) -> Self {
        Failed
    }
}

#[circuit_breaker(clock = CLOCK)]
fn default_named() -> Result<(), Failed> {
    Ok(())
}

#[circuit_breaker(trip = 7, cooldown = "1m30s", probes = 2, backoff = 2, max_cooldown = "10m", clock = CLOCK)]
fn never_called() -> Result<(), Failed> {
    Ok(())
}

mod a {
    use super::*;
    #[circuit_breaker(name = "shared::name", clock = CLOCK)]
    pub fn first() -> Result<(), Failed> {
        Ok(())
    }
}

mod b {
    use super::*;
    #[circuit_breaker(name = "shared::name", clock = CLOCK)]
    pub fn second() -> Result<(), Failed> {
        Ok(())
    }
}

#[circuit_breaker(name = "ops::force", cooldown = "1s", clock = CLOCK)]
fn forced() -> Result<u8, Failed> {
    Ok(1)
}

#[test]
fn every_annotated_function_is_listed_even_if_never_called() {
    // Hand-built breakers registered with `register!` are listed too (tested below).
    let mut names: Vec<&str> = registry::iter()
        .map(|e| e.name())
        .filter(|n| !n.starts_with("hand::"))
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "ops::direct",
            "ops::force",
            "ops::generic",
            "ops::persist",
            "ops::through_the_trait",
            "registry::default_named",
            "registry::never_called",
            "shared::name",
            "shared::name"
        ]
    );
    let entry = registry::get("registry::never_called").unwrap();
    let policy = entry.policy();
    assert_eq!(policy.trip(), 7);
    assert_eq!(policy.cooldown(), Duration::from_secs(90));
    assert_eq!(policy.probe_lease(), Duration::from_secs(90));
    assert_eq!(policy.probes_to_close(), 2);
    assert_eq!(policy.backoff_multiplier(), 2);
    assert_eq!(policy.max_cooldown(), Duration::from_mins(10));
    let report = entry.report();
    assert_eq!(report.now, Instant::from_millis(1_000));
    assert_eq!(report.state, State::Closed { strikes: 0 });
    assert!(report.would_allow);
    assert_eq!(report.counters, breaker_core::Counters::ZERO);
    let (file, line) = entry.location();
    assert!(file.ends_with("registry.rs"), "{file}");
    assert!(line > 0);
    assert!(default_named().is_ok());
}

#[test]
fn defaults_are_the_documented_ones() {
    let p = registry::get("registry::default_named").unwrap().policy();
    assert_eq!(p.trip(), 3);
    assert_eq!(p.cooldown(), Duration::from_secs(30));
    assert_eq!(p.probe_lease(), Duration::from_secs(30));
    assert_eq!(p.probes_to_close(), 1);
    assert_eq!(p.backoff_multiplier(), 1);
    assert_eq!(p.max_cooldown(), Duration::from_secs(30));
}

#[test]
fn duplicate_names_are_reported_not_merged() {
    assert_eq!(
        registry::get("shared::name").unwrap_err(),
        LookupError::Ambiguous { count: 2 }
    );
    assert_eq!(
        registry::reset("shared::name"),
        Err(LookupError::Ambiguous { count: 2 })
    );
    assert_eq!(
        registry::force_open("shared::name"),
        Err(LookupError::Ambiguous { count: 2 })
    );
    let dups: Vec<_> = registry::duplicates().collect();
    assert_eq!(dups.len(), 1);
    assert_eq!(dups[0].name(), "shared::name");
    let err = registry::check_unique().unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("two circuit breakers are registered as `shared::name` ("),
        "{message}"
    );
    assert!(message.contains("registry.rs:"), "{message}");
    // Both functions still work, each with its own breaker.
    assert_eq!(a::first(), Ok(()));
    assert_eq!(b::second(), Ok(()));
    assert_eq!(
        LookupError::Ambiguous { count: 2 }.to_string(),
        "2 circuit breakers are registered under this name; give them distinct `name = \"...\"` arguments"
    );
}

#[test]
fn reset_and_force_open_by_name() {
    assert_eq!(registry::get("no::such").unwrap_err(), LookupError::NotFound);
    assert_eq!(registry::force_open("no::such"), Err(LookupError::NotFound));
    registry::force_open("ops::force").unwrap();
    let entry = registry::get("ops::force").unwrap();
    assert_eq!(
        entry.state(),
        State::Open {
            remaining: Duration::ZERO,
            forced: true
        }
    );
    assert!(!entry.would_allow());
    assert_eq!(forced(), Err(Failed));
    assert_eq!(entry.counters().skips, 1);
    registry::reset("ops::force").unwrap();
    assert_eq!(entry.state().phase(), Phase::Closed);
    assert_eq!(forced(), Ok(1));
}

#[circuit_breaker(name = "ops::direct", trip = 1, cooldown = "1s", clock = CLOCK)]
fn direct() -> Result<(), Failed> {
    Err(Failed)
}

#[test]
fn an_entry_hands_out_the_breaker_itself() {
    let entry = registry::get("ops::direct").unwrap();
    let breaker = entry.breaker();
    assert_eq!(breaker.policy().trip(), 1);
    assert_eq!(direct(), Err(Failed));
    assert_eq!(breaker.counters(), entry.counters());
    assert_eq!(breaker.counters().trips, 1);
    let now = entry.now();
    assert_eq!(breaker.state(now), entry.state());
    assert!(!breaker.would_allow(now));
    // The breaker's own gate, through the registry: refused while it cools down.
    assert!(breaker.try_acquire(&CLOCK).is_err());
    assert_eq!(breaker.counters().skips, 1);
    breaker.reset(now);
    let permit = breaker.try_acquire(&CLOCK).unwrap();
    permit.success();
    assert_eq!(direct(), Err(Failed));
    assert_eq!(entry.counters().trips, 2);
}

#[circuit_breaker(name = "ops::generic", trip = 2, cooldown = "1s", clock = CLOCK)]
fn generic() -> Result<(), Failed> {
    Err(Failed)
}

#[test]
fn an_entry_as_a_circuit_breaker_reports_its_breakers_counters() {
    let entry = registry::get("ops::generic").unwrap();
    assert_eq!(generic(), Err(Failed));
    assert_eq!(generic(), Err(Failed));
    let counters = CircuitBreaker::counters(&entry);
    assert_eq!((counters.failures, counters.trips), (2, 1));
    assert_eq!(counters, entry.counters());
}

#[circuit_breaker(name = "ops::persist", trip = 1, cooldown = "30s", clock = CLOCK)]
fn persisted() -> Result<(), Failed> {
    Err(Failed)
}

#[test]
fn a_function_breaker_survives_a_reboot_through_its_entry() {
    let entry = registry::get("ops::persist").unwrap();
    assert_eq!(persisted(), Err(Failed));
    let bytes = entry.breaker().snapshot(entry.now()).to_bytes();
    // A reboot: the breaker starts closed again (reset stands in for the fresh static).
    entry.reset();
    assert_eq!(entry.state(), State::Closed { strikes: 0 });
    let snapshot = breaker_core::Snapshot::from_bytes(&bytes).unwrap();
    entry.breaker().restore(&snapshot, entry.now());
    assert_eq!(
        entry.state(),
        State::Open {
            remaining: Duration::from_secs(30),
            forced: false
        }
    );
    assert_eq!(persisted(), Err(Failed));
    assert_eq!(entry.counters().skips, 1);
}

mod hand_built {
    use breaker_core::{Duration, Policy, SharedBreaker, StderrLog};

    pub static POLICY: Policy = Policy::new(2, Duration::from_secs(5));
    pub static PLAIN: SharedBreaker = SharedBreaker::new(&POLICY);
    pub static LOGGED: SharedBreaker<StderrLog> = SharedBreaker::with_observer(&POLICY, StderrLog::new("hand::logged"));
    breaker_core::register!(PLAIN, "hand::plain", super::CLOCK);
    breaker_core::register!(LOGGED, "hand::logged", super::CLOCK);
}

#[test]
fn hand_built_statics_join_the_registry_in_one_line() {
    use breaker_core::Verdict;
    let plain = registry::get("hand::plain").unwrap();
    assert!(std::ptr::addr_eq(plain.breaker(), &hand_built::PLAIN));
    assert_eq!(plain.policy().trip(), 2);
    let logged = registry::get("hand::logged").unwrap();
    // What the registry sees is the breaker itself: a trip through the static shows there.
    for _ in 0..2 {
        hand_built::LOGGED.try_acquire(&CLOCK).unwrap().failure(Verdict::Strike);
    }
    assert_eq!(logged.state().phase(), Phase::Open);
    assert!(!logged.would_allow());
    assert_eq!(logged.location().0, file!());
    logged.reset();
    assert_eq!(hand_built::LOGGED.phase(CLOCK.now()), Phase::Closed);
}

#[test]
fn a_breaker_registered_inside_a_function_is_listed_too() {
    use breaker_core::{Duration, Policy, SharedBreaker};
    static POLICY: Policy = Policy::new(1, Duration::from_secs(1));
    static LOCAL: SharedBreaker = SharedBreaker::new(&POLICY);
    breaker_core::register!(LOCAL, "hand::local", CLOCK);
    assert!(std::ptr::addr_eq(
        registry::get("hand::local").unwrap().breaker(),
        &LOCAL
    ));
}

/// A breaker of its own, on a clock of its own: the test below moves it.
static TRAIT_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[circuit_breaker(name = "ops::through_the_trait", trip = 2, cooldown = "10s", clock = TRAIT_CLOCK)]
fn through_the_trait() -> Result<(), Failed> {
    Ok(())
}

#[test]
fn an_entry_as_a_circuit_breaker_works_its_own_breaker_on_its_own_clock() {
    use breaker_core::{Outcome, Reason};
    assert_eq!(through_the_trait(), Ok(()));
    let entry = registry::get("ops::through_the_trait").unwrap();
    // Another clock, far on: the entry reads its own.
    let other = ManualClock::new(Instant::from_millis(1_000_000));
    let mut b = entry;
    for _ in 0..2 {
        let ticket = CircuitBreaker::enter(&mut b, &other).unwrap();
        CircuitBreaker::report(&mut b, ticket, Outcome::STRIKE, &other);
    }
    assert_eq!(entry.state().phase(), Phase::Open);
    assert!(!CircuitBreaker::would_allow(&b, &other));
    // The probe, abandoned: the breaker opens again rather than wait for its answer.
    TRAIT_CLOCK.advance(Duration::from_secs(10));
    assert!(CircuitBreaker::would_allow(&b, &other));
    let probe = CircuitBreaker::enter(&mut b, &other).unwrap();
    CircuitBreaker::abandon(&mut b, probe, &other);
    assert_eq!(entry.state().phase(), Phase::Open);
    // A trip through the trait, and the shadow mode read through it.
    entry.reset();
    CircuitBreaker::trip(&mut b, Reason::Predicted, Duration::from_secs(5), &other);
    assert_eq!(entry.state().phase(), Phase::Open);
    entry.reset();
    for on in [true, false] {
        entry.set_shadow(on);
        assert_eq!((entry.is_shadow(), CircuitBreaker::is_shadow(&b)), (on, on));
    }
    assert!(format!("{entry:?}").contains("ops::through_the_trait"), "{entry:?}");
}
