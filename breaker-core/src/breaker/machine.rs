//! The transition table as pure functions over a packed, `Copy` state.
//!
//! Both the single-owner [`Breaker`](crate::Breaker) and the shared
//! [`SharedBreaker`](crate::SharedBreaker) apply exactly these functions; they differ only in
//! how they store the state (a plain field, or one atomic word updated by compare-and-swap).

use crate::layout::{Core, Ticket};
use crate::policy::MAX_BACKOFF_STEP;
use crate::window::{Tally, Window};
use crate::{Duration, Instant, Outcome, Policy, Refused, Verdict};

/// Where a breaker is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Phase {
    /// Normal life: calls flow, strikes are counted.
    Closed,
    /// Tripped: calls are refused until the cooldown has elapsed.
    Open,
    /// The experiment: one probe at a time is let through.
    HalfOpen,
}

impl Phase {
    /// The phase as a key for machines: `"closed"`, `"open"`, `"half_open"`, as the JSON
    /// forms and `tracing` events spell it.
    pub const fn key(self) -> &'static str {
        match self {
            Phase::Closed => "closed",
            Phase::Open => "open",
            Phase::HalfOpen => "half_open",
        }
    }
}

/// Why a transition happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Reason {
    /// Consecutive strikes reached the trip count.
    Strikes,
    /// A trip verdict tripped the breaker on first contact.
    TripVerdict,
    /// The probe failed (under a half-open failure rate,
    /// [`Policy::with_half_open_rate`]: the probes' failures reached its threshold).
    ProbeFailed,
    /// The probe's lease expired unanswered; the re-open is backdated to the lease's end.
    LeaseExpired,
    /// The cooldown elapsed and a caller became the probe.
    CooldownElapsed,
    /// Enough consecutive probes succeeded (under a half-open failure rate,
    /// [`Policy::with_half_open_rate`]: enough probes that the rest cannot reach it).
    Recovered,
    /// [`force_open`](crate::Breaker::force_open) was called.
    ForcedOpen,
    /// [`reset`](crate::Breaker::reset) was called.
    Reset,
    /// [`trip`](crate::Breaker::trip) opened it before any call failed: a prediction (a
    /// quota gauge's, a health check's) said the upstream is about to fail.
    Predicted,
    /// A [`QuotaGuard`](crate::QuotaGuard) opened it because the quota's light is red: the
    /// share left is at or below the red threshold (a prediction alone is
    /// [`Reason::Predicted`]).
    QuotaRed,
    /// A windowed policy's failure rate reached its threshold (see [`crate::window`]).
    FailureRate,
    /// A windowed policy's slow-call rate reached its threshold (see [`crate::window`]).
    SlowCalls,
}

impl Reason {
    /// The reason as a key for machines: snake case, as the JSON forms, `tracing` events
    /// and dashboards spell it (`"strikes"`, `"trip_verdict"`, `"probe_failed"`,
    /// `"lease_expired"`, `"cooldown_elapsed"`, `"recovered"`, `"forced_open"`, `"reset"`,
    /// `"predicted"`, `"quota_red"`, `"failure_rate"`, `"slow_calls"`).
    pub const fn key(self) -> &'static str {
        match self {
            Reason::Strikes => "strikes",
            Reason::TripVerdict => "trip_verdict",
            Reason::ProbeFailed => "probe_failed",
            Reason::LeaseExpired => "lease_expired",
            Reason::CooldownElapsed => "cooldown_elapsed",
            Reason::Recovered => "recovered",
            Reason::ForcedOpen => "forced_open",
            Reason::Reset => "reset",
            Reason::Predicted => "predicted",
            Reason::QuotaRed => "quota_red",
            Reason::FailureRate => "failure_rate",
            Reason::SlowCalls => "slow_calls",
        }
    }

    /// The reason in a few words, as transition logs print it ("strikes", "probe failed").
    pub const fn words(self) -> &'static str {
        match self {
            Reason::Strikes => "strikes",
            Reason::TripVerdict => "trip verdict",
            Reason::ProbeFailed => "probe failed",
            Reason::LeaseExpired => "probe lease expired",
            Reason::CooldownElapsed => "cooldown elapsed",
            Reason::Recovered => "recovered",
            Reason::ForcedOpen => "forced",
            Reason::Reset => "reset",
            Reason::Predicted => "predicted",
            Reason::QuotaRed => "quota red",
            Reason::FailureRate => "failure rate",
            Reason::SlowCalls => "slow calls",
        }
    }
}

