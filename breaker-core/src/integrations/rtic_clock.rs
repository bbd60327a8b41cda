//! The breaker's clock over an RTIC monotonic (feature `rtic-time`).

use core::marker::PhantomData;

use crate::{Clock, Instant};

/// The [`Clock`] over an RTIC monotonic `M` (any [`rtic_time::Monotonic`] whose instants
/// are [`fugit`] instants, which every monotonic of `rtic-monotonics` has): `M::now()`
/// in milliseconds.
///
/// It picks no monotonic, tick rate or timer: the firmware's own monotonic is the
/// clock, read without a critical section of its own. It holds nothing, so it is `const`
/// to make and can be a `static` that `#[circuit_breaker(clock = ...)]` names.
///
/// The breaker counts time as a `u32` of milliseconds that wraps after about 49.7 days.
/// A 64-bit monotonic (for example rtic-monotonics' SysTick with `systick-64bit`) wraps
/// exactly that way. So does a 32-bit one whose tick rate divides 1 kHz (1 kHz, 100 Hz,
/// ...). A 32-bit monotonic ticking faster than 1 kHz wraps its own counter first (after
/// 2^32 ticks: about 5 days at 10 kHz), and the breaker's time jumps there; give such a
/// firmware a 64-bit monotonic.
///
/// ```
/// use breaker_core::{Clock, Duration, Instant, Policy, RticClock, SharedBreaker};
/// # use core::future::Future;
/// # use core::sync::atomic::{AtomicU32, Ordering};
/// # static TICKS: AtomicU32 = AtomicU32::new(0);
/// # /// A 1 kHz monotonic, as `rtic_monotonics::systick_monotonic!(Mono, 1_000)` makes.
/// # struct Mono;
/// # impl rtic_time::Monotonic for Mono {
/// #     type Instant = fugit::Instant<u32, 1, 1_000>;
/// #     type Duration = fugit::Duration<u32, 1, 1_000>;
/// #     fn now() -> Self::Instant { Self::Instant::from_ticks(TICKS.load(Ordering::Relaxed)) }
/// #     async fn delay(d: Self::Duration) { TICKS.fetch_add(d.ticks(), Ordering::Relaxed); }
/// #     async fn delay_until(at: Self::Instant) { TICKS.fetch_max(at.ticks(), Ordering::Relaxed); }
/// #     async fn timeout_at<F: Future>(_: Self::Instant, f: F) -> Result<F::Output, rtic_time::TimeoutError> { Ok(f.await) }
/// #     async fn timeout_after<F: Future>(_: Self::Duration, f: F) -> Result<F::Output, rtic_time::TimeoutError> { Ok(f.await) }
/// # }
///
/// static CLOCK: RticClock<Mono> = RticClock::new();
/// static RADIO: SharedBreaker = SharedBreaker::new(&Policy::new(3, Duration::from_secs(30)));
///
/// # TICKS.store(1_500, Ordering::Relaxed);
/// // 1,500 ticks of the 1 kHz monotonic since it started:
/// assert_eq!(CLOCK.now(), Instant::from_millis(1_500));
/// assert!(RADIO.would_allow(CLOCK.now()));
/// ```
///
/// With the attribute (`#[circuit_breaker(name = "radio", trip = 3, cooldown = "30s",
/// clock = CLOCK)]`) every call of the function reads it; the firmware in `firmware/rtic`
/// of the project's repository runs a whole scenario that way.
pub struct RticClock<M> {
    monotonic: PhantomData<fn() -> M>,
}

impl<M> RticClock<M> {
    /// The clock over `M`.
    pub const fn new() -> RticClock<M> {
        RticClock { monotonic: PhantomData }
    }
}

impl<M> Default for RticClock<M> {
    fn default() -> RticClock<M> {
        RticClock::new()
    }
}

impl<M> Clone for RticClock<M> {
    fn clone(&self) -> RticClock<M> {
        *self
    }
}

impl<M> Copy for RticClock<M> {}

impl<M> core::fmt::Debug for RticClock<M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RticClock")
    }
}

impl<M> Clock for RticClock<M>
where
    M: rtic_time::Monotonic,
    M::Instant: MonotonicMillis,
{
    #[inline]
    fn now(&self) -> Instant {
        Instant::from_millis(M::now().millis())
    }
}

/// An RTIC monotonic's instant read as the breaker's milliseconds, what [`RticClock`]
/// needs of `M::Instant`. Implemented for `fugit` instants of 32 and 64 bits at any
/// tick rate; implement it for the instant type of a monotonic of your own.
pub trait MonotonicMillis: Copy {
    /// Milliseconds since the monotonic's start, wrapping at 2^32 (the low 32 bits).
    fn millis(self) -> u32;
}

/// `ticks` at `NOM / DENOM` seconds each, in milliseconds, computed without overflow
/// through the reduced ratio.
struct Ratio<const NOM: u32, const DENOM: u32>;

impl<const NOM: u32, const DENOM: u32> Ratio<NOM, DENOM> {
    const GCD: u64 = gcd(1000 * NOM as u64, DENOM as u64);
    const MUL: u64 = 1000 * NOM as u64 / Self::GCD;
    const DIV: u64 = {
        assert!(NOM != 0 && DENOM != 0, "a fugit tick of zero length");
        DENOM as u64 / Self::GCD
    };

