//! The retry policy: how many retries, how long between them (exponential, capped,
//! jittered), and the total time budget; its delays as a seeded iterator.
//!
//! The policy only says *when*; the [`Ladder`](crate::Ladder) runs the attempts through a
//! breaker's gate. The jitter follows the AWS architecture blog's analysis, "Exponential
//! Backoff And Jitter": with `n` the retry's index (0 for the first retry) and
//! `ceiling = min(max_delay, delay * multiplier^n)`,
//!
//! | [`Jitter`] | the sleep before retry `n` |
//! |---|---|
//! | `None` | `ceiling` |
//! | `Full` | uniform in `0..=ceiling` |
//! | `Equal` | `ceiling / 2` plus uniform in `0..=ceiling / 2` (rounded up) |
//! | `Decorrelated` | uniform in `delay..=previous sleep * multiplier`, at most `max_delay`; the first "previous sleep" is `delay` |
//!
//! (AWS's decorrelated jitter multiplies by 3: `.with_multiplier(3)` gives exactly it.)

use core::fmt;

use crate::rng::SplitMix64;
use crate::Duration;

/// The most retries a [`RetryPolicy`] allows (after the first attempt).
pub const MAX_RETRIES: u32 = 255;

/// How the delays between retries are spread out, so that callers who failed together do
/// not retry together (see the [module documentation](crate::RetryPolicy) for the formulas).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Jitter {
    /// No randomness: exactly the capped exponential delay. Callers that failed together
    /// retry together.
    #[default]
    None,
    /// Uniform between zero and the capped exponential delay: the most spread, and in the
    /// AWS analysis the least total work. The usual choice.
    Full,
    /// Half the capped exponential delay, plus up to the other half at random: never less
    /// than half the delay.
    Equal,
    /// Each sleep uniform between the base delay and the previous sleep times the
    /// multiplier, capped: grows like the exponential on average, without a fixed schedule.
    Decorrelated,
}

impl Jitter {
    /// The jitter's name as the attribute's `retry_jitter` argument spells it: `"none"`,
    /// `"full"`, `"equal"` or `"decorrelated"`.
    pub const fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
        }
    }
}

/// When to retry a failed call: at most `retries` more attempts, the first after `delay`,
/// each next one `multiplier` times later, capped at `max_delay`, spread by [`Jitter`],
/// all within an optional total `budget`. Every constructor is a `const fn`, so a policy
/// can live in a `static` (in flash on a microcontroller).
///
/// ```
/// use breaker_core::{Duration, Jitter, RetryPolicy};
///
/// // Up to 3 retries after 100 ms, 200 ms, 400 ms (x2, at most 1 s each), full jitter,
/// // and never more than 2 s in all.
/// static RETRY: RetryPolicy = RetryPolicy::new(3, Duration::from_millis(100))
///     .with_max_delay(Duration::from_secs(1))
///     .with_jitter(Jitter::Full)
///     .with_budget(Duration::from_secs(2));
///
/// // The schedule is reproducible from a seed.
/// let delays: Vec<Duration> = RETRY.delays(42).collect();
/// assert_eq!(delays.len(), 3);
/// assert_eq!(delays, RETRY.delays(42).collect::<Vec<_>>());
/// for (n, d) in delays.iter().enumerate() {
///     assert!(*d <= Duration::from_millis(100 << n));
/// }
/// ```
///
/// Defaults: multiplier 2, no cap (`max_delay` = [`Duration::MAX`]), [`Jitter::None`], no
/// budget. Nonsense is rejected: in a `const` or `static` it does not compile,
///
/// ```compile_fail
/// use breaker_core::{Duration, RetryPolicy};
/// static NEVER: RetryPolicy = RetryPolicy::new(3, Duration::ZERO); // the delay must be > 0
/// ```
///
/// and the `try_` constructors return a [`RetryPolicyError`] for values known only at run
/// time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryPolicy {
    retries: u8,
    multiplier: u8,
    jitter: Jitter,
    delay: Duration,
    max_delay: Duration,
    budget: Option<Duration>,
}

/// Why a retry policy was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RetryPolicyError {
    /// More than [`MAX_RETRIES`] retries.
    TooManyRetries,
    /// The base delay was zero.
    ZeroDelay,
    /// The multiplier was 0 or above 255.
    MultiplierOutOfRange,
    /// The cap was shorter than the base delay.
    MaxDelayBelowDelay,
    /// The budget was zero.
    ZeroBudget,
}

