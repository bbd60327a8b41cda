//! The retry ladder: retries with backoff and jitter in front of a breaker, every attempt
//! through the breaker's gate.
//!
//! ```text
//! call fails -> retry ladder (backoff + jitter)   handles TRANSIENT failures
//!            -> keeps failing: the breaker trips  handles SUSTAINED failures
//!            -> cooldown, one probe, close        tests and proves RECOVERY
//! ```
//!
//! The ladder decides only *whether and when* to try again; every decision about the
//! upstream's health is the breaker's, through its ordinary gate and `record`, so strikes
//! accumulate and the breaker can trip mid-ladder. No transition rule lives here.

use core::future::Future;

use crate::retry::Next;
use crate::{
    CallError, CircuitBreaker, Classify, Clock, Duration, Instant, Outcome, Refused, RetryBudget, RetryPolicy, State,
    Verdict,
};

#[cfg(loom)]
use core::sync::atomic::{AtomicU32, Ordering};

#[cfg(not(loom))]
use crate::atomic::{AtomicU32, Ordering};

/// What an error testifies, for the ladder: [`ByClassify`] (the error type's [`Classify`]
/// impl, the default) or any `FnMut(&E) -> Verdict`.
pub trait Classifier<E> {
    /// The verdict on `error`.
    fn verdict_of(&mut self, error: &E) -> Verdict;
}

/// The default [`Classifier`]: the error type's own [`Classify`] impl.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ByClassify;

impl<E: Classify> Classifier<E> for ByClassify {
    #[inline(always)]
    fn verdict_of(&mut self, error: &E) -> Verdict {
        error.verdict()
    }
}

impl<E, F: FnMut(&E) -> Verdict> Classifier<E> for F {
    #[inline(always)]
    fn verdict_of(&mut self, error: &E) -> Verdict {
        self(error)
    }
}

/// Told before each sleep: `()` (the default) does nothing; any `FnMut(&E, Duration)` is
/// given the strike that failed and the delay before the retry.
pub trait Notify<E> {
    /// A retry will follow `delay` from now, after `error`.
    fn retrying(&mut self, error: &E, delay: Duration);
}

impl<E> Notify<E> for () {
    #[inline(always)]
    fn retrying(&mut self, _: &E, _: Duration) {}
}

impl<E, F: FnMut(&E, Duration)> Notify<E> for F {
    fn retrying(&mut self, error: &E, delay: Duration) {
        self(error, delay)
    }
}

/// Asked by a ladder for each retry: `()` (the default: no budget, nothing counted, every
/// retry the policy allows is made) or a `&`[`RetryBudget`] shared by every ladder in front
/// of one upstream (see [`Ladder::budget`]).
pub trait Allowance {
    /// The first attempt, which the breaker let through, was answered (at `clock`'s
    /// reading; once the answer is recorded, before any retry).
    fn first_attempt<C: Clock>(&self, clock: &C);
    /// May the ladder retry at `now`? `false` ends it with [`Stop::RetryBudgetSpent`].
    fn retry(&self, now: Instant) -> bool;
}

impl Allowance for () {
    #[inline(always)]
    fn first_attempt<C: Clock>(&self, _: &C) {}

    #[inline(always)]
    fn retry(&self, _: Instant) -> bool {
        true
    }
}

impl Allowance for &RetryBudget {
    #[inline(always)]
    fn first_attempt<C: Clock>(&self, clock: &C) {
        self.deposit(clock.now());
    }

    fn retry(&self, now: Instant) -> bool {
        self.try_withdraw(now)
    }
}

