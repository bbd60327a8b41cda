//! The quota gauge: a rolling window of quota samples that predicts when a quota runs out, and its traffic light.
//!
//! Squad's predictive breaker opens *before* a rate limit is hit. Every response reports how
//! much of a quota is left (GitHub's 5,000 requests an hour, a radio's 1 % duty-cycle
//! airtime, a cellular data plan, a battery); the gauge keeps the last `N` of those
//! [`Sample`]s and answers two questions:
//!
//! - **When will it run out?** From the window's first and last sample: rate = (first
//!   remaining - last remaining) / (last instant - first instant), time to exhaustion =
//!   last remaining / rate ([`Forecast`]). Fewer than 2 samples, no consumption, or no time
//!   between the first and last sample: no prediction.
//! - **How much is left?** The [`Light`] of the last sample: green above 20 %, amber from
//!   5 % to 20 %, red at 5 % or below ([`QuotaPolicy`] holds the thresholds).
//!
//! A [`Reading`] raises an [`Alarm`] when the light is red or exhaustion is predicted within
//! the warning threshold (120 s by default); a [`QuotaGuard`](crate::QuotaGuard) then opens
//! its breaker through the state machine ([`Reason::QuotaRed`](crate::Reason::QuotaRed) or
//! [`Reason::Predicted`](crate::Reason::Predicted)).
//!
//! The gauge is plain data with `&mut self` updates: no heap, no atomics, no lock. One owner
//! feeds it, the code that reads the responses; see [`QuotaGauge`] for why, and for sharing it.

use core::fmt;

use heapless::HistoryBuf;

use crate::{Duration, Instant, RefusalReason, Refused, State};

/// What one response says about a quota: `remaining` of `total` units are left, and, when
/// the response says so, when the quota resets.
///
/// Any pair of numbers is accepted: `remaining` above `total` reads as a full quota, and a
/// `total` of zero as an empty one (there is nothing to spend).
///
/// The reset (`X-RateLimit-Reset`, `Retry-After`) matters when the quota runs low: a
/// [`QuotaGuard`](crate::QuotaGuard) that opens its breaker for a red or predicted quota
/// keeps it open until the reset, if that is later than the cooldown, so no probe is spent
/// on a quota that cannot have come back yet.
///
/// ```
/// use breaker_core::{Duration, Quota};
///
/// // `Retry-After: 60`, or `X-RateLimit-Reset: 1755268000` read at 1755267940 (Unix seconds).
/// let q = Quota::new(0, 5_000).with_reset_in(Duration::from_secs(60));
/// assert_eq!(q, Quota::new(0, 5_000).with_reset_at_unix(1_755_268_000, 1_755_267_940));
/// assert_eq!(q.resets_in, Some(Duration::from_secs(60)));
/// // A reset already past: nothing to wait for.
/// assert_eq!(Quota::new(0, 5_000).with_reset_at_unix(10, 20).resets_in, Some(Duration::ZERO));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Quota {
    /// Units left.
    pub remaining: u32,
    /// Units in the whole quota (its size per window: 5,000 requests an hour).
    pub total: u32,
    /// When known: how long until the quota resets, counted from the response.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "Option::is_none"))]
    pub resets_in: Option<Duration>,
}

impl Quota {
    /// `remaining` of `total` units left; the reset unknown.
    pub const fn new(remaining: u32, total: u32) -> Quota {
        Quota {
            remaining,
            total,
            resets_in: None,
        }
    }

    /// The same quota, resetting in `wait` (`Retry-After` in seconds, or a rate-limit
    /// window's time left).
    pub const fn with_reset_in(self, wait: Duration) -> Quota {
        Quota {
            resets_in: Some(wait),
            ..self
        }
    }

    /// The same quota, resetting at `reset_unix_secs` (`X-RateLimit-Reset`, Unix seconds)
    /// as read at `now_unix_secs` on the same wall clock: a reset already past is zero, one
    /// beyond [`Duration::MAX`] is cut to it.
    pub const fn with_reset_at_unix(self, reset_unix_secs: u64, now_unix_secs: u64) -> Quota {
        let secs = reset_unix_secs.saturating_sub(now_unix_secs);
        let max_secs = Duration::MAX.as_millis() as u64 / 1000;
        let secs = if secs > max_secs { max_secs } else { secs };
        self.with_reset_in(Duration::from_secs(secs as u32))
    }

