//! Time as the breaker sees it: a wrapping millisecond counter and spans of it.
//!
//! The core never reads a clock by itself. Every operation that needs the time takes an
//! [`Instant`] from a [`Clock`] the caller (or an integration) supplies.

use core::fmt;

/// A span of time in whole milliseconds.
///
/// Spans used by a [`Policy`](crate::Policy) are at most [`Duration::MAX`] (about 12.4
/// days), so that any two instants the breaker compares are well within half the
/// counter's range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Duration {
    millis: u32,
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration { millis: 0 };
    /// The longest span a policy accepts: 2^30 - 1 ms, about 12.4 days.
    pub const MAX: Duration = Duration { millis: (1 << 30) - 1 };

    /// A span of `millis` milliseconds. Values above [`Duration::MAX`] are clamped to it.
    pub const fn from_millis(millis: u32) -> Duration {
        Duration {
            millis: if millis > Self::MAX.millis {
                Self::MAX.millis
            } else {
                millis
            },
        }
    }

    /// A span of `millis` milliseconds that the caller knows is at most [`Duration::MAX`].
    pub(crate) const fn from_millis_unchecked(millis: u32) -> Duration {
        Duration { millis }
    }

    /// A span of `secs` seconds, or `None` if that exceeds [`Duration::MAX`].
    pub const fn checked_from_secs(secs: u32) -> Option<Duration> {
        match secs.checked_mul(1000) {
            Some(ms) if ms <= Self::MAX.millis => Some(Duration { millis: ms }),
            _ => None,
        }
    }

    /// A span of `secs` seconds.
    ///
    /// # Panics
    /// If the span exceeds [`Duration::MAX`]; in a `const` or `static` that is a compile
    /// error. Use [`Duration::checked_from_secs`] for values known only at run time.
    pub const fn from_secs(secs: u32) -> Duration {
        match Self::checked_from_secs(secs) {
            Some(d) => d,
            None => panic!("duration too long: at most Duration::MAX (about 12.4 days)"),
        }
    }

    /// A span of `mins` minutes.
    ///
    /// # Panics
    /// If the span exceeds [`Duration::MAX`] (a compile error in a `const`).
    pub const fn from_mins(mins: u32) -> Duration {
        match mins.checked_mul(60) {
            Some(secs) => Self::from_secs(secs),
            None => panic!("duration too long: at most Duration::MAX (about 12.4 days)"),
        }
    }

    /// The span in milliseconds.
    pub const fn as_millis(self) -> u32 {
        self.millis
    }

    /// `self + rhs`, or `None` past [`Duration::MAX`].
    pub const fn checked_add(self, rhs: Duration) -> Option<Duration> {
        match self.millis.checked_add(rhs.millis) {
            Some(ms) if ms <= Self::MAX.millis => Some(Duration { millis: ms }),
            _ => None,
        }
    }

    /// `self - rhs`, or `None` if `rhs` is longer.
    pub const fn checked_sub(self, rhs: Duration) -> Option<Duration> {
        match self.millis.checked_sub(rhs.millis) {
            Some(ms) => Some(Duration { millis: ms }),
            None => None,
        }
    }

    /// `self - rhs`, or zero if `rhs` is longer.
    pub const fn saturating_sub(self, rhs: Duration) -> Duration {
        Duration {
            millis: self.millis.saturating_sub(rhs.millis),
        }
    }

    /// `self * rhs`, or `None` past [`Duration::MAX`].
    pub const fn checked_mul(self, rhs: u32) -> Option<Duration> {
        match self.millis.checked_mul(rhs) {
            Some(ms) if ms <= Self::MAX.millis => Some(Duration { millis: ms }),
            _ => None,
        }
    }

    /// The shorter of two spans.
    pub const fn min(self, other: Duration) -> Duration {
        if self.millis <= other.millis {
            self
        } else {
            other
        }
    }

    /// The longer of two spans.
    pub const fn max(self, other: Duration) -> Duration {
        if self.millis >= other.millis {
            self
        } else {
            other
        }
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.millis;
        if ms.is_multiple_of(60_000) && ms != 0 {
            write!(f, "{}m", ms / 60_000)
        } else if ms.is_multiple_of(1000) && ms != 0 {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

/// A reading of a millisecond counter that wraps around at 2^32 (about 49.7 days).
///
/// Instants are compared by wrapping difference: `later.since(earlier)` is correct across
/// the wrap as long as the two are less than 2^31 ms (about 24.8 days) apart. A reading that
/// looks *earlier* than a stored one (a clock that stepped backwards) gives zero elapsed
/// time, never a negative or huge one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Instant {
    millis: u32,
}

impl Instant {
    /// The counter's zero.
    pub const ZERO: Instant = Instant { millis: 0 };

    /// The instant at which the counter reads `millis`.
    pub const fn from_millis(millis: u32) -> Instant {
        Instant { millis }
    }

    /// An instant from a wider tick count (for example embassy's or `std`'s): its low
    /// 32 bits of milliseconds, which is exactly how the counter wraps.
    pub const fn from_millis_u64(millis: u64) -> Instant {
        Instant { millis: millis as u32 }
    }

    /// The raw counter value.
    pub const fn as_millis(self) -> u32 {
        self.millis
    }

    /// Signed distance from `earlier` to `self`, in milliseconds (negative if `self` reads
    /// before `earlier`).
    pub(crate) const fn offset_from(self, earlier: Instant) -> i32 {
        self.millis.wrapping_sub(earlier.millis) as i32
    }

    /// Time elapsed from `earlier` to `self`; zero if the clock reads earlier than
    /// `earlier` (stuck or stepped backwards).
    pub const fn since(self, earlier: Instant) -> Duration {
        let d = self.offset_from(earlier);
        if d <= 0 {
            Duration::ZERO
        } else {
            Duration { millis: d as u32 }
        }
    }

    /// The instant `d` after `self`, wrapping like the counter.
    pub const fn wrapping_add(self, d: Duration) -> Instant {
        Instant {
            millis: self.millis.wrapping_add(d.millis),
        }
    }

    /// The instant `d` before `self`, wrapping like the counter.
    pub const fn wrapping_sub(self, d: Duration) -> Instant {
        Instant {
            millis: self.millis.wrapping_sub(d.millis),
        }
    }

    /// Whichever of the two is later (by wrapping comparison).
    pub(crate) const fn later(self, other: Instant) -> Instant {
        if self.offset_from(other) >= 0 {
            self
        } else {
            other
        }
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}ms", self.millis)
    }
}

