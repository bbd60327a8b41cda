//! `SharedBreaker::reload` on a `LivePolicy`: each rule of what the state becomes under the
//! new policy (its documentation's list), a policy the breaker cannot run refused with no
//! change, and breakers sharing one live policy by reference.

use breaker_core::{
    CallError, Clock, Duration, Instant, LivePolicy, ManualClock, Phase, Policy, PolicyError, SharedBreaker,
    WindowSize, Windowed,
};

fn fail<B: Fn(&ManualClock) -> Result<(), CallError<std::io::Error>>>(call: B, clock: &ManualClock) {
    assert!(matches!(call(clock), Err(CallError::Inner(_))));
}

const S: fn(u32) -> Duration = Duration::from_secs;

#[test]
fn strikes_above_a_lowered_trip_count_trip_on_the_next_strike() {
    let b = SharedBreaker::with_policy(LivePolicy::new(Policy::new(5, S(30))));
    let clock = ManualClock::new(Instant::ZERO);
    let call = |c: &ManualClock| b.call(c, || Err::<(), _>(std::io::Error::other("down")));
    for _ in 0..3 {
        fail(call, &clock);
    }
    b.reload(Policy::new(2, S(30))).unwrap();
    // Three strikes kept under a trip count of two: closed until the next strike.
    assert_eq!(b.phase(clock.now()), Phase::Closed);
    assert_eq!(b.counters().failures, 3);
    fail(call, &clock);
    assert_eq!(b.phase(clock.now()), Phase::Open);
    assert_eq!(b.counters().trips, 1);
}

#[test]
fn an_opening_in_progress_follows_the_new_cooldown_either_way() {
    let clock = ManualClock::new(Instant::ZERO);
    let open = || {
        let b = SharedBreaker::with_policy(LivePolicy::new(Policy::new(1, S(30))));
        let _ = b.call(&clock, || Err::<(), _>(std::io::Error::other("down")));
        assert_eq!(b.phase(clock.now()), Phase::Open);
        b
    };
    // Shorter: 10 s in, the opening is over and the next call probes.
    let b = open();
    clock.advance(S(10));
    assert_eq!(b.phase(clock.now()), Phase::Open);
    assert!(!b.state(clock.now()).allows_call());
    b.reload(Policy::new(1, S(5))).unwrap();
    // Still open, cooled down: the next call probes.
    assert!(b.state(clock.now()).allows_call());
    assert!(b.call(&clock, || Ok::<_, std::io::Error>(())).is_ok());
    assert_eq!(b.phase(clock.now()), Phase::Closed);
    // Longer: 30 s in, still 30 s to go.
    let b = open();
    clock.advance(S(29));
    b.reload(Policy::new(1, S(60))).unwrap();
    clock.advance(S(1));
    assert!(matches!(
        b.call(&clock, || Ok::<_, std::io::Error>(())),
        Err(CallError::Refused(r)) if r.retry_in == Some(S(30))
    ));
}

#[test]
fn a_lowered_probe_count_closes_on_the_next_successful_probe() {
    let clock = ManualClock::new(Instant::ZERO);
    let b = SharedBreaker::with_policy(LivePolicy::new(Policy::new(1, S(1)).with_probes_to_close(3)));
    let _ = b.call(&clock, || Err::<(), _>(std::io::Error::other("down")));
    clock.advance(S(1));
    assert!(b.call(&clock, || Ok::<_, std::io::Error>(())).is_ok());
    assert_eq!(b.phase(clock.now()), Phase::HalfOpen);
    b.reload(Policy::new(1, S(1)).with_probes_to_close(2)).unwrap();
    assert!(b.call(&clock, || Ok::<_, std::io::Error>(())).is_ok());
    assert_eq!(b.phase(clock.now()), Phase::Closed);
}

#[test]
fn a_new_rate_rule_starts_from_an_empty_window() {
    let clock = ManualClock::new(Instant::ZERO);
    let rate = |pct| Policy::failure_rate(pct, WindowSize::Calls(4), S(30));
    let b = SharedBreaker::with_policy_and_observer(LivePolicy::new(rate(75)), Windowed::calls(()));
    for ok in [false, false, true] {
        let _ = b.call(&clock, || if ok { Ok(()) } else { Err(std::io::Error::other("down")) });
    }
    assert_eq!(b.window_stats(clock.now()).unwrap().calls, 3);
    b.reload(rate(50)).unwrap();
    assert_eq!(b.window_stats(clock.now()).unwrap().calls, 0);
    // The same rule again keeps the samples.
    let _ = b.call(&clock, || Ok::<_, std::io::Error>(()));
    b.reload(rate(50)).unwrap();
    assert_eq!(b.window_stats(clock.now()).unwrap().calls, 1);
}

#[test]
fn a_policy_the_breaker_cannot_run_is_refused_and_changes_nothing() {
    let b = SharedBreaker::with_policy(LivePolicy::new(Policy::new(3, S(30))));
    let windowed = Policy::failure_rate(50, WindowSize::Calls(10), S(30));
    assert_eq!(b.reload(windowed), Err(PolicyError::NeedsWindow));
    assert_eq!(*b.policy(), Policy::new(3, S(30)));
    let counted = SharedBreaker::with_policy_and_observer(LivePolicy::new(windowed), Windowed::calls(()));
    let timed = Policy::failure_rate(50, WindowSize::Time(S(60)), S(30));
    assert_eq!(counted.reload(timed), Err(PolicyError::NeedsTimeWindow));
    assert_eq!(*counted.policy(), windowed);
    // A policy of consecutive strikes runs beside the window, which it leaves unused.
    counted.reload(Policy::new(2, S(30))).unwrap();
}

#[test]
fn breakers_sharing_one_live_policy_all_follow_a_reload() {
    static LIVE: LivePolicy = LivePolicy::new(Policy::new(3, Duration::from_secs(30)));
    let a = SharedBreaker::with_policy(&LIVE);
    let b = SharedBreaker::with_policy(&LIVE);
    a.reload(Policy::new(7, S(30))).unwrap();
    assert_eq!(b.policy().trip(), 7);
    assert_eq!(LIVE.get().trip(), 7);
}

/// A live policy prints as the policy it holds.
#[test]
fn a_live_policy_debug_prints_the_policy_it_holds() {
    let policy = Policy::new(3, Duration::from_secs(30));
    let live = LivePolicy::new(policy);
    assert_eq!(format!("{live:?}"), format!("LivePolicy({policy:?})"));
}
