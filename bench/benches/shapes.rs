//! `cargo bench -p bench --bench shapes`: the payload-shape matrix. What a guarded call
//! costs for each result type a user writes, beside a reference of the same shape.
//!
//! Each shape is a closure `body(i) -> Result<T, E>` that answers `Ok` (it fails only for
//! `u64::MAX`, which the loops never pass, so its error path is there and not taken).
//! For every shape the matrix measures:
//!
//! * closed success: `SharedBreaker::call` and `Breaker::call` by hand in the caller's
//!   loop, and a `#[circuit_breaker]` fn inlined into it, each against reference A of the
//!   same shape (one atomic load and a branch around the same closure, in the same loop);
//!   and a `#[circuit_breaker]` fn kept out of line (`#[inline(never)]`, two call sites)
//!   against reference F of the same shape (the same out-of-line fn with the two checks
//!   of a bare word any shared breaker makes there).
//! * refusal while open and cooling down: the same four paths, against reference B of the
//!   same shape (one atomic load, a clock read, a compare); the attribute's refusal makes
//!   the function's own error from the [`Refused`], so its references do too (reference
//!   B into `E`, inline; reference F's refusal, out of line).
//! * the floors, measured beside the references: reference A2 (reference F's two checks of
//!   a bare word, inlined into the loop: the least a shared breaker inlined there does) and
//!   reference B2 (reference B plus what a refusal must do: the cooldown read from memory,
//!   the skip counted, the `retry_in` made). The instruction matrix is printed twice, its
//!   verdicts against the references and then against the floors.
//!
//! Modes (argv; `cargo bench` adds a `--bench` flag, which is ignored):
//!
//! * no mode: the wall-clock matrix (ns per call, the median of three runs in this process,
//!   each the median of its rounds), the two-thread refusal and the allocations per call.
//! * `--icount CASE COUNT`, `--list`: as the `peers` benchmark (for `bench/callgrind.sh`).
//! * `--icount-table FILE`: prints the instruction matrix and its verdicts from `FILE`, lines
//!   of `CASE INSTRUCTIONS_PER_CALL` (what `bench/callgrind.sh` measured).

use std::collections::HashMap;
use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use bench::{CountingAlloc, Stats};
use breaker_core::{
    circuit_breaker, Breaker, Classify, Clock, Duration, Policy, RefusalReason, Refused, SharedBreaker, StdClock,
    WordTicket,
};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

/// Trip after 3 consecutive strikes, refuse for 30 s (the `peers` benchmark's policy).
static POLICY: Policy = Policy::new(3, Duration::from_secs(30));

/// The attribute's clock (it takes a `static`).
static STD_CLOCK: StdClock = StdClock;

/// What a refused (or failed) call adds to a loop's accumulator: far from any sum of
/// successes, so that a loop whose breaker is not in the state its case assumes is caught.
const REFUSED: u64 = 1 << 32;

/// The cooldown's deadline in the reference loops' compare, in milliseconds of
/// `StdClock` (never reached: the references always refuse).
const DEADLINE: u32 = u32::MAX;

/// Reference B2's cooldown in milliseconds, read from memory as a breaker reads its
/// policy's (never over: the opening's instant in its word is the first clock reading).
static COOLDOWN_MS: AtomicU32 = AtomicU32::new(u32::MAX);

/// breaker-core's own test of its word for "closed with nothing pending".
#[inline(always)]
fn is_hot(word: u64) -> bool {
    WordTicket::hot(word).is_some()
}

/// The word of a tripped breaker, for reference B.
fn open_word() -> u64 {
    let b = SharedBreaker::new(&POLICY);
    for _ in 0..3 {
        let _ = b.call(&StdClock, || Err::<(), _>(Unit));
    }
    assert!(!is_hot(b.word()));
    b.word()
}

/// A unit error: no payload, a strike.
#[derive(Debug)]
pub struct Unit;

impl Classify for Unit {}

impl From<Refused> for Unit {
    fn from(_: Refused) -> Unit {
        Unit
    }
}

/// A 64-byte result.
#[derive(Debug, Clone, Copy)]
pub struct Big(pub [u64; 8]);

