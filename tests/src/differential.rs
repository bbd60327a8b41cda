//! The driver of the differential test (`tests/differential.rs`) and of the fuzz target
//! `state_machine`: the reference [`Model`], a [`Breaker`] and a [`SharedBreaker`] run the
//! same history of [`Op`]s, and after every step their decisions (with the refusal's
//! reason and wait), states, oracles, reported transitions (with their instants and
//! cooldowns), permit staleness, snapshots and counters must agree; [`history`] panics at
//! the first difference.
//!
//! Histories are drawn by [`Draw`], from a seed (the property test) or from the bytes of
//! a fuzz input (so that the fuzzer's mutations steer the history).

use std::cell::RefCell;
use std::sync::Mutex;

use breaker_core::{
    Breaker, CallError, Clock, Counters, Duration, Instant, ManualClock, Observer, Outcome, Permit, Phase, Policy,
    Reason, SharedBreaker, SharedPermit, Snapshot, Transition, TransitionCounts, Verdict, WindowSnapshot,
};

use crate::model::{Model, ModelPermit};

/// Remembers every transition, for the single-owner breaker.
#[derive(Default)]
pub struct Heard(RefCell<Vec<Transition>>);

impl Observer for Heard {
    fn on_transition(&self, t: &Transition) {
        self.0.borrow_mut().push(*t);
    }
}

/// Remembers every transition, for the shared breaker.
#[derive(Default)]
pub struct SharedHeard(Mutex<Vec<Transition>>);

impl Observer for SharedHeard {
    fn on_transition(&self, t: &Transition) {
        self.0.lock().unwrap().push(*t);
    }
}

/// One thing that happens to the three breakers.
#[derive(Clone, Debug)]
pub enum Op {
    /// The clock moves forward (zero: it is stuck).
    Advance(u32),
    /// The clock steps backwards.
    Back(u32),
    /// The clock jumps to just before the counter wraps.
    NearWrap(u32),
    /// The clock leaps forward by just under (or just over) 2^31 ms.
    Leap(i32),
    /// A caller asks the oracle, then the gate, and keeps the permit.
    Acquire,
    /// The `i`-th permit held (modulo their number) reports.
    Report(usize, Outcome),
    /// The `i`-th permit is dropped unanswered.
    Drop(usize),
    /// The `i`-th permit is forgotten: never answered, never dropped (the lease covers it).
    Forget(usize),
    /// A call through `call_classified` with this outcome, during which `inner` happens.
    Call(Outcome, Vec<Op>),
    /// `force_open(now)`.
    ForceOpen,
    /// `reset(now)`.
    Reset,
    /// `trip(why, now)`.
    Trip(Reason),
    /// Snapshot to bytes, reboot with the clock reading `clock`, restore from the bytes.
    Reboot {
        /// The clock's reading after the reboot.
        clock: u32,
    },
    /// Restore a snapshot with arbitrary fields (out-of-range ones included).
    Restore(Box<Snapshot>),
    /// Compare the pure reads at a later reading, without moving the clock.
    Peek(u32),
}

/// Where a history's numbers come from: a random number stretched by splitmix64 (so that
/// a property test generates an operation from a single `u64`, spends its time running
/// histories, not building value trees, and still shrinks a failing history by dropping
/// operations and shrinking their numbers), or the bytes of a fuzz input, read as needed
/// and zeros once they run out.
pub enum Draw<'a> {
    /// splitmix64's state.
    Seeded(u64),
    /// The bytes not read yet.
    Bytes(&'a [u8]),
}