impl RetryPolicyError {
    /// What went wrong, as one sentence.
    pub const fn message(self) -> &'static str {
        match self {
            RetryPolicyError::TooManyRetries => "retries must be at most 255",
            RetryPolicyError::ZeroDelay => "retry delay must be longer than zero",
            RetryPolicyError::MultiplierOutOfRange => "retry multiplier must be between 1 and 255",
            RetryPolicyError::MaxDelayBelowDelay => "max retry delay must not be shorter than the retry delay",
            RetryPolicyError::ZeroBudget => "retry budget must be longer than zero",
        }
    }

    const fn fail(self) -> ! {
        // A `const` panic needs a literal message per variant to show it at compile time.
        match self {
            RetryPolicyError::TooManyRetries => panic!("retries must be at most 255"),
            RetryPolicyError::ZeroDelay => panic!("retry delay must be longer than zero"),
            RetryPolicyError::MultiplierOutOfRange => panic!("retry multiplier must be between 1 and 255"),
            RetryPolicyError::MaxDelayBelowDelay => {
                panic!("max retry delay must not be shorter than the retry delay")
            }
            RetryPolicyError::ZeroBudget => panic!("retry budget must be longer than zero"),
        }
    }
}

impl fmt::Display for RetryPolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl core::error::Error for RetryPolicyError {}

macro_rules! unwrap_retry_policy {
    ($e:expr) => {
        match $e {
            Ok(p) => p,
            Err(e) => e.fail(),
        }
    };
}

impl RetryPolicy {
    /// At most `retries` retries after the first attempt (0: the first attempt only), the
    /// first after `delay`, then twice as long each time, uncapped, no jitter, no budget.
    ///
    /// # Panics
    /// On a nonsense value (a compile error in a `const`); see [`RetryPolicy::try_new`].
    pub const fn new(retries: u32, delay: Duration) -> RetryPolicy {
        unwrap_retry_policy!(Self::try_new(retries, delay))
    }

    /// [`RetryPolicy::new`] for values known only at run time.
    pub const fn try_new(retries: u32, delay: Duration) -> Result<RetryPolicy, RetryPolicyError> {
        if retries > MAX_RETRIES {
            return Err(RetryPolicyError::TooManyRetries);
        }
        if delay.as_millis() == 0 {
            return Err(RetryPolicyError::ZeroDelay);
        }
        Ok(RetryPolicy {
            retries: retries as u8,
            multiplier: 2,
            jitter: Jitter::None,
            delay,
            max_delay: Duration::MAX,
            budget: None,
        })
    }

    /// Each retry waits `multiplier` times longer than the one before (before jitter); 1
    /// keeps the delay constant.
    ///
    /// # Panics
    /// If `multiplier` is 0 or above 255 (a compile error in a `const`).
    pub const fn with_multiplier(self, multiplier: u32) -> RetryPolicy {
        unwrap_retry_policy!(self.try_with_multiplier(multiplier))
    }

    /// [`RetryPolicy::with_multiplier`] for values known only at run time.
    pub const fn try_with_multiplier(mut self, multiplier: u32) -> Result<RetryPolicy, RetryPolicyError> {
        if multiplier == 0 || multiplier > 255 {
            return Err(RetryPolicyError::MultiplierOutOfRange);
        }
        self.multiplier = multiplier as u8;
        Ok(self)
    }

    /// The cap: no single delay is longer (AWS's `cap`).
    ///
    /// # Panics
    /// If `max_delay` is shorter than the base delay (a compile error in a `const`).
    pub const fn with_max_delay(self, max_delay: Duration) -> RetryPolicy {
        unwrap_retry_policy!(self.try_with_max_delay(max_delay))
    }

    /// [`RetryPolicy::with_max_delay`] for values known only at run time.
    pub const fn try_with_max_delay(mut self, max_delay: Duration) -> Result<RetryPolicy, RetryPolicyError> {
        if max_delay.as_millis() < self.delay.as_millis() {
            return Err(RetryPolicyError::MaxDelayBelowDelay);
        }
        self.max_delay = max_delay;
        Ok(self)
    }

    /// How the delays are spread out.
    pub const fn with_jitter(mut self, jitter: Jitter) -> RetryPolicy {
        self.jitter = jitter;
        self
    }

    /// The total time budget. [`RetryPolicy::delays`] never sleeps longer than this in all:
    /// the last delay is shortened to what is left, and once nothing is left there is no
    /// further retry. A [`Ladder`](crate::Ladder) measures it on its clock from the start
    /// of the first attempt, so the attempts' own time counts too: no sleep ends and no
    /// retry starts after `start + budget`.
    ///
    /// # Panics
    /// If `budget` is zero (a compile error in a `const`).
    pub const fn with_budget(self, budget: Duration) -> RetryPolicy {
        unwrap_retry_policy!(self.try_with_budget(budget))
    }