/// One change of [`Phase`], as told to an [`Observer`](crate::Observer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Transition {
    /// The phase before.
    pub from: Phase,
    /// The phase after.
    pub to: Phase,
    /// Why.
    pub why: Reason,
    /// When it took effect (for a lease expiry: the lease's end, not the moment it was noticed).
    pub at: Instant,
    /// The cooldown now running, when `to` is [`Phase::Open`] and not forced; zero otherwise.
    pub cooldown: Duration,
}

/// A breaker's state as seen from outside, at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum State {
    /// Closed, with this many consecutive strikes so far.
    Closed {
        /// Consecutive strikes since the last success.
        strikes: u32,
    },
    /// Open.
    Open {
        /// Time left before a call may become the probe (zero when forced: see `forced`).
        remaining: Duration,
        /// Opened by `force_open`: stays open until `reset`.
        forced: bool,
    },
    /// Half-open.
    HalfOpen {
        /// A probe is out and unanswered.
        probing: bool,
        /// Consecutive probe successes so far (under a half-open failure rate,
        /// [`Policy::with_half_open_rate`]: the probe successes counted so far).
        streak: u32,
    },
}

impl State {
    /// Whether a call made in this state would be let through: closed, open with no wait
    /// left (the call becomes the probe), or half-open with the probe slot free. What
    /// `would_allow` answers, for the state at the same instant.
    pub const fn allows_call(&self) -> bool {
        match *self {
            State::Closed { .. } => true,
            State::Open { remaining, forced } => !forced && remaining.as_millis() == 0,
            State::HalfOpen { probing, .. } => !probing,
        }
    }

    /// The phase of this state.
    pub const fn phase(&self) -> Phase {
        match self {
            State::Closed { .. } => Phase::Closed,
            State::Open { .. } => Phase::Open,
            State::HalfOpen { .. } => Phase::HalfOpen,
        }
    }
}

/// Why a call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RefusalReason {
    /// Open, cooling down.
    Open,
    /// Half-open, and the one probe is out.
    Probing,
    /// Forced open until reset.
    ForcedOpen,
    /// Closed, but a quota gauge's light is amber: only high-priority calls go through
    /// (refused by [`QuotaGauge::admit`](crate::QuotaGauge::admit), never by the breaker's
    /// own gate).
    QuotaLow,
}

/// Things that happened during one step, for counters: one bit each (two bytes to write
/// and read instead of sixteen, which keeps firmware small). A step opens the breaker at
/// most once and makes at most two transitions (a lapsed lease's re-open and a new probe),
/// of two different kinds, so a trip and each kind of transition are a bit too. The low
/// [`Events::SHARED_COUNTED`] bits are the events a [`SharedBreaker`](crate::SharedBreaker)
/// counts, in the order of its counter array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Events(u16);

impl Events {
    pub const FAILURE: u16 = 1;
    pub const SKIPPED: u16 = 1 << 1;
    pub const TRIP: u16 = 1 << 2;
    pub const PROBE_GRANTED: u16 = 1 << 3;
    pub const LEASE_EXPIRED: u16 = 1 << 4;
    pub const PROBE_SUCCEEDED: u16 = 1 << 5;
    pub const PROBE_FAILED: u16 = 1 << 6;
    pub const PROBE_NEUTRAL: u16 = 1 << 7;
    pub const CLOSED_TO_OPEN: u16 = 1 << 8;
    pub const OPEN_TO_HALF_OPEN: u16 = 1 << 9;
    pub const HALF_OPEN_TO_CLOSED: u16 = 1 << 10;
    pub const HALF_OPEN_TO_OPEN: u16 = 1 << 11;
    pub const OPEN_TO_CLOSED: u16 = 1 << 12;
    pub const ADMITTED: u16 = 1 << 13;
    pub const SUCCESS: u16 = 1 << 14;
    pub const NEUTRAL: u16 = 1 << 15;

    /// How many of the low bits a shared breaker counts: all sixteen on hosted targets
    /// (admitted calls, successes and neutral outcomes only where the policy counts every
    /// call: [`Policy::counting_calls`](crate::Policy::counting_calls)); on bare metal the
    /// first five (failure to lease expiry), so that a breaker's state stays 32 bytes of
    /// RAM there.
    #[cfg(not(target_os = "none"))]
    pub const SHARED_COUNTED: usize = 16;
    /// How many of the low bits a shared breaker counts: all sixteen on hosted targets;
    /// on bare metal the first five (failure to lease expiry), so that a breaker's state
    /// stays 32 bytes of RAM there.
    #[cfg(target_os = "none")]
    pub const SHARED_COUNTED: usize = 5;

