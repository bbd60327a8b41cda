//! Shadow mode: one script of outcomes and instants through a live breaker and a shadowed
//! one (single-owner and shared, through `CircuitBreaker` as every composite drives them)
//! makes the same transitions and the same counters; the shadowed one refuses nothing but
//! a forced opening, and counts each call it would have refused as a skip.

use std::sync::Mutex;

use breaker_core::{
    circuit_breaker, registry, Breaker, CallError, CircuitBreaker, Clock, Counters, Duration, Instant, ManualClock,
    Observer, Outcome, Phase, Policy, Reason, RefusalReason, Refused, SharedBreaker, State, Transition,
    TransitionCounts, Verdict, WindowSize, Windowed,
};

/// Every transition, as told.
#[derive(Default)]
struct Log(Mutex<Vec<Transition>>);

impl Observer for Log {
    fn on_transition(&self, t: &Transition) {
        self.0.lock().unwrap().push(*t);
    }
}

impl Log {
    fn taken(&self) -> Vec<(Phase, Phase, Reason, u32)> {
        let log = self.0.lock().unwrap();
        log.iter().map(|t| (t.from, t.to, t.why, t.at.as_millis())).collect()
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    /// At this instant, a call with this outcome.
    Call(u32, Outcome),
    /// At this instant, a call let through and held (the probe, say).
    Hold(u32),
    /// At this instant, the held call answers.
    Answer(u32, Outcome),
    ForceOpen(u32),
    Reset(u32),
}

const FAIL: Outcome = Outcome::STRIKE;
const OK: Outcome = Outcome::Success;

/// Trip after 3 strikes, refuse for 1 s, double the cooldown on each re-open.
fn policy() -> Policy {
    Policy::new(3, Duration::from_secs(1)).with_backoff(2, Duration::from_secs(60))
}

/// Strikes, a trip, calls while cooling down (a failure among them: counted, a shadowed
/// breaker's cooldown would restart), a probe that closes, a second trip, a held probe
/// and a call while it is out, the probe failing (backoff), a refusal at backoff step 1,
/// a forced opening, a reset.
const SCRIPT: &[Op] = &[
    Op::Call(0, FAIL),
    Op::Call(10, FAIL),
    Op::Call(20, FAIL), // trips: open until 1020
    Op::Call(100, OK),
    Op::Call(200, FAIL),
    Op::Call(1019, OK),
    Op::Call(1020, OK), // the probe: closes
    Op::Call(1100, FAIL),
    Op::Call(1110, FAIL),
    Op::Call(1120, FAIL), // trips again: open until 2120
    Op::Call(1500, FAIL),
    Op::Hold(2120), // the probe, held
    Op::Call(2130, OK),
    Op::Call(2135, FAIL),
    Op::Answer(2140, FAIL), // re-opens for 2 s (backoff step 1)
    Op::Call(3000, OK),
    Op::ForceOpen(3100),
    Op::Call(3110, OK),
    Op::Reset(3200),
    Op::Call(3210, OK),
];

/// What each `Call` got: `None` made, `Some` refused.
fn run<B: CircuitBreaker>(
    b: &mut B,
    clock: &ManualClock,
    force: impl Fn(&mut B, Instant),
    reset: impl Fn(&mut B, Instant),
) -> Vec<Option<Refused>> {
    let mut answers = Vec::new();
    let mut held = None;
    let at = |t: u32| {
        clock.set(Instant::from_millis(t));
        clock.now()
    };
    for op in SCRIPT {
        match *op {
            Op::Call(t, outcome) => {
                at(t);
                answers.push(match b.enter(clock) {
                    Ok(ticket) => {
                        b.report(ticket, outcome, clock);
                        None
                    }
                    Err(refused) => Some(refused),
                });
            }
            Op::Hold(t) => {
                at(t);
                held = Some(b.enter(clock).expect("the probe is let through"));
            }
            Op::Answer(t, outcome) => {
                at(t);
                b.report(held.take().unwrap(), outcome, clock);
            }
            Op::ForceOpen(t) => force(b, at(t)),
            Op::Reset(t) => reset(b, at(t)),
        }
    }
    answers
}

fn open(retry_in: u32) -> Option<Refused> {
    Some(Refused {
        reason: RefusalReason::Open,
        retry_in: Some(Duration::from_millis(retry_in)),
    })
}

/// The live breaker's answers to [`SCRIPT`]'s calls, in order.
fn live_answers() -> Vec<Option<Refused>> {
    let probing = Some(Refused {
        reason: RefusalReason::Probing,
        retry_in: None,
    });
    let forced = Some(Refused {
        reason: RefusalReason::ForcedOpen,
        retry_in: None,
    });
    vec![
        None,
        None,
        None,
        open(920),
        open(820),
        open(1),
        None,
        None,
        None,
        None,
        open(620),
        probing,
        probing,
        open(1140),
        forced,
        None,
    ]
}

/// The transitions both make: (from, to, why, at ms).
fn transitions() -> Vec<(Phase, Phase, Reason, u32)> {
    use Phase::*;
    vec![
        (Closed, Open, Reason::Strikes, 20),
        (Open, HalfOpen, Reason::CooldownElapsed, 1020),
        (HalfOpen, Closed, Reason::Recovered, 1020),
        (Closed, Open, Reason::Strikes, 1120),
        (Open, HalfOpen, Reason::CooldownElapsed, 2120),
        (HalfOpen, Open, Reason::ProbeFailed, 2140),
        (Open, Open, Reason::ForcedOpen, 3100),
        (Open, Closed, Reason::Reset, 3200),
    ]
}

/// The counters both keep (a shared breaker reports calls, successes and neutrals as 0).
fn counters(single: bool) -> Counters {
    Counters {
        calls: if single { 9 } else { 0 },
        successes: if single { 2 } else { 0 },
        failures: 7,
        skips: 8,
        trips: 3,
        probes: 2,
        probe_successes: 1,
        probe_failures: 1,
        transitions: TransitionCounts {
            closed_to_open: 2,
            open_to_half_open: 2,
            half_open_to_closed: 1,
            half_open_to_open: 1,
            open_to_closed: 1,
        },
        ..Counters::ZERO
    }
}

/// A shadowed breaker's answers: made, but for the forced opening's refusal.
fn shadow_answers() -> Vec<Option<Refused>> {
    live_answers()
        .into_iter()
        .map(|a| a.filter(|r| r.reason == RefusalReason::ForcedOpen))
        .collect()
}

#[test]
fn a_shadowed_shared_breaker_decides_as_a_live_one_and_refuses_only_a_forced_opening() {
    let clock = ManualClock::new(Instant::ZERO);
    let live = SharedBreaker::with_policy_and_observer(policy(), Log::default());
    let shadowed = SharedBreaker::with_policy_and_observer(policy(), Log::default());
    shadowed.set_shadow(true);
    let force = |b: &mut &SharedBreaker<Log, Policy>, t| b.force_open(t);
    let reset = |b: &mut &SharedBreaker<Log, Policy>, t| b.reset(t);

    assert_eq!(run(&mut &live, &clock, force, reset), live_answers());
    assert_eq!(run(&mut &shadowed, &clock, force, reset), shadow_answers());

    assert_eq!(live.observer().taken(), transitions());
    assert_eq!(shadowed.observer().taken(), transitions());
    assert_eq!(live.counters(), counters(false));
    assert_eq!(shadowed.counters(), counters(false));
    assert_eq!(shadowed.state(clock.now()), live.state(clock.now()));
    assert!(shadowed.is_shadow() && !live.is_shadow());
    assert!(CircuitBreaker::is_shadow(&&shadowed));
}

#[test]
fn a_shadowed_single_owner_breaker_decides_as_a_live_one_and_refuses_only_a_forced_opening() {
    let clock = ManualClock::new(Instant::ZERO);
    let mut live = Breaker::with_observer(policy(), Log::default());
    let mut shadowed = Breaker::with_observer(policy(), Log::default());
    shadowed.set_shadow(true);
    let force = |b: &mut Breaker<Log>, t| b.force_open(t);
    let reset = |b: &mut Breaker<Log>, t| b.reset(t);

    assert_eq!(run(&mut live, &clock, force, reset), live_answers());
    assert_eq!(run(&mut shadowed, &clock, force, reset), shadow_answers());

    assert_eq!(live.observer().taken(), transitions());
    assert_eq!(shadowed.observer().taken(), transitions());
    assert_eq!(live.counters(), counters(true));
    assert_eq!(shadowed.counters(), counters(true));
    assert_eq!(shadowed.state(clock.now()), live.state(clock.now()));
}

#[test]
fn the_call_paths_let_the_would_be_refusals_through_untracked() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
    let clock = ManualClock::new(Instant::ZERO);
    let shared = SharedBreaker::new(&POLICY);
    let mut single = Breaker::new(POLICY);
    shared.set_shadow(true);
    single.set_shadow(true);
    let down = || Err::<u32, _>(std::io::Error::other("down"));
    for _ in 0..5 {
        assert!(matches!(shared.call(&clock, down), Err(CallError::Inner(_))));
        assert!(matches!(single.call(&clock, down), Err(CallError::Inner(_))));
    }
    for _ in 0..5 {
        assert!(matches!(
            shared.call_mapped(&clock, || Ok(7), |_: &()| Verdict::Strike, |_| ()),
            Ok(7)
        ));
        let answer = shared.call_or_else(
            &clock,
            |admitted| admitted.map(|_| 1).map_err(|_| ()),
            |_| Verdict::Strike,
        );
        assert_eq!(answer, Ok(1));
    }
    // Two strikes tripped each; everything after was let through and ignored.
    let open = State::Open {
        remaining: Duration::from_secs(30),
        forced: false,
    };
    assert_eq!(shared.state(clock.now()), open);
    assert_eq!(single.state(clock.now()), open);
    assert_eq!((shared.counters().failures, shared.counters().skips), (2, 13));
    assert_eq!(
        (
            single.counters().failures,
            single.counters().skips,
            single.counters().calls
        ),
        (2, 3, 2)
    );
    // The cooldown ran on the first trip's clock: 30 s later the next call probes, and
    // its success closes both.
    clock.advance(Duration::from_secs(30));
    assert!(shared.call(&clock, || Ok::<_, std::io::Error>(())).is_ok());
    assert!(single.call(&clock, || Ok::<_, std::io::Error>(())).is_ok());
    assert_eq!(shared.phase(clock.now()), Phase::Closed);
    assert_eq!(single.phase(clock.now()), Phase::Closed);
    assert_eq!(shared.counters().probe_successes, 1);
    assert_eq!(single.counters().probe_successes, 1);
}

