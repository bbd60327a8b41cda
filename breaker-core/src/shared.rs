//! The breaker to share: `&self` methods, `const fn new`, `Sync`, lives in a `static`.

use core::cell::Cell;
use core::fmt;

use crate::atomic::{AtomicU32, AtomicU64, Ordering};
use crate::machine::{Builder, Core, Events, Ticket, Transitions};
use crate::{
    CallError, Classify, Clock, Counters, Instant, Observer, Outcome, Phase, Policy, Reason, RefusalReason, Refused,
    State, Verdict,
};

/// A circuit breaker shared between threads, interrupt handlers and async tasks.
///
/// Its whole state is one 64-bit word, updated by compare-and-swap, so exactly one caller
/// wins the half-open probe slot and no transition is lost when outcomes race. It behaves
/// exactly as the single-owner [`Breaker`](crate::Breaker) does.
///
/// The closed-state happy path reads the word once, runs the call, reads the word once
/// more, and writes nothing: no lock, no read-modify-write, no clock read. That is why
/// the calls and successes of that path are not counted: [`SharedBreaker::counters`]
/// keeps failures, skips, trips, probes and lease expiries, and reports `calls`,
/// `successes` and `neutrals` as zero.
///
/// ```
/// use breaker_core::{CallError, Duration, ManualClock, Instant, Policy, SharedBreaker};
///
/// static BREAKER: SharedBreaker = SharedBreaker::new(&Policy::new(3, Duration::from_secs(30)));
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
///
/// #[derive(Debug)]
/// struct Nack;
/// impl breaker_core::Classify for Nack {} // no opinion: a strike
///
/// for _ in 0..3 {
///     assert!(matches!(BREAKER.call(&CLOCK, || Err::<(), _>(Nack)), Err(CallError::Inner(Nack))));
/// }
/// match BREAKER.call(&CLOCK, || Ok::<_, Nack>(42)) {
///     Err(CallError::Refused(r)) => assert_eq!(r.to_string(), "circuit breaker open: call refused"),
///     other => panic!("{other:?}"),
/// }
/// ```
///
/// # Observers and the registry
///
/// The observer is the last field and may be unsized: a `&SharedBreaker<O>` coerces to a
/// `&SharedBreaker<dyn Observer + Sync>`, which is how the [`registry`](crate::registry)
/// holds breakers of every observer type. Everything but telling the observer is compiled
/// once, whatever the observer types of a program's breakers.
pub struct SharedBreaker<O: ?Sized + Observer = ()> {
    inner: Inner,
    observer: O,
}

/// The part of a shared breaker that does not depend on its observer.
struct Inner {
    word: AtomicU64,
    /// Failures, skips, trips, probes, lease expiries: indexed like the low bits of
    /// [`Events`], so that counting a step is one loop over its bits.
    counts: [AtomicU32; Events::SHARED_COUNTED],
    policy: &'static Policy,
}

impl<O: ?Sized + Observer> fmt::Debug for SharedBreaker<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBreaker")
            .field("core", &self.inner.load_core())
            .field("counters", &self.counters())
            .field("policy", self.inner.policy)
            .finish()
    }
}

impl SharedBreaker<()> {
    /// A closed breaker following `policy`.
    #[cfg(not(loom))]
    pub const fn new(policy: &'static Policy) -> SharedBreaker<()> {
        SharedBreaker::with_observer(policy, ())
    }

    /// A closed breaker following `policy` (not `const` under loom).
    #[cfg(loom)]
    pub fn new(policy: &'static Policy) -> SharedBreaker<()> {
        SharedBreaker::with_observer(policy, ())
    }
}

macro_rules! shared_breaker_init {
    ($policy:expr, $observer:expr) => {
        SharedBreaker {
            inner: Inner {
                word: AtomicU64::new(Core::INITIAL.pack()),
                counts: [
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                ],
                policy: $policy,
            },
            observer: $observer,
        }
    };
}

impl<O: Observer> SharedBreaker<O> {
    /// A closed breaker that tells `observer` of every transition.
    #[cfg(not(loom))]
    pub const fn with_observer(policy: &'static Policy, observer: O) -> SharedBreaker<O> {
        shared_breaker_init!(policy, observer)
    }

