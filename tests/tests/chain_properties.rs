//! Random turn sequences through a `FallbackChain`, checked turn by turn against a
//! reference written from the behaviour spec's table for the fallback chain (loopctl's
//! model breaker), the way loopctl's docs state it: plain fields, plain arithmetic, no
//! breaker underneath. Chains of 0 to 3 backups, random budgets, trip counts, cooldowns
//! and probes to close.

use std::cell::RefCell;

use breaker_core::{
    Backup, BackupSpent, ChainError, ChainObserver, ChainPhase, Duration, FallbackChain, FallbackEvent, Instant,
    ManualClock, Outcome, Policy, Route, Verdict,
};
use proptest::prelude::*;

// ---- the reference ----------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefPhase {
    Primary,
    Fallback,
    Recovering,
}

/// Where the reference sends a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefRoute {
    Primary { probe: bool },
    Backup(usize),
    Exhausted { retry_in_ms: u64 },
    Probing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Success,
    Strike,
    /// A rate limit, a revoked key: a trip verdict.
    NoMoreLoad,
    Neutral,
}

struct Reference {
    trip_threshold: u32,
    recovery_timeout_ms: u64,
    recovery_successes_needed: u32,
    max_fail_count: Vec<u32>,

    state: RefPhase,
    consecutive_failures: u32,
    primary_success_count: u32,
    opened_at_ms: u64,
    fallback_activated: bool,
    attempt_count: Vec<u32>,
    disabled: Vec<bool>,
    /// (to, at) of every fallback event; (index, at) of every spent backup.
    fallbacks: Vec<(RefRoute, u64)>,
    spent: Vec<(usize, u64)>,
}

impl Reference {
    fn new(trip: u32, cooldown_ms: u64, probes: u32, budgets: &[u32]) -> Self {
        Reference {
            trip_threshold: trip,
            recovery_timeout_ms: cooldown_ms,
            recovery_successes_needed: probes,
            max_fail_count: budgets.to_vec(),
            state: RefPhase::Primary,
            consecutive_failures: 0,
            primary_success_count: 0,
            opened_at_ms: 0,
            fallback_activated: false,
            attempt_count: vec![0; budgets.len()],
            disabled: vec![false; budgets.len()],
            fallbacks: vec![],
            spent: vec![],
        }
    }

    /// `entry.failed() = manually disabled OR attempt_count >= max_fail_count`.
    fn failed(&self, i: usize) -> bool {
        self.disabled[i] || self.attempt_count[i] >= self.max_fail_count[i]
    }

    /// `active_model` = the first entry that is not failed.
    fn active(&self) -> Option<usize> {
        (0..self.max_fail_count.len()).find(|&i| !self.failed(i))
    }

    /// Where turns go while the primary is tripped.
    fn around_the_primary(&self, now: u64) -> RefRoute {
        match self.active() {
            Some(i) => RefRoute::Backup(i),
            // No chain configured: keep serving the primary.
            None if self.max_fail_count.is_empty() => RefRoute::Primary { probe: false },
            None => RefRoute::Exhausted {
                retry_in_ms: self.recovery_timeout_ms - (now - self.opened_at_ms),
            },
        }
    }

    /// The checks at the top of a turn.
    fn begin_turn(&mut self, now: u64) -> RefRoute {
        // Fallback -> Recovering: before a turn, cooldown elapsed; this turn is the probe.
        if self.state == RefPhase::Fallback && now - self.opened_at_ms >= self.recovery_timeout_ms {
            self.state = RefPhase::Recovering;
            self.primary_success_count = 0;
        }
        match self.state {
            RefPhase::Primary => RefRoute::Primary { probe: false },
            RefPhase::Recovering => RefRoute::Primary { probe: true },
            // FallbackExhausted: state == Fallback AND active == None AND chain not empty.
            RefPhase::Fallback => self.around_the_primary(now),
        }
    }

    /// A second turn while the first holds the Recovering probe: concurrent turns keep
    /// using the active backup.
    fn concurrent_turn(&self) -> RefRoute {
        match self.active() {
            Some(i) => RefRoute::Backup(i),
            None if self.max_fail_count.is_empty() => RefRoute::Primary { probe: false },
            None => RefRoute::Probing,
        }
    }

    fn trip(&mut self, now: u64) {
        self.state = RefPhase::Fallback;
        self.fallback_activated = true;
        self.opened_at_ms = now;
        self.consecutive_failures = 0;
        self.primary_success_count = 0;
        let to = self.around_the_primary(now);
        self.fallbacks.push((to, now));
    }

    fn recover(&mut self) {
        self.state = RefPhase::Primary;
        self.consecutive_failures = 0;
        self.primary_success_count = 0;
        self.attempt_count.iter_mut().for_each(|c| *c = 0);
    }

