//! Squad's predictive quota breaker through the one state machine: a `QuotaGuard` on either
//! storage, each rule of the spec's section, one test each.

use std::cell::RefCell;

use breaker_core::{
    Breaker, CallError, Classify, Duration, Instant, Light, ManualClock, Observer, Phase, Policy, Priority, Quota,
    QuotaGuard, QuotaObserver, QuotaPolicy, Reason, RefusalReason, Refused, SharedBreaker, State, Transition, Verdict,
};

fn s(secs: u32) -> Instant {
    Instant::from_millis(secs * 1000)
}

/// Squad's breaker: 2 m doubling to a 30 m cap, 2 successful rounds to close.
fn squad() -> Policy {
    Policy::new(3, Duration::from_mins(2))
        .with_probes_to_close(2)
        .with_backoff(2, Duration::from_mins(30))
}

static SQUAD: Policy = Policy::new(3, Duration::from_mins(2))
    .with_probes_to_close(2)
    .with_backoff(2, Duration::from_mins(30));

/// What an observer heard, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heard {
    Quota(Quota),
    Went(Phase, Reason, Duration),
}

#[derive(Default)]
struct Ear(RefCell<Vec<Heard>>);

impl Observer for Ear {
    fn on_transition(&self, t: &Transition) {
        self.0.borrow_mut().push(Heard::Went(t.to, t.why, t.cooldown));
    }
}

impl QuotaObserver for Ear {
    fn on_quota(&self, quota: &Quota) {
        self.0.borrow_mut().push(Heard::Quota(*quota));
    }
}

impl Ear {
    fn transitions(&self) -> Vec<(Phase, Reason, Duration)> {
        self.0
            .borrow()
            .iter()
            .filter_map(|h| match *h {
                Heard::Went(p, r, d) => Some((p, r, d)),
                Heard::Quota(_) => None,
            })
            .collect()
    }
}

#[derive(Debug, PartialEq)]
enum GitHubError {
    TooManyRequests,
    Timeout,
}

impl Classify for GitHubError {
    fn verdict(&self) -> Verdict {
        match self {
            GitHubError::TooManyRequests => Verdict::Trip,
            GitHubError::Timeout => Verdict::Strike,
        }
    }
}

type Reply = (Result<(), GitHubError>, Option<Quota>);

fn ok(remaining: u32) -> Reply {
    (Ok(()), Some(Quota::new(remaining, 5_000)))
}

fn too_many() -> Reply {
    (Err(GitHubError::TooManyRequests), Some(Quota::new(0, 5_000)))
}

fn guard() -> QuotaGuard<Breaker<Ear>> {
    QuotaGuard::new(Breaker::with_observer(squad(), Ear::default()), QuotaPolicy::new())
}

/// A guard whose breaker was opened by a prediction at `s(0)`.
fn opened_by_prediction() -> QuotaGuard<Breaker<Ear>> {
    let mut g = guard();
    g.observe(Quota::new(4_000, 5_000), s(0));
    g.observe(Quota::new(1_000, 5_000), s(10)); // 300/s: 1 000 left last 3.3 s
    assert_eq!(g.state(s(10)).phase(), Phase::Open);
    g
}

fn call(
    g: &mut QuotaGuard<Breaker<Ear>>,
    at: Instant,
    priority: Priority,
    reply: Reply,
) -> Result<(), CallError<GitHubError>> {
    let clock = ManualClock::new(at);
    g.call(&clock, priority, || reply)
}

#[test]
fn a_prediction_below_the_warning_opens_with_its_own_reason_and_the_trip_cooldown() {
    let g = opened_by_prediction();
    assert_eq!(
        g.breaker().observer().transitions(),
        [(Phase::Open, Reason::Predicted, Duration::from_mins(2))]
    );
    assert_eq!(
        g.state(s(10)),
        State::Open {
            remaining: Duration::from_mins(2),
            forced: false
        }
    );
    let c = g.breaker().counters();
    assert_eq!((c.trips, c.failures, c.calls), (1, 0, 0), "a trip, with no call failed");
}

#[test]
fn a_prediction_above_the_warning_stays_closed() {
    let mut g = guard();
    g.observe(Quota::new(4_900, 5_000), s(0));
    let reading = g.observe(Quota::new(4_100, 5_000), s(30)); // the seed's 153 s
    assert!(!reading.opens());
    assert_eq!(g.state(s(30)), State::Closed { strikes: 0 });
}

