//! An independent reference model of the single breaker: the behaviour spec's transition
//! table written the plain way, to check `breaker-core`'s state machine against.
//!
//! Both [`Breaker`](breaker_core::Breaker) and [`SharedBreaker`](breaker_core::SharedBreaker)
//! run the one state machine of `breaker-core` (a packed word, bit operations, fast paths),
//! so comparing them with each other cannot see a mistake in it. [`Model`] is written
//! again from the spec, sharing no code with it: a struct of named fields, one method per
//! operation, each rule of the table where the table has it, its own arithmetic on plain
//! integers (time as wrapping `u32` milliseconds, spans as `i64`), no packing and no fast
//! path. It borrows only `breaker-core`'s plain data types, for its inputs and outputs
//! ([`Instant`], [`Duration`], [`Policy`]'s getters, [`Outcome`], [`State`],
//! [`Transition`], [`Refused`], [`Counters`], [`Snapshot`]), so its answers compare with
//! the real breakers' directly.
//!
//! Where the spec leaves a detail open, the model follows the choice `breaker-core` made
//! and documents, and says so where it models it:
//!
//! - time: a reading up to 2^31 ms before a stored instant is *earlier* (a clock stepped
//!   back: no time passed); an open breaker's wait left is counted to the instant the
//!   cooldown ends, so a stepped-back clock shows a longer wait, not a negative one;
//! - a trip verdict's hold: the cooldown clock starts later, so that the wait ends `hold`
//!   after the opening when the hold is the longer;
//! - lazy lease expiry is noticed (and counted) by the operations that change the breaker
//!   and take the time of a call (`try_acquire`, `record`, `trip`); the pure reads
//!   (`state`, `would_allow`, `is_stale`, `snapshot`) see it without counting it, and
//!   `force_open` and `reset` override it without noticing it;
//! - a permit is stale when any transition (or a restore) happened since it was granted:
//!   generations here never wrap (the real breakers' wrap after 2048 transitions, far
//!   beyond any history the tests drive);
//! - a half-open failure rate ([`Policy::with_half_open_rate`]): the verdict is taken as
//!   soon as it is certain (the failures reach the rate, or the probes left could no
//!   longer make them reach it), the one waiting for every permitted call would give;
//! - snapshots: what [`Snapshot`] documents (the wait left is stored and resumed from the
//!   restoring instant; a probe's lease left is capped by the policy's lease; values the
//!   policy cannot hold are clamped below its thresholds).

use breaker_core::{
    Counters, Duration, Instant, Outcome, Phase, Policy, Reason, RefusalReason, Refused, Snapshot, State, Transition,
    Verdict, WindowSnapshot,
};

/// The longest span the breaker keeps, in milliseconds (`Duration::MAX`: 2^30 - 1).
pub const LONGEST_SPAN_MS: u32 = (1 << 30) - 1;

/// The most re-opens the backoff counts (`MAX_BACKOFF_STEP`).
pub const LAST_BACKOFF_STEP: u32 = 15;

/// Leave to make one call, handed out by [`Model::try_acquire`]: plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModelPermit {
    /// The model's generation when the permit was granted: its outcome counts only while
    /// no transition has happened since.
    pub generation: u64,
    /// Whether this call is the half-open probe.
    pub probe: bool,
}