    /// The bit of a change from `from` to `to`; none for a phase kept (no step makes one)
    /// or closed to half-open (no breaker goes straight there).
    pub const fn transition(from: Phase, to: Phase) -> u16 {
        match (from, to) {
            (Phase::Closed, Phase::Open) => Events::CLOSED_TO_OPEN,
            (Phase::Open, Phase::HalfOpen) => Events::OPEN_TO_HALF_OPEN,
            (Phase::HalfOpen, Phase::Closed) => Events::HALF_OPEN_TO_CLOSED,
            (Phase::HalfOpen, Phase::Open) => Events::HALF_OPEN_TO_OPEN,
            (Phase::Open, Phase::Closed) => Events::OPEN_TO_CLOSED,
            _ => 0,
        }
    }

    /// The raw bits.
    pub const fn bits(self) -> u16 {
        self.0
    }

    pub fn set(&mut self, event: u16) {
        self.0 |= event;
    }

    pub const fn has(self, event: u16) -> bool {
        self.0 & event != 0
    }
}

/// The transitions of one step, in order: at most two (a lazily noticed lease expiry can
/// be followed at once by a new probe).
pub(crate) type Transitions = [Option<Transition>; 2];

/// The result of one pure step: the next state, what happened, and its transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step<D> {
    pub next: Core,
    pub decision: D,
    pub events: Events,
    pub transitions: Transitions,
}

impl<D> Step<D> {
    pub fn transitions(&self) -> impl Iterator<Item = &Transition> {
        self.transitions.iter().flatten()
    }
}

/// One step in the making: the state as it changes, what happened, the transitions.
///
/// `ALL`: whether every event is noted, or only the ones a shared breaker counts on this
/// target ([`SharedBuilder`]): on bare metal a shared breaker counts five, and not noting
/// the others (the probes' outcomes, the changes of phase, admitted calls, successes,
/// neutral outcomes) keeps their code out of its firmware. The single-owner breaker, which
/// counts everything everywhere, uses `Builder<true>`.
pub(crate) struct Builder<const ALL: bool = true> {
    pub core: Core,
    pub events: Events,
    pub transitions: Transitions,
}

/// The builder of a shared breaker's steps: it notes only the events a shared breaker
/// counts on this target (all of them on hosted targets, where this is `Builder<true>`).
pub(crate) type SharedBuilder = Builder<{ !cfg!(target_os = "none") }>;

impl<const ALL: bool> Builder<ALL> {
    pub fn new(core: Core) -> Builder<ALL> {
        Builder {
            core,
            events: Events::default(),
            transitions: [None, None],
        }
    }

    fn finish<D>(self, decision: D) -> Step<D> {
        Step {
            next: self.core,
            decision,
            events: self.events,
            transitions: self.transitions,
        }
    }

    /// Notes `event` if this builder's breaker counts it.
    #[inline(always)]
    fn note(&mut self, event: u16) {
        if ALL || (event as u32) < 1 << Events::SHARED_COUNTED {
            self.events.set(event);
        }
    }

    fn go(&mut self, to: Phase, why: Reason, at: Instant, cooldown: Duration) {
        let t = Transition {
            from: self.core.phase(),
            to,
            why,
            at,
            cooldown,
        };
        // In order, the latest last (a step makes at most two).
        self.transitions = [self.transitions[1], Some(t)];
        // (Every change of phase is one of the high bits, above what a shared breaker
        // counts on bare metal.)
        if ALL || (Events::CLOSED_TO_OPEN as u32) < 1 << Events::SHARED_COUNTED {
            self.events.set(Events::transition(t.from, to));
        }
        self.core.enter(to);
    }

    /// Opens (or re-opens) at `at`, staying open at least `hold`: a trip. (`force_open`
    /// goes straight to the phase; it is not a trip.)
    fn open(&mut self, policy: &Policy, why: Reason, at: Instant, hold: Duration) {
        let cooldown = policy.cooldown_at(self.core.step());
        self.go(Phase::Open, why, at, cooldown.max(hold));
        self.core.anchor = at.wrapping_add(hold.saturating_sub(cooldown));
        self.note(Events::TRIP);
    }

    fn advance_backoff(&mut self) {
        let step = self.core.step();
        if step < MAX_BACKOFF_STEP {
            self.core.set_step(step + 1);
        }
    }

    /// Notices a probe lease that ran out: re-opens, backdated to the lease's end.
    fn expire_lease(&mut self, policy: &Policy, now: Instant) {
        let c = self.core;
        if c.probe_out() && now.since(c.anchor) >= policy.probe_lease() {
            self.advance_backoff();
            self.note(Events::LEASE_EXPIRED);
            let lease_end = c.anchor.wrapping_add(policy.probe_lease());
            self.open(policy, Reason::LeaseExpired, lease_end, Duration::ZERO);
        }
    }
}

