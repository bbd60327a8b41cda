//! [`CircuitBreaker`]: the one trait every breaker kind implements and every composite
//! takes.

use crate::layout::Ticket;
use crate::live::PolicyStore;
use crate::{
    Breaker, CallError, Classify, Clock, Counters, Duration, Observer, Outcome, Permit, Policy, Reason, Refused,
    SharedBreaker, State, Verdict,
};

/// A circuit breaker, whatever its storage: the one interface the composites (the retry
/// ladder, the quota guard, the tower layer, ...) take.
///
/// Implemented by:
///
/// | kind | by value | by `&` | by `Arc` | by `&mut` |
/// |---|---|---|---|---|
/// | [`Breaker`] (single owner, windowed or not) | yes | | | yes |
/// | [`SharedBreaker`] (static or owned policy, windowed or not) | yes | yes | yes | yes |
/// | a registry [`Entry`](crate::registry::Entry) (a `#[circuit_breaker]` function's breaker, or one listed with [`register!`](crate::register)) | | yes | | yes |
/// | `breaker_redis::RedisBreaker` (replicas sharing one breaker) | yes | yes | yes | yes |
///
/// and by any `&mut B` where `B` implements it, and by the entries of a table of breakers
/// per key ([`KeyedEntry`](crate::KeyedEntry), and `MapEntry` with `std`). A user's own kind can implement it too:
/// the trait is not sealed.
///
/// A call goes through it in three steps, which [`CircuitBreaker::attempt`] wraps in a
/// guard: [`enter`](CircuitBreaker::enter) (the mutating gate: a [`Refused`] or a
/// ticket), the call, then [`report`](CircuitBreaker::report) with the ticket and the
/// outcome, or [`abandon`](CircuitBreaker::abandon) for a call that never finished (a
/// cancelled future): a probe then counts as failed at once.
///
/// **Clocks.** Every method takes the clock its callers read. Kinds that carry their own
/// clock, a registry entry (the clock its function reads) and a Redis-shared breaker (the
/// time the replicas share), read that one and ignore the argument, so that "now" means
/// the same to a composite as to every other caller of the breaker.
///
/// ```
/// use breaker_core::{Breaker, CircuitBreaker, Clock, Duration, Instant, ManualClock, Outcome, Phase, Policy, SharedBreaker};
///
/// /// Any breaker kind: two strikes in a row.
/// fn strike_twice(breaker: &mut impl CircuitBreaker, clock: &ManualClock) {
///     for _ in 0..2 {
///         let attempt = breaker.attempt(clock).unwrap();
///         attempt.record(Outcome::STRIKE);
///     }
/// }
///
/// static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
/// static SHARED: SharedBreaker = SharedBreaker::new(&POLICY);
/// let clock = ManualClock::new(Instant::ZERO);
///
/// let mut owned = Breaker::new(POLICY);
/// strike_twice(&mut owned, &clock);
/// strike_twice(&mut &SHARED, &clock);
/// assert_eq!(owned.phase(clock.now()), Phase::Open);
/// assert_eq!(SHARED.phase(clock.now()), Phase::Open);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a circuit breaker here",
    label = "not a `CircuitBreaker`",
    note = "the kinds: a `Breaker` by value or `&mut` (one owner: never through `&`), a `SharedBreaker` by value, `&` or `Arc`, a registry `&Entry`, a `RedisBreaker`, a keyed table's entry; where a composite shares its breaker between callers (a router tool, a tower layer), give it a `SharedBreaker`"
)]
pub trait CircuitBreaker {
    /// What the gate hands out for one call, to be given back to
    /// [`report`](CircuitBreaker::report) or [`abandon`](CircuitBreaker::abandon).
    type Ticket: CallTicket;

    /// The mutating gate: may a call go ahead now? Takes the half-open probe when it is
    /// free, counts a refusal.
    fn enter<C: Clock>(&mut self, clock: &C) -> Result<Self::Ticket, Refused>;

