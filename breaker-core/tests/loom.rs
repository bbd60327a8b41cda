//! Model checks of the shared breaker with loom: every interleaving of 2 and 3 callers
//! racing for the probe, strikes racing each other, a closed-state success (the fast path
//! that writes nothing) racing strikes, a probe racing `reset`, a breaker counting
//! every call, whose quiet outcomes are counted without a step, racing one that takes it,
//! and probes racing under a half-open failure rate, whose counts share the state word.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p breaker-core --test loom --release
//! ```
#![cfg(loom)]

use breaker_core::{Classify, Duration, Instant, ManualClock, Phase, Policy, SharedBreaker, Verdict};
use loom::sync::Arc;
use loom::thread;

static POLICY: Policy = Policy::new(2, Duration::from_millis(10)).with_probe_lease(Duration::from_millis(5));
/// After the cooldown of a breaker tripped at zero.
static LATER: ManualClock = ManualClock::new(Instant::from_millis(10));
static START: ManualClock = ManualClock::new(Instant::ZERO);

#[derive(Debug)]
struct Nack;
impl Classify for Nack {}

fn tripped() -> Arc<SharedBreaker> {
    let b = SharedBreaker::new(&POLICY);
    for _ in 0..2 {
        b.try_acquire(&START).unwrap().failure(Verdict::Strike);
    }
    assert_eq!(b.phase(START.now_ms()), Phase::Open);
    Arc::new(b)
}

trait NowMs {
    fn now_ms(&self) -> Instant;
}
impl NowMs for ManualClock {
    fn now_ms(&self) -> Instant {
        breaker_core::Clock::now(self)
    }
}

fn race_for_the_probe(callers: usize) {
    loom::model(move || {
        let b = tripped();
        let handles: Vec<_> = (0..callers)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || match b.try_acquire(&LATER) {
                    Ok(p) => {
                        let probe = p.is_probe();
                        std::mem::forget(p); // hold the slot: nobody else may get it
                        usize::from(probe)
                    }
                    Err(_) => 0,
                })
            })
            .collect();
        let probes: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(probes, 1, "exactly one caller is the probe");
        let c = b.counters();
        assert_eq!(c.probes, 1);
        assert_eq!(c.skips as usize, callers - 1);
        assert_eq!(b.phase(LATER.now_ms()), Phase::HalfOpen);
    });
}

#[test]
fn two_callers_one_probe() {
    race_for_the_probe(2);
}

#[test]
fn three_callers_one_probe() {
    race_for_the_probe(3);
}

#[test]
fn racing_strikes_lose_no_update() {
    loom::model(|| {
        let b = Arc::new(SharedBreaker::new(&POLICY));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let _ = b.call(&START, || Err::<(), _>(Nack));
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // Both strikes counted whichever order they landed in: trip = 2 means open.
        assert_eq!(b.phase(START.now_ms()), Phase::Open);
        let c = b.counters();
        assert_eq!((c.failures, c.trips), (2, 1));
    });
}

#[test]
fn a_probe_success_racing_a_stale_failure_closes_and_counts_both() {
    loom::model(|| {
        // Permits borrow their breaker; a leaked breaker lets them move into threads.
        let b: &'static SharedBreaker = Box::leak(Box::new(SharedBreaker::new(&POLICY)));
        let stale = b.try_acquire(&START).unwrap(); // granted before the trip
        b.try_acquire(&START).unwrap().failure(Verdict::Strike);
        b.try_acquire(&START).unwrap().failure(Verdict::Strike);
        let probe = b.try_acquire(&LATER).unwrap();
        assert!(probe.is_probe() && stale.is_stale());
        let t1 = thread::spawn(move || probe.success());
        let t2 = thread::spawn(move || stale.failure(Verdict::Strike));
        let t3 = thread::spawn(move || b.would_allow(LATER.now_ms()));
        t1.join().unwrap();
        t2.join().unwrap();
        let _ = t3.join().unwrap();
        // Whichever landed first, the stale failure moved nothing.
        assert_eq!(b.phase(LATER.now_ms()), Phase::Closed);
        let c = b.counters();
        assert_eq!((c.failures, c.trips, c.probes), (3, 1, 1));
    });
}

