//! Model checks of the fallback chain with loom: every interleaving of 2 and 3 turns.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p breaker-core --test loom_chain --release
//! ```
#![cfg(loom)]

use std::sync::atomic::{AtomicU32, Ordering};

use breaker_core::{
    Backup, BackupSpent, ChainObserver, ChainPhase, Clock, Duration, FallbackChain, Instant, ManualClock, Outcome,
    Policy, Route, Verdict,
};
use loom::thread;

/// Trip on the first failed turn, 10 ms cooldown, two probe successes, patient probation.
static POLICY: Policy = Policy::new(1, Duration::from_millis(10))
    .with_probes_to_close(2)
    .with_patient_probation();
static START: ManualClock = ManualClock::new(Instant::ZERO);
/// After the cooldown of a chain tripped at zero.
static LATER: ManualClock = ManualClock::new(Instant::from_millis(10));

/// Counts spent backups (read after every thread has joined).
#[derive(Default)]
struct Spent(AtomicU32);
impl ChainObserver for Spent {
    fn on_backup_spent(&self, _: &BackupSpent) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

type Chain = FallbackChain<1, Spent>;

const BACKUP: Route = Route::Backup {
    index: 0,
    name: "nb-iot",
};

/// A chain tripped at zero, shared for the rest of the model (turns borrow their chain).
fn tripped() -> &'static Chain {
    let chain: &'static Chain = Box::leak(Box::new(FallbackChain::with_observer(
        &POLICY,
        "lora",
        [Backup::new("nb-iot")],
        Spent::default(),
    )));
    chain.route(&START).record(Outcome::STRIKE);
    assert_eq!(chain.phase(START.now()), ChainPhase::Fallback);
    chain
}

fn race_for_the_probe(turns: usize) {
    loom::model(move || {
        let chain = tripped();
        let handles: Vec<_> = (0..turns)
            .map(|_| {
                thread::spawn(move || {
                    let turn = chain.route(&LATER);
                    let route = turn.route();
                    std::mem::forget(turn); // hold the probe: nobody else may get it
                    route
                })
            })
            .collect();
        let routes: Vec<Route> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let probes = routes.iter().filter(|r| **r == Route::Primary { probe: true }).count();
        assert_eq!(probes, 1, "exactly one turn is the Recovering probe: {routes:?}");
        assert_eq!(
            routes.iter().filter(|r| **r == BACKUP).count(),
            turns - 1,
            "every other turn keeps using the backup: {routes:?}"
        );
        assert_eq!(chain.breaker().counters().probes, 1);
        assert_eq!(chain.phase(LATER.now()), ChainPhase::Recovering);
    });
}

#[test]
fn two_turns_one_recovering_probe() {
    race_for_the_probe(2);
}

#[test]
fn three_turns_one_recovering_probe() {
    race_for_the_probe(3);
}

#[test]
fn racing_backup_failures_spend_the_budget_exactly_once() {
    loom::model(|| {
        let chain = tripped();
        let handles: Vec<_> = (0..2)
            .map(|_| {
                thread::spawn(move || {
                    let turn = chain.route(&START);
                    let route = turn.route();
                    turn.failure(Verdict::Strike);
                    route
                })
            })
            .collect();
        for h in handles {
            assert_eq!(
                h.join().unwrap(),
                BACKUP,
                "both were routed before either answered, or in order"
            );
        }
        let b = chain.backup(0).unwrap();
        assert_eq!((b.attempts, b.failed, b.turns), (2, true, 2), "no failed turn lost");
        assert_eq!(chain.observer().0.load(Ordering::Relaxed), 1, "spent once");
        assert!(matches!(chain.route(&START).route(), Route::Exhausted { .. }));
    });
}

#[test]
fn a_recovery_racing_a_late_backup_failure_leaves_no_count() {
    loom::model(|| {
        let chain = tripped();
        let late = chain.route(&START); // routed to the backup during the outage
        assert_eq!(late.route(), BACKUP);
        let first = chain.route(&LATER);
        assert_eq!(first.route(), Route::Primary { probe: true });
        first.success();
        // The second probe success (recovery, which clears every count) races the late
        // failure of the turn routed before it.
        let recover = thread::spawn(move || chain.route(&LATER).success());
        let fail = thread::spawn(move || late.failure(Verdict::Strike));
        recover.join().unwrap();
        fail.join().unwrap();
        assert_eq!(chain.phase(LATER.now()), ChainPhase::Primary);
        assert_eq!(
            chain.backup(0).unwrap().attempts,
            0,
            "whichever landed first, the count is clear"
        );
    });
}
