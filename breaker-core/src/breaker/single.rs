//! The single-owner breaker: `&mut self`, no atomics, the reference semantics.

use core::fmt;

use crate::layout::{Core, Ticket};
use crate::machine::{Events, Step};
use crate::window::{self, Pushed, WindowStats, WindowStore, Windowed};
use crate::{Classify, Clock, Instant, Outcome, Phase, Policy, PolicyError, Reason, RefusalReason, State, Transition};

/// Saturating event counters. None of them ever wraps: each stops at `u32::MAX`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counters {
    /// Calls let through (admitted), probes included.
    pub calls: u32,
    /// Outcomes reported as success.
    pub successes: u32,
    /// Outcomes reported as a strike or a trip verdict.
    pub failures: u32,
    /// Outcomes reported as neutral.
    pub neutrals: u32,
    /// Calls refused.
    pub skips: u32,
    /// Times the breaker opened (by strikes, a trip verdict, a failed or lapsed probe; not
    /// `force_open`).
    pub trips: u32,
    /// Probe slots granted.
    pub probes: u32,
    /// Probes whose lease expired unanswered.
    pub lease_expiries: u32,
    /// Probes that succeeded: each success of a probe, whether it closed the breaker or
    /// counted toward [`Policy::probes_to_close`] (or a half-open failure rate,
    /// [`Policy::with_half_open_rate`]).
    pub probe_successes: u32,
    /// Probes that failed: a strike or a trip verdict (re-opening the breaker, or, with
    /// [`Policy::patient_probation`], costing the streak, or under a half-open failure
    /// rate counted toward it), a probe's permit dropped unanswered. A lapsed lease is counted in `lease_expiries` instead.
    pub probe_failures: u32,
    /// Probes answered neutral: the probe slot freed, nothing learned.
    pub probe_neutrals: u32,
    /// Changes of phase, by kind, forced ones included.
    pub transitions: TransitionCounts,
}

/// Changes of phase counted by kind: every transition an observer is told of, forced or
/// not (a [`Transition`]'s `from` and `to`). Saturating, like [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TransitionCounts {
    /// Closed to open: a trip, or `force_open`.
    pub closed_to_open: u32,
    /// Open to half-open: the cooldown elapsed and a caller became the probe.
    pub open_to_half_open: u32,
    /// Half-open to closed: enough probes succeeded, or `reset`.
    pub half_open_to_closed: u32,
    /// Half-open to open: a failed or lapsed probe, or `force_open`.
    pub half_open_to_open: u32,
    /// Open to closed: `reset`.
    pub open_to_closed: u32,
}

impl TransitionCounts {
    /// All zero.
    pub const ZERO: TransitionCounts = TransitionCounts {
        closed_to_open: 0,
        open_to_half_open: 0,
        half_open_to_closed: 0,
        half_open_to_open: 0,
        open_to_closed: 0,
    };

    /// Every kind of change with its count, in the order of a breaker's life (closed to
    /// open first). A change that no breaker makes (closed to half-open) is not among them.
    ///
    /// ```
    /// use breaker_core::{Breaker, Duration, Instant, Outcome, Phase, Policy};
    ///
    /// let mut b = Breaker::new(Policy::new(1, Duration::from_secs(1)));
    /// let permit = b.try_acquire(Instant::ZERO).unwrap();
    /// b.record(permit, Outcome::STRIKE, Instant::ZERO);
    /// let changes = b.counters().transitions;
    /// assert_eq!(changes.all()[0], (Phase::Closed, Phase::Open, 1));
    /// assert_eq!(changes.get(Phase::Open, Phase::HalfOpen), 0);
    /// ```
    pub const fn all(&self) -> [(Phase, Phase, u32); 5] {
        [
            (Phase::Closed, Phase::Open, self.closed_to_open),
            (Phase::Open, Phase::HalfOpen, self.open_to_half_open),
            (Phase::HalfOpen, Phase::Closed, self.half_open_to_closed),
            (Phase::HalfOpen, Phase::Open, self.half_open_to_open),
            (Phase::Open, Phase::Closed, self.open_to_closed),
        ]
    }

    /// The count of changes from `from` to `to` (0 for a change no breaker makes).
    pub const fn get(&self, from: Phase, to: Phase) -> u32 {
        match (from, to) {
            (Phase::Closed, Phase::Open) => self.closed_to_open,
            (Phase::Open, Phase::HalfOpen) => self.open_to_half_open,
            (Phase::HalfOpen, Phase::Closed) => self.half_open_to_closed,
            (Phase::HalfOpen, Phase::Open) => self.half_open_to_open,
            (Phase::Open, Phase::Closed) => self.open_to_closed,
            _ => 0,
        }
    }
}

