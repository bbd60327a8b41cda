//! The state machine against the reference model: `tests::model::Model` (written from
//! the behaviour spec, sharing no code with `breaker-core`), the single-owner `Breaker`
//! and the lock-free `SharedBreaker` are driven through the same random histories, and
//! after every step their decisions (with the refusal's reason and wait), states, oracles,
//! reported transitions (with their instants and cooldowns), permit staleness, snapshots
//! and counters must agree.
//!
//! A history mixes every outcome kind (holds shorter and longer than the cooldown
//! included), permits reported late (stale), dropped (the shared permit's rule: a probe
//! counts as failed, any other call as neutral) or forgotten (left to the lease), calls
//! through `call_classified` with other things happening while they are out (a strike
//! racing the closed fast path's success), `force_open`, `reset`, `trip`, reboots through
//! the snapshot bytes, restores of arbitrary snapshots, and a clock that moves, sticks,
//! steps back, wraps around and leaps by about 2^31 ms.

use breaker_core::{Counters, Duration, Outcome, Phase, Policy, Snapshot, WindowSnapshot};
use proptest::prelude::*;
use tests::differential::{history, Draw, Op};

fn op() -> impl Strategy<Value = Op> {
    any::<u64>().prop_map(|seed| Draw::Seeded(seed).op())
}

fn policy() -> impl Strategy<Value = Policy> {
    any::<u64>().prop_map(|seed| Draw::Seeded(seed).policy())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(tests::cases(100_000)))]

    #[test]
    fn the_state_machine_matches_the_reference_model(
        policy in policy(),
        start in prop_oneof![Just(500u32), any::<u32>()],
        ops in prop::collection::vec(op(), 1..100),
    ) {
        history(policy, start, &ops);
    }
}

/// Histories that once found a difference (between the shared and the single-owner
/// breaker, or between them and the model), kept as they shrank.
#[test]
fn past_differences_stay_fixed() {
    // A restored backoff step past the last one resumed the wait at the wrong step.
    history(
        Policy::new(1, Duration::from_millis(1)).with_backoff(2, Duration::MAX),
        500,
        &[Op::Restore(Box::new(Snapshot {
            phase: Phase::Open,
            forced: false,
            probing: false,
            strikes: 0,
            streak: 0,
            step: 16,
            remaining: Duration::from_millis(1),
            counters: Counters::ZERO,
            window: WindowSnapshot::None,
        }))],
    );
    let tiny = |trip| Policy::new(trip, Duration::from_millis(1));
    history(
        tiny(2),
        500,
        &[
            Op::Acquire,
            Op::Acquire,
            Op::Acquire,
            Op::Acquire,
            Op::Report(0, Outcome::TRIP),
            Op::Advance(1),
            Op::Acquire,
            Op::Advance(1),
            Op::Drop(61343119531389944),
        ],
    );
    history(
        tiny(1),
        500,
        &[Op::Acquire, Op::Report(0, Outcome::STRIKE), Op::Back(1), Op::Acquire],
    );
    history(
        tiny(1),
        500,
        &[Op::Acquire, Op::Report(0, Outcome::STRIKE), Op::Leap(0), Op::Acquire],
    );
}
