//! The transition table as pure functions over a packed, `Copy` state.
//!
//! Both the single-owner [`Breaker`](crate::Breaker) and the shared
//! [`SharedBreaker`](crate::SharedBreaker) apply exactly these functions; they differ only in
//! how they store the state (a plain field, or one atomic word updated by compare-and-swap).

use crate::policy::MAX_BACKOFF_STEP;
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
}

/// Generation numbers are this many bits wide (they wrap; see [`Core::gen`]).
pub(crate) const GEN_BITS: u32 = 12;
const GEN_MASK: u16 = (1 << GEN_BITS) - 1;

/// The whole state of one breaker, small enough to pack into one `u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Core {
    pub phase: Phase,
    /// Half-open only: the probe slot is taken.
    pub probe_out: bool,
    /// Open only: forced open until reset.
    pub forced: bool,
    /// Closed only: consecutive strikes.
    pub strikes: u8,
    /// Half-open only: consecutive probe successes.
    pub streak: u8,
    /// Re-opens since the last close (the backoff step), at most `MAX_BACKOFF_STEP`.
    pub step: u8,
    /// Bumped on every phase change; a permit from an older generation is stale. It wraps
    /// after 4096 transitions, so a permit held across exactly a multiple of that many
    /// transitions would pass for fresh.
    pub gen: u16,
    /// Open: the instant the cooldown counts from (later than the real opening when a trip
    /// verdict asked for a longer hold). Half-open with a probe out: when the probe started.
    pub anchor: Instant,
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

/// The result of one pure step: the next state, what happened, and up to two transitions
/// (a lazily noticed lease expiry can be followed at once by a new probe).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step<D> {
    pub next: Core,
    pub decision: D,
    pub events: Events,
    pub transitions: [Option<Transition>; 2],
}

impl<D> Step<D> {
    pub fn transitions(&self) -> impl Iterator<Item = &Transition> {
        self.transitions.iter().flatten()
    }

    /// The same step with its decision taken out.
    pub fn without_decision(self) -> Step<()> {
        Step {
            next: self.next,
            decision: (),
            events: self.events,
            transitions: self.transitions,
        }
    }
}

struct Builder {
    core: Core,
    events: Events,
    transitions: [Option<Transition>; 2],
}

