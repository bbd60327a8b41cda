//! The health router (loopctl's tools): the rules of the behaviour spec's section, one
//! test each, named after the rule.

use std::cell::Cell;

use breaker_core::router::{Misconfigured, RowReport};
use breaker_core::{
    circuit_breaker, registry, Choice, Classify, Clock, Duration, HealthRouter, Instant, ManualClock, Phase, Policy,
    Refusal, Refused, RouterError, Row, SharedBreaker, State, Tool, Verdict,
};

#[derive(Debug, PartialEq)]
struct Down;
impl Classify for Down {}
impl std::fmt::Display for Down {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("down")
    }
}

static POLICY: Policy = Policy::new(1, Duration::from_secs(30));
static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

fn at(secs: u32) -> Instant {
    Instant::from_millis(secs * 1000)
}

/// Trips `b` at `now` with one strike (trip = 1).
fn trip(b: &SharedBreaker, now: Instant) {
    b.trip(breaker_core::Reason::Predicted, now);
    assert_eq!(b.phase(now), Phase::Open);
}

/// A breaker's whole observable state: what "untouched" means.
fn snapshot(b: &SharedBreaker, now: Instant) -> (State, breaker_core::Counters) {
    (b.state(now), b.counters())
}

// Each test has its own tools, so the tests can run in parallel.
macro_rules! tools {
    ($($name:ident),*) => {
        $(static $name: SharedBreaker = SharedBreaker::new(&POLICY);)*
    };
}

#[test]
fn a_healthy_tool_is_called_itself_and_no_substitution_is_counted() {
    tools!(A, A2);
    static ROUTER: HealthRouter<1> =
        HealthRouter::new([Row::new(Tool::new("a", &A, &CLOCK), &[Tool::new("a2", &A2, &CLOCK)])]);
    let served = ROUTER.call("a", |t| Ok::<_, Down>(t.name())).unwrap();
    assert_eq!(served, "a");
    assert!(matches!(ROUTER.choose("a"), Some(Choice::Itself(t)) if t.name() == "a"));
    assert_eq!(
        ROUTER.report()[0],
        RowReport {
            tool: "a",
            served: 1,
            substitutions: 0,
            refusals: 0
        }
    );
}

