//! Breakers built at start-up from a configuration file, with no `static` and no leak: each
//! upstream's policy comes from JSON, its breaker is a `SharedBreaker` owning its policy (a
//! `LivePolicy`, so that a changed file reloads it) in an `Arc`, the health router borrows
//! them (`Tool::shared`), the tower stack holds an `Arc` clone, the retry ladder climbs
//! through one by reference, and a fallback chain owns its primary's policy. Everything is
//! dropped when `main` returns.
//!
//! ```text
//! cargo run -p examples --example config                          # the built-in configuration
//! cargo run -p examples --example config -- my-config.json
//! cargo run -p examples --example config -- my-config.json --watch  # then reload on each change
//! ```
//!
//! The program names its tools (`search`, `search-mirror`): a configuration sets their
//! policies and substitutes, and a name the program does not know is an error, not a tool.
//! With `--watch` it reads the file again every second and, when it changed, gives each
//! breaker its new policy at once, keeping its state (`SharedBreaker::reload`); a file that
//! no longer reads, or that adds or removes a tool, is reported and changes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use breaker_core::tower::CircuitBreakerLayer;
use breaker_core::{
    Backup, Classify, Clock, Duration, FallbackChain, HealthRouter, Instant, LivePolicy, ManualClock, Phase, Policy,
    RetryPolicy, Route, Row, SharedBreaker, Tool,
};
use serde::Deserialize;

/// The tools this program can call: a configuration names a subset.
pub const TOOLS: [&str; 2] = ["search", "search-mirror"];

/// The configuration file: each upstream's policy (the `serde` form of [`Policy`]), the
/// router's substitutes, and the retry ladder's attempts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Each tool's breaker policy.
    pub upstreams: BTreeMap<String, Policy>,
    /// For the `search` tool: the tools tried instead, in order, while its breaker is open.
    pub substitutes: Vec<String>,
    /// Retries after the first attempt (the ladder's).
    pub retries: u32,
}

/// The configuration used without a file.
pub const DEFAULT_CONFIG: &str = r#"{
    "upstreams": {
        "search": {"trip": 2, "cooldown_ms": 10000, "probe_lease_ms": 10000, "probes_to_close": 1,
                   "backoff_multiplier": 2, "max_cooldown_ms": 60000},
        "search-mirror": {"trip": 5, "cooldown_ms": 5000, "probe_lease_ms": 5000, "probes_to_close": 1,
                          "backoff_multiplier": 1, "max_cooldown_ms": 5000}
    },
    "substitutes": ["search-mirror"],
    "retries": 1
}"#;

/// One owned breaker per configured tool, its policy live.
pub type Breakers = BTreeMap<&'static str, Arc<SharedBreaker<(), LivePolicy>>>;

/// Reads `text`: the breakers, one per tool it configures, or why not.
pub fn build(text: &str) -> Result<(Config, Breakers), String> {
    let config: Config = serde_json::from_str(text).map_err(|e| format!("configuration: {e}"))?;
    let mut breakers = Breakers::new();
    for (name, policy) in &config.upstreams {
        let tool = known(name)?;
        let breaker = SharedBreaker::try_with_policy(LivePolicy::new(*policy))
            .map_err(|e| format!("configuration: {name}: {e}"))?;
        breakers.insert(tool, Arc::new(breaker));
    }
    for name in &config.substitutes {
        if !breakers.contains_key(known(name)?) {
            return Err(format!(
                "configuration: substitute {name:?} has no entry in \"upstreams\""
            ));
        }
    }
    if !breakers.contains_key("search") {
        return Err("configuration: \"upstreams\" has no \"search\"".into());
    }
    Ok((config, breakers))
}

/// Gives the running breakers the policies of a changed configuration `text`, at once and
/// keeping their state; returns a line per policy that changed. An error, and no change, if
/// the text does not read or configures other tools than the running ones.
pub fn reload(breakers: &Breakers, text: &str) -> Result<Vec<String>, String> {
    let config: Config = serde_json::from_str(text).map_err(|e| format!("configuration: {e}"))?;
    let mut tools = Vec::new();
    for name in config.upstreams.keys() {
        tools.push(known(name)?);
    }
    if !tools.iter().eq(breakers.keys()) {
        return Err(format!(
            "configuration: the tools changed ({tools:?}, running {:?}); restart to change them",
            breakers.keys().collect::<Vec<_>>()
        ));
    }
    // Checked before any breaker changes: these breakers keep no window.
    if let Some(name) = config.upstreams.iter().find_map(|(n, p)| p.window().map(|_| n)) {
        return Err(format!(
            "configuration: {name}: a failure-rate policy needs a breaker with a window; restart to change it"
        ));
    }
    let mut changed = Vec::new();
    for (tool, policy) in tools.into_iter().zip(config.upstreams.values()) {
        let breaker = &breakers[tool];
        if *breaker.policy() != *policy {
            breaker
                .reload(*policy)
                .map_err(|e| format!("configuration: {tool}: {e}"))?;
            changed.push(format!(
                "reloaded {tool}: trip {}, cooldown {} ms",
                policy.trip(),
                policy.cooldown().as_millis()
            ));
        }
    }
    Ok(changed)
}

