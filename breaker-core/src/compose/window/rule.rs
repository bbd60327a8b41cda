//! A windowed policy's rule: its window's size, its thresholds and minimum number of
//! calls, and the `Policy` constructors that build and check it.

use core::fmt;

use super::Sample;
#[cfg(doc)]
use crate::Reason;
use crate::{Duration, Policy, PolicyError};

/// The most samples a [`CallWindow`](super::CallWindow), the small count window, holds.
/// A count window of more calls ([`WindowSize::Calls`], up to [`MAX_RING_CALLS`]) is kept
/// in a [`CallRing`](super::CallRing).
pub const MAX_WINDOW_CALLS: u32 = 51;
/// The most samples a count window ([`WindowSize::Calls`]) holds: a
/// [`CallRing`](super::CallRing)'s size.
pub const MAX_RING_CALLS: u32 = 1008;
/// The number of buckets a time window ([`WindowSize::Time`]) is split into by default
/// ([`TimeWindow`](super::TimeWindow) without a parameter), and the number of newest
/// buckets a [`Snapshot`](crate::Snapshot) keeps.
pub const WINDOW_BUCKETS: u32 = 10;
/// The most buckets a time window ([`TimeWindow<B>`](super::TimeWindow)) can be split into.
pub const MAX_WINDOW_BUCKETS: u32 = 240;
/// The most calls one bucket of a time window holds: a full bucket halves its counts and
/// goes on counting (its rates stay, its newest calls weigh more).
pub const MAX_BUCKET_CALLS: u32 = 1023;
/// The shortest time window.
pub const MIN_WINDOW_TIME: Duration = Duration::from_secs(1);

/// How far back a windowed policy looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WindowSize {
    /// The last `n` samples (calls), `1 <= n <=` [`MAX_RING_CALLS`]: a count-based window,
    /// kept in a [`CallWindow`](super::CallWindow) up to [`MAX_WINDOW_CALLS`], in a
    /// [`CallRing`](super::CallRing) beyond.
    Calls(u32),
    /// The samples of the last span of time, at least [`MIN_WINDOW_TIME`] and a whole
    /// multiple of 10 ms: a time-based window of [`WINDOW_BUCKETS`] buckets, or of the
    /// number its [`TimeWindow<B>`](super::TimeWindow) storage says (`span` must then be a
    /// whole number of ms per bucket).
    Time(Duration),
}

/// The closed-state rule of a windowed policy: its window, thresholds and minimum number
/// of calls. Read it with [`Policy::window`]; build it with [`Policy::failure_rate`],
/// [`Policy::with_min_calls`] and [`Policy::with_slow_calls`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Window {
    /// 0: no window. Else the number of calls, or [`Window::TIME`] | the span in ms.
    span: u32,
    /// A successful call longer than this is slow (with `slow_rate` above 0).
    slow_call: Duration,
    min_calls: u16,
    failure_rate: u8,
    /// 0: no slow-call rule. Else the rate, plus [`Window::SLOW_FAILURES`] if slow failures
    /// count as slow calls.
    slow_rate: u8,
}

impl Window {
    /// The rule as three words (see `Policy::to_words`).
    pub(crate) const fn to_words(self) -> [u32; 3] {
        [
            self.span,
            self.slow_call.as_millis(),
            self.min_calls as u32 | (self.failure_rate as u32) << 16 | (self.slow_rate as u32) << 24,
        ]
    }

    /// The rule [`Window::to_words`] stored.
    pub(crate) const fn from_words(w: [u32; 3]) -> Window {
        Window {
            span: w[0],
            slow_call: Duration::from_millis(w[1]),
            min_calls: w[2] as u16,
            failure_rate: (w[2] >> 16) as u8,
            slow_rate: (w[2] >> 24) as u8,
        }
    }

    /// The flag bit of `span` that makes it a time span (policy durations stay below 2^30).
    const TIME: u32 = 1 << 31;

    /// The flag bit of `slow_rate` that counts slow failures as slow calls (rates stay at
    /// or below 100).
    const SLOW_FAILURES: u8 = 1 << 7;