/// The transition table, applied in place (the shared breaker's update loop builds on
/// its own stack and reads the result where it is).
impl<const ALL: bool> Builder<ALL> {
    /// The mutating gate: may a call go ahead now? Grants the probe slot if it is free.
    ///
    /// In shadow mode a refusal while open (cooling down) or half-open (the probe out) is
    /// noted as a skip, as ever, and then the call is let through untracked
    /// ([`Ticket::UNTRACKED`]: its outcome will change nothing). A forced opening refuses
    /// in shadow mode too: it is an operator's order, not a threshold's decision. (Decided
    /// last, once the live decision is made and its events noted, on the flags of the
    /// state the step left: no step changes the shadow flag, and a refusal leaves the
    /// forced flag as it found it.)
    pub fn acquire(&mut self, policy: &Policy, now: Instant) -> Result<Ticket, Refused> {
        self.expire_lease(policy, now);
        let c = self.core;
        let decision = if c.is(Phase::Closed) {
            Ok(Ticket {
                gen: c.gen(),
                probe: false,
            })
        } else if c.forced() {
            // Forced open (the flag is only ever set in open).
            Err(Refused {
                reason: RefusalReason::ForcedOpen,
                retry_in: None,
            })
        } else if c.is(Phase::Open) {
            // Zero exactly when the cooldown is over. Not `cooldown - elapsed`: a trip
            // verdict's hold can make it longer.
            let remaining = c.remaining(policy, now);
            if remaining.as_millis() == 0 {
                self.go(Phase::HalfOpen, Reason::CooldownElapsed, now, Duration::ZERO);
                self.core.set_probe_out(true);
                self.core.anchor = now;
                Ok(Ticket {
                    gen: self.core.gen(),
                    probe: true,
                })
            } else {
                Err(Refused {
                    reason: RefusalReason::Open,
                    retry_in: Some(remaining),
                })
            }
        } else if c.probe_out() {
            Err(Refused {
                reason: RefusalReason::Probing,
                retry_in: None,
            })
        } else {
            self.core.set_probe_out(true);
            self.core.anchor = now;
            Ok(Ticket {
                gen: c.gen(),
                probe: true,
            })
        };
        match decision {
            Ok(t) => {
                self.note(Events::ADMITTED);
                if t.probe {
                    self.note(Events::PROBE_GRANTED);
                }
            }
            Err(_) => {
                self.note(Events::SKIPPED);
                if self.core.shadow_passes() {
                    return Ok(Ticket::UNTRACKED);
                }
            }
        }
        decision
    }

    /// Reports the outcome of a call admitted with `ticket`. A call a shadowed breaker
    /// let through where it would have refused it ([`Ticket::UNTRACKED`]) changes
    /// nothing and counts nothing: a live breaker never saw it.
    pub fn record(&mut self, policy: &Policy, ticket: Ticket, outcome: Outcome, now: Instant) {
        if ticket.untracked() {
            return;
        }
        self.expire_lease(policy, now);
        let c = self.core;
        let fresh = c.issued(ticket);
        match outcome {
            Outcome::Success => {
                self.note(Events::SUCCESS);
                if fresh && c.is(Phase::Closed) {
                    self.core.set_strikes(0);
                } else if fresh {
                    self.note(Events::PROBE_SUCCEEDED);
                    let streak = c.streak().saturating_add(1);
                    if u32::from(streak) >= policy.probe_successes_to_close() {
                        self.core.set_step(0);
                        self.go(Phase::Closed, Reason::Recovered, now, Duration::ZERO);
                    } else {
                        self.core.set_streak(streak);
                        self.core.set_probe_out(false);
                    }
                }
            }
            Outcome::Error(Verdict::Neutral) => {
                self.note(Events::NEUTRAL);
                if fresh && c.is(Phase::HalfOpen) {
                    self.note(Events::PROBE_NEUTRAL);
                    self.core.set_probe_out(false);
                }
            }
            Outcome::Error(verdict) => {
                self.note(Events::FAILURE);
                let hold = hold_of(verdict);
                if c.is(Phase::Open) {
                    // Fresh bad news restarts the wait; it never shortens a longer hold.
                    let cooldown = policy.cooldown_at(c.step());
                    let candidate = now.wrapping_add(hold.saturating_sub(cooldown));
                    self.core.anchor = c.anchor.later(candidate);
                } else if fresh && c.is(Phase::Closed) {
                    let strikes = c.strikes().saturating_add(1);
                    if verdict != Verdict::Strike {
                        self.open(policy, Reason::TripVerdict, now, hold);
                    } else if u32::from(strikes) < policy.trip() {
                        self.core.set_strikes(strikes);
                    } else if policy.trip() != 0 {
                        // (A windowed policy's trip count is 0: its window judges the
                        // strike, in `judge`.)
                        self.open(policy, Reason::Strikes, now, hold);
                    }
                } else if fresh
                    && verdict == Verdict::Strike
                    && (policy.patient_streak() || u32::from(c.strikes()) + 1 < policy.probe_failures_to_open())
                {
                    // Half-open, a strike that does not re-open. Patient: a blip costs the
                    // streak, not the cooldown paid. Judged by a failure rate this failure
                    // does not reach: counted (in the strike bits, unused in half-open).
                    self.note(Events::PROBE_FAILED);
                    if policy.patient_streak() {
                        self.core.set_streak(0);
                    } else {
                        self.core.set_strikes(c.strikes() + 1);
                    }
                    self.core.set_probe_out(false);
                } else if fresh {
                    // Half-open: the probe failed.
                    self.note(Events::PROBE_FAILED);
                    self.advance_backoff();
                    self.open(policy, Reason::ProbeFailed, now, hold);
                }
            }
        }
    }