    /// The share left: `remaining / total` in basis points, at most 100 % (`remaining`
    /// above `total` counts as full), and 0 for a `total` of zero.
    pub const fn share(self) -> Share {
        if self.total == 0 {
            return Share::ZERO;
        }
        let left = if self.remaining < self.total {
            self.remaining
        } else {
            self.total
        };
        // left <= total, so the quotient is at most 10 000; the product fits in a u64.
        Share((left as u64 * Share::FULL as u64 / self.total as u64) as u16)
    }

    /// The traffic light for this quota under `policy`: green above
    /// [`QuotaPolicy::green_above`], red at or below [`QuotaPolicy::red_at_or_below`], amber
    /// between. Compared exactly (no rounding): 20.00 % is amber, 20.01 % green. A `total`
    /// of zero is red.
    pub const fn light(self, policy: &QuotaPolicy) -> Light {
        if self.total == 0 {
            return Light::Red;
        }
        let left = if self.remaining < self.total {
            self.remaining
        } else {
            self.total
        };
        // left * 10 000 against total * threshold: both below 2^47, no overflow.
        let left = left as u64 * Share::FULL as u64;
        let total = self.total as u64;
        if left > total * policy.green_above.0 as u64 {
            Light::Green
        } else if left > total * policy.red_at_or_below.0 as u64 {
            Light::Amber
        } else {
            Light::Red
        }
    }
}

impl fmt::Display for Quota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.remaining, self.total)
    }
}

/// One reading of a quota at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sample {
    /// When the response reported it.
    pub at: Instant,
    /// Units left.
    pub remaining: u32,
    /// Units in the whole quota.
    pub total: u32,
}

impl Sample {
    /// `remaining` of `total` units left at `at`.
    pub const fn new(at: Instant, remaining: u32, total: u32) -> Sample {
        Sample { at, remaining, total }
    }

    /// The quota this sample reports, without its instant.
    pub const fn quota(&self) -> Quota {
        Quota::new(self.remaining, self.total)
    }
}

/// A share of a quota, in basis points (hundredths of a percent): 0 to 10 000.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Share(u16);

impl Share {
    /// Nothing.
    pub const ZERO: Share = Share(0);
    /// The whole quota, 10 000 basis points.
    pub const ALL: Share = Share(Share::FULL);
    const FULL: u16 = 10_000;

    /// `percent` percent.
    ///
    /// # Panics
    /// Above 100 (a compile error in a `const`); see [`Share::checked_basis_points`].
    pub const fn percent(percent: u8) -> Share {
        Share::basis_points(percent as u16 * 100)
    }

    /// `bp` hundredths of a percent (250 is 2.5 %).
    ///
    /// # Panics
    /// Above 10 000 (a compile error in a `const`); see [`Share::checked_basis_points`].
    pub const fn basis_points(bp: u16) -> Share {
        match Share::checked_basis_points(bp) {
            Some(s) => s,
            None => panic!("a share is at most 100 % (10 000 basis points)"),
        }
    }

    /// `bp` hundredths of a percent, or `None` above 10 000.
    pub const fn checked_basis_points(bp: u16) -> Option<Share> {
        if bp <= Share::FULL {
            Some(Share(bp))
        } else {
            None
        }
    }

    /// The share in basis points.
    pub const fn as_basis_points(self) -> u16 {
        self.0
    }
}

impl fmt::Display for Share {
    /// As a percentage with two decimals where needed: `20%`, `2.5%`, `33.33%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, hundredths) = (self.0 / 100, self.0 % 100);
        match hundredths {
            0 => write!(f, "{whole}%"),
            h if h % 10 == 0 => write!(f, "{whole}.{}%", h / 10),
            h => write!(f, "{whole}.{h:02}%"),
        }
    }
}

/// A quota's traffic light.
///
/// | light | share left (defaults) | calls | breaker |
/// |---|---|---|---|
/// | green | above 20 % | all proceed | closed |
/// | amber | 5 % to 20 % | only [`Priority::High`] proceed, the rest are refused ([`RefusalReason::QuotaLow`]) | closed |
/// | red | 5 % or less | | opens ([`Reason::QuotaRed`](crate::Reason::QuotaRed)) |
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Light {
    /// Plenty left: everything proceeds.
    Green,
    /// Running low: only high-priority calls proceed.
    Amber,
    /// Nearly gone: the breaker opens.
    Red,
}

impl Light {
    /// `green`, `amber` or `red`.
    pub const fn name(self) -> &'static str {
        match self {
            Light::Green => "green",
            Light::Amber => "amber",
            Light::Red => "red",
        }
    }
}

