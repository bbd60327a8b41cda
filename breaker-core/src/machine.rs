//! The transition table as pure functions over a packed, `Copy` state.
//!
//! Both the single-owner [`Breaker`](crate::Breaker) and the shared
//! [`SharedBreaker`](crate::SharedBreaker) apply exactly these functions; they differ only in
//! how they store the state (a plain field, or one atomic word updated by compare-and-swap).

use core::fmt;

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

/// Why a transition happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Reason {
    /// Consecutive strikes reached the trip count.
    Strikes,
    /// A trip verdict tripped the breaker on first contact.
    TripVerdict,
    /// The probe failed.
    ProbeFailed,
    /// The probe's lease expired unanswered; the re-open is backdated to the lease's end.
    LeaseExpired,
    /// The cooldown elapsed and a caller became the probe.
    CooldownElapsed,
    /// Enough consecutive probes succeeded.
    Recovered,
    /// [`force_open`](crate::Breaker::force_open) was called.
    ForcedOpen,
    /// [`reset`](crate::Breaker::reset) was called.
    Reset,
    /// [`trip`](crate::Breaker::trip) opened it before any call failed: a prediction (a
    /// quota gauge's, a health check's) said the upstream is about to fail.
    Predicted,
    /// A windowed policy's failure rate reached its threshold (see [`crate::window`]).
    FailureRate,
    /// A windowed policy's slow-call rate reached its threshold (see [`crate::window`]).
    SlowCalls,
}

impl Reason {
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
        /// Consecutive probe successes so far.
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

/// Generation numbers are this many bits wide (they wrap; see [`Core::gen`]).
const GEN_BITS: u32 = 12;
const GEN_MASK: u16 = (1 << GEN_BITS) - 1;

/// The whole state of one breaker, in the layout of the 64-bit word a
/// [`SharedBreaker`](crate::SharedBreaker) stores: the flags in one half, the anchor in the
/// other, so packing and unpacking cost nothing and a transition is a few bit operations.
///
/// ```text
/// flags: bits 0..2 phase   2 probe out   3 forced   4..12 strikes
///             12..16 streak   16..20 backoff step   20..32 generation
/// ```
///
/// Closed with no strikes has bits 0..12 all zero: the shared breaker's hot path tests
/// only that.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Core {
    flags: u32,
    /// Open: the instant the cooldown counts from (later than the real opening when a trip
    /// verdict asked for a longer hold). Half-open with a probe out: when the probe started.
    pub anchor: Instant,
}

const PHASE_BITS: u32 = 0b11;
const PROBE_OUT: u32 = 1 << 2;
const FORCED: u32 = 1 << 3;
const STRIKES_AT: u32 = 4;
const STREAK_AT: u32 = 12;
const STEP_AT: u32 = 16;
const GEN_AT: u32 = 20;
const NIBBLE: u32 = 0xF;

/// The flags' phase bits for `phase`.
const fn phase_bits(phase: Phase) -> u32 {
    match phase {
        Phase::Closed => 0,
        Phase::Open => 1,
        Phase::HalfOpen => 2,
    }
}

/// The permit data a gate decision hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Ticket {
    pub gen: u16,
    pub probe: bool,
}

/// Things that happened during one step, for counters: one bit each (one byte to write
/// and read instead of eight, which keeps firmware small). A step opens the breaker at most
/// once, so a trip is a bit too. The low [`Events::SHARED_COUNTED`] bits are the events a
/// [`SharedBreaker`](crate::SharedBreaker) counts, in the order of its counter array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Events(u8);

impl Events {
    pub const FAILURE: u8 = 1;
    pub const SKIPPED: u8 = 1 << 1;
    pub const TRIP: u8 = 1 << 2;
    pub const PROBE_GRANTED: u8 = 1 << 3;
    pub const LEASE_EXPIRED: u8 = 1 << 4;
    pub const ADMITTED: u8 = 1 << 5;
    pub const SUCCESS: u8 = 1 << 6;
    pub const NEUTRAL: u8 = 1 << 7;

    /// How many of the low bits a shared breaker counts (failure to lease expiry).
    pub const SHARED_COUNTED: usize = 5;

    /// The raw bits.
    pub const fn bits(self) -> u8 {
        self.0
    }

    pub fn set(&mut self, event: u8) {
        self.0 |= event;
    }