#[test]
fn red_opens_the_breaker_without_a_prediction() {
    let mut g = guard();
    let reading = g.observe(Quota::new(250, 5_000), s(0)); // 5 % exactly: red
    assert_eq!((reading.light, reading.forecast), (Some(Light::Red), None));
    assert_eq!(g.state(s(0)).phase(), Phase::Open);
    assert_eq!(
        g.breaker().observer().transitions(),
        [(Phase::Open, Reason::QuotaRed, Duration::from_mins(2))]
    );
}

#[test]
fn the_cooldown_ends_in_one_probe_and_two_successful_rounds_close_it() {
    let mut g = opened_by_prediction();
    assert!(matches!(
        call(&mut g, s(129), Priority::High, ok(5_000)),
        Err(CallError::Refused(Refused {
            reason: RefusalReason::Open,
            ..
        }))
    ));
    call(&mut g, s(130), Priority::Normal, ok(4_990)).unwrap();
    assert_eq!(
        g.state(s(130)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
    call(&mut g, s(430), Priority::Normal, ok(4_980)).unwrap();
    assert_eq!(g.state(s(430)), State::Closed { strikes: 0 });
    assert_eq!(
        g.breaker().observer().transitions().last(),
        Some(&(Phase::Closed, Reason::Recovered, Duration::ZERO))
    );
}

#[test]
fn a_429_during_the_probe_reopens_with_the_next_cooldown() {
    let mut g = opened_by_prediction();
    let mut at = 10;
    for cooldown in [4, 8, 16, 30, 30] {
        let State::Open { remaining, .. } = g.state(s(at)) else {
            panic!("open")
        };
        at += remaining.as_millis() / 1000;
        assert_eq!(
            call(&mut g, s(at), Priority::Normal, too_many()),
            Err(CallError::Inner(GitHubError::TooManyRequests))
        );
        assert_eq!(
            g.state(s(at)),
            State::Open {
                remaining: Duration::from_mins(cooldown),
                forced: false
            },
            "2 m doubling, capped at 30 m"
        );
        assert_eq!(
            g.breaker().observer().transitions().last(),
            Some(&(Phase::Open, Reason::ProbeFailed, Duration::from_mins(cooldown)))
        );
    }
}

#[test]
fn a_probe_that_works_but_leaves_the_quota_alarmed_reopens_with_the_next_cooldown() {
    let mut g = opened_by_prediction();
    // The quota window reset: a fresh window, and this probe's success counts...
    call(&mut g, s(130), Priority::Normal, ok(5_000)).unwrap();
    assert_eq!(
        g.state(s(130)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
    // ...but the next round burns it again: its quota alarms, so it is no successful round.
    assert_eq!(call(&mut g, s(140), Priority::Normal, ok(2_000)), Ok(()));
    assert_eq!(
        g.state(s(140)),
        State::Open {
            remaining: Duration::from_mins(4),
            forced: false
        }
    );
    assert_eq!(
        g.breaker().observer().transitions().last(),
        Some(&(Phase::Open, Reason::Predicted, Duration::from_mins(4)))
    );
}

#[test]
fn a_trip_verdict_while_closed_opens_and_its_quota_counts_too() {
    let mut g = guard();
    assert_eq!(
        call(&mut g, s(0), Priority::High, too_many()),
        Err(CallError::Inner(GitHubError::TooManyRequests))
    );
    // The 429 is the call's own testimony: it is recorded first.
    assert_eq!(
        g.breaker().observer().transitions(),
        [(Phase::Open, Reason::TripVerdict, Duration::from_mins(2))]
    );
    assert_eq!(g.gauge().light(), Some(Light::Red));
}

#[test]
fn amber_refuses_normal_priority_with_quota_low_while_closed() {
    let mut g = guard();
    g.observe(Quota::new(900, 5_000), s(0)); // 18 %
    assert_eq!(g.gauge().light(), Some(Light::Amber));
    let refused = call(&mut g, s(1), Priority::Normal, ok(890));
    assert_eq!(
        refused,
        Err(CallError::Refused(Refused {
            reason: RefusalReason::QuotaLow,
            retry_in: None
        }))
    );
    let Err(CallError::Refused(r)) = refused else {
        unreachable!()
    };
    assert_eq!(
        r.to_string(),
        "call held back: quota low, circuit breaker closed",
        "held back, not refused by an open breaker"
    );
    assert_eq!(
        format!("{r:#}"),
        "call held back: quota low, circuit breaker closed (high-priority calls only)"
    );
    assert_eq!(call(&mut g, s(2), Priority::High, ok(890)), Ok(()));
    assert_eq!(g.state(s(2)), State::Closed { strikes: 0 });
    let c = g.breaker().counters();
    assert_eq!((c.calls, c.skips), (1, 0), "refused by the quota, not by the breaker");
}

#[test]
fn green_admits_every_priority() {
    let mut g = guard();
    g.observe(Quota::new(1_001, 5_000), s(0)); // 20.02 %
    assert_eq!(call(&mut g, s(1), Priority::Normal, ok(1_001)), Ok(()));
}

#[test]
fn in_half_open_the_probe_goes_through_amber_whatever_its_priority() {
    let mut g = guard();
    g.observe(Quota::new(3_000, 5_000), s(0));
    g.observe(Quota::new(900, 5_000), s(10)); // amber, and 210/s: opens
    assert_eq!(g.gauge().light(), Some(Light::Amber));
    assert_eq!(call(&mut g, s(130), Priority::Normal, ok(890)), Ok(()));
}

#[test]
fn the_observer_hears_the_quota_before_the_opening_it_causes() {
    let g = opened_by_prediction();
    assert_eq!(
        *g.breaker().observer().0.borrow(),
        [
            Heard::Quota(Quota::new(4_000, 5_000)),
            Heard::Quota(Quota::new(1_000, 5_000)),
            Heard::Went(Phase::Open, Reason::Predicted, Duration::from_mins(2)),
        ]
    );
}

#[test]
fn a_response_without_a_quota_steers_nothing() {
    let mut g = guard();
    g.observe(Quota::new(4_000, 5_000), s(0));
    let clock = ManualClock::new(s(1));
    assert_eq!(
        g.call(&clock, Priority::Normal, || -> Reply {
            (Err(GitHubError::Timeout), None)
        }),
        Err(CallError::Inner(GitHubError::Timeout))
    );
    assert_eq!(g.gauge().len(), 1);
    assert_eq!(g.state(s(1)), State::Closed { strikes: 1 });
}

#[test]
fn a_forced_open_breaker_stays_forced_whatever_the_quota() {
    let mut g = guard();
    g.breaker_mut().force_open(s(0));
    g.observe(Quota::new(10, 5_000), s(1));
    assert_eq!(
        g.state(s(1)),
        State::Open {
            remaining: Duration::ZERO,
            forced: true
        }
    );
}

#[test]
fn while_open_an_alarmed_sample_restarts_the_wait() {
    let mut g = opened_by_prediction();
    // A free rate-limit query a minute later: still red. The wait starts again.
    g.observe(Quota::new(100, 5_000), s(70));
    assert_eq!(
        g.state(s(70)),
        State::Open {
            remaining: Duration::from_mins(2),
            forced: false
        }
    );
    // The window reset: green, no alarm, the wait runs out as it stands.
    g.observe(Quota::new(5_000, 5_000), s(100));
    assert_eq!(
        g.state(s(100)),
        State::Open {
            remaining: Duration::from_secs(90),
            forced: false
        }
    );
}

#[test]
fn a_guard_on_a_static_shared_breaker_behaves_the_same_and_stays_lock_free() {
    static GITHUB: SharedBreaker = SharedBreaker::new(&SQUAD);
    let clock = ManualClock::new(s(0));
    let mut g = QuotaGuard::<_>::new(&GITHUB, QuotaPolicy::new());
    g.call(&clock, Priority::Normal, || ok(4_000)).unwrap();
    clock.set(s(10));
    g.call(&clock, Priority::Normal, || ok(1_000)).unwrap();
    assert_eq!(GITHUB.phase(s(10)), Phase::Open);
    // Any other thread reads the breaker while the guard's owner holds the gauge.
    let seen = std::thread::spawn(|| GITHUB.state(s(10))).join().unwrap();
    assert_eq!(
        seen,
        State::Open {
            remaining: Duration::from_mins(2),
            forced: false
        }
    );
    clock.set(s(130));
    assert!(g.call(&clock, Priority::Normal, || ok(4_990)).is_ok());
    clock.set(s(430));
    assert!(g.call(&clock, Priority::Normal, || ok(4_980)).is_ok());
    assert_eq!(GITHUB.phase(s(430)), Phase::Closed);
}

#[test]
fn a_probe_that_panics_counts_as_failed_on_a_shared_breaker() {
    static FLAKY: SharedBreaker = SharedBreaker::new(&SQUAD);
    let mut g = QuotaGuard::<_>::new(&FLAKY, QuotaPolicy::new());
    g.observe(Quota::new(100, 5_000), s(0)); // red: open
    let clock = ManualClock::new(s(120));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = g.call(&clock, Priority::Normal, || -> Reply {
            panic!("the caller died mid-probe")
        });
    }));
    assert!(panicked.is_err());
    assert_eq!(
        FLAKY.state(s(120)),
        State::Open {
            remaining: Duration::from_mins(4),
            forced: false
        },
        "the dropped probe permit re-opened it, backoff advanced"
    );
}

// ---- the quota's reset time ----------------------------------------------------------------

/// A 10 s cooldown and a rate-limit window that resets 60 s after the quota ran out.
fn short() -> Policy {
    Policy::new(3, Duration::from_secs(10))
}

#[test]
fn a_red_quota_with_a_known_reset_keeps_the_breaker_open_until_the_reset_and_spends_no_probe_before_it() {
    let mut g = QuotaGuard::<_>::new(Breaker::new(short()), QuotaPolicy::new());
    let spent = Quota::new(0, 5_000).with_reset_in(Duration::from_secs(60));
    g.observe(spent, s(0));
    for t in [0, 10, 20, 59] {
        assert_eq!(
            g.state(s(t)),
            State::Open {
                remaining: Duration::from_secs(60 - t),
                forced: false
            },
            "at {t}s"
        );
    }
    // The first call after the reset is the probe, and the one call made since the trip.
    let mut calls = 0;
    for t in [10, 20, 30, 59, 60] {
        let _ = g.call(&ManualClock::new(s(t)), Priority::High, || {
            calls += 1;
            ok(4_999)
        });
    }
    assert_eq!(calls, 1);
    assert_eq!(g.breaker().counters().probes, 1);
    assert_eq!(g.breaker().counters().skips, 4);
}

#[test]
fn without_a_reset_the_cooldown_decides_and_a_reset_sooner_than_the_cooldown_does_not_shorten_it() {
    let mut g = QuotaGuard::<_>::new(Breaker::new(short()), QuotaPolicy::new());
    g.observe(Quota::new(0, 5_000), s(0));
    assert!(g.breaker().would_allow(s(10)), "the 10 s cooldown alone");

    let mut g = QuotaGuard::<_>::new(Breaker::new(short()), QuotaPolicy::new());
    g.observe(Quota::new(0, 5_000).with_reset_in(Duration::from_secs(3)), s(0));
    assert_eq!(
        g.state(s(0)),
        State::Open {
            remaining: Duration::from_secs(10),
            forced: false
        }
    );
}

#[test]
fn a_red_reading_while_open_restarts_the_wait_until_its_reset_on_a_shared_breaker_too() {
    static SHORT: Policy = Policy::new(3, Duration::from_secs(10));
    static B: SharedBreaker = SharedBreaker::new(&SHORT);
    let mut g = QuotaGuard::<_>::new(&B, QuotaPolicy::new());
    g.observe(Quota::new(0, 5_000).with_reset_in(Duration::from_secs(60)), s(0));
    assert_eq!(B.phase(s(59)), Phase::Open);
    // At 30 s a response says the window now resets 90 s later.
    g.observe(Quota::new(0, 5_000).with_reset_in(Duration::from_secs(90)), s(30));
    assert_eq!(
        B.state(s(30)),
        State::Open {
            remaining: Duration::from_secs(90),
            forced: false
        }
    );
    // A later, sooner reset never shortens the wait.
    g.observe(Quota::new(0, 5_000).with_reset_in(Duration::from_secs(5)), s(40));
    assert_eq!(
        B.state(s(40)),
        State::Open {
            remaining: Duration::from_secs(80),
            forced: false
        }
    );
    assert!(B.would_allow(s(120)));
}

#[test]
fn a_reset_read_as_unix_seconds_is_the_wait_from_now_cut_to_the_longest_duration() {
    let now = 1_755_267_940;
    let q = Quota::new(0, 5_000);
    assert_eq!(
        q.with_reset_at_unix(now + 60, now).resets_in,
        Some(Duration::from_secs(60))
    );
    assert_eq!(q.with_reset_at_unix(now - 1, now).resets_in, Some(Duration::ZERO));
    // The longest wait a `Duration` holds in whole seconds (about 12.4 days), not its last
    // milliseconds: a reset further away is cut to it.
    let secs = u64::from(Duration::MAX.as_millis() / 1000);
    let longest = Some(Duration::from_secs(secs as u32));
    for ahead in [secs, secs + 1, 5_000_000, u64::from(u32::MAX) * 10] {
        assert_eq!(q.with_reset_at_unix(now + ahead, now).resets_in, longest, "{ahead}");
    }
    assert_eq!(
        q.with_reset_at_unix(now + secs - 1, now).resets_in,
        Some(Duration::from_secs(secs as u32 - 1))
    );
}