/// Sleeps in an `async` ladder: any `FnMut(Duration) -> impl Future<Output = ()>`, so the
/// core needs no runtime. With tokio: `|d: Duration| tokio::time::sleep(d.into())` (the
/// closure's argument named, for `.into()` to know what it converts); with embassy:
/// `|d| embassy_time::Timer::after(breaker_embedded::embassy_duration(d))`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot sleep between the retries of an async call",
    label = "an async retry ladder needs a sleep function returning a future",
    note = "give one with `.sleep(|d: Duration| tokio::time::sleep(d.into()))` (or your runtime's timer); with `#[circuit_breaker(retry = ..)]` on an `async fn`, pass `retry_sleep = path::to::fn` taking a `Duration` and returning a future (breaker-embedded sleeps on embassy's `Timer` by default)"
)]
pub trait Sleep {
    /// The sleep.
    type Future: Future<Output = ()>;
    /// A future that completes `delay` from now.
    fn sleep(&mut self, delay: Duration) -> Self::Future;
}

impl<F: FnMut(Duration) -> Fut, Fut: Future<Output = ()>> Sleep for F {
    type Future = Fut;

    fn sleep(&mut self, delay: Duration) -> Fut {
        self(delay)
    }
}

/// Sleeps in a blocking ladder: [`DefaultSleep`] (`std::thread::sleep`, feature `std`) or
/// any `FnMut(Duration)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot sleep between the retries of a blocking call",
    label = "a blocking retry ladder needs a sleep function",
    note = "without the `std` feature there is no thread to sleep: give one with `.sleep(|d: Duration| ..)`, or with `#[circuit_breaker(retry = ..)]` pass `retry_sleep = path::to::fn` taking a `Duration`"
)]
pub trait BlockingSleep {
    /// Blocks for `delay`.
    fn sleep(&mut self, delay: Duration);
}

impl<F: FnMut(Duration)> BlockingSleep for F {
    fn sleep(&mut self, delay: Duration) {
        self(delay)
    }
}

/// The ladder's sleep when none is given: `std::thread::sleep` in a blocking ladder
/// (feature `std`). It does not sleep in `async` ladders: give those a sleep function
/// with [`Ladder::sleep`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DefaultSleep;

#[cfg(feature = "std")]
impl BlockingSleep for DefaultSleep {
    fn sleep(&mut self, delay: Duration) {
        std::thread::sleep(delay.into())
    }
}

/// Why a ladder stopped climbing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stop {
    /// An attempt succeeded.
    Succeeded,
    /// An attempt failed with a trip verdict or a neutral outcome: only strikes are
    /// retried; the error is returned as is.
    NotRetryable(Verdict),
    /// The breaker refused an attempt (nothing was sent): the refusal is returned as is,
    /// with its `retry_in`.
    Refused,
    /// A strike left the breaker open for longer than the next delay (tripped by this
    /// ladder's strikes or anyone else's): the ladder ends without sleeping against it.
    /// `retry_in` is the wait left (`None` when forced open).
    Opened {
        /// The breaker's remaining wait.
        retry_in: Option<Duration>,
    },
    /// Every retry was used; the last strike is returned.
    Exhausted,
    /// The time budget ran out; the last strike is returned.
    BudgetSpent,
    /// The shared [`RetryBudget`] refused the retry (too many retries across its ladders
    /// lately); the last strike is returned.
    RetryBudgetSpent,
}

/// What a ladder did: the result, how many attempts were made, and why it stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[must_use = "the ladder's result is in `result` (or `into_result()`)"]
pub struct Retried<T, E> {
    /// The last attempt's result, or the refusal that ended the ladder.
    pub result: Result<T, CallError<E>>,
    /// Attempts made: calls the breaker let through (a refused one is not counted).
    pub attempts: u32,
    /// Why the ladder stopped.
    pub stop: Stop,
}

impl<T, E> Retried<T, E> {
    /// The result alone.
    pub fn into_result(self) -> Result<T, CallError<E>> {
        self.result
    }

    /// When the breaker ended the ladder (a refusal, or a strike that left it open): the
    /// wait before it may let a call through again, when known. The same answer as
    /// [`Refusal::retry_in`](crate::Refusal::retry_in).
    pub fn retry_in(&self) -> Option<Duration> {
        crate::Refusal::retry_in(self)
    }
}

