//! `cargo bench -p bench --bench quota`: what one quota sample costs the gauge, side by side
//! in one process with the ring alone and with Squad's algorithm as Squad writes it (a
//! growable list of the last 10 samples and floating-point rates).
//!
//! Modes (argv; `cargo bench` adds a `--bench` flag, which is ignored):
//!
//! * no mode: ns per sample for every case, interleaved rounds, medians.
//! * `--icount CASE COUNT`: runs one case for `COUNT` samples and exits; `bench/callgrind.sh`
//!   (`BENCH=quota bench/callgrind.sh`) runs it twice under callgrind and divides the
//!   difference of the instruction totals by the difference of the counts.
//! * `--list`: prints the case keys.
//!
//! Every loop is its own `#[inline(never)] fn loop_*`. The samples are a steady stream (one
//! every 100 ms, one unit spent each), so the window stays full and every sample predicts;
//! each loop sums a figure of every reading and the sum goes through `black_box`, and the
//! gauge is handed to the loop through `black_box`.

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use bench::Stats;
use breaker_core::{Breaker, Duration, Instant, Policy, Quota, QuotaGauge, QuotaGuard, QuotaPolicy, Sample};
use heapless::HistoryBuf;

const ROUNDS: usize = 15;
const SAMPLE_TARGET: StdDuration = StdDuration::from_millis(15);

/// The `i`-th sample of the steady stream: 100 ms apart, one unit spent each, the quota
/// never running out (remaining counts down from `u32::MAX`).
#[inline(always)]
fn sample(i: u64) -> Sample {
    Sample::new(
        Instant::from_millis((i as u32).wrapping_mul(100)),
        u32::MAX - i as u32,
        u32::MAX,
    )
}

/// The gauge: `observe`, the forecast's time to exhaustion summed.
#[inline(never)]
fn loop_observe(gauge: &mut QuotaGauge<10>, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let reading = gauge.observe(black_box(sample(i)));
        acc = acc.wrapping_add(reading.forecast.map_or(0, |f| u64::from(f.exhausted_in.as_millis())));
    }
    acc
}

/// The guard: `observe` through a `QuotaGuard` on a `Breaker` (no alarm: nothing trips).
#[inline(never)]
fn loop_guard(guard: &mut QuotaGuard<Breaker>, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let s = black_box(sample(i));
        let reading = guard.observe(Quota::new(s.remaining, s.total), s.at);
        acc = acc.wrapping_add(reading.forecast.map_or(0, |f| u64::from(f.exhausted_in.as_millis())));
    }
    acc
}

/// The ring alone: write a sample into a `HistoryBuf` of 10 and read its first and last.
#[inline(never)]
fn loop_ring(ring: &mut HistoryBuf<(Instant, u32), 10>, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let s = black_box(sample(i));
        ring.write((s.at, s.remaining));
        let first = ring.oldest().map_or(0, |&(_, r)| r);
        let last = ring.recent().map_or(0, |&(_, r)| r);
        acc = acc.wrapping_add(u64::from(first - last));
    }
    acc
}

/// Squad's algorithm as Squad writes it: push onto a list, drop the oldest past 10, rate
/// and time to exhaustion in floating point.
struct Naive {
    samples: Vec<(u64, f64, f64)>,
}

impl Naive {
    fn add(&mut self, at_ms: u64, remaining: f64, total: f64) -> Option<f64> {
        if let Some(&(_, last, last_total)) = self.samples.last() {
            if remaining > last || total != last_total {
                self.samples.clear();
            }
        }
        self.samples.push((at_ms, remaining, total));
        if self.samples.len() > 10 {
            self.samples.remove(0);
        }
        let (&(t0, r0, _), &(t1, r1, _)) = (self.samples.first()?, self.samples.last()?);
        let elapsed_s = (t1 as f64 - t0 as f64) / 1000.0;
        let rate = (r0 - r1) / elapsed_s;
        if rate.is_nan() || rate <= 0.0 {
            return None;
        }
        Some(r1 / rate)
    }
}

#[inline(never)]
fn loop_naive(naive: &mut Naive, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let s = black_box(sample(i));
        let secs = naive.add(u64::from(s.at.as_millis()), f64::from(s.remaining), f64::from(s.total));
        acc = acc.wrapping_add(secs.map_or(0, |x| (x * 1000.0) as u64));
    }
    acc
}

fn timed(run: impl FnOnce() -> u64) -> StdDuration {
    let start = StdInstant::now();
    black_box(run());
    start.elapsed()
}

fn run_observe(n: u64) -> StdDuration {
    let mut gauge = QuotaGauge::<10>::new(QuotaPolicy::new());
    timed(|| loop_observe(black_box(&mut gauge), n))
}

fn run_guard(n: u64) -> StdDuration {
    let mut guard = QuotaGuard::new(Breaker::new(Policy::new(3, Duration::from_mins(2))), QuotaPolicy::new());
    timed(|| loop_guard(black_box(&mut guard), n))
}

fn run_ring(n: u64) -> StdDuration {
    let mut ring = HistoryBuf::new();
    timed(|| loop_ring(black_box(&mut ring), n))
}

fn run_naive(n: u64) -> StdDuration {
    let mut naive = Naive {
        samples: Vec::with_capacity(11),
    };
    timed(|| loop_naive(black_box(&mut naive), n))
}

struct Case {
    key: &'static str,
    label: &'static str,
    run: fn(u64) -> StdDuration,
}

const CASES: &[Case] = &[
    Case {
        key: "ring",
        label: "reference: the ring alone (HistoryBuf write, first and last)",
        run: run_ring,
    },
    Case {
        key: "observe",
        label: "breaker-core QuotaGauge<10>::observe",
        run: run_observe,
    },
    Case {
        key: "guard",
        label: "breaker-core QuotaGuard::observe (gauge + alarm check, no trip)",
        run: run_guard,
    },
    Case {
        key: "naive",
        label: "Squad's algorithm: Vec window, f64 rate",
        run: run_naive,
    },
];

fn case(key: &str) -> &'static Case {
    CASES
        .iter()
        .find(|c| c.key == key)
        .unwrap_or_else(|| panic!("no case {key}; --list lists them"))
}

fn calibrate(c: &Case) -> u64 {
    let mut n = 1_000u64;
    loop {
        if (c.run)(n) >= SAMPLE_TARGET / 4 || n >= 1 << 30 {
            return (n * 4).max(1);
        }
        n *= 2;
    }
}

fn usage() -> ! {
    eprintln!("usage: quota [--bench]              ns per sample of every case");
    eprintln!("       quota --icount CASE COUNT     run one case COUNT samples (for callgrind.sh)");
    eprintln!("       quota --list                  list the cases");
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
        _ => usage(),
    }

    println!("## one quota sample (steady stream, window full, every sample predicts)\n");
    let counts: Vec<u64> = CASES.iter().map(calibrate).collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
    for _ in 0..ROUNDS {
        for (i, c) in CASES.iter().enumerate() {
            let t = (c.run)(counts[i]);
            samples[i].push(t.as_nanos() as f64 / counts[i] as f64);
        }
    }
    println!("| case | ns per sample (median) | min | max |");
    println!("|---|---:|---:|---:|");
    for (c, s) in CASES.iter().zip(&samples) {
        let st = Stats::of(s);
        println!("| {} | {:.2} | {:.2} | {:.2} |", c.label, st.median, st.min, st.max);
    }
    println!("\nInstructions per sample: `BENCH=quota bench/callgrind.sh` (stable where ns are not).");
}
