//! Slow calls caught while still out (`breaker_core::InFlight`): a hung upstream opens a
//! windowed breaker at the gate, at the moment the slow-call rate is reached, while its
//! calls are still out; each call is one sample, taken once; a slot shortage, a probe and
//! a slot of an older generation, each with exact figures.

use std::sync::Mutex;

use breaker_core::{
    CallWindow, Clock, Counters, Duration, InFlight, Instant, ManualClock, Observer, Outcome, Phase, Policy, Reason,
    RefusalReason, SharedBreaker, Transition, Verdict, WindowStats, Windowed,
};

/// The transitions heard, as (to, why, at in ms).
#[derive(Default)]
struct Heard(Mutex<Vec<(Phase, Reason, u32)>>);

impl Observer for Heard {
    fn on_transition(&self, t: &Transition) {
        self.0.lock().unwrap().push((t.to, t.why, t.at.as_millis()));
    }
}

impl Heard {
    fn all(&self) -> Vec<(Phase, Reason, u32)> {
        self.0.lock().unwrap().clone()
    }
}

type Watched<const K: usize> = SharedBreaker<Windowed<InFlight<CallWindow, K>, Heard>>;

/// resilience4j's shape: 50 % over the last 10 calls, judged from 5 on; a call longer than
/// 1 s is slow, and 50 % of slow calls trip too; 30 s open; every call counted.
fn policy() -> &'static Policy {
    static POLICY: Policy = Policy::failure_rate(50, breaker_core::WindowSize::Calls(10), Duration::from_secs(30))
        .with_min_calls(5)
        .with_slow_calls(Duration::from_secs(1), 50)
        .counting_calls();
    &POLICY
}

fn breaker<const K: usize>() -> Watched<K> {
    SharedBreaker::windowed(policy(), Windowed::in_flight(CallWindow::new(), Heard::default()))
}

fn ms(n: u32) -> Instant {
    Instant::from_millis(n)
}

fn stats<const K: usize>(b: &Watched<K>, clock: &ManualClock) -> (u32, u32, u32) {
    let WindowStats { calls, failures, slow } = b.window_stats(clock.now()).unwrap();
    (calls, failures, slow)
}

/// How many slots are held by calls out.
fn out<const K: usize>(b: &Watched<K>) -> usize {
    b.observer().window().out()
}

/// A gate check that makes no call: a permit taken and dropped unanswered (neutral: not a
/// sample, its slot freed). Whether the gate let it through.
fn gate<const K: usize>(b: &Watched<K>, clock: &ManualClock) -> Result<(), RefusalReason> {
    b.try_acquire(clock).map(drop).map_err(|r| r.reason)
}

/// Five quick successes: the window holds 5 clean samples.
fn five_quick<const K: usize>(b: &Watched<K>, clock: &ManualClock) {
    for _ in 0..5 {
        assert_eq!(b.call(clock, || Ok::<_, std::convert::Infallible>(())), Ok(()));
    }
    assert_eq!(stats(b, clock), (5, 0, 0));
}

#[test]
fn a_hung_upstream_opens_the_breaker_while_its_calls_are_out() {
    let b = breaker::<8>();
    let clock = ManualClock::new(ms(0));
    five_quick(&b, &clock);
    // Six calls hang, let through 100 ms apart, and are never answered in time.
    let mut hung = Vec::new();
    for i in 0..6 {
        clock.set(ms(i * 100));
        hung.push((b.try_acquire(&clock).unwrap(), ms(i * 100)));
    }
    assert_eq!(out(&b), 6);
    // Exactly 1 s out is not slow (strictly longer is): nothing is counted yet.
    clock.set(ms(1_000));
    assert_eq!(gate(&b, &clock), Ok(()));
    assert_eq!(stats(&b, &clock), (5, 0, 0));
    // Each gate check counts the calls out longer than 1 s, one more every 100 ms: 1/6,
    // 2/7, 3/8, 4/9 slow, below 50 %.
    for (k, t) in [(1, 1_001), (2, 1_101), (3, 1_201), (4, 1_301)] {
        clock.set(ms(t));
        assert_eq!(gate(&b, &clock), Ok(()), "at {t} ms");
        assert_eq!(stats(&b, &clock), (5 + k, 0, k), "at {t} ms");
        assert_eq!(b.phase(ms(t)), Phase::Closed);
    }
    // The fifth hung call seen slow: 5 of 10, 50 %. The breaker opens at this gate check,
    // which is refused, while all six calls are still out.
    clock.set(ms(1_401));
    assert_eq!(gate(&b, &clock), Err(RefusalReason::Open));
    assert_eq!(b.phase(ms(1_401)), Phase::Open);
    assert_eq!(
        b.observer().observer().all(),
        vec![(Phase::Open, Reason::SlowCalls, 1_401)]
    );
    assert_eq!(out(&b), 6);
    let before = b.counters();
    // They come back at last: stale permits, not samples of the cleared window, and each
    // frees its slot.
    clock.set(ms(5_000));
    for (i, (permit, started)) in hung.into_iter().enumerate() {
        if i % 2 == 0 {
            permit.record_timed(Outcome::Success, started);
        } else {
            permit.failure(Verdict::Strike);
        }
    }
    assert_eq!(out(&b), 0);
    assert_eq!(stats(&b, &clock), (0, 0, 0));
    let after = b.counters();
    assert_eq!(
        (after.successes - before.successes, after.failures - before.failures),
        (3, 3)
    );
    assert_eq!(after.trips, 1);
}