#[test]
fn a_sick_tool_is_substituted_by_its_first_healthy_substitute_and_counted() {
    tools!(B, B2, B3);
    static ROUTER: HealthRouter<1> = HealthRouter::new([Row::new(
        Tool::new("b", &B, &CLOCK),
        &[Tool::new("b2", &B2, &CLOCK), Tool::new("b3", &B3, &CLOCK)],
    )]);
    let now = CLOCK.now();
    trip(&B, now);
    match ROUTER.choose("b") {
        Some(Choice::Substitute { asked, with, rank }) => {
            assert_eq!((asked.name(), with.name(), rank), ("b", "b2", 0));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ROUTER.call("b", |t| Ok::<_, Down>(t.name())).unwrap(), "b2");
    // b2 sick too: b3, the next in order.
    trip(&B2, now);
    assert_eq!(ROUTER.call("b", |t| Ok::<_, Down>(t.name())).unwrap(), "b3");
    let r = ROUTER.report()[0];
    assert_eq!((r.served, r.substitutions, r.refusals), (2, 2, 0));
    // The sick tool's breaker counted no skip: the router never knocked on its gate.
    assert_eq!(B.counters().skips, 0);
}

#[test]
fn nothing_healthy_gives_the_soft_refusal() {
    tools!(C, C2);
    static ROUTER: HealthRouter<1> =
        HealthRouter::new([Row::new(Tool::new("c", &C, &CLOCK), &[Tool::new("c2", &C2, &CLOCK)])]);
    let now = CLOCK.now();
    trip(&C, now);
    trip(&C2, now);
    let called = Cell::new(false);
    let err = ROUTER
        .call("c", |_| {
            called.set(true);
            Ok::<_, Down>(())
        })
        .unwrap_err();
    assert!(!called.get());
    assert_eq!(err, RouterError::Unavailable { tool: "c" });
    assert_eq!(err.to_string(), "tool temporarily unavailable: circuit breaker open");
    assert!(matches!(ROUTER.choose("c"), Some(Choice::Unavailable(t)) if t.name() == "c"));
    assert_eq!(ROUTER.report()[0].refusals, 1);
    // The refusal prints without `Down: Display`, through the one question.
    assert!(err.is_refused());
    assert_eq!(err.refusal().unwrap().to_string(), "circuit breaker open: call refused");
    assert!(!RouterError::Inner(Down).is_refused());
    assert_eq!(
        ROUTER.call("nope", |_| Ok::<_, Down>(())),
        Err(RouterError::UnknownTool)
    );
    assert!(ROUTER.choose("nope").is_none());
}

#[test]
fn it_never_consumes_the_probe_of_a_tool_it_does_not_call() {
    tools!(D, D2, D3);
    static ROUTER: HealthRouter<1> = HealthRouter::new([Row::new(
        Tool::new("d", &D, &CLOCK_D),
        &[Tool::new("d2", &D2, &CLOCK_D), Tool::new("d3", &D3, &CLOCK_D)],
    )]);
    static CLOCK_D: ManualClock = ManualClock::new(Instant::ZERO);
    // All three tripped; d's cooldown runs longest, d2 and d3 are due a probe.
    trip(&D2, at(0));
    trip(&D3, at(0));
    trip(&D, at(10));
    CLOCK_D.set(at(30));
    let before = [&D, &D2, &D3].map(|b| snapshot(b, at(30)));
    assert!(D2.would_allow(at(30)) && D3.would_allow(at(30)) && !D.would_allow(at(30)));

    // Choosing, however often, takes nothing from anyone.
    for _ in 0..5 {
        assert!(matches!(ROUTER.choose("d"), Some(Choice::Substitute { with, .. }) if with.name() == "d2"));
    }
    assert_eq!([&D, &D2, &D3].map(|b| snapshot(b, at(30))), before);

    // Calling takes d2's probe (d2 is called) and nobody else's: d3 still has its probe
    // to give, and d was not even knocked on.
    ROUTER
        .call("d", |t| {
            assert_eq!(t.name(), "d2");
            assert_eq!(
                D2.state(at(30)),
                State::HalfOpen {
                    probing: true,
                    streak: 0
                }
            );
            assert_eq!(
                snapshot(&D3, at(30)),
                before[2],
                "d3's probe is untouched while d2 is called"
            );
            Err::<(), _>(Down)
        })
        .unwrap_err();
    assert_eq!(snapshot(&D, at(30)), before[0]);
    assert_eq!(snapshot(&D3, at(30)), before[2]);
    assert_eq!(D3.counters().probes, 0);

    // d2's probe failed and re-opened it: now d3 is called, with its own probe.
    assert_eq!(ROUTER.call("d", |t| Ok::<_, Down>(t.name())).unwrap(), "d3");
    assert_eq!(D3.counters().probes, 1);
    assert_eq!(D3.phase(at(30)), Phase::Closed);
    assert_eq!(D.counters().probes, 0);
}

#[test]
fn a_tool_whose_probe_is_out_is_passed_over_for_its_substitute() {
    tools!(E, E2);
    static ROUTER: HealthRouter<1> = HealthRouter::new([Row::new(
        Tool::new("e", &E, &CLOCK_E),
        &[Tool::new("e2", &E2, &CLOCK_E)],
    )]);
    static CLOCK_E: ManualClock = ManualClock::new(Instant::ZERO);
    trip(&E, at(0));
    CLOCK_E.set(at(30));
    // Another caller takes e's probe and is still out: e's oracle now says no, so the
    // router goes straight to e2.
    let other = E.try_acquire(&CLOCK_E).unwrap();
    assert!(other.is_probe());
    assert_eq!(ROUTER.call("e", |t| Ok::<_, Down>(t.name())).unwrap(), "e2");
    assert_eq!(E.counters().skips, 0);
    other.success();
    assert_eq!(ROUTER.call("e", |t| Ok::<_, Down>(t.name())).unwrap(), "e");
}

/// A clock that reads 30 s, then 29 s, then 30 s...: between the router's oracle and its
/// gate the answer changes, as when another caller takes the probe in between.
struct Flicker(std::sync::atomic::AtomicU32);
impl Clock for Flicker {
    fn now(&self) -> Instant {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        at(if n.is_multiple_of(2) { 30 } else { 29 })
    }
}

#[test]
fn a_gate_refusing_what_its_oracle_allowed_an_instant_before_moves_on_to_the_next_candidate() {
    tools!(G, G2);
    static FLICKER: Flicker = Flicker(std::sync::atomic::AtomicU32::new(0));
    static ROUTER: HealthRouter<1> =
        HealthRouter::new([Row::new(Tool::new("g", &G, &FLICKER), &[Tool::new("g2", &G2, &CLOCK)])]);
    trip(&G, at(0));
    assert_eq!(ROUTER.call("g", |t| Ok::<_, Down>(t.name())).unwrap(), "g2");
    // The refusal took nothing: g is still open, its probe still to give, one skip counted.
    assert_eq!(G.phase(at(29)), Phase::Open);
    assert_eq!((G.counters().probes, G.counters().skips), (0, 1));
    assert_eq!(ROUTER.report()[0].substitutions, 1);
}

#[test]
fn the_called_tools_outcome_goes_to_its_own_breaker_with_its_verdict() {
    tools!(F, F2);
    static ROUTER: HealthRouter<1> =
        HealthRouter::new([Row::new(Tool::new("f", &F, &CLOCK), &[Tool::new("f2", &F2, &CLOCK)])]);
    let neutral = ROUTER.call_classified("f", |_| Err::<(), _>(Down), |_| Verdict::Neutral);
    assert_eq!(neutral, Err(RouterError::Inner(Down)));
    assert_eq!(F.phase(CLOCK.now()), Phase::Closed, "neutral: nothing");
    ROUTER.call("f", |_| Err::<(), _>(Down)).unwrap_err();
    assert_eq!(F.phase(CLOCK.now()), Phase::Open);
    assert_eq!(F.counters().failures, 1);
    ROUTER.call("f", |_| Err::<(), _>(Down)).unwrap_err();
    assert_eq!(
        (F.counters().failures, F2.counters().failures),
        (1, 1),
        "f2's own breaker"
    );
}

// ---- tools from the registry --------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum ToolError {
    Down,
    Refused,
}
impl Classify for ToolError {}
impl From<Refused> for ToolError {
    fn from(_: Refused) -> Self {
        ToolError::Refused
    }
}

