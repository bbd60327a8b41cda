//! A breaker steered by a quota gauge: priority admission, and proactive opening through the one state machine.
//!
//! [`QuotaGuard`] pairs a [`QuotaGauge`] with a breaker, either storage: a [`Breaker`] it
//! owns or a `&SharedBreaker` (in a `static`). It adds no transition rule of its own: an
//! alarmed reading calls the breaker's [`trip`](Breaker::trip) with
//! [`Reason::QuotaRed`] (a red light) or [`Reason::Predicted`] (a predicted exhaustion),
//! held until the quota's reset when the response said when that is
//! ([`Quota::with_reset_in`]), and from there the breaker's policy decides everything (the
//! cooldown and its backoff, the one probe, the probes to close), exactly as for a trip.

// Not `crate::atomic`: that one is loom's under model checking, whose atomics have no
// `const fn new`; this word is not part of what loom checks.
#[cfg(not(feature = "portable-atomic"))]
use core::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "portable-atomic")]
use portable_atomic::{AtomicU64, Ordering};

use crate::quota::{Alarm, Priority, Quota, QuotaGauge, QuotaPolicy, Reading, Sample};

use crate::{
    Breaker, CallError, CircuitBreaker, Classify, Clock, Duration, Instant, Observer, Outcome, Reason, Refused,
    SharedBreaker, Snapshot, State, Transition,
};

/// An [`Observer`] that also hears of every quota sample a [`QuotaGuard`] takes, before
/// any transition the sample causes: Squad's console lines print the last remaining and
/// total when the breaker opens. The method does nothing by default.
pub trait QuotaObserver: Observer {
    /// Called with each sample's quota, before the guard acts on it.
    fn on_quota(&self, quota: &Quota) {
        let _ = quota;
    }
}

impl QuotaObserver for () {}

impl QuotaObserver for fn(&Transition) {}

#[cfg(feature = "std")]
impl QuotaObserver for crate::StderrLog {}

/// The last quota an observer heard of, in one atomic word, so that an observer kept in a
/// `static` (and shared, `Sync`) can remember it: what Squad's "opened" line prints.
///
/// `remaining` and `total` are stored together, so a reader never sees the remaining of
/// one sample with the total of another. `Quota { remaining: u32::MAX, total: u32::MAX }`
/// is the word's "nothing heard yet" and reads as `None`.
pub struct LastQuota(AtomicU64);

const NOTHING_YET: u64 = u64::MAX;

impl LastQuota {
    /// Nothing heard yet.
    pub const fn new() -> LastQuota {
        LastQuota(AtomicU64::new(NOTHING_YET))
    }

    /// Remembers `quota`.
    pub fn set(&self, quota: Quota) {
        let word = u64::from(quota.remaining) | u64::from(quota.total) << 32;
        self.0.store(word, Ordering::Relaxed);
    }

    /// The last quota remembered.
    pub fn get(&self) -> Option<Quota> {
        match self.0.load(Ordering::Relaxed) {
            NOTHING_YET => None,
            w => Some(Quota::new(w as u32, (w >> 32) as u32)),
        }
    }
}

impl Default for LastQuota {
    fn default() -> LastQuota {
        LastQuota::new()
    }
}

impl core::fmt::Debug for LastQuota {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("LastQuota").field(&self.get()).finish()
    }
}

/// A breaker a [`QuotaGuard`] can steer: any [`CircuitBreaker`] whose observer is a
/// [`QuotaObserver`] (it hears of each quota sample) and whose state can be saved and
/// restored (the guard's state file, feature `state-file`): a [`Breaker`] the guard owns, or
/// a [`SharedBreaker`] by value, by `&` (in a `static`) or by `Arc`.
#[diagnostic::on_unimplemented(
    message = "a quota guard cannot steer `{Self}`",
    label = "the guard needs a breaker whose observer hears each quota sample and whose state it can save and restore",
    note = "give the guard a `Breaker<O>` or a `SharedBreaker<O, ..>` (by value, `&` or `Arc`) whose observer `O` is a `QuotaObserver` (`LastQuota`, or `()`)",
    note = "a registry entry's observer and policy are fixed by its function or `static`, and a Redis-shared breaker's state lives in Redis, not in a snapshot: guard the quota with a breaker of its own"
)]
pub trait Steer: CircuitBreaker {
    /// The breaker's observer.
    type Observer: ?Sized + QuotaObserver;
    /// The breaker's observer.
    fn quota_observer(&self) -> &Self::Observer;
    /// The breaker's state and counters as of `now` ([`Breaker::snapshot`]).
    fn take_snapshot(&self, now: Instant) -> Snapshot;
    /// Takes the state and counters of `snapshot` as of `now` ([`Breaker::restore`]).
    fn restore_snapshot(&mut self, snapshot: &Snapshot, now: Instant);
}

impl<O: QuotaObserver> Steer for Breaker<O> {
    type Observer = O;
    fn quota_observer(&self) -> &O {
        self.observer()
    }
    fn take_snapshot(&self, now: Instant) -> Snapshot {
        self.snapshot(now)
    }
    fn restore_snapshot(&mut self, snapshot: &Snapshot, now: Instant) {
        self.restore(snapshot, now)
    }
}