#[test]
fn switched_off_the_breaker_refuses_from_the_next_call_on() {
    static POLICY: Policy = Policy::new(1, Duration::from_secs(10));
    let clock = ManualClock::new(Instant::ZERO);
    let b = SharedBreaker::new(&POLICY);
    b.set_shadow(true);
    let down = || Err::<(), _>(std::io::Error::other("down"));
    let _ = b.call(&clock, down); // trips
    assert!(b.would_allow(clock.now()), "shadowed: the oracle agrees with the gate");
    let held = b.try_acquire(&clock).expect("let through");
    b.set_shadow(false);
    assert!(!b.would_allow(clock.now()));
    match b.call(&clock, || Ok::<_, std::io::Error>(())) {
        Err(CallError::Refused(r)) => assert_eq!(r.retry_in, Some(Duration::from_secs(10))),
        other => panic!("{other:?}"),
    }
    // A call let through before the switch is still untracked.
    held.failure(Verdict::Strike);
    assert_eq!((b.counters().failures, b.counters().skips), (1, 2));
    // Switched on again, a forced opening still refuses.
    b.set_shadow(true);
    b.force_open(clock.now());
    assert!(!b.would_allow(clock.now()));
    assert!(matches!(
        b.call(&clock, || Ok::<_, std::io::Error>(())),
        Err(CallError::Refused(Refused {
            reason: RefusalReason::ForcedOpen,
            ..
        }))
    ));
    // The mode outlives a reset and a snapshot's restore.
    b.reset(clock.now());
    let snapshot = b.snapshot(clock.now());
    b.restore(&snapshot, clock.now());
    assert!(b.is_shadow());
}

