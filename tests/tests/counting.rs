//! `Policy::counting_calls`: a shared breaker that counts every call and outcome. Each
//! way into a breaker (its own `call`, `call_mapped`, a permit, `CircuitBreaker`, a window,
//! the attribute) counts each admitted call once and each outcome once, exactly as the
//! single-owner `Breaker` counts them; a breaker that does not count reports the three
//! counters as zero however its calls went; a live policy switches counting at run time.

use breaker_core::{
    circuit_breaker, registry, Breaker, CircuitBreaker, Clock, Counters, Duration, Instant, LivePolicy, ManualClock,
    Outcome, Phase, Policy, Refused, SharedBreaker, Verdict, WindowSize, Windowed,
};

static COUNTING: Policy = Policy::new(2, Duration::from_secs(10)).counting_calls();

#[derive(Debug, PartialEq)]
enum Error {
    Down,
    Busy,
    Refused,
}

fn verdict(e: &Error) -> Verdict {
    match e {
        Error::Busy => Verdict::Neutral,
        _ => Verdict::Strike,
    }
}

/// One script: successes, a neutral outcome, strikes that trip, refusals, a probe that
/// closes, as (instant in ms, result).
const SCRIPT: [(u32, Result<u32, Error>); 9] = [
    (0, Ok(1)),
    (0, Err(Error::Busy)),
    (0, Ok(2)),
    (0, Err(Error::Down)),
    (0, Err(Error::Down)), // trips (trip = 2)
    (1_000, Ok(3)),        // refused
    (2_000, Ok(4)),        // refused
    (10_000, Ok(5)),       // the probe: closes
    (10_000, Ok(6)),
];

/// What the script counts: 7 admitted (2 refused), 4 successes (the probe's among them),
/// 2 failures, 1 neutral, 2 skips, 1 trip, 1 probe.
fn expected() -> (u32, u32, u32, u32, u32, u32, u32) {
    (7, 4, 2, 1, 2, 1, 1)
}

fn tally(c: &Counters) -> (u32, u32, u32, u32, u32, u32, u32) {
    (c.calls, c.successes, c.failures, c.neutrals, c.skips, c.trips, c.probes)
}

/// Runs the script through `call`, a closure making one call at the clock's instant.
fn run(clock: &ManualClock, mut call: impl FnMut(Result<u32, Error>)) {
    for (at, result) in SCRIPT {
        clock.set(Instant::from_millis(at));
        call(result);
    }
}

#[test]
fn every_way_into_a_counting_shared_breaker_counts_as_the_single_owner_breaker_does() {
    // The single-owner breaker, the reference: it counts everything whatever the policy.
    let clock = ManualClock::new(Instant::ZERO);
    let mut single = Breaker::new(COUNTING);
    run(&clock, |r| {
        let _ = CircuitBreaker::call_classified(&mut single, &clock, || r, verdict);
    });
    assert_eq!(tally(&single.counters()), expected());

    // `SharedBreaker::call_classified`.
    let clock = ManualClock::new(Instant::ZERO);
    let shared = SharedBreaker::with_policy(COUNTING);
    run(&clock, |r| {
        let _ = shared.call_classified(&clock, || r, verdict);
    });
    assert_eq!(tally(&shared.counters()), expected());
    assert_eq!(shared.counters(), single.counters());

    // `call_mapped` (what the attribute expands to).
    let clock = ManualClock::new(Instant::ZERO);
    let mapped = SharedBreaker::with_policy(COUNTING);
    run(&clock, |r| {
        let _ = mapped.call_mapped(&clock, || r, verdict, |_: Refused| Error::Refused);
    });
    assert_eq!(mapped.counters(), single.counters());

    // A permit, reported by hand.
    let clock = ManualClock::new(Instant::ZERO);
    let permits = SharedBreaker::with_policy(COUNTING);
    run(&clock, |r| {
        if let Ok(permit) = permits.try_acquire(&clock) {
            permit.record(match &r {
                Ok(_) => Outcome::Success,
                Err(e) => Outcome::Error(verdict(e)),
            });
        }
    });
    assert_eq!(permits.counters(), single.counters());
    let reference = single.counters();
    // A permit dropped unanswered counts as neutral, as the single-owner breaker's does:
    // every call admitted has its one outcome.
    drop(permits.try_acquire(&clock).unwrap());
    drop(CircuitBreaker::attempt(&mut single, &clock).unwrap());
    assert_eq!(permits.counters(), single.counters());
    let c = permits.counters();
    assert_eq!((c.calls, c.neutrals), (8, 2));
    assert_eq!(c.calls, c.successes + c.failures + c.neutrals);

    // Through `CircuitBreaker`, as every composite drives a breaker.
    let clock = ManualClock::new(Instant::ZERO);
    let traited = SharedBreaker::with_policy(COUNTING);
    run(&clock, |r| {
        let _ = CircuitBreaker::call_classified(&mut &traited, &clock, || r, verdict);
    });
    assert_eq!(traited.counters(), reference);
    assert!(CircuitBreaker::counts_calls(&&traited));
}