#[test]
fn a_call_counted_slow_while_out_is_not_counted_again_when_it_returns() {
    let b = breaker::<8>();
    let clock = ManualClock::new(ms(0));
    five_quick(&b, &clock);
    let a = b.try_acquire(&clock).unwrap();
    let f = b.try_acquire(&clock).unwrap();
    let late = b.try_acquire(&clock).unwrap();
    clock.set(ms(1_500));
    // The gate sees `a`, `f` and `late` out for 1.5 s: three slow samples (3 of 8).
    assert_eq!(gate(&b, &clock), Ok(()));
    assert_eq!(stats(&b, &clock), (8, 0, 3));
    let c0 = b.counters();
    // `a` succeeds, late: its slow sample stands for it, nothing more is added.
    clock.set(ms(2_000));
    a.record_timed(Outcome::Success, ms(0));
    assert_eq!(stats(&b, &clock), (8, 0, 3));
    // `f` fails: still its one slow sample (the window saw it hang), no failure sample;
    // the counters hear of the failure as of any.
    f.failure(Verdict::Strike);
    assert_eq!(stats(&b, &clock), (8, 0, 3));
    // `late`, dropped unanswered: neutral, and its slow sample stays.
    drop(late);
    assert_eq!(stats(&b, &clock), (8, 0, 3));
    let c1 = b.counters();
    assert_eq!(
        (
            c1.successes - c0.successes,
            c1.failures - c0.failures,
            c1.neutrals - c0.neutrals
        ),
        (1, 1, 1)
    );
    assert_eq!(out(&b), 0);
    // A call out long that returns before any gate saw it is timed at its return, as
    // without slots: one slow sample (4 of 9), taken by the call itself.
    let g = b.try_acquire(&clock).unwrap();
    clock.set(ms(3_500));
    g.record_timed(Outcome::Success, ms(2_000));
    assert_eq!(stats(&b, &clock), (9, 0, 4));
    // And a call through `call` is watched the same way: a gate inside it (another caller)
    // counts it slow while it runs; its return adds nothing (5 of 10: it trips there).
    let r = b.call(&clock, || {
        clock.set(ms(4_600));
        assert_eq!(gate(&b, &clock), Err(RefusalReason::Open));
        Ok::<_, std::convert::Infallible>(7)
    });
    assert_eq!(r, Ok(7));
    assert_eq!(
        b.observer().observer().all(),
        vec![(Phase::Open, Reason::SlowCalls, 4_600)]
    );
    assert_eq!(out(&b), 0);
}

#[test]
fn a_call_without_a_free_slot_is_timed_when_it_returns() {
    let b = breaker::<2>();
    let clock = ManualClock::new(ms(0));
    five_quick(&b, &clock);
    let first = b.try_acquire(&clock).unwrap();
    let second = b.try_acquire(&clock).unwrap();
    // No slot left: this call is not watched while out.
    let third = b.try_acquire(&clock).unwrap();
    assert_eq!(out(&b), 2);
    clock.set(ms(2_000));
    // The gate sees the two watched calls only (its own permit finds no slot either).
    assert_eq!(gate(&b, &clock), Ok(()));
    assert_eq!(stats(&b, &clock), (7, 0, 2));
    // The unwatched call is timed at its return, as without slots: 3 of 8.
    third.record_timed(Outcome::Success, ms(0));
    assert_eq!(stats(&b, &clock), (8, 0, 3));
    first.record_timed(Outcome::Success, ms(0));
    second.record_timed(Outcome::Success, ms(0));
    assert_eq!(stats(&b, &clock), (8, 0, 3));
    assert_eq!(out(&b), 0);
    assert_eq!(b.phase(ms(2_000)), Phase::Closed);
}