#[test]
fn a_shadowed_windowed_breaker_takes_no_sample_of_a_call_it_let_through() {
    let policy = Policy::failure_rate(50, WindowSize::Calls(4), Duration::from_secs(5)).with_min_calls(2);
    let clock = ManualClock::new(Instant::ZERO);
    let b = SharedBreaker::with_policy_and_observer(policy, Windowed::calls(()));
    b.set_shadow(true);
    let down = || Err::<(), _>(std::io::Error::other("down"));
    for _ in 0..4 {
        let _ = b.call(&clock, down);
    }
    assert_eq!(b.phase(clock.now()), Phase::Open);
    assert_eq!(
        (b.counters().failures, b.counters().skips, b.counters().trips),
        (2, 2, 1)
    );
    clock.advance(Duration::from_secs(5));
    assert!(b.call(&clock, || Ok::<_, std::io::Error>(())).is_ok()); // the probe closes
    assert_eq!(b.window_stats(clock.now()).map(|s| s.calls), Some(0));
}

static REPORTED: SharedBreaker = SharedBreaker::new(&REPORTED_POLICY);
static REPORTED_POLICY: Policy = Policy::new(1, Duration::from_secs(30));
static REPORTED_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
breaker_core::register!(REPORTED, "shadow/reported", REPORTED_CLOCK);