    /// No window: a policy of consecutive strikes.
    pub(crate) const NONE: Window = Window {
        span: 0,
        slow_call: Duration::ZERO,
        min_calls: 0,
        failure_rate: 0,
        slow_rate: 0,
    };

    /// A window of `size` with `failure_rate` and the default minimum number of calls (the
    /// whole window for a count window, 10 for a time window), checked by the caller.
    pub(crate) const fn new(size: WindowSize, failure_rate: u32) -> Window {
        let (span, min_calls) = match size {
            WindowSize::Calls(n) => (n, n),
            WindowSize::Time(span) => (Window::TIME | span.as_millis(), 10),
        };
        Window {
            span,
            slow_call: Duration::ZERO,
            min_calls: min_calls as u16,
            failure_rate: failure_rate as u8,
            slow_rate: 0,
        }
    }

    pub(crate) const fn is_some(&self) -> bool {
        self.span != 0
    }

    pub(crate) const fn with_min_calls(mut self, calls: u32) -> Window {
        self.min_calls = calls as u16;
        self
    }

    pub(crate) const fn with_slow_calls(mut self, slower_than: Duration, percent: u32) -> Window {
        self.slow_call = slower_than;
        self.slow_rate = percent as u8 | (self.slow_rate & Window::SLOW_FAILURES);
        self
    }

    pub(crate) const fn with_slow_failures(mut self, on: bool) -> Window {
        self.slow_rate = if on {
            self.slow_rate | Window::SLOW_FAILURES
        } else {
            self.slow_rate & !Window::SLOW_FAILURES
        };
        self
    }

    /// How far back it looks.
    pub const fn size(&self) -> WindowSize {
        if self.span & Window::TIME != 0 {
            WindowSize::Time(Duration::from_millis(self.span & !Window::TIME))
        } else {
            WindowSize::Calls(self.span)
        }
    }

    /// Whether it is a time window ([`WindowSize::Time`]).
    pub const fn is_time(&self) -> bool {
        self.span & Window::TIME != 0
    }

    /// The failure rate that trips the breaker, in percent (1 to 100).
    pub const fn failure_rate(&self) -> u32 {
        self.failure_rate as u32
    }

    /// The fewest samples the window must hold before a rate can trip the breaker.
    pub const fn min_calls(&self) -> u32 {
        self.min_calls as u32
    }

    /// The slow-call rule: a successful call longer than this duration is slow, and this
    /// share of slow calls (in percent) trips the breaker. `None` without the rule.
    pub const fn slow_calls(&self) -> Option<(Duration, u32)> {
        if self.times_calls() {
            Some((self.slow_call, (self.slow_rate & !Window::SLOW_FAILURES) as u32))
        } else {
            None
        }
    }

    /// Whether a failure that took longer than the slow-call duration also counts as a
    /// slow call ([`Policy::with_slow_failures`]). `false` by default: only slow successes
    /// are slow calls.
    pub const fn slow_failures(&self) -> bool {
        self.slow_rate & Window::SLOW_FAILURES != 0
    }

    /// Whether the policy has a slow-call rule, so calls must be timed.
    pub(crate) const fn times_calls(&self) -> bool {
        self.slow_rate & !Window::SLOW_FAILURES != 0
    }

    /// A count window's number of samples (0 for a time window).
    pub(crate) const fn calls(&self) -> u32 {
        if self.is_time() {
            0
        } else {
            self.span
        }
    }

    /// A time window's bucket width in ms with `buckets` buckets (0 for a count window).
    pub(crate) const fn bucket_ms(&self, buckets: u32) -> u32 {
        if self.is_time() && buckets != 0 {
            (self.span & !Window::TIME) / buckets
        } else {
            0
        }
    }

    /// Whether a call of `elapsed` was slow (with a slow-call rule).
    fn is_slow(&self, elapsed: Option<Duration>) -> bool {
        matches!(elapsed, Some(d) if self.times_calls() && d > self.slow_call)
    }

