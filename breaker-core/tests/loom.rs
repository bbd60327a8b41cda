//! Model checks of the shared breaker with loom: every interleaving of 2 and 3 callers.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p breaker-core --test loom --release
//! ```
#![cfg(loom)]

use breaker_core::{Classify, Duration, Instant, ManualClock, Phase, Policy, SharedBreaker, Verdict};
use loom::sync::Arc;
use loom::thread;

static POLICY: Policy = Policy::new(2, Duration::from_millis(10)).with_probe_lease(Duration::from_millis(5));
/// After the cooldown of a breaker tripped at zero.
static LATER: ManualClock = ManualClock::new(Instant::from_millis(10));
static START: ManualClock = ManualClock::new(Instant::ZERO);

#[derive(Debug)]
struct Nack;
impl Classify for Nack {}

fn tripped() -> Arc<SharedBreaker> {
    let b = SharedBreaker::new(&POLICY);
    for _ in 0..2 {
        b.try_acquire(&START).unwrap().failure(Verdict::Strike);
    }
    assert_eq!(b.phase(START.now_ms()), Phase::Open);
    Arc::new(b)
}

trait NowMs {
    fn now_ms(&self) -> Instant;
}
impl NowMs for ManualClock {
    fn now_ms(&self) -> Instant {
        breaker_core::Clock::now(self)
    }
}

fn race_for_the_probe(callers: usize) {
    loom::model(move || {
        let b = tripped();
        let handles: Vec<_> = (0..callers)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || match b.try_acquire(&LATER) {
                    Ok(p) => {
                        let probe = p.is_probe();
                        std::mem::forget(p); // hold the slot: nobody else may get it
                        usize::from(probe)
                    }
                    Err(_) => 0,
                })
            })
            .collect();
        let probes: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(probes, 1, "exactly one caller is the probe");
        let c = b.counters();
        assert_eq!(c.probes, 1);
        assert_eq!(c.skips as usize, callers - 1);
        assert_eq!(b.phase(LATER.now_ms()), Phase::HalfOpen);
    });
}

#[test]
fn two_callers_one_probe() {
    race_for_the_probe(2);
}

#[test]
fn three_callers_one_probe() {
    race_for_the_probe(3);
}

#[test]
fn racing_strikes_lose_no_update() {
    loom::model(|| {
        let b = Arc::new(SharedBreaker::new(&POLICY));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let _ = b.call(&START, || Err::<(), _>(Nack));
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // Both strikes counted whichever order they landed in: trip = 2 means open.
        assert_eq!(b.phase(START.now_ms()), Phase::Open);
        let c = b.counters();
        assert_eq!((c.failures, c.trips), (2, 1));
    });
}

#[test]
fn a_probe_success_racing_a_stale_failure_closes_and_counts_both() {
    loom::model(|| {
        // Permits borrow their breaker; a leaked breaker lets them move into threads.
        let b: &'static SharedBreaker = Box::leak(Box::new(SharedBreaker::new(&POLICY)));
        let stale = b.try_acquire(&START).unwrap(); // granted before the trip
        b.try_acquire(&START).unwrap().failure(Verdict::Strike);
        b.try_acquire(&START).unwrap().failure(Verdict::Strike);
        let probe = b.try_acquire(&LATER).unwrap();
        assert!(probe.is_probe() && stale.is_stale());
        let t1 = thread::spawn(move || probe.success());
        let t2 = thread::spawn(move || stale.failure(Verdict::Strike));
        let t3 = thread::spawn(move || b.would_allow(LATER.now_ms()));
        t1.join().unwrap();
        t2.join().unwrap();
        let _ = t3.join().unwrap();
        // Whichever landed first, the stale failure moved nothing.
        assert_eq!(b.phase(LATER.now_ms()), Phase::Closed);
        let c = b.counters();
        assert_eq!((c.failures, c.trips, c.probes), (3, 1, 1));
    });
}

#[test]
fn reset_racing_a_trip_ends_in_a_consistent_state() {
    loom::model(|| {
        let b = Arc::new(SharedBreaker::new(&POLICY));
        b.try_acquire(&START).unwrap().failure(Verdict::Strike);
        let b1 = b.clone();
        let t1 = thread::spawn(move || {
            let _ = b1.call(&START, || Err::<(), _>(Nack));
        });
        let b2 = b.clone();
        let t2 = thread::spawn(move || b2.reset(START.now_ms()));
        t1.join().unwrap();
        t2.join().unwrap();
        // The strike tripped before the reset (one trip, then closed), or its permit came
        // after the reset (one strike pending), or came before it and went stale (ignored):
        // never a lost or half-applied update.
        let c = b.counters();
        assert_eq!(c.failures, 2);
        let state = b.state(START.now_ms());
        match c.trips {
            1 => assert_eq!(state, breaker_core::State::Closed { strikes: 0 }),
            0 => assert!(
                matches!(state, breaker_core::State::Closed { strikes: 0 | 1 }),
                "{state:?}"
            ),
            n => panic!("{n} trips"),
        }
    });
}
