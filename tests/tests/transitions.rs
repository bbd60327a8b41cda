//! One test per row of the transition table in the behaviour spec, named after the row,
//! plus the notes under it (time, counters, manual controls).

use breaker_core::{
    Breaker, Counters, Duration, Instant, Outcome, Phase, Policy, Reason, RefusalReason, Snapshot, State, Transition,
    TransitionCounts, Verdict,
};

const COOLDOWN: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(10);

fn policy() -> Policy {
    Policy::new(3, COOLDOWN).with_probe_lease(LEASE)
}

fn t(ms: u32) -> Instant {
    Instant::from_millis(ms)
}

fn s(secs: u32) -> Instant {
    t(secs * 1000)
}

fn call<O: breaker_core::Observer>(b: &mut Breaker<O>, outcome: Outcome, now: Instant) {
    let p = b.try_acquire(now).expect("call should be admitted");
    b.record(p, outcome, now);
}

/// A breaker tripped by three strikes at `s(0)`.
fn open_at_zero(policy: Policy) -> Breaker {
    let mut b = Breaker::new(policy);
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(0));
    }
    assert_eq!(b.phase(s(0)), Phase::Open);
    b
}

/// A breaker in half-open at `s(30)` with the probe just granted to the returned permit.
fn probing_at_30(policy: Policy) -> (Breaker, breaker_core::Permit) {
    let mut b = open_at_zero(policy);
    let p = b.try_acquire(s(30)).expect("cooldown elapsed");
    assert!(p.is_probe());
    (b, p)
}

#[test]
fn closed_success_stays_closed_and_zeroes_strikes() {
    let mut b = Breaker::new(policy());
    call(&mut b, Outcome::STRIKE, s(0));
    call(&mut b, Outcome::STRIKE, s(0));
    assert_eq!(b.state(s(0)), State::Closed { strikes: 2 });
    call(&mut b, Outcome::Success, s(0));
    assert_eq!(b.state(s(0)), State::Closed { strikes: 0 });
    call(&mut b, Outcome::STRIKE, s(0));
    call(&mut b, Outcome::STRIKE, s(0));
    assert_eq!(b.phase(s(0)), Phase::Closed, "strikes must be consecutive");
}

#[test]
fn closed_strike_reaching_trip_opens_with_the_base_cooldown() {
    let mut b = Breaker::new(policy());
    call(&mut b, Outcome::STRIKE, s(0));
    call(&mut b, Outcome::STRIKE, s(1));
    call(&mut b, Outcome::STRIKE, s(2));
    assert_eq!(
        b.state(s(2)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        }
    );
    assert_eq!(b.counters().trips, 1);
}

#[test]
fn closed_trip_verdict_opens_on_first_contact() {
    let mut b = Breaker::new(policy());
    call(&mut b, Outcome::TRIP, s(5));
    assert_eq!(
        b.state(s(5)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        }
    );
}

#[test]
fn closed_trip_verdict_with_a_minimum_open_time_is_honoured() {
    let mut b = Breaker::new(policy());
    call(&mut b, Verdict::TripFor(Duration::from_secs(120)).into(), s(0));
    assert_eq!(
        b.state(s(0)),
        State::Open {
            remaining: Duration::from_secs(120),
            forced: false
        }
    );
    assert_eq!(
        b.try_acquire(s(100)).unwrap_err().retry_in,
        Some(Duration::from_secs(20))
    );
    assert!(!b.would_allow(s(119)));
    assert!(b.would_allow(s(120)));
    // A shorter hold than the cooldown changes nothing.
    let mut b = Breaker::new(policy());
    call(&mut b, Verdict::TripFor(Duration::from_secs(1)).into(), s(0));
    assert_eq!(
        b.state(s(0)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        }
    );
}

#[test]
fn closed_neutral_changes_nothing() {
    let mut b = Breaker::new(policy());
    call(&mut b, Outcome::STRIKE, s(0));
    call(&mut b, Outcome::NEUTRAL, s(0));
    assert_eq!(b.state(s(0)), State::Closed { strikes: 1 });
    assert_eq!(b.counters().neutrals, 1);
}

#[test]
fn open_call_before_the_cooldown_is_refused_and_counted_as_a_skip() {
    let mut b = open_at_zero(policy());
    let r = b.try_acquire(s(29)).unwrap_err();
    assert_eq!(r.reason, RefusalReason::Open);
    assert_eq!(r.retry_in, Some(Duration::from_secs(1)));
    assert_eq!(r.to_string(), "circuit breaker open: call refused");
    assert_eq!(b.counters().skips, 1);
    assert_eq!(b.phase(s(29)), Phase::Open);
}