    fn end_turn(&mut self, route: RefRoute, answer: Answer, now: u64) {
        if answer == Answer::Neutral {
            return; // any: neutral outcome: nothing
        }
        match (route, self.state) {
            (RefRoute::Primary { probe: false }, RefPhase::Primary) => match answer {
                Answer::Success => self.consecutive_failures = 0,
                Answer::Strike => {
                    self.consecutive_failures += 1;
                    if self.consecutive_failures >= self.trip_threshold {
                        self.trip(now);
                    }
                }
                Answer::NoMoreLoad => self.trip(now),
                Answer::Neutral => {}
            },
            (RefRoute::Primary { probe: true }, RefPhase::Recovering) => match answer {
                Answer::Success => {
                    self.primary_success_count += 1;
                    if self.primary_success_count >= self.recovery_successes_needed {
                        self.recover();
                    }
                }
                Answer::Strike => self.primary_success_count = 0,
                Answer::NoMoreLoad => self.trip(now),
                Answer::Neutral => {}
            },
            // A failed turn on a backup: its attempt count += 1.
            (RefRoute::Backup(i), _) if answer != Answer::Success => {
                self.attempt_count[i] += 1;
                if self.attempt_count[i] == self.max_fail_count[i] {
                    self.spent.push((i, now));
                }
            }
            // A chain with no backups serving its tripped primary: bookkeeping only.
            _ => {}
        }
    }
}

// ---- the run ----------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Advance(u32),
    Turn(Answer),
    /// A turn made through `FallbackChain::call_classified` instead of `route`.
    Call(Answer),
    /// A turn that takes the Recovering probe and, while it is out, a second turn.
    Overlap(Answer, Answer),
    Disable(usize),
    Enable(usize),
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        4 => Just(Answer::Success),
        4 => Just(Answer::Strike),
        1 => Just(Answer::NoMoreLoad),
        1 => Just(Answer::Neutral),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..400).prop_map(Op::Advance),
        5 => answer().prop_map(Op::Turn),
        3 => answer().prop_map(Op::Call),
        2 => (answer(), answer()).prop_map(|(a, b)| Op::Overlap(a, b)),
        1 => (0usize..4).prop_map(Op::Disable),
        1 => (0usize..4).prop_map(Op::Enable),
    ]
}

fn outcome(a: Answer) -> Outcome {
    match a {
        Answer::Success => Outcome::Success,
        Answer::Strike => Outcome::STRIKE,
        Answer::NoMoreLoad => Outcome::Error(Verdict::Trip),
        Answer::Neutral => Outcome::NEUTRAL,
    }
}

/// Every fallback event (to, at) and spent backup (index, at) the chain reported.
#[derive(Default)]
struct Events(RefCell<Seen>);

#[derive(Default)]
struct Seen(Vec<(RefRoute, u64)>, Vec<(usize, u64)>);

fn ref_route(r: Route) -> RefRoute {
    match r {
        Route::Primary { probe } => RefRoute::Primary { probe },
        Route::Backup { index, .. } => RefRoute::Backup(index),
        Route::Exhausted { retry_in } => RefRoute::Exhausted {
            retry_in_ms: u64::from(retry_in.expect("never forced here").as_millis()),
        },
        Route::Probing => RefRoute::Probing,
    }
}

impl ChainObserver for Events {
    fn on_fallback(&self, e: &FallbackEvent) {
        self.0
            .borrow_mut()
            .0
            .push((ref_route(e.to), u64::from(e.at.as_millis())));
    }
    fn on_backup_spent(&self, e: &BackupSpent) {
        self.0.borrow_mut().1.push((e.index, u64::from(e.at.as_millis())));
    }
}

fn phase_of(p: RefPhase) -> ChainPhase {
    match p {
        RefPhase::Primary => ChainPhase::Primary,
        RefPhase::Fallback => ChainPhase::Fallback,
        RefPhase::Recovering => ChainPhase::Recovering,
    }
}

