//! The bounded soak: replica processes (`src/bin/soak_replica.rs`), several threads each,
//! calling several breakers shared through one private Redis, each replica behind a
//! fault-injecting proxy of its own (`src/fault_proxy.rs`) that the test turns to a random
//! fault now and then (latency below and above the timeout, a blackhole, lost replies,
//! replies cut mid-frame, reset connections), with random outcomes from an upstream that
//! falls sick and recovers. The run lasts `BREAKER_SOAK_SECONDS` (60 by default), its last
//! stretch calm (no fault, a healthy upstream); every draw comes from `BREAKER_SOAK_SEED`
//! (printed; set it to replay a run's faults and outcomes).
//!
//! Every process reads one clock (the host's monotonic clock, the links' shared clock), so
//! the times compared below are exact; what a loaded host stretches is allowed for by
//! margins of a second, and each figure is reported. Checked throughout the run:
//!
//! - no call waits past `Config::timeout` plus [`MARGIN`] (the worst wait is reported);
//! - no panic: every replica exits cleanly;
//! - at most one probe out across the replicas for a key whenever Redis decided: a probe
//!   Redis granted is out from its grant until its answer (or its lease's end), and no
//!   other probe Redis granted, nor one a replica's local breaker granted and carried into
//!   Redis when it rejoined, starts inside it;
//! - a trip in Redis (watched by the test on its own connection) reaches every replica
//!   that stayed connected within `Config::trip_bound()` plus [`EPS_MS`];
//! - every replica that went apart (an outage, a slow call) rejoined, and said how: a
//!   `Resync` the documentation gives for a key that never vanished (`Pushed`, `Adopted`,
//!   `AdoptedWithTrip`).
//!
//! And at the end, every counter reconciled with what the replica reported: each failure
//! counted exactly once (`Counters::failures`), each probe granted counted (`probes`: the
//! probes callers got, plus at most one for each timeout a call waited out, the probe
//! the link then hands back), the refusals (`skips`, at most the refusals plus the same
//! allowance); every breaker closed and following Redis, every call of the last second
//! served.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration as StdDuration;

use breaker_core::{Clock, Phase, SharedBreaker, StdClock};
use breaker_redis::value;
use redis::Commands;
use tests::fault_proxy::{Fault, FaultProxy};
use tests::redis_server::{server_binary, RedisServer};
use tests::soak::{Rng, CALM_MS, POLICY, REFRESH, TIMEOUT};

const REPLICAS: usize = 3;
const THREADS: usize = 3;
const KEYS: usize = 3;
/// What a call may wait past the timeout before it counts as held by the network: the
/// scheduling of a loaded host, many times over.
const MARGIN: StdDuration = StdDuration::from_secs(2);
/// Leeway past `Config::trip_bound()` for a trip to show in a replica's watcher: threads
/// descheduled on a loaded host. The bound plus this is below the cooldown, so a trip is
/// still open in Redis when the check ends.
const EPS_MS: i64 = 1_000;
/// Faults come after this much of the run (the replicas meet Redis cleanly first).
const QUIET_START_MS: i64 = 2_000;
/// A latency below the timeout: the replica stays connected through it.
const SMALL_LATENCY: StdDuration = StdDuration::from_millis(50);

fn trip_bound_ms() -> i64 {
    (REFRESH + 2 * TIMEOUT).as_millis() as i64
}

/// One fault on one replica's proxy, from `from` to `to` ms into the run.
#[derive(Clone, Copy, Debug)]
struct Window {
    from: i64,
    to: i64,
    fault: Fault,
}

/// Each replica's faults, drawn from the seed: clean for 1 to 5 s, then a fault for 0.3 to
/// 2 s, until the calm stretch.
fn schedule(seed: u64, replica: usize, run_ms: i64) -> Vec<Window> {
    let mut rng = Rng::new(seed, 7_000 + replica as u64);
    let mut out = Vec::new();
    let mut t = QUIET_START_MS;
    loop {
        let from = t + rng.between(1_000, 5_000);
        if from >= run_ms - CALM_MS {
            return out;
        }
        let to = (from + rng.between(300, 2_000)).min(run_ms - CALM_MS);
        let fault = match rng.below(6) {
            0 => Fault::Latency(SMALL_LATENCY),
            1 => Fault::Latency(TIMEOUT * 3),
            2 => Fault::Blackhole,
            3 => Fault::LoseReplies,
            4 => Fault::CutReplies,
            _ => Fault::Reset,
        };
        out.push(Window { from, to, fault });
        t = to;
    }
}

