//! The shared breaker against the single-owner state machine: the same random sequences
//! of calls, outcomes, clock moves (wrap-around and backwards steps included), dropped
//! permits, force-open and reset must give identical decisions, states and counters.

mod common;

use breaker_core::{
    Breaker, Clock, Counters, Instant, ManualClock, Outcome, Permit, Policy, Reason, SharedBreaker, SharedPermit,
};
use common::{move_clock, op, policy, Op};
use proptest::prelude::*;

/// The counters a shared breaker keeps (it leaves the happy path's calls, successes and
/// neutrals uncounted so that path writes nothing).
fn kept(c: Counters) -> Counters {
    Counters {
        calls: 0,
        successes: 0,
        neutrals: 0,
        ..c
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn shared_breaker_matches_the_state_machine(policy in policy(), ops in prop::collection::vec(op(), 1..120)) {
        let policy: &'static Policy = Box::leak(Box::new(policy));
        let clock = ManualClock::new(Instant::from_millis(500));
        let shared = SharedBreaker::new(policy);
        let mut single = Breaker::new(*policy);
        let mut permits: Vec<(SharedPermit<'_, ManualClock>, Permit)> = Vec::new();
        for op in &ops {
            clock.set(move_clock(clock.now(), op));
            let now = clock.now();
            match *op {
                Op::Acquire => {
                    prop_assert_eq!(shared.would_allow(now), single.would_allow(now));
                    match (shared.try_acquire(&clock), single.try_acquire(now)) {
                        (Ok(a), Ok(b)) => {
                            prop_assert_eq!(a.is_probe(), b.is_probe());
                            permits.push((a, b));
                        }
                        (Err(a), Err(b)) => prop_assert_eq!(a, b),
                        (a, b) => prop_assert!(false, "decisions differ: {:?} vs {:?}", a.map(|_| ()), b.map(|_| ())),
                    }
                }
                Op::Report(i, outcome) if !permits.is_empty() => {
                    let (a, b) = permits.swap_remove(i % permits.len());
                    prop_assert_eq!(a.is_stale(), single.is_stale(&b, now));
                    a.record(outcome);
                    single.record(b, outcome, now);
                }
                Op::Drop(i) if !permits.is_empty() => {
                    // The guard's cancellation rule: a probe counts as failed; any other permit
                    // counts as neutral, which changes nothing a shared breaker keeps, so the
                    // guard does not even look at the breaker.
                    let (a, b) = permits.swap_remove(i % permits.len());
                    drop(a);
                    if b.is_probe() {
                        single.record(b, Outcome::STRIKE, now);
                    }
                }
                Op::ForceOpen => {
                    shared.force_open(now);
                    single.force_open(now);
                }
                Op::Reset => {
                    shared.reset(now);
                    single.reset(now);
                }
                Op::Trip => {
                    shared.trip(Reason::Predicted, now);
                    single.trip(Reason::Predicted, now);
                }
                _ => {}
            }
            prop_assert_eq!(shared.state(now), single.state(now));
            prop_assert_eq!(shared.counters(), kept(single.counters()));
            prop_assert_eq!(shared.snapshot(now).to_bytes().len(), breaker_core::Snapshot::LEN);
            let (mut s, mut t) = (shared.snapshot(now), single.snapshot(now));
            s.counters = kept(s.counters);
            t.counters = kept(t.counters);
            prop_assert_eq!(s, t);
        }
    }
}
