//! Instructions per guarded call on the emulated core, counted with QEMU's `-icount
//! shift=0` (the runner passes it to every `icount` test): the virtual clock advances one
//! nanosecond per instruction executed, and SysTick counts that clock at the core clock,
//! so `ticks * 1e9 / CORE_CLOCK_HZ` is the instructions executed between two readings.
//!
//! Each case is a loop of calls run twice, with [`N1`] and [`N2`] calls; the difference of
//! the two counts divided by `N2 - N1` is one call's cost (loop overhead included, the
//! same in every case), set-up and the readings themselves cancel out. The method is
//! first checked on a loop of known length: two instructions per iteration.
//!
//! The guarded function is out of line (`#[inline(never)]`), can fail, and is called from
//! two sites (once before its loop, then in it), as a function wrapped in
//! `#[circuit_breaker]` is in a firmware. The clock is a [`ManualClock`] (one atomic
//! load), so the figures are the breaker's, not a tick driver's.
//!
//! Every figure is checked against the one recorded in the test: more than
//! [`SLACK`] instructions above it fails the run.

use breaker_embedded::{
    circuit_breaker, CallError, Classify, Duration, Instant, ManualClock, Policy, Refused, SharedBreaker,
};
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;

/// Calls of the shorter run of each case.
const N1: u32 = 2_000;
/// Calls of the longer run of each case.
const N2: u32 = 12_000;
/// Instructions above the recorded figure that still pass.
pub const SLACK: u32 = 3;

/// The error of the guarded function.
#[derive(Debug)]
pub struct Fail;

impl Classify for Fail {} // a strike

impl From<Refused> for Fail {
    fn from(_: Refused) -> Fail {
        Fail
    }
}

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// The body of every variant: answers its argument, or fails for `u32::MAX`, which the
/// loops never pass (each function is out of line, so it cannot know its argument).
#[inline(always)]
fn body(i: u32) -> Result<u32, Fail> {
    if i == u32::MAX {
        Err(Fail)
    } else {
        Ok(i)
    }
}

/// Unguarded.
#[inline(never)]
fn plain(i: u32) -> Result<u32, Fail> {
    body(i)
}

/// Through the attribute.
#[inline(never)]
#[circuit_breaker(trip = 3, cooldown = "30s", clock = CLOCK, name = "icount/closed")]
fn attribute(i: u32) -> Result<u32, Fail> {
    body(i)
}

/// Through the attribute, tripped by its first call (`u32::MAX`).
#[inline(never)]
#[circuit_breaker(trip = 1, cooldown = "1h", clock = CLOCK, name = "icount/open")]
fn attribute_open(i: u32) -> Result<u32, Fail> {
    body(i)
}

static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
static TRIP_AT_ONCE: Policy = Policy::new(1, Duration::from_secs(3_600));
static BY_HAND: SharedBreaker = SharedBreaker::new(&POLICY);
static BY_HAND_OPEN: SharedBreaker = SharedBreaker::new(&TRIP_AT_ONCE);

/// The same breaker by hand.
#[inline(never)]
fn by_hand(i: u32) -> Result<u32, CallError<Fail>> {
    BY_HAND.call(&CLOCK, || body(i))
}

/// By hand, tripped by its first call.
#[inline(never)]
fn by_hand_open(i: u32) -> Result<u32, CallError<Fail>> {
    BY_HAND_OPEN.call(&CLOCK, || body(i))
}