/// An I/O error that is a strike and allocates nothing (the trip call's error).
fn io_fail() -> io::Error {
    io::Error::from(io::ErrorKind::TimedOut)
}

/// The refusal reference B's refusal produces (retry time from the compare, as the
/// breaker's does).
#[inline(always)]
fn refused_at(now_ms: u32) -> Refused {
    Refused {
        reason: RefusalReason::Open,
        retry_in: Some(Duration::from_millis(DEADLINE.wrapping_sub(now_ms))),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    AllOk,
    AllRefused,
}

/// The paths of the matrix, in its columns' order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Path {
    RefA,
    RefA2,
    Shared,
    Single,
    AttrIn,
    RefF,
    AttrOut,
    RefB,
    RefB2,
    SharedRefused,
    SingleRefused,
    RefBInto,
    AttrInRefused,
    RefFRefused,
    AttrOutRefused,
}

impl Path {
    const ALL: [Path; 15] = [
        Path::RefA,
        Path::RefA2,
        Path::Shared,
        Path::Single,
        Path::AttrIn,
        Path::RefF,
        Path::AttrOut,
        Path::RefB,
        Path::RefB2,
        Path::SharedRefused,
        Path::SingleRefused,
        Path::RefBInto,
        Path::AttrInRefused,
        Path::RefFRefused,
        Path::AttrOutRefused,
    ];

    fn key(self) -> &'static str {
        match self {
            Path::RefA => "ref-a",
            Path::RefA2 => "ref-a2",
            Path::Shared => "shared",
            Path::Single => "single",
            Path::AttrIn => "attr-in",
            Path::RefF => "ref-f",
            Path::AttrOut => "attr-out",
            Path::RefB => "ref-b",
            Path::RefB2 => "ref-b2",
            Path::SharedRefused => "shared-refused",
            Path::SingleRefused => "single-refused",
            Path::RefBInto => "ref-b-into",
            Path::AttrInRefused => "attr-in-refused",
            Path::RefFRefused => "ref-f-refused",
            Path::AttrOutRefused => "attr-out-refused",
        }
    }

    fn expect(self) -> Expect {
        match self {
            Path::RefA | Path::RefA2 | Path::Shared | Path::Single | Path::AttrIn | Path::RefF | Path::AttrOut => {
                Expect::AllOk
            }
            _ => Expect::AllRefused,
        }
    }

    /// The floor this path is measured against beside its reference (the work any
    /// breaker with the same contract does there), and the same budget.
    fn floor(self) -> Option<(Path, f64)> {
        match self {
            Path::Shared | Path::AttrIn => Some((Path::RefA2, 1.0)),
            Path::SharedRefused | Path::SingleRefused => Some((Path::RefB2, 5.0)),
            _ => self.reference(),
        }
    }

    /// The reference this path is measured against, and the budget in instructions.
    fn reference(self) -> Option<(Path, f64)> {
        match self {
            Path::Shared | Path::Single | Path::AttrIn => Some((Path::RefA, 1.0)),
            Path::AttrOut => Some((Path::RefF, 1.0)),
            Path::SharedRefused | Path::SingleRefused => Some((Path::RefB, 5.0)),
            Path::AttrInRefused => Some((Path::RefBInto, 5.0)),
            Path::AttrOutRefused => Some((Path::RefFRefused, 5.0)),
            _ => None,
        }
    }
}

/// One shape: its row label, its key prefix, and how to run one of its paths for `n` calls
/// (setting up untimed, timing the loop, checking its result).
struct Shape {
    key: &'static str,
    label: &'static str,
    run: fn(Path, u64) -> StdDuration,
}

fn check(expect: Expect, n: u64, acc: u64, sum_ok: fn(u64) -> u64, what: &str) {
    let want = match expect {
        Expect::AllOk => sum_ok(n),
        Expect::AllRefused => n.wrapping_mul(REFUSED),
    };
    assert_eq!(acc, want, "{what}: the breaker did not behave as set up for this case");
}

/// The sum of `0..n`, wrapping like the loops (closed form: no per-call cost under
/// callgrind).
fn triangle(n: u64) -> u64 {
    (u128::from(n) * u128::from(n.saturating_sub(1)) / 2) as u64
}