#[test]
fn a_probe_is_not_watched() {
    let b = breaker::<8>();
    let clock = ManualClock::new(ms(0));
    b.trip(Reason::TripVerdict, ms(0));
    clock.set(ms(30_000));
    let probe = b.try_acquire(&clock).unwrap();
    assert!(probe.is_probe());
    assert_eq!(out(&b), 0);
    // Out far longer than the slow-call duration: not a window sample; the probe lease
    // (the cooldown, 30 s by default) answers for a probe that hangs.
    clock.set(ms(45_000));
    assert_eq!(gate(&b, &clock), Err(RefusalReason::Probing));
    probe.success();
    assert_eq!(b.phase(ms(45_000)), Phase::Closed);
    assert_eq!(stats(&b, &clock), (0, 0, 0));
}

#[test]
fn a_call_a_shadowed_breaker_would_have_refused_is_neither_watched_nor_a_sample() {
    let b = breaker::<8>().shadowed();
    let clock = ManualClock::new(ms(0));
    b.trip(Reason::TripVerdict, ms(0));
    // Open: a live breaker would refuse; the shadow lets the calls through, untracked.
    let let_through = b.try_acquire(&clock).unwrap();
    assert_eq!(out(&b), 0);
    let r = b.call(&clock, || {
        clock.set(ms(2_000));
        assert_eq!(out(&b), 0);
        Ok::<_, std::convert::Infallible>(1)
    });
    assert_eq!(r, Ok(1));
    let_through.record_timed(Outcome::Success, ms(0));
    assert_eq!(stats(&b, &clock), (0, 0, 0));
    assert_eq!(b.phase(ms(2_000)), Phase::Open);
}

#[test]
fn a_probe_through_call_is_judged_as_a_probe_not_sampled() {
    let b = breaker::<8>();
    let clock = ManualClock::new(ms(0));
    b.trip(Reason::TripVerdict, ms(0));
    clock.set(ms(30_000));
    let r = b.call(&clock, || {
        clock.set(ms(32_000));
        assert_eq!(out(&b), 0);
        Ok::<_, std::convert::Infallible>(1)
    });
    assert_eq!(r, Ok(1));
    assert_eq!(b.phase(ms(32_000)), Phase::Closed);
    assert_eq!(stats(&b, &clock), (0, 0, 0));
    assert_eq!((b.counters().probes, b.counters().probe_successes), (1, 1));
}

#[test]
fn a_failing_call_counted_slow_while_out_counts_its_failure_when_not_counting_every_call() {
    // The policy of the other tests without `counting_calls`: the failure of a call the
    // gate counted slow while it ran is still the machine's to count.
    static QUIET: Policy = Policy::failure_rate(50, breaker_core::WindowSize::Calls(10), Duration::from_secs(30))
        .with_min_calls(5)
        .with_slow_calls(Duration::from_secs(1), 50);
    let b: Watched<8> = SharedBreaker::windowed(&QUIET, Windowed::in_flight(CallWindow::new(), Heard::default()));
    let clock = ManualClock::new(ms(0));
    let r = b.call_classified(
        &clock,
        || {
            clock.set(ms(1_500));
            assert_eq!(gate(&b, &clock), Ok(()));
            Err::<(), u8>(3)
        },
        |_| Verdict::Strike,
    );
    assert!(matches!(r, Err(breaker_core::CallError::Inner(3))));
    assert_eq!(stats(&b, &clock), (1, 0, 1));
    assert_eq!(b.counters().failures, 1);
}

#[test]
fn a_slot_of_an_older_generation_is_ignored() {
    let b = breaker::<8>();
    let clock = ManualClock::new(ms(0));
    five_quick(&b, &clock);
    let old = b.try_acquire(&clock).unwrap();
    // A reset clears the window: a new generation.
    b.reset(ms(10));
    assert_eq!(stats(&b, &clock), (0, 0, 0));
    clock.set(ms(2_000));
    assert_eq!(gate(&b, &clock), Ok(()));
    // The old call is out for 2 s, but not of this window: not counted, its slot still held.
    assert_eq!(stats(&b, &clock), (0, 0, 0));
    assert_eq!(out(&b), 1);
    assert!(old.is_stale());
    old.record_timed(Outcome::Success, ms(0));
    assert_eq!(stats(&b, &clock), (0, 0, 0));
    assert_eq!(out(&b), 0);
}