    /// Reports the outcome of the call `ticket` let through.
    fn report<C: Clock>(&mut self, ticket: Self::Ticket, outcome: Outcome, clock: &C);

    /// Gives back a ticket whose call never finished (a cancelled future, a panic): a
    /// probe counts as a failed probe at once, so the breaker re-opens instead of
    /// wedging half-open; any other call counts as neutral.
    fn abandon<C: Clock>(&mut self, ticket: Self::Ticket, clock: &C) {
        let outcome = if ticket.is_probe() {
            Outcome::STRIKE
        } else {
            Outcome::NEUTRAL
        };
        self.report(ticket, outcome, clock);
    }

    /// The pure oracle: the state now. Changes nothing.
    fn state<C: Clock>(&self, clock: &C) -> State;

    /// The pure oracle: would a call be allowed now? Never takes the probe.
    #[inline]
    fn would_allow<C: Clock>(&self, clock: &C) -> bool {
        self.state(clock).allows_call()
    }

    /// Opens the breaker now as a trip would, open for at least `hold` (the policy's
    /// cooldown when that is longer): see [`Breaker::trip_for`].
    fn trip<C: Clock>(&mut self, why: Reason, hold: Duration, clock: &C);

    /// The policy it follows now (a copy: a [`LivePolicy`](crate::LivePolicy) may be
    /// reloaded after).
    fn policy(&self) -> Policy;

    /// Its counters (what a kind does not keep reads zero: see [`Counters`]).
    fn counters(&self) -> Counters;

    /// Whether it runs in shadow mode: deciding as a live breaker, refusing nothing but a
    /// forced opening (see [`SharedBreaker`'s rules](SharedBreaker#shadow-mode)). A
    /// composite needs to do nothing about it: the gate lets the would-be refusals
    /// through, and their reports are ignored. `false` for a kind without one (the
    /// default).
    #[inline]
    fn is_shadow(&self) -> bool {
        false
    }

    /// Whether its [`counters`](CircuitBreaker::counters) count every call and outcome
    /// (`calls`, `successes`, `neutrals`), not only failures, refusals, trips and probes:
    /// by default, whether its policy asks for that ([`Policy::counting_calls`], hosted
    /// targets); always for the single-owner [`Breaker`], which counts everything.
    /// Where it is `false`, those three read zero for "not counted", not "none".
    fn counts_calls(&self) -> bool {
        cfg!(not(target_os = "none")) && self.policy().counts_calls()
    }

    /// Whether the breaker's own function already passes every call through this gate (a
    /// `#[circuit_breaker]` function's registry entry): a composite calling that function
    /// must then not enter the gate a second time, or each outcome would count twice and
    /// the composite would hold the function's own probe. `false` for every other kind.
    ///
    /// [`CircuitBreaker::attempt`] honours it (and so `call` and the retry ladder, which
    /// then do not gate at all); [`CircuitBreaker::enter`] does not. The composites that
    /// gate calls they do not make (the tower layer, `Guarded`) take only kinds that are
    /// [`GuardsCalls`], which an entry is not.
    #[inline]
    fn gates_itself(&self) -> bool {
        false
    }

    /// The gate, with the ticket in a guard that reports it: record the outcome with
    /// [`Attempt::record`]; dropped unanswered, the ticket is
    /// [abandoned](CircuitBreaker::abandon).
    ///
    /// A breaker that [gates itself](CircuitBreaker::gates_itself) is not entered: the
    /// attempt holds no ticket and reports nothing, since the function it belongs to does
    /// both when called. A composite over such a breaker must call that function.
    #[inline(always)]
    fn attempt<'b, C: Clock>(&'b mut self, clock: &'b C) -> Result<Attempt<'b, Self, C>, Refused> {
        if self.gates_itself() {
            return Ok(Attempt {
                breaker: self,
                clock,
                ticket: None,
            });
        }
        let ticket = self.enter(clock)?;
        Ok(Attempt {
            breaker: self,
            clock,
            ticket: Some(ticket),
        })
    }

