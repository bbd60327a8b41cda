//! `cargo bench -p bench --bench compose`: what the compositions of the breaker cost per
//! call, side by side in one process with the plain `SharedBreaker::call` they build on
//! (and the same call over a reloadable `LivePolicy`): a `FallbackChain` turn to its healthy primary and to a backup, a `HealthRouter` call of
//! the tool itself and of a substitute, and a `#[circuit_breaker(fallback = ..)]` function
//! while closed and while refusing.
//!
//! Modes (argv; `cargo bench` adds a `--bench` flag, which is ignored):
//!
//! * no mode: every case, median ns per call over rounds taken round-robin.
//! * `--icount CASE COUNT`: runs one case for `COUNT` calls and exits; for instruction
//!   counts, `BENCH=compose bench/callgrind.sh CASE..` runs it twice under callgrind.
//! * `--list`: the case keys.
//!
//! Each measured loop is an `#[inline(never)]` function named `loop_*`; the protected call
//! is `work` (the loop index through `black_box`), its results summed and `black_box`ed;
//! every sample's sum is checked before it is kept.

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use bench::Stats;
use breaker_core::{
    circuit_breaker, Backup, Classify, Duration, FallbackChain, HealthRouter, Instant, LivePolicy, ManualClock, Policy,
    PolicyStore, Row, SharedBreaker, Tool, DEFAULT_CHAIN_POLICY,
};

/// Trip after 3 consecutive strikes, refuse for 30 s.
static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[derive(Debug)]
struct Fail;
impl Classify for Fail {}

#[inline(always)]
fn work(i: u64) -> Result<u64, Fail> {
    Ok(black_box(i) & 0xFF)
}

// ---- the subjects ------------------------------------------------------------------------

static PLAIN: SharedBreaker = SharedBreaker::new(&POLICY);
/// The same policy, reloadable: a breaker over it reads it at each decision.
static LIVE: LivePolicy = LivePolicy::new(Policy::new(3, Duration::from_secs(30)));

static HEALTHY: FallbackChain<1> = FallbackChain::new(&DEFAULT_CHAIN_POLICY, "primary", [Backup::new("backup")]);
/// Tripped by [`prepare`]: every turn goes to its backup.
static TRIPPED: FallbackChain<1> = FallbackChain::new(&DEFAULT_CHAIN_POLICY, "primary", [Backup::new("backup")]);

static TOOL: SharedBreaker = SharedBreaker::new(&POLICY);
static SICK: SharedBreaker = SharedBreaker::new(&POLICY);
static SUBSTITUTE: SharedBreaker = SharedBreaker::new(&POLICY);
static ROUTER: HealthRouter<2> = HealthRouter::new([
    Row::new(Tool::new("tool", &TOOL, &CLOCK), &[]),
    Row::new(
        Tool::new("sick", &SICK, &CLOCK),
        &[Tool::new("substitute", &SUBSTITUTE, &CLOCK)],
    ),
]);

#[circuit_breaker(name = "bench::with_fallback", clock = CLOCK, fallback = work)]
fn with_fallback(i: u64) -> Result<u64, Fail> {
    work(i)
}

#[circuit_breaker(name = "bench::refusing", trip = 1, clock = CLOCK, fallback = stand_in)]
fn refusing(i: u64, fail: bool) -> Result<u64, Fail> {
    if fail {
        Err(Fail)
    } else {
        work(i)
    }
}

fn stand_in(i: u64, _fail: bool) -> Result<u64, Fail> {
    work(i)
}

/// Trips what must be tripped, once.
fn prepare() {
    for _ in 0..3 {
        let _ = TRIPPED.call(&CLOCK, |_| Err::<(), _>(Fail));
        let _ = SICK.call(&CLOCK, || Err::<(), _>(Fail));
    }
    let _ = refusing(0, true);
}

// ---- the loops ---------------------------------------------------------------------------

#[inline(never)]
fn loop_plain<P: PolicyStore>(b: &SharedBreaker<(), P>, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = b.call(&CLOCK, || work(i)) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

#[inline(never)]
fn loop_chain(chain: &FallbackChain<1>, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = chain.call(&CLOCK, |_| work(i)) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

#[inline(never)]
fn loop_router(router: &HealthRouter<2>, tool: &str, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = router.call(tool, |_| work(i)) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

#[inline(never)]
fn loop_macro_fallback(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = with_fallback(i) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

#[inline(never)]
fn loop_macro_refusing(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = refusing(i, false) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

// ---- the table ---------------------------------------------------------------------------

struct Case {
    key: &'static str,
    label: &'static str,
    run: fn(u64) -> u64,
}

const CASES: &[Case] = &[
    Case {
        key: "plain-closed",
        label: "SharedBreaker::call, closed (the reference)",
        run: |n| loop_plain(black_box(&PLAIN), n),
    },
    Case {
        key: "live-closed",
        label: "SharedBreaker::call over a LivePolicy, closed",
        run: |n| loop_plain(black_box(&SharedBreaker::with_policy(&LIVE)), n),
    },
    Case {
        key: "chain-primary",
        label: "FallbackChain::call, to the healthy primary",
        run: |n| loop_chain(black_box(&HEALTHY), n),
    },
    Case {
        key: "chain-backup",
        label: "FallbackChain::call, primary tripped: to the backup",
        run: |n| loop_chain(black_box(&TRIPPED), n),
    },
    Case {
        key: "router-itself",
        label: "HealthRouter::call, the tool itself",
        run: |n| loop_router(black_box(&ROUTER), black_box("tool"), n),
    },
    Case {
        key: "router-substitute",
        label: "HealthRouter::call, tool tripped: its substitute",
        run: |n| loop_router(black_box(&ROUTER), black_box("sick"), n),
    },
    Case {
        key: "macro-fallback-closed",
        label: "#[circuit_breaker(fallback = ..)] fn, closed",
        run: loop_macro_fallback,
    },
    Case {
        key: "macro-fallback-refusing",
        label: "#[circuit_breaker(fallback = ..)] fn, open: the fallback answers",
        run: loop_macro_refusing,
    },
];

/// Every case's sum over `n` calls: each answers `i & 0xFF` for call `i`.
fn expected(n: u64) -> u64 {
    (0..n).fold(0u64, |acc, i| acc.wrapping_add(i & 0xFF))
}

fn main() {
    prepare();
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--list"] => CASES.iter().for_each(|c| println!("{}", c.key)),
        ["--icount", key, count] => {
            let case = CASES
                .iter()
                .find(|c| c.key == *key)
                .unwrap_or_else(|| panic!("no case {key}"));
            let n: u64 = count.parse().expect("COUNT is a number");
            assert_eq!(black_box((case.run)(n)), expected(n), "{key}");
        }
        [] => table(),
        other => panic!("unknown arguments {other:?}; see the file's documentation"),
    }
}

fn table() {
    const ROUNDS: usize = 15;
    const N: u64 = 2_000_000;
    let want = expected(N);
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
    for _ in 0..ROUNDS {
        for (case, kept) in CASES.iter().zip(&mut samples) {
            let start = StdInstant::now();
            let got = black_box((case.run)(N));
            let took: StdDuration = start.elapsed();
            assert_eq!(got, want, "{}", case.key);
            kept.push(took.as_secs_f64() * 1e9 / N as f64);
        }
    }
    println!("| case | ns per call (median of {ROUNDS}) |");
    println!("|---|---:|");
    for (case, kept) in CASES.iter().zip(samples) {
        println!("| {} (`{}`) | {:.2} |", case.label, case.key, Stats::of(&kept).median);
    }
}