#[test]
fn counters_count_each_call_once() {
    let b = breaker::<8>();
    let clock = ManualClock::new(ms(0));
    let p = b.try_acquire(&clock).unwrap();
    clock.set(ms(1_500));
    assert_eq!(gate(&b, &clock), Ok(()));
    p.success();
    let Counters {
        calls,
        successes,
        neutrals,
        failures,
        ..
    } = b.counters();
    // Two admitted (the call and the gate check), one success, one neutral (the dropped
    // gate check), no failure.
    assert_eq!((calls, successes, neutrals, failures), (2, 1, 1, 0));
    assert_eq!(stats(&b, &clock), (1, 0, 1));
}

/// The same hung upstream over the other storages: a time window (the gate's samples land
/// in the bucket current at the gate check) and a ring of 100 calls.
#[test]
fn every_window_storage_can_be_watched() {
    use breaker_core::{CallRing, TimeWindow, WindowSize};

    static TIME: Policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(30))
        .with_min_calls(5)
        .with_slow_calls(Duration::from_secs(1), 50);
    static RING: Policy = Policy::failure_rate(50, WindowSize::Calls(100), Duration::from_secs(30))
        .with_min_calls(5)
        .with_slow_calls(Duration::from_secs(1), 50);
    let time: SharedBreaker<Windowed<InFlight<TimeWindow, 4>>> =
        SharedBreaker::windowed(&TIME, Windowed::in_flight(TimeWindow::new(), ()));
    let ring: SharedBreaker<Windowed<InFlight<CallRing, 4>>> =
        SharedBreaker::windowed(&RING, Windowed::in_flight(CallRing::new(), ()));
    let clock = ManualClock::new(ms(0));
    for _ in 0..3 {
        assert_eq!(time.call(&clock, || Ok::<_, std::convert::Infallible>(())), Ok(()));
        assert_eq!(ring.call(&clock, || Ok::<_, std::convert::Infallible>(())), Ok(()));
    }
    let hung_time: Vec<_> = (0..3).map(|_| time.try_acquire(&clock).unwrap()).collect();
    let hung_ring: Vec<_> = (0..3).map(|_| ring.try_acquire(&clock).unwrap()).collect();
    // 2.5 s on: three quick calls and three slow ones, 50 % of 6.
    clock.set(ms(2_500));
    assert!(time.try_acquire(&clock).is_err());
    assert!(ring.try_acquire(&clock).is_err());
    assert_eq!(time.phase(ms(2_500)), Phase::Open);
    assert_eq!(ring.phase(ms(2_500)), Phase::Open);
    drop(hung_time);
    drop(hung_ring);
    assert_eq!((time.observer().window().out(), ring.observer().window().out()), (0, 0));
}

/// A single-owner `Breaker` has no gate racing its calls: an `InFlight` storage there is
/// its window only, and a call is timed when it is recorded.
#[test]
fn a_single_owner_breaker_times_calls_when_recorded() {
    let mut b: breaker_core::Breaker<Windowed<InFlight<CallWindow, 4>>> =
        breaker_core::Breaker::windowed(*policy(), Windowed::in_flight(CallWindow::new(), ()));
    let out = b.try_acquire(ms(0)).unwrap();
    // 2 s later, another call: the one out is not counted at this gate.
    let other = b.try_acquire(ms(2_000)).unwrap();
    assert_eq!(b.window_stats(ms(2_000)).map(|s| s.calls), Some(0));
    b.record(other, Outcome::Success, ms(2_000));
    b.record_timed(out, Outcome::Success, ms(0), ms(2_000));
    assert_eq!(
        b.window_stats(ms(2_000)),
        Some(WindowStats {
            calls: 2,
            failures: 0,
            slow: 1
        })
    );
    assert_eq!(b.observer().window().out(), 0);
}

/// `#[circuit_breaker(.., in_flight = 8)]`: the attribute's breaker watches its calls out,
/// so a hung upstream opens it while the calls are still out.
mod attribute {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc::{channel, Receiver};

    use breaker_core::{circuit_breaker, registry, Classify, Instant, ManualClock, Phase, Refused};