#[test]
fn a_breaker_that_does_not_count_reports_no_calls_successes_or_neutrals() {
    let clock = ManualClock::new(Instant::ZERO);
    let plain = SharedBreaker::with_policy(Policy::new(2, Duration::from_secs(10)));
    // Calls on the slow path too: a success that finds a strike pending, a probe.
    run(&clock, |r| {
        let _ = plain.call_classified(&clock, || r, verdict);
    });
    let c = plain.counters();
    assert_eq!((c.calls, c.successes, c.neutrals), (0, 0, 0));
    assert_eq!((c.failures, c.skips, c.trips, c.probes), (2, 2, 1, 1));
    assert!(!CircuitBreaker::counts_calls(&&plain));
}

#[test]
fn a_windowed_counting_breaker_counts_its_calls_and_still_times_them() {
    // Slow calls (above 100 ms) at half the window trip it: the timing is not lost to
    // the counting path.
    let policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(10))
        .with_min_calls(4)
        .with_slow_calls(Duration::from_millis(100), 50)
        .counting_calls();
    let breaker = SharedBreaker::with_policy_and_observer(policy, Windowed::calls(()));
    let clock = ManualClock::new(Instant::ZERO);
    for slow in [false, true, false, true] {
        let r = breaker.call(&clock, || {
            if slow {
                clock.advance(Duration::from_millis(150));
            }
            Ok::<_, std::io::Error>(())
        });
        assert!(r.is_ok());
    }
    assert_eq!(breaker.phase(clock.now()), Phase::Open);
    let c = breaker.counters();
    assert_eq!((c.calls, c.successes, c.failures, c.trips), (4, 4, 0, 1));
    assert!(breaker.call(&clock, || Ok::<_, std::io::Error>(())).is_err());
    assert_eq!(breaker.counters().skips, 1);
}

#[test]
fn a_live_policy_switches_counting_on_and_off_at_run_time() {
    let clock = ManualClock::new(Instant::ZERO);
    let plain = Policy::new(3, Duration::from_secs(10));
    let breaker = SharedBreaker::with_policy(LivePolicy::new(plain));
    let ok = || Ok::<_, std::io::Error>(());
    breaker.call(&clock, ok).unwrap();
    breaker.reload(plain.counting_calls()).unwrap();
    breaker.call(&clock, ok).unwrap();
    breaker.call(&clock, ok).unwrap();
    assert_eq!((breaker.counters().calls, breaker.counters().successes), (2, 2));
    breaker.reload(plain).unwrap();
    breaker.call(&clock, ok).unwrap();
    assert_eq!((breaker.counters().calls, breaker.counters().successes), (0, 0));
    // Back on: what was counted is kept; the uncounted call is not in it.
    breaker.reload(plain.counting_calls()).unwrap();
    breaker.call(&clock, ok).unwrap();
    assert_eq!((breaker.counters().calls, breaker.counters().successes), (3, 3));
    assert_eq!(breaker.phase(clock.now()), Phase::Closed);
}

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[circuit_breaker(trip = 2, cooldown = "10s", clock = CLOCK, name = "counting/attribute", count_calls)]
fn send(ok: bool) -> Result<(), std::io::Error> {
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::other("down"))
    }
}