impl fmt::Display for Light {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much a call matters when the quota runs low: in amber only [`Priority::High`]
/// calls proceed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Priority {
    /// Work that can wait for the quota to recover (background sweeps, telemetry).
    #[default]
    Normal,
    /// Work that must go out while any quota is left (triage, alarms).
    High,
}

/// When a quota gauge raises the alarm: the warning threshold and the traffic light's
/// thresholds. Every constructor is a `const fn`, so a policy can live in a `static`.
///
/// ```
/// use breaker_core::{Duration, QuotaPolicy, Share};
///
/// // Squad's: warn 120 s before exhaustion; green above 20 %, red at 5 % or below.
/// static SQUAD: QuotaPolicy = QuotaPolicy::new();
/// assert_eq!(SQUAD.warning(), Duration::from_secs(120));
///
/// // A LoRaWAN node's airtime: warn 10 minutes ahead, red at 2.5 %.
/// static AIRTIME: QuotaPolicy = QuotaPolicy::new()
///     .with_warning(Duration::from_mins(10))
///     .with_lights(Share::percent(20), Share::basis_points(250));
/// assert_eq!(AIRTIME.red_at_or_below().to_string(), "2.5%");
/// ```
///
/// A red threshold above the green one does not compile in a `const`:
///
/// ```compile_fail
/// use breaker_core::{QuotaPolicy, Share};
/// static NEVER: QuotaPolicy = QuotaPolicy::new().with_lights(Share::percent(5), Share::percent(20));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuotaPolicy {
    warning: Duration,
    green_above: Share,
    red_at_or_below: Share,
}

/// Why a [`QuotaPolicy`] was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum QuotaPolicyError {
    /// The red threshold was above the green one.
    RedAboveGreen,
}

impl QuotaPolicyError {
    /// What went wrong, as one sentence.
    pub const fn message(self) -> &'static str {
        match self {
            QuotaPolicyError::RedAboveGreen => "the red threshold must not be above the green one",
        }
    }
}

impl fmt::Display for QuotaPolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl core::error::Error for QuotaPolicyError {}

impl QuotaPolicy {
    /// Squad's defaults: warning threshold 120 s, green above 20 %, red at 5 % or below.
    pub const fn new() -> QuotaPolicy {
        QuotaPolicy {
            warning: Duration::from_secs(120),
            green_above: Share::percent(20),
            red_at_or_below: Share::percent(5),
        }
    }

    /// Raise the alarm when exhaustion is predicted sooner than `warning`. Zero turns
    /// predictions off (the red light still raises it).
    pub const fn with_warning(mut self, warning: Duration) -> QuotaPolicy {
        self.warning = warning;
        self
    }

    /// Green above `green_above`, red at or below `red_at_or_below`, amber between. Equal
    /// thresholds leave no amber band (no call is ever refused for its priority).
    ///
    /// # Panics
    /// If `red_at_or_below` is above `green_above` (a compile error in a `const`).
    pub const fn with_lights(self, green_above: Share, red_at_or_below: Share) -> QuotaPolicy {
        match self.try_with_lights(green_above, red_at_or_below) {
            Ok(p) => p,
            Err(QuotaPolicyError::RedAboveGreen) => panic!("the red threshold must not be above the green one"),
        }
    }

    /// [`QuotaPolicy::with_lights`] for values known only at run time.
    pub const fn try_with_lights(
        mut self,
        green_above: Share,
        red_at_or_below: Share,
    ) -> Result<QuotaPolicy, QuotaPolicyError> {
        if red_at_or_below.0 > green_above.0 {
            return Err(QuotaPolicyError::RedAboveGreen);
        }
        self.green_above = green_above;
        self.red_at_or_below = red_at_or_below;
        Ok(self)
    }

    /// The warning threshold: a predicted exhaustion sooner than this raises the alarm.
    pub const fn warning(&self) -> Duration {
        self.warning
    }

    /// Green above this share.
    pub const fn green_above(&self) -> Share {
        self.green_above
    }

    /// Red at or below this share.
    pub const fn red_at_or_below(&self) -> Share {
        self.red_at_or_below
    }
}

impl Default for QuotaPolicy {
    fn default() -> QuotaPolicy {
        QuotaPolicy::new()
    }
}

