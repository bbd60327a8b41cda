//! `cargo bench -p bench --bench ladder`: what a first-attempt success costs through the
//! retry ladder, next to the breaker alone and to `backon` (the most used Rust retry crate),
//! in one process; and what a retry budget adds, to a first-attempt success and to a call
//! retried once.
//!
//! Modes (argv; `cargo bench` adds a `--bench` flag, which is ignored):
//!
//! * no mode: times every case (median of 15 interleaved rounds) and prints the table.
//! * `--icount CASE COUNT`: runs one case for `COUNT` calls and exits (for
//!   `bench/callgrind.sh`, which counts instructions per call).
//! * `--list`: prints the case keys.
//!
//! Every loop is an `#[inline(never)] fn loop_*` calling its subject `n` times on a closure
//! that returns `Ok(black_box(i))` (the `one-retry` cases: a strike first, then that); the
//! breaker is built at run time and handed over through `black_box`, and every sample's sum
//! is checked (all calls succeeded, on the attempt scripted).

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use backon::{BlockingRetryable, ExponentialBuilder};
use bench::Stats;
use breaker_core::{Classify, Duration, Jitter, Policy, RetryBudget, RetryPolicy, SharedBreaker, StdClock};

/// Trip after 3 consecutive strikes, refuse for 30 s (as in the `peers` benchmark).
static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
/// Up to 3 retries, 100 ms apart and doubling, full jitter: never used when the first
/// attempt succeeds, which is the point.
static RETRY: RetryPolicy = RetryPolicy::new(3, Duration::from_millis(100))
    .with_max_delay(Duration::from_secs(2))
    .with_jitter(Jitter::Full);
/// The same with a total budget, which costs a clock read per ladder.
static RETRY_BUDGET: RetryPolicy = RETRY.with_budget(Duration::from_secs(5));
/// Finagle's retry budget, shared by the ladders of the `retry-budget` case: each first
/// attempt deposits (a clock read and a compare-and-swap), no retry is asked for.
static SHARED_BUDGET: RetryBudget = RetryBudget::new(20, 10, Duration::from_secs(10));
/// A budget whose first attempts pay for a retry each (100 %), for the case retried once
/// through it: every withdrawal is allowed.
static PAYING_BUDGET: RetryBudget = RetryBudget::new(100, 10, Duration::from_secs(10));

const ROUNDS: usize = 15;
const SAMPLE_TARGET: StdDuration = StdDuration::from_millis(15);

#[derive(Debug)]
struct Fail;
impl Classify for Fail {}

#[inline(always)]
fn work(i: u64) -> Result<u64, Fail> {
    Ok(black_box(i))
}

/// backon's equivalent of our policy: exponential from 100 ms, x2, at most 2 s, 3 retries,
/// jitter, sleeping with `std::thread::sleep`.
fn backon_policy() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(StdDuration::from_millis(100))
        .with_max_delay(StdDuration::from_secs(2))
        .with_max_times(3)
        .with_jitter()
}

// ---- the measured loops ----------------------------------------------------------------

