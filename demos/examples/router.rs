//! loopctl's health router: an agent asks for `web_search` every 5 s. When the tool's
//! breaker trips, the router substitutes `search_cache`; when both are sick it refuses
//! softly; when `web_search`'s cooldown is over, the router's own call is its probe and the
//! tool is back. A dashboard polls the pure oracle between requests and takes nothing.
//!
//! ```text
//! cargo run -p demos --example router
//! ```

use std::cell::Cell;
use std::fmt::Write;

use breaker_core::{
    registry, Choice, Classify, Clock, Duration, HealthRouter, Instant, ManualClock, Policy, RouterError, Row,
    SharedBreaker, State, Tool,
};

/// loopctl's tool breaker: 3 consecutive failures, 30 s cooldown, one probe success.
static TOOL_POLICY: Policy = Policy::new(3, Duration::from_secs(30));
/// The cache is quick to give up and quick to retry.
static CACHE_POLICY: Policy = Policy::new(1, Duration::from_secs(10));

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
static WEB_SEARCH: SharedBreaker = SharedBreaker::new(&TOOL_POLICY);
static SEARCH_CACHE: SharedBreaker = SharedBreaker::new(&CACHE_POLICY);
// Listed in the registry, so a dashboard sees both tools' breakers.
breaker_core::register!(WEB_SEARCH, "tools/web_search", CLOCK);
breaker_core::register!(SEARCH_CACHE, "tools/search_cache", CLOCK);

static ROUTER: HealthRouter<1> = HealthRouter::new([Row::new(
    Tool::new("web_search", &WEB_SEARCH, &CLOCK),
    &[Tool::new("search_cache", &SEARCH_CACHE, &CLOCK)],
)]);

#[derive(Debug)]
struct Timeout;
impl Classify for Timeout {} // a strike

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("timeout")
    }
}

/// Which tool is down at `t` seconds.
fn works(tool: &str, t: u32) -> bool {
    match tool {
        "web_search" => !(5..=40).contains(&t),
        _ => t != 25,
    }
}

fn brief(state: State) -> String {
    match state {
        State::Closed { strikes: 0 } => "closed".into(),
        State::Closed { strikes: 1 } => "closed (1 strike)".into(),
        State::Closed { strikes } => format!("closed ({strikes} strikes)"),
        State::Open { remaining, .. } => format!("open ({remaining} left)"),
        State::HalfOpen { .. } => "half-open".into(),
    }
}

fn states(now: Instant) -> (String, String) {
    (brief(WEB_SEARCH.state(now)), brief(SEARCH_CACHE.state(now)))
}

/// The whole demo's text.
pub fn render() -> String {
    let mut out = String::new();
    writeln!(
        out,
        "HEALTH ROUTER (web_search, substitute search_cache; web_search trips after {} failures, cooldown {}; the cache after {}, cooldown {})",
        TOOL_POLICY.trip(),
        TOOL_POLICY.cooldown(),
        CACHE_POLICY.trip(),
        CACHE_POLICY.cooldown()
    )
    .unwrap();
    writeln!(out).unwrap();
    writeln!(
        out,
        "  {:<5} {:<13} {:<52} {:<19} {:<19} note",
        "t", "called", "outcome", "web_search", "search_cache"
    )
    .unwrap();
    let mut substitutions = 0;
    for t in (0..=55).step_by(5) {
        CLOCK.set(Instant::ZERO.wrapping_add(Duration::from_secs(t)));
        let now = CLOCK.now();
        if t == 45 {
            // A dashboard polls before the request: the pure oracle, many times over.
            let before = (WEB_SEARCH.state(now), WEB_SEARCH.counters());
            let polls = (0..3)
                .filter(|_| matches!(ROUTER.choose("web_search"), Some(Choice::Itself(_))))
                .count();
            let untouched = before == (WEB_SEARCH.state(now), WEB_SEARCH.counters());
            writeln!(
                out,
                "  {:<5} dashboard polls choose(\"web_search\") {polls} times: web_search would be called; probe still untaken: {untouched}",
                format!("{t}s")
            )
            .unwrap();
        }
        let probes = [WEB_SEARCH.counters().probes, SEARCH_CACHE.counters().probes];
        let called = Cell::new("-");
        let result = ROUTER.call("web_search", |tool| {
            called.set(tool.name());
            if works(tool.name(), t) {
                Ok(())
            } else {
                Err(Timeout)
            }
        });
        let called = called.get();
        let outcome = match &result {
            Ok(()) => "ok".to_string(),
            Err(e @ (RouterError::Inner(_) | RouterError::Unavailable { .. } | RouterError::UnknownTool)) => {
                e.to_string()
            }
        };
        let report = ROUTER.report()[0];
        let mut notes = Vec::new();
        if report.substitutions > substitutions {
            substitutions = report.substitutions;
            notes.push(format!("substituted ({substitutions} so far)"));
        }
        let probed = [WEB_SEARCH.counters().probes, SEARCH_CACHE.counters().probes] != probes;
        if probed && result.is_ok() {
            notes.push(format!("the router's call was {called}'s probe: {called} is back"));
        }
        let note = notes.join("; ");
        let (web, cache) = states(now);
        let line = format!(
            "  {:<5} {called:<13} {outcome:<52} {web:<19} {cache:<19} {note}",
            format!("{t}s")
        );
        writeln!(out, "{}", line.trim_end()).unwrap();
    }
    let r = ROUTER.report()[0];
    writeln!(out).unwrap();
    writeln!(
        out,
        "  web_search was asked for {} times: {} served ({} by the substitute), {} refused softly.",
        r.served + r.refusals,
        r.served,
        r.substitutions,
        r.refusals
    )
    .unwrap();
    writeln!(
        out,
        "  web_search's breaker counted {} skips: the router chose by the pure oracle and never knocked on its gate while it was open.",
        WEB_SEARCH.counters().skips
    )
    .unwrap();
    writeln!(out, "  the registry, as a dashboard reads it:").unwrap();
    let mut entries: Vec<_> = registry::iter().filter(|e| e.name().starts_with("tools/")).collect();
    entries.sort_by_key(|e| e.name());
    for e in entries {
        let r = e.report();
        writeln!(
            out,
            "    {:<20} {:<8} failures {}, skips {}, trips {}, probes {}",
            r.name,
            brief(r.state),
            r.counters.failures,
            r.counters.skips,
            r.counters.trips,
            r.counters.probes
        )
        .unwrap();
    }
    out
}

#[allow(dead_code)] // The output test includes this file as a module and calls `render`.
fn main() {
    print!("{}", render());
}