/// When a quota runs out at the rate the window shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Forecast {
    /// Units consumed from the window's first sample to its last (at least 1).
    pub consumed: u32,
    /// Time from the window's first sample to its last (longer than zero).
    pub over: Duration,
    /// Units left at the last sample.
    pub remaining: u32,
    /// `remaining / rate` = `remaining * over / consumed`, rounded down to the millisecond;
    /// at most [`Duration::MAX`] (about 12.4 days: "not any time soon").
    pub exhausted_in: Duration,
}

impl Forecast {
    /// From the window's first and last sample; `None` without consumption or without
    /// time between them.
    const fn between(first: (Instant, u32), last: (Instant, u32)) -> Option<Forecast> {
        let over = last.0.since(first.0);
        let consumed = first.1.saturating_sub(last.1);
        if consumed == 0 || over.as_millis() == 0 {
            return None;
        }
        // remaining < 2^32 and over < 2^31 ms: the product fits in a u64.
        let ms = last.1 as u64 * over.as_millis() as u64 / consumed as u64;
        let exhausted_in = if ms > Duration::MAX.as_millis() as u64 {
            Duration::MAX
        } else {
            Duration::from_millis(ms as u32)
        };
        Some(Forecast {
            consumed,
            over,
            remaining: last.1,
            exhausted_in,
        })
    }

    /// The consumption rate in thousandths of a unit per second (1 666 for 50 units over
    /// 30 s), rounded down.
    pub const fn millis_per_second(&self) -> u64 {
        // consumed < 2^32 times 10^6 < 2^52; `over` is longer than zero.
        self.consumed as u64 * 1_000_000 / self.over.as_millis() as u64
    }

    /// The consumption rate in hundredths of a unit per second, rounded to the nearest
    /// (167 for 50 units over 30 s: 1.67/s).
    pub const fn centis_per_second(&self) -> u64 {
        let over = self.over.as_millis() as u64;
        (self.consumed as u64 * 100_000 + over / 2) / over
    }
}

impl fmt::Display for Forecast {
    /// `26.67/s, exhausted in 153s` (the rate to the hundredth, the time in whole seconds,
    /// rounded down).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = self.centis_per_second();
        write!(
            f,
            "{}.{:02}/s, exhausted in {}s",
            rate / 100,
            rate % 100,
            self.exhausted_in.as_millis() / 1000
        )
    }
}

/// Why a reading says the breaker should open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Alarm {
    /// The light is red: the share left is at or below the red threshold.
    Red,
    /// Exhaustion is predicted sooner than the warning threshold.
    Exhaustion,
}

/// What a gauge says after a sample: the light, the forecast, and whether to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Reading {
    /// The last sample's quota; `None` before the first sample.
    pub quota: Option<Quota>,
    /// The last sample's light; `None` before the first sample.
    pub light: Option<Light>,
    /// When the quota runs out at the window's rate; `None` without a prediction.
    pub forecast: Option<Forecast>,
    /// Set when the breaker should open: red ([`Alarm::Red`], which wins when both hold)
    /// or exhaustion predicted sooner than the warning threshold.
    pub alarm: Option<Alarm>,
}

impl Reading {
    /// Whether the breaker should open.
    pub const fn opens(&self) -> bool {
        self.alarm.is_some()
    }
}