/// A retry ladder in front of a breaker: made by [`RetryPolicy::ladder`], configured with
/// [`Ladder::seed`], [`Ladder::sleep`], [`Ladder::classify`], [`Ladder::notify`] and
/// [`Ladder::budget`], run with [`Ladder::call`] (blocking) or [`Ladder::call_async`].
///
/// - Every attempt goes through the breaker's gate and its outcome is recorded, so strikes
///   accumulate and the breaker can trip mid-ladder.
/// - Only strikes are retried. A trip verdict (including a `TripFor` hold, however short)
///   or a neutral outcome ends the ladder at once and is returned as is.
/// - A refusal ends the ladder at once and is returned as is, with its `retry_in`. After a
///   strike the ladder reads the breaker's state (the pure oracle, which never takes the
///   probe): if it will still be open when the next delay is over, the ladder ends rather
///   than sleep against it ([`Stop::Opened`]).
/// - With a budget, no sleep ends and no retry starts after `start + budget` (the start of
///   the first attempt, on the ladder's clock): the last sleep is shortened to what is left,
///   or skipped when nothing is.
/// - With a [`RetryBudget`] ([`Ladder::budget`]), the first attempt the breaker lets
///   through deposits in it once answered, and each retry is withdrawn from it once every
///   other check has passed, before the sleep: refused, the ladder ends at once with the
///   last strike ([`Stop::RetryBudgetSpent`]).
/// - [`Retried::attempts`] counts the calls made.
///
/// A first attempt that succeeds costs what the breaker's own call costs, plus a few
/// instructions: the clock is not read (unless the policy has a budget), no random number
/// is drawn, nothing is written (with a [`RetryBudget`]: a clock read and the deposit).
///
/// ```
/// use breaker_core::{CallError, Classify, Duration, Instant, ManualClock, Policy, RetryPolicy, SharedBreaker, Stop};
/// use std::cell::Cell;
///
/// #[derive(Debug)]
/// struct Nack;
/// impl Classify for Nack {} // a strike
///
/// static RADIO: SharedBreaker = SharedBreaker::new(&Policy::new(3, Duration::from_secs(30)));
/// static RETRY: RetryPolicy = RetryPolicy::new(4, Duration::from_millis(10));
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
///
/// let nacks = Cell::new(2u32);
/// let sent = RETRY
///     .ladder(&RADIO, &CLOCK)
///     .sleep(|d| CLOCK.advance(d)) // a test sleeps on its manual clock
///     .call(|| if nacks.replace(nacks.get().saturating_sub(1)) > 0 { Err(Nack) } else { Ok(7) });
/// assert_eq!((sent.result.ok(), sent.attempts, sent.stop), (Some(7), 3, Stop::Succeeded));
/// assert_eq!(CLOCK.now(), Instant::from_millis(10 + 20));
///
/// // A radio that keeps NACKing trips the breaker on the third strike: the ladder stops
/// // there instead of sleeping against the open breaker.
/// let dead = RETRY.ladder(&RADIO, &CLOCK).sleep(|d| CLOCK.advance(d)).call(|| Err::<u8, _>(Nack));
/// assert_eq!(dead.attempts, 3);
/// assert_eq!(dead.stop, Stop::Opened { retry_in: Some(Duration::from_secs(30)) });
/// // The next call is refused at the gate, without an attempt.
/// let refused = RETRY.ladder(&RADIO, &CLOCK).sleep(|d| CLOCK.advance(d)).call(|| Ok::<u8, Nack>(1));
/// assert!(matches!(refused.result, Err(CallError::Refused(_))));
/// assert_eq!((refused.attempts, refused.stop), (0, Stop::Refused));
/// # use breaker_core::Clock;
/// ```
#[must_use = "a ladder does nothing until `call` or `call_async`"]
pub struct Ladder<'a, G, C, S = DefaultSleep, K = ByClassify, N = (), B = ()> {
    policy: &'a RetryPolicy,
    gate: G,
    clock: &'a C,
    seed: Option<u64>,
    sleep: S,
    classify: K,
    notify: N,
    budget: B,
}