impl<B: Steer + ?Sized> Steer for &mut B {
    type Observer = B::Observer;
    fn quota_observer(&self) -> &B::Observer {
        (**self).quota_observer()
    }
    fn take_snapshot(&self, now: Instant) -> Snapshot {
        (**self).take_snapshot(now)
    }
    fn restore_snapshot(&mut self, snapshot: &Snapshot, now: Instant) {
        (**self).restore_snapshot(snapshot, now)
    }
}

/// [`Steer`] for every handle to a [`SharedBreaker`].
macro_rules! steer_shared {
    ($($handle:ty),*) => {$(
        impl<O: ?Sized + QuotaObserver, P: crate::PolicyStore, S: crate::counts::CountStore> Steer for $handle {
            type Observer = O;
            fn quota_observer(&self) -> &O {
                self.observer()
            }
            fn take_snapshot(&self, now: Instant) -> Snapshot {
                self.snapshot(now)
            }
            fn restore_snapshot(&mut self, snapshot: &Snapshot, now: Instant) {
                self.restore(snapshot, now)
            }
        }
    )*};
}

steer_shared!(SharedBreaker<O, P, S>, &SharedBreaker<O, P, S>);
#[cfg(feature = "std")]
steer_shared!(std::sync::Arc<SharedBreaker<O, P, S>>);

/// Squad's predictive breaker: a breaker steered by a [`QuotaGauge`].
///
/// - **Admission** ([`QuotaGuard::admit`]): while the breaker is closed and the light is
///   amber, only [`Priority::High`] calls proceed; the rest get the ordinary [`Refused`]
///   with [`RefusalReason::QuotaLow`](crate::RefusalReason::QuotaLow). Then the breaker's
///   own gate decides.
/// - **Proactive opening** ([`QuotaGuard::observe`]): each response's quota is a sample;
///   when the reading raises an alarm (red, or exhaustion predicted sooner than the warning
///   threshold), the breaker [trips](Breaker::trip) with [`Reason::QuotaRed`] or
///   [`Reason::Predicted`], open at least until the quota's reset when known. The rest is
///   the breaker's policy: the cooldown and its backoff, the one probe, the probes to
///   close. A probe that works but reports a quota that still alarms re-opens it (the
///   trip comes first, so the probe's success is stale); a 429 during the probe is a trip
///   verdict ([`Verdict::Trip`](crate::Verdict::Trip)), which re-opens it with the next
///   cooldown.
///
/// [`QuotaGuard::call`] does all of it around one call. The guard owns the gauge and is
/// updated with `&mut self` (see [`QuotaGauge`] on sharing it); the breaker it steers may be
/// a `SharedBreaker` in a `static`, still lock-free for every other reader.
///
/// ```
/// use breaker_core::{
///     CallError, Classify, Clock, Duration, ManualClock, Instant, Phase, Policy, Priority, Quota, QuotaGuard,
///     QuotaPolicy, SharedBreaker, Verdict,
/// };
///
/// #[derive(Debug)]
/// enum GitHubError { TooManyRequests }
/// impl Classify for GitHubError {
///     fn verdict(&self) -> Verdict { Verdict::Trip } // 429: no more load
/// }
///
/// // Squad's: 2 m doubling to 30 m, 2 successful rounds to close.
/// static POLICY: Policy = Policy::new(3, Duration::from_mins(2))
///     .with_probes_to_close(2)
///     .with_backoff(2, Duration::from_mins(30));
/// static GITHUB: SharedBreaker = SharedBreaker::new(&POLICY);
///
/// let clock = ManualClock::new(Instant::ZERO);
/// let mut guard = QuotaGuard::<_>::new(&GITHUB, QuotaPolicy::new());
/// let mut remaining = 5_000;
/// let mut request = |cost: u32| {
///     remaining -= cost;
///     (Ok::<_, GitHubError>(()), Some(Quota::new(remaining, 5_000)))
/// };
/// guard.call(&clock, Priority::Normal, || request(100)).unwrap();
/// clock.advance(Duration::from_secs(10));
/// // 4 000 in 10 s: 400/s, 900 left, exhausted in 2.25 s: open before the limit is hit.
/// guard.call(&clock, Priority::High, || request(4_000)).unwrap();
/// assert_eq!(GITHUB.phase(clock.now()), Phase::Open);
/// assert!(matches!(guard.call(&clock, Priority::High, || request(1)), Err(CallError::Refused(_))));
/// ```
#[derive(Debug)]
pub struct QuotaGuard<B, const N: usize = 10> {
    breaker: B,
    gauge: QuotaGauge<N>,
}

impl<B: Steer, const N: usize> QuotaGuard<B, N> {
    /// A guard steering `breaker` with an empty gauge following `policy`.
    pub const fn new(breaker: B, policy: QuotaPolicy) -> QuotaGuard<B, N> {
        QuotaGuard {
            breaker,
            gauge: QuotaGauge::new(policy),
        }
    }