#[test]
fn open_call_after_the_cooldown_becomes_the_probe() {
    let (b, p) = probing_at_30(policy());
    assert_eq!(
        b.state(s(30)),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    assert!(p.is_probe());
    assert_eq!(b.counters().probes, 1);
}

#[test]
fn open_success_from_a_call_started_before_the_trip_is_ignored() {
    let mut b = Breaker::new(policy());
    let early = b.try_acquire(s(0)).unwrap();
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(0));
    }
    b.record(early, Outcome::Success, s(1));
    assert_eq!(
        b.state(s(1)),
        State::Open {
            remaining: Duration::from_secs(29),
            forced: false
        }
    );
    assert_eq!(b.counters().successes, 1, "still counted as a success");
}

#[test]
fn open_failure_restarts_the_wait() {
    let mut b = Breaker::new(policy());
    let early = b.try_acquire(s(0)).unwrap();
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(0));
    }
    b.record(early, Outcome::STRIKE, s(20));
    assert_eq!(
        b.state(s(20)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        }
    );
    assert!(!b.would_allow(s(49)));
    assert!(b.would_allow(s(50)));
}

#[test]
fn open_failure_never_shortens_a_longer_hold() {
    // Opened with a 120 s `Retry-After`; a late failure at 20 s restarts the 30 s cooldown,
    // which would end at 50 s: the hold's end (120 s) stands.
    let mut b = Breaker::new(policy());
    let late = b.try_acquire(s(0)).unwrap();
    call(&mut b, Verdict::TripFor(Duration::from_secs(120)).into(), s(0));
    b.record(late, Outcome::STRIKE, s(20));
    assert_eq!(
        b.state(s(20)),
        State::Open {
            remaining: Duration::from_secs(100),
            forced: false
        }
    );
    assert!(!b.would_allow(s(119)));
    assert!(b.would_allow(s(120)));
    // A failure carrying its own, longer hold does extend it.
    let mut b = Breaker::new(policy());
    let late = b.try_acquire(s(0)).unwrap();
    call(&mut b, Verdict::TripFor(Duration::from_secs(120)).into(), s(0));
    b.record(late, Verdict::TripFor(Duration::from_secs(200)).into(), s(10));
    assert_eq!(
        b.state(s(10)),
        State::Open {
            remaining: Duration::from_secs(200),
            forced: false
        }
    );
}

#[test]
fn half_open_probe_failing_with_a_hold_honours_the_hold() {
    let (mut b, probe) = probing_at_30(policy());
    b.record(probe, Verdict::TripFor(Duration::from_secs(90)).into(), s(31));
    assert_eq!(
        b.state(s(31)),
        State::Open {
            remaining: Duration::from_secs(90),
            forced: false
        }
    );
    assert!(!b.would_allow(s(120)));
    assert!(b.would_allow(s(121)));
    // With patient probation too: a trip verdict is not a blip.
    let (mut b, probe) = probing_at_30(policy().with_patient_probation());
    b.record(probe, Verdict::TripFor(Duration::from_secs(90)).into(), s(31));
    assert_eq!(
        b.try_acquire(s(100)).unwrap_err().retry_in,
        Some(Duration::from_secs(21))
    );
}

#[test]
fn half_open_another_call_while_the_probe_is_out_is_refused() {
    let (mut b, _probe) = probing_at_30(policy());
    let r = b.try_acquire(s(31)).unwrap_err();
    assert_eq!(r.reason, RefusalReason::Probing);
    assert_eq!(b.counters().skips, 1);
    assert!(!b.would_allow(s(31)));
}

#[test]
fn half_open_probe_success_reaching_the_streak_closes_and_zeroes_everything() {
    let backoff = policy().with_backoff(2, Duration::from_mins(10));
    let (mut b, p) = probing_at_30(backoff);
    b.record(p, Outcome::STRIKE, s(31)); // re-open with the cooldown doubled
    assert_eq!(
        b.state(s(31)),
        State::Open {
            remaining: Duration::from_secs(60),
            forced: false
        }
    );
    let p = b.try_acquire(s(91)).unwrap();
    b.record(p, Outcome::Success, s(92));
    assert_eq!(b.state(s(92)), State::Closed { strikes: 0 });
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(100));
    }
    assert_eq!(
        b.state(s(100)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        },
        "backoff reset by the close"
    );
}