impl<G, C, S: core::fmt::Debug, K, N, B> core::fmt::Debug for Ladder<'_, G, C, S, K, N, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ladder")
            .field("policy", self.policy)
            .field("seed", &self.seed)
            .field("sleep", &self.sleep)
            .finish_non_exhaustive()
    }
}

impl RetryPolicy {
    /// A retry ladder following this policy in front of `gate` (`&SharedBreaker` or
    /// `&mut Breaker`), on `clock` (the breaker's clock: the gate, the outcomes and the
    /// budget all read it). See [`Ladder`].
    pub fn ladder<'a, G: CircuitBreaker, C: Clock>(&'a self, gate: G, clock: &'a C) -> Ladder<'a, G, C> {
        Ladder {
            policy: self,
            gate,
            clock,
            seed: None,
            sleep: DefaultSleep,
            classify: ByClassify,
            notify: (),
            budget: (),
        }
    }
}

impl<G, C, S, K, N, B> Ladder<'_, G, C, S, K, N, B> {
    /// The policy it climbs by.
    pub fn policy(&self) -> &RetryPolicy {
        self.policy
    }

    /// The seed given with [`Ladder::seed`], if any.
    pub fn seed_given(&self) -> Option<u64> {
        self.seed
    }
}

impl<'a, G: CircuitBreaker, C: Clock, S, K, N, B: Allowance> Ladder<'a, G, C, S, K, N, B> {
    /// Seeds the jitter: the same seed gives the same delays (see [`RetryPolicy::delays`]).
    /// Without one, the seed is drawn at the first retry from the clock's reading and a
    /// process-wide count of draws, so callers that fail together spread apart.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// How to sleep between attempts: an `FnMut(Duration)` for [`Ladder::call`], an
    /// `FnMut(Duration) -> impl Future<Output = ()>` for [`Ladder::call_async`]. The
    /// default is [`DefaultSleep`].
    pub fn sleep<S2>(self, sleep: S2) -> Ladder<'a, G, C, S2, K, N, B> {
        Ladder {
            policy: self.policy,
            gate: self.gate,
            clock: self.clock,
            seed: self.seed,
            sleep,
            classify: self.classify,
            notify: self.notify,
            budget: self.budget,
        }
    }

    /// What each error testifies, instead of the error type's [`Classify`] impl.
    pub fn classify<E, K2: FnMut(&E) -> Verdict>(self, classify: K2) -> Ladder<'a, G, C, S, K2, N, B> {
        Ladder {
            policy: self.policy,
            gate: self.gate,
            clock: self.clock,
            seed: self.seed,
            sleep: self.sleep,
            classify,
            notify: self.notify,
            budget: self.budget,
        }
    }

    /// Called before each sleep with the strike that failed and the delay before the retry
    /// (for logs and metrics).
    pub fn notify<E, N2: FnMut(&E, Duration)>(self, notify: N2) -> Ladder<'a, G, C, S, K, N2, B> {
        Ladder {
            policy: self.policy,
            gate: self.gate,
            clock: self.clock,
            seed: self.seed,
            sleep: self.sleep,
            classify: self.classify,
            notify,
            budget: self.budget,
        }
    }

    /// Draws every retry from `budget`, shared with the other ladders in front of the same
    /// upstream: the first attempt the breaker lets through deposits once it is answered (a
    /// refused one does not, nor one dropped unanswered), each retry withdraws before its
    /// sleep, and a refusal ends the ladder with the last strike and
    /// [`Stop::RetryBudgetSpent`]. The budget reads the ladder's clock.
    ///
    /// ```
    /// use breaker_core::{CallError, Classify, Duration, Instant, ManualClock, Policy, RetryBudget, RetryPolicy, SharedBreaker, Stop};
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Busy;
    /// impl Classify for Busy {} // a strike
    ///
    /// static UPSTREAM: SharedBreaker = SharedBreaker::new(&Policy::new(10, Duration::from_secs(30)));
    /// static RETRY: RetryPolicy = RetryPolicy::new(3, Duration::from_millis(100));
    /// // No floor: retries only as 50 % of the first attempts.
    /// static BUDGET: RetryBudget = RetryBudget::new(50, 0, Duration::from_secs(10));
    /// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    ///
    /// let busy = || RETRY.ladder(&UPSTREAM, &CLOCK).budget(&BUDGET).sleep(|_| {}).call(|| Err::<(), _>(Busy));
    /// // The first ladder deposits half a retry: not enough for one.
    /// let first = busy();
    /// assert_eq!((first.attempts, first.stop), (1, Stop::RetryBudgetSpent));
    /// assert_eq!(first.result, Err(CallError::Inner(Busy)));
    /// // The second's deposit makes a whole retry, which it takes.
    /// let second = busy();
    /// assert_eq!((second.attempts, second.stop), (2, Stop::RetryBudgetSpent));
    /// assert_eq!(BUDGET.snapshot(CLOCK.now()).allowed, 1);
    /// # use breaker_core::Clock;
    /// ```
    pub fn budget<B2: Allowance>(self, budget: B2) -> Ladder<'a, G, C, S, K, N, B2> {
        Ladder {
            policy: self.policy,
            gate: self.gate,
            clock: self.clock,
            seed: self.seed,
            sleep: self.sleep,
            classify: self.classify,
            notify: self.notify,
            budget,
        }
    }

    /// Runs `attempt` until it succeeds or the ladder stops, sleeping with the ladder's
    /// [`BlockingSleep`] between attempts.
    #[inline]
    pub fn call<T, E>(mut self, mut attempt: impl FnMut() -> Result<T, E>) -> Retried<T, E>
    where
        S: BlockingSleep,
        K: Classifier<E>,
        N: Notify<E>,
    {
        let mut climb = Climb::new(self.policy, self.seed, self.clock);
        loop {
            let pass = match self.gate.attempt(self.clock) {
                Ok(pass) => pass,
                Err(refused) => return climb.refused(refused),
            };
            climb.attempts = climb.attempts.saturating_add(1);
            let error = match attempt() {
                Ok(value) => {
                    pass.record(Outcome::Success);
                    if climb.attempts == 1 {
                        self.budget.first_attempt(self.clock);
                    }
                    return climb.succeeded(value);
                }
                Err(error) => error,
            };
            let verdict = self.classify.verdict_of(&error);
            pass.record(Outcome::Error(verdict));
            if climb.attempts == 1 {
                self.budget.first_attempt(self.clock);
            }
            match climb.next(&self.gate, self.clock, &self.budget, verdict) {
                Ok(delay) => {
                    self.notify.retrying(&error, delay);
                    self.sleep.sleep(delay);
                }
                Err(stop) => return climb.failed(error, stop),
            }
        }
    }

    /// Runs `attempt` (an `async` closure, or a closure returning a future) until it
    /// succeeds or the ladder stops, awaiting the ladder's [`Sleep`] between attempts.
    ///
    /// Cancellation-safe: dropped while an attempt is in flight, the attempt's pass is
    /// dropped unanswered (a probe counts as failed at once, anything else as neutral);
    /// dropped while sleeping, nothing is held and the breaker is as the last attempt
    /// left it.
    pub async fn call_async<T, E>(mut self, mut attempt: impl AsyncFnMut() -> Result<T, E>) -> Retried<T, E>
    where
        S: Sleep,
        K: Classifier<E>,
        N: Notify<E>,
    {
        let mut climb = Climb::new(self.policy, self.seed, self.clock);
        loop {
            let pass = match self.gate.attempt(self.clock) {
                Ok(pass) => pass,
                Err(refused) => return climb.refused(refused),
            };
            climb.attempts = climb.attempts.saturating_add(1);
            let error = match attempt().await {
                Ok(value) => {
                    pass.record(Outcome::Success);
                    if climb.attempts == 1 {
                        self.budget.first_attempt(self.clock);
                    }
                    return climb.succeeded(value);
                }
                Err(error) => error,
            };
            let verdict = self.classify.verdict_of(&error);
            pass.record(Outcome::Error(verdict));
            if climb.attempts == 1 {
                self.budget.first_attempt(self.clock);
            }
            match climb.next(&self.gate, self.clock, &self.budget, verdict) {
                Ok(delay) => {
                    self.notify.retrying(&error, delay);
                    self.sleep.sleep(delay).await;
                }
                Err(stop) => return climb.failed(error, stop),
            }
        }
    }
}

