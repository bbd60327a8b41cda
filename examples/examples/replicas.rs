//! Three replicas, one breaker: the outage demo's run with three replicas calling the same
//! upstream, their breaker's state shared through Redis (trip after 3 strikes, cooldown 4
//! ticks, one call per replica per tick, one tick = one millisecond of a manual clock the
//! replicas share). Act one is the 503 outage; act two the same run with Redis killed
//! mid-way and started again, empty. Each replica prints its own table.
//!
//! The demo starts its own `redis-server` (from `BREAKER_REDIS_SERVER`, or `redis-server`
//! on the `PATH`) on a free loopback port, with no persistence, and says so if there is
//! none.
//!
//! ```text
//! cargo run -p examples --example replicas
//! ```

use std::fmt::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use breaker_core::{Breaker, Classify, Duration, Instant, ManualClock, Phase, Policy};
use breaker_redis::{Config, LinkEvent, RedisBreaker, RedisLink, Resync};

#[path = "../../tests/src/redis_server.rs"]
#[allow(dead_code)] // The demo uses the server, not the tests' helpers around it.
mod redis_server;

static POLICY: Policy = Policy::new(3, Duration::from_millis(4));
/// The time every replica reads: the demo moves it one tick at a time.
static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
const REPLICAS: [&str; 3] = ["a", "b", "c"];
const TICKS: u32 = 16;
const OUTAGE: std::ops::RangeInclusive<u32> = 4..=9;

#[derive(Debug)]
struct Unavailable;
impl Classify for Unavailable {}

fn upstream(tick: u32) -> Result<(), Unavailable> {
    if OUTAGE.contains(&tick) {
        Err(Unavailable)
    } else {
        Ok(())
    }
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Closed => "closed",
        Phase::Open => "open",
        Phase::HalfOpen => "half-open",
    }
}

/// One replica: its link to Redis, its breaker, and its table.
struct Replica {
    link: RedisLink,
    breaker: RedisBreaker,
    rows: Vec<String>,
    failures: u32,
    probes: u32,
    local_probes: u32,
}

/// What the links report, with the replica and tick it happened at.
type Events = Arc<Mutex<Vec<String>>>;

fn replica(name: &'static str, url: &str, key: &str, events: &Events) -> Replica {
    let events = events.clone();
    let config = Config::new()
        .shared_clock(&CLOCK)
        // The demo refreshes by hand between calls, so every run prints the same.
        .refresh(StdDuration::from_secs(3600))
        .retry(StdDuration::from_secs(3600))
        .timeout(StdDuration::from_secs(2))
        .log(move |e| {
            let text = match e {
                LinkEvent::Unreachable { .. } => "redis unreachable: on its own breaker from here",
                LinkEvent::Resynchronised {
                    how: Resync::Created, ..
                } => "redis back, empty: it takes this replica's state",
                LinkEvent::Resynchronised {
                    how: Resync::Pushed, ..
                } => "redis back: it takes this replica's state",
                LinkEvent::Resynchronised { .. } => "redis back: this replica takes its state",
                _ => "redis: something unexpected",
            };
            events.lock().unwrap().push(format!("{name}|{text}"));
        });
    let link = RedisLink::open(url, config).expect("a loopback URL");
    let breaker = link.breaker(key, &POLICY);
    Replica {
        link,
        breaker,
        rows: Vec::new(),
        failures: 0,
        probes: 0,
        local_probes: 0,
    }
}

/// Every outcome handed to any link has landed, and every link has read Redis since.
fn settle(replicas: &[Replica]) {
    for _ in 0..2 {
        for r in replicas {
            r.link.refresh();
        }
    }
}

/// One act: every tick, each replica calls once, in order, in step with the others.
fn act(server: &mut redis_server::RedisServer, key: &str, outage_of_redis: Option<(u32, u32)>) -> Vec<Replica> {
    let events: Events = Arc::default();
    CLOCK.set(Instant::ZERO);
    let mut replicas: Vec<Replica> = REPLICAS
        .iter()
        .map(|n| replica(n, &server.url(), key, &events))
        .collect();
    for tick in 0..TICKS {
        CLOCK.set(Instant::from_millis(tick));
        if let Some((kill, restart)) = outage_of_redis {
            if tick == kill {
                server.stop();
            }
            if tick == restart {
                server.restart();
            }
        }
        for i in 0..replicas.len() {
            settle(&replicas);
            for e in events.lock().unwrap().drain(..) {
                let (name, text) = e.split_once('|').unwrap();
                let r = replicas.iter_mut().zip(REPLICAS).find(|(_, n)| *n == name).unwrap().0;
                r.rows.push(format!("      {:<6} {:<11} {text}", tick, ""));
            }
            let r = &mut replicas[i];
            // The call: refused, or made (as the probe or not, granted by whom) with its result.
            let call = r.breaker.try_acquire().ok().map(|permit| {
                let (probe, local) = (permit.is_probe(), permit.is_local());
                let result = upstream(tick);
                match &result {
                    Ok(()) => permit.success(),
                    Err(e) => permit.failure(e.verdict()),
                }
                r.probes += u32::from(probe);
                r.local_probes += u32::from(probe && local);
                r.failures += u32::from(result.is_err());
                (probe, local, result.is_ok())
            });
            settle(&replicas);
            let after = replicas[i].breaker.phase();
            let what = match call {
                None => "call SKIPPED - not sent, not billed, not waited on".to_string(),
                Some((probe, local, ok)) => {
                    let whose = if local { " (its own breaker: redis away)" } else { "" };
                    match (probe, ok) {
                        (true, true) => format!("probe SUCCEEDED - breaker closes{whose}"),
                        (true, false) => format!("probe FAILED - breaker re-opens{whose}"),
                        (false, true) => "ok".to_string(),
                        (false, false) => {
                            let trips = if after == Phase::Open { " - breaker TRIPS" } else { "" };
                            format!("failed (retryable: true){trips}")
                        }
                    }
                }
            };
            replicas[i]
                .rows
                .push(format!("      {:<6} {:<11} {what}", tick, phase_name(after)));
        }
    }
    replicas
}