    /// [`RetryPolicy::with_budget`] for values known only at run time.
    pub const fn try_with_budget(mut self, budget: Duration) -> Result<RetryPolicy, RetryPolicyError> {
        if budget.as_millis() == 0 {
            return Err(RetryPolicyError::ZeroBudget);
        }
        self.budget = Some(budget);
        Ok(self)
    }

    /// Retries after the first attempt.
    pub const fn retries(&self) -> u32 {
        self.retries as u32
    }

    /// Attempts in all: the first and the retries.
    pub const fn max_attempts(&self) -> u32 {
        self.retries as u32 + 1
    }

    /// The base delay: the first retry's (before jitter).
    pub const fn delay(&self) -> Duration {
        self.delay
    }

    /// The multiplier (1: a constant delay).
    pub const fn multiplier(&self) -> u32 {
        self.multiplier as u32
    }

    /// The cap on a single delay.
    pub const fn max_delay(&self) -> Duration {
        self.max_delay
    }

    /// The jitter.
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The total time budget, if any.
    pub const fn budget(&self) -> Option<Duration> {
        self.budget
    }

    /// The delays before each retry, drawn from a generator seeded with `seed`: the same
    /// seed gives the same delays. At most [`RetryPolicy::retries`] of them, fewer when the
    /// budget runs out; their sum never exceeds the budget.
    pub const fn delays(&self, seed: u64) -> Delays {
        Delays {
            policy: *self,
            rng: SplitMix64::new(seed),
            given: 0,
            ceiling: self.delay,
            previous: self.delay,
            budget_left: self.budget,
        }
    }

    /// [`RetryPolicy::delays`] without the budget's trimming: the [`Ladder`](crate::Ladder)
    /// trims by its clock instead, which also counts the attempts' own time.
    pub(crate) const fn delays_unbudgeted(&self, seed: u64) -> Delays {
        let mut d = self.delays(seed);
        d.budget_left = None;
        d
    }
}

/// The delays of a [`RetryPolicy`], one per retry: an iterator, reproducible from the seed
/// given to [`RetryPolicy::delays`]. Fixed size, no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Delays {
    policy: RetryPolicy,
    rng: SplitMix64,
    /// Delays handed out so far.
    given: u8,
    /// The capped exponential delay of the next retry, before jitter.
    ceiling: Duration,
    /// The previous sleep (decorrelated jitter).
    previous: Duration,
    /// What is left of the budget, if there is one.
    budget_left: Option<Duration>,
}

/// What the next step of a [`Delays`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Sleep this long, then retry.
    Sleep(Duration),
    /// Every retry is used.
    Exhausted,
    /// The budget is spent.
    BudgetSpent,
}

impl Delays {
    /// Retries still allowed (the iterator's exact remaining length, when no budget cuts it short).
    pub const fn retries_left(&self) -> u32 {
        self.policy.retries as u32 - self.given as u32
    }

    pub(crate) fn step(&mut self) -> Next {
        if self.given >= self.policy.retries {
            return Next::Exhausted;
        }
        if let Some(Duration::ZERO) = self.budget_left {
            return Next::BudgetSpent;
        }
        let p = &self.policy;
        let ceiling = self.ceiling;
        let ms = ceiling.as_millis();
        let mut delay = match p.jitter {
            Jitter::None => ceiling,
            Jitter::Full => Duration::from_millis(self.rng.between(0, ms)),
            Jitter::Equal => {
                let half = ms / 2;
                Duration::from_millis(half + self.rng.between(0, ms - half))
            }
            Jitter::Decorrelated => {
                let hi = self.previous.checked_mul(p.multiplier as u32).unwrap_or(Duration::MAX);
                let drawn = Duration::from_millis(self.rng.between(p.delay.as_millis(), hi.as_millis()));
                let d = drawn.min(p.max_delay);
                self.previous = d;
                d
            }
        };
        // The next retry's ceiling: multiplied, capped (never overflowing).
        self.ceiling = match ceiling.checked_mul(p.multiplier as u32) {
            Some(next) => next.min(p.max_delay),
            None => p.max_delay,
        };
        self.given += 1;
        if let Some(left) = self.budget_left {
            delay = delay.min(left);
            self.budget_left = Some(left.saturating_sub(delay));
        }
        Next::Sleep(delay)
    }
}

impl Iterator for Delays {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        match self.step() {
            Next::Sleep(d) => Some(d),
            Next::Exhausted | Next::BudgetSpent => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.retries_left() as usize;
        match self.budget_left {
            Some(Duration::ZERO) => (0, Some(0)),
            Some(_) => (left.min(1), Some(left)),
            None => (left, Some(left)),
        }
    }
}