/// A rolling window of the last `N` quota samples (10 by default, Squad's), in fixed
/// memory: `8 * N + 24` bytes or so, no heap.
///
/// ```
/// use breaker_core::{Duration, Instant, Light, QuotaGauge, QuotaPolicy, Sample};
///
/// let s = |secs: u32| Instant::from_millis(secs * 1000);
/// let mut gauge = QuotaGauge::<10>::new(QuotaPolicy::new());
/// gauge.observe(Sample::new(s(0), 4_900, 5_000));
/// let reading = gauge.observe(Sample::new(s(30), 4_100, 5_000));
/// let forecast = reading.forecast.unwrap();
/// assert_eq!(forecast.to_string(), "26.67/s, exhausted in 153s"); // the seed's second example
/// assert_eq!(reading.light, Some(Light::Green));
/// assert!(!reading.opens()); // 153 s > 120 s: closed, but close
/// ```
///
/// # The window
///
/// A sample joins the window; once it holds `N`, the oldest leaves. A sample starts a
/// **fresh window** (the others are dropped) when the quota was reset: its `remaining` is
/// higher than the last sample's, or its `total` differs. It does too when it reads
/// *earlier* than the last sample (a clock that stepped back): times on either side of the
/// step cannot be compared. Equal instants are kept; they add no time.
///
/// Every input has a defined answer and none panics: `remaining > total` reads as a full
/// quota for the light, a `total` of zero is red, no time between the first and last
/// sample or no consumption gives no forecast, and every product is taken in 64 bits where
/// it cannot overflow.
///
/// # One owner
///
/// The gauge is updated with `&mut self`: the window is `N` samples, which no single atomic
/// word holds, and it changes once per response, not once per call. Whoever reads the
/// responses owns it (a task, a loop, a [`QuotaGuard`](crate::QuotaGuard)). To feed it from
/// several threads or tasks, put it (or its guard) behind the lock your program already
/// uses: a `std::sync::Mutex`, a `critical_section::Mutex<RefCell<_>>`, an embassy mutex.
/// A library does not pick that for you. The breaker it steers stays lock-free: a
/// [`SharedBreaker`](crate::SharedBreaker)'s gate never waits for the gauge.
///
/// `N` must be at least 2 (one sample predicts nothing): a smaller window does not compile.
///
/// ```compile_fail
/// use breaker_core::{QuotaGauge, QuotaPolicy};
/// let gauge = QuotaGauge::<1>::new(QuotaPolicy::new());
/// ```
pub struct QuotaGauge<const N: usize = 10> {
    /// (instant, remaining) of each sample: the total is the same for the whole window.
    window: HistoryBuf<(Instant, u32), N>,
    total: u32,
    policy: QuotaPolicy,
}

impl<const N: usize> QuotaGauge<N> {
    /// An empty gauge following `policy`.
    pub const fn new(policy: QuotaPolicy) -> QuotaGauge<N> {
        const {
            assert!(
                N >= 2,
                "a quota gauge's window needs at least 2 samples to predict anything"
            );
        }
        QuotaGauge {
            window: HistoryBuf::new(),
            total: 0,
            policy,
        }
    }

    /// Takes one sample and says what the window shows now. A reset quota, a changed total
    /// or a clock that stepped back starts a fresh window (see the type's documentation).
    // Out of line: one copy on firmware, however many places feed the gauge.
    #[inline(never)]
    pub fn observe(&mut self, sample: Sample) -> Reading {
        if let Some(&(at, remaining)) = self.window.recent() {
            if sample.total != self.total || sample.remaining > remaining || sample.at.offset_from(at) < 0 {
                self.window.clear();
            }
        }
        self.total = sample.total;
        self.window.write((sample.at, sample.remaining));
        self.reading()
    }

    /// What the window shows, without a new sample. Pure.
    pub fn reading(&self) -> Reading {
        let quota = self.last().map(|s| s.quota());
        let light = quota.map(|q| q.light(&self.policy));
        let forecast = self.forecast();
        let alarm = if light == Some(Light::Red) {
            Some(Alarm::Red)
        } else {
            match forecast {
                Some(f) if f.exhausted_in.as_millis() < self.policy.warning.as_millis() => Some(Alarm::Exhaustion),
                _ => None,
            }
        };
        Reading {
            quota,
            light,
            forecast,
            alarm,
        }
    }

    /// When the quota runs out at the rate from the window's first sample to its last.
    pub fn forecast(&self) -> Option<Forecast> {
        match (self.window.oldest(), self.window.recent()) {
            (Some(&first), Some(&last)) => Forecast::between(first, last),
            _ => None,
        }
    }

    /// The last sample's light; `None` before the first sample.
    pub fn light(&self) -> Option<Light> {
        self.last().map(|s| s.quota().light(&self.policy))
    }

    /// The ordinary typed refusal for a call of `priority` while the breaker is in `state`:
    /// while **closed**, an amber (or red) light refuses every call but
    /// [`Priority::High`] with [`RefusalReason::QuotaLow`]. Otherwise `Ok`, and the breaker's
    /// own gate decides: open refuses anyway, and in **half-open** the probe goes through
    /// whatever its priority, since only a fresh sample can change the light. Pure.
    ///
    /// The light is the last sample's: feed the gauge from every response (or from a
    /// query that costs no quota, such as GitHub's `/rate_limit`), or an amber light that
    /// only normal-priority calls would refresh stays amber.
    pub fn admit(&self, priority: Priority, state: &State) -> Result<(), Refused> {
        let low = matches!(self.light(), Some(Light::Amber | Light::Red));
        if low && priority != Priority::High && matches!(state, State::Closed { .. }) {
            Err(Refused {
                reason: RefusalReason::QuotaLow,
                retry_in: None,
            })
        } else {
            Ok(())
        }
    }