    /// A closed breaker that tells `observer` of every transition (not `const` under loom).
    #[cfg(loom)]
    pub fn with_observer(policy: &'static Policy, observer: O) -> SharedBreaker<O> {
        shared_breaker_init!(policy, observer)
    }
}

impl Inner {
    /// Applies `f` to the state until the compare-and-swap lands, then counts; returns the
    /// step's transitions, for the observer. A step that changes nothing writes nothing.
    /// Every transition goes through this one copy of the loop (out of line, off the hot
    /// paths: firmware stays small); `f` works on a builder on this loop's stack.
    #[inline(never)]
    fn update(&self, f: &dyn Fn(&mut Builder)) -> Transitions {
        let mut w = self.word.load(Ordering::Acquire);
        let step = loop {
            let mut b = Builder::new(Core::unpack(w));
            f(&mut b);
            let next = b.core.pack();
            if next == w {
                break b;
            }
            match self
                .word
                .compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break b,
                Err(actual) => w = actual,
            }
        };
        self.count(&step.events);
        step.transitions
    }

    fn count(&self, e: &Events) {
        let mut bits = e.bits();
        for counter in &self.counts {
            if bits & 1 != 0 {
                bump(counter);
            }
            bits >>= 1;
        }
    }

    /// Counts one refused call.
    #[inline(always)]
    fn count_skip(&self) {
        bump(self.counter(Events::SKIPPED));
    }

    /// The counter of `event`, one of the low [`Events::SHARED_COUNTED`] bits.
    #[inline(always)]
    fn counter(&self, event: u8) -> &AtomicU32 {
        &self.counts[event.trailing_zeros() as usize]
    }

    fn load_core(&self) -> Core {
        Core::unpack(self.word.load(Ordering::Acquire))
    }

    fn state(&self, now: Instant) -> State {
        self.load_core().view(self.policy, now)
    }

    fn counters(&self) -> Counters {
        let get = |event: u8| self.counter(event).load(Ordering::Relaxed);
        Counters {
            failures: get(Events::FAILURE),
            skips: get(Events::SKIPPED),
            trips: get(Events::TRIP),
            probes: get(Events::PROBE_GRANTED),
            lease_expiries: get(Events::LEASE_EXPIRED),
            ..Counters::ZERO
        }
    }

    fn store_core(&self, core: Core, counters: &Counters) {
        self.word.store(core.pack(), Ordering::Release);
        for (event, value) in [
            (Events::FAILURE, counters.failures),
            (Events::SKIPPED, counters.skips),
            (Events::TRIP, counters.trips),
            (Events::PROBE_GRANTED, counters.probes),
            (Events::LEASE_EXPIRED, counters.lease_expiries),
        ] {
            self.counter(event).store(value, Ordering::Relaxed);
        }
    }
}

impl<O: ?Sized + Observer> SharedBreaker<O> {
    /// Runs [`Inner::update`] and tells the observer of each transition.
    pub(crate) fn update(&self, f: &dyn Fn(&mut Builder)) {
        for t in self.inner.update(f).iter().flatten() {
            self.observer.on_transition(t);
        }
    }

    /// The mutating gate: may a call go ahead now? In half-open, a grant takes the one
    /// probe slot. The returned permit is a guard: dropped without an outcome, a probe
    /// counts as failed at that moment and any other call as neutral.
    pub fn try_acquire<'a, C: Clock>(&'a self, clock: &'a C) -> Result<Permit<'a, C, O>, Refused> {
        let w = self.inner.word.load(Ordering::Acquire);
        let ticket = match Core::hot_ticket(w) {
            Some(ticket) => ticket,
            None => self.gate(w, clock)?,
        };
        Ok(Permit::new(self, clock, ticket))
    }

    /// The gate off the hot path: one clock read. Open and cooling down, the refusal is
    /// settled right here, exactly as `Core::acquire` would settle it (a refusal that
    /// changes nothing but the skip count), with no compare-and-swap and no `Step`;
    /// anything else takes the full transition, out of line.
    #[inline(always)]
    fn gate<C: Clock>(&self, w: u64, clock: &C) -> Result<Ticket, Refused> {
        let now = clock.now();
        if let Some(refused) = Core::cooling_refusal(w, self.inner.policy, now) {
            self.inner.count_skip();
            return Err(refused);
        }
        self.acquire_slow(now)
    }

