//! Model checks of the transition history's ring with loom: writers racing for one slot
//! and for neighbouring slots, each against a reader, and a history recording the
//! transitions of a shared breaker whose callers race.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p breaker-core --test loom_history --release
//! ```
#![cfg(loom)]

use breaker_core::{
    Classify, Clock, Duration, History, Instant, ManualClock, Phase, Policy, Reason, SharedBreaker, Transition,
};
use loom::sync::Arc;
use loom::thread;

fn transition(i: u32) -> Transition {
    Transition {
        from: Phase::Closed,
        to: Phase::Open,
        why: if i.is_multiple_of(2) {
            Reason::Strikes
        } else {
            Reason::Predicted
        },
        at: Instant::from_millis(1_000 * i),
        cooldown: Duration::from_millis(7 * i),
    }
}

/// Every interleaving with at most 3 preemptions: the races below need one or two.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// Two writers and a reader on a ring of `N` slots: whatever the reader sees is a whole
/// transition someone wrote, oldest first, never mixed from two; once both writers are
/// done, the last `N` are there.
fn writers_and_a_reader<const N: usize>() {
    model(|| {
        let h = Arc::new(History::<N>::new(()));
        let writers: Vec<_> = [1, 2]
            .into_iter()
            .map(|i| {
                let h = h.clone();
                thread::spawn(move || h.record(&transition(i)))
            })
            .collect();
        let seen: Vec<Transition> = h.recent().iter().collect();
        assert!(seen.len() <= 2);
        for t in &seen {
            assert!(*t == transition(1) || *t == transition(2), "a torn transition: {t:?}");
        }
        if let [a, b] = seen[..] {
            assert_ne!(a, b);
        }
        for w in writers {
            w.join().unwrap();
        }
        let after: Vec<Transition> = h.recent().iter().collect();
        assert_eq!(after.len(), N.min(2));
        assert_eq!(h.recent().recorded(), 2);
        for t in &after {
            assert!(*t == transition(1) || *t == transition(2));
        }
    });
}

#[test]
fn two_writers_for_one_slot_never_tear_what_a_reader_sees() {
    writers_and_a_reader::<1>();
}

#[test]
fn two_writers_in_neighbouring_slots_both_land() {
    writers_and_a_reader::<2>();
}

#[derive(Debug)]
struct Nack;
impl Classify for Nack {}

static POLICY: Policy = Policy::new(1, Duration::from_millis(10));
static START: ManualClock = ManualClock::new(Instant::ZERO);

/// Two callers strike a breaker of trip 1 at once: it opens once, and its history holds
/// exactly that one transition, whatever the interleaving.
#[test]
fn a_shared_breaker_records_each_transition_once() {
    model(|| {
        let b = Arc::new(SharedBreaker::with_observer(&POLICY, History::<4>::new(())));
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let _ = b.call(&START, || Err::<(), _>(Nack));
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
        assert_eq!(b.phase(START.now()), Phase::Open);
        let kept: Vec<Transition> = b.observer().recent().iter().collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(
            (kept[0].from, kept[0].to, kept[0].why),
            (Phase::Closed, Phase::Open, Reason::Strikes)
        );
    });
}