fn run<const N: usize>(
    trip: u32,
    cooldown_ms: u32,
    probes: u32,
    budgets: [u32; N],
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let policy: &'static Policy = Box::leak(Box::new(
        Policy::new(trip, Duration::from_millis(cooldown_ms))
            .with_probes_to_close(probes)
            .with_patient_probation(),
    ));
    const NAMES: [&str; 4] = ["b0", "b1", "b2", "b3"];
    let backups: [Backup; N] = std::array::from_fn(|i| Backup::new(NAMES[i]).with_budget(budgets[i]));
    let chain = FallbackChain::with_observer(policy, "primary", backups, Events::default());
    let mut reference = Reference::new(trip, u64::from(cooldown_ms), probes, &budgets);
    let clock = ManualClock::new(Instant::ZERO);
    let mut now: u64 = 0;

    for (step, op) in ops.iter().enumerate() {
        let at = Instant::from_millis(now as u32);
        match *op {
            Op::Advance(ms) => now += u64::from(ms),
            Op::Disable(i) | Op::Enable(i) => {
                let disable = matches!(op, Op::Disable(_));
                let got = if disable { chain.disable(i) } else { chain.enable(i) };
                prop_assert_eq!(got.is_ok(), i < N);
                if i < N {
                    reference.disabled[i] = disable;
                }
            }
            Op::Turn(a) => {
                let predicted = chain.would_route(at);
                let expected = reference.begin_turn(now);
                let turn = chain.route(&clock);
                prop_assert_eq!(ref_route(turn.route()), expected, "step {}: {:?}", step, op);
                prop_assert_eq!(
                    turn.route(),
                    predicted,
                    "step {}: the oracle disagrees with the gate",
                    step
                );
                turn.record(outcome(a));
                reference.end_turn(expected, a, now);
            }
            Op::Call(a) => {
                let expected = reference.begin_turn(now);
                let mut called = None;
                let result = chain.call_classified(
                    &clock,
                    |route| {
                        called = Some(route);
                        match outcome(a) {
                            Outcome::Success => Ok(()),
                            Outcome::Error(v) => Err(v),
                        }
                    },
                    |v| *v,
                );
                let got = match (called, result) {
                    (Some(route), _) => ref_route(route),
                    (None, Err(ChainError::Exhausted { retry_in })) => ref_route(Route::Exhausted { retry_in }),
                    (None, Err(ChainError::Probing)) => RefRoute::Probing,
                    (None, other) => return Err(TestCaseError::fail(format!("step {step}: {other:?} without a call"))),
                };
                prop_assert_eq!(got, expected, "step {}: {:?}", step, op);
                reference.end_turn(expected, a, now);
            }
            Op::Overlap(a, b) => {
                let expected = reference.begin_turn(now);
                let first = chain.route(&clock);
                prop_assert_eq!(ref_route(first.route()), expected, "step {}: {:?}", step, op);
                if expected == (RefRoute::Primary { probe: true }) {
                    let expected_second = reference.concurrent_turn();
                    let predicted = chain.would_route(at);
                    let second = chain.route(&clock);
                    prop_assert_eq!(
                        ref_route(second.route()),
                        expected_second,
                        "step {}: concurrent turn",
                        step
                    );
                    prop_assert_eq!(
                        second.route(),
                        predicted,
                        "step {}: the oracle disagrees with the gate",
                        step
                    );
                    second.record(outcome(b));
                    reference.end_turn(expected_second, b, now);
                    first.record(outcome(a));
                    reference.end_turn(expected, a, now);
                } else {
                    // No probe to hold: two turns one after the other.
                    first.record(outcome(a));
                    reference.end_turn(expected, a, now);
                    let expected = reference.begin_turn(now);
                    let second = chain.route(&clock);
                    prop_assert_eq!(ref_route(second.route()), expected, "step {}: second turn", step);
                    second.record(outcome(b));
                    reference.end_turn(expected, b, now);
                }
            }
        }
        clock.set(Instant::from_millis(now as u32));
        // Between turns: what the turns changed, field by field. (Fallback stays Fallback
        // after its cooldown until a turn moves it, in both.)
        let after = Instant::from_millis(now as u32);
        prop_assert_eq!(chain.phase(after), phase_of(reference.state), "step {}: phase", step);
        prop_assert_eq!(
            chain.fallback_activated(),
            reference.fallback_activated,
            "step {}",
            step
        );
        for i in 0..N {
            let b = chain.backup(i).unwrap();
            prop_assert_eq!(
                b.attempts,
                reference.attempt_count[i],
                "step {}: backup {} count",
                step,
                i
            );
            prop_assert_eq!(b.disabled, reference.disabled[i]);
            prop_assert_eq!(b.failed, reference.failed(i), "step {}: backup {} failed", step, i);
        }
        prop_assert_eq!(chain.active(), reference.active());
    }
    let events = chain.observer().0.borrow();
    prop_assert_eq!(&events.0, &reference.fallbacks, "fallback events (to, at)");
    prop_assert_eq!(&events.1, &reference.spent, "spent backups (index, at)");
    Ok(())
}

fn params<const N: usize>() -> impl Strategy<Value = (u32, u32, u32, [u32; N], Vec<Op>)> {
    (
        1u32..4,
        1u32..1500,
        1u32..4,
        proptest::array::uniform::<_, N>(1u32..4),
        proptest::collection::vec(op(), 1..80),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2500))]

    #[test]
    fn a_chain_of_no_backups_follows_the_reference((trip, cool, probes, budgets, ops) in params::<0>()) {
        run(trip, cool, probes, budgets, &ops)?;
    }

    #[test]
    fn a_chain_of_one_backup_follows_the_reference((trip, cool, probes, budgets, ops) in params::<1>()) {
        run(trip, cool, probes, budgets, &ops)?;
    }

    #[test]
    fn a_chain_of_two_backups_follows_the_reference((trip, cool, probes, budgets, ops) in params::<2>()) {
        run(trip, cool, probes, budgets, &ops)?;
    }

    #[test]
    fn a_chain_of_three_backups_follows_the_reference((trip, cool, probes, budgets, ops) in params::<3>()) {
        run(trip, cool, probes, budgets, &ops)?;
    }
}
