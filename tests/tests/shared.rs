//! The shared breaker's own promises: the permit guard's cancellation rule, the lease
//! covering a hung probe, one probe under real threads, clock reads, size.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Barrier;

use breaker_core::{
    CallError, Classify, Clock, Counters, Duration, Instant, LivePolicy, ManualClock, Phase, Policy, RefusalReason,
    SharedBreaker, Snapshot, State, TransitionCounts, Verdict,
};

static POLICY: Policy = Policy::new(3, Duration::from_secs(30)).with_probe_lease(Duration::from_secs(10));

#[derive(Debug, PartialEq)]
struct Nack;
impl Classify for Nack {}

/// A manual clock that counts how often it is read.
#[derive(Default)]
struct CountingClock {
    at: AtomicU32,
    reads: AtomicUsize,
}

impl CountingClock {
    fn reads(&self) -> usize {
        self.reads.swap(0, Ordering::Relaxed)
    }
}

impl Clock for CountingClock {
    fn now(&self) -> Instant {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Instant::from_millis(self.at.load(Ordering::Relaxed))
    }
}

fn s(secs: u32) -> Instant {
    Instant::from_millis(secs * 1000)
}

fn trip(b: &SharedBreaker, clock: &impl Clock) {
    for _ in 0..3 {
        let _ = b.call(clock, || Err::<(), _>(Nack));
    }
}

#[test]
fn a_dropped_probe_permit_counts_as_a_failed_probe_at_that_moment() {
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    trip(&b, &clock);
    clock.set(s(30));
    let probe = b.try_acquire(&clock).unwrap();
    assert!(probe.is_probe());
    clock.set(s(33));
    drop(probe); // the future was cancelled, the task died
    assert_eq!(
        b.state(s(33)),
        State::Open {
            remaining: Duration::from_secs(30),
            forced: false
        }
    );
    assert_eq!(b.counters().failures, 4);
    assert_eq!(b.counters().lease_expiries, 0, "no need to wait for the lease");
}

#[test]
fn counting_switched_on_counts_from_the_next_call_none_of_the_steps_before() {
    // Not counting every call, a neutral outcome and a success go through steps (a strike
    // pending) uncounted: a count of only some calls would mislead. Switched on, calls
    // count from the next call on, none of those before.
    let b = SharedBreaker::with_policy(LivePolicy::new(POLICY));
    let clock = ManualClock::new(s(0));
    let _ = b.call(&clock, || Err::<(), _>(Nack));
    let _ = b.call_classified(&clock, || Err::<(), _>(Nack), |_| Verdict::Neutral);
    assert_eq!(b.call(&clock, || Ok::<_, Nack>(1)), Ok(1));
    let c = b.counters();
    assert_eq!((c.calls, c.successes, c.neutrals, c.failures), (0, 0, 0, 1));
    b.reload(POLICY.counting_calls()).unwrap();
    let c = b.counters();
    assert_eq!((c.calls, c.successes, c.neutrals, c.failures), (0, 0, 0, 1));
    assert_eq!(b.call(&clock, || Ok::<_, Nack>(2)), Ok(2));
    let c = b.counters();
    assert_eq!((c.calls, c.successes, c.neutrals, c.failures), (1, 1, 0, 1));
}

#[test]
fn a_probe_that_panics_is_counted_as_failed_not_wedged() {
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    trip(&b, &clock);
    clock.set(s(30));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = b.call(&clock, || -> Result<(), Nack> { panic!("driver bug") });
    }));
    assert!(result.is_err());
    assert_eq!(b.phase(s(30)), Phase::Open);
}

#[test]
fn any_other_dropped_permit_is_neutral() {
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    let _ = b.call(&clock, || Err::<(), _>(Nack));
    let permit = b.try_acquire(&clock).unwrap();
    assert!(!permit.is_probe());
    drop(permit);
    assert_eq!(b.state(s(0)), State::Closed { strikes: 1 });
}

