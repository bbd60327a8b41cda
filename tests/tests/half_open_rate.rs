//! Half-open judged by a failure rate (`Policy::with_half_open_rate`), resilience4j's
//! `permittedNumberOfCallsInHalfOpenState`: the exact figures of 10 permitted calls at
//! 50 %, each script run through the single-owner `Breaker` and the `SharedBreaker` side
//! by side, their decisions, states, snapshots and counters compared after every step;
//! and the attribute's breaker with `half_open_calls` and `half_open_rate`.

use breaker_core::{
    Breaker, Clock, Counters, Duration, Instant, ManualClock, Outcome, Phase, Policy, RefusalReason, SharedBreaker,
    Snapshot, State, TransitionCounts,
};

/// Trips on one strike, cools down for 30 s, gives a probe 10 s; half-open: 10 probes,
/// re-open at 50 % (5 failures), close once 6 succeeded (the 4 left cannot make 5).
/// Counting every call, so that the shared breaker's counters are the single one's.
static POLICY: Policy = Policy::new(1, Duration::from_secs(30))
    .with_probe_lease(Duration::from_secs(10))
    .with_half_open_rate(10, 50)
    .counting_calls();

const S: Outcome = Outcome::Success;
const F: Outcome = Outcome::STRIKE;
const N: Outcome = Outcome::NEUTRAL;

fn s(secs: u32) -> Instant {
    Instant::from_millis(secs * 1000)
}

/// The two breakers, driven alike.
struct Pair {
    single: Breaker,
    shared: SharedBreaker,
    clock: ManualClock,
}

