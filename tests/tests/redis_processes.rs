//! Three replica processes hammer one breaker through three upstream outages, with Redis
//! killed in the middle of the second and started again empty. Asserts, from what each
//! process reports:
//!
//! - exactly one probe per half-open window across all replicas, whenever Redis decided
//!   (probes never overlap, and after a failed one the next waits out the cooldown); probes
//!   the replicas' local breakers granted happen only while Redis was away;
//! - a trip reaches every other replica within the stated bound (`Config::trip_bound`), also
//!   when the others are idle and learn it from Redis alone (the third outage);
//! - nothing wedged: Redis's loss and return were reported once per replica, every replica
//!   follows Redis again at the end, closed, with every call of the last 300 ms served.

use std::process::{Command, Stdio};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_redis::value;
use redis::Commands;
use tests::redis_server::{server_binary, RedisServer};
use tests::replica::{OUTAGES, POLICY, QUIET, RUN_MS};

const REPLICAS: usize = 3;
/// `Config::trip_bound` of the replicas (`src/bin/redis_replica.rs`): a refresh interval of
/// 50 ms plus twice their 500 ms timeout.
const BOUND_MS: i64 = 50 + 2 * 500;
/// Leeway for the replicas' shared clocks (each within its round trip of Redis's) and for
/// processes descheduled on a loaded machine.
const EPS_MS: i64 = 100;
/// Redis is killed and started again (empty) at these instants of the run.
const KILL_MS: i64 = 2_800;
const RESTART_MS: i64 = 3_300;

#[derive(Debug, Clone, Copy)]
struct Probe {
    replica: usize,
    t0: i64,
    t1: i64,
    ok: bool,
    shared: bool,
}

#[derive(Debug, Default)]
struct Report {
    probes: Vec<Probe>,
    phases: Vec<(i64, String)>,
    events: Vec<String>,
    summary: String,
}

fn field<'a>(summary: &'a str, name: &str) -> &'a str {
    summary
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name} in {summary:?}"))
}

fn parse(replica: usize, out: &str) -> Report {
    let mut r = Report::default();
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.first().copied() {
            Some("probe") => r.probes.push(Probe {
                replica,
                t0: w[1].parse().unwrap(),
                t1: w[2].parse().unwrap(),
                ok: w[3] == "ok",
                shared: w[4] == "shared",
            }),
            Some("phase") => r.phases.push((w[1].parse().unwrap(), w[2].to_owned())),
            Some("event") => r.events.push(line.to_owned()),
            Some("summary") => r.summary = line.to_owned(),
            _ => panic!("replica {replica}: unexpected line {line:?}"),
        }
    }
    r
}

/// The phase `phases` shows at `t`.
fn phase_at(phases: &[(i64, String)], t: i64) -> &str {
    phases
        .iter()
        .rev()
        .find(|(at, _)| *at <= t)
        .map_or("closed", |(_, p)| p)
}

