//! `cargo bench -p bench --bench hal`: what `Guarded` adds to one I2C transaction, side by
//! side in one process with the bare bus and with the same breaker wrapped by hand.
//!
//! The bus is a null `I2c` whose `write_read` copies one byte (through `black_box`, so
//! it is really done every time). Each breaker trips after 3 strikes with a 30 s cooldown
//! and reads `StdClock`. Cases (keys for `--icount` and `BENCH=hal bench/callgrind.sh`):
//!
//! * `hal-bare`: the bus alone.
//! * `hal-by-hand`: `SharedBreaker::call_classified` around the bus's `write_read`.
//! * `hal-guarded`: `Guarded<_, &SharedBreaker, _>::write_read`.
//! * `hal-table`: `Guarded<_, &DeviceBreakers<4>, _>::write_read` to the table's last
//!   address (the longest lookup).
//! * `hal-refused`: `Guarded` with its breaker open: refused.
//!
//! Modes: no argument prints the table (ns per transaction, median of interleaved
//! rounds); `--icount CASE COUNT` runs one case `COUNT` times and exits (for
//! callgrind.sh); `--list` prints the case keys.

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use bench::Stats;
use breaker_core::{ByErrorKind, DeviceBreakers, Duration, Guarded, Policy, Reason, SharedBreaker, StdClock};
use embedded_hal::i2c::{Error as _, ErrorKind, ErrorType, I2c, Operation};

/// Trip after 3 consecutive strikes, refuse for 30 s.
static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
const ADDRESS: u8 = 0x48;
/// Interleaved rounds; one sample of each case per round.
const ROUNDS: usize = 15;
/// Wall time one sample aims at.
const SAMPLE_TARGET: StdDuration = StdDuration::from_millis(15);

/// A bus that answers every `write_read` by echoing the first byte written.
struct NullBus;

impl ErrorType for NullBus {
    type Error = ErrorKind;
}

impl I2c for NullBus {
    #[inline]
    fn write_read(&mut self, address: u8, write: &[u8], read: &mut [u8]) -> Result<(), ErrorKind> {
        if let (Some(w), Some(r)) = (write.first(), read.first_mut()) {
            *r = black_box(*w ^ address);
        }
        Ok(())
    }

    fn transaction(&mut self, _: u8, _: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        Ok(())
    }
}