/// Whether the replica's network was clean (or only slower than the timeout allows for)
/// all through `from..to`.
fn connected_through(windows: &[Window], from: i64, to: i64) -> bool {
    windows
        .iter()
        .all(|w| w.to <= from || w.from >= to || w.fault == Fault::Latency(SMALL_LATENCY))
}

#[derive(Debug, Clone)]
struct Probe {
    replica: usize,
    key: String,
    ask: i64,
    granted: i64,
    answer: i64,
    shared: bool,
}

#[derive(Debug, Default)]
struct Report {
    probes: Vec<Probe>,
    /// Per key: (t, phase, shared), changes only.
    phases: HashMap<String, Vec<(i64, String, bool)>>,
    /// (t, kind, key, how), in the order reported.
    events: Vec<(i64, String, String, String)>,
    keys: HashMap<String, HashMap<String, u64>>,
    summary: HashMap<String, String>,
}

fn fields(words: &[&str]) -> HashMap<String, String> {
    words
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn parse(replica: usize, out: &str) -> Report {
    let mut r = Report::default();
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w[..] {
            ["probe", key, ask, granted, answer, _, whose] => r.probes.push(Probe {
                replica,
                key: key.to_owned(),
                ask: ask.parse().unwrap(),
                granted: granted.parse().unwrap(),
                answer: answer.parse().unwrap(),
                shared: whose == "shared",
            }),
            ["phase", key, t, phase, whose] => r.phases.entry(key.to_owned()).or_default().push((
                t.parse().unwrap(),
                phase.to_owned(),
                whose == "shared",
            )),
            ["event", t, kind, ref rest @ ..] => r.events.push((
                t.parse().unwrap(),
                kind.to_owned(),
                rest.first().copied().unwrap_or("").to_owned(),
                rest.get(1).copied().unwrap_or("").to_owned(),
            )),
            ["key", key, ref rest @ ..] => {
                let counts = fields(rest).into_iter().map(|(k, v)| (k, v.parse().unwrap())).collect();
                r.keys.insert(key.to_owned(), counts);
            }
            ["summary", ref rest @ ..] => r.summary = fields(rest),
            _ => panic!("replica {replica}: unexpected line {line:?}"),
        }
    }
    r
}

/// The phase and whether the replica followed Redis at `t`, from its watcher's changes.
fn at(changes: &[(i64, String, bool)], t: i64) -> (&str, bool) {
    changes
        .iter()
        .rev()
        .find(|(when, ..)| *when <= t)
        .map_or(("closed", false), |(_, p, s)| (p.as_str(), *s))
}