    /// The full gate transition, out of line so that callers' loops keep their registers.
    #[inline(never)]
    fn acquire_slow(&self, now: Instant) -> Result<Ticket, Refused> {
        // Through the one copy of the update loop: the decision of the step that landed is
        // the last one written here, and at least one always is.
        let decision = Cell::new(Err(Refused {
            reason: RefusalReason::Open,
            retry_in: None,
        }));
        self.update(&|b| decision.set(b.acquire(self.inner.policy, now)));
        decision.get()
    }

    /// The pure oracle: would a call be allowed at `now`? Writes nothing, so polling it
    /// never eats the probe; it agrees with [`SharedBreaker::try_acquire`] at every instant.
    pub fn would_allow(&self, now: Instant) -> bool {
        self.state(now).allows_call()
    }

    fn record_ticket(&self, ticket: Ticket, outcome: Outcome, now: Instant) {
        self.update(&|b| b.record(self.inner.policy, ticket, outcome, now))
    }

    /// Runs `f` if the breaker allows it and reports its outcome, classifying its error
    /// with [`Classify`]. The clock is read only when the breaker needs the time: never
    /// on the closed-state path with no strikes pending.
    #[inline]
    pub fn call<T, E: Classify>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, CallError<E>> {
        self.call_classified(clock, f, |e| e.verdict())
    }

    /// [`SharedBreaker::call`] with the verdict given by `classify` instead of [`Classify`].
    #[inline]
    pub fn call_classified<T, E>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        let w = self.inner.word.load(Ordering::Acquire);
        if let Some(ticket) = Core::hot_ticket(w) {
            // Closed, nothing pending: no permit guard is needed, since a call that never
            // answers in Closed is neutral, which changes nothing here.
            return match f() {
                Ok(v) => {
                    if self.inner.word.load(Ordering::Acquire) & Core::HOT_MASK != 0 {
                        self.record_ticket(ticket, Outcome::Success, clock.now());
                    }
                    Ok(v)
                }
                Err(e) => {
                    self.record_ticket(ticket, Outcome::Error(classify(&e)), clock.now());
                    Err(CallError::Inner(e))
                }
            };
        }
        let ticket = self.gate(w, clock).map_err(CallError::Refused)?;
        self.call_slow(clock, ticket, f, classify)
    }

    // Cold: keeps the closed-state loop of a caller one straight block.
    #[cold]
    #[inline(never)]
    fn call_slow<T, E, C: Clock>(
        &self,
        clock: &C,
        ticket: Ticket,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        let permit = Permit::new(self, clock, ticket);
        match f() {
            Ok(v) => {
                permit.record(Outcome::Success);
                Ok(v)
            }
            Err(e) => {
                permit.record(Outcome::Error(classify(&e)));
                Err(CallError::Inner(e))
            }
        }
    }

    /// Opens at `now` as a trip would, with no call involved (see [`Breaker::trip`](crate::Breaker::trip)
    /// for the rules). Lock-free, like every transition.
    pub fn trip(&self, why: Reason, now: Instant) {
        self.update(&|b| b.trip(self.inner.policy, why, now))
    }

    /// Opens until [`SharedBreaker::reset`], whatever the cooldown says.
    pub fn force_open(&self, now: Instant) {
        self.update(&|b| b.force_open(now))
    }

    /// Closes, with strikes, probe streak and backoff zeroed. Counters are kept.
    pub fn reset(&self, now: Instant) {
        self.update(&|b| b.reset(now))
    }

    /// The state at `now` (a lapsed probe lease shows as open). Pure.
    pub fn state(&self, now: Instant) -> State {
        self.inner.state(now)
    }

    /// The phase at `now`. Pure.
    pub fn phase(&self, now: Instant) -> Phase {
        self.state(now).phase()
    }

    /// The counters this breaker keeps (see the type's documentation for the three it
    /// reports as zero).
    pub fn counters(&self) -> Counters {
        self.inner.counters()
    }

    /// The policy.
    pub fn policy(&self) -> &'static Policy {
        self.inner.policy
    }

    /// The observer.
    pub fn observer(&self) -> &O {
        &self.observer
    }

    pub(crate) fn load_core(&self) -> Core {
        self.inner.load_core()
    }

    /// The state word itself, for [`crate::word`]'s reads and compare-and-swaps.
    #[inline(always)]
    pub(crate) fn word_cell(&self) -> &AtomicU64 {
        &self.inner.word
    }

    /// Counts a step's events, as the update loop does.
    pub(crate) fn count_events(&self, events: &Events) {
        self.inner.count(events)
    }

    pub(crate) fn store_core(&self, core: Core, counters: &Counters) {
        self.inner.store_core(core, counters)
    }
}