#[test]
fn the_lease_still_covers_a_probe_whose_caller_hangs_forever() {
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    trip(&b, &clock);
    clock.set(s(30));
    let hung = b.try_acquire(&clock).unwrap();
    clock.set(s(39));
    assert_eq!(b.try_acquire(&clock).unwrap_err().reason, RefusalReason::Probing);
    clock.set(s(45));
    // Lease ended at 40 s: re-opened as of then, 25 s left.
    assert_eq!(
        b.state(s(45)),
        State::Open {
            remaining: Duration::from_secs(25),
            forced: false
        }
    );
    clock.set(s(70));
    assert!(b.try_acquire(&clock).unwrap().is_probe());
    std::mem::forget(hung); // never answers, never drops
}

#[test]
fn the_closed_happy_path_never_reads_the_clock_and_a_refusal_reads_it_once() {
    let b = SharedBreaker::new(&POLICY);
    let clock = CountingClock::default();
    for _ in 0..100 {
        assert_eq!(b.call(&clock, || Ok::<_, Nack>(7)), Ok(7));
        assert_eq!(b.call_or_else(&clock, |_| Ok::<_, Nack>(8), |_| Verdict::Strike), Ok(8));
    }
    let permit = b.try_acquire(&clock).unwrap();
    permit.success();
    assert_eq!(clock.reads(), 0);
    trip(&b, &clock);
    clock.reads();
    assert!(matches!(
        b.call(&clock, || Ok::<_, Nack>(7)),
        Err(CallError::Refused(_))
    ));
    assert_eq!(clock.reads(), 1);
}

#[test]
fn a_forced_opening_refuses_without_reading_the_clock() {
    // Held open until a reset, with no cooldown to measure: refused from the word alone,
    // on every path (the call's inline refusal, the gate's, a keyed entry's), by each
    // breaker.
    let clock = CountingClock::default();
    let b = SharedBreaker::new(&POLICY);
    b.force_open(s(0));
    assert!(matches!(
        b.call(&clock, || Ok::<_, Nack>(7)),
        Err(CallError::Refused(_))
    ));
    assert!(b.try_acquire(&clock).is_err());
    let mut single = breaker_core::Breaker::new(POLICY);
    single.force_open(s(0));
    assert!(matches!(
        single.call(&clock, || Ok::<_, Nack>(7)),
        Err(CallError::Refused(_))
    ));
    static TABLE: breaker_core::keyed::KeyedBreakers<u32, 4> =
        breaker_core::keyed::KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 4]);
    let mut entry = TABLE.entry(7);
    entry.breaker().unwrap().force_open(s(0));
    assert!(matches!(
        breaker_core::CircuitBreaker::call(&mut entry, &clock, || Ok::<_, Nack>(7)),
        Err(CallError::Refused(_))
    ));
    assert_eq!(clock.reads(), 0);
    let keyed = TABLE.get(7).unwrap().counters().skips;
    assert_eq!((b.counters().skips, single.counters().skips, keyed), (2, 1, 1));
}

#[test]
fn a_counting_breaker_s_closed_happy_path_never_reads_the_clock_either() {
    // Every call counted, by one add each: no clock read, no transition step.
    static COUNTING: Policy = POLICY.counting_calls();
    let b = SharedBreaker::new(&COUNTING);
    let clock = CountingClock::default();
    for _ in 0..100 {
        assert_eq!(b.call(&clock, || Ok::<_, Nack>(7)), Ok(7));
    }
    let permit = b.try_acquire(&clock).unwrap();
    permit.success();
    assert_eq!(clock.reads(), 0);
    let c = b.counters();
    assert_eq!((c.calls, c.successes), (101, 101));
}