static REGISTRY_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
static GEOCODE_UP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

#[circuit_breaker(name = "router-test/geocode", trip = 1, cooldown = "30s", clock = REGISTRY_CLOCK)]
fn geocode(place: &str) -> Result<String, ToolError> {
    if GEOCODE_UP.load(std::sync::atomic::Ordering::Relaxed) {
        Ok(format!("geocode({place})"))
    } else {
        Err(ToolError::Down)
    }
}

#[circuit_breaker(name = "router-test/geocode-cache", trip = 1, cooldown = "30s", clock = REGISTRY_CLOCK)]
fn geocode_cache(place: &str) -> Result<String, ToolError> {
    Ok(format!("cache({place})"))
}

static STATIC_MAPS: SharedBreaker = SharedBreaker::new(&POLICY);
breaker_core::register!(STATIC_MAPS, "router-test/maps", REGISTRY_CLOCK);

static GEO: HealthRouter<2> = HealthRouter::new([
    Row::new(
        Tool::registered("router-test/geocode"),
        &[Tool::registered("router-test/geocode-cache")],
    ),
    Row::new(
        Tool::registered("router-test/maps"),
        &[Tool::registered("router-test/not-registered")],
    ),
]);

fn run(tool: &breaker_core::Tool, place: &str) -> Result<String, ToolError> {
    match tool.name() {
        "router-test/geocode" => geocode(place),
        "router-test/geocode-cache" => geocode_cache(place),
        other => panic!("{other}"),
    }
}

