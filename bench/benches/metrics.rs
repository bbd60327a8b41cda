//! `cargo bench -p bench --bench metrics [--features metrics]`: what the `metrics` feature
//! costs a closed-state call and a refusal. Built without the feature its cases are
//! `metrics-off-*`; with it, `metrics-on-*`, and before each loop the benchmark installs
//! `metrics-exporter-prometheus`'s recorder and publishes and renders the registry once
//! (the breaker under test is registered), as a service scraped by Prometheus would; after
//! the loop it publishes and renders again. `BENCH=metrics bench/callgrind.sh` builds both
//! and compares them.
//!
//! Modes (argv; `cargo bench` adds a `--bench` flag, which is ignored):
//!
//! * no mode: ns per call of both cases, interleaved rounds, medians, and heap allocations
//!   per call.
//! * `--icount CASE COUNT`: runs one case for `COUNT` calls and exits (for callgrind.sh).
//! * `--allocs`: heap allocations made inside each case's loop of 100 000 calls, one line
//!   per case (`CASE\tALLOCATIONS`).
//! * `--list`: prints the case keys.

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use bench::{CountingAlloc, Stats};
use breaker_core::{CallError, Duration, Policy, SharedBreaker, StdClock};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

const ROUNDS: usize = 15;
const SAMPLE_TARGET: StdDuration = StdDuration::from_millis(15);

static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
static CLOSED: SharedBreaker = SharedBreaker::new(&POLICY);
static TRIPPED: SharedBreaker = SharedBreaker::new(&POLICY);
static CLOCK: StdClock = StdClock;
breaker_core::register!(CLOSED, "bench/metrics/closed", CLOCK);
breaker_core::register!(TRIPPED, "bench/metrics/tripped", CLOCK);

#[derive(Debug)]
struct Nack;
impl breaker_core::Classify for Nack {}

/// The closed path: `SharedBreaker::call` succeeding, summed.
#[inline(never)]
fn loop_closed(b: &SharedBreaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = b.call(&CLOCK, || Ok::<_, Nack>(black_box(i))) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

/// The refusal: `SharedBreaker::call` on a breaker open and cooling down.
#[inline(never)]
fn loop_rejected(b: &SharedBreaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Err(CallError::Refused(_)) = b.call(&CLOCK, || Ok::<_, Nack>(black_box(i))) {
            acc = acc.wrapping_add(1);
        }
    }
    acc
}

/// With the feature: the recorder installed (once), and one scrape's work done.
#[cfg(feature = "metrics")]
fn scrape() {
    use std::sync::OnceLock;
    static HANDLE: OnceLock<metrics_exporter_prometheus::PrometheusHandle> = OnceLock::new();
    let handle = HANDLE.get_or_init(|| {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .expect("the only recorder")
    });
    breaker_core::metrics::publish();
    black_box(handle.render());
}

#[cfg(not(feature = "metrics"))]
fn scrape() {}

fn trip() {
    for _ in 0..3 {
        let _ = TRIPPED.call(&CLOCK, || Err::<(), _>(Nack));
    }
}

fn run(looped: fn(&SharedBreaker, u64) -> u64, b: &'static SharedBreaker, n: u64) -> (StdDuration, u64) {
    trip();
    scrape();
    let before = ALLOC.snapshot();
    let start = StdInstant::now();
    black_box(looped(black_box(b), n));
    let elapsed = start.elapsed();
    let allocs = ALLOC.snapshot().since(before).allocs;
    scrape();
    (elapsed, allocs)
}

fn run_closed(n: u64) -> (StdDuration, u64) {
    run(loop_closed, &CLOSED, n)
}

fn run_rejected(n: u64) -> (StdDuration, u64) {
    run(loop_rejected, &TRIPPED, n)
}

struct Case {
    key: &'static str,
    label: &'static str,
    run: fn(u64) -> (StdDuration, u64),
}

#[cfg(not(feature = "metrics"))]
const CASES: &[Case] = &[
    Case {
        key: "metrics-off-closed",
        label: "closed call, feature `metrics` off",
        run: run_closed,
    },
    Case {
        key: "metrics-off-rejected",
        label: "refusal, feature `metrics` off",
        run: run_rejected,
    },
];

#[cfg(feature = "metrics")]
const CASES: &[Case] = &[
    Case {
        key: "metrics-on-closed",
        label: "closed call, feature `metrics` on, registry published",
        run: run_closed,
    },
    Case {
        key: "metrics-on-rejected",
        label: "refusal, feature `metrics` on, registry published",
        run: run_rejected,
    },
];

fn case(key: &str) -> &'static Case {
    CASES.iter().find(|c| c.key == key).unwrap_or_else(|| {
        eprintln!("no case {key}; --list lists them");
        std::process::exit(2)
    })
}

fn usage() -> ! {
    eprintln!("usage: metrics [--bench]              ns and allocations per call of every case");
    eprintln!("       metrics --icount CASE COUNT     run one case COUNT calls (for callgrind.sh)");
    eprintln!("       metrics --allocs                allocations in each case's loop of 100000 calls");
    eprintln!("       metrics --list                  list the cases");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => {}
        ["--list"] => {
            for c in CASES {
                println!("{}\t{}", c.key, c.label);
            }
            return;
        }
        ["--icount", key, count] => {
            let count: u64 = count.parse().unwrap_or_else(|_| usage());
            black_box((case(key).run)(count));
            return;
        }
        ["--allocs"] => {
            for c in CASES {
                println!("{}\t{}", c.key, (c.run)(100_000).1);
            }
            return;
        }
        _ => usage(),
    }

    let counts: Vec<u64> = CASES
        .iter()
        .map(|c| bench::calls_per_sample(SAMPLE_TARGET, |n| (c.run)(n).0))
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
    let mut allocs = vec![0u64; CASES.len()];
    for _ in 0..ROUNDS {
        for (i, c) in CASES.iter().enumerate() {
            let (t, a) = (c.run)(counts[i]);
            samples[i].push(t.as_nanos() as f64 / counts[i] as f64);
            allocs[i] += a;
        }
    }
    println!("| case | ns per call (median) | min | max | allocations per call |");
    println!("|---|---:|---:|---:|---:|");
    for (i, c) in CASES.iter().enumerate() {
        let st = Stats::of(&samples[i]);
        let per_call = allocs[i] as f64 / (counts[i] * ROUNDS as u64) as f64;
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {per_call} |",
            c.label, st.median, st.min, st.max
        );
    }
    println!("\nInstructions per call, both builds: `BENCH=metrics bench/callgrind.sh`.");
}