#[test]
fn an_annotated_function_with_count_calls_counts_every_call_in_the_registry() {
    for ok in [true, true, false, true] {
        let _ = send(ok);
    }
    let entry = registry::get("counting/attribute").unwrap();
    assert!(entry.policy().counts_calls());
    let c = entry.counters();
    assert_eq!((c.calls, c.successes, c.failures, c.neutrals), (4, 3, 1, 0));
    // Read long after (past any probe lease), the counting breaker is closed and allows.
    CLOCK.advance(Duration::from_mins(60));
    assert_eq!(entry.state().phase(), Phase::Closed);
    assert!(entry.would_allow());
}

#[test]
fn many_threads_on_one_counting_breaker_count_each_call_and_outcome_once() {
    static POLICY: Policy = Policy::new(255, Duration::from_secs(10)).counting_calls();
    static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
    const THREADS: u32 = 8;
    const CALLS: u32 = 2_000;
    let clock = ManualClock::new(Instant::ZERO);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let clock = &clock;
            s.spawn(move || {
                for i in 0..CALLS {
                    // One call in ten neutral; no strikes, so none is ever refused.
                    let r = if (i + t) % 10 == 0 { Err(Error::Busy) } else { Ok(i) };
                    let _ = BREAKER.call_classified(clock, || r, verdict);
                }
            });
        }
    });
    let c = BREAKER.counters();
    let all = THREADS * CALLS;
    assert_eq!(
        (c.calls, c.successes, c.neutrals, c.failures, c.skips),
        (all, all * 9 / 10, all / 10, 0, 0)
    );
    assert_eq!(BREAKER.phase(clock.now()), Phase::Closed);
}

/// The single-owner breaker counts every call and outcome, those of its inline closed path
/// included, and every change of phase by its kind; windowed, it shows its window.
#[test]
fn the_single_owner_breaker_counts_each_call_and_each_change_by_kind() {
    let clock = ManualClock::new(Instant::ZERO);
    let ok = || Ok::<u32, std::io::Error>(1);
    let down = || Err::<u32, _>(std::io::Error::other("down"));
    let mut b = Breaker::new(Policy::new(2, Duration::from_secs(10)));
    for _ in 0..3 {
        b.call(&clock, ok).unwrap();
    }
    let c = b.counters();
    assert_eq!((c.calls, c.successes, c.failures), (3, 3, 0));
    // Closed to open, open to half-open, half-open to open, to half-open again, to closed;
    // then forced open (closed to open again) and reset (open to closed).
    let _ = b.call(&clock, down);
    let _ = b.call(&clock, down);
    clock.advance(Duration::from_secs(10));
    let _ = b.call(&clock, down);
    clock.advance(Duration::from_secs(10));
    b.call(&clock, ok).unwrap();
    b.force_open(clock.now());
    b.reset(clock.now());
    let t = b.counters().transitions;
    let changes = [
        (Phase::Closed, Phase::Open, 2),
        (Phase::Open, Phase::HalfOpen, 2),
        (Phase::HalfOpen, Phase::Open, 1),
        (Phase::HalfOpen, Phase::Closed, 1),
        (Phase::Open, Phase::Closed, 1),
        (Phase::Closed, Phase::HalfOpen, 0),
    ];
    for (from, to, n) in changes {
        assert_eq!(t.get(from, to), n, "{from:?} to {to:?}");
    }
    let c = b.counters();
    assert_eq!((c.calls, c.successes, c.failures), (7, 4, 3));

    let rule = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(10));
    let mut windowed = Breaker::windowed(rule, Windowed::calls(()));
    assert!(Breaker::new(Policy::new(2, Duration::from_secs(10)))
        .window_stats(clock.now())
        .is_none());
    windowed.call(&clock, ok).unwrap();
    let _ = windowed.call(&clock, down);
    let stats = windowed
        .window_stats(clock.now())
        .expect("a windowed breaker has a window");
    assert_eq!((stats.calls, stats.failures, stats.slow), (2, 1, 0));
}
