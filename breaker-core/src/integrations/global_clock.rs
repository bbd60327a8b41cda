//! The process-wide clock that `#[circuit_breaker]` functions read unless they name
//! their own with `clock = ...`.
//! The two `unsafe` steps it needs (a function pointer kept in an atomic, a symbol the
//! final binary defines) live in `linker.rs`.

use core::sync::atomic::{AtomicPtr, Ordering};

use crate::{Clock, Instant};

/// The installed override: null, or a `fn() -> Instant` cast to a data pointer (only
/// `set_global_clock` stores, only `linker::load_clock_fn` reads it back). Only `load`
/// and `store` are used, which every target with atomics has (thumbv6m included).
static OVERRIDE: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

/// Makes every breaker that reads the global clock (every `#[circuit_breaker]` function
/// without a `clock = ...` argument, and [`GlobalClock`]) read `now` instead, until
/// [`reset_global_clock`]. Works with and without `std`.
///
/// The override is process-wide: tests that install one should run in a test binary of
/// their own (one file under `tests/`), or not run in parallel with tests that expect
/// real time.
///
/// ```
/// use breaker_core::{set_global_clock, Clock, Duration, GlobalClock, Instant, ManualClock};
///
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
/// # breaker_core::global_clock!(|| Instant::ZERO); // needed without `std` only
/// set_global_clock(|| CLOCK.now());
/// CLOCK.advance(Duration::from_secs(5));
/// assert_eq!(GlobalClock.now(), Instant::from_millis(5_000));
/// # breaker_core::reset_global_clock();
/// ```
pub fn set_global_clock(now: fn() -> Instant) {
    OVERRIDE.store(now as *mut (), Ordering::Release);
}

/// Removes the clock installed with [`set_global_clock`]: the global clock reads
/// [`StdClock`](crate::StdClock) again (with `std`), or the [`global_clock!`](crate::global_clock)
/// function (without).
pub fn reset_global_clock() {
    OVERRIDE.store(core::ptr::null_mut(), Ordering::Release);
}

/// The clock `#[circuit_breaker]` functions read by default.
///
/// Where the time comes from, first match wins:
///
/// 1. a function installed at run time with [`set_global_clock`] (tests install a
///    [`ManualClock`](crate::ManualClock) this way; firmware may too);
/// 2. with the `std` feature: [`StdClock`](crate::StdClock), so a host needs no setup;
/// 3. without `std`: the function named once in the final binary with
///    [`global_clock!`](crate::global_clock). If no crate in the binary names one, the
///    binary **does not link** (`undefined symbol: __breaker_core_global_clock_now`)
///    rather than run with a clock frozen at zero, which would keep a tripped breaker
///    open for ever. (`breaker-embedded` users never see this: its attribute reads
///    embassy-time.)
///
/// Reading it costs one atomic load plus the underlying clock; the attribute's wrapper
/// reads it only when the breaker needs the time (never on the closed-state happy path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GlobalClock;

impl Clock for GlobalClock {
    #[inline]
    fn now(&self) -> Instant {
        match crate::linker::load_clock_fn(&OVERRIDE) {
            Some(now) => now(),
            None => fallback(),
        }
    }
}

#[cfg(feature = "std")]
#[inline]
fn fallback() -> Instant {
    crate::StdClock.now()
}

#[cfg(not(feature = "std"))]
#[inline]
fn fallback() -> Instant {
    crate::linker::global_clock_symbol()
}

/// Names the global clock of a bare-metal binary built without the `std` feature: the
/// one line such a binary adds so that `#[circuit_breaker]` functions can tell time.
///
/// Write it once, in any crate of the final binary, with a function (or a closure that
/// captures nothing) returning an [`Instant`](crate::Instant):
///
/// ```
/// fn millis_since_boot() -> breaker_core::Instant {
///     # let ticks: u32 = 0;
///     // read your SysTick counter, RTC, or timer peripheral here
///     breaker_core::Instant::from_millis(ticks)
/// }
///
/// breaker_core::global_clock!(millis_since_boot);
/// ```
///
/// Without `std`, a binary that uses the global clock and has no `global_clock!` fails
/// to link with `undefined symbol: __breaker_core_global_clock_now`; two of them fail
/// with a duplicate symbol. With the `std` feature the global clock reads
/// [`StdClock`](crate::StdClock) and ignores this macro; use [`set_global_clock`] there.
/// [`set_global_clock`] overrides it at run time in either case.
#[macro_export]
macro_rules! global_clock {
    ($now:expr $(,)?) => {
        const _: () = {
            #[unsafe(export_name = "__breaker_core_global_clock_now")]
            extern "Rust" fn __breaker_core_global_clock_now() -> $crate::Instant {
                let now: fn() -> $crate::Instant = $now;
                now()
            }
        };
    };
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::ManualClock;

    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(42));

    #[test]
    fn an_installed_clock_wins_until_reset() {
        set_global_clock(|| CLOCK.now());
        assert_eq!(GlobalClock.now(), Instant::from_millis(42));
        CLOCK.advance(crate::Duration::from_millis(8));
        assert_eq!(GlobalClock.now(), Instant::from_millis(50));
        reset_global_clock();
        // Back on the std clock, which moves on its own.
        let a = GlobalClock.now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(GlobalClock.now().since(a).as_millis() >= 1);
    }
}