#[test]
fn a_keyed_entry_s_closed_happy_path_never_reads_the_clock() {
    use breaker_core::keyed::KeyedBreakers;
    use breaker_core::{CircuitBreaker, Outcome};
    static TABLE: KeyedBreakers<u32, 4> = KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 4]);
    let clock = CountingClock::default();
    let mut entry = TABLE.entry(7);
    for _ in 0..10 {
        let ticket = entry.enter(&clock).unwrap();
        entry.report(ticket, Outcome::Success, &clock);
        assert_eq!(entry.call(&clock, || Ok::<_, Nack>(7)), Ok(7));
    }
    assert_eq!(clock.reads(), 0);
}

#[test]
fn a_refusal_prints_and_matches_as_an_ordinary_value() {
    let b = SharedBreaker::new(&POLICY);
    b.force_open(s(0));
    match b.call(&ManualClock::new(s(0)), || Ok::<_, Nack>(())) {
        Err(CallError::Refused(r)) => {
            assert_eq!(r.reason, RefusalReason::ForcedOpen);
            assert_eq!(r.to_string(), "circuit breaker open: call refused");
            assert_eq!(CallError::<Nack>::Refused(r).into_inner(), None);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn trip_verdicts_trip_through_call_classified() {
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    let _ = b.call_classified(&clock, || Err::<(), _>("401"), |_| Verdict::Trip);
    assert_eq!(b.phase(s(0)), Phase::Open);
}

#[test]
fn exactly_one_of_many_threads_gets_the_probe() {
    const THREADS: usize = 8;
    for round in 0..50 {
        let b = SharedBreaker::new(&POLICY);
        let clock = ManualClock::new(s(0));
        trip(&b, &clock);
        clock.set(s(30 + round));
        let barrier = Barrier::new(THREADS);
        let granted = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    barrier.wait();
                    if let Ok(p) = b.try_acquire(&clock) {
                        granted.fetch_add(1, Ordering::Relaxed);
                        barrier.wait(); // hold the probe until everyone has asked
                        p.success();
                    } else {
                        barrier.wait();
                    }
                });
            }
        });
        assert_eq!(granted.load(Ordering::Relaxed), 1, "round {round}");
        assert_eq!(b.counters().skips as usize, THREADS - 1);
        assert_eq!(b.phase(clock.now()), Phase::Closed);
    }
}

#[test]
fn shared_counters_saturate_instead_of_wrapping() {
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    let full = Counters {
        failures: u32::MAX,
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
        ..Counters::ZERO
    };
    b.restore(
        &Snapshot {
            counters: full,
            ..b.snapshot(s(0))
        },
        s(0),
    );
    trip(&b, &clock); // failures, a trip
    let _ = b.try_acquire(&clock); // a skip on the refusal fast path (open, step 0)
    clock.set(s(30));
    let hung = b.try_acquire(&clock).unwrap(); // a probe
    let _ = b.try_acquire(&clock); // a skip on the general path (half-open)
    clock.set(s(45));
    let _ = b.try_acquire(&clock); // a lease expiry, a trip, a skip (backed off: general path)
    std::mem::forget(hung);
    assert_eq!(b.counters(), full);
}

#[test]
fn a_closed_success_after_a_racing_strike_zeroes_it() {
    // The closed fast path: the call began with no strike pending, another caller's strike
    // landed while it ran, and then it succeeded: the success came last, so it counts.
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    let got = b.call(&clock, || {
        let _ = b.call(&clock, || Err::<(), _>(Nack));
        assert_eq!(b.state(s(0)), State::Closed { strikes: 1 });
        Ok::<_, Nack>(5)
    });
    assert_eq!(got, Ok(5));
    assert_eq!(b.state(s(0)), State::Closed { strikes: 0 });
    // The same through a permit held across the strike.
    let permit = b.try_acquire(&clock).unwrap();
    let _ = b.call(&clock, || Err::<(), _>(Nack));
    permit.success();
    assert_eq!(b.state(s(0)), State::Closed { strikes: 0 });
    // A success whose call began before strikes that tripped the breaker is stale: it
    // neither closes the breaker nor zeroes anything.
    let got = b.call(&clock, || {
        trip(&b, &clock);
        Ok::<_, Nack>(6)
    });
    assert_eq!(got, Ok(6));
    assert_eq!(b.phase(s(0)), Phase::Open);
}

