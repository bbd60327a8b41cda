//! How a breaker decides: trip count (or failure-rate window), cooldown, probe lease,
//! probes to close (or a half-open failure rate), backoff.

use core::fmt;

use crate::window::Window;
use crate::Duration;

/// The largest trip count: strikes are kept in 8 bits.
pub const MAX_TRIP: u32 = 255;
/// The most consecutive probe successes a policy may require to close, and the most probes
/// a half-open failure rate may permit ([`Policy::with_half_open_rate`]).
pub const MAX_PROBES: u32 = 15;
/// The most re-opens the backoff counts; past it the cooldown stays where it is.
pub const MAX_BACKOFF_STEP: u8 = 15;

/// A breaker's policy. Every constructor is a `const fn`, so a policy can live in a
/// `static` (in flash on a microcontroller).
///
/// ```
/// use breaker_core::{Duration, Policy};
///
/// // Trip after 3 strikes, refuse for 30 s, give a probe 10 s to answer, need 2 probe
/// // successes to close, and double the cooldown on each re-open up to 30 minutes.
/// static POLICY: Policy = Policy::new(3, Duration::from_secs(30))
///     .with_probe_lease(Duration::from_secs(10))
///     .with_probes_to_close(2)
///     .with_backoff(2, Duration::from_mins(30));
/// assert_eq!(POLICY.cooldown_at(3), Duration::from_secs(240));
/// ```
///
/// Nonsense is rejected: in a `const` or `static` it does not compile,
///
/// ```compile_fail
/// use breaker_core::{Duration, Policy};
/// static NEVER: Policy = Policy::new(0, Duration::from_secs(30)); // trip must be >= 1
/// ```
///
/// and the `try_` constructors return a [`PolicyError`] for values known only at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Policy {
    trip: u8,
    /// Half-open: the probe successes that close ([`Policy::probe_successes_to_close`]):
    /// the probes to close, or under a half-open failure rate the successes after which
    /// the probes left cannot reach it, worked out once here so that a step only loads it.
    close_after: u8,
    backoff_multiplier: u8,
    /// [`PATIENT`], [`COUNT_CALLS`] and [`HALF_OPEN_RATE`].
    flags: u8,
    /// [`Policy::with_half_open_rate`]'s permitted calls; 0 without the rule.
    half_open_calls: u8,
    /// [`Policy::with_half_open_rate`]'s failure rate in percent; 0 without the rule.
    half_open_rate: u8,
    /// Half-open: the probe failures that re-open ([`Policy::probe_failures_to_open`]):
    /// 1 without the rule, else `ceil(rate * calls / 100)`, worked out once here so that
    /// a step divides nothing (Cortex-M0 has no divide instruction) and only loads it.
    open_after: u8,
    cooldown: Duration,
    max_cooldown: Duration,
    probe_lease: Duration,
    /// The closed state's rate rule; `Window::NONE` (and `trip` above 0) for consecutive
    /// strikes (see [`crate::window`]).
    window: Window,
}

/// [`Policy::with_patient_probation`]'s bit of `Policy::flags`.
const PATIENT: u8 = 1;
/// [`Policy::counting_calls`]'s bit of `Policy::flags`.
const COUNT_CALLS: u8 = 1 << 1;
/// [`Policy::with_half_open_rate`]'s bit of `Policy::flags`: with it, [`PATIENT`] changes
/// nothing (one masked test says whether a probe's strike only costs the streak).
const HALF_OPEN_RATE: u8 = 1 << 2;