/// A source of [`Instant`]s.
///
/// Integrations implement it over a real clock (`std`, embassy-time); tests and demos use
/// [`ManualClock`].
pub trait Clock {
    /// The current reading.
    fn now(&self) -> Instant;
}

/// A clock stopped at this instant: hands an instant to what reads a clock (a
/// [`CircuitBreaker`](crate::CircuitBreaker) method, given the `now` a caller already read).
impl Clock for Instant {
    fn now(&self) -> Instant {
        *self
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Instant {
        (**self).now()
    }
}

/// A clock that only moves when told to: for tests, demos and simulations.
///
/// It can be shared between threads and kept in a `static`. Moving it is a plain load
/// and store, so only one thread should move it at a time.
#[derive(Debug, Default)]
pub struct ManualClock {
    millis: core::sync::atomic::AtomicU32,
}

impl ManualClock {
    /// A clock reading `start`.
    pub const fn new(start: Instant) -> ManualClock {
        ManualClock {
            millis: core::sync::atomic::AtomicU32::new(start.millis),
        }
    }

    /// Sets the reading (backwards is allowed: the breaker copes).
    pub fn set(&self, now: Instant) {
        self.millis.store(now.millis, core::sync::atomic::Ordering::Relaxed);
    }

    /// Moves the reading forward by `d`, wrapping like a real counter.
    pub fn advance(&self, d: Duration) {
        self.set(self.now().wrapping_add(d));
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        Instant {
            millis: self.millis.load(core::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// The host's monotonic clock, in wrapping milliseconds.
///
/// On Unix it reads `CLOCK_MONOTONIC` directly (through the vDSO on Linux) and keeps
/// its milliseconds modulo 2^32: one clock read and a multiply, where measuring a
/// `std::time::Instant` from a start adds a checked subtraction of two timespecs that
/// costs more than the read. Elsewhere it does just that (milliseconds since its first
/// reading in the process). Either way the origin is arbitrary: instants are only ever
/// compared with each other.
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug, Default)]
pub struct StdClock;

#[cfg(all(feature = "std", unix))]
impl Clock for StdClock {
    fn now(&self) -> Instant {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        // Seconds and milliseconds wrap together: the counter is modulo 2^32 ms anyway.
        let millis = (t.tv_sec as u32)
            .wrapping_mul(1000)
            .wrapping_add((t.tv_nsec / 1_000_000) as u32);
        Instant::from_millis(millis)
    }
}

#[cfg(all(feature = "std", not(unix)))]
impl Clock for StdClock {
    fn now(&self) -> Instant {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let start = START.get_or_init(std::time::Instant::now);
        Instant::from_millis_u64(start.elapsed().as_millis() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_is_correct_across_the_wrap() {
        let before = Instant::from_millis(u32::MAX - 5);
        let after = before.wrapping_add(Duration::from_millis(10));
        assert_eq!(after.as_millis(), 4);
        assert_eq!(after.since(before), Duration::from_millis(10));
    }

    #[test]
    fn backwards_reads_as_zero_elapsed() {
        let a = Instant::from_millis(1000);
        assert_eq!(Instant::from_millis(900).since(a), Duration::ZERO);
        assert_eq!(a.since(a), Duration::ZERO);
    }

    #[test]
    fn durations_are_checked() {
        assert_eq!(Duration::checked_from_secs(u32::MAX), None);
        assert_eq!(Duration::from_secs(30).as_millis(), 30_000);
        assert_eq!(Duration::MAX.checked_add(Duration::from_millis(1)), None);
        assert_eq!(Duration::from_millis(u32::MAX), Duration::MAX);
        assert_eq!(Duration::from_secs(2).checked_mul(3), Some(Duration::from_secs(6)));
    }

    #[test]
    fn display_picks_the_largest_whole_unit() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(Duration::from_mins(2).to_string(), "2m");
        assert_eq!(Duration::from_secs(30).to_string(), "30s");
        assert_eq!(Duration::from_millis(1500).to_string(), "1500ms");
        assert_eq!(Duration::ZERO.to_string(), "0ms");
    }
}