    /// Opens as a trip would, with no call involved, staying open at least `hold` (as a
    /// trip verdict's hold): from closed at once, from half-open with the backoff advanced
    /// (as a failed probe), and while open the wait restarts (as fresh bad news; it never
    /// shortens a longer hold). Forced open stays as it is.
    pub fn trip(&mut self, policy: &Policy, why: Reason, now: Instant, hold: Duration) {
        self.expire_lease(policy, now);
        let c = self.core;
        if c.forced() {
            return;
        }
        if c.is(Phase::Open) {
            let cooldown = policy.cooldown_at(c.step());
            self.core.anchor = c.anchor.later(now.wrapping_add(hold.saturating_sub(cooldown)));
            return;
        }
        if c.is(Phase::HalfOpen) {
            self.advance_backoff();
        }
        self.open(policy, why, now, hold);
    }

    /// A windowed policy's rule: the closed window of generation `gen` now holds `tally`;
    /// if a rate reached its threshold, opens as a trip, but only if the breaker is still
    /// closed in generation `gen`. A window overtaken by a transition (its samples belong to
    /// a generation that has ended) never trips the breaker that moved on.
    pub fn judge(&mut self, policy: &Policy, gen: u16, tally: &Tally, now: Instant) {
        let c = self.core;
        if c.is(Phase::Closed) && c.gen() == gen {
            if let Some(why) = verdict(policy.rule(), tally) {
                self.open(policy, why, now, Duration::ZERO);
            }
        }
    }

    /// Opens until [`Builder::reset`].
    pub fn force_open(&mut self, now: Instant) {
        self.go(Phase::Open, Reason::ForcedOpen, now, Duration::ZERO);
        self.core.set_forced();
        self.core.anchor = now;
    }

    /// Closes, with every strike, streak and backoff step zeroed.
    pub fn reset(&mut self, now: Instant) {
        self.core.set_step(0);
        self.go(Phase::Closed, Reason::Reset, now, Duration::ZERO);
    }
}

/// What a window holding `tally` says under `rule`: a trip, and why, once it holds at
/// least `min_calls` samples and a rate reached its threshold (the failure rate first).
/// Every windowed trip is decided here: the storages ask it before judging, to spare a
/// transition when nothing trips.
pub(crate) fn verdict(rule: &Window, tally: &Tally) -> Option<Reason> {
    let reached = |marked: u32, of: u32, percent: u32| {
        percent != 0
            && of != 0
            && of >= rule.min_calls()
            && u64::from(marked) * 100 >= u64::from(percent) * u64::from(of)
    };
    if reached(tally.failures, tally.calls, rule.failure_rate()) {
        Some(Reason::FailureRate)
    } else if reached(tally.slow, tally.timed, rule.slow_calls().map_or(0, |(_, p)| p)) {
        Some(Reason::SlowCalls)
    } else {
        None
    }
}

fn hold_of(verdict: Verdict) -> Duration {
    match verdict {
        Verdict::TripFor(d) => d,
        _ => Duration::ZERO,
    }
}

impl Core {
    /// The mutating gate: may a call go ahead now? Grants the probe slot if it is free.
    pub fn acquire(self, policy: &Policy, now: Instant) -> Step<Result<Ticket, Refused>> {
        let mut b: Builder = Builder::new(self);
        let decision = b.acquire(policy, now);
        b.finish(decision)
    }

    /// Reports the outcome of a call admitted with `ticket`.
    pub fn record(self, policy: &Policy, ticket: Ticket, outcome: Outcome, now: Instant) -> Step<()> {
        let mut b: Builder = Builder::new(self);
        b.record(policy, ticket, outcome, now);
        b.finish(())
    }