impl Counters {
    /// All zero.
    pub const ZERO: Counters = Counters {
        calls: 0,
        successes: 0,
        failures: 0,
        neutrals: 0,
        skips: 0,
        trips: 0,
        probes: 0,
        lease_expiries: 0,
        probe_successes: 0,
        probe_failures: 0,
        probe_neutrals: 0,
        transitions: TransitionCounts::ZERO,
    };

    /// Each counter with the event it counts, in the order of the events' bits: the
    /// first [`Events::SHARED_COUNTED`] are a shared breaker's counter array.
    pub(crate) fn by_event(&mut self) -> [(u16, &mut u32); 16] {
        [
            (Events::FAILURE, &mut self.failures),
            (Events::SKIPPED, &mut self.skips),
            (Events::TRIP, &mut self.trips),
            (Events::PROBE_GRANTED, &mut self.probes),
            (Events::LEASE_EXPIRED, &mut self.lease_expiries),
            (Events::PROBE_SUCCEEDED, &mut self.probe_successes),
            (Events::PROBE_FAILED, &mut self.probe_failures),
            (Events::PROBE_NEUTRAL, &mut self.probe_neutrals),
            (Events::CLOSED_TO_OPEN, &mut self.transitions.closed_to_open),
            (Events::OPEN_TO_HALF_OPEN, &mut self.transitions.open_to_half_open),
            (Events::HALF_OPEN_TO_CLOSED, &mut self.transitions.half_open_to_closed),
            (Events::HALF_OPEN_TO_OPEN, &mut self.transitions.half_open_to_open),
            (Events::OPEN_TO_CLOSED, &mut self.transitions.open_to_closed),
            (Events::ADMITTED, &mut self.calls),
            (Events::SUCCESS, &mut self.successes),
            (Events::NEUTRAL, &mut self.neutrals),
        ]
    }

    pub(crate) fn apply(&mut self, e: &Events) {
        for (event, counter) in self.by_event() {
            *counter = counter.saturating_add(u32::from(e.has(event)));
        }
    }
}

/// Told of every phase change. `()` is the observer that does nothing and costs nothing.
///
/// ```
/// use breaker_core::{Breaker, Duration, Instant, Observer, Outcome, Policy, Transition};
/// use std::cell::RefCell;
///
/// struct Log(RefCell<Vec<Transition>>);
/// impl Observer for Log {
///     fn on_transition(&self, t: &Transition) {
///         self.0.borrow_mut().push(*t);
///     }
/// }
///
/// let mut b = Breaker::with_observer(Policy::new(1, Duration::from_secs(1)), Log(RefCell::new(vec![])));
/// let p = b.try_acquire(Instant::ZERO).unwrap();
/// b.record(p, Outcome::STRIKE, Instant::ZERO);
/// assert_eq!(b.observer().0.borrow().len(), 1);
/// ```
pub trait Observer {
    /// Called after the transition took effect.
    fn on_transition(&self, transition: &Transition);

    /// The window of samples a breaker with a windowed policy trips on: `None` (the
    /// default) for every observer but [`Windowed`], which pairs a window with an
    /// observer (see [`crate::window`]). A breaker asks for it at compile time, in effect:
    /// with the default, its windowed code paths are not even compiled in.
    #[inline(always)]
    fn window(&self) -> Option<&dyn WindowStore> {
        None
    }

    /// The transitions this observer keeps: `None` (the default) for every observer but
    /// [`History`](crate::History) (and a [`Windowed`] around one), which keeps the last
    /// few in a fixed ring (see [`crate::history`]). The registry reads it through
    /// `dyn Observer`, for every [`Report`](crate::registry::Report).
    #[inline(always)]
    fn history(&self) -> Option<crate::Recent<'_>> {
        None
    }
}

impl Observer for () {
    #[inline(always)]
    fn on_transition(&self, _: &Transition) {}
}

impl Observer for fn(&Transition) {
    fn on_transition(&self, transition: &Transition) {
        self(transition)
    }
}