    /// One call through the breaker, its error judged by its [`Classify`] impl.
    #[inline]
    fn call<T, E: Classify, C: Clock>(
        &mut self,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, CallError<E>> {
        self.call_classified(clock, f, E::verdict)
    }

    /// [`CircuitBreaker::call`] with the verdict given by `classify` instead of
    /// [`Classify`]. The provided body goes through [`CircuitBreaker::attempt`]; a kind
    /// with a faster path of its own overrides it (a [`SharedBreaker`]: its
    /// [`call_classified`](SharedBreaker::call_classified), which settles a refusal in
    /// the caller's code).
    #[inline]
    fn call_classified<T, E, C: Clock>(
        &mut self,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        call_through_attempt(self, clock, f, classify)
    }
}

/// [`CircuitBreaker::call_classified`]'s provided body: the gate through
/// [`CircuitBreaker::attempt`], the call, its outcome recorded (a kind that overrides the
/// method for a faster path of its own falls back on this for the rest).
#[inline(always)]
pub(crate) fn call_through_attempt<B: CircuitBreaker + ?Sized, T, E, C: Clock>(
    breaker: &mut B,
    clock: &C,
    f: impl FnOnce() -> Result<T, E>,
    classify: impl FnOnce(&E) -> Verdict,
) -> Result<T, CallError<E>> {
    let attempt = breaker.attempt(clock).map_err(CallError::Refused)?;
    match f() {
        Ok(value) => {
            attempt.record(Outcome::Success);
            Ok(value)
        }
        Err(error) => {
            attempt.record(Outcome::Error(classify(&error)));
            Err(CallError::Inner(error))
        }
    }
}

/// A [`CircuitBreaker`] that can guard calls it does not make itself: every kind but a
/// registry [`Entry`](crate::registry::Entry). The tower layer (feature `tower`) and
/// `Guarded` (feature `embedded-hal`) take one, since they gate whatever their service or
/// peripheral does.
///
/// A `#[circuit_breaker]` function's entry already gates every call of its function: a
/// layer in front of a service calling that function would enter the same gate a second
/// time, count each outcome twice and hold the function's own probe. So an entry is not
/// one, and giving it to the layer or to `Guarded` does not compile. (A breaker listed with
/// [`register!`](crate::register) is at hand as its `static`: give them that.)
///
/// A kind of your own implements it (the impl is empty) when its gate guards whatever
/// call goes through it, as every kind of this crate but the entry does.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot guard calls it does not make itself",
    label = "a registry entry: its `#[circuit_breaker]` function already gates itself",
    note = "a tower layer or `Guarded` gates every call of its service or peripheral; over an annotated function's entry each outcome would count twice and the layer would hold the function's own probe",
    note = "give the layer a breaker of its own (a `static SharedBreaker`, or an `Arc<SharedBreaker<..>>`), or call the annotated function without the layer; for a breaker listed with `register!`, give its `static`"
)]
pub trait GuardsCalls: CircuitBreaker {}

impl<B: GuardsCalls + ?Sized> GuardsCalls for &mut B {}
impl<O: Observer> GuardsCalls for Breaker<O> {}
impl<O: ?Sized + Observer, P: PolicyStore, S: crate::counts::CountStore> GuardsCalls for SharedBreaker<O, P, S> {}
impl<O: ?Sized + Observer, P: PolicyStore, S: crate::counts::CountStore> GuardsCalls for &SharedBreaker<O, P, S> {}
#[cfg(feature = "std")]
impl<O: ?Sized + Observer, P: PolicyStore, S: crate::counts::CountStore> GuardsCalls
    for std::sync::Arc<SharedBreaker<O, P, S>>
{
}

/// A ticket handed out by a [`CircuitBreaker`]'s gate.
pub trait CallTicket {
    /// Whether the call it lets through is the half-open probe.
    fn is_probe(&self) -> bool;
}

impl CallTicket for Permit {
    fn is_probe(&self) -> bool {
        Permit::is_probe(self)
    }
}