/// Adds one to a counter with one `fetch_add` (a `lock xadd` on x86-64) instead of a
/// compare-and-swap loop. The caller whose add wrapped the counter puts it back at
/// `u32::MAX`, so it saturates; a reader may glimpse the wrapped value for that moment.
#[inline(always)]
fn bump(counter: &AtomicU32) {
    if counter.fetch_add(1, Ordering::Relaxed) == u32::MAX {
        counter.store(u32::MAX, Ordering::Relaxed);
    }
}

/// Leave to make one call through a [`SharedBreaker`]: a guard. Report the outcome with
/// [`Permit::record`] (or [`Permit::success`] / [`Permit::failure`]). Dropped unanswered
/// (a cancelled future, a panic, an early return), a probe permit counts as a failed probe
/// at that moment, so the breaker re-opens instead of wedging in half-open; any other
/// permit counts as neutral.
#[must_use = "report the call's outcome; dropping the permit counts a probe as failed"]
pub struct Permit<'a, C: Clock, O: ?Sized + Observer = ()> {
    breaker: &'a SharedBreaker<O>,
    clock: &'a C,
    ticket: Ticket,
    answered: bool,
}

impl<C: Clock, O: ?Sized + Observer> fmt::Debug for Permit<'_, C, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("probe", &self.ticket.probe)
            .field("gen", &self.ticket.gen)
            .finish()
    }
}

impl<'a, C: Clock, O: ?Sized + Observer> Permit<'a, C, O> {
    fn new(breaker: &'a SharedBreaker<O>, clock: &'a C, ticket: Ticket) -> Self {
        Permit {
            breaker,
            clock,
            ticket,
            answered: false,
        }
    }

    /// Whether this call is the half-open probe.
    pub fn is_probe(&self) -> bool {
        self.ticket.probe
    }

    /// Whether the breaker has moved on since this permit was granted, so its outcome
    /// will be ignored (except a failure while open, which restarts the wait).
    pub fn is_stale(&self) -> bool {
        !self
            .breaker
            .load_core()
            .is_fresh(self.breaker.policy(), self.ticket, self.clock.now())
    }

    /// Reports the call's outcome.
    pub fn record(mut self, outcome: Outcome) {
        self.answered = true;
        // A success in Closed with nothing pending changes nothing: skip the clock read.
        let hot = outcome == Outcome::Success
            && !self.ticket.probe
            && self.breaker.inner.word.load(Ordering::Acquire) & Core::HOT_MASK == 0;
        if !hot {
            self.breaker.record_ticket(self.ticket, outcome, self.clock.now());
        }
    }

    /// [`Permit::record`] with a closed-state success inline: a load and a test in the
    /// caller's code, for the retry ladder's loop; everything else goes through `record`.
    /// (`record` itself stays out of line: firmware that does not climb a ladder keeps its
    /// size.)
    #[inline]
    pub(crate) fn record_inline(self, outcome: Outcome) {
        let hot = outcome == Outcome::Success
            && !self.ticket.probe
            && self.breaker.inner.word.load(Ordering::Acquire) & Core::HOT_MASK == 0;
        if hot {
            // Answered, with nothing to write; and the drop of a permit that is not the
            // probe does nothing either.
            core::mem::forget(self);
        } else {
            self.record(outcome);
        }
    }

    /// Reports success.
    pub fn success(self) {
        self.record(Outcome::Success)
    }

    /// Reports a failed (or neutral) call with its verdict.
    pub fn failure(self, verdict: Verdict) {
        self.record(Outcome::Error(verdict))
    }
}

impl<C: Clock, O: ?Sized + Observer> Drop for Permit<'_, C, O> {
    fn drop(&mut self) {
        // An unanswered non-probe call is neutral, which changes nothing this breaker keeps.
        if !self.answered && self.ticket.probe {
            self.breaker
                .record_ticket(self.ticket, Outcome::STRIKE, self.clock.now());
        }
    }
}
