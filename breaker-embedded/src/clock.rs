//! The breaker's clock over embassy-time.

use breaker_core::{Clock, Duration, Instant};

/// The [`Clock`] over [`embassy_time::Instant::now`]: milliseconds since boot.
///
/// This is the clock every `#[circuit_breaker]` function reads when the attribute is used
/// through `breaker-embedded` (the attribute's default clock), and the clock the
/// [registry](crate::registry) reports with for those functions. It needs nothing but the
/// embassy time driver the firmware already has; this crate never picks a `tick-hz-*`
/// feature or a driver.
///
/// The breaker counts time as a `u32` of milliseconds that wraps after about 49.7 days;
/// the reading is the low 32 bits of embassy's milliseconds, so it wraps exactly that way
/// and the breaker's wrapping arithmetic stays correct across the wrap.
///
/// ```no_run
/// use breaker_embedded::{Clock, EmbassyClock, SharedBreaker, Policy, Duration};
///
/// static RADIO: SharedBreaker = SharedBreaker::new(&Policy::new(3, Duration::from_secs(30)));
///
/// let now = EmbassyClock.now();
/// let allowed = RADIO.would_allow(now);
/// # let _ = allowed;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, defmt::Format)]
pub struct EmbassyClock;

impl Clock for EmbassyClock {
    #[inline]
    fn now(&self) -> Instant {
        Instant::from_millis_u64(embassy_time::Instant::now().as_millis())
    }
}

/// The same span as an [`embassy_time::Duration`], for example to sleep out a refusal's
/// `retry_in` with [`embassy_time::Timer::after`]: what `.into()` gives too, in a `const`.
/// The other way, `Duration::try_from(embassy_duration)` rounds a fraction of a
/// millisecond up and fails past [`Duration::MAX`].
///
/// ```
/// use breaker_embedded::{embassy_duration, Duration};
///
/// assert_eq!(embassy_duration(Duration::from_millis(350)), embassy_time::Duration::from_millis(350));
/// let wait: embassy_time::Duration = Duration::from_millis(350).into();
/// assert_eq!(wait, embassy_time::Duration::from_millis(350));
/// assert_eq!(Duration::try_from(embassy_time::Duration::from_micros(1500)), Ok(Duration::from_millis(2)));
/// ```
#[inline]
pub const fn embassy_duration(d: Duration) -> embassy_time::Duration {
    embassy_time::Duration::from_millis(d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use breaker_core::{CallError, Classify, Phase, Policy, SharedBreaker};
    use embassy_time::MockDriver;

    #[derive(Debug, PartialEq)]
    struct Nack;
    impl Classify for Nack {}

    static POLICY: Policy = Policy::new(2, Duration::from_millis(350));
    static RADIO: SharedBreaker = SharedBreaker::new(&POLICY);

    fn advance_ms(ms: u64) {
        MockDriver::get().advance(embassy_time::Duration::from_millis(ms));
    }

    // One test: the mock driver is one global clock for the whole test binary.
    #[test]
    fn reads_embassy_time_and_drives_a_breaker() {
        let start = EmbassyClock.now();
        advance_ms(1500);
        assert_eq!(EmbassyClock.now().since(start), Duration::from_millis(1500));

        for _ in 0..2 {
            assert_eq!(
                RADIO.call(&EmbassyClock, || Err::<(), _>(Nack)),
                Err(CallError::Inner(Nack))
            );
        }
        assert_eq!(RADIO.phase(EmbassyClock.now()), Phase::Open);
        advance_ms(349);
        assert!(matches!(
            RADIO.call(&EmbassyClock, || Ok::<_, Nack>(())),
            Err(CallError::Refused(_))
        ));
        advance_ms(1);
        assert_eq!(RADIO.call(&EmbassyClock, || Ok::<_, Nack>(7)), Ok(7));
        assert_eq!(RADIO.phase(EmbassyClock.now()), Phase::Closed);
        let c = RADIO.counters();
        assert_eq!((c.failures, c.skips, c.trips, c.probes), (2, 1, 1, 1));

        // Embassy counts 64-bit ticks; the breaker's milliseconds wrap at 2^32, in step.
        let before = EmbassyClock.now();
        advance_ms(1 << 32);
        assert_eq!(EmbassyClock.now(), before);
        advance_ms(10);
        assert_eq!(EmbassyClock.now().since(before), Duration::from_millis(10));
    }

    #[test]
    fn converts_durations_both_ways() {
        for ms in [0, 1, 350, 30_000, Duration::MAX.as_millis()] {
            let d = Duration::from_millis(ms);
            let e: embassy_time::Duration = d.into();
            assert_eq!(e.as_millis(), u64::from(ms));
            assert_eq!(Duration::try_from(e), Ok(d));
        }
        // A fraction of a millisecond rounds up; past `Duration::MAX` is an error.
        assert_eq!(
            Duration::try_from(embassy_time::Duration::from_micros(1)),
            Ok(Duration::from_millis(1))
        );
        let too_long = embassy_time::Duration::from_millis(u64::from(Duration::MAX.as_millis()) + 1);
        assert!(Duration::try_from(too_long).is_err());
    }

    #[test]
    fn converts_durations() {
        assert_eq!(embassy_duration(Duration::ZERO), embassy_time::Duration::from_ticks(0));
        assert_eq!(
            embassy_duration(Duration::MAX).as_millis(),
            u64::from(Duration::MAX.as_millis())
        );
    }
}