/// The reference model of one breaker.
///
/// ```
/// use breaker_core::{Duration, Instant, Outcome, Phase, Policy};
/// use tests::model::Model;
///
/// let mut m = Model::new(Policy::new(1, Duration::from_secs(30)));
/// let p = m.try_acquire(Instant::ZERO).unwrap();
/// m.record(p, Outcome::STRIKE, Instant::ZERO);
/// assert_eq!(m.state(Instant::ZERO).phase(), Phase::Open);
/// assert_eq!(m.take_transitions().len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Model {
    policy: Policy,
    phase: Phase,
    /// Closed: consecutive strikes since the last success.
    strikes: u32,
    /// Open: opened by `force_open`, stays open until `reset`.
    forced: bool,
    /// Open (not forced): the reading the cooldown counts from. The opening instant, or
    /// later when a trip verdict's hold is longer than the cooldown: the wait then ends
    /// `hold` after the opening.
    cooldown_from: u32,
    /// Half-open: the probe slot is taken.
    probe_out: bool,
    /// Half-open with the probe out: when the probe was granted (its lease runs from here).
    probe_started_at: u32,
    /// Half-open: consecutive probe successes (under a half-open failure rate: the probe
    /// successes counted).
    streak: u32,
    /// Half-open under a half-open failure rate: the probe failures counted.
    probe_failures: u32,
    /// Re-opens since the last close, at most [`LAST_BACKOFF_STEP`].
    backoff_step: u32,
    /// Bumped by every transition and every restore.
    generation: u64,
    counters: Counters,
    /// Transitions reported and not yet taken.
    transitions: Vec<Transition>,
}

/// Milliseconds from reading `from` to reading `to` of the wrapping 32-bit counter:
/// negative when `to` is up to 2^31 ms *before* `from` (a clock that stepped back).
fn distance(from: u32, to: u32) -> i64 {
    let forward = i64::from(to) - i64::from(from);
    let forward = forward.rem_euclid(1 << 32);
    if forward < 1 << 31 {
        forward
    } else {
        forward - (1 << 32)
    }
}

/// Time that passed from `from` to `to`: none if the clock reads earlier.
fn elapsed(from: u32, to: u32) -> i64 {
    distance(from, to).max(0)
}

/// The reading `ms` after `at`, wrapping like the counter.
fn after(at: u32, ms: i64) -> u32 {
    (i64::from(at) + ms).rem_euclid(1 << 32) as u32
}

fn ms(d: Duration) -> i64 {
    i64::from(d.as_millis())
}

fn span(ms: i64) -> Duration {
    Duration::from_millis(ms.clamp(0, i64::from(LONGEST_SPAN_MS)) as u32)
}

fn instant(at: u32) -> Instant {
    Instant::from_millis(at)
}