#[test]
fn it_and_its_permits_debug_print_what_they_hold() {
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    trip(&b, &clock);
    let printed = format!("{b:?}");
    for part in [
        "SharedBreaker",
        "phase: Open",
        "strikes: 0",
        "failures: 3",
        "trips: 1",
        "trip: 3",
        "probe_lease: Duration { millis: 10000 }",
    ] {
        assert!(printed.contains(part), "{part:?} in {printed}");
    }
    clock.set(s(30));
    let probe = b.try_acquire(&clock).unwrap();
    assert!(format!("{b:?}").contains("probe_out: true"));
    assert!(format!("{probe:?}").starts_with("Permit { probe: true, gen: "));
    probe.success();
}

#[test]
fn it_is_small() {
    use breaker_core::counts::{Lean, Spread};
    use breaker_core::keyed::KeyedBreakers;
    use breaker_core::Policy;
    type Of<S> = SharedBreaker<(), &'static Policy, S>;
    let word = 8;
    let pointer = std::mem::size_of::<usize>();
    // The default: the state word, sixteen 4-byte counters, the refusal fast path's 8-byte
    // skip count and a pointer to the policy, packed (88 B on x86-64).
    assert_eq!(std::mem::size_of::<SharedBreaker>(), word + 16 * 4 + 8 + pointer);
    assert_eq!(std::mem::align_of::<SharedBreaker>(), 8);
    // Lean: five counters (40 B on x86-64, 32 on a Cortex-M).
    assert_eq!(
        std::mem::size_of::<Of<Lean>>(),
        (word + 5 * 4 + pointer).next_multiple_of(8)
    );
    // Spread: the counters on a cache line of their own, away from the word every call
    // reads, and the refusal fast path's four skip slots one line each: six lines.
    let line = if cfg!(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "powerpc64"
    )) {
        128
    } else {
        64
    };
    assert_eq!(std::mem::size_of::<Of<Spread>>(), 6 * line);
    assert_eq!(std::mem::align_of::<Of<Spread>>(), line);
    // A keyed table of lean breakers: at most 64 B per key (a slot word, a use mark and
    // the breaker; 52 B on x86-64), and a few words for the whole table.
    type Table = KeyedBreakers<u32, 1024, (), &'static Policy, Lean>;
    let per_key = (std::mem::size_of::<Table>() - 64) / 1024;
    assert!(per_key <= 64, "{per_key} B per key");
    if cfg!(target_pointer_width = "64") {
        assert_eq!(std::mem::size_of::<Table>() / 1024, 52);
    }
}

#[test]
fn fast_path_refusals_count_every_skip_of_one_caller_at_a_time() {
    // Cooling down and forced open are refused on the fast path, whose skips go to the
    // slot of the caller's stack: every refusal counts, whichever thread made it, as long
    // as they do not refuse at the same instant.
    let b = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    trip(&b, &clock);
    let refuse = |n: u32| {
        for _ in 0..n {
            assert!(matches!(
                b.call(&clock, || Ok::<_, Nack>(())),
                Err(CallError::Refused(_))
            ));
        }
    };
    refuse(1_000);
    std::thread::scope(|scope| {
        scope.spawn(|| refuse(500)).join().unwrap();
    });
    b.force_open(s(1));
    refuse(250);
    std::thread::scope(|scope| {
        scope.spawn(|| refuse(250)).join().unwrap();
    });
    assert_eq!(b.counters().skips, 2_000);
}