#[test]
fn registry_entries_by_name_are_routed_and_self_gated_functions_keep_their_own_probe() {
    assert_eq!(
        run(GEO.select("router-test/geocode").unwrap(), "oslo").unwrap(),
        "geocode(oslo)"
    );
    GEOCODE_UP.store(false, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        run(GEO.select("router-test/geocode").unwrap(), "oslo"),
        Err(ToolError::Down)
    );
    // Tripped: the cache stands in.
    assert_eq!(
        run(GEO.select("router-test/geocode").unwrap(), "oslo").unwrap(),
        "cache(oslo)"
    );
    // After the cooldown the function's own gate hands its own call the probe: `select`
    // took nothing from it.
    REGISTRY_CLOCK.set(at(30));
    GEOCODE_UP.store(true, std::sync::atomic::Ordering::Relaxed);
    let entry = registry::get("router-test/geocode").unwrap();
    assert_eq!(entry.state().phase(), Phase::Open);
    assert_eq!(
        run(GEO.select("router-test/geocode").unwrap(), "oslo").unwrap(),
        "geocode(oslo)"
    );
    assert_eq!(entry.state().phase(), Phase::Closed);
    let r = GEO.report()[0];
    assert_eq!((r.served, r.substitutions, r.refusals), (4, 1, 0));
}

#[test]
fn check_names_every_registry_name_that_does_not_resolve() {
    assert_eq!(
        GEO.check(),
        Err(Misconfigured {
            name: "router-test/not-registered",
            error: registry::LookupError::NotFound
        })
    );
    assert_eq!(
        GEO.check().unwrap_err().to_string(),
        "health router tool `router-test/not-registered`: no circuit breaker is registered under this name"
    );
    // An unresolved substitute is never chosen: with "maps" tripped, nothing is healthy.
    STATIC_MAPS.trip(breaker_core::Reason::Predicted, REGISTRY_CLOCK.now());
    assert_eq!(
        GEO.call("router-test/maps", |_| Ok::<_, Down>(())),
        Err(RouterError::Unavailable {
            tool: "router-test/maps"
        })
    );
}

// ---- an annotated function routed through `call` ------------------------------------------

static TRAP_UP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
static TRAP_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[circuit_breaker(name = "router-test/lookup", trip = 2, cooldown = "30s", clock = REGISTRY_CLOCK_2)]
fn lookup(place: &str) -> Result<String, ToolError> {
    TRAP_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if TRAP_UP.load(std::sync::atomic::Ordering::Relaxed) {
        Ok(format!("lookup({place})"))
    } else {
        Err(ToolError::Down)
    }
}

#[circuit_breaker(name = "router-test/lookup-cache", trip = 2, cooldown = "30s", clock = REGISTRY_CLOCK_2)]
fn lookup_cache(place: &str) -> Result<String, ToolError> {
    Ok(format!("cache({place})"))
}

static REGISTRY_CLOCK_2: ManualClock = ManualClock::new(Instant::ZERO);

static LOOKUP: HealthRouter<1> = HealthRouter::new([Row::new(
    Tool::registered("router-test/lookup"),
    &[Tool::registered("router-test/lookup-cache")],
)]);

fn route(place: &str) -> Result<String, RouterError<ToolError>> {
    LOOKUP.call("router-test/lookup", |tool| match tool.name() {
        "router-test/lookup" => lookup(place),
        "router-test/lookup-cache" => lookup_cache(place),
        other => panic!("{other}"),
    })
}