#[test]
fn half_open_probe_success_short_of_the_streak_frees_the_slot_for_the_next_probe() {
    let (mut b, p) = probing_at_30(policy().with_probes_to_close(2));
    b.record(p, Outcome::Success, s(31));
    assert_eq!(
        b.state(s(31)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
    let p2 = b.try_acquire(s(32)).expect("the next caller becomes the next probe");
    assert!(p2.is_probe());
    b.record(p2, Outcome::Success, s(33));
    assert_eq!(b.phase(s(33)), Phase::Closed);
}

#[test]
fn half_open_probe_failure_reopens_and_advances_the_backoff() {
    let p = Policy::new(3, Duration::from_mins(2))
        .with_probe_lease(LEASE)
        .with_backoff(2, Duration::from_mins(30));
    let mut b = Breaker::new(p);
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(0));
    }
    let mut now = 0;
    for expected_mins in [4, 8, 16, 30, 30] {
        now += 2 * 60 * 60; // well past any cooldown
        let probe = b.try_acquire(s(now)).unwrap();
        b.record(probe, Outcome::STRIKE, s(now));
        assert_eq!(
            b.state(s(now)),
            State::Open {
                remaining: Duration::from_mins(expected_mins),
                forced: false
            }
        );
    }
    // A trip verdict from the probe re-opens the same way.
    now += 2 * 60 * 60;
    let probe = b.try_acquire(s(now)).unwrap();
    b.record(probe, Outcome::TRIP, s(now));
    assert_eq!(b.phase(s(now)), Phase::Open);
}

#[test]
fn half_open_probe_neutral_frees_the_slot_with_no_decision() {
    let (mut b, p) = probing_at_30(policy());
    b.record(p, Outcome::NEUTRAL, s(31));
    assert_eq!(
        b.state(s(31)),
        State::HalfOpen {
            probing: false,
            streak: 0
        }
    );
    assert!(b.try_acquire(s(31)).unwrap().is_probe());
}

#[test]
fn half_open_lease_expiry_reopens_backdated_to_the_lease_end_and_advances_the_backoff() {
    let (mut b, lost) = probing_at_30(policy().with_backoff(2, Duration::from_mins(10)));
    // Lease: 30 s + 10 s = 40 s. Noticed lazily at 45 s: opened_at = 40 s, cooldown 60 s.
    assert_eq!(
        b.state(s(45)),
        State::Open {
            remaining: Duration::from_secs(55),
            forced: false
        }
    );
    let r = b.try_acquire(s(45)).unwrap_err();
    assert_eq!(r.retry_in, Some(Duration::from_secs(55)));
    assert_eq!(b.counters().lease_expiries, 1);
    assert_eq!(b.counters().trips, 2);
    assert!(b.is_stale(&lost, s(45)));
    b.record(lost, Outcome::Success, s(46));
    assert_eq!(b.phase(s(46)), Phase::Open, "the late probe answer is stale");
}