    #[derive(Debug, PartialEq)]
    enum Error {
        Refused,
    }
    impl Classify for Error {}
    impl From<Refused> for Error {
        fn from(_: Refused) -> Self {
            Error::Refused
        }
    }

    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    /// Calls inside the function now.
    static INSIDE: AtomicUsize = AtomicUsize::new(0);

    /// Answers at once, or when `hold` is released.
    #[circuit_breaker(window = 10, min_calls = 5, slow_call = "1s", slow_rate = 50, in_flight = 8, clock = CLOCK, name = "slow_in_flight::hung")]
    fn upstream(hold: Option<Receiver<()>>) -> Result<(), Error> {
        INSIDE.fetch_add(1, Ordering::SeqCst);
        if let Some(hold) = hold {
            let _ = hold.recv();
        }
        INSIDE.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    #[test]
    fn a_hung_upstream_opens_an_annotated_functions_breaker_while_its_calls_are_out() {
        let entry = registry::get("slow_in_flight::hung").unwrap();
        for _ in 0..5 {
            assert_eq!(upstream(None), Ok(()));
        }
        // Five calls hang at 0 ms.
        let mut releases = Vec::new();
        let hung: Vec<_> = (0..5)
            .map(|_| {
                let (release, hold) = channel();
                releases.push(release);
                std::thread::spawn(move || upstream(Some(hold)))
            })
            .collect();
        while INSIDE.load(Ordering::SeqCst) < 5 {
            std::thread::yield_now();
        }
        // At 1 s they are not slow yet (strictly longer is): the next call goes through.
        CLOCK.set(Instant::from_millis(1_000));
        assert_eq!(upstream(None), Ok(()));
        assert_eq!(entry.state().phase(), Phase::Closed);
        // Past 1 s the five calls out are slow, and the next call's gate counts them while
        // they are out: the last 10 calls are 5 quick ones and these 5 slow ones, 50 %.
        // The breaker opens at that gate, which refuses the call.
        CLOCK.set(Instant::from_millis(1_001));
        assert_eq!(upstream(None), Err(Error::Refused));
        assert_eq!(entry.state().phase(), Phase::Open);
        assert_eq!(INSIDE.load(Ordering::SeqCst), 5, "the hung calls are still out");
        for release in releases {
            release.send(()).unwrap();
        }
        for call in hung {
            assert_eq!(call.join().unwrap(), Ok(()));
        }
        assert_eq!(entry.state().phase(), Phase::Open);
    }
}

#[test]
fn a_watched_window_is_saved_and_restored_with_its_samples_and_debugs_as_its_window() {
    let b = breaker::<4>();
    let clock = ManualClock::new(ms(0));
    five_quick(&b, &clock);
    let _ = b.call_classified(&clock, || Err::<(), _>(()), |_| Verdict::Strike);
    assert_eq!(stats(&b, &clock), (6, 1, 0));
    let snapshot = b.snapshot(clock.now());
    assert_ne!(snapshot.window, breaker_core::WindowSnapshot::None);
    let back = breaker::<4>();
    back.restore(&snapshot, clock.now());
    assert_eq!(stats(&back, &clock), (6, 1, 0));
    let watched = format!("{:?}", b.observer().window());
    assert!(watched.starts_with("InFlight { window: CallWindow { "), "{watched}");
    assert!(watched.contains("calls: 6, failures: 1, slow: 0 }"), "{watched}");
}

#[test]
fn a_watched_window_counts_again_after_a_recovery() {
    // Opened by failures, recovered by a probe: the window starts afresh and counts, so
    // the same failures open it again.
    let b = breaker::<4>();
    let clock = ManualClock::new(ms(0));
    let fail = |b: &Watched<4>| {
        let _ = b.call_classified(&clock, || Err::<(), _>(()), |_| Verdict::Strike);
    };
    for _ in 0..5 {
        fail(&b);
    }
    assert_eq!(b.phase(clock.now()), Phase::Open);
    clock.set(ms(30_000));
    assert_eq!(b.call(&clock, || Ok::<_, std::convert::Infallible>(())), Ok(()));
    assert_eq!(b.phase(clock.now()), Phase::Closed);
    assert_eq!(stats(&b, &clock), (0, 0, 0));
    for k in 1..5 {
        fail(&b);
        assert_eq!(stats(&b, &clock), (k, k, 0));
    }
    fail(&b);
    assert_eq!(b.phase(clock.now()), Phase::Open);
    assert_eq!(b.counters().trips, 2);
}