/// The ticket of a [`SharedBreaker`] (and of the kinds built on one): which gate decision
/// let the call through, so that an outcome reported after the breaker moved on is
/// ignored. `Copy`: a `'static` future can carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SharedTicket(pub(crate) Ticket);

impl CallTicket for SharedTicket {
    #[inline(always)]
    fn is_probe(&self) -> bool {
        self.0.probe
    }
}

/// A [`CircuitBreaker`]'s ticket in a guard: [`Attempt::record`] reports it; dropped
/// unanswered, it is [abandoned](CircuitBreaker::abandon).
#[must_use = "report the call's outcome; dropping the attempt counts a probe as failed"]
pub struct Attempt<'b, B: CircuitBreaker + ?Sized, C: Clock> {
    breaker: &'b mut B,
    clock: &'b C,
    ticket: Option<B::Ticket>,
}

impl<B: CircuitBreaker + ?Sized, C: Clock> core::fmt::Debug for Attempt<'_, B, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Attempt").field("probe", &self.is_probe()).finish()
    }
}

impl<B: CircuitBreaker + ?Sized, C: Clock> Attempt<'_, B, C> {
    /// Whether this call is the half-open probe.
    #[inline(always)]
    pub fn is_probe(&self) -> bool {
        self.ticket.as_ref().is_some_and(CallTicket::is_probe)
    }

    /// Takes the ticket out of the guard, to report it later by hand
    /// ([`CircuitBreaker::report`]); nothing covers it any more. `None` for a breaker that
    /// gates itself (there is nothing to report).
    pub fn into_ticket(mut self) -> Option<B::Ticket> {
        self.ticket.take()
    }

    /// Reports the call's outcome.
    #[inline(always)]
    pub fn record(self, outcome: Outcome) {
        // Answered: the guard's drop would have nothing left to do, so it is not run (the
        // ticket's "taken" mark then never has to be kept for it, in a register or in
        // memory). The guard holds only references: nothing leaks.
        let mut this = core::mem::ManuallyDrop::new(self);
        if let Some(ticket) = this.ticket.take() {
            let clock = this.clock;
            this.breaker.report(ticket, outcome, clock);
        }
    }
}

impl<B: CircuitBreaker + ?Sized, C: Clock> Drop for Attempt<'_, B, C> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.abandon(ticket, self.clock);
        }
    }
}

impl<B: CircuitBreaker + ?Sized> CircuitBreaker for &mut B {
    type Ticket = B::Ticket;

    #[inline(always)]
    fn enter<C: Clock>(&mut self, clock: &C) -> Result<B::Ticket, Refused> {
        (**self).enter(clock)
    }
    #[inline(always)]
    fn report<C: Clock>(&mut self, ticket: B::Ticket, outcome: Outcome, clock: &C) {
        (**self).report(ticket, outcome, clock)
    }
    #[inline(always)]
    fn abandon<C: Clock>(&mut self, ticket: B::Ticket, clock: &C) {
        (**self).abandon(ticket, clock)
    }
    #[inline]
    fn state<C: Clock>(&self, clock: &C) -> State {
        (**self).state(clock)
    }
    #[inline]
    fn would_allow<C: Clock>(&self, clock: &C) -> bool {
        (**self).would_allow(clock)
    }
    #[inline]
    fn trip<C: Clock>(&mut self, why: Reason, hold: Duration, clock: &C) {
        (**self).trip(why, hold, clock)
    }
    #[inline]
    fn policy(&self) -> Policy {
        (**self).policy()
    }
    #[inline]
    fn counters(&self) -> Counters {
        (**self).counters()
    }
    #[inline]
    fn is_shadow(&self) -> bool {
        (**self).is_shadow()
    }
    fn counts_calls(&self) -> bool {
        (**self).counts_calls()
    }
    #[inline]
    fn gates_itself(&self) -> bool {
        (**self).gates_itself()
    }
    #[inline(always)]
    fn call_classified<T, E, C: Clock>(
        &mut self,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        (**self).call_classified(clock, f, classify)
    }
}