    /// Whether `ticket` was issued in the current generation and its outcome still counts.
    fn issued(&self, ticket: Ticket) -> bool {
        // The probe slot is only ever taken in half-open.
        ticket.gen == self.gen()
            && if ticket.probe {
                self.probe_out()
            } else {
                self.is(Phase::Closed)
            }
    }

    /// Whether an outcome reported with `ticket` at `now` would still count (not stale).
    pub fn is_fresh(self, policy: &Policy, ticket: Ticket, now: Instant) -> bool {
        self.settled(policy, now).issued(ticket)
    }

    /// The state with a lapsed probe lease taken into account: what the next call sees first.
    pub fn settled(self, policy: &Policy, now: Instant) -> Core {
        // (Its events are dropped: the shared breaker's builder, which notes fewer on bare
        // metal, is as good, and is the copy a firmware already has.)
        let mut b = SharedBuilder::new(self);
        b.expire_lease(policy, now);
        b.core
    }

    /// Opens as a trip would, with no call involved, for at least `hold` (see
    /// [`Builder::trip`]).
    pub fn trip(self, policy: &Policy, why: Reason, now: Instant, hold: Duration) -> Step<()> {
        let mut b: Builder = Builder::new(self);
        b.trip(policy, why, now, hold);
        b.finish(())
    }

    /// A windowed policy's rule (see [`Builder::judge`]).
    pub fn judge(self, policy: &Policy, gen: u16, tally: &Tally, now: Instant) -> Step<()> {
        let mut b: Builder = Builder::new(self);
        b.judge(policy, gen, tally, now);
        b.finish(())
    }

    /// Opens until [`Core::reset`].
    pub fn force_open(self, now: Instant) -> Step<()> {
        let mut b: Builder = Builder::new(self);
        b.force_open(now);
        b.finish(())
    }

    /// Closes, with every strike, streak and backoff step zeroed.
    pub fn reset(self, now: Instant) -> Step<()> {
        let mut b: Builder = Builder::new(self);
        b.reset(now);
        b.finish(())
    }

    /// Whether the gate would let a call through at `now`: the state allows it, or shadow
    /// mode lets it through (anything but a forced opening). The state first: a live
    /// breaker that allows the call pays nothing for the mode.
    pub fn admits(self, policy: &Policy, now: Instant) -> bool {
        self.view(policy, now).allows_call() || self.shadow_passes()
    }

    /// The state as seen at `now`, with a lapsed lease taken into account.
    pub fn view(self, policy: &Policy, now: Instant) -> State {
        // Closed stays closed whatever the time (and a counting breaker's closed word, read
        // with its count mark left in by `Core::peek`, is not taken for a probe out).
        if self.is(Phase::Closed) {
            return State::Closed {
                strikes: self.strikes() as u32,
            };
        }
        let c = self.settled(policy, now);
        if c.is(Phase::Open) {
            State::Open {
                remaining: if c.forced() {
                    Duration::ZERO
                } else {
                    c.remaining(policy, now)
                },
                forced: c.forced(),
            }
        } else {
            State::HalfOpen {
                probing: c.probe_out(),
                streak: c.streak() as u32,
            }
        }
    }

    /// Open: the wait left before a call may become the probe. Otherwise zero. Zero
    /// exactly when [`Core::acquire`] would let a call through, at every reading of the
    /// clock: a reading before the anchor (a stepped-back clock, a trip verdict's hold, or
    /// one more than 2^31 ms after it) adds the time to the anchor to the full cooldown.
    pub fn remaining(self, policy: &Policy, now: Instant) -> Duration {
        if !self.is(Phase::Open) {
            return Duration::ZERO;
        }
        let cooldown = policy.cooldown_at(self.step());
        if now.since(self.anchor) >= cooldown {
            return Duration::ZERO;
        }
        // `cooldown - offset` for an offset in -2^31..cooldown: between 1 and
        // 2^31 + 2^30, so exact in a u32 (then clamped to `Duration::MAX`).
        let offset = now.offset_from(self.anchor) as u32;
        Duration::from_millis(cooldown.as_millis().wrapping_sub(offset))
    }