/// One shape's module: its closure, its loops, its attribute-wrapped functions and its
/// runner. `fold` turns a success into what the loop sums; `sum_ok(n)` is the sum of `n`
/// successes' folds.
macro_rules! shape {
    ($m:ident, $label:literal, $t:ty, $e:ty, make = |$i:ident| $make:expr, fold = |$v:ident| $fold:expr,
     fail = $fail:expr, sum_ok = $sum:expr) => {
        mod $m {
            use super::*;

            type T = $t;
            type E = $e;

            /// The protected call: `Ok` for every argument the loops pass.
            #[inline(always)]
            pub fn body(i: u64) -> Result<T, E> {
                let $i = black_box(i);
                if $i == u64::MAX {
                    Err($fail)
                } else {
                    Ok($make)
                }
            }

            #[inline(always)]
            fn fold($v: &T) -> u64 {
                $fold
            }

            /// A loop's accumulation of one result.
            #[inline(always)]
            fn add<X>(acc: u64, r: &Result<T, X>) -> u64 {
                match r {
                    Ok(v) => acc.wrapping_add(fold(v)),
                    Err(_) => acc.wrapping_add(REFUSED),
                }
            }

            /// Reference A (closed) and B (open): one load, a branch, the closure; or the
            /// clock read and a compare.
            #[inline(never)]
            fn loop_ref(word: &AtomicU64, n: u64) -> u64 {
                let mut acc = 0u64;
                for i in 0..n {
                    if is_hot(word.load(Ordering::Acquire)) {
                        acc = add(acc, &body(i));
                    } else {
                        let now = STD_CLOCK.now().as_millis();
                        if now < DEADLINE {
                            acc = acc.wrapping_add(REFUSED);
                        }
                    }
                }
                acc
            }

            /// Reference B into `E`: the refusal made into the function's own error, as
            /// the attribute makes it.
            #[inline(never)]
            fn loop_ref_into(word: &AtomicU64, n: u64) -> u64 {
                let mut acc = 0u64;
                for i in 0..n {
                    let r: Result<T, E> = if is_hot(word.load(Ordering::Acquire)) {
                        body(i)
                    } else {
                        let now = STD_CLOCK.now().as_millis();
                        if now < DEADLINE {
                            Err(E::from(refused_at(now)))
                        } else {
                            body(i)
                        }
                    };
                    acc = add(acc, &r);
                }
                acc
            }

            /// Reference A2, the closed floor of a shared breaker inlined in a loop:
            /// reference F's two checks of a bare word, inlined (the refusal or probe and
            /// the report out of line).
            #[inline(never)]
            fn loop_ref_a2(n: u64) -> u64 {
                let mut acc = 0u64;
                for i in 0..n {
                    acc = add(acc, &floor_inline(i));
                }
                acc
            }

            /// Reference B2, the refusal floor of a breaker that reports its refusals: the
            /// load and test of the word, the clock read, the compare with a cooldown
            /// read from memory (the policy's) from the opening's instant kept in the
            /// word, the skip counted in memory beside the word (a plain increment), and
            /// the refusal made with its `retry_in`.
            #[inline(never)]
            fn loop_ref_b2(word: &AtomicU64, skips: &AtomicU64, n: u64) -> u64 {
                let mut acc = 0u64;
                for i in 0..n {
                    let w = word.load(Ordering::Acquire);
                    let r: Result<T, Refused> = if is_hot(w) {
                        body(i).map_err(|_| refused_at(0))
                    } else {
                        let elapsed = STD_CLOCK.now().as_millis().wrapping_sub((w >> 32) as u32);
                        let cooldown = black_box(&COOLDOWN_MS).load(Ordering::Relaxed);
                        if elapsed < cooldown {
                            skips.store(skips.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
                            Err(Refused {
                                reason: RefusalReason::Open,
                                retry_in: Some(Duration::from_millis(cooldown - elapsed)),
                            })
                        } else {
                            body(i).map_err(|_| refused_at(0))
                        }
                    };
                    acc = add(acc, &r);
                }
                acc
            }

            #[inline(never)]
            fn loop_shared(b: &SharedBreaker, n: u64) -> u64 {
                let mut acc = 0u64;
                for i in 0..n {
                    acc = add(acc, &b.call(&STD_CLOCK, || body(i)));
                }
                acc
            }

            #[inline(never)]
            fn loop_single(b: &mut Breaker, n: u64) -> u64 {
                let mut acc = 0u64;
                for i in 0..n {
                    acc = add(acc, &b.call(&STD_CLOCK, || body(i)));
                }
                acc
            }

            #[circuit_breaker(trip = 3, cooldown = "30s", clock = STD_CLOCK)]
            fn attr_in(i: u64) -> Result<T, E> {
                body(i)
            }

            #[circuit_breaker(trip = 1, cooldown = "1h", clock = STD_CLOCK)]
            fn attr_in_open(i: u64) -> Result<T, E> {
                body(i)
            }

            #[inline(never)]
            #[circuit_breaker(trip = 3, cooldown = "30s", clock = STD_CLOCK)]
            fn attr_out(i: u64) -> Result<T, E> {
                body(i)
            }

            #[inline(never)]
            #[circuit_breaker(trip = 1, cooldown = "1h", clock = STD_CLOCK)]
            fn attr_out_open(i: u64) -> Result<T, E> {
                body(i)
            }

            /// Reference F's word (closed, or open: written before each run).
            static FLOOR_WORD: AtomicU64 = AtomicU64::new(0);

            /// Reference F: the least a shared breaker adds to this fn out of line, two
            /// checks of a bare word; open, a clock read, a compare, the refusal made
            /// into `E` (out of line, as the attribute's is).
            #[inline(never)]
            fn floor(i: u64) -> Result<T, E> {
                floor_inline(i)
            }

            /// Reference F's body, for reference F (kept out of line) and reference A2
            /// (inlined into a loop).
            #[inline(always)]
            fn floor_inline(i: u64) -> Result<T, E> {
                if !is_hot(FLOOR_WORD.load(Ordering::Acquire)) {
                    return floor_gate(i);
                }
                let result = body(i);
                if result.is_err() || !is_hot(FLOOR_WORD.load(Ordering::Acquire)) {
                    return floor_report(result);
                }
                result
            }

            #[cold]
            #[inline(never)]
            fn floor_gate(i: u64) -> Result<T, E> {
                let now = STD_CLOCK.now().as_millis();
                if now < DEADLINE {
                    return Err(E::from(refused_at(now)));
                }
                black_box(body(black_box(i)))
            }

            #[cold]
            #[inline(never)]
            fn floor_report(result: Result<T, E>) -> Result<T, E> {
                black_box(result)
            }

            macro_rules! looped {
                ($name:ident, $f:ident) => {
                    #[inline(never)]
                    fn $name(n: u64) -> u64 {
                        let mut acc = 0u64;
                        for i in 0..n {
                            acc = add(acc, &$f(i));
                        }
                        acc
                    }
                };
            }
            looped!(loop_attr_in, attr_in);
            looped!(loop_attr_in_open, attr_in_open);
            looped!(loop_attr_out, attr_out);
            looped!(loop_attr_out_open, attr_out_open);
            looped!(loop_floor, floor);

            /// The other call site of each function (and the trip of the open ones).
            #[inline(never)]
            fn first_calls() {
                let _ = black_box(attr_in(black_box(1)));
                let _ = black_box(attr_out(black_box(1)));
                let _ = black_box(attr_in_open(black_box(u64::MAX)));
                let _ = black_box(attr_out_open(black_box(u64::MAX)));
                let _ = black_box(floor(black_box(1)));
            }

            pub fn run(path: Path, n: u64) -> StdDuration {
                first_calls();
                let mut shared = SharedBreaker::new(&POLICY);
                let mut single = Breaker::new(POLICY.clone());
                let open = path.expect() == Expect::AllRefused;
                if open {
                    for _ in 0..3 {
                        let _ = shared.call(&STD_CLOCK, || body(u64::MAX));
                        let _ = single.call(&STD_CLOCK, || body(u64::MAX));
                    }
                }
                let word = AtomicU64::new(if open { open_word() } else { 0 });
                let skips = AtomicU64::new(0);
                FLOOR_WORD.store(black_box(word.load(Ordering::Relaxed)), Ordering::Release);
                let _ = STD_CLOCK.now(); // StdClock counts from its first reading: untimed
                let (shared, single, word) = (black_box(&mut shared), black_box(&mut single), black_box(&word));
                let n = black_box(n);
                let start = StdInstant::now();
                let acc = match path {
                    Path::RefA | Path::RefB => loop_ref(word, n),
                    Path::RefA2 => loop_ref_a2(n),
                    Path::RefB2 => loop_ref_b2(word, &skips, n),
                    Path::RefBInto => loop_ref_into(word, n),
                    Path::Shared | Path::SharedRefused => loop_shared(shared, n),
                    Path::Single | Path::SingleRefused => loop_single(single, n),
                    Path::AttrIn => loop_attr_in(n),
                    Path::AttrInRefused => loop_attr_in_open(n),
                    Path::AttrOut => loop_attr_out(n),
                    Path::AttrOutRefused => loop_attr_out_open(n),
                    Path::RefF | Path::RefFRefused => loop_floor(n),
                };
                let elapsed = start.elapsed();
                check(
                    path.expect(),
                    n,
                    black_box(acc),
                    $sum,
                    concat!($label, " ", stringify!($m)),
                );
                elapsed
            }
        }
    };
}

shape!(
    unit_unit,
    "Result<(), Unit>",
    (),
    Unit,
    make = |i| (),
    fold = |v| {
        let () = *v;
        1
    },
    fail = Unit,
    sum_ok = |n| n
);
shape!(
    u32_unit,
    "Result<u32, Unit>",
    u32,
    Unit,
    make = |i| i as u32,
    fold = |v| u64::from(*v),
    fail = Unit,
    sum_ok = triangle
);
shape!(
    u64_unit,
    "Result<u64, Unit>",
    u64,
    Unit,
    make = |i| i,
    fold = |v| *v,
    fail = Unit,
    sum_ok = triangle
);
shape!(
    string_unit,
    "Result<String, Unit>",
    String,
    Unit,
    make = |i| black_box(String::new()),
    fold = |v| v.len() as u64 + 1,
    fail = Unit,
    sum_ok = |n| n
);
shape!(
    big_unit,
    "Result<[u64; 8] struct, Unit>",
    Big,
    Unit,
    make = |i| Big([i; 8]),
    fold = |v| v.0.iter().fold(0, |a: u64, x| a.wrapping_add(*x)) >> 3,
    fail = Unit,
    sum_ok = triangle
);
shape!(
    unit_io,
    "Result<(), io::Error>",
    (),
    io::Error,
    make = |i| (),
    fold = |v| {
        let () = *v;
        1
    },
    fail = io_fail(),
    sum_ok = |n| n
);
shape!(
    u32_io,
    "Result<u32, io::Error>",
    u32,
    io::Error,
    make = |i| i as u32,
    fold = |v| u64::from(*v),
    fail = io_fail(),
    sum_ok = triangle
);
shape!(
    u64_io,
    "Result<u64, io::Error>",
    u64,
    io::Error,
    make = |i| i,
    fold = |v| *v,
    fail = io_fail(),
    sum_ok = triangle
);
shape!(
    string_io,
    "Result<String, io::Error>",
    String,
    io::Error,
    make = |i| black_box(String::new()),
    fold = |v| v.len() as u64 + 1,
    fail = io_fail(),
    sum_ok = |n| n
);
shape!(
    vec_io,
    "Result<Vec<u8>, io::Error>",
    Vec<u8>,
    io::Error,
    make = |i| black_box(Vec::new()),
    fold = |v| v.len() as u64 + 1,
    fail = io_fail(),
    sum_ok = |n| n
);
shape!(
    big_io,
    "Result<[u64; 8] struct, io::Error>",
    Big,
    io::Error,
    make = |i| Big([i; 8]),
    fold = |v| v.0.iter().fold(0, |a: u64, x| a.wrapping_add(*x)) >> 3,
    fail = io_fail(),
    sum_ok = triangle
);

const SHAPES: &[Shape] = &[
    Shape {
        key: "unit-unit",
        label: "`Result<(), Unit>`",
        run: unit_unit::run,
    },
    Shape {
        key: "u32-unit",
        label: "`Result<u32, Unit>`",
        run: u32_unit::run,
    },
    Shape {
        key: "u64-unit",
        label: "`Result<u64, Unit>`",
        run: u64_unit::run,
    },
    Shape {
        key: "string-unit",
        label: "`Result<String, Unit>`",
        run: string_unit::run,
    },
    Shape {
        key: "big-unit",
        label: "`Result<Big, Unit>` (64 B)",
        run: big_unit::run,
    },
    Shape {
        key: "unit-io",
        label: "`Result<(), io::Error>`",
        run: unit_io::run,
    },
    Shape {
        key: "u32-io",
        label: "`Result<u32, io::Error>`",
        run: u32_io::run,
    },
    Shape {
        key: "u64-io",
        label: "`Result<u64, io::Error>`",
        run: u64_io::run,
    },
    Shape {
        key: "string-io",
        label: "`Result<String, io::Error>`",
        run: string_io::run,
    },
    Shape {
        key: "vec-io",
        label: "`Result<Vec<u8>, io::Error>`",
        run: vec_io::run,
    },
    Shape {
        key: "big-io",
        label: "`Result<Big, io::Error>` (64 B)",
        run: big_io::run,
    },
];

/// Every case: `(key, shape, path)`.
fn cases() -> impl Iterator<Item = (String, &'static Shape, Path)> {
    SHAPES
        .iter()
        .flat_map(|s| Path::ALL.iter().map(move |&p| (format!("{}-{}", s.key, p.key()), s, p)))
}

// ---------------------------------------------------------------------------------------
// The matrix, printed from a figure per case (instructions or ns per call)
// ---------------------------------------------------------------------------------------

/// A verdict on a path's figure `x` against its reference's `y` and budget (instructions):
/// `None` for no verdict, else whether it is met and the bar, for the MISSED list.
type Verdict = dyn Fn(Path, f64, f64, f64) -> Option<(bool, String)>;

/// Prints one table: a row per shape; for each path its figure and its difference from its
/// reference, with MET/MISSED by `verdict`; returns whether every verdict was MET.
fn print_matrix(
    unit: &str,
    figure: &dyn Fn(&str) -> Option<f64>,
    against: fn(Path) -> Option<(Path, f64)>,
    verdict: &Verdict,
) -> bool {
    let cols = [
        (Path::RefA, "ref A"),
        (Path::RefA2, "ref A2 (ref F inlined)"),
        (Path::Shared, "`SharedBreaker::call`"),
        (Path::Single, "`Breaker::call`"),
        (Path::AttrIn, "attribute, inlined"),
        (Path::RefF, "ref F (out of line)"),
        (Path::AttrOut, "attribute, out of line"),
        (Path::RefB, "ref B"),
        (Path::RefB2, "ref B2 (+ skip count, retry time)"),
        (Path::SharedRefused, "`SharedBreaker::call`"),
        (Path::SingleRefused, "`Breaker::call`"),
        (Path::RefBInto, "ref B into `E`"),
        (Path::AttrInRefused, "attribute, inlined"),
        (Path::RefFRefused, "ref F (out of line)"),
        (Path::AttrOutRefused, "attribute, out of line"),
    ];
    print!("| shape ({unit}/call) |");
    for (p, label) in cols {
        let closed = p.expect() == Expect::AllOk;
        print!(" {} {label} |", if closed { "closed:" } else { "refused:" });
    }
    println!();
    println!("|---|{}", "---:|".repeat(cols.len()));
    let mut all_met = true;
    let mut missed = Vec::new();
    for s in SHAPES {
        print!("| {} |", s.label);
        for (p, _) in cols {
            let key = format!("{}-{}", s.key, p.key());
            let Some(x) = figure(&key) else {
                print!(" |");
                continue;
            };
            let cell = match against(p).and_then(|(r, b)| Some((figure(&format!("{}-{}", s.key, r.key()))?, b))) {
                Some((y, budget)) => match verdict(p, x, y, budget) {
                    Some((met, bar)) => {
                        if !met {
                            all_met = false;
                            missed.push(format!("{key} {x:.2} vs {y:.2} ({bar})"));
                        }
                        format!("{x:.2} ({:+.2}) {}", x - y, if met { "MET" } else { "**MISSED**" })
                    }
                    None => format!("{x:.2} ({:+.2})", x - y),
                },
                None => format!("{x:.2}"),
            };
            print!(" {cell} |");
        }
        println!();
    }
    println!();
    if missed.is_empty() {
        println!("Every shape's figure is within its budget: MET.");
    } else {
        println!("MISSED: {}", missed.join("; "));
    }
    println!();
    all_met
}

/// `--icount-table FILE`: the instruction matrix from what `bench/callgrind.sh` measured.
fn icount_table(file: &str) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| {
        eprintln!("shapes: cannot read {file}: {e}");
        std::process::exit(2)
    });
    let mut figures = HashMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if let (Some(k), Some(v)) = (it.next(), it.next()) {
            match v.parse::<f64>() {
                Ok(v) => {
                    figures.insert(k.to_string(), v);
                }
                Err(_) => {
                    eprintln!("shapes: {file}: not a number in {line:?}");
                    std::process::exit(2)
                }
            }
        }
    }
    let budget = |_, x: f64, y: f64, budget: f64| Some((x - y <= budget + 0.05, format!("budget {budget:+}")));
    println!(
        "### The payload-shape matrix: instructions per call (closed: budget +1 over the reference; refused: +5)\n"
    );
    print_matrix("instructions", &|k| figures.get(k).copied(), Path::reference, &budget);
    println!(
        "### The same figures against the floors: `SharedBreaker::call` and the inlined attribute against \
         reference A2 (+1), the refusals by hand against reference B2 (+5), the others as above\n"
    );
    print_matrix("instructions", &|k| figures.get(k).copied(), Path::floor, &budget);
}

