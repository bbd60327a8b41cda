//! Property tests of the quota gauge against a simple reference model (a `Vec` window and
//! 128-bit arithmetic), on every kind of input: remaining above total, a zero total, equal
//! timestamps, clocks that step back or leap, the extremes of `u32`. And a differential
//! test: a `QuotaGuard` steers a `Breaker` and a `SharedBreaker` identically.

use std::cell::RefCell;

use breaker_core::{
    Alarm, Breaker, CallError, Classify, Clock, Duration, Instant, Light, ManualClock, Observer, Priority, Quota,
    QuotaGauge, QuotaGuard, QuotaObserver, QuotaPolicy, Sample, Share, SharedBreaker, Transition, Verdict,
};
use proptest::prelude::*;

/// The model's window: the samples since the last reset, at most `n`, oldest first.
struct Model {
    n: usize,
    window: Vec<Sample>,
    policy: QuotaPolicy,
}

impl Model {
    fn observe(&mut self, s: Sample) {
        if let Some(last) = self.window.last() {
            let stepped_back = (s.at.as_millis().wrapping_sub(last.at.as_millis()) as i32) < 0;
            if s.total != last.total || s.remaining > last.remaining || stepped_back {
                self.window.clear();
            }
        }
        self.window.push(s);
        if self.window.len() > self.n {
            self.window.remove(0);
        }
    }

    /// (consumed, over ms, exhausted in ms capped at Duration::MAX), exactly.
    fn forecast(&self) -> Option<(u32, u32, u32)> {
        let (first, last) = (self.window.first()?, self.window.last()?);
        let over = last.at.as_millis().wrapping_sub(first.at.as_millis()) as i32;
        let consumed = first.remaining.checked_sub(last.remaining)?;
        if consumed == 0 || over <= 0 {
            return None;
        }
        let ms = u128::from(last.remaining) * over as u128 / u128::from(consumed);
        Some((
            consumed,
            over as u32,
            ms.min(u128::from(Duration::MAX.as_millis())) as u32,
        ))
    }

    fn light(&self) -> Option<Light> {
        let q = self.window.last()?;
        // share = min(remaining, total) / total, compared as exact fractions.
        let left = u128::from(q.remaining.min(q.total)) * 10_000;
        let total = u128::from(q.total);
        let green = u128::from(self.policy.green_above().as_basis_points());
        let red = u128::from(self.policy.red_at_or_below().as_basis_points());
        Some(if q.total == 0 || left <= total * red {
            Light::Red
        } else if left <= total * green {
            Light::Amber
        } else {
            Light::Green
        })
    }

    fn alarm(&self) -> Option<Alarm> {
        if self.light() == Some(Light::Red) {
            Some(Alarm::Red)
        } else {
            match self.forecast() {
                Some((_, _, ms)) if ms < self.policy.warning().as_millis() => Some(Alarm::Exhaustion),
                _ => None,
            }
        }
    }
}

/// A sample: mostly plausible (a quota slowly spent, time moving forward), often the
/// edges: any `u32`, remaining above total, zero total, steps back, leaps of 2^31 ms.
fn step() -> impl Strategy<Value = (i64, u32, u32, bool)> {
    let dt = prop_oneof![
        6 => 0i64..5_000,
        1 => Just(0i64),
        1 => -5_000i64..0,
        1 => prop_oneof![Just(1i64 << 31), Just((1i64 << 31) - 1), Just(-(1i64 << 31))],
        1 => any::<u32>().prop_map(i64::from),
    ];
    let spend = prop_oneof![6 => 0u32..200, 1 => any::<u32>()];
    let total = prop_oneof![8 => Just(5_000u32), 1 => Just(0u32), 1 => any::<u32>()];
    (dt, spend, total, any::<bool>())
}

fn policy() -> impl Strategy<Value = QuotaPolicy> {
    (0u16..=10_000, 0u16..=10_000, 0u32..=600_000).prop_map(|(a, b, warn)| {
        QuotaPolicy::new()
            .with_warning(Duration::from_millis(warn))
            .with_lights(Share::basis_points(a.max(b)), Share::basis_points(a.min(b)))
    })
}