#[test]
fn reset_racing_a_trip_ends_in_a_consistent_state() {
    loom::model(|| {
        let b = Arc::new(SharedBreaker::new(&POLICY));
        b.try_acquire(&START).unwrap().failure(Verdict::Strike);
        let b1 = b.clone();
        let t1 = thread::spawn(move || {
            let _ = b1.call(&START, || Err::<(), _>(Nack));
        });
        let b2 = b.clone();
        let t2 = thread::spawn(move || b2.reset(START.now_ms()));
        t1.join().unwrap();
        t2.join().unwrap();
        // The strike tripped before the reset (one trip, then closed), or its permit came
        // after the reset (one strike pending), or came before it and went stale (ignored):
        // never a lost or half-applied update.
        let c = b.counters();
        assert_eq!(c.failures, 2);
        let state = b.state(START.now_ms());
        match c.trips {
            1 => assert_eq!(state, breaker_core::State::Closed { strikes: 0 }),
            0 => assert!(
                matches!(state, breaker_core::State::Closed { strikes: 0 | 1 }),
                "{state:?}"
            ),
            n => panic!("{n} trips"),
        }
    });
}

/// Which final states some execution of a model reached (plain atomics, outside loom's
/// view): a model must not only never break an invariant, it must reach every outcome the
/// race allows, or it is not exploring the race it claims to.
struct Reached(std::sync::atomic::AtomicU32);

impl Reached {
    const fn new() -> Reached {
        Reached(std::sync::atomic::AtomicU32::new(0))
    }

    fn mark(&self, outcome: u32) {
        self.0.fetch_or(1 << outcome, std::sync::atomic::Ordering::Relaxed);
    }

    fn all(&self, outcomes: &[u32]) -> bool {
        let seen = self.0.load(std::sync::atomic::Ordering::Relaxed);
        outcomes.iter().all(|o| seen & 1 << o != 0)
    }
}

/// The closed fast path (`call` with nothing pending, and a permit's success) against
/// another caller's strike: the success is linearized where it re-reads the state word
/// after the call. Before the strike: the strike stays. After it: the success zeroes it.
/// Never a lost strike, never a strike counted twice.
#[test]
fn a_closed_success_racing_a_strike() {
    // One record per path: the call's fast path, and a permit's success.
    static REACHED: [Reached; 2] = [Reached::new(), Reached::new()];
    for via_permit in [false, true] {
        loom::model(move || {
            let b = Arc::new(SharedBreaker::new(&POLICY));
            let b1 = b.clone();
            // The call takes time: a yield while it is out. (Loom does not preempt a thread
            // between two plain loads by itself, so without it the strike would never land
            // during the call.)
            let success = thread::spawn(move || {
                if via_permit {
                    let p = b1.try_acquire(&START).unwrap();
                    thread::yield_now();
                    p.success();
                } else {
                    let got = b1.call(&START, || {
                        thread::yield_now();
                        Ok::<_, Nack>(1)
                    });
                    assert_eq!(got.unwrap(), 1);
                }
            });
            let b2 = b.clone();
            let strike = thread::spawn(move || {
                let _ = b2.call(&START, || Err::<(), _>(Nack));
            });
            success.join().unwrap();
            strike.join().unwrap();
            let c = b.counters();
            assert_eq!((c.failures, c.trips), (1, 0));
            match b.state(START.now_ms()) {
                breaker_core::State::Closed { strikes } => REACHED[usize::from(via_permit)].mark(strikes),
                other => panic!("{other:?}"),
            }
        });
        let reached = &REACHED[usize::from(via_permit)];
        assert!(reached.all(&[0, 1]), "both orders were explored (permit: {via_permit})");
    }
}

