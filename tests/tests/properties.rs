//! Property tests of the single-owner breaker over random sequences of calls, outcomes
//! and clock moves, including counter wrap-around and backwards steps.

mod common;

use breaker_core::{Breaker, Instant, Outcome, Permit, Phase, Reason, State};
use common::{move_clock, op, policy, Op};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(tests::cases(5_000)))]

    #[test]
    fn invariants_hold_over_random_histories(policy in policy(), ops in prop::collection::vec(op(), 1..150)) {
        let mut b = Breaker::new(policy);
        let mut now = Instant::from_millis(1_000);
        let mut outstanding: Vec<Permit> = Vec::new();
        let mut last_probe_grant: Option<Instant> = None;
        for op in &ops {
            now = move_clock(now, op);
            match *op {
                Op::Acquire => {
                    // The oracle and the gate agree at every instant.
                    let oracle = b.would_allow(now);
                    let gate = b.try_acquire(now);
                    prop_assert_eq!(oracle, gate.is_ok());
                    if let Ok(p) = gate {
                        if p.is_probe() {
                            last_probe_grant = Some(now);
                        }
                        outstanding.push(p);
                    }
                }
                Op::Report(i, outcome) if !outstanding.is_empty() => {
                    let p = outstanding.swap_remove(i % outstanding.len());
                    b.record(p, outcome, now);
                }
                Op::Drop(i) if !outstanding.is_empty() => {
                    // The single-owner breaker has no guard: a lost permit is just never reported.
                    drop(outstanding.swap_remove(i % outstanding.len()));
                }
                Op::ForceOpen => b.force_open(now),
                Op::Reset => b.reset(now),
                Op::Trip => b.trip(Reason::Predicted, now),
                _ => {}
            }
            // At most one probe outstanding.
            let live_probes = outstanding.iter().filter(|p| p.is_probe() && !b.is_stale(p, now)).count();
            prop_assert!(live_probes <= 1, "{} live probes", live_probes);
            // The breaker never sits in half-open past a lease with no way out.
            if let Some(granted) = last_probe_grant {
                let lease_end = granted.wrapping_add(b.policy().probe_lease());
                prop_assert!(
                    !matches!(b.state(lease_end), State::HalfOpen { probing: true, .. }),
                    "still probing at the lease's end"
                );
            }
            // Half-open is only reached through a granted probe.
            if b.phase(now) == Phase::HalfOpen {
                prop_assert!(last_probe_grant.is_some());
                // Under a half-open failure rate, half-open holds only counts that leave
                // the verdict open: failures below the rate, fewer outcomes than permitted.
                if let Some((calls, percent)) = b.policy().half_open_rate() {
                    let s = b.snapshot(now);
                    prop_assert!(u32::from(s.strikes) * 100 < percent * calls, "{:?}", s);
                    prop_assert!(u32::from(s.strikes) + u32::from(s.streak) < calls, "{:?}", s);
                }
            }
        }
        // Counters add up: let through = successes + failures + neutral + outstanding.
        let c = b.counters();
        let lost = ops.iter().filter(|o| matches!(o, Op::Drop(_))).count(); // upper bound
        let reported = u64::from(c.successes) + u64::from(c.failures) + u64::from(c.neutrals);
        prop_assert!(u64::from(c.calls) >= reported + outstanding.len() as u64);
        prop_assert!(u64::from(c.calls) <= reported + (outstanding.len() + lost) as u64);
    }

    #[test]
    fn counters_add_up_exactly_when_every_permit_answers(policy in policy(), ops in prop::collection::vec(op(), 1..150)) {
        let mut b = Breaker::new(policy);
        let mut now = Instant::ZERO;
        let mut outstanding: Vec<Permit> = Vec::new();
        for op in &ops {
            now = move_clock(now, op);
            match *op {
                Op::Acquire => {
                    if let Ok(p) = b.try_acquire(now) {
                        outstanding.push(p);
                    }
                }
                Op::Report(i, _) | Op::Drop(i) if !outstanding.is_empty() => {
                    let outcome = if let Op::Report(_, o) = *op { o } else { Outcome::NEUTRAL };
                    let p = outstanding.swap_remove(i % outstanding.len());
                    b.record(p, outcome, now);
                }
                _ => {}
            }
            let c = b.counters();
            prop_assert_eq!(
                u64::from(c.calls),
                u64::from(c.successes) + u64::from(c.failures) + u64::from(c.neutrals) + outstanding.len() as u64
            );
            prop_assert!(c.probes <= c.calls);
        }
    }
}
