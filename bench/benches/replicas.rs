//! `cargo bench -p bench --bench replicas`: what sharing a breaker through Redis costs a
//! replica. The closed-state call of a `breaker_redis::RedisBreaker` next to
//! `SharedBreaker::call` alone (it must stay the local figure: it reads the local mirror
//! only), and, with a server (`BREAKER_REDIS_URL`), the round trips each other path makes
//! and what they cost: a refusal, a strike, the probe's grant, against a bare `PING`.
//!
//! Modes (argv; `cargo bench` adds a `--bench` flag, which is ignored):
//!
//! * no mode: times the closed-state cases (median of 15 interleaved rounds) and, with
//!   `BREAKER_REDIS_URL`, the round-trip table.
//! * `--icount CASE COUNT`: runs one closed-state case for `COUNT` calls and exits (for
//!   `bench/callgrind.sh`).
//! * `--list`: prints the case keys.
//!
//! Without a server the `RedisBreaker` is bound to a loopback port nobody listens on: its
//! closed-state path is the same (the local mirror), which is the point. Its link neither
//! polls nor retries during the measurement (both every hour), so the loops measure calls
//! alone.

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use bench::Stats;
use breaker_core::{CallError, Classify, Duration, Policy, SharedBreaker, StdClock};
use breaker_redis::{Config, RedisBreaker, RedisLink};

/// Trip after 3 consecutive strikes, refuse for 30 s (as in the `peers` benchmark).
static POLICY: Policy = Policy::new(3, Duration::from_secs(30));

const ROUNDS: usize = 15;
const SAMPLE_TARGET: StdDuration = StdDuration::from_millis(15);

#[derive(Debug)]
struct Fail;
impl Classify for Fail {}

#[inline(always)]
fn work(i: u64) -> Result<u64, Fail> {
    Ok(black_box(i))
}

#[inline(never)]
fn loop_local(b: &SharedBreaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = b.call(&StdClock, || work(i)) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

#[inline(never)]
fn loop_redis(b: &RedisBreaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = b.call(|| work(i)) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

fn expected(n: u64) -> u64 {
    (0..n).fold(0u64, |a, i| a.wrapping_add(i))
}

/// A link that neither polls nor retries during a measurement.
fn quiet_link() -> (RedisLink, &'static str) {
    let config = Config::new()
        .refresh(StdDuration::from_secs(3600))
        .retry(StdDuration::from_secs(3600))
        .log(|_| {});
    match std::env::var("BREAKER_REDIS_URL") {
        Ok(url) if !url.is_empty() => (RedisLink::open(url.as_str(), config).expect("a valid URL"), "connected"),
        _ => {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let link = RedisLink::open(format!("redis://127.0.0.1:{port}/").as_str(), config).unwrap();
            (link, "no server: local mirror")
        }
    }
}

struct Subjects {
    local: SharedBreaker,
    redis: RedisBreaker,
    _link: RedisLink,
}

fn subjects() -> (Subjects, &'static str) {
    let (link, how) = quiet_link();
    let key = format!("breaker-bench:closed:{}", std::process::id());
    let redis = link.breaker(key, &POLICY);
    (
        Subjects {
            local: SharedBreaker::new(&POLICY),
            redis,
            _link: link,
        },
        how,
    )
}

fn run(key: &str, s: &Subjects, n: u64) -> StdDuration {
    let t = StdInstant::now();
    let sum = match key {
        "replicas-local" => loop_local(black_box(&s.local), n),
        "replicas-redis" => loop_redis(black_box(&s.redis), n),
        _ => panic!("no case {key}"),
    };
    let took = t.elapsed();
    assert_eq!(black_box(sum), expected(n), "{key}: a call did not succeed");
    took
}

const CASES: [(&str, &str); 2] = [
    ("replicas-local", "SharedBreaker::call, closed (the local figure)"),
    (
        "replicas-redis",
        "RedisBreaker::call, closed (its word shared through Redis)",
    ),
];

fn calibrate(key: &str, s: &Subjects) -> u64 {
    bench::calls_per_sample(SAMPLE_TARGET, |n| run(key, s, n))
}

fn usage() -> ! {
    eprintln!("usage: replicas [--bench]              time every case");
    eprintln!("       replicas --icount CASE COUNT     run one case COUNT times (for callgrind.sh)");
    eprintln!("       replicas --list                  list the cases");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => {}
        ["--list"] => {
            for (key, label) in CASES {
                println!("{key}\t{label}");
            }
            return;
        }
        ["--icount", key, count] => {
            let count: u64 = count.parse().unwrap_or_else(|_| usage());
            let (s, _) = subjects();
            black_box(run(key, &s, count));
            return;
        }
        _ => usage(),
    }

    let (s, how) = subjects();
    println!("## The closed-state call, local and shared through Redis ({how})\n");
    let ns: Vec<u64> = CASES.iter().map(|(k, _)| calibrate(k, &s)).collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
    for _ in 0..ROUNDS {
        for (i, (key, _)) in CASES.iter().enumerate() {
            let t = run(key, &s, ns[i]);
            samples[i].push(t.as_nanos() as f64 / ns[i] as f64);
        }
    }
    println!("| case | ns/call (median) | min | max | IQR/median |");
    println!("|---|---:|---:|---:|---:|");
    for ((_, label), samples) in CASES.iter().zip(&samples) {
        let st = Stats::of(samples);
        println!(
            "| {label} | {:.2} | {:.2} | {:.2} | {:.0}% |",
            st.median,
            st.min,
            st.max,
            100.0 * st.spread()
        );
    }
    println!("\n(instructions per call: bench/callgrind.sh replicas-local replicas-redis)\n");

    match std::env::var("BREAKER_REDIS_URL") {
        Ok(url) if !url.is_empty() => round_trips(&url),
        _ => println!("no BREAKER_REDIS_URL: the round-trip table needs a server"),
    }
}

/// Microseconds of `samples` (seconds) as median / p90 / max.
fn micros(samples: &mut [f64]) -> String {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize] * 1e6;
    format!("{:.1} / {:.1} / {:.1}", at(0.5), at(0.9), at(1.0))
}