/// The same race with the strike forced to land while the call is out: the success comes
/// last, so it must zero the strike (a fast path that never re-read the word would keep it).
#[test]
fn a_closed_success_after_a_strike_landed_during_the_call_zeroes_it() {
    for via_permit in [false, true] {
        loom::model(move || {
            let b = Arc::new(SharedBreaker::new(&POLICY));
            let struck = Arc::new(loom::sync::atomic::AtomicBool::new(false));
            let (b1, struck1) = (b.clone(), struck.clone());
            let success = thread::spawn(move || {
                let wait = || {
                    while !struck1.load(loom::sync::atomic::Ordering::Acquire) {
                        thread::yield_now();
                    }
                };
                if via_permit {
                    let p = b1.try_acquire(&START).unwrap();
                    wait();
                    p.success();
                } else {
                    let _ = b1.call(&START, || {
                        wait();
                        Ok::<_, Nack>(())
                    });
                }
            });
            let (b2, struck2) = (b.clone(), struck.clone());
            let strike = thread::spawn(move || {
                let _ = b2.call(&START, || Err::<(), _>(Nack));
                struck2.store(true, loom::sync::atomic::Ordering::Release);
            });
            success.join().unwrap();
            strike.join().unwrap();
            assert_eq!(b.state(START.now_ms()), breaker_core::State::Closed { strikes: 0 });
            assert_eq!(b.counters().failures, 1);
        });
    }
}