/// The three storages of counters run one machine: the same script through each makes the
/// same states and the same counts, but a `Lean` one keeps only the first five (the rest
/// read zero, and it counts no calls even when its policy asks, and says so).
#[test]
fn every_storage_of_counters_runs_the_same_machine() {
    use breaker_core::{CircuitBreaker, Counters, ManualClock, Policy};
    static POLICY: Policy = Policy::new(2, Duration::from_secs(10)).counting_calls();
    let packed: SharedBreaker = SharedBreaker::new(&POLICY);
    let lean = SharedBreaker::lean(&POLICY);
    let spread = SharedBreaker::spread(&POLICY).shadowed();
    spread.set_shadow(false);
    let clock = ManualClock::new(Instant::ZERO);
    let script = |call: &mut dyn FnMut(bool) -> Result<u32, CallError<std::io::Error>>| {
        let mut seen = Vec::new();
        for fail in [false, true, true, false, false] {
            seen.push(call(fail).map_err(|e| matches!(e, CallError::Refused(_))));
        }
        seen
    };
    let step = |fail: bool| {
        if fail {
            Err(std::io::Error::other("down"))
        } else {
            Ok(7)
        }
    };
    let a = script(&mut |f| packed.call(&clock, || step(f)));
    let b = script(&mut |f| lean.call(&clock, || step(f)));
    let c = script(&mut |f| spread.call(&clock, || step(f)));
    assert_eq!(a, [Ok(7), Err(false), Err(false), Err(true), Err(true)]);
    assert_eq!((&a, &a), (&b, &c));
    clock.advance(Duration::from_secs(10));
    assert_eq!(packed.call(&clock, || step(false)).unwrap(), 7); // the probe closes it
    assert_eq!(lean.call(&clock, || step(false)).unwrap(), 7);
    assert_eq!(spread.call(&clock, || step(false)).unwrap(), 7);
    let (p, l, s) = (packed.counters(), lean.counters(), spread.counters());
    assert_eq!(p, s);
    let five = |c: Counters| (c.failures, c.skips, c.trips, c.probes, c.lease_expiries);
    assert_eq!(five(p), (2, 2, 1, 1, 0));
    assert_eq!(five(l), five(p));
    assert_eq!(
        (p.calls, p.successes, p.probe_successes, p.transitions.closed_to_open),
        (4, 2, 1, 1)
    );
    assert_eq!(
        Counters {
            failures: l.failures,
            skips: l.skips,
            trips: l.trips,
            probes: l.probes,
            lease_expiries: l.lease_expiries,
            ..Counters::ZERO
        },
        l
    );
    assert!(CircuitBreaker::counts_calls(&&packed));
    assert!(!CircuitBreaker::counts_calls(&&lean));
}

/// A restored snapshot's counters replace the breaker's, the refusals its fast path
/// counted beside the counters (the default storage's and a `Spread` one's) included.
#[test]
fn a_restored_snapshot_replaces_the_refusals_counted_on_the_fast_path() {
    use breaker_core::counts::CountStore;
    static POLICY: Policy = Policy::new(1, Duration::from_secs(10));
    fn refuse_then_restore<S: CountStore>(b: SharedBreaker<(), &'static Policy, S>) {
        let clock = ManualClock::new(Instant::ZERO);
        let fresh = SharedBreaker::new(&POLICY).snapshot(clock.now());
        let down = || Err::<(), _>(std::io::Error::other("down"));
        assert!(matches!(b.call(&clock, down), Err(CallError::Inner(_))));
        for _ in 0..3 {
            assert!(matches!(b.call(&clock, down), Err(CallError::Refused(_))));
        }
        assert_eq!((b.counters().trips, b.counters().skips), (1, 3));
        b.restore(&fresh, clock.now());
        assert_eq!(b.counters(), fresh.counters);
    }
    refuse_then_restore(SharedBreaker::new(&POLICY));
    refuse_then_restore(SharedBreaker::spread(&POLICY));
}