#[test]
fn the_registry_reports_the_mode() {
    let entry = registry::get("shadow/reported").unwrap();
    assert!(!entry.report().shadow);
    registry::set_shadow("shadow/reported", true).unwrap();
    let _ = REPORTED.call(&REPORTED_CLOCK, || Err::<(), _>(std::io::Error::other("down")));
    let report = entry.report();
    assert!(report.shadow && entry.is_shadow() && report.would_allow);
    assert_eq!(
        report.to_string(),
        "shadow/reported: open, cooling down (30s left), shadow | failures 1, skips 0, trips 1, probes 0, lease expiries 0"
    );
    entry.set_shadow(false);
    assert!(!entry.report().shadow && !entry.report().would_allow);
}

static ATTRIBUTE_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[derive(Debug, PartialEq)]
enum Nack {
    Nack,
    Refused,
}

impl breaker_core::Classify for Nack {}

impl From<Refused> for Nack {
    fn from(_: Refused) -> Self {
        Nack::Refused
    }
}

#[circuit_breaker(trip = 1, cooldown = "30s", clock = ATTRIBUTE_CLOCK, name = "shadow/attribute", shadow)]
fn send(ok: bool) -> Result<u8, Nack> {
    if ok {
        Ok(1)
    } else {
        Err(Nack::Nack)
    }
}

#[test]
fn the_attribute_starts_its_breaker_in_shadow_mode() {
    let entry = registry::get("shadow/attribute").unwrap();
    assert!(entry.is_shadow());
    assert_eq!(send(false), Err(Nack::Nack)); // trips
    assert_eq!(send(true), Ok(1)); // a live breaker would have refused it
    assert_eq!(send(false), Err(Nack::Nack)); // made, and not counted
    assert_eq!(entry.state().phase(), Phase::Open);
    assert_eq!((entry.counters().failures, entry.counters().skips), (1, 2));
    registry::set_shadow("shadow/attribute", false).unwrap();
    assert_eq!(send(true), Err(Nack::Refused));
}

/// A breaker built shadowed counts every call only where its policy asks and its storage
/// keeps those counts, as one built live does.
#[test]
fn a_breaker_built_shadowed_counts_calls_only_where_its_policy_asks() {
    use breaker_core::counts::Lean;
    static PLAIN: Policy = Policy::new(3, Duration::from_secs(30));
    static COUNTING: Policy = Policy::new(3, Duration::from_secs(30)).counting_calls();
    static SHADOWED_PLAIN: SharedBreaker = SharedBreaker::new(&PLAIN).shadowed();
    static SHADOWED_COUNTING: SharedBreaker = SharedBreaker::new(&COUNTING).shadowed();
    static SHADOWED_LEAN: SharedBreaker<(), &Policy, Lean> = SharedBreaker::lean(&COUNTING).shadowed();
    fn calls<S: breaker_core::counts::CountStore>(b: &SharedBreaker<(), &'static Policy, S>) -> (bool, u32) {
        b.call(&ManualClock::new(Instant::ZERO), || Ok::<_, std::io::Error>(()))
            .unwrap();
        (CircuitBreaker::counts_calls(&b), b.counters().calls)
    }
    assert_eq!(calls(&SHADOWED_PLAIN), (false, 0));
    assert_eq!(calls(&SHADOWED_COUNTING), (true, 1));
    assert_eq!(calls(&SHADOWED_LEAN), (false, 0));
}