#[test]
fn call_over_an_annotated_function_counts_each_outcome_once_and_leaves_it_its_own_probe() {
    let entry = registry::get("router-test/lookup").unwrap();
    assert!(entry.gates_itself());
    assert!(LOOKUP.rows()[0].tool().gates_itself());
    assert!(!registry::get("router-test/maps").unwrap().gates_itself());

    assert_eq!(route("oslo").unwrap(), "lookup(oslo)");
    TRAP_UP.store(false, std::sync::atomic::Ordering::Relaxed);
    // trip = 2: the first failure is one strike, not two.
    assert_eq!(route("oslo"), Err(RouterError::Inner(ToolError::Down)));
    assert_eq!(entry.state(), State::Closed { strikes: 1 });
    assert_eq!(route("oslo"), Err(RouterError::Inner(ToolError::Down)));
    assert_eq!(entry.state().phase(), Phase::Open);
    assert_eq!(entry.counters().trips, 1);

    // Open: the cache serves and the function is not called.
    let before = TRAP_CALLS.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(route("oslo").unwrap(), "cache(oslo)");
    assert_eq!(TRAP_CALLS.load(std::sync::atomic::Ordering::Relaxed), before);

    // After the cooldown the router's call is the function's own probe: it closes.
    REGISTRY_CLOCK_2.set(at(30));
    TRAP_UP.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(route("oslo").unwrap(), "lookup(oslo)");
    assert_eq!(entry.state().phase(), Phase::Closed);
    assert_eq!(entry.counters().probes, 1);
    assert_eq!(entry.counters().trips, 1);
    let cache = registry::get("router-test/lookup-cache").unwrap();
    assert_eq!(cache.state().phase(), Phase::Closed);
    let r = LOOKUP.report()[0];
    assert_eq!((r.served, r.substitutions, r.refusals), (5, 1, 0));
}

// ---- an annotated function's entry given as a borrowed gate --------------------------------

static REGISTRY_CLOCK_3: ManualClock = ManualClock::new(Instant::ZERO);

#[circuit_breaker(name = "router-test/borrowed", trip = 1, cooldown = "30s", clock = REGISTRY_CLOCK_3)]
fn borrowed(place: &str) -> Result<String, ToolError> {
    Ok(format!("borrowed({place})"))
}

#[test]
fn a_self_gating_entry_lent_to_the_router_and_called_itself_counts_no_substitution() {
    tools!(STANDBY);
    let entry = registry::get("router-test/borrowed").unwrap();
    let substitutes = [Tool::shared("standby", &STANDBY, &CLOCK)];
    let router = HealthRouter::new([Row::new(
        Tool::shared("router-test/borrowed", entry, &REGISTRY_CLOCK_3),
        &substitutes,
    )]);
    assert!(router.rows()[0].tool().gates_itself());
    assert_eq!(
        router.call("router-test/borrowed", |_| borrowed("oslo")).unwrap(),
        "borrowed(oslo)"
    );
    let r = router.report()[0];
    assert_eq!((r.served, r.substitutions, r.refusals), (1, 0, 0));
    assert_eq!(snapshot(&STANDBY, at(0)), snapshot(&SharedBreaker::new(&POLICY), at(0)));
}

#[circuit_breaker(name = "router-test/lent-standby", trip = 1, cooldown = "30s", clock = REGISTRY_CLOCK_3)]
fn lent_standby(place: &str) -> Result<String, ToolError> {
    Ok(format!("standby({place})"))
}

#[test]
fn a_self_gating_entry_lent_as_a_substitute_counts_its_substitution() {
    tools!(MAIN);
    let entry = registry::get("router-test/lent-standby").unwrap();
    let substitutes = [Tool::shared("router-test/lent-standby", entry, &REGISTRY_CLOCK_3)];
    let router = HealthRouter::new([Row::new(Tool::shared("main", &MAIN, &CLOCK), &substitutes)]);
    trip(&MAIN, CLOCK.now());
    let served = router.call("main", |tool| match tool.name() {
        "router-test/lent-standby" => lent_standby("oslo"),
        other => panic!("{other}"),
    });
    assert_eq!(served.unwrap(), "standby(oslo)");
    let r = router.report()[0];
    assert_eq!((r.served, r.substitutions, r.refusals), (1, 1, 0));
}