/// The paths that talk to Redis: how many round trips each makes and what the caller waits.
fn round_trips(url: &str) {
    const K: usize = 100;
    static TRIP_ONE: Policy = Policy::new(1, Duration::from_millis(20)).with_probe_lease(Duration::from_secs(60));
    let config = Config::new()
        .timeout(StdDuration::from_secs(1))
        .refresh(StdDuration::from_secs(3600))
        .retry(StdDuration::from_secs(3600))
        .log(|e| eprintln!("bench link: {e}"));
    let link = RedisLink::open(url, config).expect("a valid URL");
    let b = link.breaker(format!("breaker-bench:round-trips:{}", std::process::id()), &TRIP_ONE);
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();

    let mut ping = Vec::with_capacity(K);
    for _ in 0..K {
        let t = StdInstant::now();
        let _: String = redis::cmd("PING").query(&mut con).unwrap();
        ping.push(t.elapsed().as_secs_f64());
    }

    // Closed successes: no round trip.
    let before = link.round_trips();
    for i in 0..10_000u64 {
        let _ = black_box(b.call(|| work(i)));
    }
    let closed_trips = link.round_trips() - before;

    // Each iteration: a strike trips it (handed to the link, not waited for), refusals while
    // it cools down (the mirror alone), then the probe's grant (waited for), whose failure
    // re-opens it (not waited for).
    let (mut strike, mut refusal, mut grant) = (Vec::new(), Vec::new(), Vec::new());
    let (mut strike_trips, mut refusal_trips, mut grant_trips, mut answer_trips) = (0, 0, 0, 0);
    b.reset();
    link.refresh();
    for _ in 0..K {
        let before = link.round_trips();
        let t = StdInstant::now();
        let r = b.call(|| Err::<u64, _>(Fail));
        strike.push(t.elapsed().as_secs_f64());
        assert!(matches!(r, Err(CallError::Inner(Fail))));
        link.refresh();
        strike_trips += link.round_trips() - before - 1; // less the refresh's read

        let before = link.round_trips();
        let t = StdInstant::now();
        let r = b.call(|| work(0));
        refusal.push(t.elapsed().as_secs_f64());
        assert!(matches!(r, Err(CallError::Refused(_))), "{r:?}");
        refusal_trips += link.round_trips() - before;

        std::thread::sleep(StdDuration::from_millis(21)); // the cooldown is over
        let before = link.round_trips();
        let t = StdInstant::now();
        let p = b.try_acquire().expect("the probe");
        grant.push(t.elapsed().as_secs_f64());
        assert!(p.is_probe() && !p.is_local());
        grant_trips += link.round_trips() - before;
        let before = link.round_trips();
        p.success();
        link.refresh();
        answer_trips += link.round_trips() - before - 1;
    }
    let k = K as f64;
    println!("## What each path costs a replica (Redis at {url}, {K} rounds)\n");
    println!("| path | round trips per call | the caller waits, µs (median / p90 / max) |");
    println!("|---|---:|---:|");
    println!("| reference: a bare `PING` | 1 | {} |", micros(&mut ping));
    println!(
        "| closed, success | {:.2} | (see above: ns) |",
        closed_trips as f64 / 10_000.0
    );
    println!(
        "| closed, a strike that trips it (handed to the link) | {:.2} | {} |",
        strike_trips as f64 / k,
        micros(&mut strike)
    );
    println!(
        "| open, refused while cooling down | {:.2} | {} |",
        refusal_trips as f64 / k,
        micros(&mut refusal)
    );
    println!(
        "| cooldown over: the probe's grant (a compare-and-swap, waited for) | {:.2} | {} |",
        grant_trips as f64 / k,
        micros(&mut grant)
    );
    println!(
        "| the probe's answer, closing it (handed to the link) | {:.2} | - |",
        answer_trips as f64 / k
    );
}