impl<O: Observer> CircuitBreaker for Breaker<O> {
    type Ticket = Permit;

    #[inline]
    fn enter<C: Clock>(&mut self, clock: &C) -> Result<Permit, Refused> {
        self.try_acquire(clock.now())
    }
    #[inline]
    fn report<C: Clock>(&mut self, ticket: Permit, outcome: Outcome, clock: &C) {
        self.record(ticket, outcome, clock.now())
    }
    #[inline]
    fn state<C: Clock>(&self, clock: &C) -> State {
        Breaker::state(self, clock.now())
    }
    #[inline]
    fn would_allow<C: Clock>(&self, clock: &C) -> bool {
        Breaker::would_allow(self, clock.now())
    }
    #[inline]
    fn trip<C: Clock>(&mut self, why: Reason, hold: Duration, clock: &C) {
        self.trip_for(why, hold, clock.now())
    }
    #[inline]
    fn policy(&self) -> Policy {
        *Breaker::policy(self)
    }
    #[inline]
    fn counters(&self) -> Counters {
        Breaker::counters(self)
    }
    #[inline]
    fn is_shadow(&self) -> bool {
        Breaker::is_shadow(self)
    }
    fn counts_calls(&self) -> bool {
        true
    }
}

/// The [`CircuitBreaker`] methods of a shared kind, through `&self`: what every handle to
/// it (by value, `&`, `Arc`) forwards to.
macro_rules! shared_circuit_breaker {
    ($($handle:ty),*) => {$(
        impl<O: ?Sized + Observer, P: PolicyStore, S: crate::counts::CountStore> CircuitBreaker for $handle {
            type Ticket = SharedTicket;

            #[inline(always)]
            fn enter<C: Clock>(&mut self, clock: &C) -> Result<SharedTicket, Refused> {
                self.acquire_ticket(clock).map(SharedTicket)
            }
            #[inline(always)]
            fn report<C: Clock>(&mut self, ticket: SharedTicket, outcome: Outcome, clock: &C) {
                SharedBreaker::report_inline(self, ticket.0, outcome, clock)
            }
            #[inline(always)]
            fn abandon<C: Clock>(&mut self, ticket: SharedTicket, clock: &C) {
                SharedBreaker::abandon(self, ticket.0, clock)
            }
            #[inline]
            fn state<C: Clock>(&self, clock: &C) -> State {
                SharedBreaker::state(self, clock.now())
            }
            #[inline]
            fn would_allow<C: Clock>(&self, clock: &C) -> bool {
                SharedBreaker::would_allow(self, clock.now())
            }
            #[inline]
            fn trip<C: Clock>(&mut self, why: Reason, hold: Duration, clock: &C) {
                self.trip_for(why, hold, clock.now())
            }
            #[inline]
            fn policy(&self) -> Policy {
                *SharedBreaker::policy(self)
            }
            #[inline]
            fn counters(&self) -> Counters {
                SharedBreaker::counters(self)
            }
            #[inline]
            fn is_shadow(&self) -> bool {
                SharedBreaker::is_shadow(self)
            }
            /// Whether the policy counts every call and the storage of counters keeps
            /// those counts (a [`Lean`](crate::counts::Lean) one does not).
            #[inline]
            fn counts_calls(&self) -> bool {
                SharedBreaker::counting(self)
            }
            #[inline(always)]
            fn call_classified<T, E, C: Clock>(
                &mut self,
                clock: &C,
                f: impl FnOnce() -> Result<T, E>,
                classify: impl FnOnce(&E) -> Verdict,
            ) -> Result<T, CallError<E>> {
                SharedBreaker::call_classified(self, clock, f, classify)
            }
        }
    )*};
}

shared_circuit_breaker!(SharedBreaker<O, P, S>, &SharedBreaker<O, P, S>);
#[cfg(feature = "std")]
shared_circuit_breaker!(std::sync::Arc<SharedBreaker<O, P, S>>);