// ---------------------------------------------------------------------------------------
// Wall clock
// ---------------------------------------------------------------------------------------

const SAMPLE_TARGET: StdDuration = StdDuration::from_millis(4);

/// ns per call of every case: three runs in this process, each the median of `rounds`
/// round-robin samples; the figure is the median of the three runs' medians.
fn wall_clock(rounds: usize) -> HashMap<String, f64> {
    let all: Vec<_> = cases().collect();
    let ns: Vec<u64> = all
        .iter()
        .map(|(_, s, p)| bench::calls_per_sample(SAMPLE_TARGET, |n| (s.run)(*p, n)))
        .collect();
    let mut runs: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
    for _ in 0..3 {
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
        for _ in 0..rounds {
            for (i, (_, s, p)) in all.iter().enumerate() {
                let t = (s.run)(*p, ns[i]);
                samples[i].push(t.as_nanos() as f64 / ns[i] as f64);
            }
        }
        for (i, s) in samples.iter().enumerate() {
            runs[i].push(Stats::of(s).median);
        }
    }
    all.iter()
        .zip(&runs)
        .map(|((k, _, _), r)| (k.clone(), Stats::of(r).median))
        .collect()
}

/// Two threads refused at once by one shared breaker, against one thread: ns per call per
/// thread, the same `Result<u64, Unit>` loop.
fn two_threads_refused(rounds: usize) {
    #[inline(never)]
    fn refused_loop(b: &SharedBreaker, n: u64) -> u64 {
        let mut acc = 0u64;
        for i in 0..n {
            if b.call(&STD_CLOCK, || u64_unit::body(i)).is_err() {
                acc = acc.wrapping_add(1);
            }
        }
        acc
    }
    let b = SharedBreaker::new(&POLICY);
    for _ in 0..3 {
        let _ = b.call(&STD_CLOCK, || Err::<(), _>(Unit));
    }
    let n = bench::calls_per_sample(SAMPLE_TARGET, |n| {
        let t = StdInstant::now();
        assert_eq!(refused_loop(black_box(&b), n), n);
        t.elapsed()
    });
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = StdInstant::now();
        assert_eq!(refused_loop(black_box(&b), n), n);
        one.push(t.elapsed().as_nanos() as f64 / n as f64);
        let arrived = AtomicU64::new(0);
        let spans: Vec<(StdInstant, StdInstant)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        arrived.fetch_add(1, Ordering::AcqRel);
                        while arrived.load(Ordering::Acquire) < 2 {
                            std::hint::spin_loop();
                        }
                        let start = StdInstant::now();
                        assert_eq!(refused_loop(black_box(&b), n), n);
                        (start, StdInstant::now())
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("bench thread panicked"))
                .collect()
        });
        let (a, c) = (spans[0], spans[1]);
        let together = a.1.min(c.1).saturating_duration_since(a.0.max(c.0));
        let longest = (a.1 - a.0).max(c.1 - c.0);
        if together.as_secs_f64() >= 0.9 * longest.as_secs_f64() {
            two.push(((a.1 - a.0) + (c.1 - c.0)).as_nanos() as f64 / 2.0 / n as f64);
        }
    }
    let one = Stats::of(&one);
    if two.is_empty() {
        println!("- refused, 2 threads at once: no sample where the threads overlapped (a busy machine): INCONCLUSIVE");
        return;
    }
    let kept = two.len();
    let two = Stats::of(&two);
    let ratio = two.median / one.median;
    println!(
        "- refused, 2 threads at once on one breaker vs 1 thread: {:.2} vs {:.2} ns per call per thread = {ratio:.2}x \
         (min {:.2}x; {kept}/{rounds} samples overlapped) -> {} (bar: <= 1.10x, noise)",
        two.median,
        one.median,
        two.min / one.min,
        if ratio <= 1.10 { "MET" } else { "MISSED" }
    );
}

