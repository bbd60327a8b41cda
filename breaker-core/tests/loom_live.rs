//! Model checks of a live policy with loom: a reader racing two reloads reads one of the
//! three policies whole, never fields of two; and a breaker whose policy is reloaded while
//! a caller fails ends in a state one of the two policies explains.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p breaker-core --test loom_live --release
//! ```
#![cfg(loom)]

use breaker_core::{Classify, Clock, Duration, Instant, LivePolicy, ManualClock, Phase, Policy, SharedBreaker};
use loom::sync::Arc;
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// A policy whose every field says `n`, so that a mix of two shows.
fn policy(n: u32) -> Policy {
    Policy::try_new(n, Duration::from_secs(n))
        .unwrap()
        .with_probe_lease(Duration::from_secs(10 + n))
        .with_probes_to_close(n)
        .with_backoff(n, Duration::from_secs(100 * n))
}

#[test]
fn a_reader_racing_two_reloads_reads_one_policy_whole() {
    model(|| {
        let live = Arc::new(LivePolicy::new(policy(1)));
        let writers: Vec<_> = [2, 3]
            .into_iter()
            .map(|n| {
                let live = Arc::clone(&live);
                thread::spawn(move || {
                    let b = SharedBreaker::with_policy(&*live);
                    // Through a breaker, as users reload: the same store.
                    b.reload(policy(n)).unwrap();
                })
            })
            .collect();
        let seen = live.get();
        assert!([1, 2, 3].map(policy).contains(&seen), "{seen:?}");
        for w in writers {
            w.join().unwrap();
        }
        let last = live.get();
        assert!(last == policy(2) || last == policy(3), "{last:?}");
    });
}

#[derive(Debug)]
struct Down;
impl Classify for Down {}

#[test]
fn a_reload_racing_a_failing_caller_leaves_a_state_one_policy_explains() {
    model(|| {
        let clock = Arc::new(ManualClock::new(Instant::ZERO));
        let b = Arc::new(SharedBreaker::with_policy(LivePolicy::new(
            Policy::try_new(2, Duration::from_secs(30)).unwrap(),
        )));
        let caller = {
            let (b, clock) = (Arc::clone(&b), Arc::clone(&clock));
            thread::spawn(move || {
                for _ in 0..2 {
                    let _ = b.call(&*clock, || Err::<(), _>(Down));
                }
            })
        };
        b.reload(Policy::try_new(3, Duration::from_secs(30)).unwrap()).unwrap();
        caller.join().unwrap();
        let c = b.counters();
        assert_eq!(c.failures, 2);
        match b.phase(clock.now()) {
            // The second failure ran under the old policy (trip 2).
            Phase::Open => assert_eq!(c.trips, 1),
            // Both under the new one (trip 3): two strikes, closed.
            Phase::Closed => assert_eq!(c.trips, 0),
            Phase::HalfOpen => panic!("no time passed"),
        }
        assert_eq!(b.policy().trip(), 3);
    });
}