fn run_gauge<const N: usize>(policy: QuotaPolicy, steps: &[(i64, u32, u32, bool)]) -> Result<(), TestCaseError> {
    let mut gauge = QuotaGauge::<N>::new(policy);
    let mut model = Model {
        n: N,
        window: Vec::new(),
        policy,
    };
    let (mut at, mut remaining) = (0u32, 5_000u32);
    for &(dt, spend, total, refill) in steps {
        at = at.wrapping_add(dt as u32);
        remaining = if refill {
            remaining.wrapping_add(spend)
        } else {
            remaining.wrapping_sub(spend)
        };
        let sample = Sample::new(Instant::from_millis(at), remaining, total);
        let reading = gauge.observe(sample);
        model.observe(sample);

        let window: Vec<Sample> = gauge.samples().collect();
        prop_assert_eq!(&window, &model.window);
        prop_assert_eq!(gauge.len(), model.window.len());
        prop_assert_eq!(
            reading
                .forecast
                .map(|f| (f.consumed, f.over.as_millis(), f.exhausted_in.as_millis())),
            model.forecast()
        );
        prop_assert_eq!(reading.light, model.light());
        prop_assert_eq!(reading.alarm, model.alarm());
        prop_assert_eq!(reading.quota, Some(sample.quota()));
        prop_assert_eq!(reading, gauge.reading(), "observe answers what reading says");
        if let Some(f) = reading.forecast {
            // The rates never divide by zero and agree with each other.
            prop_assert!(f.millis_per_second() / 10 <= f.centis_per_second());
            prop_assert!(f.centis_per_second() <= f.millis_per_second() / 10 + 1);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn the_gauge_agrees_with_the_reference_model_on_every_input(
        policy in policy(),
        steps in prop::collection::vec(step(), 1..60),
    ) {
        run_gauge::<10>(policy, &steps)?;
        run_gauge::<2>(policy, &steps)?;
        run_gauge::<3>(policy, &steps)?;
    }

    #[test]
    fn the_light_of_any_quota_is_defined_and_ordered(remaining in any::<u32>(), total in any::<u32>(), policy in policy()) {
        let light = Quota::new(remaining, total).light(&policy);
        // More left never gives a worse light.
        let more = Quota::new(remaining.saturating_add(1), total).light(&policy);
        prop_assert!(more <= light);
        prop_assert!(Quota::new(remaining, total).share() <= Share::ALL);
    }
}

// ---- the guard on both storages -----------------------------------------------------------

#[derive(Default)]
struct Log(RefCell<Vec<String>>);

impl Observer for Log {
    fn on_transition(&self, t: &Transition) {
        self.0.borrow_mut().push(format!("{:?}", t));
    }
}

impl QuotaObserver for Log {
    fn on_quota(&self, q: &Quota) {
        self.0.borrow_mut().push(format!("{q}"));
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fail {
    RateLimited,
    Timeout,
    Cancelled,
}

impl Classify for Fail {
    fn verdict(&self) -> Verdict {
        match self {
            Fail::RateLimited => Verdict::Trip,
            Fail::Timeout => Verdict::Strike,
            Fail::Cancelled => Verdict::Neutral,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Wait(u32),
    Call {
        high: bool,
        result: Option<Fail>,
        quota: Option<(u32, u32)>,
    },
    Observe(u32, u32),
}

fn op() -> impl Strategy<Value = Op> {
    let quota = prop_oneof![
        6 => (0u32..5_200, Just(5_000u32)),
        1 => (any::<u32>(), any::<u32>()),
    ];
    prop_oneof![
        3 => prop_oneof![0u32..2_000, 0u32..200_000, Just(u32::MAX)].prop_map(Op::Wait),
        6 => (
            any::<bool>(),
            prop_oneof![4 => Just(None), 1 => Just(Some(Fail::RateLimited)), 1 => Just(Some(Fail::Timeout)), 1 => Just(Some(Fail::Cancelled))],
            prop::option::weighted(0.9, quota.clone()),
        )
            .prop_map(|(high, result, quota)| Op::Call { high, result, quota }),
        2 => quota.prop_map(|(r, t)| Op::Observe(r, t)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn a_guard_steers_both_storages_identically(ops in prop::collection::vec(op(), 1..80), policy in policy()) {
        static BREAKER_POLICY: breaker_core::Policy = breaker_core::Policy::new(2, Duration::from_secs(60))
            .with_probes_to_close(2)
            .with_backoff(2, Duration::from_mins(30));
        let shared = SharedBreaker::with_observer(&BREAKER_POLICY, Log::default());
        let mut a = QuotaGuard::<_, 5>::new(Breaker::with_observer(BREAKER_POLICY, Log::default()), policy);
        let mut b = QuotaGuard::<_, 5>::new(&shared, policy);
        let clock = ManualClock::new(Instant::ZERO);
        for op in ops {
            match op {
                Op::Wait(ms) => clock.advance(Duration::from_millis(ms)),
                Op::Call { high, result, quota } => {
                    let priority = if high { Priority::High } else { Priority::Normal };
                    let reply = || (result.map_or(Ok(()), Err), quota.map(|(r, t)| Quota::new(r, t)));
                    let ra: Result<(), CallError<Fail>> = a.call(&clock, priority, reply);
                    let rb: Result<(), CallError<Fail>> = b.call(&clock, priority, reply);
                    prop_assert_eq!(ra, rb);
                }
                Op::Observe(r, t) => {
                    let now = clock.now();
                    prop_assert_eq!(a.observe(Quota::new(r, t), now), b.observe(Quota::new(r, t), now));
                }
            }
            let now = clock.now();
            prop_assert_eq!(a.state(now), b.state(now));
            prop_assert_eq!(&*a.breaker().observer().0.borrow(), &*shared.observer().0.borrow());
            let (ca, cb) = (a.breaker().counters(), shared.counters());
            prop_assert_eq!((ca.failures, ca.skips, ca.trips, ca.probes), (cb.failures, cb.skips, cb.trips, cb.probes));
        }
    }
}