#[test]
fn half_open_lease_expiry_with_the_cooldown_also_run_out_makes_the_asker_the_next_probe() {
    let (mut b, _lost) = probing_at_30(policy());
    // Lease ended at 40 s, cooldown 30 s from there: at 70 s the asker is the probe at once.
    let p = b.try_acquire(s(70)).expect("the asking caller becomes the next probe");
    assert!(p.is_probe());
    assert_eq!(
        b.state(s(70)),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    assert_eq!(b.counters().lease_expiries, 1);
}

#[test]
fn half_open_probe_success_after_its_lease_is_too_late() {
    let (mut b, p) = probing_at_30(policy());
    b.record(p, Outcome::Success, s(40)); // exactly at the lease's end: lease no longer live
    assert_eq!(b.phase(s(40)), Phase::Open);
}

#[test]
fn any_stale_outcome_is_ignored() {
    let mut b = Breaker::new(policy().with_probes_to_close(2));
    let old = b.try_acquire(s(0)).unwrap();
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(0));
    }
    let probe = b.try_acquire(s(30)).unwrap();
    b.record(probe, Outcome::Success, s(31));
    assert_eq!(
        b.state(s(31)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
    // A failure from before the trip, arriving in half-open, moves nothing.
    assert!(b.is_stale(&old, s(32)));
    b.record(old, Outcome::STRIKE, s(32));
    assert_eq!(
        b.state(s(32)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
    // A strike from before a close does not count towards a new trip.
    let stale_closed = b.try_acquire(s(33)).unwrap();
    b.record(stale_closed, Outcome::NEUTRAL, s(33));
    let before_close = {
        let p = b.try_acquire(s(34)).unwrap();
        b.record(p, Outcome::Success, s(34));
        b.try_acquire(s(34)).unwrap()
    };
    assert_eq!(b.phase(s(34)), Phase::Closed);
    b.force_open(s(35));
    b.reset(s(36));
    b.record(before_close, Outcome::STRIKE, s(37));
    assert_eq!(b.state(s(37)), State::Closed { strikes: 0 });
}

#[test]
fn oracle_and_gate_agree_and_the_oracle_never_eats_the_probe() {
    let mut b = open_at_zero(policy());
    for _ in 0..100 {
        assert!(b.would_allow(s(30)));
    }
    assert_eq!(b.phase(s(30)), Phase::Open, "polling changed nothing");
    assert!(b.try_acquire(s(30)).unwrap().is_probe());
    assert!(!b.would_allow(s(30)));
}

#[test]
fn force_open_holds_until_reset_and_reset_keeps_counters() {
    let mut b = Breaker::new(policy());
    b.force_open(s(0));
    assert_eq!(
        b.state(s(1000)),
        State::Open {
            remaining: Duration::ZERO,
            forced: true
        }
    );
    assert_eq!(b.try_acquire(s(1000)).unwrap_err().reason, RefusalReason::ForcedOpen);
    assert!(!b.would_allow(s(100_000)));
    b.reset(s(1000));
    assert_eq!(b.phase(s(1000)), Phase::Closed);
    assert_eq!(b.counters().skips, 1);
    assert_eq!(b.counters().trips, 0, "a forced open is not a trip");
}

#[test]
fn reset_zeroes_the_backoff_step() {
    let backoff = policy().with_backoff(2, Duration::from_mins(10));
    let (mut b, probe) = probing_at_30(backoff);
    b.record(probe, Outcome::STRIKE, s(31)); // step 1: 60 s
    assert_eq!(
        b.state(s(31)),
        State::Open {
            remaining: Duration::from_secs(60),
            forced: false
        }
    );
    b.reset(s(40));
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(41));
    }
    assert_eq!(
        b.state(s(41)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        },
        "the first trip after a reset waits the base cooldown"
    );
    // Reset from half-open and from forced open too.
    let (mut b, probe) = probing_at_30(backoff);
    b.record(probe, Outcome::STRIKE, s(31));
    let probe = b.try_acquire(s(91)).unwrap();
    b.reset(s(92));
    assert!(b.is_stale(&probe, s(92)));
    b.force_open(s(93));
    b.reset(s(94));
    call(&mut b, Outcome::TRIP, s(95));
    assert_eq!(b.try_acquire(s(95)).unwrap_err().retry_in, Some(COOLDOWN));
}

#[test]
fn a_transition_reports_the_wait_it_starts_as_its_cooldown() {
    use std::cell::RefCell;
    #[derive(Default)]
    struct Log(RefCell<Vec<Transition>>);
    impl breaker_core::Observer for Log {
        fn on_transition(&self, t: &Transition) {
            self.0.borrow_mut().push(*t);
        }
    }
    let backoff = policy().with_backoff(2, Duration::from_mins(10));
    let mut b = Breaker::with_observer(backoff, Log::default());
    // A hold longer than the cooldown is the wait reported...
    call(&mut b, Verdict::TripFor(Duration::from_secs(100)).into(), s(0));
    // ...a shorter one is not; a failed probe reports the next backoff step...
    let probe = b.try_acquire(s(100)).unwrap();
    b.record(probe, Verdict::TripFor(Duration::from_secs(5)).into(), s(101));
    // ...unless its hold is longer; a lapsed lease reports the step after that.
    let probe = b.try_acquire(s(161)).unwrap();
    b.record(probe, Verdict::TripFor(Duration::from_secs(500)).into(), s(162));
    let _lost = b.try_acquire(s(662)).unwrap();
    let _ = b.try_acquire(s(700));
    b.force_open(s(701));
    let heard: Vec<_> = b
        .observer()
        .0
        .borrow()
        .iter()
        .map(|t| (t.to, t.why, t.at, t.cooldown))
        .collect();
    let secs = Duration::from_secs;
    assert_eq!(
        heard,
        [
            (Phase::Open, Reason::TripVerdict, s(0), secs(100)),
            (Phase::HalfOpen, Reason::CooldownElapsed, s(100), Duration::ZERO),
            (Phase::Open, Reason::ProbeFailed, s(101), secs(60)),
            (Phase::HalfOpen, Reason::CooldownElapsed, s(161), Duration::ZERO),
            (Phase::Open, Reason::ProbeFailed, s(162), secs(500)),
            (Phase::HalfOpen, Reason::CooldownElapsed, s(662), Duration::ZERO),
            (Phase::Open, Reason::LeaseExpired, s(672), secs(240)),
            (Phase::Open, Reason::ForcedOpen, s(701), Duration::ZERO),
        ]
    );
}

#[test]
fn time_wraps_around_the_counter_correctly() {
    let start = t(u32::MAX - 10_000);
    let mut b = Breaker::new(policy());
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, start);
    }
    assert!(!b.would_allow(start.wrapping_add(Duration::from_secs(29))));
    let after = start.wrapping_add(COOLDOWN);
    assert!(after.as_millis() < 30_000, "the counter wrapped");
    assert!(b.try_acquire(after).unwrap().is_probe());
}

