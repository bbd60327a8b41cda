//! The time replicas agree on: Redis's `TIME`, followed between round trips through each replica's own monotonic clock.
//!
//! A breaker's word holds an instant (when it opened, when the probe started) as wrapping
//! milliseconds, so every replica must read the same clock. Monotonic clocks start at each
//! host's boot, and wall clocks drift and get stepped; the one clock every replica can read
//! is the Redis server's. A replica keeps an offset from its monotonic clock to the server's
//! `TIME` (milliseconds since the Unix epoch, modulo 2^32) and reads the shared time as
//! `local + offset`, with no round trip.
//!
//! Every reply that carries `TIME` (each poll and each compare-and-swap does) bounds the
//! offset: the server read its clock between the request's departure and the reply's
//! arrival, so the true offset lies in `[time - arrived, time - sent]` (one millisecond
//! wider on each side for the truncation to milliseconds). The offset is moved into that
//! interval by the least amount: it never jitters with the round trip, follows drift, and
//! follows a stepped server clock at once. Before the first reply the offset comes from the
//! host's wall clock, which is the server's clock give or take the hosts' disagreement.
//!
//! Two replicas' shared times thus differ by at most the sum of their last round trips (and
//! the drift since): a millisecond or two on a local network. The consequences of that skew
//! are the machine's: a replica ahead by `s` sees a cooldown end, and a probe lease run out,
//! `s` early; the compare-and-swap still lets exactly one of them take the probe.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use breaker_core::{Clock, Instant};

/// A clock every replica reads alike.
pub(crate) struct SharedClock {
    local: Arc<dyn Clock + Send + Sync>,
    /// Shared minus local, wrapping.
    offset: AtomicU32,
    /// Whether replies' `TIME` moves the offset (false: `local` is already shared).
    follows_redis: bool,
}

/// One reply's timing: when the request left and the reply arrived (local clock), and the
/// server's `TIME` in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimeSample {
    pub sent: Instant,
    pub arrived: Instant,
    pub server_ms: u32,
}

impl SharedClock {
    /// Follows Redis's `TIME` through `local`, starting from the wall clock.
    pub fn following_redis(local: Arc<dyn Clock + Send + Sync>) -> SharedClock {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64) as u32;
        let offset = wall.wrapping_sub(local.now().as_millis());
        SharedClock {
            local,
            offset: AtomicU32::new(offset),
            follows_redis: true,
        }
    }

    /// `clock` as it is: the caller promises every replica reads the same.
    pub fn given(clock: Arc<dyn Clock + Send + Sync>) -> SharedClock {
        SharedClock {
            local: clock,
            offset: AtomicU32::new(0),
            follows_redis: false,
        }
    }

    /// The local clock's reading (for timing a round trip).
    pub fn local_now(&self) -> Instant {
        self.local.now()
    }

    /// Moves the offset into the interval `sample` allows.
    pub fn observe(&self, sample: TimeSample) {
        if self.follows_redis {
            let current = self.offset.load(Ordering::Relaxed);
            self.offset.store(clamp_offset(current, sample), Ordering::Relaxed);
        }
    }

    /// The current offset (shared minus local), for tests and reports.
    pub fn offset(&self) -> u32 {
        self.offset.load(Ordering::Relaxed)
    }
}

impl Clock for SharedClock {
    fn now(&self) -> Instant {
        Instant::from_millis(
            self.local
                .now()
                .as_millis()
                .wrapping_add(self.offset.load(Ordering::Relaxed)),
        )
    }
}

/// `offset` moved by the least amount into `[server - arrived - 1, server - sent + 1]`
/// (wrapping): the offsets `sample` allows.
pub(crate) fn clamp_offset(offset: u32, sample: TimeSample) -> u32 {
    let low = sample
        .server_ms
        .wrapping_sub(sample.arrived.as_millis())
        .wrapping_sub(1);
    // The round trip (a stepped-back local clock reads as none) plus the two milliseconds.
    let width = (sample.arrived.since(sample.sent).as_millis()).saturating_add(2);
    let above_low = offset.wrapping_sub(low);
    if above_low <= width {
        offset
    } else if above_low - width <= u32::MAX / 2 {
        // Above the interval (by less than half the circle): down to its top.
        low.wrapping_add(width)
    } else {
        low
    }
}

#[cfg(test)]
mod tests {
    use breaker_core::ManualClock;

    use super::*;

    fn sample(sent: u32, arrived: u32, server_ms: u32) -> TimeSample {
        TimeSample {
            sent: Instant::from_millis(sent),
            arrived: Instant::from_millis(arrived),
            server_ms,
        }
    }

    #[test]
    fn an_offset_inside_the_interval_stays() {
        // Sent at 100, arrived at 110, server read 5_105: offsets 4_994..=5_006 fit.
        let s = sample(100, 110, 5_105);
        for offset in 4_994..=5_006 {
            assert_eq!(clamp_offset(offset, s), offset);
        }
    }

    #[test]
    fn an_offset_outside_moves_to_the_nearest_end() {
        let s = sample(100, 110, 5_105);
        assert_eq!(clamp_offset(4_000, s), 4_994);
        assert_eq!(clamp_offset(9_000, s), 5_006);
        // Hours off, either way, as a replica's wall clock can be.
        assert_eq!(clamp_offset(5_000u32.wrapping_sub(3 * 3_600_000), s), 4_994);
        assert_eq!(clamp_offset(5_000 + 5 * 3_600_000, s), 5_006);
    }

    #[test]
    fn the_interval_works_across_the_wrap() {
        let s = sample(u32::MAX - 5, 4, 20);
        // Offsets 20 - 4 - 1 = 15 ..= 15 + 10 + 2 = 27.
        assert_eq!(clamp_offset(15, s), 15);
        assert_eq!(clamp_offset(27, s), 27);
        assert_eq!(clamp_offset(10, s), 15);
        assert_eq!(clamp_offset(40, s), 27);
    }

    #[test]
    fn replicas_with_clocks_hours_apart_agree_after_one_reply() {
        let server = 1_000_000u32;
        let replicas = [0u32, 3 * 3_600_000, u32::MAX - 7_000_000];
        let clocks: Vec<SharedClock> = replicas
            .iter()
            .map(|&origin| SharedClock::following_redis(Arc::new(ManualClock::new(Instant::from_millis(origin)))))
            .collect();
        for (clock, &origin) in clocks.iter().zip(&replicas) {
            // A 4 ms round trip, the server read its clock 1 ms after the request left.
            clock.observe(sample(origin, origin.wrapping_add(4), server + 1));
        }
        let readings: Vec<u32> = clocks.iter().map(|c| c.now().as_millis()).collect();
        for r in &readings {
            // Each replica's reading is within the round trip (+1 ms) of the server's.
            assert!(r.wrapping_sub(server).wrapping_add(5) <= 10, "{readings:?}");
        }
    }

    #[test]
    fn a_given_clock_is_not_moved_by_replies() {
        let clock = SharedClock::given(Arc::new(ManualClock::new(Instant::from_millis(7))));
        clock.observe(sample(7, 8, 123_456));
        assert_eq!(clock.now(), Instant::from_millis(7));
    }
}