    /// The newest sample.
    pub fn last(&self) -> Option<Sample> {
        self.window
            .recent()
            .map(|&(at, remaining)| Sample::new(at, remaining, self.total))
    }

    /// The oldest sample still in the window.
    pub fn first(&self) -> Option<Sample> {
        self.window
            .oldest()
            .map(|&(at, remaining)| Sample::new(at, remaining, self.total))
    }

    /// The samples in the window, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        self.window
            .oldest_ordered()
            .map(|&(at, remaining)| Sample::new(at, remaining, self.total))
    }

    /// How many samples the window holds (at most `N`).
    pub fn len(&self) -> usize {
        self.window.len()
    }

    /// Whether the window holds no sample.
    pub fn is_empty(&self) -> bool {
        self.window.is_empty()
    }

    /// Drops every sample.
    pub fn clear(&mut self) {
        self.window.clear();
    }

    /// The policy.
    pub const fn policy(&self) -> &QuotaPolicy {
        &self.policy
    }
}

impl<const N: usize> fmt::Debug for QuotaGauge<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuotaGauge")
            .field("samples", &self.len())
            .field("capacity", &N)
            .field("last", &self.last())
            .field("policy", &self.policy)
            .finish()
    }
}

impl<const N: usize> Clone for QuotaGauge<N> {
    fn clone(&self) -> Self {
        QuotaGauge {
            window: self.window.clone(),
            total: self.total,
            policy: self.policy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u32) -> Instant {
        Instant::from_millis(secs * 1000)
    }

    fn gauge() -> QuotaGauge {
        QuotaGauge::new(QuotaPolicy::new())
    }

    #[test]
    fn the_seeds_first_worked_example_is_about_2900_seconds_closed() {
        let mut g = gauge();
        g.observe(Sample::new(s(0), 4_900, 5_000));
        let r = g.observe(Sample::new(s(30), 4_850, 5_000));
        let f = r.forecast.unwrap();
        assert_eq!((f.consumed, f.over, f.remaining), (50, Duration::from_secs(30), 4_850));
        assert_eq!(f.exhausted_in, Duration::from_secs(2_910));
        assert_eq!(f.centis_per_second(), 167);
        assert_eq!(f.millis_per_second(), 1_666);
        assert_eq!(r.alarm, None);
    }

    #[test]
    fn the_seeds_second_worked_example_is_about_153_seconds_closed_but_close() {
        let mut g = gauge();
        g.observe(Sample::new(s(0), 4_900, 5_000));
        let r = g.observe(Sample::new(s(30), 4_100, 5_000));
        let f = r.forecast.unwrap();
        assert_eq!(f.exhausted_in, Duration::from_millis(153_750));
        assert_eq!(f.centis_per_second(), 2_667);
        assert_eq!(r.alarm, None);
    }

    #[test]
    fn exhaustion_sooner_than_the_warning_raises_the_alarm() {
        let mut g = gauge();
        g.observe(Sample::new(s(0), 4_000, 5_000));
        // 1 800 in 30 s = 60/s; 2 200 left: 36.7 s.
        let r = g.observe(Sample::new(s(30), 2_200, 5_000));
        assert_eq!(r.alarm, Some(Alarm::Exhaustion));
        assert!(r.opens());
        // Exactly at the warning threshold: not sooner, no alarm.
        let mut g = gauge();
        g.observe(Sample::new(s(0), 2_000, 5_000));
        let r = g.observe(Sample::new(s(10), 1_900, 5_000)); // 10/s, 1 900 left: 190 s
        assert_eq!(r.alarm, None);
        let mut g = QuotaGauge::<10>::new(QuotaPolicy::new().with_warning(Duration::from_secs(190)));
        g.observe(Sample::new(s(0), 2_000, 5_000));
        assert_eq!(g.observe(Sample::new(s(10), 1_900, 5_000)).alarm, None);
        let mut g = QuotaGauge::<10>::new(QuotaPolicy::new().with_warning(Duration::from_millis(190_001)));
        g.observe(Sample::new(s(0), 2_000, 5_000));
        assert_eq!(
            g.observe(Sample::new(s(10), 1_900, 5_000)).alarm,
            Some(Alarm::Exhaustion)
        );
    }

    #[test]
    fn the_traffic_light_thresholds_are_exact() {
        let p = QuotaPolicy::new();
        assert_eq!(Quota::new(1_001, 5_000).light(&p), Light::Green);
        assert_eq!(Quota::new(1_000, 5_000).light(&p), Light::Amber); // 20 % exactly
        assert_eq!(Quota::new(251, 5_000).light(&p), Light::Amber);
        assert_eq!(Quota::new(250, 5_000).light(&p), Light::Red); // 5 % exactly
        assert_eq!(Quota::new(0, 5_000).light(&p), Light::Red);
        assert_eq!(Quota::new(u32::MAX, u32::MAX).light(&p), Light::Green);
    }

    #[test]
    fn red_raises_the_alarm_without_a_prediction() {
        let mut g = gauge();
        let r = g.observe(Sample::new(s(0), 200, 5_000));
        assert_eq!(
            (r.light, r.forecast, r.alarm),
            (Some(Light::Red), None, Some(Alarm::Red))
        );
    }

    #[test]
    fn red_wins_over_a_predicted_exhaustion() {
        let mut g = gauge();
        g.observe(Sample::new(s(0), 1_000, 5_000));
        let r = g.observe(Sample::new(s(1), 100, 5_000));
        assert!(r.forecast.unwrap().exhausted_in < Duration::from_secs(120));
        assert_eq!(r.alarm, Some(Alarm::Red));
    }

    #[test]
    fn fewer_than_two_samples_predict_nothing() {
        let mut g = gauge();
        assert_eq!(
            g.reading(),
            Reading {
                quota: None,
                light: None,
                forecast: None,
                alarm: None
            }
        );
        let r = g.observe(Sample::new(s(0), 4_000, 5_000));
        assert_eq!((r.light, r.forecast), (Some(Light::Green), None));
    }

    #[test]
    fn no_consumption_predicts_nothing() {
        let mut g = gauge();
        g.observe(Sample::new(s(0), 4_000, 5_000));
        assert_eq!(g.observe(Sample::new(s(60), 4_000, 5_000)).forecast, None);
    }

    #[test]
    fn equal_timestamps_predict_nothing_and_stay_in_the_window() {
        let mut g = gauge();
        g.observe(Sample::new(s(5), 4_000, 5_000));
        let r = g.observe(Sample::new(s(5), 3_000, 5_000));
        assert_eq!(r.forecast, None);
        assert_eq!(g.len(), 2);
        // Time passes: the window's first sample counts from its own instant.
        let f = g.observe(Sample::new(s(15), 2_000, 5_000)).forecast.unwrap();
        assert_eq!((f.consumed, f.over), (2_000, Duration::from_secs(10)));
    }

    #[test]
    fn a_quota_reset_starts_a_fresh_window() {
        let mut g = gauge();
        g.observe(Sample::new(s(0), 1_000, 5_000));
        g.observe(Sample::new(s(10), 500, 5_000));
        let r = g.observe(Sample::new(s(20), 5_000, 5_000));
        assert_eq!((g.len(), r.forecast), (1, None));
        assert_eq!(g.first(), Some(Sample::new(s(20), 5_000, 5_000)));
    }

    #[test]
    fn a_changed_total_starts_a_fresh_window() {
        let mut g = gauge();
        g.observe(Sample::new(s(0), 4_000, 5_000));
        g.observe(Sample::new(s(10), 3_900, 5_000));
        // Fewer remaining, but of another total (the plan changed): not comparable.
        g.observe(Sample::new(s(20), 3_000, 15_000));
        assert_eq!(g.len(), 1);
        assert_eq!(g.last().unwrap().total, 15_000);
    }

    #[test]
    fn a_clock_that_steps_back_starts_a_fresh_window() {
        let mut g = gauge();
        g.observe(Sample::new(s(100), 4_000, 5_000));
        g.observe(Sample::new(s(110), 3_900, 5_000));
        let r = g.observe(Sample::new(s(50), 3_800, 5_000));
        assert_eq!((g.len(), r.forecast), (1, None));
    }

    #[test]
    fn the_window_rolls_over_the_last_n_samples() {
        let mut g = QuotaGauge::<3>::new(QuotaPolicy::new());
        for i in 0..5u32 {
            g.observe(Sample::new(s(i), 5_000 - 100 * i, 5_000));
        }
        let kept: std::vec::Vec<u32> = g.samples().map(|s| s.remaining).collect();
        assert_eq!(kept, [4_800, 4_700, 4_600]);
        let f = g.forecast().unwrap();
        assert_eq!((f.consumed, f.over), (200, Duration::from_secs(2)));
    }

    #[test]
    fn a_gauge_is_empty_until_a_sample_and_after_clear_and_debugs_its_figures() {
        let mut g = QuotaGauge::<3>::new(QuotaPolicy::new());
        assert!(g.is_empty());
        g.observe(Sample::new(s(0), 4_800, 5_000));
        assert!(!g.is_empty());
        assert_eq!(
            std::format!("{g:?}"),
            std::format!(
                "QuotaGauge {{ samples: 1, capacity: 3, last: {:?}, policy: {:?} }}",
                g.last(),
                QuotaPolicy::new()
            )
        );
        g.clear();
        assert!(g.is_empty());
        assert_eq!(g.len(), 0);
    }

    #[test]
    fn a_forecast_and_the_last_quota_show_what_they_hold() {
        let mut g = QuotaGauge::<3>::new(QuotaPolicy::new());
        g.observe(Sample::new(s(0), 4_800, 5_000));
        g.observe(Sample::new(s(3), 4_720, 5_000));
        // 80 units in 3 s: 26.67/s, and 4,720 left last 177 s.
        assert_eq!(std::format!("{}", g.forecast().unwrap()), "26.67/s, exhausted in 177s");
        let last = crate::LastQuota::new();
        assert_eq!(std::format!("{last:?}"), "LastQuota(None)");
        last.set(Quota::new(3, 10));
        assert_eq!(
            std::format!("{last:?}"),
            std::format!("LastQuota(Some({:?}))", Quota::new(3, 10))
        );
    }

    #[test]
    fn remaining_above_total_reads_full_and_zero_total_reads_red() {
        let p = QuotaPolicy::new();
        assert_eq!(Quota::new(9_000, 5_000).light(&p), Light::Green);
        assert_eq!(Quota::new(9_000, 5_000).share(), Share::ALL);
        assert_eq!(Quota::new(0, 0).light(&p), Light::Red);
        assert_eq!(Quota::new(7, 0).light(&p), Light::Red);
        assert_eq!(Quota::new(7, 0).share(), Share::ZERO);
        let mut g = gauge();
        assert_eq!(g.observe(Sample::new(s(0), 0, 0)).alarm, Some(Alarm::Red));
    }

    #[test]
    fn amber_refuses_all_but_high_priority_while_closed() {
        let mut g = gauge();
        g.observe(Sample::new(s(0), 800, 5_000));
        let closed = State::Closed { strikes: 0 };
        let refused = Refused {
            reason: RefusalReason::QuotaLow,
            retry_in: None,
        };
        assert_eq!(g.admit(Priority::Normal, &closed), Err(refused));
        assert_eq!(g.admit(Priority::High, &closed), Ok(()));
        let half_open = State::HalfOpen {
            probing: false,
            streak: 0,
        };
        assert_eq!(
            g.admit(Priority::Normal, &half_open),
            Ok(()),
            "the probe refreshes the light"
        );
        g.observe(Sample::new(s(1), 1_500, 5_000));
        assert_eq!(g.admit(Priority::Normal, &closed), Ok(()), "green");
    }

    #[test]
    fn shares_print_as_percentages() {
        use std::string::ToString;
        assert_eq!(Share::percent(20).to_string(), "20%");
        assert_eq!(Share::basis_points(250).to_string(), "2.5%");
        assert_eq!(Quota::new(1, 3).share().to_string(), "33.33%");
        assert_eq!(Share::checked_basis_points(10_001), None);
    }

    #[test]
    fn each_light_has_its_name() {
        for (light, name) in [(Light::Green, "green"), (Light::Amber, "amber"), (Light::Red, "red")] {
            assert_eq!((light.name(), std::format!("{light}")), (name, name.into()));
        }
    }

    #[test]
    fn lights_out_of_order_are_rejected() {
        assert_eq!(
            QuotaPolicy::new().try_with_lights(Share::percent(5), Share::percent(20)),
            Err(QuotaPolicyError::RedAboveGreen)
        );
        let why = QuotaPolicyError::RedAboveGreen;
        let text = "the red threshold must not be above the green one";
        assert_eq!((why.message(), std::format!("{why}")), (text, text.into()));
        let no_amber = QuotaPolicy::new().with_lights(Share::percent(10), Share::percent(10));
        assert_eq!(Quota::new(600, 5_000).light(&no_amber), Light::Green);
        assert_eq!(Quota::new(500, 5_000).light(&no_amber), Light::Red);
    }
}