impl Draw<'_> {
    /// A number below `n` (at least 1).
    pub fn below(&mut self, n: u64) -> u64 {
        match self {
            Draw::Seeded(state) => {
                *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = *state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)) % n
            }
            Draw::Bytes(bytes) => {
                // As many bytes as `n - 1` has, little-endian.
                let wanted = (u64::BITS - (n - 1).leading_zeros()).div_ceil(8) as usize;
                let (now, later) = bytes.split_at(wanted.min(bytes.len()));
                *bytes = later;
                now.iter().rev().fold(0u64, |acc, b| acc << 8 | u64::from(*b)) % n
            }
        }
    }

    /// Whether a fuzz input's bytes are all read (never, from a seed).
    pub fn is_spent(&self) -> bool {
        matches!(self, Draw::Bytes(bytes) if bytes.is_empty())
    }

    /// A number below `n` (at least 1).
    pub fn below_u32(&mut self, n: u32) -> u32 {
        self.below(u64::from(n)) as u32
    }

    /// Any `u32`.
    pub fn any_u32(&mut self) -> u32 {
        self.below(1 << 32) as u32
    }

    /// One of `options`, each as likely as its weight.
    fn pick<T: Copy>(&mut self, options: &[(u64, T)]) -> T {
        let total: u64 = options.iter().map(|(w, _)| w).sum();
        let mut n = self.below(total);
        for &(w, t) in options {
            if n < w {
                return t;
            }
            n -= w;
        }
        unreachable!()
    }

    /// A trip verdict's hold: shorter or longer than the cooldown, or the longest there is.
    fn hold(&mut self) -> Duration {
        match self.below(6) {
            0 => Duration::MAX,
            1 => Duration::from_millis(self.any_u32()),
            _ => Duration::from_millis(self.below_u32(150)),
        }
    }

    fn outcome(&mut self) -> Outcome {
        match self.below(12) {
            0..=3 => Outcome::Success,
            4..=6 => Outcome::STRIKE,
            7 => Outcome::TRIP,
            8 | 9 => Verdict::TripFor(self.hold()).into(),
            _ => Outcome::NEUTRAL,
        }
    }

    fn counter(&mut self) -> u32 {
        match self.below(3) {
            0 => 0,
            1 => self.below_u32(100),
            _ => u32::MAX - self.below_u32(4),
        }
    }

    /// Snapshots a breaker could write, and ones it never would: fields past the policy's
    /// thresholds, flags in the wrong phase, waits longer than any cooldown, steps past
    /// the last, counters about to saturate.
    fn snapshot(&mut self) -> Snapshot {
        Snapshot {
            phase: self.pick(&[(1, Phase::Closed), (1, Phase::Open), (1, Phase::HalfOpen)]),
            forced: self.below(2) == 0,
            probing: self.below(2) == 0,
            strikes: self.below(6) as u8,
            streak: self.below(6) as u8,
            step: if self.below(2) == 0 {
                self.below(18) as u8
            } else {
                self.below(256) as u8
            },
            remaining: Duration::from_millis(if self.below(2) == 0 {
                self.below_u32(200)
            } else {
                self.any_u32()
            }),
            counters: Counters {
                calls: self.counter(),
                successes: self.counter(),
                failures: self.counter(),
                neutrals: self.counter(),
                skips: self.counter(),
                trips: self.counter(),
                probes: self.counter(),
                lease_expiries: self.counter(),
                probe_successes: self.counter(),
                probe_failures: self.counter(),
                probe_neutrals: self.counter(),
                transitions: TransitionCounts {
                    closed_to_open: self.counter(),
                    open_to_half_open: self.counter(),
                    half_open_to_closed: self.counter(),
                    half_open_to_open: self.counter(),
                    open_to_closed: self.counter(),
                },
            },
            // A window's samples, which a consecutive-strike policy has no use for.
            window: if self.below(8) == 0 {
                WindowSnapshot::Calls {
                    len: 3,
                    failures: 0b011,
                    slow: 0,
                }
            } else {
                WindowSnapshot::None
            },
        }
    }

    /// Anything but a call (what happens while a call is out).
    fn simple_op(&mut self) -> Op {
        match self.below(50) {
            0..=9 => Op::Advance(self.below_u32(40)),
            10 | 11 => Op::Advance(0),
            12 | 13 => Op::Back(1 + self.below_u32(49)),
            14 => Op::NearWrap(self.below_u32(100)),
            15 => Op::Leap(self.below_u32(200) as i32 - 100),
            16..=29 => Op::Acquire,
            30..=39 => Op::Report(self.below(64) as usize, self.outcome()),
            40 | 41 => Op::Drop(self.below(64) as usize),
            42 => Op::Forget(self.below(64) as usize),
            43 => Op::ForceOpen,
            44 => Op::Reset,
            45 => Op::Trip(self.pick(&[(3, Reason::Predicted), (1, Reason::TripVerdict), (1, Reason::Strikes)])),
            46 => Op::Reboot {
                clock: if self.below(2) == 0 { 0 } else { self.any_u32() },
            },
            47 => Op::Restore(Box::new(self.snapshot())),
            _ => Op::Peek(self.below_u32(300)),
        }
    }

    /// One operation: now and then a call with others happening while it is out.
    pub fn op(&mut self) -> Op {
        if self.below(7) == 0 {
            let outcome = self.outcome();
            let inner = (0..self.below(4)).map(|_| self.simple_op()).collect();
            Op::Call(outcome, inner)
        } else {
            self.simple_op()
        }
    }
    /// Small policies, so that short histories reach every state; now and then a backoff
    /// cap so high that the cooldown keeps growing through all its steps, now and then a
    /// half-open failure rate, and now and then patient probation.
    pub fn policy(&mut self) -> Policy {
        let trip = 1 + self.below_u32(3);
        let cool = 1 + self.below_u32(39);
        let lease = 1 + self.below_u32(39);
        let probes = 1 + self.below_u32(3);
        let mult = 1 + self.below_u32(3);
        let extra = match self.below(9) {
            0 | 1 => 0,
            2 => Duration::MAX.as_millis(),
            _ => self.below_u32(100),
        };
        let p = Policy::new(trip, Duration::from_millis(cool))
            .with_probe_lease(Duration::from_millis(lease))
            .with_backoff(mult, Duration::from_millis(cool.saturating_add(extra)));
        // Now and then half-open judged by a failure rate instead of a streak: a few
        // permitted calls, at rates that round every way (and the extremes).
        let p = if self.below(3) == 0 {
            let calls = 1 + self.below_u32(6);
            let rate = self.pick(&[(1, 1), (1, 20), (1, 34), (2, 50), (1, 67), (1, 100)]);
            p.with_half_open_rate(calls, rate)
        } else {
            p.with_probes_to_close(probes)
        };
        if self.below(2) == 0 {
            p.with_patient_probation()
        } else {
            p
        }
    }
}

