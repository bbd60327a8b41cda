//! A shared breaker's in-flight slots ([`InFlight`](crate::InFlight)): the gate that
//! counts a call slow while it is still out, and the permits that hold a slot. Only a
//! breaker whose window storage has slots reaches this code; see [`crate::window`],
//! "Slow calls caught while still out", for the rules.

use super::{Permit, SharedBreaker};
use crate::counts::CountStore;
use crate::layout::Ticket;
use crate::live::PolicyStore;
use crate::window::{self, Pushed, Sample, WindowStore, NO_SLOT};
use crate::{CallError, Clock, Instant, Observer, Outcome, Phase, Refused, Verdict};

impl<O: ?Sized + Observer, P: PolicyStore, S: CountStore> SharedBreaker<O, P, S> {
    /// The window, if it has in-flight slots to watch (known at compile time from the
    /// observer's type, as the window itself is).
    #[inline(always)]
    pub(super) fn watched(&self) -> Option<&dyn WindowStore> {
        let w = window::of_store(&self.observer, &self.inner.policy)?;
        (!w.slots().is_empty()).then_some(w)
    }

    /// The gate's scan at `now`: every slot of the closed generation whose call has been
    /// out longer than the slow-call duration, and is not counted yet, is counted now as a
    /// slow sample (the slot marked by compare-and-swap: one gate wins it), and the window
    /// is judged after each, by the same generation-guarded trip as a returning call's.
    fn watch(&self, window: &dyn WindowStore, now: Instant) {
        let core = self.inner.load_core();
        if !core.is(Phase::Closed) {
            // Every slot belongs to an ended generation: nothing to count.
            return;
        }
        let policy = self.inner.policy();
        let policy = &*policy;
        let rule = policy.rule();
        let Some((slow, _)) = rule.slow_calls() else {
            return;
        };
        let gen = core.gen();
        window::overdue(window.slots(), gen, now, slow, || {
            if let Pushed::Changed(tally) = window.push(rule, gen, Sample::Slow, now) {
                if crate::machine::verdict(rule, &tally).is_some() {
                    self.update(&|b| b.judge(policy, gen, &tally, now));
                }
            }
        });
    }

    /// The gate of a breaker with slots: the scan first (it may trip the breaker, and
    /// this very call is then refused), then the gate's decision, then a free slot for a
    /// closed call of a policy that times calls. The ticket, its slot ([`NO_SLOT`] for
    /// none) and the instant the call was let through.
    fn acquire_watched<C: Clock>(&self, window: &dyn WindowStore, clock: &C) -> Result<(Ticket, u8, Instant), Refused> {
        let now = clock.now();
        self.watch(window, now);
        let ticket = self.acquire_ticket(clock)?;
        let slot = if ticket.probe || ticket.untracked() || !self.inner.policy().rule().times_calls() {
            NO_SLOT
        } else {
            window::claim(window.slots(), ticket.gen, now)
        };
        Ok((ticket, slot, now))
    }

    /// The gate of a breaker with slots, as a permit holding the call's slot (if it took
    /// one), with the gate's clock reading.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn permit_watched<'a, C: Clock>(
        &'a self,
        window: &dyn WindowStore,
        clock: &'a C,
    ) -> Result<(Permit<'a, C, O, P, S>, Instant), Refused> {
        let (ticket, slot, started) = self.acquire_watched(window, clock)?;
        let mut permit = Permit::new(self, clock, ticket);
        permit.slot = slot;
        Ok((permit, started))
    }

    /// [`SharedBreaker::try_acquire`] for a breaker with slots.
    #[inline(never)]
    pub(super) fn try_acquire_watched<'a, C: Clock>(
        &'a self,
        window: &dyn WindowStore,
        clock: &'a C,
    ) -> Result<Permit<'a, C, O, P, S>, Refused> {
        self.permit_watched(window, clock).map(|(permit, _)| permit)
    }

    /// [`SharedBreaker::call_classified`] for a breaker with slots: through a permit
    /// holding the call's slot (freed however the call ends, a panic included), timed from
    /// the gate's clock reading.
    #[inline(never)]
    pub(super) fn call_watched<T, E, C: Clock>(
        &self,
        window: &dyn WindowStore,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        let (mut permit, started) = self.permit_watched(window, clock).map_err(CallError::Refused)?;
        let ticket = permit.ticket;
        let result = f();
        let outcome = match &result {
            Ok(_) => Outcome::Success,
            Err(e) => Outcome::Error(classify(e)),
        };
        if ticket.probe || ticket.untracked() {
            permit.record(outcome);
            return result.map_err(CallError::Inner);
        }
        // The permit's report, without its look-ups: the window is at hand.
        permit.answered = true;
        let counted = window::release(window.slots(), core::mem::replace(&mut permit.slot, NO_SLOT));
        let now = clock.now();
        if counted {
            self.record_counted(ticket, outcome, now);
        } else {
            let counting = self.inner.counting();
            self.record_windowed(
                window,
                ticket,
                outcome,
                Some(now.since(started)),
                Some(now),
                counting,
                clock,
            );
        }
        result.map_err(CallError::Inner)
    }

    /// The report of a call counted slow while out: the machine's part only (a failure, a
    /// trip verdict, the counters), no second sample.
    fn record_counted(&self, ticket: Ticket, outcome: Outcome, now: Instant) {
        if (outcome != Outcome::Success || self.inner.counting()) && !self.inner.count_quiet(ticket, outcome) {
            self.record_ticket(ticket, outcome, now);
        }
    }
}

impl<C: Clock, O: ?Sized + Observer, P: PolicyStore, S: CountStore> Permit<'_, C, O, P, S> {
    /// Whether this permit's call holds a slot: `false` at compile time for a breaker
    /// whose window has no slots (or that has no window), whatever the permit holds.
    #[inline(always)]
    pub(super) fn holds_slot(&self) -> bool {
        self.slot != NO_SLOT && self.breaker.watched().is_some()
    }

    /// Frees this permit's slot, if it holds one: whether its call was counted slow while
    /// out (its sample is then taken).
    fn free_slot(&mut self) -> bool {
        let slot = core::mem::replace(&mut self.slot, NO_SLOT);
        match self.breaker.watched() {
            Some(window) if slot != NO_SLOT => window::release(window.slots(), slot),
            _ => false,
        }
    }

    /// Reports the outcome of a call holding a slot: its slot freed first; then, if a gate
    /// counted it slow while it was out, the machine's part only (a failure, a trip
    /// verdict, the counters), no second sample; else as any permit's report, timed from
    /// `started` if given.
    #[inline(never)]
    pub(super) fn record_watched(mut self, outcome: Outcome, started: Option<Instant>) {
        if !self.free_slot() {
            match started {
                Some(started) => self.record_timed(outcome, started),
                None => self.record(outcome),
            }
            return;
        }
        self.answered = true;
        self.breaker.record_counted(self.ticket, outcome, self.clock.now());
    }

    /// A permit holding a slot, dropped unanswered: its slot freed (a call counted slow
    /// while out stays counted), then neutral as any closed permit.
    #[inline(never)]
    pub(super) fn drop_watched(&mut self) {
        self.free_slot();
    }
}