/// A call the breaker refused: nothing was sent, nothing billed, no timeout waited out.
///
/// It prints as `circuit breaker open: call refused` (with `{:#}`, why and how long is
/// left: `circuit breaker open: call refused (cooling down, retry in 12s)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Refused {
    /// Why.
    pub reason: RefusalReason,
    /// When open and cooling down: the wait left before a call may become the probe.
    pub retry_in: Option<crate::Duration>,
}

impl core::error::Error for Refused {}

/// The result of a guarded call: refused, or the call's own error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CallError<E> {
    /// The breaker refused; the call was not made.
    Refused(Refused),
    /// The call was made and failed.
    Inner(E),
}

impl<E> CallError<E> {
    /// The call's own error, if it was made.
    pub fn into_inner(self) -> Option<E> {
        match self {
            CallError::Inner(e) => Some(e),
            CallError::Refused(_) => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Refused(r) => r.fmt(f),
            CallError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for CallError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            CallError::Refused(r) => Some(r),
            CallError::Inner(e) => Some(e),
        }
    }
}

/// Leave to make one call, handed out by [`Breaker::try_acquire`]. Report the call's
/// outcome with [`Breaker::record`]; a permit never reported is covered by the probe lease.
#[derive(Debug, PartialEq, Eq, Hash)]
#[must_use = "report the call's outcome with `record`"]
pub struct Permit {
    ticket: Ticket,
}

impl Permit {
    /// Whether this call is the half-open probe.
    pub fn is_probe(&self) -> bool {
        self.ticket.probe
    }
}

/// A circuit breaker owned by one caller (`&mut self`): the reference state machine.
///
/// For a breaker shared between threads, interrupts or tasks, and kept in a `static`, use
/// [`SharedBreaker`](crate::SharedBreaker): it behaves identically.
///
/// ```
/// use breaker_core::{Breaker, Duration, Instant, Outcome, Phase, Policy};
///
/// let mut b = Breaker::new(Policy::new(2, Duration::from_secs(30)));
/// let t0 = Instant::ZERO;
/// for _ in 0..2 {
///     let permit = b.try_acquire(t0).unwrap();
///     b.record(permit, Outcome::STRIKE, t0);
/// }
/// assert_eq!(b.phase(t0), Phase::Open);
/// assert!(b.try_acquire(t0).is_err());
/// let later = t0.wrapping_add(Duration::from_secs(30));
/// assert!(b.would_allow(later)); // the oracle does not consume the probe...
/// let probe = b.try_acquire(later).unwrap(); // ...the gate does
/// assert!(probe.is_probe());
/// b.record(probe, Outcome::Success, later);
/// assert_eq!(b.phase(later), Phase::Closed);
/// ```
#[derive(Debug)]
pub struct Breaker<O: Observer = ()> {
    pub(crate) policy: Policy,
    pub(crate) core: Core,
    /// The counters, but for the calls [`Breaker::call`] admitted on its hot path that
    /// succeeded, which are in `hot`.
    counters: Counters,
    /// Calls admitted on [`Breaker::call`]'s hot path (closed, nothing pending) that
    /// succeeded: each one call and one success, counted with one add (64 bits, it never
    /// wraps) and added to both in [`Breaker::counters`].
    hot: u64,
    observer: O,
}

impl Breaker<()> {
    /// A closed breaker with no observer.
    ///
    /// # Panics
    /// If `policy` is windowed (use [`Breaker::windowed`]); a compile error in a `const`.
    pub const fn new(policy: Policy) -> Breaker<()> {
        Breaker::with_observer(policy, ())
    }
}

impl<W: WindowStore + window::sealed::Kind, O: Observer> Breaker<Windowed<W, O>> {
    /// A closed breaker with a windowed policy ([`Policy::failure_rate`]): `windowed` holds
    /// the window (`Windowed::calls(observer)` for a count window, `Windowed::time(observer)`
    /// for a time window) and the observer told of every transition.
    ///
    /// ```
    /// use breaker_core::{Breaker, Duration, Policy, WindowSize, Windowed};
    ///
    /// let policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(30));
    /// let b = Breaker::windowed(policy, Windowed::calls(()));
    /// # let _ = b;
    /// ```
    ///
    /// # Panics
    /// If `policy` is not windowed, or its window is of the other kind or more than the
    /// storage holds ([`PolicyError::NeedsCallRing`], [`PolicyError::BucketsOutOfRange`]; a compile error in
    /// a `const`).
    pub const fn windowed(policy: Policy, windowed: Windowed<W, O>) -> Breaker<Windowed<W, O>> {
        window::check_kind::<W>(policy.rule());
        Breaker::build(policy, windowed)
    }
}