impl core::iter::FusedIterator for Delays {}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    const MS: fn(u32) -> Duration = Duration::from_millis;

    #[test]
    fn nonsense_is_rejected() {
        assert_eq!(RetryPolicy::try_new(256, MS(1)), Err(RetryPolicyError::TooManyRetries));
        assert_eq!(
            RetryPolicy::try_new(3, Duration::ZERO),
            Err(RetryPolicyError::ZeroDelay)
        );
        let p = RetryPolicy::new(3, MS(100));
        assert_eq!(p.try_with_multiplier(0), Err(RetryPolicyError::MultiplierOutOfRange));
        assert_eq!(p.try_with_multiplier(256), Err(RetryPolicyError::MultiplierOutOfRange));
        assert_eq!(p.try_with_max_delay(MS(99)), Err(RetryPolicyError::MaxDelayBelowDelay));
        assert_eq!(p.try_with_budget(Duration::ZERO), Err(RetryPolicyError::ZeroBudget));
        assert!(RetryPolicy::try_new(0, MS(1)).is_ok());
    }

    #[test]
    fn a_cap_equal_to_the_delay_is_accepted_and_every_delay_is_the_cap() {
        let p = RetryPolicy::new(3, MS(100)).try_with_max_delay(MS(100)).unwrap();
        assert_eq!(p.max_delay(), MS(100));
        assert_eq!(
            p.delays(0).map(Duration::as_millis).collect::<Vec<_>>(),
            [100, 100, 100]
        );
    }

    #[test]
    fn no_jitter_is_the_capped_exponential() {
        let p = RetryPolicy::new(6, MS(100)).with_max_delay(MS(1000));
        let d: Vec<u32> = p.delays(0).map(Duration::as_millis).collect();
        assert_eq!(d, [100, 200, 400, 800, 1000, 1000]);
        let constant = RetryPolicy::new(3, MS(50)).with_multiplier(1);
        assert_eq!(
            constant.delays(9).map(Duration::as_millis).collect::<Vec<_>>(),
            [50, 50, 50]
        );
        assert_eq!(RetryPolicy::new(0, MS(50)).delays(0).count(), 0);
    }

    #[test]
    fn growth_saturates_at_the_longest_duration() {
        let p = RetryPolicy::new(255, MS(1000)).with_multiplier(255);
        let last = p.delays(0).last().unwrap();
        assert_eq!(last, Duration::MAX);
        assert_eq!(p.delays(0).count(), 255);
    }

    #[test]
    fn the_budget_shortens_the_last_delay_and_skips_the_rest() {
        let p = RetryPolicy::new(5, MS(100)).with_budget(MS(450));
        let d: Vec<u32> = p.delays(0).map(Duration::as_millis).collect();
        assert_eq!(d, [100, 200, 150]);
        let exact = RetryPolicy::new(5, MS(100)).with_budget(MS(300));
        assert_eq!(exact.delays(0).map(Duration::as_millis).collect::<Vec<_>>(), [100, 200]);
    }

    #[test]
    fn equal_jitter_keeps_at_least_half() {
        let p = RetryPolicy::new(8, MS(101)).with_jitter(Jitter::Equal);
        for seed in 0..200 {
            for (n, d) in p.delays(seed).enumerate() {
                let ceiling = 101u32 << n;
                assert!(d.as_millis() >= ceiling / 2 && d.as_millis() <= ceiling, "{n}: {d}");
            }
        }
    }

    #[test]
    fn decorrelated_jitter_starts_at_the_base_and_respects_the_cap() {
        let p = RetryPolicy::new(20, MS(10))
            .with_multiplier(3)
            .with_max_delay(MS(500))
            .with_jitter(Jitter::Decorrelated);
        for seed in 0..200 {
            let mut previous = 10;
            for d in p.delays(seed) {
                let d = d.as_millis();
                assert!((10..=500).contains(&d) && d <= previous * 3, "{d} after {previous}");
                previous = d;
            }
        }
    }

    #[test]
    fn full_jitter_spreads_over_the_whole_range() {
        let p = RetryPolicy::new(1, MS(1000)).with_jitter(Jitter::Full);
        let firsts: Vec<u32> = (0..2000).map(|s| p.delays(s).next().unwrap().as_millis()).collect();
        assert!(firsts.iter().all(|&d| d <= 1000));
        assert!(firsts.iter().any(|&d| d < 100) && firsts.iter().any(|&d| d > 900));
        // Different seeds, different schedules; the same seed, the same one.
        assert_ne!(p.delays(1).next(), p.delays(2).next());
        assert_eq!(p.delays(3).next(), p.delays(3).next());
    }

    #[test]
    fn size_hint_is_exact_without_a_budget() {
        let mut d = RetryPolicy::new(4, MS(10)).delays(0);
        assert_eq!(d.size_hint(), (4, Some(4)));
        d.next();
        assert_eq!(d.size_hint(), (3, Some(3)));
        assert_eq!(d.retries_left(), 3);
    }
}