/// A closed-state success racing two strikes that trip the breaker (trip = 2): it lands
/// before both (they trip it), between them (one strike left), or after both (its permit
/// is stale: the breaker stays open). Never closed with no strike, never two strikes
/// pending: no strike lost, none zeroed that came after the success.
#[test]
fn a_closed_success_racing_strikes_that_trip() {
    static REACHED: Reached = Reached::new();
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let b = Arc::new(SharedBreaker::new(&POLICY));
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let b = b.clone();
                thread::spawn(move || {
                    if i == 0 {
                        let _ = b.call(&START, || {
                            thread::yield_now(); // the call takes time
                            Ok::<_, Nack>(())
                        });
                    } else {
                        let _ = b.call(&START, || Err::<(), _>(Nack));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let c = b.counters();
        assert_eq!(c.failures, 2);
        match (b.state(START.now_ms()), c.trips) {
            (breaker_core::State::Open { .. }, 1) => REACHED.mark(0),
            (breaker_core::State::Closed { strikes: 1 }, 0) => REACHED.mark(1),
            (state, trips) => panic!("{state:?} after {trips} trips"),
        }
    });
    assert!(REACHED.all(&[0, 1]), "both outcomes were explored");
}

static BACKOFF: Policy = Policy::new(2, Duration::from_millis(10))
    .with_probe_lease(Duration::from_millis(5))
    .with_backoff(2, Duration::from_millis(40));

/// The half-open probe against `reset`: reset before the gate (the call is an ordinary
/// closed call, its strike counts), between the gate and the answer (the probe is stale,
/// its failure ignored), or after the answer (the re-open it caused is undone, and so is
/// the backoff step it advanced). Closed at the end whatever the order, never wedged, and
/// the next trip waits the base cooldown.
#[test]
fn a_probe_racing_a_reset() {
    static REACHED: Reached = Reached::new();
    for dropped in [false, true] {
        loom::model(move || {
            let b = Arc::new(SharedBreaker::new(&BACKOFF));
            for _ in 0..2 {
                b.try_acquire(&START).unwrap().failure(Verdict::Strike);
            }
            let b1 = b.clone();
            let probe = thread::spawn(move || {
                if dropped {
                    // A cancelled probe counts as failed.
                    drop(b1.try_acquire(&LATER).unwrap());
                } else {
                    let _ = b1.call(&LATER, || {
                        thread::yield_now(); // the call takes time
                        Err::<(), _>(Nack)
                    });
                }
            });
            let b2 = b.clone();
            let reset = thread::spawn(move || b2.reset(LATER.now_ms()));
            probe.join().unwrap();
            reset.join().unwrap();
            let c = b.counters();
            let state = b.state(LATER.now_ms());
            match (c.probes, c.trips, c.failures) {
                // Reset first: an ordinary closed call's strike.
                (0, 1, 3) if !dropped => {
                    assert_eq!(state, breaker_core::State::Closed { strikes: 1 });
                    REACHED.mark(0);
                }
                // Reset first, then a dropped closed permit: neutral.
                (0, 1, 2) if dropped => {
                    assert_eq!(state, breaker_core::State::Closed { strikes: 0 });
                    REACHED.mark(0);
                }
                // Reset while the probe was out: its failure is stale.
                (1, 1, 3) => {
                    assert_eq!(state, breaker_core::State::Closed { strikes: 0 });
                    REACHED.mark(1);
                }
                // Reset after the probe's failure re-opened it.
                (1, 2, 3) => {
                    assert_eq!(state, breaker_core::State::Closed { strikes: 0 });
                    REACHED.mark(2);
                }
                other => panic!("{other:?}: {state:?}"),
            }
            assert!(b.would_allow(LATER.now_ms()), "not wedged");
            // The backoff step is zero again: the next trip waits the base cooldown.
            b.trip(breaker_core::Reason::Predicted, LATER.now_ms());
            assert_eq!(
                b.state(LATER.now_ms()),
                breaker_core::State::Open {
                    remaining: Duration::from_millis(10),
                    forced: false
                }
            );
        });
    }
    assert!(REACHED.all(&[0, 1, 2]), "every order was explored");
}

/// A breaker counting every call (`Policy::counting_calls`): a closed success (counted with
/// one add at the gate and one at the report, no step) racing a strike (a step) and a
/// neutral outcome. Every call and outcome is counted once, whatever the order, and the
/// strike is kept or zeroed by the success as in a breaker that does not count.
#[test]
fn a_counting_breaker_s_quiet_success_racing_a_strike_counts_each_once() {
    static COUNTING: Policy = Policy::new(2, Duration::from_millis(10)).counting_calls();
    static REACHED: Reached = Reached::new();
    loom::model(|| {
        let b = Arc::new(SharedBreaker::new(&COUNTING));
        let b1 = b.clone();
        let success = thread::spawn(move || {
            let got = b1.call(&START, || {
                thread::yield_now();
                Ok::<_, Nack>(1)
            });
            assert_eq!(got.unwrap(), 1);
        });
        let b2 = b.clone();
        let strike = thread::spawn(move || {
            let _ = b2.call(&START, || Err::<(), _>(Nack));
            let _ = b2.call_classified(&START, || Err::<(), _>(Nack), |_| Verdict::Neutral);
        });
        success.join().unwrap();
        strike.join().unwrap();
        let c = b.counters();
        assert_eq!((c.calls, c.successes, c.failures, c.neutrals, c.trips), (3, 1, 1, 1, 0));
        match b.state(START.now_ms()) {
            breaker_core::State::Closed { strikes } => REACHED.mark(strikes),
            other => panic!("{other:?}"),
        }
    });
    assert!(REACHED.all(&[0, 1]), "both orders were explored");
}

/// Half-open judged by a failure rate: 4 probes, re-open at 50 % (2 failures).
static RATED: Policy = Policy::new(2, Duration::from_millis(10))
    .with_probe_lease(Duration::from_millis(5))
    .with_half_open_rate(4, 50);

#[test]
fn racing_probes_under_a_half_open_rate_are_one_at_a_time_and_each_counted_once() {
    use loom::sync::atomic::{AtomicUsize, Ordering};
    loom::model(|| {
        let b = SharedBreaker::new(&RATED);
        for _ in 0..2 {
            b.try_acquire(&START).unwrap().failure(Verdict::Strike);
        }
        let b = Arc::new(b);
        let out = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (b, out) = (b.clone(), out.clone());
                thread::spawn(move || {
                    // Two tries each: a probe granted fails with a strike, counted once.
                    for _ in 0..2 {
                        if let Ok(p) = b.try_acquire(&LATER) {
                            assert!(p.is_probe());
                            assert_eq!(out.fetch_add(1, Ordering::SeqCst), 0, "two probes out");
                            out.fetch_sub(1, Ordering::SeqCst);
                            p.failure(Verdict::Strike);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let c = b.counters();
        let now = LATER.now_ms();
        // Whoever got the first probe tried again once it had answered, so exactly two
        // probes went out and failed, one after the other: 2 of 4 reach 50 %, re-opened.
        assert_eq!((c.probes, c.probe_failures, c.trips), (2, 2, 2));
        assert_eq!(b.phase(now), Phase::Open);
    });
}