/// The counters a shared breaker keeps: its closed-state path writes nothing, so calls,
/// successes and neutrals are not counted.
pub fn kept(c: Counters) -> Counters {
    Counters {
        calls: 0,
        successes: 0,
        neutrals: 0,
        ..c
    }
}

/// A snapshot as its bytes keep it: the eight counters of the format, not the probes'
/// outcomes or the changes of phase (which restart at zero after a reboot).
fn stored(s: Snapshot) -> Snapshot {
    Snapshot {
        counters: Counters {
            probe_successes: 0,
            probe_failures: 0,
            probe_neutrals: 0,
            transitions: TransitionCounts::ZERO,
            ..s.counters
        },
        ..s
    }
}

fn kept_snapshot(s: Snapshot) -> Snapshot {
    Snapshot {
        counters: kept(s.counters),
        ..s
    }
}

/// One call's leave, as each of the three granted it.
struct Held<'a> {
    model: ModelPermit,
    single: Permit,
    shared: SharedPermit<'a, ManualClock, SharedHeard>,
}

/// The three breakers, the clock they read and the permits they granted.
struct World<'a> {
    model: Model,
    single: Breaker<Heard>,
    shared: &'a SharedBreaker<SharedHeard>,
    clock: &'a ManualClock,
    held: Vec<Held<'a>>,
}