    #[inline]
    fn millis(ticks: u64) -> u64 {
        if Self::DIV == 1 {
            ticks.wrapping_mul(Self::MUL)
        } else {
            (ticks / Self::DIV)
                .wrapping_mul(Self::MUL)
                .wrapping_add(ticks % Self::DIV * Self::MUL / Self::DIV)
        }
    }
}

const fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let r = a % b;
        a = b;
        b = r;
    }
    a
}

impl<const NOM: u32, const DENOM: u32> MonotonicMillis for fugit::Instant<u32, NOM, DENOM> {
    #[inline]
    fn millis(self) -> u32 {
        Ratio::<NOM, DENOM>::millis(u64::from(self.ticks())) as u32
    }
}

impl<const NOM: u32, const DENOM: u32> MonotonicMillis for fugit::Instant<u64, NOM, DENOM> {
    #[inline]
    fn millis(self) -> u32 {
        Ratio::<NOM, DENOM>::millis(self.ticks()) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallError, Classify, Duration, Phase, Policy, SharedBreaker};
    use core::future::Future;
    use core::sync::atomic::{AtomicU64, Ordering};

    /// A 64-bit monotonic at 32,768 Hz (a low-power RTC's rate) that moves only when told.
    static TICKS: AtomicU64 = AtomicU64::new(0);
    struct Rtc;
    impl rtic_time::Monotonic for Rtc {
        type Instant = fugit::Instant<u64, 1, 32_768>;
        type Duration = fugit::Duration<u64, 1, 32_768>;
        fn now() -> Self::Instant {
            Self::Instant::from_ticks(TICKS.load(Ordering::Relaxed))
        }
        async fn delay(d: Self::Duration) {
            TICKS.fetch_add(d.ticks(), Ordering::Relaxed);
        }
        async fn delay_until(at: Self::Instant) {
            TICKS.fetch_max(at.ticks(), Ordering::Relaxed);
        }
        async fn timeout_at<F: Future>(at: Self::Instant, f: F) -> Result<F::Output, rtic_time::TimeoutError> {
            let out = f.await;
            if Self::now() > at {
                Err(rtic_time::TimeoutError)
            } else {
                Ok(out)
            }
        }
        async fn timeout_after<F: Future>(d: Self::Duration, f: F) -> Result<F::Output, rtic_time::TimeoutError> {
            Self::timeout_at(Self::now() + d, f).await
        }
    }

    #[derive(Debug, PartialEq)]
    struct Nack;
    impl Classify for Nack {}

    #[test]
    fn reads_the_monotonic_and_drives_a_breaker() {
        static CLOCK: RticClock<Rtc> = RticClock::new();
        static POLICY: Policy = Policy::new(2, Duration::from_millis(350));
        static RADIO: SharedBreaker = SharedBreaker::new(&POLICY);

        TICKS.store(32_768 * 3 / 2, Ordering::Relaxed); // 1.5 s
        assert_eq!(CLOCK.now(), Instant::from_millis(1_500));
        for _ in 0..2 {
            assert_eq!(RADIO.call(&CLOCK, || Err::<(), _>(Nack)), Err(CallError::Inner(Nack)));
        }
        assert_eq!(RADIO.phase(CLOCK.now()), Phase::Open);
        TICKS.fetch_add(32_768 * 349 / 1000 + 1, Ordering::Relaxed); // 349.03 ms
        assert_eq!(CLOCK.now(), Instant::from_millis(1_849));
        assert!(matches!(
            RADIO.call(&CLOCK, || Ok::<_, Nack>(())),
            Err(CallError::Refused(_))
        ));
        TICKS.fetch_add(33, Ordering::Relaxed); // past 350 ms
        assert_eq!(RADIO.call(&CLOCK, || Ok::<_, Nack>(7)), Ok(7));
        assert_eq!(RADIO.phase(CLOCK.now()), Phase::Closed);
    }

    #[test]
    fn converts_ticks_at_any_rate() {
        type I32<const D: u32> = fugit::Instant<u32, 1, D>;
        assert_eq!(I32::<1_000>::from_ticks(1_234).millis(), 1_234);
        assert_eq!(I32::<100>::from_ticks(1_234).millis(), 12_340);
        assert_eq!(I32::<1_000_000>::from_ticks(1_234_567).millis(), 1_234);
        assert_eq!(I32::<32_768>::from_ticks(32_768 * 5 + 16_384).millis(), 5_500);
        // A tick of 3/7 s: 7 ticks are 3,000 ms.
        assert_eq!(fugit::Instant::<u64, 3, 7>::from_ticks(7).millis(), 3_000);
        assert_eq!(fugit::Instant::<u64, 1, 1_000>::from_ticks(u64::MAX).millis(), u32::MAX);
        // A 100 Hz 32-bit counter wraps at 2^32 ticks; its milliseconds wrap in step.
        let before = I32::<100>::from_ticks(u32::MAX).millis();
        let after = I32::<100>::from_ticks(0).millis();
        assert_eq!(after.wrapping_sub(before), 10);
        // A 64-bit counter at 1 MHz, past 2^32 ms: the low 32 bits, with no overflow.
        let ticks = (1_u64 << 32) * 1_000 + 5_000;
        assert_eq!(fugit::Instant::<u64, 1, 1_000_000>::from_ticks(ticks).millis(), 5);
    }
}
