//! Random operation sequences shared by the property tests.

#![allow(dead_code)] // Each test file uses a different part.

use breaker_core::{Duration, Instant, Outcome, Policy, Verdict};
use proptest::prelude::*;

/// One thing that can happen to a breaker.
#[derive(Clone, Debug)]
pub enum Op {
    /// The clock moves forward.
    Advance(u32),
    /// The clock steps backwards.
    Back(u32),
    /// The clock jumps to just before the counter wraps.
    NearWrap(u32),
    /// The clock leaps forward by just under 2^31 ms (the span instants are compared
    /// within; a breaker left alone that long sees the clock as stepped back).
    Leap(u32),
    /// A caller asks the gate (after checking the oracle).
    Acquire,
    /// The `i`-th outstanding permit (modulo their number) reports.
    Report(usize, Outcome),
    /// The `i`-th outstanding permit is dropped unanswered.
    Drop(usize),
    /// Someone forces the breaker open.
    ForceOpen,
    /// Someone resets it.
    Reset,
    /// A prediction opens it as a trip (`trip(Reason::Predicted, now)`).
    Trip,
}

pub fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        4 => Just(Outcome::Success),
        3 => Just(Outcome::STRIKE),
        1 => Just(Outcome::TRIP),
        1 => (0u32..200).prop_map(|ms| Verdict::TripFor(Duration::from_millis(ms)).into()),
        1 => Just(Outcome::NEUTRAL),
    ]
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u32..60).prop_map(Op::Advance),
        1 => (0u32..50).prop_map(Op::Back),
        1 => (0u32..100).prop_map(Op::NearWrap),
        1 => (0u32..100).prop_map(Op::Leap),
        8 => Just(Op::Acquire),
        6 => (any::<usize>(), outcome()).prop_map(|(i, o)| Op::Report(i, o)),
        2 => any::<usize>().prop_map(Op::Drop),
        1 => Just(Op::ForceOpen),
        1 => Just(Op::Reset),
        1 => Just(Op::Trip),
    ]
}

/// Small policies, so short sequences reach every state.
pub fn policy() -> impl Strategy<Value = Policy> {
    (
        (1u32..4, 1u32..40, 1u32..40, 1u32..4),
        (1u32..4, 0u32..100, any::<bool>()),
    )
        .prop_map(|((trip, cool, lease, probes), (mult, extra, patient))| {
            let p = Policy::new(trip, Duration::from_millis(cool))
                .with_probe_lease(Duration::from_millis(lease))
                .with_probes_to_close(probes)
                .with_backoff(mult, Duration::from_millis(cool + extra));
            if patient {
                p.with_patient_probation()
            } else {
                p
            }
        })
}

/// Moves a clock reading as `op` says (other ops leave it alone).
pub fn move_clock(now: Instant, op: &Op) -> Instant {
    match *op {
        Op::Advance(ms) => now.wrapping_add(Duration::from_millis(ms)),
        Op::Back(ms) => now.wrapping_sub(Duration::from_millis(ms)),
        Op::NearWrap(ms) => Instant::from_millis(u32::MAX - ms),
        Op::Leap(ms) => Instant::from_millis(now.as_millis().wrapping_add((1 << 31) - ms)),
        _ => now,
    }
}
