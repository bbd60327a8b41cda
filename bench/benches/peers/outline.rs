//! The attribute out of line: a wrapped function that can fail, called from two sites and
//! kept out of line (`#[inline(never)]`), against the same function unguarded, the same
//! breaker by hand in that position, and reference F: the two checks of a bare word that
//! any shared breaker's closed-state path needs there.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration as StdDuration;

use breaker_core::{circuit_breaker, CallError, Duration, Policy, SharedBreaker};

use super::{is_hot, timed, Case, Expect, Fail, Group, Stats, STD_CLOCK};

/// The body every variant runs: answers its argument, or fails for `u64::MAX`, which the
/// loops never pass (the error path is there, not taken; each function is out of line, so
/// it cannot know its argument). No `black_box` on a local: a local whose address escapes
/// keeps a function from jumping to its callees, a cost of such a body, not of a breaker.
#[inline(always)]
fn body(i: u64) -> Result<u64, Fail> {
    if i == u64::MAX {
        Err(Fail)
    } else {
        Ok(i)
    }
}

/// Unguarded.
#[inline(never)]
fn plain_read(i: u64) -> Result<u64, Fail> {
    body(i)
}

/// Through the attribute.
#[inline(never)]
#[circuit_breaker(trip = 3, cooldown = "30s", clock = STD_CLOCK, name = "bench::outline")]
fn guarded_read(i: u64) -> Result<u64, Fail> {
    body(i)
}

static BY_HAND: SharedBreaker = SharedBreaker::new(&Policy::new(3, Duration::from_secs(30)));

/// The same breaker by hand.
#[inline(never)]
fn by_hand_read(i: u64) -> Result<u64, CallError<Fail>> {
    BY_HAND.call(&STD_CLOCK, || body(i))
}

/// Through the attribute, tripped by its first call (`u64::MAX`) and open for an hour.
#[inline(never)]
#[circuit_breaker(trip = 1, cooldown = "1h", clock = STD_CLOCK, name = "bench::outline_open")]
fn refused_read(i: u64) -> Result<u64, Fail> {
    body(i)
}

/// Reference F's state word: written once (in [`first_call`]), so the compiler cannot
/// take it for a constant.
static FLOOR_WORD: AtomicU64 = AtomicU64::new(0);

/// Reference F: the least a shared breaker's closed-state success can add to the function
/// out of line. A shared breaker must check its word before the call (it may be open) and,
/// after a success, again (a failure may have landed meanwhile, which this success must
/// clear): two loads, two tests, two branches, everything else out of line. On x86-64 each
/// check is a load, a test and a branch, since LLVM does not fold an atomic load into a
/// compare's memory operand.
#[inline(never)]
fn floor_read(i: u64) -> Result<u64, Fail> {
    if !is_hot(FLOOR_WORD.load(Ordering::Acquire)) {
        return floor_slow(i);
    }
    let result = body(i);
    if result.is_err() || !is_hot(FLOOR_WORD.load(Ordering::Acquire)) {
        return floor_report(result);
    }
    result
}

/// Reference F's paths off the closed-state one (never taken in the loop).
#[cold]
#[inline(never)]
fn floor_slow(i: u64) -> Result<u64, Fail> {
    black_box(body(black_box(i)))
}

#[cold]
#[inline(never)]
fn floor_report(result: Result<u64, Fail>) -> Result<u64, Fail> {
    black_box(result)
}

macro_rules! looped {
    ($name:ident, $f:ident) => {
        #[inline(never)]
        fn $name(n: u64) -> u64 {
            let mut acc = 0u64;
            for i in 0..n {
                match $f(i) {
                    Ok(v) => acc = acc.wrapping_add(v),
                    Err(_) => acc = acc.wrapping_add(1),
                }
            }
            acc
        }
    };
}
looped!(loop_outline_plain, plain_read);
looped!(loop_outline_macro, guarded_read);
looped!(loop_outline_by_hand, by_hand_read);
looped!(loop_outline_refused, refused_read);
looped!(loop_outline_floor, floor_read);

/// The second call site of each function: one call before the loop.
#[inline(never)]
fn first_call() {
    FLOOR_WORD.store(black_box(0), Ordering::Release);
    assert_eq!(black_box(floor_read(black_box(1))).ok(), Some(1));
    assert_eq!(black_box(plain_read(black_box(1))).ok(), Some(1));
    assert_eq!(black_box(guarded_read(black_box(1))).ok(), Some(1));
    assert_eq!(black_box(by_hand_read(black_box(1))).ok(), Some(1));
    let _ = black_box(refused_read(black_box(u64::MAX)));
}

fn run_plain(n: u64) -> StdDuration {
    first_call();
    timed(n, Expect::AllOk, "outline plain", || loop_outline_plain(black_box(n)))
}

fn run_macro(n: u64) -> StdDuration {
    first_call();
    timed(n, Expect::AllOk, "outline macro", || loop_outline_macro(black_box(n)))
}

fn run_by_hand(n: u64) -> StdDuration {
    first_call();
    timed(n, Expect::AllOk, "outline by hand", || {
        loop_outline_by_hand(black_box(n))
    })
}

fn run_floor(n: u64) -> StdDuration {
    first_call();
    timed(n, Expect::AllOk, "outline floor", || loop_outline_floor(black_box(n)))
}

fn run_refused(n: u64) -> StdDuration {
    first_call();
    timed(n, Expect::AllRefused, "outline refused", || {
        loop_outline_refused(black_box(n))
    })
}

pub const CASES: &[Case] = &[
    Case {
        key: "outline-plain",
        label: "a fn that can fail, out of line, unguarded",
        group: Group::Closed,
        run: run_plain,
    },
    Case {
        key: "outline-macro",
        label: "the same fn through #[circuit_breaker], out of line",
        group: Group::Closed,
        run: run_macro,
    },
    Case {
        key: "outline-by-hand",
        label: "the same fn, SharedBreaker::call by hand, out of line",
        group: Group::Closed,
        run: run_by_hand,
    },
    Case {
        key: "outline-floor",
        label: "ref F: the same fn with two checks of a bare word, out of line",
        group: Group::Closed,
        run: run_floor,
    },
    Case {
        key: "outline-refused",
        label: "the #[circuit_breaker] fn out of line, open: refused",
        group: Group::Rejected,
        run: run_refused,
    },
];

/// The wall-clock rows of the out-of-line attribute (its target is in instructions:
/// `bench/callgrind.sh` checks it).
pub fn print_targets(stats: &[(&'static str, Stats)]) {
    let get = |key: &str| stats.iter().find(|(k, _)| *k == key).map(|(_, s)| *s);
    if let [Some(plain), Some(mac), Some(hand), Some(floor)] =
        ["outline-plain", "outline-macro", "outline-by-hand", "outline-floor"].map(get)
    {
        println!(
            "- #[circuit_breaker] fn out of line, closed success: {:.2} ns vs {:.2} ns unguarded ({:+.2} ns), \
             {:.2} ns by hand, {:.2} ns reference F (medians; the target, unguarded + 5 instructions, is checked by \
             bench/callgrind.sh)",
            mac.median,
            plain.median,
            mac.median - plain.median,
            hand.median,
            floor.median
        );
    }
}
