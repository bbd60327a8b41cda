//! [`Duration`] to and from `core::time::Duration` (and, with the `embassy-time` feature,
//! `embassy_time::Duration`), so a refusal's `retry_in` goes straight into a `sleep`.
//!
//! The breaker counts whole milliseconds up to [`Duration::MAX`] (about 12.4 days):
//!
//! - to a wider type, the conversion is exact (`From`);
//! - from a wider type (`TryFrom`), a span longer than [`Duration::MAX`] is an error,
//!   [`DurationOutOfRange`], never a silently clamped value, and a fraction of a
//!   millisecond is rounded *up*: a wait made from it is never shorter than asked, and a
//!   non-zero span never becomes zero (which a [`Policy`](crate::Policy) would reject).
//!
//! ```
//! use breaker_core::Duration;
//!
//! let wait = Duration::from_millis(1500);
//! assert_eq!(core::time::Duration::from(wait), core::time::Duration::from_millis(1500));
//! assert_eq!(Duration::try_from(core::time::Duration::from_micros(2_001)), Ok(Duration::from_millis(3)));
//! assert!(Duration::try_from(core::time::Duration::from_secs(13 * 24 * 3600)).is_err());
//! ```

use core::fmt;

use crate::Duration;

/// A span longer than [`Duration::MAX`] (2^30 - 1 ms, about 12.4 days), which the breaker
/// cannot hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DurationOutOfRange;

impl fmt::Display for DurationOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("duration too long for a circuit breaker: at most 2^30 - 1 ms (about 12.4 days)")
    }
}

impl core::error::Error for DurationOutOfRange {}

/// Whole milliseconds, a fraction rounded up, or an error past [`Duration::MAX`].
const fn from_millis_and_rest(millis: u128, rest: bool) -> Result<Duration, DurationOutOfRange> {
    let ms = if rest { millis.saturating_add(1) } else { millis };
    if ms > Duration::MAX.as_millis() as u128 {
        Err(DurationOutOfRange)
    } else {
        Ok(Duration::from_millis(ms as u32))
    }
}

/// Exact: every breaker duration is a whole number of milliseconds.
impl From<Duration> for core::time::Duration {
    fn from(d: Duration) -> core::time::Duration {
        core::time::Duration::from_millis(u64::from(d.as_millis()))
    }
}

/// Whole milliseconds, a fraction rounded up; an error past [`Duration::MAX`].
impl TryFrom<core::time::Duration> for Duration {
    type Error = DurationOutOfRange;

    fn try_from(d: core::time::Duration) -> Result<Duration, DurationOutOfRange> {
        from_millis_and_rest(d.as_millis(), !d.subsec_nanos().is_multiple_of(1_000_000))
    }
}

/// With the `embassy-time` feature (on in `breaker-embedded`): to embassy's ticks, rounded
/// up where a millisecond is not a whole number of ticks (as
/// `embassy_time::Duration::from_millis` does), so a `Timer::after(retry_in.into())`
/// never wakes early. Exact at any tick rate that is a multiple of 1 kHz.
#[cfg(feature = "embassy-time")]
impl From<Duration> for embassy_time::Duration {
    fn from(d: Duration) -> embassy_time::Duration {
        embassy_time::Duration::from_millis(u64::from(d.as_millis()))
    }
}

/// With the `embassy-time` feature: whole milliseconds, a fraction of one rounded up; an
/// error past [`Duration::MAX`].
#[cfg(feature = "embassy-time")]
impl TryFrom<embassy_time::Duration> for Duration {
    type Error = DurationOutOfRange;

    fn try_from(d: embassy_time::Duration) -> Result<Duration, DurationOutOfRange> {
        let millis = d.as_millis();
        let exact = embassy_time::Duration::from_millis(millis) == d;
        from_millis_and_rest(u128::from(millis), !exact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_core_is_exact() {
        for ms in [0, 1, 999, 30_000, Duration::MAX.as_millis()] {
            let d = Duration::from_millis(ms);
            assert_eq!(core::time::Duration::from(d).as_millis(), u128::from(ms));
            assert_eq!(Duration::try_from(core::time::Duration::from(d)), Ok(d));
        }
    }

    #[test]
    fn from_core_rounds_fractions_up_and_rejects_the_too_long() {
        let core_ms = core::time::Duration::from_millis;
        assert_eq!(Duration::try_from(core::time::Duration::ZERO), Ok(Duration::ZERO));
        assert_eq!(
            Duration::try_from(core::time::Duration::from_nanos(1)),
            Ok(Duration::from_millis(1))
        );
        assert_eq!(
            Duration::try_from(core::time::Duration::from_micros(1500)),
            Ok(Duration::from_millis(2))
        );
        let max = u64::from(Duration::MAX.as_millis());
        assert_eq!(Duration::try_from(core_ms(max)), Ok(Duration::MAX));
        assert_eq!(Duration::try_from(core_ms(max + 1)), Err(DurationOutOfRange));
        assert_eq!(
            Duration::try_from(core_ms(max - 1) + core::time::Duration::from_nanos(1)),
            Ok(Duration::MAX)
        );
        assert_eq!(
            Duration::try_from(core_ms(max) + core::time::Duration::from_nanos(1)),
            Err(DurationOutOfRange)
        );
        assert_eq!(Duration::try_from(core::time::Duration::MAX), Err(DurationOutOfRange));
        assert_eq!(
            std::string::ToString::to_string(&DurationOutOfRange),
            "duration too long for a circuit breaker: at most 2^30 - 1 ms (about 12.4 days)"
        );
    }

    #[cfg(feature = "embassy-time")]
    #[test]
    fn to_embassy_is_exact_and_from_it_rounds_fractions_up_and_rejects_the_too_long() {
        use embassy_time::Duration as Embassy;
        for ms in [0, 1, 1_500, Duration::MAX.as_millis()] {
            let d = Duration::from_millis(ms);
            assert_eq!(Embassy::from(d), Embassy::from_millis(u64::from(ms)));
            assert_eq!(Duration::try_from(Embassy::from(d)), Ok(d));
        }
        // At embassy's default tick rate, a microsecond is a tick.
        assert_eq!(
            Duration::try_from(Embassy::from_micros(1_500)),
            Ok(Duration::from_millis(2))
        );
        let max = u64::from(Duration::MAX.as_millis());
        assert_eq!(
            Duration::try_from(Embassy::from_millis(max + 1)),
            Err(DurationOutOfRange)
        );
        assert_eq!(
            Duration::try_from(Embassy::from_millis(max) + Embassy::from_micros(1)),
            Err(DurationOutOfRange)
        );
    }
}