    /// The gate for a packed word that is open, not forced, at backoff step 0, and still
    /// cooling down at `now`: the refusal [`Core::acquire`] gives there (which changes
    /// nothing but the skip count). `None` for any other word, or once the cooldown is
    /// over: then `acquire` must run. The refusal fast path of the shared breaker; a
    /// backed-off cooldown takes the general path.
    #[inline(always)]
    pub fn cooling_refusal(w: u64, policy: &Policy, now: Instant) -> Option<Refused> {
        if w & Self::COOLING_MASK != Self::COOLING_BITS {
            return None;
        }
        // `acquire`'s test and `remaining`'s arithmetic on the packed word, for a clock
        // that reads at or after the anchor. One unsigned comparison sends both the end of
        // the cooldown and a clock reading before the anchor (stepped back, or a trip
        // verdict's hold: a wrapped difference of 2^31 or more, above any cooldown, which
        // is at most 2^30 - 1 ms) to the general path.
        let elapsed = now.as_millis().wrapping_sub((w >> 32) as u32);
        let cooldown = policy.cooldown().as_millis();
        if elapsed >= cooldown {
            return None;
        }
        // Below the cooldown, so within `Duration::MAX`.
        let retry_in = Duration::from_millis_unchecked(cooldown - elapsed);
        Some(Refused {
            reason: RefusalReason::Open,
            retry_in: Some(retry_in),
        })
    }