    /// What a finished call of `elapsed` says: slow or not (successes only).
    pub(crate) fn success(&self, elapsed: Option<Duration>) -> Sample {
        if self.is_slow(elapsed) {
            Sample::Slow
        } else {
            Sample::Ok
        }
    }

    /// What a failed call of `elapsed` says: a slow failure if the rule counts those.
    pub(crate) fn failure(&self, elapsed: Option<Duration>) -> Sample {
        if self.slow_failures() && self.is_slow(elapsed) {
            Sample::SlowFail
        } else {
            Sample::Fail
        }
    }
}

impl fmt::Debug for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Window")
            .field("size", &self.size())
            .field("failure_rate", &self.failure_rate())
            .field("min_calls", &self.min_calls())
            .field("slow_calls", &self.slow_calls())
            .field("slow_failures", &self.slow_failures())
            .finish()
    }
}

/// The windowed policies: [`Policy::failure_rate`] and its settings.
impl Policy {
    /// Trip when `percent` of the samples in a window of `size` failed (1 to 100: 50 trips
    /// when half of them did), instead of on consecutive strikes, and refuse for
    /// `cooldown`. The window is judged once it holds [`Window::min_calls`] samples: all of
    /// a count window's by default, 10 of a time window's ([`Policy::with_min_calls`]
    /// changes it). Everything else is as for [`Policy::new`]: the probe lease defaults to
    /// the cooldown, one probe success closes, the cooldown is constant. See
    /// [`crate::window`] for the rule.
    ///
    /// ```
    /// use breaker_core::{Duration, Policy, WindowSize};
    ///
    /// // resilience4j's defaults, in a count window of 50: 50 % over the last 50 calls.
    /// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(50), Duration::from_secs(60));
    /// assert_eq!(POLICY.window().unwrap().min_calls(), 50);
    /// assert_eq!(POLICY.trip(), 0);
    /// ```
    ///
    /// # Panics
    /// On a nonsense value (a compile error in a `const`); see [`Policy::try_failure_rate`].
    pub const fn failure_rate(percent: u32, size: WindowSize, cooldown: Duration) -> Policy {
        crate::policy::unwrap_policy!(Self::try_failure_rate(percent, size, cooldown))
    }

    /// [`Policy::failure_rate`] for values known only at run time.
    pub const fn try_failure_rate(percent: u32, size: WindowSize, cooldown: Duration) -> Result<Policy, PolicyError> {
        if percent == 0 || percent > 100 {
            return Err(PolicyError::RateOutOfRange);
        }
        let fits = match size {
            WindowSize::Calls(n) => n >= 1 && n <= MAX_RING_CALLS,
            WindowSize::Time(span) => {
                span.as_millis() >= MIN_WINDOW_TIME.as_millis() && span.as_millis() % WINDOW_BUCKETS == 0
            }
        };
        if !fits {
            return Err(PolicyError::WindowOutOfRange);
        }
        match Policy::try_new(1, cooldown) {
            Ok(p) => Ok(p.windowed(Window::new(size, percent))),
            Err(e) => Err(e),
        }
    }

    /// The fewest samples the window must hold before a rate can trip the breaker: 1 to
    /// the window's size for a count window, 1 to 10 x [`MAX_BUCKET_CALLS`] for a time
    /// window (and at most what its buckets can count: a breaker whose
    /// [`TimeWindow<B>`](super::TimeWindow) has fewer than ten buckets refuses more than
    /// `B` x [`MAX_BUCKET_CALLS`]). Below it, even a window of failures does not trip (a trip verdict still
    /// does).
    ///
    /// # Panics
    /// On a policy of consecutive strikes, or a value out of range (a compile error in a
    /// `const`); see [`Policy::try_with_min_calls`].
    pub const fn with_min_calls(self, calls: u32) -> Policy {
        crate::policy::unwrap_policy!(self.try_with_min_calls(calls))
    }

    /// [`Policy::with_min_calls`] for values known only at run time.
    pub const fn try_with_min_calls(self, calls: u32) -> Result<Policy, PolicyError> {
        let Some(window) = self.window() else {
            return Err(PolicyError::NotWindowed);
        };
        let most = match window.size() {
            WindowSize::Calls(n) => n,
            WindowSize::Time(_) => WINDOW_BUCKETS * MAX_BUCKET_CALLS,
        };
        if calls == 0 || calls > most {
            return Err(PolicyError::MinCallsOutOfRange);
        }
        Ok(self.windowed(window.with_min_calls(calls)))
    }