// ---- borrowed breakers (`Tool::shared`), and what the types say --------------------------

#[test]
fn borrowed_tools_count_a_substitution_only_when_a_substitute_serves() {
    tools!(FIRST, SECOND);
    let substitutes = [Tool::shared("second", &SECOND, &CLOCK)];
    let router = HealthRouter::new([Row::new(Tool::shared("first", &FIRST, &CLOCK), &substitutes)]);
    let tool = router.rows()[0].tool();
    assert!(
        !tool.gates_itself(),
        "a breaker lent to the router is gated by the router"
    );
    assert!(tool.would_allow());
    let name = |t: &Tool| t.name();
    assert_eq!(router.call("first", |t| Ok::<_, Down>(name(t))), Ok("first"));
    assert_eq!(router.report()[0].substitutions, 0);

    trip(&FIRST, CLOCK.now());
    assert!(!tool.would_allow(), "the oracle of a lent breaker is its breaker's");
    assert_eq!(router.choose("first").and_then(|c| c.tool()).map(name), Some("second"));
    assert_eq!(router.call("first", |t| Ok::<_, Down>(name(t))), Ok("second"));
    let r = router.report()[0];
    assert_eq!((r.served, r.substitutions, r.refusals), (2, 1, 0));
    assert_eq!(
        FIRST.counters().skips,
        0,
        "the open tool was not asked through its gate"
    );
}

#[test]
fn a_choice_names_the_tool_it_would_call() {
    tools!(ALONE);
    let tool = Tool::new("alone", &ALONE, &CLOCK);
    assert!(!tool.gates_itself());
    let router = HealthRouter::new([Row::new(tool, &[])]);
    let chosen = router.choose("alone").unwrap();
    assert!(matches!(chosen, Choice::Itself(_)));
    assert_eq!(chosen.tool().map(Tool::name), Some("alone"));
    trip(&ALONE, CLOCK.now());
    let chosen = router.choose("alone").unwrap();
    assert!(matches!(chosen, Choice::Unavailable(t) if t.name() == "alone"));
    assert!(chosen.tool().is_none());
}

#[test]
fn a_router_error_hands_back_the_called_tool_s_error_and_only_that() {
    use std::error::Error as _;

    assert_eq!(RouterError::Inner(Down).into_inner(), Some(Down));
    assert_eq!(RouterError::<Down>::UnknownTool.into_inner(), None);
    assert_eq!(RouterError::<Down>::Unavailable { tool: "x" }.into_inner(), None);
    let io = RouterError::Inner(std::io::Error::other("i/o"));
    assert_eq!(io.source().map(ToString::to_string).as_deref(), Some("i/o"));
    assert!(RouterError::<std::io::Error>::UnknownTool.source().is_none());
}

#[test]
fn tools_and_routers_debug_with_their_names_sources_and_counts() {
    tools!(OWN, LENT);
    let substitutes = [
        Tool::shared("lent", &LENT, &CLOCK),
        Tool::registered("router-test/geocode-cache"),
    ];
    let router = HealthRouter::new([Row::new(Tool::new("own", &OWN, &CLOCK), &substitutes)]);
    assert_eq!(
        format!("{:?}", substitutes),
        r#"[Tool { name: "lent", source: "borrowed" }, Tool { name: "router-test/geocode-cache", source: "registry" }]"#
    );
    router.call("own", |_| Ok::<_, Down>(())).unwrap();
    let text = format!("{router:?}");
    assert!(
        text.starts_with(r#"HealthRouter { rows: [Row { tool: Tool { name: "own", source: "static" }"#),
        "{text}"
    );
    assert!(text.contains("report: [RowReport {"), "{text}");
    assert!(text.contains("served: 1"), "{text}");
}