    /// The gate for a packed word that is forced open: the refusal [`Core::acquire`] gives
    /// there, whatever the time (which changes nothing but the skip count). `None` for any
    /// other word. The shared breaker's refusal fast path for [`force_open`](crate::SharedBreaker::force_open),
    /// which needs no clock read.
    #[inline(always)]
    pub fn forced_refusal(w: u64) -> Option<Refused> {
        // The flag is only ever set in open, where `acquire` tests it before anything that
        // depends on the time (a probe lease is only out in half-open).
        if w & Self::FORCED_MASK == 0 {
            return None;
        }
        Some(Refused {
            reason: RefusalReason::ForcedOpen,
            retry_in: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forced_refusal_is_the_one_acquire_gives() {
        let policy = Policy::new(3, Duration::from_secs(1));
        for step in [0, 2] {
            let forced = Core::from_fields(Phase::Open, false, true, 0, 0, step, 7, Instant::from_millis(50));
            for now in [0, 60, 5_000, u32::MAX] {
                let now = Instant::from_millis(now);
                let step_taken = forced.acquire(&policy, now);
                assert_eq!(Core::forced_refusal(forced.pack()), step_taken.decision.err());
                assert_eq!(step_taken.next, forced, "a forced refusal changes nothing");
                assert_eq!(Core::cooling_refusal(forced.pack(), &policy, now), None);
            }
        }
        for phase in [Phase::Closed, Phase::Open, Phase::HalfOpen] {
            let not_forced = Core::from_fields(phase, false, false, 0, 0, 0, 7, Instant::ZERO);
            assert_eq!(Core::forced_refusal(not_forced.pack()), None);
        }
    }

    /// Half-open at instant 0 (generation 2), probing under `policy`, after `script`'s
    /// probes (each acquired and answered at `at`): the state and the last step's
    /// transition, if any.
    fn probes(policy: &Policy, script: &[Outcome], at: u32) -> (Core, Option<Transition>) {
        let mut c = Core::from_fields(Phase::HalfOpen, false, false, 0, 0, 0, 2, Instant::ZERO);
        let now = Instant::from_millis(at);
        let mut last = None;
        for &outcome in script {
            let gate = c.acquire(policy, now);
            let ticket = gate.decision.expect("a probe is let through");
            assert!(ticket.probe);
            let step = gate.next.record(policy, ticket, outcome, now);
            last = step.transitions[1];
            c = step.next;
        }
        (c, last)
    }

    #[test]
    fn a_half_open_rate_closes_below_the_rate_and_reopens_at_it() {
        let policy = Policy::new(1, Duration::from_secs(1)).with_half_open_rate(10, 50);
        assert_eq!(
            (policy.probe_failures_to_open(), policy.probe_successes_to_close()),
            (5, 6)
        );
        let (s, f, n) = (Outcome::Success, Outcome::STRIKE, Outcome::Error(Verdict::Neutral));
        // 4 failures and 5 successes: still half-open, both counted.
        let (c, last) = probes(&policy, &[f, s, f, s, f, s, f, s, s], 0);
        assert_eq!(
            (c.phase(), c.strikes(), c.streak(), c.probe_out(), last),
            (Phase::HalfOpen, 4, 5, false, None)
        );
        // The 6th success (the 10th outcome): 4 failures of 10 is below 50 %. Closed.
        let (c, last) = probes(&policy, &[f, s, f, s, f, s, f, s, s, s], 0);
        assert_eq!((c.phase(), c.strikes(), c.streak(), c.step()), (Phase::Closed, 0, 0, 0));
        assert_eq!(last.map(|t| t.why), Some(Reason::Recovered));
        // Decided early: 6 successes first close at once (4 probes left cannot make 5).
        assert_eq!(probes(&policy, &[s; 6], 0).0.phase(), Phase::Closed);
        // The 5th failure reaches 50 %: re-opened, as a failed probe (backoff advanced).
        let (c, last) = probes(&policy, &[s, f, f, s, f, f, f], 0);
        assert_eq!((c.phase(), c.strikes(), c.streak(), c.step()), (Phase::Open, 0, 0, 1));
        assert_eq!(last.map(|t| t.why), Some(Reason::ProbeFailed));
        // Neutral outcomes count nothing: 9 of them leave the counts as they were.
        let (c, _) = probes(&policy, &[f, s, n, n, n, n, n, n, n, n, n], 0);
        assert_eq!((c.phase(), c.strikes(), c.streak()), (Phase::HalfOpen, 1, 1));
        // A trip verdict re-opens at once, whatever the counts.
        let (c, last) = probes(&policy, &[s, Outcome::TRIP], 0);
        assert_eq!(
            (c.phase(), last.map(|t| t.why)),
            (Phase::Open, Some(Reason::ProbeFailed))
        );
    }

    #[test]
    fn a_lapsed_lease_reopens_under_a_half_open_rate() {
        let policy = Policy::new(1, Duration::from_secs(1)).with_half_open_rate(10, 50);
        let (c, _) = probes(&policy, &[Outcome::STRIKE, Outcome::Success], 0);
        let probing = c.acquire(&policy, Instant::ZERO).next;
        // The lease (the cooldown, 1 s) runs out: the next call finds it re-opened.
        let step = probing.acquire(&policy, Instant::from_millis(1_000));
        assert!(step.decision.is_err());
        assert_eq!(step.transitions[1].map(|t| t.why), Some(Reason::LeaseExpired));
        assert_eq!(
            (step.next.phase(), step.next.strikes(), step.next.streak()),
            (Phase::Open, 0, 0)
        );
    }

    #[test]
    fn patient_probation_changes_nothing_under_a_half_open_rate() {
        let rated = Policy::new(1, Duration::from_secs(1)).with_half_open_rate(4, 50);
        let both = rated.with_patient_probation();
        let f = Outcome::STRIKE;
        for script in [&[f, f][..], &[f, Outcome::Success, Outcome::Success, Outcome::Success]] {
            assert_eq!(probes(&rated, script, 0), probes(&both, script, 0));
        }
        assert_eq!(probes(&both, &[f, f], 0).0.phase(), Phase::Open);
    }

    #[test]
    fn a_half_open_rate_of_100_percent_closes_on_one_success() {
        let policy = Policy::new(1, Duration::from_secs(1)).with_half_open_rate(3, 100);
        let f = Outcome::STRIKE;
        assert_eq!(probes(&policy, &[f, f, Outcome::Success], 0).0.phase(), Phase::Closed);
        assert_eq!(probes(&policy, &[f, f, f], 0).0.phase(), Phase::Open);
        // 1 % of 10 rounds up to one failure: the first one re-opens.
        let strict = Policy::new(1, Duration::from_secs(1)).with_half_open_rate(10, 1);
        assert_eq!(
            (strict.probe_failures_to_open(), strict.probe_successes_to_close()),
            (1, 10)
        );
        assert_eq!(probes(&strict, &[Outcome::Success, f], 0).0.phase(), Phase::Open);
    }

    #[test]
    fn a_window_judged_for_an_ended_generation_never_trips() {
        use crate::window::WindowSize;
        let policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(1)).with_min_calls(2);
        let failing = Tally {
            calls: 2,
            failures: 2,
            timed: 2,
            slow: 0,
        };
        let closed = Core::from_fields(Phase::Closed, false, false, 0, 0, 0, 5, Instant::ZERO);
        // The window's samples belong to generation 4; the breaker has moved on to 5.
        assert_eq!(closed.judge(&policy, 4, &failing, Instant::ZERO).next, closed);
        // Generation 5's own failing window trips it, with its reason.
        let step = closed.judge(&policy, 5, &failing, Instant::ZERO);
        assert_eq!(step.next.phase(), Phase::Open);
        assert_eq!(step.transitions[1].map(|t| t.why), Some(Reason::FailureRate));
        // Not closed any more (same generation number, other phase): nothing.
        let open = Core::from_fields(Phase::Open, false, false, 0, 0, 0, 5, Instant::ZERO);
        assert_eq!(open.judge(&policy, 5, &failing, Instant::ZERO).next, open);
        // Below the minimum, or below the rate: nothing.
        let one = Tally {
            calls: 1,
            failures: 1,
            timed: 1,
            slow: 0,
        };
        assert_eq!(closed.judge(&policy, 5, &one, Instant::ZERO).next, closed);
        let low = Tally {
            calls: 4,
            failures: 1,
            timed: 4,
            slow: 0,
        };
        assert_eq!(closed.judge(&policy, 5, &low, Instant::ZERO).next, closed);
    }
}