#[test]
fn a_clock_that_steps_backwards_counts_as_no_time_passing() {
    let mut b = Breaker::new(policy());
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(100));
    }
    // The clock jumps back 50 s: no negative or huge elapsed time, just a longer wait.
    assert!(!b.would_allow(s(50)));
    assert_eq!(
        b.state(s(50)),
        State::Open {
            remaining: Duration::from_secs(80),
            forced: false
        }
    );
    assert!(!b.would_allow(s(129)));
    assert!(b.would_allow(s(130)));
    // A stuck clock: the lease of a probe started at the same instant never expires by itself,
    // but dropping to the lease is never needed for the gate to stay consistent.
    let p = b.try_acquire(s(130)).unwrap();
    assert!(!b.would_allow(s(130)));
    b.record(p, Outcome::Success, s(130));
    assert_eq!(b.phase(s(130)), Phase::Closed);
}

#[test]
fn counters_saturate_instead_of_wrapping() {
    let mut b = Breaker::new(policy());
    let full = Counters {
        calls: u32::MAX,
        successes: u32::MAX,
        failures: u32::MAX,
        neutrals: u32::MAX,
        skips: u32::MAX,
        trips: u32::MAX,
        probes: u32::MAX,
        lease_expiries: u32::MAX,
        probe_successes: u32::MAX,
        probe_failures: u32::MAX,
        probe_neutrals: u32::MAX,
        transitions: TransitionCounts {
            closed_to_open: u32::MAX,
            open_to_half_open: u32::MAX,
            half_open_to_closed: u32::MAX,
            half_open_to_open: u32::MAX,
            open_to_closed: u32::MAX,
        },
    };
    let snap = Snapshot {
        counters: full,
        ..b.snapshot(s(0))
    };
    b.restore(&snap, s(0));
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(0));
    }
    let _ = b.try_acquire(s(1));
    let p = b.try_acquire(s(30)).unwrap();
    b.record(p, Outcome::Success, s(30));
    assert_eq!(b.counters(), full);
}

#[test]
fn the_observer_hears_every_transition_with_its_reason_and_time() {
    use std::cell::RefCell;
    struct Log(RefCell<Vec<Transition>>);
    impl breaker_core::Observer for Log {
        fn on_transition(&self, t: &Transition) {
            self.0.borrow_mut().push(*t);
        }
    }
    let mut b = Breaker::with_observer(policy(), Log(RefCell::new(Vec::new())));
    for _ in 0..3 {
        call(&mut b, Outcome::STRIKE, s(0));
    }
    let _lost = b.try_acquire(s(30)).unwrap();
    let p = b.try_acquire(s(70)).unwrap();
    b.record(p, Outcome::Success, s(71));
    let log: Vec<_> = b
        .observer()
        .0
        .borrow()
        .iter()
        .map(|t| (t.from, t.to, t.why, t.at))
        .collect();
    assert_eq!(
        log,
        [
            (Phase::Closed, Phase::Open, Reason::Strikes, s(0)),
            (Phase::Open, Phase::HalfOpen, Reason::CooldownElapsed, s(30)),
            (Phase::HalfOpen, Phase::Open, Reason::LeaseExpired, s(40)),
            (Phase::Open, Phase::HalfOpen, Reason::CooldownElapsed, s(70)),
            (Phase::HalfOpen, Phase::Closed, Reason::Recovered, s(71)),
        ]
    );
}

#[test]
fn a_plain_function_is_an_observer() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static HEARD: AtomicUsize = AtomicUsize::new(0);
    fn count(t: &Transition) {
        assert_eq!((t.from, t.to, t.why), (Phase::Closed, Phase::Open, Reason::TripVerdict));
        HEARD.fetch_add(1, Ordering::Relaxed);
    }
    let observer: fn(&Transition) = count;
    let mut b = Breaker::with_observer(policy(), observer);
    call(&mut b, Outcome::TRIP, s(0));
    assert_eq!(HEARD.load(Ordering::Relaxed), 1);
}