impl Pair {
    /// Both breakers tripped at 0 s by one strike, and the clock at 30 s: the next call is
    /// the first probe.
    fn tripped() -> Pair {
        let mut p = Pair {
            single: Breaker::new(POLICY),
            shared: SharedBreaker::new(&POLICY),
            clock: ManualClock::new(s(0)),
        };
        p.call(F);
        assert_eq!(p.phase(), Phase::Open);
        p.clock.set(s(30));
        p
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// One call answered with `outcome` through both breakers, which must agree on
    /// letting it through (as the probe) and on everything after.
    fn call(&mut self, outcome: Outcome) {
        let now = self.now();
        let single = self.single.try_acquire(now);
        let shared = self.shared.try_acquire(&self.clock);
        assert_eq!(single.is_ok(), shared.is_ok(), "the gates differ at {now:?}");
        let (single, shared) = (single.unwrap(), shared.unwrap());
        assert_eq!(single.is_probe(), shared.is_probe());
        self.single.record(single, outcome, now);
        shared.record(outcome);
        self.same();
    }

    fn calls(&mut self, outcomes: &[Outcome]) {
        for &o in outcomes {
            self.call(o);
        }
    }

    /// The two breakers' states, snapshots and counters are equal.
    fn same(&self) {
        let now = self.now();
        assert_eq!(self.single.state(now), self.shared.state(now));
        assert_eq!(self.single.snapshot(now), self.shared.snapshot(now));
        assert_eq!(self.single.counters(), self.shared.counters());
    }

    fn phase(&self) -> Phase {
        self.single.phase(self.now())
    }

    fn state(&self) -> State {
        self.single.state(self.now())
    }

    /// Half-open: (failures, successes) counted so far, as a snapshot holds them.
    fn counts(&self) -> (u8, u8) {
        let snap = self.single.snapshot(self.now());
        (snap.strikes, snap.streak)
    }

    fn counters(&self) -> Counters {
        self.single.counters()
    }
}

#[test]
fn four_failures_and_six_successes_of_ten_close() {
    let mut b = Pair::tripped();
    b.calls(&[F, S, F, S, F, S, F, S, S]);
    assert_eq!(b.phase(), Phase::HalfOpen);
    assert_eq!(b.counts(), (4, 5));
    assert_eq!(
        b.state(),
        State::HalfOpen {
            probing: false,
            streak: 5
        }
    );
    // The tenth outcome: 4 failures of 10 is 40 %, below 50 %.
    b.call(S);
    assert_eq!(b.state(), State::Closed { strikes: 0 });
    let c = b.counters();
    assert_eq!((c.probes, c.probe_successes, c.probe_failures, c.trips), (10, 6, 4, 1));
    assert_eq!(
        c.transitions,
        TransitionCounts {
            closed_to_open: 1,
            open_to_half_open: 1,
            half_open_to_closed: 1,
            ..TransitionCounts::ZERO
        }
    );
    // Closed again, a strike trips it at the base cooldown (the backoff was reset).
    b.call(F);
    assert_eq!(
        b.state(),
        State::Open {
            remaining: Duration::from_secs(30),
            forced: false
        }
    );
}

#[test]
fn the_fifth_failure_reopens_as_a_failed_probe() {
    let mut b = Pair::tripped();
    b.calls(&[S, F, S, F, S, F, S, F]);
    assert_eq!((b.phase(), b.counts()), (Phase::HalfOpen, (4, 4)));
    b.call(F);
    assert_eq!(
        b.state(),
        State::Open {
            remaining: Duration::from_secs(30),
            forced: false
        }
    );
    let c = b.counters();
    assert_eq!((c.probes, c.probe_successes, c.probe_failures, c.trips), (9, 4, 5, 2));
    assert_eq!(c.transitions.half_open_to_open, 1);
    // Re-opened with the backoff advanced, and the next probation counts from zero.
    assert_eq!(b.single.snapshot(b.now()).step, 1);
    b.clock.set(s(60));
    b.call(F);
    assert_eq!((b.phase(), b.counts()), (Phase::HalfOpen, (1, 0)));
}

#[test]
fn the_verdict_is_taken_as_soon_as_it_is_certain() {
    // Six successes first: the four probes left cannot make five failures.
    let mut b = Pair::tripped();
    b.calls(&[S; 6]);
    assert_eq!(b.phase(), Phase::Closed);
    // Five failures first: 50 % whatever the five left would say.
    let mut b = Pair::tripped();
    b.calls(&[F; 5]);
    assert_eq!(b.phase(), Phase::Open);
    assert_eq!(b.counters().probes, 5);
}

#[test]
fn neutral_probes_count_nothing() {
    let mut b = Pair::tripped();
    b.calls(&[F, N, N, S, N, N, N, N, N, N, N, N, N]);
    assert_eq!((b.phase(), b.counts()), (Phase::HalfOpen, (1, 1)));
    assert_eq!(b.counters().probe_neutrals, 11);
    b.calls(&[F, F, F, S, S, S, S]);
    assert_eq!((b.phase(), b.counts()), (Phase::HalfOpen, (4, 5)));
    b.call(S);
    assert_eq!(b.phase(), Phase::Closed);
    assert_eq!(b.counters().probes, 21);
}

#[test]
fn one_probe_at_a_time_and_a_lapsed_lease_reopens() {
    let mut b = Pair::tripped();
    b.calls(&[F, S, F]);
    let now = b.now();
    let probe = b.single.try_acquire(now).unwrap();
    let shared_probe = b.shared.try_acquire(&b.clock).unwrap();
    assert!(probe.is_probe() && shared_probe.is_probe());
    // The one probe out refuses every other call.
    assert_eq!(b.single.try_acquire(now).unwrap_err().reason, RefusalReason::Probing);
    assert_eq!(
        b.shared.try_acquire(&b.clock).unwrap_err().reason,
        RefusalReason::Probing
    );
    // Unanswered for the whole lease: re-opened at its end, the counts gone.
    std::mem::forget(shared_probe); // (its guard would report a failed probe)
    b.clock.set(s(40));
    b.same();
    assert_eq!(
        b.state(),
        State::Open {
            remaining: Duration::from_secs(30),
            forced: false
        }
    );
    b.clock.set(s(70));
    b.call(S);
    assert_eq!((b.phase(), b.counts()), (Phase::HalfOpen, (0, 1)));
    let c = b.counters();
    assert_eq!((c.lease_expiries, c.transitions.half_open_to_open), (1, 1));
}

#[test]
fn a_trip_verdict_reopens_at_once() {
    let mut b = Pair::tripped();
    b.calls(&[S, S, S, S, S]);
    b.call(Outcome::TRIP);
    assert_eq!(b.phase(), Phase::Open);
}

#[test]
fn a_snapshot_keeps_the_counts_across_a_restore() {
    let mut b = Pair::tripped();
    b.calls(&[F, F, S, F]);
    let now = b.now();
    let bytes = b.single.snapshot(now).to_bytes();
    let snap = Snapshot::from_bytes(&bytes).unwrap();
    assert_eq!((snap.phase, snap.strikes, snap.streak), (Phase::HalfOpen, 3, 1));
    // Restored into fresh breakers after a reboot: they carry on where it left off.
    let mut r = Pair {
        single: Breaker::new(POLICY),
        shared: SharedBreaker::new(&POLICY),
        clock: ManualClock::new(s(5)),
    };
    r.single.restore(&snap, s(5));
    r.shared.restore(&snap, s(5));
    r.same();
    assert_eq!((r.phase(), r.counts()), (Phase::HalfOpen, (3, 1)));
    r.call(F);
    assert_eq!(r.counts(), (4, 1));
    r.call(F);
    assert_eq!(r.phase(), Phase::Open);
    // Counts the policy cannot hold are clamped below its verdicts: 4 failures, 5 successes.
    let too_many = Snapshot {
        strikes: 9,
        streak: 9,
        ..snap
    };
    r.single.restore(&too_many, s(5));
    r.shared.restore(&too_many, s(5));
    r.same();
    assert_eq!((r.phase(), r.counts()), (Phase::HalfOpen, (4, 5)));
}

#[test]
fn a_dropped_shared_probe_permit_counts_as_a_failure() {
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    b.try_acquire(&clock).unwrap().failure(breaker_core::Verdict::Strike);
    clock.set(s(30));
    for dropped in 1..=4u8 {
        drop(b.try_acquire(&clock).unwrap()); // a cancelled future, a panicking caller
        assert_eq!(b.phase(s(30)), Phase::HalfOpen);
        assert_eq!(b.snapshot(s(30)).strikes, dropped);
    }
    drop(b.try_acquire(&clock).unwrap());
    assert_eq!(b.phase(s(30)), Phase::Open, "the 5th failure of 10 re-opens");
    assert_eq!(b.counters().probe_failures, 5);
}

static ATTRIBUTE_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[derive(Debug, PartialEq)]
enum Down {
    Timeout,
    Refused,
}
impl breaker_core::Classify for Down {}
impl From<breaker_core::Refused> for Down {
    fn from(_: breaker_core::Refused) -> Self {
        Down::Refused
    }
}

/// 4 probes at 50 %: 2 failures re-open, 3 successes close.
#[breaker_core::circuit_breaker(trip = 1, cooldown = "1s", half_open_calls = 4, half_open_rate = 50, clock = ATTRIBUTE_CLOCK, name = "half_open_rate::fetch")]
fn fetch(ok: bool) -> Result<(), Down> {
    if ok {
        Ok(())
    } else {
        Err(Down::Timeout)
    }
}

#[test]
fn the_attribute_s_breaker_judges_half_open_by_the_rate() {
    let entry = breaker_core::registry::get("half_open_rate::fetch").unwrap();
    assert_eq!(entry.policy().half_open_rate(), Some((4, 50)));
    assert_eq!(fetch(false), Err(Down::Timeout));
    assert_eq!(fetch(true), Err(Down::Refused));
    ATTRIBUTE_CLOCK.advance(Duration::from_secs(1));
    // A failure, then two successes: half-open still (1 of 4 so far, 2 probes to come).
    assert_eq!(fetch(false), Err(Down::Timeout));
    assert_eq!(fetch(true), Ok(()));
    assert_eq!(fetch(true), Ok(()));
    assert_eq!(entry.state().phase(), Phase::HalfOpen);
    // The third success: the one probe left cannot make 2 failures. Closed.
    assert_eq!(fetch(true), Ok(()));
    assert_eq!(entry.state().phase(), Phase::Closed);
}
