//! Support code for the benchmarks: a heap-counting global allocator wrapper, small
//! statistics helpers, and the `main` of the benchmarks whose cases time themselves
//! ([`timed_main`]). Not published.
//!
//! The benchmark itself lives in `benches/peers.rs`, because `failsafe` and `recloser`
//! are dev-dependencies of this crate only and only bench/test/example targets see those.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// A [`GlobalAlloc`] that forwards to [`System`] and counts allocations, frees and bytes.
///
/// Install it with `#[global_allocator] static A: CountingAlloc = CountingAlloc::new();`
/// and read it with [`CountingAlloc::snapshot`]. Counting costs one relaxed
/// `fetch_add` per event, paid only by code that allocates.
#[derive(Debug)]
pub struct CountingAlloc {
    allocs: AtomicU64,
    frees: AtomicU64,
    bytes_allocated: AtomicU64,
    bytes_freed: AtomicU64,
}

impl CountingAlloc {
    /// A counter at zero.
    pub const fn new() -> CountingAlloc {
        CountingAlloc {
            allocs: AtomicU64::new(0),
            frees: AtomicU64::new(0),
            bytes_allocated: AtomicU64::new(0),
            bytes_freed: AtomicU64::new(0),
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> AllocSnapshot {
        AllocSnapshot {
            allocs: self.allocs.load(Ordering::Relaxed),
            frees: self.frees.load(Ordering::Relaxed),
            bytes_allocated: self.bytes_allocated.load(Ordering::Relaxed),
            bytes_freed: self.bytes_freed.load(Ordering::Relaxed),
        }
    }

    fn on_alloc(&self, size: usize) {
        self.allocs.fetch_add(1, Ordering::Relaxed);
        self.bytes_allocated.fetch_add(size as u64, Ordering::Relaxed);
    }

    fn on_free(&self, size: usize) {
        self.frees.fetch_add(1, Ordering::Relaxed);
        self.bytes_freed.fetch_add(size as u64, Ordering::Relaxed);
    }
}

impl Default for CountingAlloc {
    fn default() -> Self {
        CountingAlloc::new()
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees carry over; the counters are side effects only.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.on_alloc(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.on_alloc(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.on_free(layout.size());
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A realloc counts as one free of the old block and one allocation of the new one.
        self.on_free(layout.size());
        self.on_alloc(new_size);
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocator counts at one moment; subtract two to get what happened in between.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocSnapshot {
    /// Allocations (a realloc counts as one).
    pub allocs: u64,
    /// Frees (a realloc counts as one).
    pub frees: u64,
    /// Bytes handed out.
    pub bytes_allocated: u64,
    /// Bytes given back.
    pub bytes_freed: u64,
}

impl AllocSnapshot {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: AllocSnapshot) -> AllocSnapshot {
        AllocSnapshot {
            allocs: self.allocs - earlier.allocs,
            frees: self.frees - earlier.frees,
            bytes_allocated: self.bytes_allocated - earlier.bytes_allocated,
            bytes_freed: self.bytes_freed - earlier.bytes_freed,
        }
    }

    /// Bytes allocated and not freed (negative if more was freed than allocated).
    pub fn net_bytes(self) -> i64 {
        self.bytes_allocated as i64 - self.bytes_freed as i64
    }

    /// `"N (B B)"`: allocations and bytes allocated, or `"0"`.
    pub fn short(self) -> String {
        if self.allocs == 0 {
            "0".to_string()
        } else {
            format!("{} ({} B)", self.allocs, self.bytes_allocated)
        }
    }
}

/// Order statistics of a set of per-call times, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// The fastest sample.
    pub min: f64,
    /// The first quartile.
    pub p25: f64,
    /// The median sample.
    pub median: f64,
    /// The third quartile.
    pub p75: f64,
    /// The slowest sample.
    pub max: f64,
}

impl Stats {
    /// The statistics of `samples` (not empty).
    ///
    /// # Panics
    /// If `samples` is empty.
    pub fn of(samples: &[f64]) -> Stats {
        assert!(!samples.is_empty(), "no samples");
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
        Stats {
            min: s[0],
            p25: at(0.25),
            median: at(0.5),
            p75: at(0.75),
            max: s[s.len() - 1],
        }
    }

    /// The interquartile range as a fraction of the median: a simple noise figure.
    pub fn spread(&self) -> f64 {
        (self.p75 - self.p25) / self.median
    }
}

/// How many calls one sample makes so that it takes about `target`: `run(n)` times `n`
/// calls, tried with growing `n` until a run takes an eighth of the target, then scaled
/// (at least 1,000 calls, at most 2^30).
pub fn calls_per_sample(target: std::time::Duration, run: impl Fn(u64) -> std::time::Duration) -> u64 {
    let mut n = 1_000u64;
    loop {
        let t = run(n);
        if t >= target / 8 || n >= 1 << 30 {
            let scaled = n as f64 * target.as_secs_f64() / t.as_secs_f64().max(1e-9);
            return (scaled as u64).clamp(1_000, 1 << 30);
        }
        n *= 4;
    }
}

/// One case of a benchmark whose runs time themselves and count their own allocations
/// (the `metrics` and `tower` benchmarks): `run(n)` makes `n` calls and returns how long
/// they took and how many heap allocations they made.
#[derive(Debug)]
pub struct TimedCase {
    /// What `--list` prints and `--icount` takes.
    pub key: &'static str,
    /// The row's label in the ns table.
    pub label: &'static str,
    /// `n` calls: their time and their allocations.
    pub run: fn(u64) -> (std::time::Duration, u64),
}

/// The `main` of a benchmark of [`TimedCase`]s, named `name` in its usage text. Modes
/// (argv; `cargo bench` adds a `--bench` flag, which is ignored):
///
/// * no mode: ns per call of every case, `rounds` interleaved rounds of about 15 ms each,
///   medians, and heap allocations per call, as a Markdown table; then `after()`;
/// * `--icount CASE COUNT`: runs one case for `COUNT` calls and exits (for callgrind.sh);
/// * `--allocs`: the allocations inside each case's loop of 100 000 calls, one line per
///   case (`CASE\tALLOCATIONS`);
/// * `--list`: the case keys and labels.
pub fn timed_main(name: &str, cases: &[TimedCase], rounds: usize, after: impl FnOnce()) {
    let usage = || -> ! {
        eprintln!("usage: {name} [--bench]              ns and allocations per call of every case");
        eprintln!("       {name} --icount CASE COUNT     run one case COUNT calls (for callgrind.sh)");
        eprintln!("       {name} --allocs                allocations in each case's loop of 100000 calls");
        eprintln!("       {name} --list                  list the cases");
        std::process::exit(2);
    };
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => {}
        ["--list"] => {
            for c in cases {
                println!("{}\t{}", c.key, c.label);
            }
            return;
        }
        ["--icount", key, count] => {
            let count: u64 = count.parse().unwrap_or_else(|_| usage());
            let Some(case) = cases.iter().find(|c| c.key == *key) else {
                eprintln!("no case {key}; --list lists them");
                std::process::exit(2)
            };
            std::hint::black_box((case.run)(count));
            return;
        }
        ["--allocs"] => {
            for c in cases {
                println!("{}\t{}", c.key, (c.run)(100_000).1);
            }
            return;
        }
        _ => usage(),
    }

    let target = std::time::Duration::from_millis(15);
    let counts: Vec<u64> = cases
        .iter()
        .map(|c| calls_per_sample(target, |n| (c.run)(n).0))
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut allocs = vec![0u64; cases.len()];
    for _ in 0..rounds {
        for (i, c) in cases.iter().enumerate() {
            let (t, a) = (c.run)(counts[i]);
            samples[i].push(t.as_nanos() as f64 / counts[i] as f64);
            allocs[i] += a;
        }
    }
    println!("| case | ns per call (median) | min | max | allocations per call |");
    println!("|---|---:|---:|---:|---:|");
    for (i, c) in cases.iter().enumerate() {
        let st = Stats::of(&samples[i]);
        let per_call = allocs[i] as f64 / (counts[i] * rounds as u64) as f64;
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {per_call} |",
            c.label, st.median, st.min, st.max
        );
    }
    after();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_five() {
        let s = Stats::of(&[5.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!((s.min, s.p25, s.median, s.p75, s.max), (1.0, 2.0, 3.0, 4.0, 5.0));
    }

    #[test]
    fn snapshot_difference() {
        let a = AllocSnapshot {
            allocs: 1,
            frees: 0,
            bytes_allocated: 10,
            bytes_freed: 0,
        };
        let b = AllocSnapshot {
            allocs: 3,
            frees: 1,
            bytes_allocated: 40,
            bytes_freed: 10,
        };
        let d = b.since(a);
        assert_eq!(
            d,
            AllocSnapshot {
                allocs: 2,
                frees: 1,
                bytes_allocated: 30,
                bytes_freed: 10
            }
        );
        assert_eq!(d.net_bytes(), 20);
        assert_eq!(d.short(), "2 (30 B)");
    }
}