macro_rules! looped {
    ($name:ident, $f:ident) => {
        #[inline(never)]
        fn $name(n: u32) -> u32 {
            let mut acc = 0u32;
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
looped!(loop_plain, plain);
looped!(loop_attribute, attribute);
looped!(loop_attribute_open, attribute_open);
looped!(loop_by_hand, by_hand);
looped!(loop_by_hand_open, by_hand_open);

/// Two instructions per iteration (`subs`, `bne`): the method's check.
#[inline(never)]
fn loop_known(n: u32) -> u32 {
    // SAFETY: a register count-down, nothing else touched.
    unsafe {
        core::arch::asm!("2:", "subs r0, #1", "bne 2b", inout("r0") n => _, options(nomem, nostack));
    }
    n
}

/// One case: its name, its loop, whether every call is refused, and the recorded figure
/// (instructions per call).
pub struct Case {
    pub name: &'static str,
    run: fn(u32) -> u32,
    refused: bool,
    pub recorded: u32,
}

impl Case {
    /// A case of another module (the shared-bus transactions): `run(n)` makes `n` calls,
    /// each adding its argument to the result when it succeeds, 1 when it fails or is
    /// refused.
    pub const fn new(name: &'static str, run: fn(u32) -> u32, refused: bool, recorded: u32) -> Case {
        Case {
            name,
            run,
            refused,
            recorded,
        }
    }
}

/// The cases, with the figures recorded for this core (`m3` or `m0` passes them).
pub const fn cases(recorded: [u32; 5]) -> [Case; 5] {
    [
        Case {
            name: "unguarded call",
            run: loop_plain,
            refused: false,
            recorded: recorded[0],
        },
        Case {
            name: "#[circuit_breaker], closed success",
            run: loop_attribute,
            refused: false,
            recorded: recorded[1],
        },
        Case {
            name: "#[circuit_breaker], refusal",
            run: loop_attribute_open,
            refused: true,
            recorded: recorded[2],
        },
        Case {
            name: "SharedBreaker::call by hand, closed success",
            run: loop_by_hand,
            refused: false,
            recorded: recorded[3],
        },
        Case {
            name: "SharedBreaker::call by hand, refusal",
            run: loop_by_hand_open,
            refused: true,
            recorded: recorded[4],
        },
    ]
}

/// SysTick ticks of one run of `run(n)` (the counter counts down, 24 bits; a run is far
/// shorter than one wrap).
fn ticks(run: fn(u32) -> u32, n: u32) -> (u32, u32) {
    let start = SYST::get_current();
    let acc = run(core::hint::black_box(n));
    let end = SYST::get_current();
    (start.wrapping_sub(end) & 0x00FF_FFFF, acc)
}

/// Instructions per call of `run`, in hundredths (rounded: one SysTick tick is 62.5 or 80
/// instructions, a hundredth of a call or less over `N2 - N1` calls).
fn per_call(run: fn(u32) -> u32, core_clock_hz: u32) -> u32 {
    let (t1, _) = ticks(run, N1);
    let (t2, _) = ticks(run, N2);
    let ns = u64::from(t2.wrapping_sub(t1)) * 1_000_000_000 / u64::from(core_clock_hz);
    let calls = u64::from(N2 - N1);
    ((ns * 100 + calls / 2) / calls) as u32
}

/// Measures every case of every set, prints it next to its recorded figure; `false` if
/// the method's check fails or a figure is more than [`SLACK`] above its record.
pub fn run(mut syst: SYST, core_clock_hz: u32, sets: &[&[Case]]) -> bool {
    syst.disable_interrupt();
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(0x00FF_FFFF);
    syst.clear_current();
    syst.enable_counter();

    let mut ok = true;
    let known = per_call(loop_known, core_clock_hz);
    defmt::info!(
        "method check, a loop of 2 instructions: {=u32}.{=u32:02} per iteration",
        known / 100,
        known % 100
    );
    if !(195..=205).contains(&known) {
        defmt::error!("the instruction count is off: is QEMU running with -icount shift=0?");
        ok = false;
    }

    // Each guarded function's first call site; the refused ones trip here.
    let _ = core::hint::black_box(plain(core::hint::black_box(1)));
    let _ = core::hint::black_box(attribute(core::hint::black_box(1)));
    let _ = core::hint::black_box(by_hand(core::hint::black_box(1)));
    let _ = core::hint::black_box(attribute_open(core::hint::black_box(u32::MAX)));
    let _ = core::hint::black_box(by_hand_open(core::hint::black_box(u32::MAX)));

    for case in sets.iter().flat_map(|set| set.iter()) {
        // Every call did what the case says (all succeeded, or all were refused).
        let (_, acc) = ticks(case.run, 100);
        let want = if case.refused { 100 } else { (0..100).sum() };
        if acc != want {
            defmt::error!("{=str}: the breaker did not behave as set up", case.name);
            ok = false;
        }
        let got = per_call(case.run, core_clock_hz);
        let limit = (case.recorded + SLACK) * 100;
        let verdict = if got <= limit { "ok" } else { "REGRESSED" };
        defmt::info!(
            "{=str}: {=u32}.{=u32:02} instructions per call (recorded {=u32}, fails above {=u32}) {=str}",
            case.name,
            got / 100,
            got % 100,
            case.recorded,
            case.recorded + SLACK,
            verdict
        );
        ok &= got <= limit;
    }
    ok
}