    /// The quota's say on a call of `priority` at `now`: while the breaker is closed, an
    /// amber (or red) light refuses all but [`Priority::High`] calls
    /// ([`QuotaGauge::admit`]). `Ok` does not admit the call: the breaker's gate decides
    /// next. Pure.
    pub fn admit(&self, priority: Priority, now: Instant) -> Result<(), Refused> {
        self.gauge.admit(priority, &self.breaker.state(&now))
    }

    /// Takes a response's quota as a sample at `now`: tells the observer
    /// ([`QuotaObserver::on_quota`]), then, if the reading raises an alarm, trips the
    /// breaker with [`Reason::QuotaRed`] (red) or [`Reason::Predicted`], open at least
    /// until the quota's reset when known (from closed: opens; from half-open: the probe
    /// failed, the backoff advances; while open: the wait restarts; forced open: nothing).
    pub fn observe(&mut self, quota: Quota, now: Instant) -> Reading {
        self.breaker.quota_observer().on_quota(&quota);
        self.gauge_and_trip(quota, now)
    }

    fn gauge_and_trip(&mut self, quota: Quota, now: Instant) -> Reading {
        let reading = self.gauge.observe(Sample::new(now, quota.remaining, quota.total));
        if reading.opens() {
            // Until the reset, when known: a probe before it could only find the quota spent.
            let hold = quota.resets_in.unwrap_or(Duration::ZERO);
            let why = match reading.alarm {
                Some(Alarm::Red) => Reason::QuotaRed,
                _ => Reason::Predicted,
            };
            self.breaker.trip(why, hold, &now);
        }
        reading
    }

    /// Settles a call made under a permit. The observer hears of the response's quota
    /// first (a 429's line shows the quota it reported). A failure (or neutral outcome) is
    /// then recorded, as the call's own testimony, before the quota steers the breaker; a
    /// success only after, so that a quota that alarms trips first and the success is
    /// stale: a round that leaves the quota about to run out is not a successful round.
    fn settle(&mut self, outcome: Outcome, quota: Option<Quota>, now: Instant, ticket: Option<B::Ticket>) {
        let record = |b: &mut B, o: Outcome| {
            if let Some(ticket) = ticket {
                b.report(ticket, o, &now);
            }
        };
        if let Some(q) = &quota {
            self.breaker.quota_observer().on_quota(q);
        }
        if outcome == Outcome::Success {
            if let Some(q) = quota {
                self.gauge_and_trip(q, now);
            }
            record(&mut self.breaker, outcome);
        } else {
            record(&mut self.breaker, outcome);
            if let Some(q) = quota {
                self.gauge_and_trip(q, now);
            }
        }
    }

    /// The breaker's state at `now`. Pure.
    pub fn state(&self, now: Instant) -> State {
        self.breaker.state(&now)
    }

    /// The gauge.
    pub fn gauge(&self) -> &QuotaGauge<N> {
        &self.gauge
    }

    /// The gauge, to clear it or feed it samples that must not steer the breaker.
    pub fn gauge_mut(&mut self) -> &mut QuotaGauge<N> {
        &mut self.gauge
    }

    /// The breaker.
    pub fn breaker(&self) -> &B {
        &self.breaker
    }

    /// The breaker, to call it by hand: take [`QuotaGuard::admit`] first and
    /// [`QuotaGuard::observe`] each response's quota before recording a success.
    pub fn breaker_mut(&mut self) -> &mut B {
        &mut self.breaker
    }

    /// The breaker and the gauge.
    pub fn into_parts(self) -> (B, QuotaGauge<N>) {
        (self.breaker, self.gauge)
    }
}

fn outcome_of<T, E: Classify>(result: &Result<T, E>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(e) => Outcome::Error(e.verdict()),
    }
}

impl<B: Steer, const N: usize> QuotaGuard<B, N> {
    /// Runs `f` if the quota ([`QuotaGuard::admit`]) and then the breaker allow a call of
    /// `priority`, reading `clock` before and after. `f` returns the call's result and the
    /// quota its response reported (`None` if it reported none: a timeout, a dropped
    /// connection). Errors are classified with [`Classify`]; the quota is observed as in
    /// [`QuotaGuard::observe`]. If `f` panics, the breaker's ticket is
    /// [abandoned](CircuitBreaker::abandon): a probe counts as failed.
    pub fn call<T, E: Classify, C: Clock>(
        &mut self,
        clock: &C,
        priority: Priority,
        f: impl FnOnce() -> (Result<T, E>, Option<Quota>),
    ) -> Result<T, CallError<E>> {
        self.admit(priority, clock.now()).map_err(CallError::Refused)?;
        let attempt = self.breaker.attempt(clock).map_err(CallError::Refused)?;
        let (result, quota) = f();
        // Answered below, once the quota had its say: the guard only covers a panic in `f`.
        let ticket = attempt.into_ticket();
        self.settle(outcome_of(&result), quota, clock.now(), ticket);
        result.map_err(CallError::Inner)
    }
}
