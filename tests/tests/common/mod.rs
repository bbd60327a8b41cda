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

/// Draws several values from one random number (splitmix64), so that an operation is
/// generated from a single `u64`: cheap to generate, and still shrunk by proptest.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }

    fn outcome(&mut self) -> Outcome {
        match self.below(10) {
            0..=3 => Outcome::Success,
            4..=6 => Outcome::STRIKE,
            7 => Outcome::TRIP,
            8 => Verdict::TripFor(Duration::from_millis(self.below(200) as u32)).into(),
            _ => Outcome::NEUTRAL,
        }
    }

    fn op(&mut self) -> Op {
        match self.below(28) {
            0..=5 => Op::Advance(self.below(60) as u32),
            6 => Op::Back(self.below(50) as u32),
            7 => Op::NearWrap(self.below(100) as u32),
            8 => Op::Leap(self.below(100) as u32),
            9..=16 => Op::Acquire,
            17..=22 => Op::Report(self.below(64) as usize, self.outcome()),
            23 | 24 => Op::Drop(self.below(64) as usize),
            25 => Op::ForceOpen,
            26 => Op::Reset,
            _ => Op::Trip,
        }
    }
}

pub fn op() -> impl Strategy<Value = Op> {
    any::<u64>().prop_map(|seed| Draw(seed).op())
}

/// Small policies, so short sequences reach every state: now and then half-open judged
/// by a failure rate over a few calls instead of a streak.
pub fn policy() -> impl Strategy<Value = Policy> {
    (
        (1u32..4, 1u32..40, 1u32..40, 1u32..4),
        (1u32..4, 0u32..100, any::<bool>()),
        proptest::option::weighted(0.3, (1u32..7, 1u32..=100)),
    )
        .prop_map(|((trip, cool, lease, probes), (mult, extra, patient), rate)| {
            let p = Policy::new(trip, Duration::from_millis(cool))
                .with_probe_lease(Duration::from_millis(lease))
                .with_backoff(mult, Duration::from_millis(cool + extra));
            let p = match rate {
                Some((calls, percent)) => p.with_half_open_rate(calls, percent),
                None => p.with_probes_to_close(probes),
            };
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