impl<'a> World<'a> {
    fn new(policy: &'static Policy, shared: &'a SharedBreaker<SharedHeard>, clock: &'a ManualClock) -> World<'a> {
        World {
            model: Model::new(*policy),
            single: Breaker::with_observer(*policy, Heard::default()),
            shared,
            clock,
            held: Vec::new(),
        }
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn take(&mut self, i: usize) -> Option<Held<'a>> {
        if self.held.is_empty() {
            None
        } else {
            let i = i % self.held.len();
            Some(self.held.swap_remove(i))
        }
    }

    fn run(&mut self, op: &Op) {
        let now = self.now();
        match op {
            Op::Advance(ms) => self.clock.set(now.wrapping_add(Duration::from_millis(*ms))),
            Op::Back(ms) => self.clock.set(now.wrapping_sub(Duration::from_millis(*ms))),
            Op::NearWrap(ms) => self.clock.set(Instant::from_millis(u32::MAX - ms)),
            Op::Leap(off) => self.clock.set(Instant::from_millis(
                now.as_millis().wrapping_add(1 << 31).wrapping_add_signed(*off),
            )),
            Op::Acquire => {
                let oracle = self.model.would_allow(now);
                assert_eq!(self.single.would_allow(now), oracle, "oracle (single) at {now}");
                assert_eq!(self.shared.would_allow(now), oracle, "oracle (shared) at {now}");
                let m = self.model.try_acquire(now);
                let s = self.single.try_acquire(now);
                let sh = self.shared.try_acquire(self.clock);
                assert_eq!(m.is_ok(), oracle, "the gate agrees with the oracle at {now}");
                match (m, s, sh) {
                    (Ok(model), Ok(single), Ok(shared)) => {
                        assert_eq!(single.is_probe(), model.probe, "probe (single)");
                        assert_eq!(shared.is_probe(), model.probe, "probe (shared)");
                        self.held.push(Held { model, single, shared });
                    }
                    (Err(m), Err(s), Err(sh)) => {
                        assert_eq!(s, m, "refusal (single) at {now}");
                        assert_eq!(sh, m, "refusal (shared) at {now}");
                    }
                    (m, s, sh) => panic!(
                        "decisions differ at {now}: model {:?}, single {:?}, shared {:?}",
                        m,
                        s.map(|p| p.is_probe()),
                        sh.map(|p| p.is_probe())
                    ),
                }
            }
            Op::Report(i, outcome) => {
                if let Some(h) = self.take(*i) {
                    h.shared.record(*outcome);
                    self.single.record(h.single, *outcome, now);
                    self.model.record(h.model, *outcome, now);
                }
            }
            Op::Drop(i) => {
                if let Some(h) = self.take(*i) {
                    // The shared guard's rule: a probe counts as failed at that moment; any
                    // other call is neutral, which changes nothing the shared breaker keeps,
                    // so the guard leaves the breaker alone. The single-owner permit is
                    // plain data: its owner reports what the guard would have.
                    drop(h.shared);
                    if h.model.probe {
                        self.single.record(h.single, Outcome::STRIKE, now);
                        self.model.record(h.model, Outcome::STRIKE, now);
                    }
                }
            }
            Op::Forget(i) => {
                if let Some(h) = self.take(*i) {
                    std::mem::forget(h.shared);
                }
            }
            Op::Call(outcome, inner) => {
                let m = self.model.try_acquire(now);
                let s = self.single.try_acquire(now);
                let (shared, clock, outcome) = (self.shared, self.clock, *outcome);
                let result = shared.call_classified(
                    clock,
                    || {
                        for op in inner {
                            self.run(op);
                            self.check();
                        }
                        match outcome {
                            Outcome::Success => Ok(()),
                            Outcome::Error(v) => Err(v),
                        }
                    },
                    |v| *v,
                );
                let end = clock.now();
                match (m, s, result) {
                    (Err(m), Err(s), Err(CallError::Refused(sh))) => {
                        assert_eq!(s, m, "refusal (single) at {now}");
                        assert_eq!(sh, m, "refusal (shared) at {now}");
                    }
                    (Ok(m), Ok(s), Ok(()) | Err(CallError::Inner(_))) => {
                        self.single.record(s, outcome, end);
                        self.model.record(m, outcome, end);
                    }
                    (m, s, sh) => panic!(
                        "call decisions differ at {now}: model {:?}, single {:?}, shared {:?}",
                        m,
                        s.map(|p| p.is_probe()),
                        sh
                    ),
                }
            }
            Op::ForceOpen => {
                self.model.force_open(now);
                self.single.force_open(now);
                self.shared.force_open(now);
            }
            Op::Reset => {
                self.model.reset(now);
                self.single.reset(now);
                self.shared.reset(now);
            }
            Op::Trip(why) => {
                self.model.trip(*why, now);
                self.single.trip(*why, now);
                self.shared.trip(*why, now);
            }
            Op::Reboot { clock } => {
                let m = stored(self.model.snapshot(now));
                let bytes = self.single.snapshot(now).to_bytes();
                let shared_bytes = self.shared.snapshot(now).to_bytes();
                let single = Snapshot::from_bytes(&bytes).expect("a snapshot's own bytes decode");
                let shared = Snapshot::from_bytes(&shared_bytes).expect("a snapshot's own bytes decode");
                assert_eq!(single, m, "snapshot (single) at {now}");
                assert_eq!(shared, kept_snapshot(m), "snapshot (shared) at {now}");
                let after = Instant::from_millis(*clock);
                self.clock.set(after);
                self.model.restore(&m, after);
                self.single.restore(&single, after);
                self.shared.restore(&shared, after);
            }
            Op::Restore(snapshot) => {
                if let Ok(decoded) = Snapshot::from_bytes(&snapshot.to_bytes()) {
                    assert_eq!(decoded, stored(**snapshot), "a decodable snapshot round-trips");
                }
                self.model.restore(snapshot, now);
                self.single.restore(snapshot, now);
                self.shared.restore(snapshot, now);
            }
            Op::Peek(ms) => self.check_reads(now.wrapping_add(Duration::from_millis(*ms))),
        }
    }

    /// The pure reads at `at` agree.
    fn check_reads(&self, at: Instant) {
        let state = self.model.state(at);
        assert_eq!(self.single.state(at), state, "state (single) at {at}");
        assert_eq!(self.shared.state(at), state, "state (shared) at {at}");
        let oracle = self.model.would_allow(at);
        assert_eq!(self.single.would_allow(at), oracle, "oracle (single) at {at}");
        assert_eq!(self.shared.would_allow(at), oracle, "oracle (shared) at {at}");
        let snapshot = self.model.snapshot(at);
        assert_eq!(self.single.snapshot(at), snapshot, "snapshot (single) at {at}");
        assert_eq!(
            self.shared.snapshot(at),
            kept_snapshot(snapshot),
            "snapshot (shared) at {at}"
        );
    }

    /// Everything observable agrees now.
    fn check(&mut self) {
        let now = self.now();
        self.check_reads(now);
        let heard = self.model.take_transitions();
        assert_eq!(
            std::mem::take(&mut *self.single.observer().0.borrow_mut()),
            heard,
            "transitions (single) at {now}"
        );
        assert_eq!(
            std::mem::take(&mut *self.shared.observer().0.lock().unwrap()),
            heard,
            "transitions (shared) at {now}"
        );
        let counters = self.model.counters();
        assert_eq!(self.single.counters(), counters, "counters (single) at {now}");
        assert_eq!(self.shared.counters(), kept(counters), "counters (shared) at {now}");
        for h in &self.held {
            let stale = self.model.is_stale(&h.model, now);
            assert_eq!(
                self.single.is_stale(&h.single, now),
                stale,
                "staleness (single) at {now}"
            );
            assert_eq!(h.shared.is_stale(), stale, "staleness (shared) at {now}");
        }
    }
}

/// Runs one history from a clock reading `start`, panicking at the first difference.
pub fn history(policy: Policy, start: u32, ops: &[Op]) {
    let policy: &'static Policy = Box::leak(Box::new(policy));
    let clock = ManualClock::new(Instant::from_millis(start));
    let shared = SharedBreaker::with_observer(policy, SharedHeard::default());
    let mut world = World::new(policy, &shared, &clock);
    for op in ops {
        world.run(op);
        world.check();
    }
}