/// Why a policy was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum PolicyError {
    /// `trip` was 0 or above [`MAX_TRIP`].
    TripOutOfRange,
    /// The cooldown was zero.
    ZeroCooldown,
    /// The probe lease was zero.
    ZeroProbeLease,
    /// `probes_to_close` was 0 or above [`MAX_PROBES`].
    ProbesOutOfRange,
    /// The backoff multiplier was 0 or above 255.
    MultiplierOutOfRange,
    /// The backoff cap was shorter than the base cooldown.
    CapBelowCooldown,
    /// A failure or slow-call rate was 0 or above 100 percent.
    RateOutOfRange,
    /// A count window of 0 or more than [`MAX_RING_CALLS`](crate::MAX_RING_CALLS)
    /// calls, or a time window shorter than 1 s or not in whole 10 ms.
    WindowOutOfRange,
    /// `min_calls` was 0 or more than the window holds.
    MinCallsOutOfRange,
    /// A window setting on a policy of consecutive strikes.
    NotWindowed,
    /// The slow-call duration was zero.
    ZeroSlowCall,
    /// A failure-rate policy given to a breaker without a window to keep its samples in
    /// (build it with a [`Windowed`](crate::Windowed) storage).
    NeedsWindow,
    /// A consecutive-strike policy given to a constructor of windowed breakers
    /// ([`SharedBreaker::windowed`](crate::SharedBreaker::windowed)).
    NeedsNoWindow,
    /// A policy with a count window ([`WindowSize::Calls`](crate::WindowSize::Calls))
    /// beside a time window's storage.
    NeedsCountWindow,
    /// A policy with a time window ([`WindowSize::Time`](crate::WindowSize::Time)) beside
    /// a count window's storage.
    NeedsTimeWindow,
    /// A policy with a count window of more than
    /// [`MAX_WINDOW_CALLS`](crate::MAX_WINDOW_CALLS) calls beside a
    /// [`CallWindow`](crate::CallWindow), which holds no more (build it with a
    /// [`CallRing`](crate::CallRing)).
    NeedsCallRing,
    /// A time window whose span is not a whole number of milliseconds per bucket of its
    /// [`TimeWindow<B>`](crate::TimeWindow), or whose `min_calls` is more than its buckets
    /// can count.
    BucketsOutOfRange,
    /// [`Policy::with_slow_failures`] on a policy without a slow-call rule.
    SlowFailuresNeedSlowCalls,
    /// [`Policy::with_half_open_rate`]'s permitted calls were 0 or above [`MAX_PROBES`].
    HalfOpenCallsOutOfRange,
    /// Probes to close above 1 and a half-open failure rate on one policy: they are two
    /// ways to judge half-open, and a policy has one.
    HalfOpenRuleConflict,
}