fn print_act(out: &mut String, title: &str, replicas: &[Replica]) {
    writeln!(out, "  {title}").unwrap();
    for (r, name) in replicas.iter().zip(REPLICAS) {
        writeln!(out, "    replica {name}").unwrap();
        writeln!(out, "      {:<6} {:<11} what happened", "tick", "breaker").unwrap();
        for row in &r.rows {
            writeln!(out, "{row}").unwrap();
        }
    }
    writeln!(out).unwrap();
}

/// The same calls through three breakers of their own: (calls that felt the outage, probes).
fn independent() -> (u32, u32) {
    let mut breakers = [Breaker::new(POLICY), Breaker::new(POLICY), Breaker::new(POLICY)];
    let (mut failures, mut probes) = (0, 0);
    for tick in 0..TICKS {
        for b in &mut breakers {
            let now = Instant::from_millis(tick);
            if let Ok(permit) = b.try_acquire(now) {
                probes += u32::from(permit.is_probe());
                match upstream(tick) {
                    Ok(()) => b.record(permit, breaker_core::Outcome::Success, now),
                    Err(e) => {
                        failures += 1;
                        b.record(permit, breaker_core::Outcome::Error(e.verdict()), now);
                    }
                }
            }
        }
    }
    (failures, probes)
}

/// The whole demo's text, with Redis from `binary`.
pub fn render(binary: PathBuf) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "THREE REPLICAS, ONE BREAKER (trip after {} strikes, cooldown {} ticks; the state in Redis)",
        POLICY.trip(),
        POLICY.cooldown().as_millis()
    )
    .unwrap();
    writeln!(
        out,
        "(the demo runs its own redis-server on a loopback port, with no persistence)"
    )
    .unwrap();
    writeln!(out).unwrap();
    let mut server = redis_server::RedisServer::start(binary);

    let one = act(&mut server, "breaker:demo", None);
    print_act(
        &mut out,
        "act one: 503s from tick 4 to 9, each replica calls once a tick",
        &one,
    );
    let felt: u32 = one.iter().map(|r| r.failures).sum();
    let probes: u32 = one.iter().map(|r| r.probes).sum();
    let skips: u32 = one.iter().map(|r| r.breaker.counters().skips).sum();
    let (alone_felt, alone_probes) = independent();
    let lines = [
        format!("one breaker for the three: {felt} calls felt the outage (one strike from each replica"),
        format!(
            "tripped it for all), {skips} were skipped, and {} in all found the way back.",
            plural(probes, "probe")
        ),
        format!("three breakers of their own would have let {alone_felt} calls into the outage (three"),
        format!("strikes each) and spent {alone_probes} probes."),
    ];
    for line in lines {
        writeln!(out, "  {line}").unwrap();
    }
    writeln!(out).unwrap();

    // Act two: a key of its own, Redis killed at tick 6 and started again, empty, at tick 11.
    let two = act(&mut server, "breaker:demo:redis-killed", Some((6, 11)));
    print_act(
        &mut out,
        "act two: the same, with Redis killed at tick 6 and started again, empty, at tick 11",
        &two,
    );
    let local: u32 = two.iter().map(|r| r.local_probes).sum();
    let shared: u32 = two.iter().map(|r| r.probes - r.local_probes).sum();
    let lines = [
        "no call waited on the dead Redis and none failed because of it: each replica fell".to_string(),
        format!("back to its own breaker, and each spent a probe of its own ({local} in all, while apart)."),
        "back at tick 11 the first replica wrote its state into the empty Redis and the".to_string(),
        format!(
            "others took it: {} through the shared breaker, and no second one.",
            plural(shared, "probe")
        ),
    ];
    for line in lines {
        writeln!(out, "  {line}").unwrap();
    }
    drop(server);
    out
}

fn plural(n: u32, what: &str) -> String {
    match n {
        1 => format!("one {what}"),
        n => format!("{n} {what}s"),
    }
}

/// `BREAKER_REDIS_SERVER`, or `redis-server` on the `PATH`.
fn find_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BREAKER_REDIS_SERVER").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| PathBuf::from(dir).join("redis-server"))
        .find(|p| p.is_file())
}

#[allow(dead_code)] // The output test includes this file as a module and calls `render`.
fn main() {
    match find_server() {
        Some(binary) => print!("{}", render(binary)),
        None => println!(
            "this demo starts its own Redis, and there is no redis-server here: install it \
             (Debian: apt-get install redis-server) or set BREAKER_REDIS_SERVER=/path/to/redis-server"
        ),
    }
}