impl<O: Observer> Breaker<O> {
    /// A closed breaker that tells `observer` of every transition.
    ///
    /// # Panics
    /// If `policy` is windowed (use [`Breaker::windowed`]); a compile error in a `const`.
    pub const fn with_observer(policy: Policy, observer: O) -> Breaker<O> {
        window::check_no_window(policy.rule());
        Breaker::build(policy, observer)
    }

    /// A closed breaker for a policy of either kind, known only at run time, or an error
    /// if the policy is windowed and `observer` holds no window of its kind
    /// ([`PolicyError::NeedsWindow`], [`PolicyError::NeedsCountWindow`],
    /// [`PolicyError::NeedsTimeWindow`]); a policy of consecutive strikes runs beside any
    /// observer. See [`SharedBreaker::try_with_policy_and_observer`](crate::SharedBreaker::try_with_policy_and_observer).
    pub fn try_with_observer(policy: Policy, observer: O) -> Result<Breaker<O>, PolicyError> {
        window::fits_storage(policy.rule(), observer.window().map(|w| w.shape()))?;
        Ok(Breaker::build(policy, observer))
    }

    const fn build(policy: Policy, observer: O) -> Breaker<O> {
        Breaker {
            policy,
            core: Core::INITIAL,
            counters: Counters::ZERO,
            hot: 0,
            observer,
        }
    }

    fn apply<D>(&mut self, step: Step<D>) -> D {
        if let Some(w) = window::of(&self.observer, self.policy.rule()) {
            if window::enters_closed(&step.transitions) {
                w.clear(step.next.gen());
            }
        }
        self.core = step.next;
        self.counters.apply(&step.events);
        for t in step.transitions() {
            self.observer.on_transition(t);
        }
        step.decision
    }

    /// The mutating gate: may a call go ahead at `now`? In half-open, a grant takes the
    /// one probe slot.
    pub fn try_acquire(&mut self, now: Instant) -> Result<Permit, Refused> {
        let step = self.core.acquire(&self.policy, now);
        self.apply(step).map(|ticket| Permit { ticket })
    }

    /// The pure oracle: would a call be allowed at `now`? Changes nothing, so a dashboard
    /// polling it never eats the probe. It agrees with [`Breaker::try_acquire`] at every
    /// instant.
    ///
    /// In shadow mode ([`Breaker::set_shadow`]) every call is let through but a forced
    /// opening's.
    pub fn would_allow(&self, now: Instant) -> bool {
        self.core.admits(&self.policy, now)
    }

    /// Reports the outcome of the call made under `permit`.
    pub fn record(&mut self, permit: Permit, outcome: Outcome, now: Instant) {
        self.record_after(permit, outcome, None, now)
    }

    /// [`Breaker::record`] for a call that started at `started`: with a windowed policy's
    /// slow-call rule ([`Policy::with_slow_calls`]), a success that took longer than its
    /// duration counts as slow. ([`Breaker::record`] counts every success as not slow;
    /// [`Breaker::call`] times its calls itself.)
    pub fn record_timed(&mut self, permit: Permit, outcome: Outcome, started: Instant, now: Instant) {
        self.record_after(permit, outcome, Some(now.since(started)), now)
    }

    fn record_after(&mut self, permit: Permit, outcome: Outcome, elapsed: Option<crate::Duration>, now: Instant) {
        let ticket = permit.ticket;
        let step = self.core.record(&self.policy, ticket, outcome, now);
        self.apply(step);
        // A windowed policy: a closed call's outcome is a sample, and the window is judged.
        let rule = self.policy.rule();
        let pushed = match (window::of(&self.observer, rule), window::sample(rule, outcome, elapsed)) {
            (Some(w), Some(sample)) if !ticket.probe && !ticket.untracked() => w.push(rule, ticket.gen, sample, now),
            _ => Pushed::Unchanged,
        };
        if let Pushed::Changed(tally) = pushed {
            if crate::machine::verdict(rule, &tally).is_some() {
                let step = self.core.judge(&self.policy, ticket.gen, &tally, now);
                self.apply(step);
            }
        }
    }

    /// Whether `permit` was granted before the breaker's last transition, so its outcome
    /// will be ignored (except a failure while open, which restarts the wait).
    pub fn is_stale(&self, permit: &Permit, now: Instant) -> bool {
        !self.core.is_fresh(&self.policy, permit.ticket, now)
    }