impl PolicyError {
    /// What went wrong, as one sentence.
    pub const fn message(self) -> &'static str {
        match self {
            PolicyError::TripOutOfRange => "trip must be between 1 and 255 consecutive strikes",
            PolicyError::ZeroCooldown => "cooldown must be longer than zero",
            PolicyError::ZeroProbeLease => "probe lease must be longer than zero",
            PolicyError::ProbesOutOfRange => "probes to close must be between 1 and 15",
            PolicyError::MultiplierOutOfRange => "backoff multiplier must be between 1 and 255",
            PolicyError::CapBelowCooldown => "max cooldown must not be shorter than the cooldown",
            PolicyError::RateOutOfRange => "a failure or slow-call rate must be between 1 and 100 percent",
            PolicyError::WindowOutOfRange => {
                "a count window holds 1 to 1008 calls; a time window is at least 1 s, in whole 10 ms"
            }
            PolicyError::MinCallsOutOfRange => "min calls must be at least 1 and at most what the window holds",
            PolicyError::NotWindowed => "min calls and slow calls need a failure-rate window (Policy::failure_rate)",
            PolicyError::ZeroSlowCall => "the slow-call duration must be longer than zero",
            PolicyError::NeedsWindow => {
                "this policy trips on a failure rate over a window: build the breaker with `windowed`"
            }
            PolicyError::NeedsNoWindow => {
                "this policy trips on consecutive strikes: build the breaker with `new` or `with_observer`"
            }
            PolicyError::NeedsCountWindow => {
                "this policy has a count window (WindowSize::Calls): give the breaker `Windowed::calls(..)`"
            }
            PolicyError::NeedsTimeWindow => {
                "this policy has a time window (WindowSize::Time): give the breaker `Windowed::time(..)`"
            }
            PolicyError::NeedsCallRing => {
                "this policy's count window holds more than 51 calls: give the breaker `Windowed::ring(..)`"
            }
            PolicyError::BucketsOutOfRange => {
                "the time window must be a whole number of ms per bucket, and min calls at most 1023 per bucket"
            }
            PolicyError::SlowFailuresNeedSlowCalls => {
                "slow failures count in the slow-call rate: give the policy a slow-call rule first (with_slow_calls)"
            }
            PolicyError::HalfOpenCallsOutOfRange => "half-open permitted calls must be between 1 and 15",
            PolicyError::HalfOpenRuleConflict => {
                "probes to close above 1 and a half-open failure rate exclude each other: choose one"
            }
        }
    }

    /// Panics with [`PolicyError::message`]: at compile time in a `static`, where the
    /// message is the error shown.
    pub(crate) const fn fail(self) -> ! {
        panic!("{}", self.message())
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl core::error::Error for PolicyError {}

macro_rules! unwrap_policy {
    ($e:expr) => {
        match $e {
            Ok(p) => p,
            Err(e) => e.fail(),
        }
    };
}
pub(crate) use unwrap_policy;

impl Policy {
    /// The policy as the eight words a [`LivePolicy`](crate::LivePolicy) stores.
    pub(crate) const fn to_words(self) -> [u32; 8] {
        let [w0, w1, w2] = self.window.to_words();
        [
            self.trip as u32
                | (self.close_after as u32) << 8
                | (self.backoff_multiplier as u32) << 16
                | (self.flags as u32) << 24,
            self.cooldown.as_millis(),
            self.max_cooldown.as_millis(),
            self.probe_lease.as_millis(),
            w0,
            w1,
            w2,
            self.half_open_calls as u32 | (self.half_open_rate as u32) << 8 | (self.open_after as u32) << 16,
        ]
    }

    /// The policy [`Policy::to_words`] stored.
    pub(crate) const fn from_words(w: [u32; 8]) -> Policy {
        Policy {
            trip: w[0] as u8,
            close_after: (w[0] >> 8) as u8,
            backoff_multiplier: (w[0] >> 16) as u8,
            flags: (w[0] >> 24) as u8,
            cooldown: Duration::from_millis(w[1]),
            max_cooldown: Duration::from_millis(w[2]),
            probe_lease: Duration::from_millis(w[3]),
            window: Window::from_words([w[4], w[5], w[6]]),
            half_open_calls: w[7] as u8,
            half_open_rate: (w[7] >> 8) as u8,
            open_after: (w[7] >> 16) as u8,
        }
    }

    /// Trip after `trip` consecutive strikes and refuse for `cooldown`. The probe lease
    /// defaults to the cooldown, one probe success closes, and the cooldown is constant.
    ///
    /// # Panics
    /// On a nonsense value (a compile error in a `const`); see [`Policy::try_new`].
    pub const fn new(trip: u32, cooldown: Duration) -> Policy {
        unwrap_policy!(Self::try_new(trip, cooldown))
    }

    /// [`Policy::new`] for values known only at run time.
    pub const fn try_new(trip: u32, cooldown: Duration) -> Result<Policy, PolicyError> {
        if trip == 0 || trip > MAX_TRIP {
            return Err(PolicyError::TripOutOfRange);
        }
        if cooldown.as_millis() == 0 {
            return Err(PolicyError::ZeroCooldown);
        }
        Ok(Policy {
            trip: trip as u8,
            close_after: 1,
            backoff_multiplier: 1,
            flags: 0,
            half_open_calls: 0,
            half_open_rate: 0,
            open_after: 1,
            cooldown,
            max_cooldown: cooldown,
            probe_lease: cooldown,
            window: Window::NONE,
        })
    }

    /// How long a granted probe may stay unanswered before it counts as failed.
    ///
    /// # Panics
    /// If `lease` is zero (a compile error in a `const`).
    pub const fn with_probe_lease(self, lease: Duration) -> Policy {
        unwrap_policy!(self.try_with_probe_lease(lease))
    }

    /// [`Policy::with_probe_lease`] for values known only at run time.
    pub const fn try_with_probe_lease(mut self, lease: Duration) -> Result<Policy, PolicyError> {
        if lease.as_millis() == 0 {
            return Err(PolicyError::ZeroProbeLease);
        }
        self.probe_lease = lease;
        Ok(self)
    }

    /// How many consecutive probe successes close the breaker (probes are granted one
    /// at a time). A policy judges half-open either this way or by a failure rate
    /// ([`Policy::with_half_open_rate`]), not both.
    ///
    /// # Panics
    /// If `probes` is 0 or above [`MAX_PROBES`], or above 1 on a policy with a half-open
    /// failure rate (a compile error in a `const`).
    pub const fn with_probes_to_close(self, probes: u32) -> Policy {
        unwrap_policy!(self.try_with_probes_to_close(probes))
    }

    /// [`Policy::with_probes_to_close`] for values known only at run time.
    pub const fn try_with_probes_to_close(mut self, probes: u32) -> Result<Policy, PolicyError> {
        if probes == 0 || probes > MAX_PROBES {
            return Err(PolicyError::ProbesOutOfRange);
        }
        if self.half_open_rate != 0 {
            // `probes_to_close` is 1 under the rule: 1 changes nothing, more conflicts.
            return if probes > 1 {
                Err(PolicyError::HalfOpenRuleConflict)
            } else {
                Ok(self)
            };
        }
        self.close_after = probes as u8;
        Ok(self)
    }

    /// Judges half-open by the failure rate of its probes, as resilience4j's
    /// `permittedNumberOfCallsInHalfOpenState` does, instead of by consecutive successes:
    /// up to `calls` probes are let through, still one at a time, and each probe's outcome
    /// is counted (a success or a strike; a neutral outcome frees the slot and counts
    /// nothing). With `f` failures among `calls` outcomes the breaker closes if
    /// `f * 100 < percent * calls`, and re-opens (as a failed probe: with the backoff
    /// advanced) otherwise, as resilience4j's "failure rate at or above the threshold
    /// opens".
    ///
    /// The verdict is taken as soon as it is certain rather than after the last permitted
    /// call, and is the one waiting would give: the breaker re-opens at the failure that
    /// reaches `ceil(percent * calls / 100)` failures, and closes at the success after
    /// which the probes left could no longer reach it. A trip verdict still re-opens at
    /// once, and so does a lapsed probe lease. [`Policy::with_patient_probation`] changes
    /// nothing under this rule (it already tolerates strikes below the rate).
    ///
    /// Probes stay one at a time (a probe out refuses every other call), as everywhere in
    /// this library: one probe out is what the probe lease times, what a shared breaker's
    /// one state word and the Redis replicas' one-probe rule guard; letting `calls` probes
    /// out at once would send a recovering upstream a burst when it can take least.
    ///
    /// ```
    /// use breaker_core::{Breaker, Duration, Instant, Outcome, Phase, Policy};
    ///
    /// // Half-open: 10 probes, re-open at a failure rate of 50 % (5 failures of 10).
    /// let policy = Policy::new(1, Duration::from_secs(60)).with_half_open_rate(10, 50);
    /// let mut b = Breaker::new(policy);
    /// let p = b.try_acquire(Instant::ZERO).unwrap();
    /// b.record(p, Outcome::STRIKE, Instant::ZERO);
    /// let later = Instant::ZERO.wrapping_add(Duration::from_secs(60));
    /// for outcome in [Outcome::STRIKE; 4] {
    ///     let probe = b.try_acquire(later).unwrap();
    ///     b.record(probe, outcome, later); // 4 failures: still half-open
    /// }
    /// for _ in 0..5 {
    ///     let probe = b.try_acquire(later).unwrap();
    ///     b.record(probe, Outcome::Success, later);
    ///     assert_eq!(b.phase(later), Phase::HalfOpen);
    /// }
    /// // The sixth success: the one probe left cannot make 5 failures. Closed.
    /// let probe = b.try_acquire(later).unwrap();
    /// b.record(probe, Outcome::Success, later);
    /// assert_eq!(b.phase(later), Phase::Closed);
    /// ```
    ///
    /// # Panics
    /// If `calls` is 0 or above [`MAX_PROBES`] (the counts live in the breaker's state
    /// word, beside the probe slot), `percent` is 0 or above 100, or the policy needs more
    /// than one consecutive probe success to close (a compile error in a `const`).
    pub const fn with_half_open_rate(self, calls: u32, percent: u32) -> Policy {
        unwrap_policy!(self.try_with_half_open_rate(calls, percent))
    }

    /// [`Policy::with_half_open_rate`] for values known only at run time.
    pub const fn try_with_half_open_rate(mut self, calls: u32, percent: u32) -> Result<Policy, PolicyError> {
        if calls == 0 || calls > MAX_PROBES {
            return Err(PolicyError::HalfOpenCallsOutOfRange);
        }
        if percent == 0 || percent > 100 {
            return Err(PolicyError::RateOutOfRange);
        }
        if self.probes_to_close() > 1 {
            return Err(PolicyError::HalfOpenRuleConflict);
        }
        let failures = (percent * calls).div_ceil(100);
        self.half_open_calls = calls as u8;
        self.half_open_rate = percent as u8;
        self.open_after = failures as u8;
        self.close_after = (calls + 1 - failures) as u8;
        self.flags |= HALF_OPEN_RATE;
        Ok(self)
    }

    /// The half-open failure-rate rule, as `(calls, percent)` (see
    /// [`Policy::with_half_open_rate`]); `None` for consecutive probe successes.
    pub const fn half_open_rate(&self) -> Option<(u32, u32)> {
        if self.half_open_rate != 0 {
            Some((self.half_open_calls as u32, self.half_open_rate as u32))
        } else {
            None
        }
    }

    /// Half-open: the probe failures (strikes) that re-open, counted in the state word's
    /// strike bits: `ceil(percent * calls / 100)` under a failure-rate rule, else 1 (the
    /// first failed probe re-opens, or with patient probation resets the streak).
    #[inline(always)]
    pub(crate) const fn probe_failures_to_open(&self) -> u32 {
        self.open_after as u32
    }

    /// Half-open: the probe successes (consecutive ones without a failure-rate rule) that
    /// close, counted in the state word's streak bits. Under a failure-rate rule, the
    /// successes after which the probes left cannot reach
    /// [`Policy::probe_failures_to_open`]: `calls - failures_to_open + 1`.
    #[inline(always)]
    pub(crate) const fn probe_successes_to_close(&self) -> u32 {
        self.close_after as u32
    }

    /// Half-open: whether a probe's strike only costs the streak (patient probation, and
    /// no half-open failure rate, under which it changes nothing).
    #[inline(always)]
    pub(crate) const fn patient_streak(&self) -> bool {
        self.flags & (PATIENT | HALF_OPEN_RATE) == PATIENT
    }

    /// Each re-open without an intervening close multiplies the cooldown by `multiplier`,
    /// up to `max_cooldown`; a close resets it. A multiplier of 1 keeps it constant.
    ///
    /// # Panics
    /// If `multiplier` is 0 or above 255, or `max_cooldown` is shorter than the cooldown
    /// (a compile error in a `const`).
    pub const fn with_backoff(self, multiplier: u32, max_cooldown: Duration) -> Policy {
        unwrap_policy!(self.try_with_backoff(multiplier, max_cooldown))
    }

    /// [`Policy::with_backoff`] for values known only at run time.
    pub const fn try_with_backoff(mut self, multiplier: u32, max_cooldown: Duration) -> Result<Policy, PolicyError> {
        if multiplier == 0 || multiplier > 255 {
            return Err(PolicyError::MultiplierOutOfRange);
        }
        if max_cooldown.as_millis() < self.cooldown.as_millis() {
            return Err(PolicyError::CapBelowCooldown);
        }
        self.backoff_multiplier = multiplier as u8;
        self.max_cooldown = max_cooldown;
        Ok(self)
    }

    /// Patient probation (loopctl's model breaker): in half-open, a probe that fails with a
    /// strike only resets the streak of probe successes and frees the slot for the next
    /// probe; the breaker stays half-open, so one blip does not waste the cooldown already
    /// paid. A trip verdict still re-opens at once, and so does a lapsed probe lease. Off by
    /// default: any failed probe re-opens.
    ///
    /// ```
    /// use breaker_core::{Breaker, Duration, Instant, Outcome, Phase, Policy};
    ///
    /// let policy = Policy::new(1, Duration::from_secs(60)).with_probes_to_close(2).with_patient_probation();
    /// let mut b = Breaker::new(policy);
    /// let p = b.try_acquire(Instant::ZERO).unwrap();
    /// b.record(p, Outcome::STRIKE, Instant::ZERO);
    /// let later = Instant::ZERO.wrapping_add(Duration::from_secs(60));
    /// let probe = b.try_acquire(later).unwrap();
    /// b.record(probe, Outcome::STRIKE, later); // a blip: still half-open
    /// assert_eq!(b.phase(later), Phase::HalfOpen);
    /// let probe = b.try_acquire(later).unwrap();
    /// b.record(probe, Outcome::TRIP, later); // "no more load": re-opens at once
    /// assert_eq!(b.phase(later), Phase::Open);
    /// ```
    pub const fn with_patient_probation(mut self) -> Policy {
        self.flags |= PATIENT;
        self
    }

    /// Whether a probe's strike keeps the breaker half-open (see
    /// [`Policy::with_patient_probation`]; under a half-open failure rate the rate decides).
    pub const fn patient_probation(&self) -> bool {
        self.flags & PATIENT != 0
    }

    /// Counts every call a [`SharedBreaker`](crate::SharedBreaker) lets through and every
    /// success and neutral outcome, not only failures, refusals, trips and probes:
    /// [`Counters::calls`](crate::Counters::calls), `successes` and `neutrals` then count,
    /// and the `metrics` feature publishes `breaker_calls_total{outcome="success"}` and
    /// `{outcome="neutral"}` beside `failure` and `rejected`. Off by default.
    ///
    /// The price is the closed-state call's: a breaker that counts makes two atomic adds
    /// on its counters per call (the call let through, and its outcome), which threads
    /// calling it at once contend for, and takes the permit's path, where a breaker that
    /// does not count makes one load and test of its state word before the call and one
    /// after; a success that finds strikes pending takes the transition step in both.
    /// See the `metrics-*-counted` rows of `bench/README.md`. A breaker that does not
    /// count pays nothing for this option. Hosted targets only: on
    /// bare metal a shared breaker keeps its five counters (`firmware/README.md`) and
    /// ignores the option. The single-owner [`Breaker`](crate::Breaker) counts everything
    /// whatever the policy.
    ///
    /// ```
    /// use breaker_core::{Duration, Instant, ManualClock, Policy, SharedBreaker};
    ///
    /// static POLICY: Policy = Policy::new(3, Duration::from_secs(30)).counting_calls();
    /// static UPSTREAM: SharedBreaker = SharedBreaker::new(&POLICY);
    /// let clock = ManualClock::new(Instant::ZERO);
    /// for ok in [true, true, false] {
    ///     let _ = UPSTREAM.call(&clock, || if ok { Ok(1) } else { Err(std::io::Error::other("down")) });
    /// }
    /// let c = UPSTREAM.counters();
    /// assert_eq!((c.calls, c.successes, c.failures, c.neutrals), (3, 2, 1, 0));
    /// ```
    pub const fn counting_calls(mut self) -> Policy {
        self.flags |= COUNT_CALLS;
        self
    }

    /// Whether a shared breaker counts every call and outcome (see
    /// [`Policy::counting_calls`]).
    pub const fn counts_calls(&self) -> bool {
        self.flags & COUNT_CALLS != 0
    }

    /// Consecutive strikes in Closed that trip the breaker; 0 for a windowed policy (see
    /// [`Policy::failure_rate`]), which trips on a rate instead.
    pub const fn trip(&self) -> u32 {
        self.trip as u32
    }

    /// The base cooldown.
    pub const fn cooldown(&self) -> Duration {
        self.cooldown
    }

    /// The longest cooldown the backoff reaches.
    pub const fn max_cooldown(&self) -> Duration {
        self.max_cooldown
    }

    /// The backoff multiplier (1: constant cooldown).
    pub const fn backoff_multiplier(&self) -> u32 {
        self.backoff_multiplier as u32
    }

    /// How long a probe may stay unanswered.
    pub const fn probe_lease(&self) -> Duration {
        self.probe_lease
    }

    /// Consecutive probe successes needed to close (1 under a half-open failure rate,
    /// [`Policy::with_half_open_rate`], which judges half-open instead).
    pub const fn probes_to_close(&self) -> u32 {
        if self.half_open_rate == 0 {
            self.close_after as u32
        } else {
            1
        }
    }

    /// The closed state's rate rule, for a windowed policy ([`Policy::failure_rate`]);
    /// `None` for consecutive strikes.
    pub const fn window(&self) -> Option<Window> {
        if self.window.is_some() {
            Some(self.window)
        } else {
            None
        }
    }

    /// The rule itself (`Window::NONE` without a window), for the hot paths.
    pub(crate) const fn rule(&self) -> &Window {
        &self.window
    }

    /// A policy that trips on `window` instead of consecutive strikes (checked by the
    /// caller, in `window.rs`).
    pub(crate) const fn windowed(mut self, window: Window) -> Policy {
        self.trip = 0;
        self.window = window;
        self
    }

    /// The cooldown after `step` re-opens without a close: `cooldown * multiplier^step`,
    /// capped at [`Policy::max_cooldown`].
    // Out of line: opening, re-opening and the wait left each need it, and one copy of the
    // loop keeps firmware small; the shared breaker's refusal fast path does not call it.
    #[inline(never)]
    pub const fn cooldown_at(&self, step: u8) -> Duration {
        let mut d = self.cooldown;
        let mut i = 0;
        while i < step {
            d = match d.checked_mul(self.backoff_multiplier as u32) {
                Some(next) if next.as_millis() < self.max_cooldown.as_millis() => next,
                _ => return self.max_cooldown,
            };
            i += 1;
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonsense_is_rejected() {
        let s30 = Duration::from_secs(30);
        assert_eq!(Policy::try_new(0, s30), Err(PolicyError::TripOutOfRange));
        assert_eq!(Policy::try_new(256, s30), Err(PolicyError::TripOutOfRange));
        assert_eq!(Policy::try_new(3, Duration::ZERO), Err(PolicyError::ZeroCooldown));
        let p = Policy::new(3, s30);
        assert_eq!(p.try_with_probe_lease(Duration::ZERO), Err(PolicyError::ZeroProbeLease));
        assert_eq!(p.try_with_probes_to_close(0), Err(PolicyError::ProbesOutOfRange));
        assert_eq!(p.try_with_probes_to_close(16), Err(PolicyError::ProbesOutOfRange));
        assert_eq!(p.try_with_backoff(0, s30), Err(PolicyError::MultiplierOutOfRange));
        assert_eq!(
            p.try_with_backoff(2, Duration::from_secs(29)),
            Err(PolicyError::CapBelowCooldown)
        );
        assert_eq!(
            p.try_with_half_open_rate(0, 50),
            Err(PolicyError::HalfOpenCallsOutOfRange)
        );
        assert_eq!(
            p.try_with_half_open_rate(16, 50),
            Err(PolicyError::HalfOpenCallsOutOfRange)
        );
        assert_eq!(p.try_with_half_open_rate(10, 0), Err(PolicyError::RateOutOfRange));
        assert_eq!(p.try_with_half_open_rate(10, 101), Err(PolicyError::RateOutOfRange));
        let two = p.with_probes_to_close(2);
        assert_eq!(
            two.try_with_half_open_rate(10, 50),
            Err(PolicyError::HalfOpenRuleConflict)
        );
        let rated = p.with_half_open_rate(10, 50);
        assert_eq!(
            rated.try_with_probes_to_close(2),
            Err(PolicyError::HalfOpenRuleConflict)
        );
        assert_eq!(rated.try_with_probes_to_close(1), Ok(rated));
        assert_eq!(rated.half_open_rate(), Some((10, 50)));
        assert_eq!(rated.probes_to_close(), 1);
        assert_eq!(
            (rated.probe_failures_to_open(), rated.probe_successes_to_close()),
            (5, 6)
        );
        // A second rule replaces the first; patient probation is kept but does not apply.
        let again = rated.with_half_open_rate(4, 25);
        assert_eq!(again.half_open_rate(), Some((4, 25)));
        assert_eq!(
            (again.probe_failures_to_open(), again.probe_successes_to_close()),
            (1, 4)
        );
        assert!(rated.with_patient_probation().patient_probation());
        assert!(!rated.with_patient_probation().patient_streak());
        assert!(p.with_patient_probation().patient_streak());
        assert_eq!(p.half_open_rate(), None);
    }

    #[test]
    fn backoff_grows_to_the_cap_and_never_overflows() {
        let p = Policy::new(3, Duration::from_mins(2)).with_backoff(2, Duration::from_mins(30));
        assert_eq!(p.cooldown_at(0), Duration::from_mins(2));
        assert_eq!(p.cooldown_at(1), Duration::from_mins(4));
        assert_eq!(p.cooldown_at(3), Duration::from_mins(16));
        assert_eq!(p.cooldown_at(4), Duration::from_mins(30));
        assert_eq!(p.cooldown_at(MAX_BACKOFF_STEP), Duration::from_mins(30));
        let wide = Policy::new(1, Duration::from_secs(1)).with_backoff(255, Duration::MAX);
        assert_eq!(wide.cooldown_at(MAX_BACKOFF_STEP), Duration::MAX);
    }

    #[test]
    fn defaults_are_documented_ones() {
        let p = Policy::new(3, Duration::from_secs(30));
        assert_eq!(p.probe_lease(), Duration::from_secs(30));
        assert_eq!(p.probes_to_close(), 1);
        assert_eq!(p.cooldown_at(5), Duration::from_secs(30));
    }
}
