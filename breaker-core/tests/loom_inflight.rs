//! Model checks of a shared breaker's in-flight slots (`InFlight`) with loom: every
//! interleaving (up to a bound on preemptions) of a gate counting a call slow while it is
//! out racing that call's return, of two gates racing to count one call, of a slot
//! claimed racing a transition, and of a gate racing another call's return to trip.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p breaker-core --test loom_inflight --release
//! ```
#![cfg(loom)]

use breaker_core::{
    CallWindow, Clock, Duration, InFlight, Instant, ManualClock, Outcome, Phase, Policy, SharedBreaker, Verdict,
    WindowSize, WindowStats, Windowed,
};
use loom::thread;

type Watched = SharedBreaker<Windowed<InFlight<CallWindow, 2>>>;

/// 100 % over the last 8 calls, judged from 4 on: one or two samples never trip, so the
/// window's figures are the whole story. A call out longer than 1 s is slow.
static POLICY: Policy = Policy::failure_rate(100, WindowSize::Calls(8), Duration::from_secs(30))
    .with_min_calls(4)
    .with_slow_calls(Duration::from_secs(1), 100);

/// Every interleaving with at most 3 preemptions.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// A breaker and a clock of its own (reading zero) for one run of the model.
fn fresh() -> (&'static Watched, &'static ManualClock) {
    let b = Box::leak(Box::new(SharedBreaker::windowed(
        &POLICY,
        Windowed::in_flight(CallWindow::new(), ()),
    )));
    let clock = Box::leak(Box::new(ManualClock::new(Instant::ZERO)));
    (b, clock)
}

fn stats(b: &Watched, clock: &ManualClock) -> WindowStats {
    b.window_stats(clock.now()).unwrap()
}

/// A gate check that makes no call: a permit taken and dropped (neutral, not a sample).
fn gate(b: &Watched, clock: &ManualClock) {
    drop(b.try_acquire(clock));
}

fn ws(calls: u32, failures: u32, slow: u32) -> WindowStats {
    WindowStats { calls, failures, slow }
}

#[test]
fn a_gate_counting_a_call_slow_racing_its_return_takes_one_sample() {
    model(|| {
        let (b, clock) = fresh();
        let p = b.try_acquire(clock).unwrap();
        clock.set(Instant::from_millis(2_000));
        // The call fails (untimed): its own sample is a failure; counted by the gate
        // first, it is a slow call. Never both, never neither.
        let t1 = thread::spawn(move || p.failure(Verdict::Strike));
        let t2 = thread::spawn(move || gate(b, clock));
        t1.join().unwrap();
        t2.join().unwrap();
        let s = stats(b, clock);
        assert!(s == ws(1, 1, 0) || s == ws(1, 0, 1), "{s:?}");
        assert_eq!(b.observer().window().out(), 0);
        assert_eq!(b.phase(clock.now()), Phase::Closed);
        assert_eq!(b.counters().failures, 1);
    });
}

#[test]
fn two_gates_racing_to_count_one_call_count_it_once() {
    model(|| {
        let (b, clock) = fresh();
        let p = b.try_acquire(clock).unwrap();
        clock.set(Instant::from_millis(2_000));
        let t1 = thread::spawn(move || gate(b, clock));
        let t2 = thread::spawn(move || gate(b, clock));
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(stats(b, clock), ws(1, 0, 1));
        // Its return adds nothing.
        p.record_timed(Outcome::Success, Instant::ZERO);
        assert_eq!(stats(b, clock), ws(1, 0, 1));
        assert_eq!(b.observer().window().out(), 0);
    });
}

#[test]
fn a_slot_claimed_racing_a_transition_is_counted_only_in_its_own_generation() {
    model(|| {
        let (b, clock) = fresh();
        let t1 = thread::spawn(move || b.try_acquire(clock).unwrap());
        let t2 = thread::spawn(move || b.reset(Instant::ZERO));
        let p = t1.join().unwrap();
        t2.join().unwrap();
        clock.set(Instant::from_millis(2_000));
        gate(b, clock);
        // Let through before the reset: of the ended generation, its slot is ignored.
        // After: a call of this window, counted slow at the gate.
        let expected = if p.is_stale() { ws(0, 0, 0) } else { ws(1, 0, 1) };
        assert_eq!(stats(b, clock), expected);
        // Its return adds nothing either way (stale, or counted already).
        p.record_timed(Outcome::Success, Instant::ZERO);
        assert_eq!(stats(b, clock), expected);
        assert_eq!(b.observer().window().out(), 0);
        assert_eq!(b.phase(clock.now()), Phase::Closed);
    });
}

#[test]
fn a_gate_and_a_returning_call_both_needed_to_trip_trip_once() {
    // Slow-call rate 100 % from 2 calls on: the window trips with both calls' slow
    // samples, whoever takes them (the gate, for both or for the one still out; the
    // returning call, for itself), and only then.
    static TWO: Policy = Policy::failure_rate(100, WindowSize::Calls(8), Duration::from_secs(30))
        .with_min_calls(2)
        .with_slow_calls(Duration::from_secs(1), 100);
    model(|| {
        let b: &'static Watched = Box::leak(Box::new(SharedBreaker::windowed(
            &TWO,
            Windowed::in_flight(CallWindow::new(), ()),
        )));
        let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new(Instant::ZERO)));
        let _first = b.try_acquire(clock).unwrap();
        let second = b.try_acquire(clock).unwrap();
        clock.set(Instant::from_millis(2_000));
        let t1 = thread::spawn(move || gate(b, clock));
        let t2 = thread::spawn(move || second.record_timed(Outcome::Success, Instant::ZERO));
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(b.phase(clock.now()), Phase::Open);
        assert_eq!(b.counters().trips, 1);
    });
}