/// `n` transactions through `bus`; the sum of the bytes read (refusals count 1).
#[inline(always)]
fn transactions<E>(n: u64, mut write_read: impl FnMut(&[u8], &mut [u8]) -> Result<(), E>) -> u64 {
    let mut acc = 0u64;
    let mut buf = [0u8; 1];
    for i in 0..n {
        match write_read(&[i as u8], &mut buf) {
            Ok(()) => acc = acc.wrapping_add(u64::from(buf[0])),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

#[inline(never)]
fn loop_bare(bus: &mut NullBus, n: u64) -> u64 {
    transactions(n, |w, r| bus.write_read(ADDRESS, w, r))
}

#[inline(never)]
fn loop_by_hand(bus: &mut NullBus, breaker: &SharedBreaker, n: u64) -> u64 {
    transactions(n, |w, r| {
        breaker.call_classified(
            &StdClock,
            || bus.write_read(ADDRESS, w, r),
            |e| ByErrorKind::i2c(e.kind()),
        )
    })
}

#[inline(never)]
fn loop_guarded(bus: &mut Guarded<NullBus, &SharedBreaker, StdClock>, n: u64) -> u64 {
    transactions(n, |w, r| bus.write_read(ADDRESS, w, r))
}

#[inline(never)]
fn loop_table(bus: &mut Guarded<NullBus, &DeviceBreakers<4>, StdClock>, n: u64) -> u64 {
    transactions(n, |w, r| bus.write_read(ADDRESS, w, r))
}

fn table() -> DeviceBreakers<4> {
    DeviceBreakers::new([0x10, 0x20, 0x30, ADDRESS], [const { SharedBreaker::new(&POLICY) }; 4])
}

/// Runs `run` and checks its sum: `expected_ok` every transaction worked (the bytes read
/// echo those written), else every one was refused.
fn timed(n: u64, expected_ok: bool, run: impl FnOnce() -> u64) -> StdDuration {
    let start = StdInstant::now();
    let acc = black_box(run());
    let elapsed = start.elapsed();
    let expected = if expected_ok {
        (0..n).map(|i| u64::from(i as u8 ^ ADDRESS)).sum()
    } else {
        n
    };
    assert_eq!(acc, expected, "a transaction went the wrong way");
    elapsed
}

fn run_bare(n: u64) -> StdDuration {
    let mut bus = NullBus;
    timed(n, true, || loop_bare(black_box(&mut bus), n))
}

fn run_by_hand(n: u64) -> StdDuration {
    let breaker = SharedBreaker::new(&POLICY);
    let mut bus = NullBus;
    timed(n, true, || loop_by_hand(black_box(&mut bus), black_box(&breaker), n))
}

fn run_guarded(n: u64) -> StdDuration {
    let breaker = SharedBreaker::new(&POLICY);
    let mut bus = Guarded::new(NullBus, black_box(&breaker), StdClock);
    timed(n, true, || loop_guarded(black_box(&mut bus), n))
}

fn run_table(n: u64) -> StdDuration {
    let breakers = table();
    let mut bus = Guarded::new(NullBus, black_box(&breakers), StdClock);
    timed(n, true, || loop_table(black_box(&mut bus), n))
}

fn run_refused(n: u64) -> StdDuration {
    let breaker = SharedBreaker::new(&POLICY);
    breaker.trip(Reason::Predicted, breaker_core::Clock::now(&StdClock));
    assert!(!breaker.would_allow(breaker_core::Clock::now(&StdClock)));
    let mut bus = Guarded::new(NullBus, black_box(&breaker), StdClock);
    // (The loop is the one caller of `Guarded::write_read`, as in `run_guarded`: a second
    // call site here would change how the compiler inlines it into the loop.)
    timed(n, false, || loop_guarded(black_box(&mut bus), n))
}

struct Case {
    key: &'static str,
    label: &'static str,
    run: fn(u64) -> StdDuration,
}

const CASES: &[Case] = &[
    Case {
        key: "hal-bare",
        label: "the bare bus",
        run: run_bare,
    },
    Case {
        key: "hal-by-hand",
        label: "SharedBreaker::call_classified around it, by hand",
        run: run_by_hand,
    },
    Case {
        key: "hal-guarded",
        label: "Guarded<_, &SharedBreaker, _>",
        run: run_guarded,
    },
    Case {
        key: "hal-table",
        label: "Guarded<_, &DeviceBreakers<4>, _>, 4th address",
        run: run_table,
    },
    Case {
        key: "hal-refused",
        label: "Guarded, breaker open: refused",
        run: run_refused,
    },
];

fn calibrate(c: &Case) -> u64 {
    bench::calls_per_sample(SAMPLE_TARGET, c.run)
}

fn usage() -> ! {
    eprintln!("usage: hal [--bench]             the table");
    eprintln!("       hal --icount CASE COUNT   run one case COUNT times (for callgrind.sh)");
    eprintln!("       hal --list                list the cases");
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
            let c = CASES.iter().find(|c| c.key == *key).unwrap_or_else(|| usage());
            black_box((c.run)(count));
            return;
        }
        _ => usage(),
    }

    println!("## One I2C write_read: the bare bus, by hand, through Guarded (trip 3, 30 s, StdClock)\n");
    let ns: Vec<u64> = CASES.iter().map(calibrate).collect();
    let mut samples = vec![Vec::new(); CASES.len()];
    for _ in 0..ROUNDS {
        for (i, c) in CASES.iter().enumerate() {
            samples[i].push((c.run)(ns[i]).as_nanos() as f64 / ns[i] as f64);
        }
    }
    println!("| case | ns per transaction, median | p25 - p75 |");
    println!("|---|---:|---:|");
    for (c, s) in CASES.iter().zip(&samples) {
        let st = Stats::of(s);
        println!(
            "| {} (`{}`) | {:.2} | {:.2} - {:.2} |",
            c.label, c.key, st.median, st.p25, st.p75
        );
    }
    println!("\nInstructions per transaction, stable where nanoseconds are not: BENCH=hal bench/callgrind.sh");
}