    /// The slow-call rule: a successful call that took longer than `slower_than` is slow,
    /// and when `percent` of the window's samples are slow (1 to 100, once it holds
    /// [`Window::min_calls`]) the breaker trips with [`Reason::SlowCalls`]. A bus or a
    /// modem that answers, but too late. Calls are timed (a clock read when each starts
    /// and ends) only with this rule.
    ///
    /// ```
    /// use breaker_core::{Duration, Policy, WindowSize};
    ///
    /// // Trip when 80 % of the last 20 calls took more than 2 s, or half of them failed.
    /// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30))
    ///     .with_min_calls(10)
    ///     .with_slow_calls(Duration::from_secs(2), 80);
    /// assert_eq!(POLICY.window().unwrap().slow_calls(), Some((Duration::from_secs(2), 80)));
    /// ```
    ///
    /// # Panics
    /// On a policy of consecutive strikes, or a value out of range (a compile error in a
    /// `const`); see [`Policy::try_with_slow_calls`].
    pub const fn with_slow_calls(self, slower_than: Duration, percent: u32) -> Policy {
        crate::policy::unwrap_policy!(self.try_with_slow_calls(slower_than, percent))
    }

    /// [`Policy::with_slow_calls`] for values known only at run time.
    pub const fn try_with_slow_calls(self, slower_than: Duration, percent: u32) -> Result<Policy, PolicyError> {
        let Some(window) = self.window() else {
            return Err(PolicyError::NotWindowed);
        };
        if slower_than.as_millis() == 0 {
            return Err(PolicyError::ZeroSlowCall);
        }
        if percent == 0 || percent > 100 {
            return Err(PolicyError::RateOutOfRange);
        }
        Ok(self.windowed(window.with_slow_calls(slower_than, percent)))
    }

    /// Count a *failure* that took longer than the slow-call duration as a slow call too,
    /// as resilience4j does: it is then both a failure (in the failure rate) and a slow call
    /// (in the slow-call rate). Without it (the default) only slow successes are slow calls,
    /// and a failure is a failure however long it took. Needs the slow-call rule
    /// ([`Policy::with_slow_calls`]) first.
    ///
    /// ```
    /// use breaker_core::{Duration, Policy, WindowSize};
    ///
    /// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(100), Duration::from_secs(60))
    ///     .with_slow_calls(Duration::from_secs(60), 100)
    ///     .with_slow_failures(true);
    /// assert!(POLICY.window().unwrap().slow_failures());
    /// ```
    ///
    /// # Panics
    /// On a policy without a slow-call rule (a compile error in a `const`); see
    /// [`Policy::try_with_slow_failures`].
    pub const fn with_slow_failures(self, on: bool) -> Policy {
        crate::policy::unwrap_policy!(self.try_with_slow_failures(on))
    }

    /// [`Policy::with_slow_failures`] for values known only at run time.
    pub const fn try_with_slow_failures(self, on: bool) -> Result<Policy, PolicyError> {
        let Some(window) = self.window() else {
            return Err(PolicyError::NotWindowed);
        };
        if on && !window.times_calls() {
            return Err(PolicyError::SlowFailuresNeedSlowCalls);
        }
        Ok(self.windowed(window.with_slow_failures(on)))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Duration, Policy, WindowSize};

    #[test]
    fn only_a_time_window_has_a_bucket_width() {
        let rule = |size| Policy::failure_rate(50, size, Duration::from_secs(1)).window().unwrap();
        let time = rule(WindowSize::Time(Duration::from_secs(10)));
        assert_eq!(
            (time.bucket_ms(10), time.bucket_ms(60), time.bucket_ms(0)),
            (1_000, 166, 0)
        );
        assert_eq!(rule(WindowSize::Calls(100)).bucket_ms(10), 0);
    }
}