    pub const fn has(self, event: u8) -> bool {
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
pub(crate) struct Builder {
    pub core: Core,
    pub events: Events,
    pub transitions: Transitions,
}

impl Builder {
    pub fn new(core: Core) -> Builder {
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
        self.core.enter(to);
    }

    /// Opens (or re-opens) at `at`, staying open at least `hold`: a trip. (`force_open`
    /// goes straight to the phase; it is not a trip.)
    fn open(&mut self, policy: &Policy, why: Reason, at: Instant, hold: Duration) {
        let cooldown = policy.cooldown_at(self.core.step());
        self.go(Phase::Open, why, at, cooldown.max(hold));
        self.core.anchor = at.wrapping_add(hold.saturating_sub(cooldown));
        self.events.set(Events::TRIP);
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
            self.events.set(Events::LEASE_EXPIRED);
            let lease_end = c.anchor.wrapping_add(policy.probe_lease());
            self.open(policy, Reason::LeaseExpired, lease_end, Duration::ZERO);
        }
    }
}

/// The transition table, applied in place (the shared breaker's update loop builds on
/// its own stack and reads the result where it is).
impl Builder {
    /// The mutating gate: may a call go ahead now? Grants the probe slot if it is free.
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
                self.events.set(Events::ADMITTED);
                if t.probe {
                    self.events.set(Events::PROBE_GRANTED);
                }
            }
            Err(_) => self.events.set(Events::SKIPPED),
        }
        decision
    }

    /// Reports the outcome of a call admitted with `ticket`.
    pub fn record(&mut self, policy: &Policy, ticket: Ticket, outcome: Outcome, now: Instant) {
        self.expire_lease(policy, now);
        let c = self.core;
        let fresh = c.issued(ticket);
        match outcome {
            Outcome::Success => {
                self.events.set(Events::SUCCESS);
                if fresh && c.is(Phase::Closed) {
                    self.core.set_strikes(0);
                } else if fresh {
                    let streak = c.streak().saturating_add(1);
                    if u32::from(streak) >= policy.probes_to_close() {
                        self.core.set_step(0);
                        self.go(Phase::Closed, Reason::Recovered, now, Duration::ZERO);
                    } else {
                        self.core.set_streak(streak);
                        self.core.set_probe_out(false);
                    }
                }
            }
            Outcome::Error(Verdict::Neutral) => {
                self.events.set(Events::NEUTRAL);
                if fresh && c.is(Phase::HalfOpen) {
                    self.core.set_probe_out(false);
                }
            }
            Outcome::Error(verdict) => {
                self.events.set(Events::FAILURE);
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
                } else if fresh && verdict == Verdict::Strike && policy.patient_probation() {
                    // Half-open, patient: a blip costs the streak, not the cooldown paid.
                    self.core.set_streak(0);
                    self.core.set_probe_out(false);
                } else if fresh {
                    // Half-open: the probe failed.
                    self.advance_backoff();
                    self.open(policy, Reason::ProbeFailed, now, hold);
                }
            }
        }
    }

    /// Opens as a trip would, with no call involved: from closed at once, from half-open
    /// with the backoff advanced (as a failed probe), and while open the wait restarts
    /// (as fresh bad news). Forced open stays as it is.
    pub fn trip(&mut self, policy: &Policy, why: Reason, now: Instant) {
        self.expire_lease(policy, now);
        let c = self.core;
        if c.forced() {
            return;
        }
        if c.is(Phase::Open) {
            self.core.anchor = c.anchor.later(now);
            return;
        }
        if c.is(Phase::HalfOpen) {
            self.advance_backoff();
        }
        self.open(policy, why, now, Duration::ZERO);
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
        self.core.flags |= FORCED;
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
    pub const INITIAL: Core = Core {
        flags: 0,
        anchor: Instant::ZERO,
    };

    /// A state from its fields (values wider than their bits are cut to them).
    #[allow(clippy::too_many_arguments)]
    pub const fn from_fields(
        phase: Phase,
        probe_out: bool,
        forced: bool,
        strikes: u8,
        streak: u8,
        step: u8,
        gen: u16,
        anchor: Instant,
    ) -> Core {
        Core {
            flags: phase_bits(phase)
                | if probe_out { PROBE_OUT } else { 0 }
                | if forced { FORCED } else { 0 }
                | (strikes as u32) << STRIKES_AT
                | (streak as u32 & NIBBLE) << STREAK_AT
                | (step as u32 & NIBBLE) << STEP_AT
                | ((gen & GEN_MASK) as u32) << GEN_AT,
            anchor,
        }
    }

    /// Where the breaker is.
    pub const fn phase(self) -> Phase {
        match self.flags & PHASE_BITS {
            0 => Phase::Closed,
            1 => Phase::Open,
            _ => Phase::HalfOpen,
        }
    }

    /// Whether the breaker is in `phase` (one comparison of the phase bits, where a
    /// `match` on [`Core::phase`] would decode them first).
    pub const fn is(self, phase: Phase) -> bool {
        self.flags & PHASE_BITS == phase_bits(phase)
    }

    /// Half-open only: the probe slot is taken.
    pub const fn probe_out(self) -> bool {
        self.flags & PROBE_OUT != 0
    }

    /// Open only: forced open until reset.
    pub const fn forced(self) -> bool {
        self.flags & FORCED != 0
    }

    /// Closed only: consecutive strikes.
    pub const fn strikes(self) -> u8 {
        (self.flags >> STRIKES_AT) as u8
    }

    /// Half-open only: consecutive probe successes.
    pub const fn streak(self) -> u8 {
        (self.flags >> STREAK_AT & NIBBLE) as u8
    }

    /// Re-opens since the last close (the backoff step), at most `MAX_BACKOFF_STEP`.
    pub const fn step(self) -> u8 {
        (self.flags >> STEP_AT & NIBBLE) as u8
    }

    /// Bumped on every phase change; a permit from an older generation is stale. It wraps
    /// after 4096 transitions, so a permit held across exactly a multiple of that many
    /// transitions would pass for fresh.
    pub const fn gen(self) -> u16 {
        (self.flags >> GEN_AT) as u16
    }

    fn set_probe_out(&mut self, out: bool) {
        self.flags = self.flags & !PROBE_OUT | if out { PROBE_OUT } else { 0 };
    }

    fn set_strikes(&mut self, strikes: u8) {
        self.flags = self.flags & !(0xFF << STRIKES_AT) | u32::from(strikes) << STRIKES_AT;
    }

    fn set_streak(&mut self, streak: u8) {
        self.flags = self.flags & !(NIBBLE << STREAK_AT) | (u32::from(streak) & NIBBLE) << STREAK_AT;
    }

    fn set_step(&mut self, step: u8) {
        self.flags = self.flags & !(NIBBLE << STEP_AT) | (u32::from(step) & NIBBLE) << STEP_AT;
    }

    /// Enters phase `to` in the next generation, with the probe slot free, not forced, and
    /// no strikes or streak; the backoff step is kept.
    fn enter(&mut self, to: Phase) {
        let gen = (self.gen().wrapping_add(1) & GEN_MASK) as u32;
        self.flags = self.flags & (NIBBLE << STEP_AT) | phase_bits(to) | gen << GEN_AT;
    }

    /// The mutating gate: may a call go ahead now? Grants the probe slot if it is free.
    pub fn acquire(self, policy: &Policy, now: Instant) -> Step<Result<Ticket, Refused>> {
        let mut b = Builder::new(self);
        let decision = b.acquire(policy, now);
        b.finish(decision)
    }

    /// Reports the outcome of a call admitted with `ticket`.
    pub fn record(self, policy: &Policy, ticket: Ticket, outcome: Outcome, now: Instant) -> Step<()> {
        let mut b = Builder::new(self);
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
        let mut b = Builder::new(self);
        b.expire_lease(policy, now);
        b.core
    }

    /// Opens as a trip would, with no call involved (see [`Builder::trip`]).
    pub fn trip(self, policy: &Policy, why: Reason, now: Instant) -> Step<()> {
        let mut b = Builder::new(self);
        b.trip(policy, why, now);
        b.finish(())
    }

    /// A windowed policy's rule (see [`Builder::judge`]).
    pub fn judge(self, policy: &Policy, gen: u16, tally: &Tally, now: Instant) -> Step<()> {
        let mut b = Builder::new(self);
        b.judge(policy, gen, tally, now);
        b.finish(())
    }

    /// Opens until [`Core::reset`].
    pub fn force_open(self, now: Instant) -> Step<()> {
        let mut b = Builder::new(self);
        b.force_open(now);
        b.finish(())
    }

    /// Closes, with every strike, streak and backoff step zeroed.
    pub fn reset(self, now: Instant) -> Step<()> {
        let mut b = Builder::new(self);
        b.reset(now);
        b.finish(())
    }

    /// The state as seen at `now`, with a lapsed lease taken into account.
    pub fn view(self, policy: &Policy, now: Instant) -> State {
        let c = self.settled(policy, now);
        if c.is(Phase::Closed) {
            State::Closed {
                strikes: c.strikes() as u32,
            }
        } else if c.is(Phase::Open) {
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

    // ---- the packed word -------------------------------------------------------------
    //
    // The flags in the low half, so that the hot path's tests take 32-bit immediates; the
    // anchor in the high half.

    /// Bits that are all zero exactly when the breaker is Closed with no strikes pending.
    pub const HOT_MASK: u64 = 0xFFF;

    /// The ticket of a call admitted on the hot path, if the packed word `w` is Closed with
    /// no strikes pending: there the gate admits without changing anything or reading the
    /// clock, exactly as [`Core::acquire`] would.
    #[inline(always)]
    pub const fn hot_ticket(w: u64) -> Option<Ticket> {
        if w & Self::HOT_MASK == 0 {
            Some(Ticket {
                gen: Core::unpack(w).gen(),
                probe: false,
            })
        } else {
            None
        }
    }

    /// Bits of a packed word that say "open, not forced, backoff step 0" when they equal
    /// [`Core::COOLING_BITS`]: phase, probe slot, forced, and the backoff step.
    pub const COOLING_MASK: u64 = (PHASE_BITS | PROBE_OUT | FORCED | NIBBLE << STEP_AT) as u64;
    /// [`Core::COOLING_MASK`]'s bits when open, not forced, at backoff step 0.
    pub const COOLING_BITS: u64 = 1;

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

    /// The 64-bit word: the flags in the low half, the anchor in the high half.
    #[inline(always)]
    pub const fn pack(self) -> u64 {
        self.flags as u64 | (self.anchor.as_millis() as u64) << 32
    }

    /// The state a packed word holds.
    #[inline(always)]
    pub const fn unpack(w: u64) -> Core {
        Core {
            flags: w as u32,
            anchor: Instant::from_millis((w >> 32) as u32),
        }
    }
}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("phase", &self.phase())
            .field("probe_out", &self.probe_out())
            .field("forced", &self.forced())
            .field("strikes", &self.strikes())
            .field("streak", &self.streak())
            .field("step", &self.step())
            .field("gen", &self.gen())
            .field("anchor", &self.anchor)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_through_the_word() {
        let c = Core::from_fields(
            Phase::HalfOpen,
            true,
            false,
            255,
            15,
            15,
            GEN_MASK,
            Instant::from_millis(u32::MAX),
        );
        assert_eq!(
            (
                c.phase(),
                c.probe_out(),
                c.forced(),
                c.strikes(),
                c.streak(),
                c.step(),
                c.gen()
            ),
            (Phase::HalfOpen, true, false, 255, 15, 15, GEN_MASK)
        );
        assert_eq!(c.anchor, Instant::from_millis(u32::MAX));
        assert_eq!(Core::unpack(c.pack()), c);
        assert_eq!(Core::unpack(Core::INITIAL.pack()), Core::INITIAL);
        assert_eq!(Core::INITIAL.pack() & Core::HOT_MASK, 0);
        for phase in [Phase::Closed, Phase::Open, Phase::HalfOpen] {
            let c = Core::from_fields(phase, false, true, 3, 2, 1, 9, Instant::from_millis(5));
            assert_eq!(
                (c.phase(), c.forced(), c.strikes(), c.streak(), c.step(), c.gen()),
                (phase, true, 3, 2, 1, 9)
            );
        }
    }

    #[test]
    fn setters_touch_only_their_field() {
        let mut c = Core::from_fields(Phase::Open, true, true, 7, 3, 5, 100, Instant::from_millis(9));
        c.set_strikes(200);
        c.set_streak(14);
        c.set_step(2);
        c.set_probe_out(false);
        assert_eq!(
            c,
            Core::from_fields(Phase::Open, false, true, 200, 14, 2, 100, Instant::from_millis(9))
        );
        c.enter(Phase::HalfOpen);
        assert_eq!(
            c,
            Core::from_fields(Phase::HalfOpen, false, false, 0, 0, 2, 101, Instant::from_millis(9))
        );
        let mut wraps = Core::from_fields(Phase::Closed, false, false, 0, 0, 0, GEN_MASK, Instant::ZERO);
        wraps.enter(Phase::Open);
        assert_eq!((wraps.phase(), wraps.gen()), (Phase::Open, 0));
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

    #[test]
    fn only_closed_without_strikes_is_hot() {
        let quiet = Core::from_fields(Phase::Closed, false, false, 0, 0, 3, 7, Instant::from_millis(12345));
        assert_eq!(quiet.pack() & Core::HOT_MASK, 0);
        let struck = Core::from_fields(Phase::Closed, false, false, 1, 0, 0, 7, Instant::ZERO);
        assert_ne!(struck.pack() & Core::HOT_MASK, 0);
        let open = Core::from_fields(Phase::Open, false, false, 0, 0, 0, 0, Instant::ZERO);
        assert_ne!(open.pack() & Core::HOT_MASK, 0);
        assert_eq!(open.pack() & Core::COOLING_MASK, Core::COOLING_BITS);
    }
}