impl Model {
    /// A closed breaker following `policy`, with every counter at zero.
    pub fn new(policy: Policy) -> Model {
        Model {
            policy,
            phase: Phase::Closed,
            strikes: 0,
            forced: false,
            cooldown_from: 0,
            probe_out: false,
            probe_started_at: 0,
            streak: 0,
            probe_failures: 0,
            backoff_step: 0,
            generation: 0,
            counters: Counters::ZERO,
            transitions: Vec::new(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The counters so far (all of them, as the single-owner breaker keeps them).
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The transitions reported since the last call, oldest first.
    pub fn take_transitions(&mut self) -> Vec<Transition> {
        std::mem::take(&mut self.transitions)
    }

    // ---- the rules -------------------------------------------------------------------

    /// The cooldown after `step` re-opens without a close: the base cooldown multiplied
    /// once per step, never above the cap.
    fn cooldown_at_step(&self, step: u32) -> i64 {
        let cap = ms(self.policy.max_cooldown());
        let mut cooldown = ms(self.policy.cooldown());
        for _ in 0..step {
            cooldown = (cooldown * i64::from(self.policy.backoff_multiplier())).min(cap);
        }
        cooldown
    }

    fn cooldown(&self) -> i64 {
        self.cooldown_at_step(self.backoff_step)
    }

    /// Any change of phase: reported, a new generation, and a clean slate (no strikes, no
    /// streak, no probe out, not forced). The backoff step stays.
    fn transition(&mut self, to: Phase, why: Reason, at: u32, cooldown: i64) {
        let changes = &mut self.counters.transitions;
        let kind = match (self.phase, to) {
            (Phase::Closed, Phase::Open) => Some(&mut changes.closed_to_open),
            (Phase::Open, Phase::HalfOpen) => Some(&mut changes.open_to_half_open),
            (Phase::HalfOpen, Phase::Closed) => Some(&mut changes.half_open_to_closed),
            (Phase::HalfOpen, Phase::Open) => Some(&mut changes.half_open_to_open),
            (Phase::Open, Phase::Closed) => Some(&mut changes.open_to_closed),
            // A phase kept (`force_open` while open, `reset` while closed) is no change.
            _ => None,
        };
        if let Some(n) = kind {
            *n = n.saturating_add(1);
        }
        self.transitions.push(Transition {
            from: self.phase,
            to,
            why,
            at: instant(at),
            cooldown: span(cooldown),
        });
        self.phase = to;
        self.generation += 1;
        self.strikes = 0;
        self.streak = 0;
        self.probe_failures = 0;
        self.probe_out = false;
        self.forced = false;
    }

    /// Under a half-open failure rate: whether `failures` of the permitted calls reach it
    /// (`failures / calls >= percent / 100`).
    fn rate_reached(&self, failures: u32) -> bool {
        let (calls, percent) = self.policy.half_open_rate().expect("a half-open failure rate");
        failures * 100 >= percent * calls
    }

    /// Under a half-open failure rate, after a probe's outcome was counted: its verdict if
    /// it is certain. Re-open if the failures reach the rate; close if they could not
    /// reach it even were every permitted probe still to come a failure.
    fn half_open_verdict(&mut self, now: u32, hold: i64) {
        let (calls, _) = self.policy.half_open_rate().expect("a half-open failure rate");
        let counted = self.streak + self.probe_failures;
        if self.rate_reached(self.probe_failures) {
            self.advance_backoff();
            self.open_as_trip(Reason::ProbeFailed, now, hold);
        } else if !self.rate_reached(self.probe_failures + (calls - counted)) {
            self.backoff_step = 0;
            self.transition(Phase::Closed, Reason::Recovered, now, 0);
        } else {
            self.probe_out = false;
        }
    }

    /// Opens as a trip at `at` (strikes, a trip verdict, a failed or lapsed probe,
    /// `trip`): the cooldown of the current backoff step, or the hold if that is longer.
    fn open_as_trip(&mut self, why: Reason, at: u32, hold: i64) {
        let cooldown = self.cooldown();
        let wait = cooldown.max(hold);
        self.transition(Phase::Open, why, at, wait);
        // The transition reports the whole wait; the cooldown clock starts late enough
        // that the wait ends `wait` after `at`.
        self.cooldown_from = after(at, wait - cooldown);
        self.counters.trips = self.counters.trips.saturating_add(1);
    }

    fn advance_backoff(&mut self) {
        self.backoff_step = (self.backoff_step + 1).min(LAST_BACKOFF_STEP);
    }

    /// Open: fresh bad news at `now` restarts the wait (with its hold, if any), but never
    /// shortens a wait that already ends later.
    fn restart_wait(&mut self, now: u32, hold: i64) {
        let cooldown = self.cooldown();
        let from = after(now, cooldown.max(hold) - cooldown);
        // The running wait is kept only if it starts no earlier than the new one. (Exactly
        // 2^31 ms apart, each reading looks earlier than the other: the new one wins.)
        if distance(from, self.cooldown_from) < 0 {
            self.cooldown_from = from;
        }
    }

    /// Whether the probe's lease has run out by `now`.
    fn lease_lapsed(&self, now: u32) -> bool {
        self.phase == Phase::HalfOpen
            && self.probe_out
            && elapsed(self.probe_started_at, now) >= ms(self.policy.probe_lease())
    }

    /// The lazily noticed lease expiry: a vanished probe counts as failed from the
    /// lease's end, so the re-open is backdated there and the backoff advances.
    fn notice_lapsed_lease(&mut self, now: u32) {
        if self.lease_lapsed(now) {
            let lease_end = after(self.probe_started_at, ms(self.policy.probe_lease()));
            self.counters.lease_expiries = self.counters.lease_expiries.saturating_add(1);
            self.advance_backoff();
            self.open_as_trip(Reason::LeaseExpired, lease_end, 0);
        }
    }

    /// The breaker as the next call at `now` finds it, changing nothing here.
    fn settled(&self, now: u32) -> Model {
        let mut m = self.clone();
        m.notice_lapsed_lease(now);
        m
    }

    /// Open, not forced: the wait left at `now` before a call may become the probe,
    /// counted to the instant the cooldown ends (so a clock stepped back before the
    /// cooldown's start shows the longer wait it really has), at most `Duration::MAX`.
    fn wait_left(&self, now: u32) -> i64 {
        let cooldown = self.cooldown();
        let waited = distance(self.cooldown_from, now);
        if waited >= cooldown {
            0
        } else {
            (cooldown - waited).min(i64::from(LONGEST_SPAN_MS))
        }
    }

    fn grant_probe(&mut self, now: u32) -> Result<ModelPermit, Refused> {
        self.probe_out = true;
        self.probe_started_at = now;
        self.counters.probes = self.counters.probes.saturating_add(1);
        Ok(ModelPermit {
            generation: self.generation,
            probe: true,
        })
    }

    // ---- the operations --------------------------------------------------------------

    /// The gate: may a call go ahead at `now`? A grant in half-open (or in open once the
    /// cooldown is over, which moves to half-open) takes the one probe slot.
    pub fn try_acquire(&mut self, now: Instant) -> Result<ModelPermit, Refused> {
        let now = now.as_millis();
        self.notice_lapsed_lease(now);
        let decision = match self.phase {
            Phase::Closed => Ok(ModelPermit {
                generation: self.generation,
                probe: false,
            }),
            Phase::Open if self.forced => Err(Refused {
                reason: RefusalReason::ForcedOpen,
                retry_in: None,
            }),
            Phase::Open => {
                let left = self.wait_left(now);
                if left == 0 {
                    self.transition(Phase::HalfOpen, Reason::CooldownElapsed, now, 0);
                    self.grant_probe(now)
                } else {
                    Err(Refused {
                        reason: RefusalReason::Open,
                        retry_in: Some(span(left)),
                    })
                }
            }
            Phase::HalfOpen if self.probe_out => Err(Refused {
                reason: RefusalReason::Probing,
                retry_in: None,
            }),
            Phase::HalfOpen => self.grant_probe(now),
        };
        match decision {
            Ok(_) => self.counters.calls = self.counters.calls.saturating_add(1),
            Err(_) => self.counters.skips = self.counters.skips.saturating_add(1),
        }
        decision
    }

    /// The pure oracle: would a call be allowed at `now`? Changes nothing.
    pub fn would_allow(&self, now: Instant) -> bool {
        let m = self.settled(now.as_millis());
        match m.phase {
            Phase::Closed => true,
            Phase::Open => !m.forced && m.wait_left(now.as_millis()) == 0,
            Phase::HalfOpen => !m.probe_out,
        }
    }

    /// Whether an outcome reported at `now` with `permit` would be ignored: a transition
    /// (perhaps a lease expiry noticed at `now`) or a restore happened since its grant.
    pub fn is_stale(&self, permit: &ModelPermit, now: Instant) -> bool {
        self.settled(now.as_millis()).generation != permit.generation
    }

    /// Reports the outcome of the call made under `permit`, at `now`.
    pub fn record(&mut self, permit: ModelPermit, outcome: Outcome, now: Instant) {
        let now = now.as_millis();
        self.notice_lapsed_lease(now);
        let fresh = permit.generation == self.generation;
        match outcome {
            Outcome::Success => {
                self.counters.successes = self.counters.successes.saturating_add(1);
                // A success from before the last transition describes an older world.
                if fresh && self.phase == Phase::Closed {
                    self.strikes = 0;
                } else if fresh && self.phase == Phase::HalfOpen {
                    self.counters.probe_successes = self.counters.probe_successes.saturating_add(1);
                    self.streak += 1;
                    if self.policy.half_open_rate().is_some() {
                        self.half_open_verdict(now, 0);
                    } else if self.streak >= self.policy.probes_to_close() {
                        self.backoff_step = 0;
                        self.transition(Phase::Closed, Reason::Recovered, now, 0);
                    } else {
                        self.probe_out = false;
                    }
                }
            }
            Outcome::Error(Verdict::Neutral) => {
                self.counters.neutrals = self.counters.neutrals.saturating_add(1);
                if fresh && self.phase == Phase::HalfOpen {
                    self.counters.probe_neutrals = self.counters.probe_neutrals.saturating_add(1);
                    self.probe_out = false;
                }
            }
            Outcome::Error(verdict) => {
                self.counters.failures = self.counters.failures.saturating_add(1);
                let hold = match verdict {
                    Verdict::TripFor(d) => ms(d),
                    _ => 0,
                };
                if self.phase == Phase::Open {
                    // Fresh bad news, stale permit or not. (While forced the wait means
                    // nothing: `reset` closes and `force_open` starts afresh.)
                    if !self.forced {
                        self.restart_wait(now, hold);
                    }
                } else if fresh && self.phase == Phase::Closed {
                    self.strikes += 1;
                    if verdict != Verdict::Strike {
                        self.open_as_trip(Reason::TripVerdict, now, hold);
                    } else if self.strikes >= self.policy.trip() {
                        self.open_as_trip(Reason::Strikes, now, hold);
                    }
                } else if fresh && self.phase == Phase::HalfOpen {
                    self.counters.probe_failures = self.counters.probe_failures.saturating_add(1);
                    if verdict == Verdict::Strike && self.policy.half_open_rate().is_some() {
                        // A failure counted toward the rate (patient probation or not).
                        self.probe_failures += 1;
                        self.half_open_verdict(now, hold);
                    } else if verdict == Verdict::Strike && self.policy.patient_probation() {
                        // Patient probation: a blip costs the streak, not the cooldown paid.
                        self.streak = 0;
                        self.probe_out = false;
                    } else {
                        self.advance_backoff();
                        self.open_as_trip(Reason::ProbeFailed, now, hold);
                    }
                }
            }
        }
    }

    /// Opens at `now` as a trip would, with no call involved (`Reason::Predicted`, usually):
    /// from closed at once; from half-open as a failed probe (the backoff advances); while
    /// open the wait restarts from `now` (never shortened); forced open stays forced.
    pub fn trip(&mut self, why: Reason, now: Instant) {
        let now = now.as_millis();
        self.notice_lapsed_lease(now);
        match self.phase {
            Phase::Open if self.forced => {}
            Phase::Open => self.restart_wait(now, 0),
            Phase::HalfOpen => {
                self.advance_backoff();
                self.open_as_trip(why, now, 0);
            }
            Phase::Closed => self.open_as_trip(why, now, 0),
        }
    }

    /// Opens until [`Model::reset`], whatever the cooldown says. Not a trip: no trip is
    /// counted and the backoff does not advance; the transition reports no cooldown.
    pub fn force_open(&mut self, now: Instant) {
        self.transition(Phase::Open, Reason::ForcedOpen, now.as_millis(), 0);
        self.forced = true;
        self.cooldown_from = now.as_millis();
    }

    /// Closes, with strikes, streak and the backoff step zeroed; counters stay.
    pub fn reset(&mut self, now: Instant) {
        self.backoff_step = 0;
        self.transition(Phase::Closed, Reason::Reset, now.as_millis(), 0);
    }

    /// The state at `now`, a lapsed lease taken into account. Pure.
    pub fn state(&self, now: Instant) -> State {
        let now = now.as_millis();
        let m = self.settled(now);
        match m.phase {
            Phase::Closed => State::Closed { strikes: m.strikes },
            Phase::Open if m.forced => State::Open {
                remaining: Duration::ZERO,
                forced: true,
            },
            Phase::Open => State::Open {
                remaining: span(m.wait_left(now)),
                forced: false,
            },
            Phase::HalfOpen => State::HalfOpen {
                probing: m.probe_out,
                streak: m.streak,
            },
        }
    }

    /// The state and counters as of `now`, as a [`Snapshot`]: the wait left rather than
    /// an instant (open: to the probe; half-open with a probe out: to the lease's end).
    /// A lapsed lease shows as the re-open it is, as `state` shows it.
    pub fn snapshot(&self, now: Instant) -> Snapshot {
        let now = now.as_millis();
        let m = self.settled(now);
        let remaining = match m.phase {
            Phase::Open if !m.forced => m.wait_left(now),
            Phase::HalfOpen if m.probe_out => {
                let lease = ms(self.policy.probe_lease());
                let lease_end = after(m.probe_started_at, lease);
                elapsed(now, lease_end).min(lease)
            }
            _ => 0,
        };
        Snapshot {
            phase: m.phase,
            forced: m.forced,
            probing: m.probe_out,
            strikes: if m.phase == Phase::HalfOpen {
                m.probe_failures as u8
            } else {
                m.strikes as u8
            },
            streak: m.streak as u8,
            step: m.backoff_step as u8,
            remaining: span(remaining),
            counters: self.counters,
            // The model covers consecutive-strike policies, which keep no window.
            window: WindowSnapshot::None,
        }
    }

    /// Takes the state and counters of `snapshot` as of `now`: the wait left resumes from
    /// `now`, a probe's lease left too (at most this policy's lease), values this policy
    /// cannot hold are clamped below its thresholds, and every permit granted before is
    /// stale. No transition is reported.
    pub fn restore(&mut self, snapshot: &Snapshot, now: Instant) {
        let now = now.as_millis();
        self.generation += 1;
        self.phase = snapshot.phase;
        self.forced = snapshot.forced && snapshot.phase == Phase::Open;
        self.probe_out = snapshot.probing && snapshot.phase == Phase::HalfOpen;
        self.backoff_step = u32::from(snapshot.step).min(LAST_BACKOFF_STEP);
        self.strikes = match snapshot.phase {
            Phase::Closed => u32::from(snapshot.strikes).min(self.policy.trip() - 1),
            _ => 0,
        };
        self.streak = match snapshot.phase {
            Phase::HalfOpen if self.policy.half_open_rate().is_some() => {
                // The most successes that leave the verdict open: with all the probes left
                // failures, the rate is still reached.
                let (calls, _) = self.policy.half_open_rate().unwrap();
                let most = (0..calls).rev().find(|&s| self.rate_reached(calls - s)).unwrap_or(0);
                u32::from(snapshot.streak).min(most)
            }
            Phase::HalfOpen => u32::from(snapshot.streak).min(self.policy.probes_to_close() - 1),
            _ => 0,
        };
        self.probe_failures = match snapshot.phase {
            Phase::HalfOpen if self.policy.half_open_rate().is_some() => {
                // The most failures that do not reach the rate.
                let (calls, _) = self.policy.half_open_rate().unwrap();
                let most = (0..calls).rev().find(|&f| !self.rate_reached(f)).unwrap_or(0);
                u32::from(snapshot.strikes).min(most)
            }
            _ => 0,
        };
        let left = ms(snapshot.remaining);
        // The wait left ends `left` after `now`.
        self.cooldown_from = after(now, left - self.cooldown());
        let lease = ms(self.policy.probe_lease());
        self.probe_started_at = after(now, left.min(lease) - lease);
        self.counters = snapshot.counters;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_is_signed_within_half_the_counter() {
        assert_eq!(distance(10, 15), 5);
        assert_eq!(distance(15, 10), -5);
        assert_eq!(distance(u32::MAX - 1, 3), 5);
        assert_eq!(distance(3, u32::MAX - 1), -5);
        assert_eq!(distance(0, (1 << 31) - 1), (1 << 31) - 1);
        assert_eq!(distance(0, 1 << 31), -(1 << 31));
        assert_eq!(after(u32::MAX, 1), 0);
        assert_eq!(after(0, -1), u32::MAX);
    }

    #[test]
    fn backoff_multiplies_up_to_the_cap() {
        let m = Model::new(Policy::new(1, Duration::from_secs(2)).with_backoff(3, Duration::from_secs(50)));
        let steps: Vec<_> = (0..5).map(|s| m.cooldown_at_step(s)).collect();
        assert_eq!(steps, [2_000, 6_000, 18_000, 50_000, 50_000]);
    }
}