#[test]
fn three_replica_processes_share_one_breaker_through_outages_and_a_redis_restart() {
    let Some(binary) = server_binary("three_replica_processes_share_one_breaker_through_outages_and_a_redis_restart")
    else {
        return;
    };
    let mut server = RedisServer::start(binary);
    let key = "breaker-test:processes";
    // The run starts 1.5 s from now on Redis's clock, which the replicas follow.
    let mut con = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut con).unwrap();
    let asked = StdInstant::now();
    let start_ms = secs * 1000 + micros / 1000 + 1_500;
    let rel = || (secs * 1000 + micros / 1000) as i64 + asked.elapsed().as_millis() as i64 - start_ms as i64;
    let children: Vec<_> = (0..REPLICAS)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_redis_replica"))
                .args([
                    server.url(),
                    key.to_owned(),
                    (start_ms as u32).to_string(),
                    i.to_string(),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("a replica process")
        })
        .collect();

    let sleep_until = |t: i64| {
        let left = t - rel();
        if left > 0 {
            std::thread::sleep(StdDuration::from_millis(left as u64));
        }
    };
    sleep_until(KILL_MS);
    server.stop();
    sleep_until(RESTART_MS);
    server.restart();

    let reports: Vec<Report> = children
        .into_iter()
        .enumerate()
        .map(|(i, child)| {
            let out = child.wait_with_output().expect("the replica's report");
            assert!(out.status.success(), "replica {i} failed: {:?}", out.status);
            parse(i, &String::from_utf8_lossy(&out.stdout))
        })
        .collect();
    let all_probes: Vec<Probe> = reports.iter().flat_map(|r| r.probes.iter().copied()).collect();
    for (i, r) in reports.iter().enumerate() {
        let local = all_probes.iter().filter(|p| p.replica == i && !p.shared).count();
        eprintln!("replica {i}: {} probes ({local} local); {}", r.probes.len(), r.summary);
        for e in &r.events {
            eprintln!("replica {i}: {e}");
        }
    }

    // One probe per window across all replicas while Redis decided.
    let mut shared: Vec<Probe> = all_probes.iter().copied().filter(|p| p.shared).collect();
    shared.sort_by_key(|p| p.t0);
    assert!(shared.len() >= OUTAGES.len(), "too few probes: {shared:?}");
    let cooldown = i64::from(POLICY.cooldown().as_millis());
    for pair in shared.windows(2) {
        let (p, q) = (pair[0], pair[1]);
        assert!(q.t0 >= p.t1 - EPS_MS, "two probes at once: {p:?} and {q:?}");
        if !p.ok {
            assert!(
                q.t0 >= p.t1 + cooldown - EPS_MS,
                "a second probe in the window of a failed one: {p:?} then {q:?}"
            );
        }
    }
    // Local breakers decided only while Redis was away (and until each replica met it again).
    for p in reports.iter().flat_map(|r| &r.probes).filter(|p| !p.shared) {
        assert!(
            p.t0 >= KILL_MS - EPS_MS && p.t0 <= RESTART_MS + 1_000,
            "a local probe while Redis was up: {p:?}"
        );
    }

    // A trip reaches every other replica within the bound.
    let away = (KILL_MS - BOUND_MS - EPS_MS)..(RESTART_MS + 1_000);
    let mut worst = 0;
    let mut quiet_worst = None;
    let mut trips = 0;
    for (x, rx) in reports.iter().enumerate() {
        for w in rx.phases.windows(2) {
            let ((_, before), (t, after)) = (&w[0], &w[1]);
            if before != "closed" || after == "closed" || away.contains(t) {
                continue;
            }
            trips += 1;
            for (y, ry) in reports.iter().enumerate().filter(|&(y, _)| y != x) {
                let seen = if phase_at(&ry.phases, *t) != "closed" {
                    *t
                } else {
                    ry.phases
                        .iter()
                        .find(|(at, p)| at > t && p != "closed")
                        .map_or(i64::MAX, |(at, _)| *at)
                };
                let lag = seen - t;
                assert!(
                    lag <= BOUND_MS + EPS_MS,
                    "replica {x} tripped at {t} ms; replica {y} saw it {lag} ms later"
                );
                worst = worst.max(lag);
                if (QUIET.0..QUIET.1).contains(t) {
                    quiet_worst = Some(quiet_worst.unwrap_or(0).max(lag));
                }
            }
        }
    }
    assert!(
        trips >= REPLICAS * 2,
        "the outages tripped the breaker too rarely: {trips}"
    );
    let quiet_worst = quiet_worst.expect("replica 0 tripped the breaker alone in the third outage");
    eprintln!(
        "slowest a trip took to reach another replica: {worst} ms; to reach the idle ones: {quiet_worst} ms (bound {BOUND_MS} ms)"
    );

    // Nothing wedged.
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(field(&r.summary, "shared"), "true", "replica {i} still apart");
        assert_eq!(field(&r.summary, "phase"), "closed", "replica {i}");
        assert_eq!(
            field(&r.summary, "late_bad"),
            "0",
            "replica {i}: calls refused or failed at the end"
        );
        let unreachable = r.events.iter().filter(|e| e.contains("unreachable")).count();
        let resync = r.events.iter().filter(|e| e.contains("resynchronised")).count();
        assert_eq!((unreachable, resync), (1, 1), "replica {i}: {:?}", r.events);
    }
    let mut con = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    let stored: Vec<u8> = con.get(key).unwrap();
    let word = value::decode(&stored, value::fingerprint(&POLICY)).expect("a valid value at the end");
    assert!(
        breaker_core::WordTicket::hot(word).is_some(),
        "Redis holds a closed breaker"
    );
    assert!(rel() >= RUN_MS);
}