    /// Runs `f` if the breaker allows it and reports its outcome, classifying its error with
    /// [`Classify`]. The clock is read only when the breaker needs the time: never for a
    /// success in Closed with no strikes pending (a policy of consecutive strikes), once
    /// for a refusal while open.
    #[inline]
    pub fn call<T, E: Classify>(
        &mut self,
        clock: &impl Clock,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, CallError<E>> {
        if window::of(&self.observer, self.policy.rule()).is_none() {
            let w = self.core.pack();
            if Core::is_hot(w) {
                // Closed with nothing pending: the gate admits and a success changes
                // nothing but the two counters it bumps, kept as one count (see
                // `Breaker::counters`).
                return match f() {
                    Ok(v) => {
                        self.hot = self.hot.wrapping_add(1);
                        Ok(v)
                    }
                    Err(e) => {
                        self.hot_failure(w, e.verdict(), clock);
                        Err(CallError::Inner(e))
                    }
                };
            }
            // Open and cooling down, or forced open: the refusal `try_acquire` would give,
            // which changes nothing but the skip count.
            if w & Core::COOLING_MASK == Core::COOLING_BITS {
                let now = clock.now();
                if let Some(refused) = Core::cooling_refusal(w, &self.policy, now) {
                    self.counters.skips = self.counters.skips.saturating_add(1);
                    return Err(CallError::Refused(refused));
                }
            } else if let Some(refused) = Core::forced_refusal(w) {
                self.counters.skips = self.counters.skips.saturating_add(1);
                return Err(CallError::Refused(refused));
            }
        }
        self.call_timed(clock, f)
    }

    /// The failure of a call [`Breaker::call`] admitted on its hot path (in word `w`):
    /// counted as admitted, then reported. Out of line, off the hot path.
    #[cold]
    #[inline(never)]
    fn hot_failure(&mut self, w: u64, verdict: crate::Verdict, clock: &impl Clock) {
        self.counters.calls = self.counters.calls.saturating_add(1);
        let permit = Permit {
            ticket: Core::closed_ticket(w),
        };
        self.record(permit, Outcome::Error(verdict), clock.now());
    }

    /// [`Breaker::call`] through the gate, timed (a windowed policy's slow-call rule): a
    /// probe, a call with strikes pending, a windowed breaker's call.
    #[inline(never)]
    fn call_timed<T, E: Classify>(
        &mut self,
        clock: &impl Clock,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, CallError<E>> {
        let started = clock.now();
        let permit = self.try_acquire(started).map_err(CallError::Refused)?;
        let result = f();
        let outcome = match &result {
            Ok(_) => Outcome::Success,
            Err(e) => Outcome::Error(e.verdict()),
        };
        self.record_timed(permit, outcome, started, clock.now());
        result.map_err(CallError::Inner)
    }

    /// Opens the breaker at `now` as a trip would, with no call involved: a prediction (a
    /// quota gauge running low, a health check) says the upstream is about to fail. The
    /// usual rules follow: the cooldown (at the current backoff step), one probe, probes to
    /// close. From half-open it counts as a failed probe (the backoff advances); while open
    /// the wait restarts from `now`, as fresh bad news does; forced open is left alone.
    /// Unlike [`Breaker::force_open`] it recovers by itself. `why` is the reason
    /// transitions report, usually [`Reason::Predicted`].
    ///
    /// ```
    /// use breaker_core::{Breaker, Duration, Instant, Phase, Policy, Reason};
    ///
    /// let mut b = Breaker::new(Policy::new(3, Duration::from_secs(120)));
    /// b.trip(Reason::Predicted, Instant::ZERO);
    /// assert_eq!(b.phase(Instant::ZERO), Phase::Open);
    /// assert!(b.try_acquire(Instant::ZERO.wrapping_add(Duration::from_secs(120))).unwrap().is_probe());
    /// ```
    pub fn trip(&mut self, why: Reason, now: Instant) {
        self.trip_for(why, crate::Duration::ZERO, now)
    }

    /// [`Breaker::trip`], staying open at least `hold` (a cooldown shorter than `hold` is
    /// stretched to it, as a trip verdict's [`Verdict::TripFor`](crate::Verdict::TripFor)
    /// hold does): a quota known to reset in `hold`, say. While open, the wait restarts
    /// and lasts at least `hold` from `now`; it never shortens a longer wait.
    ///
    /// ```
    /// use breaker_core::{Breaker, Duration, Instant, Phase, Policy, Reason};
    ///
    /// let mut b = Breaker::new(Policy::new(3, Duration::from_secs(10)));
    /// b.trip_for(Reason::Predicted, Duration::from_secs(60), Instant::ZERO);
    /// assert_eq!(b.phase(Instant::ZERO.wrapping_add(Duration::from_secs(59))), Phase::Open);
    /// assert!(b.try_acquire(Instant::ZERO.wrapping_add(Duration::from_secs(60))).unwrap().is_probe());
    /// ```
    pub fn trip_for(&mut self, why: Reason, hold: crate::Duration, now: Instant) {
        let step = self.core.trip(&self.policy, why, now, hold);
        self.apply(step)
    }

    /// Opens the breaker until [`Breaker::reset`], whatever the cooldown says.
    pub fn force_open(&mut self, now: Instant) {
        let step = self.core.force_open(now);
        self.apply(step)
    }

    /// Closes the breaker with strikes, probe streak and backoff zeroed. Counters are kept.
    pub fn reset(&mut self, now: Instant) {
        let step = self.core.reset(now);
        self.apply(step)
    }

    /// Switches shadow mode on or off, keeping the state and the counters: the breaker
    /// decides as a live one and refuses nothing but a forced opening. A call it would
    /// refuse is counted as a skip and let through untracked (its outcome changes nothing,
    /// counts nothing). The rules are [`SharedBreaker`'s](crate::SharedBreaker#shadow-mode).
    ///
    /// ```
    /// use breaker_core::{Breaker, Duration, Instant, Outcome, Phase, Policy};
    ///
    /// let mut b = Breaker::new(Policy::new(1, Duration::from_secs(30)));
    /// b.set_shadow(true);
    /// let t0 = Instant::ZERO;
    /// let permit = b.try_acquire(t0).unwrap();
    /// b.record(permit, Outcome::STRIKE, t0); // trips, as a live breaker would
    /// let passed = b.try_acquire(t0).unwrap(); // a live one would refuse this call
    /// b.record(passed, Outcome::STRIKE, t0); // untracked: no failure, no new cooldown
    /// assert_eq!((b.phase(t0), b.counters().failures, b.counters().skips), (Phase::Open, 1, 1));
    /// b.set_shadow(false);
    /// assert!(b.try_acquire(t0).is_err());
    /// ```
    pub fn set_shadow(&mut self, on: bool) {
        self.core.set_shadow(on);
    }

    /// Whether the breaker runs in shadow mode ([`Breaker::set_shadow`]).
    pub fn is_shadow(&self) -> bool {
        self.core.shadow()
    }

    /// The state at `now` (a lapsed probe lease shows as open). Pure.
    pub fn state(&self, now: Instant) -> State {
        self.core.view(&self.policy, now)
    }

    /// The phase at `now`. Pure.
    pub fn phase(&self, now: Instant) -> Phase {
        self.state(now).phase()
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        let hot = u32::try_from(self.hot).unwrap_or(u32::MAX);
        Counters {
            calls: self.counters.calls.saturating_add(hot),
            successes: self.counters.successes.saturating_add(hot),
            ..self.counters
        }
    }

    /// Sets the counters (a snapshot's restore).
    pub(crate) fn set_counters(&mut self, counters: Counters) {
        self.counters = counters;
        self.hot = 0;
    }

    /// What a windowed breaker's window holds at `now` (empty unless closed: the window is
    /// cleared on every transition); `None` for a policy of consecutive strikes. Pure.
    pub fn window_stats(&self, now: Instant) -> Option<WindowStats> {
        window::stats(&self.observer, &self.policy, self.core.settled(&self.policy, now), now)
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The observer.
    pub fn observer(&self) -> &O {
        &self.observer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_by_event_follow_the_events_bits() {
        let mut c = Counters::ZERO;
        for (i, (event, value)) in c.by_event().into_iter().enumerate() {
            assert_eq!(event, 1 << i, "counter {i}");
            *value = i as u32 + 1;
        }
        // Every field is in the list once: each got its own number.
        let mut seen: [u32; 16] = [0; 16];
        for (_, value) in c.by_event() {
            seen[*value as usize - 1] += 1;
        }
        assert_eq!(seen, [1; 16]);
        assert_eq!((c.failures, c.skips, c.calls, c.neutrals), (1, 2, 14, 16));
    }
}