#[inline(never)]
fn loop_closure(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = work(i) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

/// The breaker alone: `SharedBreaker::call`.
#[inline(never)]
fn loop_breaker(b: &SharedBreaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        match b.call(&StdClock, || work(i)) {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

/// The ladder in front of the same breaker.
#[inline(never)]
fn loop_ladder(policy: &RetryPolicy, b: &SharedBreaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        match policy.ladder(b, &StdClock).call(|| work(i)).result {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

/// The ladder drawing on a retry budget, in front of the same breaker.
#[inline(never)]
fn loop_ladder_retry_budget(policy: &RetryPolicy, b: &SharedBreaker, budget: &RetryBudget, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        match policy.ladder(b, &StdClock).budget(budget).call(|| work(i)).result {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

/// A call retried once: a strike, then success; the sleep does nothing.
#[inline(never)]
fn loop_one_retry(policy: &RetryPolicy, b: &SharedBreaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let mut first = true;
        let attempt = || if std::mem::take(&mut first) { Err(Fail) } else { work(i) };
        match policy.ladder(b, &StdClock).sleep(|_| ()).call(attempt).result {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

/// The same, the retry withdrawn from a budget.
#[inline(never)]
fn loop_one_retry_budget(policy: &RetryPolicy, b: &SharedBreaker, budget: &RetryBudget, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let mut first = true;
        let attempt = || if std::mem::take(&mut first) { Err(Fail) } else { work(i) };
        match policy
            .ladder(b, &StdClock)
            .budget(budget)
            .sleep(|_| ())
            .call(attempt)
            .result
        {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

/// backon alone (no breaker): `BlockingRetry::call`.
#[inline(never)]
fn loop_backon(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        match (|| work(i)).retry(backon_policy()).sleep(std::thread::sleep).call() {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

/// backon around the breaker's call, retrying every error but a refusal: the hand-rolled
/// equivalent of our ladder.
#[inline(never)]
fn loop_backon_breaker(b: &SharedBreaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        match (|| b.call(&StdClock, || work(i)))
            .retry(backon_policy())
            .sleep(std::thread::sleep)
            .when(|e| matches!(e, breaker_core::CallError::Inner(_)))
            .call()
        {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

// ---- cases -------------------------------------------------------------------------------

fn timed(n: u64, what: &str, run: impl FnOnce() -> u64) -> StdDuration {
    let start = StdInstant::now();
    let acc = run();
    let elapsed = start.elapsed();
    let want = (u128::from(n) * u128::from(n.saturating_sub(1)) / 2) as u64;
    assert_eq!(black_box(acc), want, "{what}: not every call succeeded as scripted");
    elapsed
}

fn run_closure(n: u64) -> StdDuration {
    timed(n, "closure", || loop_closure(black_box(n)))
}

fn run_breaker(n: u64) -> StdDuration {
    let b = SharedBreaker::new(&POLICY);
    let b = black_box(&b);
    timed(n, "breaker", || loop_breaker(b, n))
}

fn run_ladder(n: u64) -> StdDuration {
    let b = SharedBreaker::new(&POLICY);
    let (p, b) = black_box((&RETRY, &b));
    timed(n, "ladder", || loop_ladder(p, b, n))
}

fn run_ladder_budget(n: u64) -> StdDuration {
    let b = SharedBreaker::new(&POLICY);
    let (p, b) = black_box((&RETRY_BUDGET, &b));
    timed(n, "ladder with a budget", || loop_ladder(p, b, n))
}

fn run_ladder_retry_budget(n: u64) -> StdDuration {
    let b = SharedBreaker::new(&POLICY);
    let (p, b, budget) = black_box((&RETRY, &b, &SHARED_BUDGET));
    timed(n, "ladder with a retry budget", || {
        loop_ladder_retry_budget(p, b, budget, n)
    })
}

fn run_one_retry(n: u64) -> StdDuration {
    let b = SharedBreaker::new(&POLICY);
    let (p, b) = black_box((&RETRY, &b));
    timed(n, "ladder, one retry", || loop_one_retry(p, b, n))
}

fn run_one_retry_budget(n: u64) -> StdDuration {
    let b = SharedBreaker::new(&POLICY);
    let (p, b, budget) = black_box((&RETRY, &b, &PAYING_BUDGET));
    timed(n, "ladder, one retry through a retry budget", || {
        loop_one_retry_budget(p, b, budget, n)
    })
}

fn run_backon(n: u64) -> StdDuration {
    timed(n, "backon", || loop_backon(black_box(n)))
}

fn run_backon_breaker(n: u64) -> StdDuration {
    let b = SharedBreaker::new(&POLICY);
    let b = black_box(&b);
    timed(n, "backon + breaker", || loop_backon_breaker(b, n))
}

struct Case {
    key: &'static str,
    label: &'static str,
    run: fn(u64) -> StdDuration,
}

const CASES: &[Case] = &[
    Case {
        key: "ladder-closure",
        label: "closure alone",
        run: run_closure,
    },
    Case {
        key: "ladder-breaker",
        label: "breaker alone: SharedBreaker::call",
        run: run_breaker,
    },
    Case {
        key: "ladder-first-ok",
        label: "breaker-core ladder + breaker, first attempt succeeds",
        run: run_ladder,
    },
    Case {
        key: "ladder-first-ok-budget",
        label: "the same, the policy with a total budget",
        run: run_ladder_budget,
    },
    Case {
        key: "ladder-first-ok-retry-budget",
        label: "the same drawing on a RetryBudget (a deposit per ladder)",
        run: run_ladder_retry_budget,
    },
    Case {
        key: "ladder-one-retry",
        label: "breaker-core ladder + breaker, a strike then success (one retry, no sleep)",
        run: run_one_retry,
    },
    Case {
        key: "ladder-one-retry-budget",
        label: "the same, the retry withdrawn from a RetryBudget",
        run: run_one_retry_budget,
    },
    Case {
        key: "backon-first-ok",
        label: "backon 1.6 alone (no breaker), first attempt succeeds",
        run: run_backon,
    },
    Case {
        key: "backon-breaker-first-ok",
        label: "backon 1.6 around SharedBreaker::call",
        run: run_backon_breaker,
    },
];

fn case(key: &str) -> &'static Case {
    CASES
        .iter()
        .find(|c| c.key == key)
        .unwrap_or_else(|| panic!("no case {key}"))
}

fn calibrate(c: &Case) -> u64 {
    bench::calls_per_sample(SAMPLE_TARGET, c.run)
}

fn usage() -> ! {
    eprintln!("usage: ladder [--bench]              time every case");
    eprintln!("       ladder --icount CASE COUNT     run one case COUNT times (for callgrind.sh)");
    eprintln!("       ladder --list                  list the cases");
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

    println!("## A first-attempt success through the retry ladder, the breaker alone, and backon\n");
    println!(
        "Ladder: {} retries from {}, x{}, cap {}, {:?} jitter; breaker: trip 3, cooldown 30 s; backon: the same \
         exponential schedule with jitter. {ROUNDS} rounds, cases interleaved.\n",
        RETRY.retries(),
        RETRY.delay(),
        RETRY.multiplier(),
        RETRY.max_delay(),
        RETRY.jitter()
    );
    let ns: Vec<u64> = CASES.iter().map(calibrate).collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
    for _ in 0..ROUNDS {
        for (i, c) in CASES.iter().enumerate() {
            let t = (c.run)(ns[i]);
            samples[i].push(t.as_nanos() as f64 / ns[i] as f64);
        }
    }
    println!("| case | ns/call (median) | min | max | IQR/median |");
    println!("|---|---:|---:|---:|---:|");
    let stats: Vec<Stats> = samples.iter().map(|s| Stats::of(s)).collect();
    for (c, s) in CASES.iter().zip(&stats) {
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.0}% |",
            c.label,
            s.median,
            s.min,
            s.max,
            100.0 * s.spread()
        );
    }
    let get = |key: &str| stats[CASES.iter().position(|c| c.key == key).expect("a case")];
    let (ladder, breaker, backon) = (get("ladder-first-ok"), get("ladder-breaker"), get("backon-first-ok"));
    println!(
        "\n- ladder + breaker vs breaker alone: {:+.2} ns (medians); the instruction target (at most a few \
         instructions more) is checked by bench/callgrind.sh",
        ladder.median - breaker.median
    );
    println!(
        "- ladder + breaker vs backon alone: {:.2} ns vs {:.2} ns (medians)",
        ladder.median, backon.median
    );
}
