//! How a link talks to Redis (timeouts, refresh, reconnection, the clock) and what it reports.

use core::fmt;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use breaker_core::{Clock, StdClock};

use crate::ValueError;

/// How a [`RedisLink`](crate::RedisLink) talks to Redis.
///
/// ```
/// use std::time::Duration;
/// use breaker_redis::Config;
///
/// let config = Config::new()
///     .timeout(Duration::from_millis(50))
///     .refresh(Duration::from_millis(100))
///     .retry(Duration::from_secs(1));
/// assert_eq!(config.trip_bound(), Duration::from_millis(200));
/// ```
#[derive(Clone)]
pub struct Config {
    pub(crate) timeout: StdDuration,
    pub(crate) refresh: StdDuration,
    pub(crate) retry: StdDuration,
    pub(crate) log: Arc<dyn Fn(&LinkEvent) + Send + Sync>,
    pub(crate) time: TimeBase,
}

#[derive(Clone)]
pub(crate) enum TimeBase {
    /// Redis's `TIME`, followed through this local clock.
    Redis(Arc<dyn Clock + Send + Sync>),
    /// This clock, the same for every replica.
    Given(Arc<dyn Clock + Send + Sync>),
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("timeout", &self.timeout)
            .field("refresh", &self.refresh)
            .field("retry", &self.retry)
            .field(
                "time",
                &match self.time {
                    TimeBase::Redis(_) => "redis TIME",
                    TimeBase::Given(_) => "given clock",
                },
            )
            .finish_non_exhaustive()
    }
}

impl Default for Config {
    fn default() -> Config {
        Config::new()
    }
}

impl Config {
    /// The defaults: 100 ms timeout, 100 ms refresh, 1 s between reconnection attempts, log
    /// lines on stderr, Redis's `TIME` followed through [`StdClock`].
    pub fn new() -> Config {
        Config {
            timeout: StdDuration::from_millis(100),
            refresh: StdDuration::from_millis(100),
            retry: StdDuration::from_secs(1),
            log: Arc::new(|e: &LinkEvent| eprintln!("breaker-redis: {e}")),
            time: TimeBase::Redis(Arc::new(StdClock)),
        }
    }

    /// The longest a call waits for Redis (to be granted the probe, or for a trip, force-open
    /// or reset to land), and the connect, read and write timeout of the link's connection.
    /// Past it the call goes ahead on the replica's local breaker. At least 1 ms.
    pub fn timeout(mut self, timeout: StdDuration) -> Config {
        self.timeout = timeout.max(StdDuration::from_millis(1));
        self
    }

    /// How often the link reads every key it serves, so that a trip, a close or a reset by
    /// another replica reaches this one. At least 1 ms.
    pub fn refresh(mut self, refresh: StdDuration) -> Config {
        self.refresh = refresh.max(StdDuration::from_millis(1));
        self
    }

    /// How often an unreachable Redis is tried again. At least 1 ms.
    pub fn retry(mut self, retry: StdDuration) -> Config {
        self.retry = retry.max(StdDuration::from_millis(1));
        self
    }

    /// Where the link's reports go (once per event, never per call). The default writes one
    /// line to stderr.
    pub fn log(mut self, log: impl Fn(&LinkEvent) + Send + Sync + 'static) -> Config {
        self.log = Arc::new(log);
        self
    }

    /// Follows Redis's `TIME` through `clock` instead of [`StdClock`] (a clock that starts
    /// anywhere: only its rate matters).
    pub fn local_clock(mut self, clock: impl Clock + Send + Sync + 'static) -> Config {
        self.time = TimeBase::Redis(Arc::new(clock));
        self
    }

    /// Uses `clock` as the shared time, ignoring Redis's `TIME`. Every replica must read the
    /// same instant from it: a wall clock kept by NTP, or one `ManualClock` shared by
    /// replicas in one process (tests, demos).
    pub fn shared_clock(mut self, clock: impl Clock + Send + Sync + 'static) -> Config {
        self.time = TimeBase::Given(Arc::new(clock));
        self
    }

    /// The bound within which a trip by one replica reaches the others: one refresh
    /// interval, then at most one operation of the link still under way and the read's own
    /// round trip, each shorter than the timeout (a round trip that takes longer sends the
    /// replica apart, onto its local breaker: it is not late, it decides alone).
    pub fn trip_bound(&self) -> StdDuration {
        self.refresh + 2 * self.timeout
    }
}

/// What a link reports, once per event.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkEvent {
    /// Redis could not be reached (or answered too late): every breaker of the link falls
    /// back to its local breaker until it returns.
    Unreachable {
        /// The client's error.
        error: String,
    },
    /// A call waited the whole timeout for Redis: this breaker decides locally until the
    /// link resynchronises it.
    Slow {
        /// The breaker's key.
        key: String,
    },
    /// A key's value is not this breaker's state: reported, not obeyed, not overwritten;
    /// the breaker stays local until the value is fixed or deleted.
    BadValue {
        /// The key.
        key: String,
        /// What is wrong with it.
        error: ValueError,
    },
    /// A breaker follows Redis again.
    Resynchronised {
        /// The key.
        key: String,
        /// How the two states were joined.
        how: Resync,
    },
}

/// How a breaker's local state and Redis's were joined when it came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resync {
    /// Redis had no value (restarted without persistence, or the key was deleted): it took
    /// this replica's.
    Created,
    /// Nobody changed Redis's value while apart (it holds the word this replica last
    /// shared, or the one its own unanswered last write sent): it took this replica's
    /// local history.
    Pushed,
    /// Redis moved on while apart: this replica took Redis's state.
    Adopted,
    /// Redis moved on and is closed, while this replica's breaker tripped while apart:
    /// Redis's state took that trip, at the instant it happened.
    AdoptedWithTrip,
}

impl fmt::Display for LinkEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkEvent::Unreachable { error } => {
                write!(
                    f,
                    "redis unreachable ({error}): breakers fall back to their local state"
                )
            }
            LinkEvent::Slow { key } => write!(f, "{key}: no answer from redis in time: deciding locally"),
            LinkEvent::BadValue { key, error } => write!(f, "{key}: {error}: not obeyed, staying local"),
            LinkEvent::Resynchronised { key, how } => {
                let how = match how {
                    Resync::Created => "redis took this replica's state (the key was gone)",
                    Resync::Pushed => "redis took this replica's state",
                    Resync::Adopted => "this replica took redis's state",
                    Resync::AdoptedWithTrip => "this replica took redis's state and its own trip",
                };
                write!(f, "{key}: resynchronised: {how}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_is_kept_and_floored_at_one_millisecond() {
        let ms = StdDuration::from_millis;
        let config = Config::new().timeout(ms(250)).refresh(ms(40)).retry(ms(700));
        assert_eq!(
            (config.timeout, config.refresh, config.retry),
            (ms(250), ms(40), ms(700))
        );
        assert_eq!(config.trip_bound(), ms(540));
        let floored = Config::default().timeout(ms(0)).refresh(ms(0)).retry(ms(0));
        assert_eq!((floored.timeout, floored.refresh, floored.retry), (ms(1), ms(1), ms(1)));
        let defaults = Config::default();
        assert_eq!(
            (defaults.timeout, defaults.refresh, defaults.retry),
            (ms(100), ms(100), ms(1_000))
        );
        assert_eq!(
            format!("{config:?}"),
            "Config { timeout: 250ms, refresh: 40ms, retry: 700ms, time: \"redis TIME\", .. }"
        );
    }
}