/// The program's own name for `name`, or the error of a tool it does not have.
fn known(name: &str) -> Result<&'static str, String> {
    TOOLS
        .into_iter()
        .find(|t| *t == name)
        .ok_or_else(|| format!("configuration: unknown tool {name:?} (this program has {TOOLS:?})"))
}

#[derive(Debug)]
struct Down;
impl Classify for Down {}

/// A scripted outage of `search` through the ladder, the router and a tower stack, all over
/// the breakers `build` made; returns the lines it prints.
pub fn run(config: &Config, breakers: &Breakers, clock: &ManualClock) -> Vec<String> {
    let mut lines = Vec::new();
    let search = &breakers["search"];
    // The router borrows the breakers: it lives no longer than they do.
    let substitutes: Vec<Tool<'_>> = config
        .substitutes
        .iter()
        .map(|name| {
            let tool = known(name).expect("checked by build");
            Tool::shared(tool, &*breakers[tool], clock)
        })
        .collect();
    let router = HealthRouter::new([Row::new(Tool::shared("search", &**search, clock), &substitutes)]);

    // The ladder climbs through the search breaker: each failed attempt is a strike.
    let retry = RetryPolicy::new(config.retries, Duration::from_millis(100));
    let climbed = retry
        .ladder(&**search, clock)
        .sleep(|d: Duration| clock.advance(d))
        .call(|| Err::<u32, _>(Down));
    lines.push(format!(
        "ladder: {} attempts, stopped: {:?}; search is {}",
        climbed.attempts,
        climbed.stop,
        search.phase(clock.now())
    ));

    // Search is open: the router serves from its substitute.
    let served = router
        .call("search", |tool| Ok::<_, Down>(tool.name()))
        .unwrap_or("nobody");
    lines.push(format!("router: search served by {served}"));

    // A tower stack over an `Arc` clone of the same breaker refuses at once.
    let mut stack = tower::ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(Arc::clone(search), clock))
        .service(tower::service_fn(|q: &'static str| async move {
            Ok::<_, std::io::Error>(q.len())
        }));
    let refused = ready(tower::Service::call(&mut stack, "rust")).is_err();
    lines.push(format!("tower: refused while open: {refused}"));

    // After its cooldown (from the configuration), one probe closes it again.
    clock.advance(search.policy().cooldown());
    let probe = SharedBreaker::call(search, clock, || Ok::<_, Down>(()));
    lines.push(format!(
        "after {} ms: probe {}; search is {}",
        search.policy().cooldown().as_millis(),
        if probe.is_ok() { "succeeded" } else { "refused" },
        search.phase(clock.now())
    ));
    debug_assert_eq!(search.phase(clock.now()), Phase::Closed);

    // A fallback chain owning its primary's policy (the configured one for `search`),
    // with the substitutes as its backups: while the primary is down, turns go to them.
    let backups: [Backup; 1] = [Backup::new(known(&config.substitutes[0]).expect("checked by build"))];
    let policy = config.upstreams["search"];
    let chain = FallbackChain::with_policy(policy, "search", backups);
    for _ in 0..policy.trip() {
        let _ = chain.call(clock, |_| Err::<(), _>(Down));
    }
    let turn = chain.call(clock, |route| match route {
        Route::Backup { name, .. } => Ok::<_, Down>(name),
        _ => Err(Down),
    });
    lines.push(format!(
        "chain: search down, turn served by {}",
        turn.unwrap_or("nobody")
    ));
    lines
}

/// A future that is ready at once, polled once.
fn ready<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let cx = &mut std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => unreachable!("the service answers at once"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.iter().find(|a| !a.starts_with("--"));
    let watch = args.iter().any(|a| a == "--watch");
    let read = |path: &str| {
        std::fs::read_to_string(path).unwrap_or_else(|e| {
            eprintln!("config: {path}: {e}");
            std::process::exit(2)
        })
    };
    let mut text = path.map_or_else(|| DEFAULT_CONFIG.to_owned(), |p| read(p));
    let (config, breakers) = build(&text).unwrap_or_else(|e| {
        eprintln!("config: {e}");
        std::process::exit(2)
    });
    let clock = ManualClock::new(Instant::ZERO);
    for line in run(&config, &breakers, &clock) {
        println!("{line}");
    }
    let (Some(path), true) = (path, watch) else { return };
    // On a timer: the file read again each second, its policies given to the running
    // breakers when it changed.
    println!("watching {path} (Ctrl-C to stop)");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let Ok(now) = std::fs::read_to_string(path) else {
            continue;
        };
        if now == text {
            continue;
        }
        match reload(&breakers, &now) {
            Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
            Err(e) => eprintln!("config: {e} (running on as before)"),
        }
        text = now;
    }
}