/// The seed: `BREAKER_SOAK_SEED`, or one drawn from the clock.
fn seed() -> u64 {
    match std::env::var("BREAKER_SOAK_SEED") {
        Ok(s) => s.parse().expect("BREAKER_SOAK_SEED is a number"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    }
}

/// The run's length: `BREAKER_SOAK_SECONDS` (at least 20: the calm stretch is 10), 60 by
/// default.
fn run_ms() -> i64 {
    let secs: i64 = std::env::var("BREAKER_SOAK_SECONDS").map_or(60, |s| s.parse().expect("a number of seconds"));
    secs.max(20) * 1_000
}

fn rel(start: u32) -> i64 {
    i64::from(StdClock.now().as_millis().wrapping_sub(start) as i32)
}

#[test]
fn replicas_behind_random_faults_keep_every_promise_for_a_bounded_soak() {
    let test = "replicas_behind_random_faults_keep_every_promise_for_a_bounded_soak";
    let Some(binary) = server_binary(test) else {
        return;
    };
    let (seed, run_ms) = (seed(), run_ms());
    eprintln!(
        "soak: seed {seed} (replay with BREAKER_SOAK_SEED={seed}), {} s",
        run_ms / 1_000
    );
    let server = RedisServer::start(binary);
    let upstream = SocketAddr::from(([127, 0, 0, 1], server.port()));
    let proxies: Vec<FaultProxy> = (0..REPLICAS).map(|_| FaultProxy::start(upstream)).collect();
    let schedules: Vec<Vec<Window>> = (0..REPLICAS).map(|r| schedule(seed, r, run_ms)).collect();
    let prefix = format!("breaker-soak:{seed}");
    let keys: Vec<String> = (0..KEYS).map(|k| format!("{prefix}:{k}")).collect();

    // The run starts 1.5 s from now on the shared clock.
    let start = StdClock.now().as_millis().wrapping_add(1_500);
    let (tx, rx) = mpsc::channel();
    for (r, proxy) in proxies.iter().enumerate() {
        let child = Command::new(env!("CARGO_BIN_EXE_soak_replica"))
            .args([
                proxy.url(),
                prefix.clone(),
                KEYS.to_string(),
                THREADS.to_string(),
                seed.to_string(),
                r.to_string(),
                start.to_string(),
                run_ms.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("a replica process");
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send((r, child.wait_with_output()));
        });
    }
    drop(tx);

    // The faults, on their schedule; meanwhile this thread watches Redis's words.
    let mut trips: Vec<(String, i64)> = Vec::new();
    let mut redis_phases: HashMap<String, Vec<(i64, bool)>> = HashMap::new();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut steps: Vec<(i64, usize, Fault)> = schedules
                .iter()
                .enumerate()
                .flat_map(|(r, ws)| {
                    ws.iter()
                        .flat_map(move |w| [(w.from, r, w.fault), (w.to, r, Fault::None)])
                })
                .collect();
            steps.sort_by_key(|s| s.0);
            for (t, r, fault) in steps {
                let left = t - rel(start);
                if left > 0 {
                    std::thread::sleep(StdDuration::from_millis(left as u64));
                }
                proxies[r].set(fault);
            }
        });
        let scratch = SharedBreaker::new(&POLICY);
        let mut con = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
        let mut closed: HashMap<&str, bool> = keys.iter().map(|k| (k.as_str(), true)).collect();
        while rel(start) < run_ms {
            for key in &keys {
                let stored: Option<Vec<u8>> = con.get(key).unwrap();
                let t = rel(start);
                let Some(stored) = stored else { continue };
                let word = value::decode(&stored, value::fingerprint(&POLICY)).expect("a valid value in Redis");
                scratch.replace_word(scratch.word(), word).unwrap();
                let now_closed = scratch.state(StdClock.now()).phase() == Phase::Closed;
                let was = closed.insert(key, now_closed).unwrap();
                if was != now_closed {
                    redis_phases.entry(key.clone()).or_default().push((t, now_closed));
                    if !now_closed {
                        trips.push((key.clone(), t));
                    }
                }
            }
            std::thread::sleep(StdDuration::from_millis(5));
        }
    });

    let mut reports: Vec<Option<Report>> = (0..REPLICAS).map(|_| None).collect();
    for _ in 0..REPLICAS {
        let (r, out) = rx
            .recv_timeout(StdDuration::from_secs(120))
            .expect("every replica ends within two minutes of the run");
        let out = out.expect("the replica's output");
        assert!(out.status.success(), "replica {r} failed (a panic?): {:?}", out.status);
        reports[r] = Some(parse(r, &String::from_utf8_lossy(&out.stdout)));
    }
    let reports: Vec<Report> = reports.into_iter().map(Option::unwrap).collect();

    // ---- no call held past the timeout ----
    let mut worst = StdDuration::ZERO;
    let mut calls = 0u64;
    for (r, rep) in reports.iter().enumerate() {
        let w = StdDuration::from_micros(rep.summary["worst_wait_us"].parse().unwrap());
        calls += rep.summary["calls"].parse::<u64>().unwrap();
        assert!(
            w < TIMEOUT + MARGIN,
            "replica {r}: a call waited {w:?} (timeout {TIMEOUT:?})"
        );
        worst = worst.max(w);
    }

    // ---- one probe out at a time whenever Redis decided ----
    let lease = i64::from(POLICY.probe_lease().as_millis());
    let mut shared_probes = 0;
    let mut local_probes = 0;
    for key in &keys {
        let all: Vec<&Probe> = reports
            .iter()
            .flat_map(|r| &r.probes)
            .filter(|p| &p.key == key)
            .collect();
        // A local probe is carried into Redis when its replica rejoined pushing its word
        // (`Pushed`, `Created`) while the probe was out: out in Redis from then on.
        let mut out: Vec<(i64, i64, &Probe)> = Vec::new();
        for p in &all {
            if p.shared {
                shared_probes += 1;
                out.push((p.granted, p.answer.min(p.ask + lease), p));
            } else {
                local_probes += 1;
                let pushed = reports[p.replica].events.iter().find(|(t, kind, k, how)| {
                    kind == "resync"
                        && k == key
                        && (how == "Pushed" || how == "Created")
                        && (p.granted..p.answer).contains(t)
                });
                if let Some((t, ..)) = pushed {
                    out.push((*t, p.answer.min(p.ask + lease), p));
                }
            }
        }
        for (from, to, p) in &out {
            for q in all.iter().filter(|q| q.shared && !std::ptr::eq(**q, *p)) {
                assert!(
                    !(*from <= q.granted && q.granted < *to),
                    "{key}: a probe granted by Redis at {} ms (replica {}) while another was out from {from} to {to} ms: {p:?}",
                    q.granted,
                    q.replica
                );
            }
        }
    }
    assert!(shared_probes > 0, "no probe at all: the upstream never fell sick?");

    // ---- a trip reaches every connected replica within the bound ----
    let bound = trip_bound_ms();
    let (mut checked, mut unchecked, mut worst_lag, mut reached) = (0, 0, 0, 0);
    // The replica that only watches the key: it learns a trip from Redis alone.
    let mut worst_idle_lag = None;
    for (key, t) in &trips {
        let end = t + bound + EPS_MS;
        // Only trips Redis still held at the check's end (the poller saw no closing).
        let closes = redis_phases[key].iter().any(|(when, c)| *c && when > t && *when <= end);
        if closes || end >= run_ms {
            unchecked += 1;
            continue;
        }
        checked += 1;
        for (r, rep) in reports.iter().enumerate() {
            let Some(changes) = rep.phases.get(key) else { continue };
            // Connected: following Redis from the trip to the check's end (as its watcher
            // saw), its network clean since two timeouts before (no reply of a fault still
            // on its way).
            let watched_shared = at(changes, *t).1
                && changes
                    .iter()
                    .filter(|(when, ..)| when > t && *when <= end)
                    .all(|(_, _, s)| *s);
            if !watched_shared || !connected_through(&schedules[r], t - 2 * TIMEOUT.as_millis() as i64, end) {
                continue;
            }
            let seen = if at(changes, *t).0 != "closed" {
                *t
            } else {
                changes
                    .iter()
                    .find(|(when, p, _)| when > t && p != "closed")
                    .map_or(i64::MAX, |(when, ..)| *when)
            };
            let lag = seen - t;
            assert!(
                lag <= bound + EPS_MS,
                "{key}: Redis tripped at {t} ms; replica {r}, connected, saw it {lag} ms later (bound {bound} ms)"
            );
            worst_lag = worst_lag.max(lag);
            reached += 1;
            if keys[r % KEYS] == *key {
                worst_idle_lag = Some(worst_idle_lag.unwrap_or(0).max(lag));
            }
        }
    }
    assert!(checked > 0, "no trip to check: {trips:?}");

    // ---- every replica apart rejoined, with a documented outcome ----
    let mut resyncs: HashMap<String, u32> = HashMap::new();
    let mut outages = 0;
    for (r, rep) in reports.iter().enumerate() {
        outages += rep
            .events
            .iter()
            .filter(|e| e.1 == "unreachable" || e.1 == "slow")
            .count();
        for key in &keys {
            let last_apart = rep
                .events
                .iter()
                .rposition(|(_, kind, k, _)| kind == "unreachable" || ((kind == "slow" || kind == "bad") && k == key));
            if let Some(i) = last_apart {
                assert!(
                    rep.events[i + 1..]
                        .iter()
                        .any(|(_, kind, k, _)| kind == "resync" && k == key),
                    "replica {r}, {key}: apart at {} ms, never rejoined: {:?}",
                    rep.events[i].0,
                    rep.events
                );
            }
        }
        for (t, kind, key, how) in &rep.events {
            assert_ne!(kind, "bad", "replica {r}: a bad value in {key} at {t} ms");
            assert_ne!(kind, "other", "replica {r}: {how}");
            if kind == "resync" {
                let documented = matches!(how.as_str(), "Pushed" | "Adopted" | "AdoptedWithTrip")
                    || (how == "Created" && *t < QUIET_START_MS);
                assert!(
                    documented,
                    "replica {r}, {key}: rejoined {how} at {t} ms, with the key in Redis"
                );
                *resyncs.entry(how.clone()).or_default() += 1;
            }
        }
    }

    // ---- every counter reconciled ----
    let (mut failures, mut refused, mut probes_seen, mut gave_up) = (0, 0, 0, 0);
    for (r, rep) in reports.iter().enumerate() {
        for key in &keys {
            let c = &rep.keys[key];
            assert_eq!(
                c["failures_counted"], c["failures"],
                "replica {r}, {key}: failures counted against reported: {c:?}"
            );
            assert!(
                c["probes_seen"] <= c["probes"] && c["probes"] <= c["probes_seen"] + c["gave_up"],
                "replica {r}, {key}: probes counted against probes granted: {c:?}"
            );
            assert!(
                c["skips"] <= c["refused"] + c["gave_up"],
                "replica {r}, {key}: skips counted against refusals: {c:?}"
            );
            assert_eq!(
                c["calls"],
                c["refused"] + c["successes"] + c["failures"] + c["neutrals"],
                "replica {r}, {key}: every call answered once: {c:?}"
            );
            failures += c["failures"];
            refused += c["refused"];
            probes_seen += c["probes_seen"];
            gave_up += c["gave_up"];
        }
        // Nothing wedged at the end.
        assert_eq!(rep.summary["shared"], "true", "replica {r} still apart at the end");
        assert_eq!(
            rep.summary["late_bad"], "0",
            "replica {r}: calls refused or failed in the last second"
        );
        for key in &keys {
            let last = rep.phases[key].last().unwrap();
            assert_eq!(
                (last.1.as_str(), last.2),
                ("closed", true),
                "replica {r}, {key} at the end"
            );
        }
    }

    let mut faults: HashMap<String, u32> = HashMap::new();
    for w in schedules.iter().flatten() {
        *faults.entry(format!("{:?}", w.fault)).or_default() += 1;
    }
    let mut faults: Vec<_> = faults.into_iter().collect();
    faults.sort();
    let mut resyncs: Vec<_> = resyncs.into_iter().collect();
    resyncs.sort();
    eprintln!(
        "soak: seed {seed}, {} s, {REPLICAS} replicas x {THREADS} threads, {KEYS} breakers",
        run_ms / 1_000
    );
    eprintln!("soak: {calls} calls ({refused} refused, {failures} failures), {gave_up} timeouts waited out");
    eprintln!(
        "soak: {} faults injected {faults:?}; {outages} outages reported; rejoined {resyncs:?}",
        schedules.iter().map(Vec::len).sum::<usize>()
    );
    eprintln!("soak: worst wait {worst:?} (timeout {TIMEOUT:?})");
    eprintln!(
        "soak: {} trips in Redis, {checked} checked ({unchecked} closed or ended too soon), slowest to reach a connected replica {worst_lag} ms ({reached} replicas checked), an idle one {} ms (bound {bound} ms)",
        trips.len(),
        worst_idle_lag.map_or("-".to_owned(), |l: i64| l.to_string())
    );
    eprintln!(
        "soak: {shared_probes} probes granted by Redis, one per half-open window, never two out; {local_probes} by local breakers while apart; {probes_seen} probes seen by callers in all"
    );
}
