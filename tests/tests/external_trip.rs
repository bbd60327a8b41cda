//! The two ways other capabilities steer the one state machine: `trip` (open as a trip,
//! with no call involved: a quota gauge's prediction) and patient probation (loopctl's
//! model breaker: a strike during the probe costs the streak, not the cooldown).

use std::cell::RefCell;

use breaker_core::{
    Breaker, Duration, Instant, Observer, Outcome, Phase, Policy, Reason, SharedBreaker, State, Transition,
};

const COOLDOWN: Duration = Duration::from_mins(2);

fn s(secs: u32) -> Instant {
    Instant::from_millis(secs * 1000)
}

/// Squad's policy: 2 m doubling to a 30 m cap, 2 successful rounds to close.
fn squad() -> Policy {
    Policy::new(3, COOLDOWN)
        .with_probes_to_close(2)
        .with_backoff(2, Duration::from_mins(30))
}

#[derive(Default)]
struct Heard(RefCell<Vec<Transition>>);

impl Observer for Heard {
    fn on_transition(&self, t: &Transition) {
        self.0.borrow_mut().push(*t);
    }
}

#[test]
fn trip_from_closed_opens_with_the_base_cooldown_and_its_own_reason() {
    let mut b = Breaker::with_observer(squad(), Heard::default());
    b.trip(Reason::Predicted, s(10));
    assert_eq!(
        b.state(s(10)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        }
    );
    assert_eq!(
        b.observer().0.borrow().as_slice(),
        &[Transition {
            from: Phase::Closed,
            to: Phase::Open,
            why: Reason::Predicted,
            at: s(10),
            cooldown: COOLDOWN,
        }]
    );
    let c = b.counters();
    assert_eq!((c.trips, c.failures, c.calls), (1, 0, 0), "a trip, not a failed call");
}

#[test]
fn trip_recovers_by_itself_unlike_force_open() {
    let mut b = Breaker::new(squad());
    b.trip(Reason::Predicted, s(0));
    assert!(b.try_acquire(s(119)).is_err());
    let p = b
        .try_acquire(s(120))
        .expect("the cooldown elapsed: this caller is the probe");
    assert!(p.is_probe());
    b.record(p, Outcome::Success, s(121));
    let p = b.try_acquire(s(125)).unwrap();
    b.record(p, Outcome::Success, s(126));
    assert_eq!(b.phase(s(126)), Phase::Closed, "two successful rounds close it");
}

#[test]
fn trip_from_half_open_counts_as_a_failed_probe_and_advances_the_backoff() {
    let mut b = Breaker::new(squad());
    b.trip(Reason::Predicted, s(0));
    let probe = b.try_acquire(s(120)).unwrap();
    b.trip(Reason::Predicted, s(121));
    assert_eq!(
        b.state(s(121)),
        State::Open {
            remaining: Duration::from_mins(4),
            forced: false
        }
    );
    assert!(b.is_stale(&probe, s(121)), "the probe in flight no longer decides");
    b.record(probe, Outcome::Success, s(122));
    assert_eq!(b.phase(s(122)), Phase::Open);
}

#[test]
fn trip_while_open_restarts_the_wait_and_never_shortens_it() {
    let mut b = Breaker::new(squad());
    b.trip(Reason::Predicted, s(0));
    b.trip(Reason::Predicted, s(100));
    assert_eq!(
        b.state(s(100)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        },
        "fresh bad news restarts the wait"
    );
    b.trip(Reason::Predicted, s(50));
    assert_eq!(
        b.state(s(100)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        },
        "an earlier instant never shortens it"
    );
    assert_eq!(b.counters().trips, 1, "still the same opening");
}

#[test]
fn trip_leaves_a_forced_breaker_forced() {
    let mut b = Breaker::new(squad());
    b.force_open(s(0));
    b.trip(Reason::Predicted, s(1));
    assert_eq!(
        b.state(s(500)),
        State::Open {
            remaining: Duration::ZERO,
            forced: true
        }
    );
}

#[test]
fn trip_on_the_shared_breaker_is_the_same_transition() {
    static POLICY: Policy = Policy::new(3, COOLDOWN)
        .with_probes_to_close(2)
        .with_backoff(2, Duration::from_mins(30));
    let shared = SharedBreaker::new(&POLICY);
    let mut single = Breaker::new(POLICY);
    for (at, why) in [
        (0, Reason::Predicted),
        (130, Reason::Predicted),
        (131, Reason::Predicted),
    ] {
        shared.trip(why, s(at));
        single.trip(why, s(at));
        assert_eq!(shared.state(s(at)), single.state(s(at)));
    }
    assert_eq!(shared.counters().trips, single.counters().trips);
}

fn patient() -> Policy {
    Policy::new(3, Duration::from_secs(60))
        .with_probes_to_close(2)
        .with_patient_probation()
}

fn recovering_at_60(policy: Policy) -> Breaker {
    let mut b = Breaker::new(policy);
    b.trip(Reason::Predicted, s(0));
    b
}

#[test]
fn patient_probation_a_strike_resets_only_the_streak_and_probation_continues() {
    let mut b = recovering_at_60(patient());
    let p = b.try_acquire(s(60)).unwrap();
    b.record(p, Outcome::Success, s(61));
    assert_eq!(
        b.state(s(61)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
    let p = b.try_acquire(s(62)).unwrap();
    assert!(p.is_probe());
    b.record(p, Outcome::STRIKE, s(63));
    assert_eq!(
        b.state(s(63)),
        State::HalfOpen {
            probing: false,
            streak: 0
        },
        "one blip doesn't waste the cooldown already paid"
    );
    assert_eq!(b.counters().trips, 1);
    // Two successes in a row still close it.
    for at in [64, 65] {
        let p = b.try_acquire(s(at)).unwrap();
        b.record(p, Outcome::Success, s(at));
    }
    assert_eq!(b.phase(s(65)), Phase::Closed);
}

#[test]
fn patient_probation_a_trip_verdict_reopens_at_once() {
    let mut b = recovering_at_60(patient());
    let p = b.try_acquire(s(60)).unwrap();
    b.record(p, Outcome::TRIP, s(61));
    assert_eq!(
        b.state(s(61)),
        State::Open {
            remaining: Duration::from_secs(60),
            forced: false
        },
        "the provider said \"no more load\": a fresh cooldown"
    );
}

#[test]
fn patient_probation_a_lapsed_lease_still_reopens() {
    let mut b = recovering_at_60(patient());
    let _lost = b.try_acquire(s(60)).unwrap();
    assert_eq!(
        b.phase(s(120)),
        Phase::Open,
        "the lease (the cooldown, 60 s) ran out at 120 s"
    );
}

#[test]
fn impatient_probation_is_the_default() {
    let mut b = recovering_at_60(Policy::new(3, Duration::from_secs(60)).with_probes_to_close(2));
    let p = b.try_acquire(s(60)).unwrap();
    b.record(p, Outcome::STRIKE, s(61));
    assert_eq!(b.phase(s(61)), Phase::Open);
}