/// Allocations per call of each path of two shapes (a counting global allocator): none of
/// the breaker's paths allocates; the attribute's refusal into `io::Error` allocates what
/// `io::Error::from(Refused)` does, as its reference does.
fn allocations() {
    println!("### Allocations per call (counting global allocator, 1,000 calls each)\n");
    println!("| shape | {} |", Path::ALL.map(Path::key).join(" | "));
    println!("|---|{}", "---:|".repeat(Path::ALL.len()));
    for s in SHAPES.iter().filter(|s| s.key == "u64-unit" || s.key == "u64-io") {
        print!("| {} |", s.label);
        for p in Path::ALL {
            let _ = (s.run)(p, 10); // first calls, trips: not counted
            let before = ALLOC.snapshot();
            let _ = (s.run)(p, 1_000);
            let d = ALLOC.snapshot().since(before);
            print!(" {} |", d.allocs as f64 / 1_000.0);
        }
        println!();
    }
    println!();
}

fn usage() -> ! {
    eprintln!("usage: shapes [--bench] [ROUNDS]      the wall-clock matrix (default 5 rounds per run, 3 runs)");
    eprintln!("       shapes --icount CASE COUNT     run one case COUNT times (for callgrind.sh)");
    eprintln!("       shapes --list                  list the cases");
    eprintln!("       shapes --icount-table FILE     the instruction matrix from callgrind.sh's figures");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let rounds = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => 5,
        ["--list"] => {
            for (k, s, p) in cases() {
                println!("{k}\t{} {}", s.label, p.key());
            }
            return;
        }
        ["--icount", key, count] => {
            let count: u64 = count.parse().unwrap_or_else(|_| usage());
            let Some((_, s, p)) = cases().find(|(k, _, _)| k == key) else {
                eprintln!("shapes: unknown case {key:?} (see --list)");
                std::process::exit(2)
            };
            black_box((s.run)(p, count));
            return;
        }
        ["--icount-table", file] => {
            icount_table(file);
            return;
        }
        [rounds] => rounds.parse::<usize>().unwrap_or_else(|_| usage()).max(1),
        _ => usage(),
    };
    let started = StdInstant::now();
    println!("## The payload-shape matrix: ns per call (median of 3 runs of {rounds} rounds, one process)\n");
    let figures = wall_clock(rounds);
    // In ns a closed call has no budget (the instructions are its figure); a refusal must
    // be no slower than its reference (2 % for noise).
    print_matrix("ns", &|k| figures.get(k).copied(), Path::reference, &|p, x, y, _| {
        (p.expect() == Expect::AllRefused).then(|| (x <= y * 1.02, "bar: no slower, 2 % for noise".to_string()))
    });
    two_threads_refused(rounds * 6);
    println!();
    allocations();
    println!("(whole benchmark: {:.1} s)", started.elapsed().as_secs_f64());
}