/// One climb's state: attempts so far, the start (only with a budget), the delays (drawn
/// only once a retry is needed).
struct Climb<'a> {
    policy: &'a RetryPolicy,
    seed: Option<u64>,
    attempts: u32,
    start: Option<Instant>,
    delays: Option<crate::Delays>,
}

impl<'a> Climb<'a> {
    #[inline(always)]
    fn new<C: Clock>(policy: &'a RetryPolicy, seed: Option<u64>, clock: &C) -> Climb<'a> {
        Climb {
            policy,
            seed,
            attempts: 0,
            // The budget counts from the first attempt's start; without one, no clock read.
            start: policy.budget().map(|_| clock.now()),
            delays: None,
        }
    }

    #[inline(always)]
    fn succeeded<T, E>(&self, value: T) -> Retried<T, E> {
        Retried {
            result: Ok(value),
            attempts: self.attempts,
            stop: Stop::Succeeded,
        }
    }

    fn refused<T, E>(&self, refused: Refused) -> Retried<T, E> {
        Retried {
            result: Err(CallError::Refused(refused)),
            attempts: self.attempts,
            stop: Stop::Refused,
        }
    }

    fn failed<T, E>(&self, error: E, stop: Stop) -> Retried<T, E> {
        Retried {
            result: Err(CallError::Inner(error)),
            attempts: self.attempts,
            stop,
        }
    }

    /// After a failed attempt with `verdict`: the delay before the next one, or why not.
    #[cold]
    fn next<C: Clock, G: CircuitBreaker, B: Allowance>(
        &mut self,
        gate: &G,
        clock: &C,
        budget: &B,
        verdict: Verdict,
    ) -> Result<Duration, Stop> {
        if verdict != Verdict::Strike {
            return Err(Stop::NotRetryable(verdict));
        }
        let now = clock.now();
        let policy = self.policy;
        let seed = self.seed;
        let delays = self
            .delays
            .get_or_insert_with(|| policy.delays_unbudgeted(seed.unwrap_or_else(|| fresh_seed(now))));
        let mut delay = match delays.step() {
            Next::Sleep(d) => d,
            Next::Exhausted => return Err(Stop::Exhausted),
            Next::BudgetSpent => return Err(Stop::BudgetSpent),
        };
        if let (Some(budget), Some(start)) = (policy.budget(), self.start) {
            let left = budget.saturating_sub(now.since(start));
            if left == Duration::ZERO {
                return Err(Stop::BudgetSpent);
            }
            delay = delay.min(left);
        }
        match gate.state(clock) {
            State::Open { forced: true, .. } => Err(Stop::Opened { retry_in: None }),
            State::Open { remaining, .. } if remaining > delay => Err(Stop::Opened {
                retry_in: Some(remaining),
            }),
            // The retry will be made: the last check, so that nothing is withdrawn for a
            // retry that is not.
            _ if !budget.retry(now) => Err(Stop::RetryBudgetSpent),
            _ => Ok(delay),
        }
    }
}

/// A seed for a ladder given none: the clock's reading and a process-wide count of draws,
/// mixed by the generator itself, so that two callers failing at the same instant still
/// draw different delays.
fn fresh_seed(now: Instant) -> u64 {
    static DRAWS: AtomicU32 = AtomicU32::new(0);
    let n = DRAWS.fetch_add(1, Ordering::Relaxed);
    (u64::from(n) << 32) | u64::from(now.as_millis())
}