impl Builder {
    fn new(core: Core) -> Builder {
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
            from: self.core.phase,
            to,
            why,
            at,
            cooldown,
        };
        match self.transitions {
            [None, _] => self.transitions[0] = Some(t),
            _ => self.transitions[1] = Some(t),
        }
        self.core.phase = to;
        self.core.gen = self.core.gen.wrapping_add(1) & GEN_MASK;
        self.core.probe_out = false;
        self.core.forced = false;
        self.core.strikes = 0;
        self.core.streak = 0;
    }

    /// Opens (or re-opens) at `at`, staying open at least `hold`: a trip. (`force_open`
    /// goes straight to the phase; it is not a trip.)
    fn open(&mut self, policy: &Policy, why: Reason, at: Instant, hold: Duration) {
        let cooldown = policy.cooldown_at(self.core.step);
        self.go(Phase::Open, why, at, cooldown.max(hold));
        self.core.anchor = at.wrapping_add(hold.saturating_sub(cooldown));
        self.events.set(Events::TRIP);
    }

    fn advance_backoff(&mut self) {
        if self.core.step < MAX_BACKOFF_STEP {
            self.core.step += 1;
        }
    }

    /// Notices a probe lease that ran out: re-opens, backdated to the lease's end.
    fn expire_lease(&mut self, policy: &Policy, now: Instant) {
        let c = self.core;
        if c.phase == Phase::HalfOpen && c.probe_out && now.since(c.anchor) >= policy.probe_lease() {
            self.advance_backoff();
            self.events.set(Events::LEASE_EXPIRED);
            let lease_end = c.anchor.wrapping_add(policy.probe_lease());
            self.open(policy, Reason::LeaseExpired, lease_end, Duration::ZERO);
        }
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
        phase: Phase::Closed,
        probe_out: false,
        forced: false,
        strikes: 0,
        streak: 0,
        step: 0,
        gen: 0,
        anchor: Instant::ZERO,
    };

    /// The mutating gate: may a call go ahead now? Grants the probe slot if it is free.
    pub fn acquire(self, policy: &Policy, now: Instant) -> Step<Result<Ticket, Refused>> {
        let mut b = Builder::new(self);
        b.expire_lease(policy, now);
        let c = b.core;
        let decision = match c.phase {
            Phase::Closed => Ok(Ticket {
                gen: c.gen,
                probe: false,
            }),
            Phase::Open if c.forced => Err(Refused {
                reason: RefusalReason::ForcedOpen,
                retry_in: None,
            }),
            Phase::Open => {
                let (elapsed, cooldown) = (now.since(c.anchor), policy.cooldown_at(c.step));
                if elapsed >= cooldown {
                    b.go(Phase::HalfOpen, Reason::CooldownElapsed, now, Duration::ZERO);
                    b.core.probe_out = true;
                    b.core.anchor = now;
                    Ok(Ticket {
                        gen: b.core.gen,
                        probe: true,
                    })
                } else {
                    Err(Refused {
                        reason: RefusalReason::Open,
                        // Not `cooldown - elapsed`: a trip verdict's hold can make it longer.
                        retry_in: Some(c.remaining(policy, now)),
                    })
                }
            }
            Phase::HalfOpen if c.probe_out => Err(Refused {
                reason: RefusalReason::Probing,
                retry_in: None,
            }),
            Phase::HalfOpen => {
                b.core.probe_out = true;
                b.core.anchor = now;
                Ok(Ticket {
                    gen: c.gen,
                    probe: true,
                })
            }
        };
        match decision {
            Ok(t) => {
                b.events.set(Events::ADMITTED);
                if t.probe {
                    b.events.set(Events::PROBE_GRANTED);
                }
            }
            Err(_) => b.events.set(Events::SKIPPED),
        }
        b.finish(decision)
    }

    /// Reports the outcome of a call admitted with `ticket`.
    pub fn record(self, policy: &Policy, ticket: Ticket, outcome: Outcome, now: Instant) -> Step<()> {
        let mut b = Builder::new(self);
        b.expire_lease(policy, now);
        let c = b.core;
        let fresh = c.issued(ticket);
        match outcome {
            Outcome::Success => {
                b.events.set(Events::SUCCESS);
                if fresh && c.phase == Phase::Closed {
                    b.core.strikes = 0;
                } else if fresh {
                    let streak = c.streak.saturating_add(1);
                    if u32::from(streak) >= policy.probes_to_close() {
                        b.core.step = 0;
                        b.go(Phase::Closed, Reason::Recovered, now, Duration::ZERO);
                    } else {
                        b.core.streak = streak;
                        b.core.probe_out = false;
                    }
                }
            }
            Outcome::Error(Verdict::Neutral) => {
                b.events.set(Events::NEUTRAL);
                if fresh && c.phase == Phase::HalfOpen {
                    b.core.probe_out = false;
                }
            }
            Outcome::Error(verdict) => {
                b.events.set(Events::FAILURE);
                let hold = hold_of(verdict);
                match c.phase {
                    Phase::Closed if fresh => {
                        let strikes = c.strikes.saturating_add(1);
                        if verdict != Verdict::Strike {
                            b.open(policy, Reason::TripVerdict, now, hold);
                        } else if u32::from(strikes) >= policy.trip() {
                            b.open(policy, Reason::Strikes, now, hold);
                        } else {
                            b.core.strikes = strikes;
                        }
                    }
                    Phase::HalfOpen if fresh => {
                        b.advance_backoff();
                        b.open(policy, Reason::ProbeFailed, now, hold);
                    }
                    Phase::Open => {
                        // Fresh bad news restarts the wait; it never shortens a longer hold.
                        let cooldown = policy.cooldown_at(c.step);
                        let candidate = now.wrapping_add(hold.saturating_sub(cooldown));
                        b.core.anchor = c.anchor.later(candidate);
                    }
                    _ => {}
                }
            }
        }
        b.finish(())
    }

    /// Whether `ticket` was issued in the current generation and its outcome still counts.
    fn issued(&self, ticket: Ticket) -> bool {
        ticket.gen == self.gen
            && match self.phase {
                Phase::Closed => !ticket.probe,
                Phase::HalfOpen => ticket.probe && self.probe_out,
                Phase::Open => false,
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

    /// Opens until [`Core::reset`].
    pub fn force_open(self, now: Instant) -> Step<()> {
        let mut b = Builder::new(self);
        b.go(Phase::Open, Reason::ForcedOpen, now, Duration::ZERO);
        b.core.forced = true;
        b.core.anchor = now;
        b.finish(())
    }

    /// Closes, with every strike, streak and backoff step zeroed.
    pub fn reset(self, now: Instant) -> Step<()> {
        let mut b = Builder::new(self);
        b.core.step = 0;
        b.go(Phase::Closed, Reason::Reset, now, Duration::ZERO);
        b.finish(())
    }

    /// The state as seen at `now`, with a lapsed lease taken into account.
    pub fn view(self, policy: &Policy, now: Instant) -> State {
        let c = self.settled(policy, now);
        match c.phase {
            Phase::Closed => State::Closed {
                strikes: c.strikes.into(),
            },
            Phase::Open if c.forced => State::Open {
                remaining: Duration::ZERO,
                forced: true,
            },
            Phase::Open => State::Open {
                remaining: c.remaining(policy, now),
                forced: false,
            },
            Phase::HalfOpen => State::HalfOpen {
                probing: c.probe_out,
                streak: c.streak.into(),
            },
        }
    }

    /// Open: the wait left before a call may become the probe. Otherwise zero. Zero
    /// exactly when [`Core::acquire`] would let a call through, at every reading of the
    /// clock: a reading before the anchor (a stepped-back clock, a trip verdict's hold, or
    /// one more than 2^31 ms after it) adds the time to the anchor to the full cooldown.
    pub fn remaining(self, policy: &Policy, now: Instant) -> Duration {
        if self.phase != Phase::Open {
            return Duration::ZERO;
        }
        let cooldown = policy.cooldown_at(self.step);
        if now.since(self.anchor) >= cooldown {
            return Duration::ZERO;
        }
        // `cooldown - offset` for an offset in -2^31..cooldown: between 1 and
        // 2^31 + 2^30, so exact in a u32 (then clamped to `Duration::MAX`).
        let offset = now.offset_from(self.anchor) as u32;
        Duration::from_millis(cooldown.as_millis().wrapping_sub(offset))
    }

    // ---- packing into one u64 -------------------------------------------------------
    //
    // bits  0..2 phase      2 probe_out    3 forced     4..12 strikes
    //      12..16 streak   16..20 step    20..32 gen   32..64 anchor
    //
    // Closed with no strikes has bits 0..12 all zero: the hot path tests only that. The
    // flags sit in the low half so that the tests take 32-bit immediates.

    /// Bits that are all zero exactly when the breaker is Closed with no strikes pending.
    pub const HOT_MASK: u64 = 0xFFF;

    /// The ticket of a call admitted on the hot path, if the packed word `w` is Closed with
    /// no strikes pending: there the gate admits without changing anything or reading the
    /// clock, exactly as [`Core::acquire`] would.
    #[inline(always)]
    pub const fn hot_ticket(w: u64) -> Option<Ticket> {
        if w & Self::HOT_MASK == 0 {
            Some(Ticket {
                gen: Self::gen_of(w),
                probe: false,
            })
        } else {
            None
        }
    }

    /// Bits of a packed word that say "open, not forced, backoff step 0" when they equal
    /// [`Core::COOLING_BITS`]: phase, probe slot, forced, and the backoff step.
    pub const COOLING_MASK: u64 = 0xF | 0xF << 16;
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

    pub const fn pack(self) -> u64 {
        let phase = match self.phase {
            Phase::Closed => 0u64,
            Phase::Open => 1,
            Phase::HalfOpen => 2,
        };
        phase
            | (self.probe_out as u64) << 2
            | (self.forced as u64) << 3
            | (self.strikes as u64) << 4
            | ((self.streak & 0xF) as u64) << 12
            | ((self.step & 0xF) as u64) << 16
            | ((self.gen & GEN_MASK) as u64) << 20
            | (self.anchor.as_millis() as u64) << 32
    }

    pub const fn unpack(w: u64) -> Core {
        Core {
            phase: match w & 3 {
                0 => Phase::Closed,
                1 => Phase::Open,
                _ => Phase::HalfOpen,
            },
            probe_out: (w >> 2) & 1 == 1,
            forced: (w >> 3) & 1 == 1,
            strikes: (w >> 4) as u8,
            streak: ((w >> 12) & 0xF) as u8,
            step: ((w >> 16) & 0xF) as u8,
            gen: ((w >> 20) as u16) & GEN_MASK,
            anchor: Instant::from_millis((w >> 32) as u32),
        }
    }

    /// The generation bits of a packed word.
    pub const fn gen_of(w: u64) -> u16 {
        ((w >> 20) as u16) & GEN_MASK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips() {
        let c = Core {
            phase: Phase::HalfOpen,
            probe_out: true,
            forced: false,
            strikes: 255,
            streak: 15,
            step: 15,
            gen: GEN_MASK,
            anchor: Instant::from_millis(u32::MAX),
        };
        assert_eq!(Core::unpack(c.pack()), c);
        assert_eq!(Core::unpack(Core::INITIAL.pack()), Core::INITIAL);
        assert_eq!(Core::INITIAL.pack() & Core::HOT_MASK, 0);
    }

    #[test]
    fn only_closed_without_strikes_is_hot() {
        let mut c = Core::INITIAL;
        c.gen = 7;
        c.anchor = Instant::from_millis(12345);
        assert_eq!(c.pack() & Core::HOT_MASK, 0);
        c.strikes = 1;
        assert_ne!(c.pack() & Core::HOT_MASK, 0);
        let open = Core {
            phase: Phase::Open,
            ..Core::INITIAL
        };
        assert_ne!(open.pack() & Core::HOT_MASK, 0);
    }
}
