//! The fallback chain (loopctl's model breaker): one test per row of the table in the
//! behaviour spec, named after the row, then the rules under it (routing, budgets,
//! FallbackExhausted, no chain, concurrency in Recovering) and the chain's own extras.

use std::cell::RefCell;

use breaker_core::chain::{BudgetError, NoSuchBackup};
use breaker_core::{
    registry, Backup, BackupSpent, ChainError, ChainObserver, ChainPhase, Classify, Duration, FallbackChain,
    FallbackEvent, Instant, ManualClock, Outcome, Phase, Reason, Refusal, Route, State, Transition, Verdict,
    DEFAULT_CHAIN_POLICY,
};

static POLICY: breaker_core::Policy = DEFAULT_CHAIN_POLICY;
const COOLDOWN: Duration = Duration::from_secs(60);

/// Everything the chain told its observer, in order.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Transition(Phase, Phase, Reason),
    Fallback(FallbackEvent),
    Spent(BackupSpent),
}

#[derive(Default)]
struct Log(RefCell<Vec<Seen>>);

impl ChainObserver for Log {
    fn on_transition(&self, t: &Transition) {
        self.0.borrow_mut().push(Seen::Transition(t.from, t.to, t.why));
    }
    fn on_fallback(&self, e: &FallbackEvent) {
        self.0.borrow_mut().push(Seen::Fallback(*e));
    }
    fn on_backup_spent(&self, e: &BackupSpent) {
        self.0.borrow_mut().push(Seen::Spent(*e));
    }
}

impl Log {
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut self.0.borrow_mut())
    }
}

type Chain = FallbackChain<2, Log>;

fn chain() -> Chain {
    FallbackChain::with_observer(
        &POLICY,
        "large",
        [Backup::new("medium"), Backup::new("small")],
        Log::default(),
    )
}

fn s(secs: u32) -> Instant {
    Instant::from_millis(secs * 1000)
}

const MEDIUM: Route = Route::Backup {
    index: 0,
    name: "medium",
};
const SMALL: Route = Route::Backup {
    index: 1,
    name: "small",
};
const PRIMARY: Route = Route::Primary { probe: false };
const PROBE: Route = Route::Primary { probe: true };

/// One turn at `clock`'s time: routed, then answered with `outcome`. Returns the route.
fn turn<const N: usize, O: ChainObserver>(chain: &FallbackChain<N, O>, clock: &ManualClock, outcome: Outcome) -> Route {
    let t = chain.route(clock);
    let route = t.route();
    t.record(outcome);
    route
}

/// A chain tripped at `s(0)` by three strikes, its log emptied.
fn tripped() -> (Chain, ManualClock) {
    let chain = chain();
    let clock = ManualClock::new(s(0));
    for _ in 0..3 {
        assert_eq!(turn(&chain, &clock, Outcome::STRIKE), PRIMARY);
    }
    assert_eq!(chain.phase(s(0)), ChainPhase::Fallback);
    chain.observer().take();
    (chain, clock)
}

/// A tripped chain at `s(60)`, its first probe answered with success (Recovering, 1 of 2).
fn recovering() -> (Chain, ManualClock) {
    let (chain, clock) = tripped();
    clock.set(s(60));
    assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
    assert_eq!(chain.phase(s(60)), ChainPhase::Recovering);
    chain.observer().take();
    (chain, clock)
}

fn attempts<const N: usize, O: ChainObserver>(chain: &FallbackChain<N, O>) -> Vec<u32> {
    (0..N).map(|i| chain.backup(i).unwrap().attempts).collect()
}

// ---- the table, row by row -------------------------------------------------------------

#[test]
fn primary_success_stays_primary_and_zeroes_consecutive_failures() {
    let chain = chain();
    let clock = ManualClock::new(s(0));
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::STRIKE);
    assert_eq!(chain.breaker().state(s(0)), State::Closed { strikes: 2 });
    assert_eq!(turn(&chain, &clock, Outcome::Success), PRIMARY);
    assert_eq!(chain.breaker().state(s(0)), State::Closed { strikes: 0 });
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::STRIKE);
    assert_eq!(
        chain.phase(s(0)),
        ChainPhase::Primary,
        "failed turns must be consecutive"
    );
    assert!(!chain.fallback_activated());
}

#[test]
fn primary_third_failed_turn_in_a_row_falls_back_with_every_side_effect() {
    let chain = chain();
    let clock = ManualClock::new(s(5));
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::STRIKE);
    assert!(!chain.fallback_activated());
    assert!(chain.observer().take().is_empty());
    turn(&chain, &clock, Outcome::STRIKE);

    assert_eq!(chain.phase(s(5)), ChainPhase::Fallback);
    // `fallback_activated` set; the cooldown starts; both counters zeroed.
    assert!(chain.fallback_activated());
    assert_eq!(
        chain.breaker().state(s(5)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        }
    );
    // The fallback event fires with from/to, after the primary's transition.
    assert_eq!(
        chain.observer().take(),
        vec![
            Seen::Transition(Phase::Closed, Phase::Open, Reason::Strikes),
            Seen::Fallback(FallbackEvent {
                from: "large",
                to: MEDIUM,
                why: Reason::Strikes,
                at: s(5),
            }),
        ]
    );
    assert_eq!(chain.route(&clock).route(), MEDIUM);
    // Both counters start from zero in Recovering: the streak needs two fresh successes.
    clock.set(s(65));
    assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
    assert_eq!(
        chain.breaker().state(s(65)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
}

#[test]
fn primary_trip_verdict_falls_back_at_once() {
    let chain = chain();
    let clock = ManualClock::new(s(0));
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::TRIP);
    assert_eq!(chain.phase(s(0)), ChainPhase::Fallback);
    assert!(chain.fallback_activated());
    let seen = chain.observer().take();
    assert_eq!(
        seen.last(),
        Some(&Seen::Fallback(FallbackEvent {
            from: "large",
            to: MEDIUM,
            why: Reason::TripVerdict,
            at: s(0),
        }))
    );
}

#[test]
fn fallback_failed_turn_on_the_active_backup_counts_one_attempt_against_its_budget() {
    let (chain, clock) = tripped();
    assert_eq!(turn(&chain, &clock, Outcome::STRIKE), MEDIUM);
    assert_eq!(attempts(&chain), [1, 0]);
    // A trip verdict on a backup is one failed turn too.
    assert_eq!(turn(&chain, &clock, Outcome::TRIP), MEDIUM);
    assert_eq!(attempts(&chain), [2, 0]);
    assert_eq!(
        chain.phase(s(0)),
        ChainPhase::Fallback,
        "a backup's failure never moves the phase"
    );
}

#[test]
fn fallback_backup_at_its_budget_is_failed_and_routing_advances_on_the_next_turn() {
    let (chain, clock) = tripped();
    assert_eq!(turn(&chain, &clock, Outcome::STRIKE), MEDIUM);
    assert_eq!(chain.active(), Some(0));
    assert_eq!(turn(&chain, &clock, Outcome::STRIKE), MEDIUM);
    let medium = chain.backup(0).unwrap();
    assert!(medium.failed && !medium.disabled);
    assert_eq!(
        chain.observer().take(),
        vec![Seen::Spent(BackupSpent {
            index: 0,
            name: "medium",
            at: s(0)
        })]
    );
    assert_eq!(chain.active(), Some(1));
    assert_eq!(turn(&chain, &clock, Outcome::Success), SMALL);
}

#[test]
fn fallback_cooldown_elapsed_before_a_turn_makes_it_the_probe_to_the_primary() {
    let (chain, clock) = tripped();
    clock.set(s(59));
    assert_eq!(turn(&chain, &clock, Outcome::Success), MEDIUM, "not yet");
    clock.set(s(60));
    let probe = chain.route(&clock);
    assert_eq!(probe.route(), PROBE);
    assert_eq!(chain.phase(s(60)), ChainPhase::Recovering);
    // The primary's success count starts at zero.
    assert_eq!(
        chain.breaker().state(s(60)),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    probe.success();
    assert_eq!(
        chain.observer().take(),
        vec![Seen::Transition(Phase::Open, Phase::HalfOpen, Reason::CooldownElapsed)]
    );
}

#[test]
fn recovering_second_probe_success_in_a_row_returns_to_primary_and_clears_every_backup_count() {
    let (chain, clock) = tripped();
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::STRIKE);
    assert_eq!(attempts(&chain), [2, 1]);
    clock.set(s(60));
    assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
    assert_eq!(chain.phase(s(60)), ChainPhase::Recovering);
    assert_eq!(attempts(&chain), [2, 1], "counts stay until the primary has recovered");
    assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);

    assert_eq!(chain.phase(s(60)), ChainPhase::Primary);
    // Everything zeroed, the cooldown cleared, every backup's count cleared.
    assert_eq!(chain.breaker().state(s(60)), State::Closed { strikes: 0 });
    assert_eq!(attempts(&chain), [0, 0]);
    assert!(chain.backup(0).is_some_and(|b| !b.failed));
    assert_eq!(chain.route(&clock).route(), PRIMARY);
    // The next outage starts from fresh budgets.
    turn(&chain, &clock, Outcome::TRIP);
    assert_eq!(chain.route(&clock).route(), MEDIUM);
}

#[test]
fn recovering_probe_failing_with_a_rate_limit_re_trips_at_once_with_a_fresh_cooldown() {
    let (chain, clock) = recovering();
    clock.set(s(70));
    // "No more load": a trip verdict, even a hold shorter than the cooldown.
    assert_eq!(
        turn(&chain, &clock, Outcome::Error(Verdict::TripFor(Duration::from_secs(5)))),
        PROBE
    );
    assert_eq!(chain.phase(s(70)), ChainPhase::Fallback);
    assert_eq!(
        chain.breaker().state(s(70)),
        State::Open {
            remaining: COOLDOWN,
            forced: false
        }
    );
    assert_eq!(
        chain.observer().take(),
        vec![
            Seen::Transition(Phase::HalfOpen, Phase::Open, Reason::ProbeFailed),
            Seen::Fallback(FallbackEvent {
                from: "large",
                to: MEDIUM,
                why: Reason::ProbeFailed,
                at: s(70),
            }),
        ]
    );
    assert_eq!(turn(&chain, &clock, Outcome::Success), MEDIUM);
    clock.set(s(129));
    assert_eq!(
        turn(&chain, &clock, Outcome::Success),
        MEDIUM,
        "the fresh cooldown runs from the re-trip"
    );
    clock.set(s(130));
    assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
}

#[test]
fn recovering_probe_failing_with_a_strike_only_resets_the_success_count_and_probation_continues() {
    let (chain, clock) = recovering();
    assert_eq!(
        chain.breaker().state(s(60)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
    clock.set(s(61));
    assert_eq!(turn(&chain, &clock, Outcome::STRIKE), PROBE);
    assert_eq!(
        chain.phase(s(61)),
        ChainPhase::Recovering,
        "one blip doesn't waste the cooldown paid"
    );
    assert_eq!(
        chain.breaker().state(s(61)),
        State::HalfOpen {
            probing: false,
            streak: 0
        }
    );
    assert!(chain.observer().take().is_empty(), "no transition, no fallback event");
    // The next turn probes again at once; two successes in a row are needed from here.
    assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
    assert_eq!(chain.phase(s(61)), ChainPhase::Recovering);
    assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
    assert_eq!(chain.phase(s(61)), ChainPhase::Primary);
}

#[test]
fn any_neutral_outcome_changes_nothing() {
    // Primary.
    let chain = chain();
    let clock = ManualClock::new(s(0));
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::STRIKE);
    assert_eq!(turn(&chain, &clock, Outcome::NEUTRAL), PRIMARY);
    assert_eq!(chain.breaker().state(s(0)), State::Closed { strikes: 2 });
    // Fallback: the backup's count is untouched.
    let (chain, clock) = tripped();
    turn(&chain, &clock, Outcome::STRIKE);
    assert_eq!(turn(&chain, &clock, Outcome::NEUTRAL), MEDIUM);
    assert_eq!(attempts(&chain), [1, 0]);
    assert_eq!(chain.phase(s(0)), ChainPhase::Fallback);
    // Recovering: the streak is untouched (the slot is freed for the next probe).
    let (chain, clock) = recovering();
    assert_eq!(turn(&chain, &clock, Outcome::NEUTRAL), PROBE);
    assert_eq!(
        chain.breaker().state(s(60)),
        State::HalfOpen {
            probing: false,
            streak: 1
        }
    );
    assert!(chain.observer().take().is_empty());
}

// ---- the rules under the table ---------------------------------------------------------

#[test]
fn fallback_activated_is_sticky_ever_tripped() {
    let (chain, clock) = tripped();
    assert!(chain.fallback_activated());
    clock.set(s(60));
    turn(&chain, &clock, Outcome::Success);
    turn(&chain, &clock, Outcome::Success);
    assert_eq!(chain.phase(s(60)), ChainPhase::Primary);
    assert!(chain.fallback_activated(), "a recovery does not clear it");
    chain.breaker().reset(s(60));
    assert!(chain.fallback_activated(), "a reset does not clear it");
    assert!(chain.report(s(60)).fallback_activated);
}

#[test]
fn routing_goes_to_the_first_backup_not_failed() {
    let chain: FallbackChain<3, Log> = FallbackChain::with_observer(
        &POLICY,
        "large",
        [Backup::new("a"), Backup::new("b").with_budget(1), Backup::new("c")],
        Log::default(),
    );
    let clock = ManualClock::new(s(0));
    turn(&chain, &clock, Outcome::TRIP);
    // a disabled by hand, b spent: c.
    chain.disable(0).unwrap();
    assert_eq!(
        turn(&chain, &clock, Outcome::STRIKE),
        Route::Backup { index: 1, name: "b" }
    );
    assert_eq!(chain.route(&clock).route(), Route::Backup { index: 2, name: "c" });
    // a enabled again: it is first and not failed, so it is active again.
    chain.enable(0).unwrap();
    assert_eq!(chain.route(&clock).route(), Route::Backup { index: 0, name: "a" });
}

#[test]
fn a_backup_disabled_by_hand_is_skipped_until_enabled_even_across_a_recovery() {
    let (chain, clock) = tripped();
    chain.disable(0).unwrap();
    let medium = chain.backup(0).unwrap();
    assert!(medium.disabled && medium.failed && medium.attempts == 0);
    assert_eq!(chain.route(&clock).route(), SMALL);
    // Recovery clears counts, not the manual switch.
    chain.breaker().reset(s(1));
    turn(&chain, &clock, Outcome::TRIP);
    assert_eq!(chain.route(&clock).route(), SMALL);
    chain.enable(0).unwrap();
    assert_eq!(chain.route(&clock).route(), MEDIUM);
    assert_eq!(chain.disable(2), Err(NoSuchBackup));
    assert_eq!(chain.enable(7), Err(NoSuchBackup));
    assert_eq!(chain.position("small"), Some(1));
}

#[test]
fn a_backup_is_found_by_its_name_and_the_primary_is_not_a_backup() {
    let chain = chain();
    assert_eq!(chain.position("medium"), Some(0));
    assert_eq!(chain.position("small"), Some(1));
    assert_eq!(chain.position("large"), None);
    assert_eq!(chain.position("tiny"), None);
}

#[test]
fn a_backup_success_leaves_its_count_for_the_episode() {
    let (chain, clock) = tripped();
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::Success);
    turn(&chain, &clock, Outcome::Success);
    assert_eq!(
        attempts(&chain),
        [1, 0],
        "the budget counts failed turns until the primary recovers"
    );
    turn(&chain, &clock, Outcome::STRIKE);
    assert_eq!(chain.route(&clock).route(), SMALL);
}

#[test]
fn fallback_exhausted_is_exactly_fallback_and_no_active_backup_and_a_chain() {
    let (chain, clock) = tripped();
    // Fallback, a backup active: routed.
    assert_eq!(chain.route(&clock).route(), MEDIUM);
    chain.disable(0).unwrap();
    chain.disable(1).unwrap();
    // Fallback, none active, a chain: exhausted, with the cooldown left.
    clock.set(s(6));
    let exhausted = Route::Exhausted {
        retry_in: Some(Duration::from_secs(54)),
    };
    assert_eq!(chain.would_route(s(6)), exhausted);
    assert_eq!(turn(&chain, &clock, Outcome::Success), exhausted);
    assert_eq!(chain.report(s(6)).exhausted, 1);
    // The same chain in Recovering: the cooldown has elapsed, the turn is the probe.
    clock.set(s(60));
    let probe = chain.route(&clock);
    assert_eq!(probe.route(), PROBE);
    // ... and while that probe is out, a concurrent turn has nowhere to go, but that is
    // not FallbackExhausted: the phase is Recovering.
    assert_eq!(chain.route(&clock).route(), Route::Probing);
    probe.success();
    // Primary with every backup disabled: the primary.
    assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
    assert_eq!(chain.phase(s(60)), ChainPhase::Primary);
    assert_eq!(chain.route(&clock).route(), PRIMARY);
    // Forced open, none active: exhausted until reset.
    chain.breaker().force_open(s(60));
    assert_eq!(chain.route(&clock).route(), Route::Exhausted { retry_in: None });
    assert_eq!(chain.report(s(60)).exhausted, 2);
}

#[test]
fn no_chain_configured_never_produces_fallback_exhausted() {
    let chain: FallbackChain<0, Log> = FallbackChain::with_observer(&POLICY, "only", [], Log::default());
    let clock = ManualClock::new(s(0));
    for _ in 0..3 {
        assert_eq!(turn(&chain, &clock, Outcome::STRIKE), PRIMARY);
    }
    // It trips (bookkeeping) ...
    assert_eq!(chain.phase(s(0)), ChainPhase::Fallback);
    assert!(chain.fallback_activated());
    assert_eq!(
        chain.observer().take().last(),
        Some(&Seen::Fallback(FallbackEvent {
            from: "only",
            to: PRIMARY,
            why: Reason::Strikes,
            at: s(0),
        }))
    );
    // ... but keeps serving the primary, whatever the turns answer, and never exhausts.
    for (secs, outcome) in [(1, Outcome::STRIKE), (2, Outcome::TRIP), (30, Outcome::Success)] {
        clock.set(s(secs));
        assert_eq!(chain.would_route(s(secs)), PRIMARY);
        assert_eq!(turn(&chain, &clock, outcome), PRIMARY);
    }
    // Those turns were bookkeeping: the cooldown still runs from the trip.
    clock.set(s(60));
    let probe = chain.route(&clock);
    assert_eq!(probe.route(), PROBE);
    assert_eq!(chain.route(&clock).route(), PRIMARY, "never Probing either");
    probe.failure(Verdict::Trip);
    assert_eq!(chain.route(&clock).route(), PRIMARY);
    assert_eq!(chain.report(s(60)).exhausted, 0);
}

#[test]
fn recovering_concurrent_turns_use_the_active_backup_while_the_probe_is_out() {
    let (chain, clock) = tripped();
    clock.set(s(60));
    let probe = chain.route(&clock);
    assert_eq!(probe.route(), PROBE);
    // Two more turns while the probe is out: the model breaker's open is soft.
    let a = chain.route(&clock);
    let b = chain.route(&clock);
    assert_eq!((a.route(), b.route()), (MEDIUM, MEDIUM));
    a.success();
    b.failure(Verdict::Strike);
    assert_eq!(attempts(&chain), [1, 0], "backups keep their budgets in Recovering");
    probe.success();
    // The slot is free: the next turn is the next probe.
    assert_eq!(chain.route(&clock).route(), PROBE);
    assert_eq!(chain.breaker().counters().probes, 2);
}

// ---- the chain's extras -----------------------------------------------------------------

#[test]
fn the_oracle_agrees_with_the_gate_and_never_takes_the_probe() {
    let (chain, clock) = tripped();
    for secs in [0, 30, 59, 60, 60, 61, 62] {
        clock.set(s(secs));
        let (state, counters) = (chain.breaker().state(s(secs)), chain.breaker().counters());
        let predicted = chain.would_route(s(secs));
        for _ in 0..3 {
            assert_eq!(chain.would_route(s(secs)), predicted);
        }
        assert_eq!(chain.breaker().state(s(secs)), state, "polling changes nothing");
        assert_eq!(chain.breaker().counters(), counters);
        let t = chain.route(&clock);
        assert_eq!(t.route(), predicted, "at {secs}s");
        t.record(if secs % 2 == 0 {
            Outcome::Success
        } else {
            Outcome::STRIKE
        });
    }
    assert_eq!(chain.report(s(62)).route, chain.would_route(s(62)));
}

#[test]
fn a_backup_failure_reported_after_the_primary_recovered_is_ignored() {
    let (chain, clock) = tripped();
    let late = chain.route(&clock);
    assert_eq!(late.route(), MEDIUM);
    clock.set(s(60));
    turn(&chain, &clock, Outcome::Success);
    turn(&chain, &clock, Outcome::Success);
    assert_eq!(chain.phase(s(60)), ChainPhase::Primary);
    late.failure(Verdict::Strike);
    assert_eq!(attempts(&chain), [0, 0], "it describes the previous outage");
    // One routed during a re-trip (same outage, no recovery between) still counts.
    let (chain, clock) = recovering();
    let before = {
        // Another turn while the probe is out goes to the backup...
        let probe = chain.route(&clock);
        let other = chain.route(&clock);
        probe.failure(Verdict::Trip); // ... then the probe re-trips.
        other
    };
    before.failure(Verdict::Strike);
    assert_eq!(attempts(&chain), [1, 0]);
}

#[test]
fn a_dropped_probe_turn_counts_as_failed_and_a_dropped_backup_turn_as_neutral() {
    let (chain, clock) = tripped();
    drop(chain.route(&clock));
    assert_eq!(attempts(&chain), [0, 0]);
    clock.set(s(60));
    let probe = chain.route(&clock);
    assert_eq!(probe.route(), PROBE);
    drop(probe);
    // A vanished probe is a failed probe: with patient probation it is a strike, so the
    // chain stays in Recovering with its streak reset, and the next turn probes again.
    assert_eq!(
        chain.breaker().state(s(60)),
        State::HalfOpen {
            probing: false,
            streak: 0
        }
    );
    assert_eq!(chain.route(&clock).route(), PROBE);
}

#[test]
fn reset_by_hand_is_a_recovery_and_force_open_sends_every_turn_to_the_backups() {
    let (chain, clock) = tripped();
    turn(&chain, &clock, Outcome::STRIKE);
    chain.breaker().reset(s(1));
    assert_eq!(chain.phase(s(1)), ChainPhase::Primary);
    assert_eq!(attempts(&chain), [0, 0]);
    chain.observer().take();
    chain.breaker().force_open(s(2));
    assert_eq!(
        chain.observer().take(),
        vec![
            Seen::Transition(Phase::Closed, Phase::Open, Reason::ForcedOpen),
            Seen::Fallback(FallbackEvent {
                from: "large",
                to: MEDIUM,
                why: Reason::ForcedOpen,
                at: s(2),
            }),
        ]
    );
    clock.set(s(1000));
    assert_eq!(turn(&chain, &clock, Outcome::Success), MEDIUM, "forced: no probe, ever");
}

#[derive(Debug, PartialEq)]
struct Timeout;
impl Classify for Timeout {}
impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("timed out")
    }
}

#[test]
fn call_routes_makes_the_turn_and_refuses_softly_when_exhausted() {
    let (chain, clock) = tripped();
    let got = chain.call(&clock, |route| match route {
        Route::Backup { name, .. } => Ok::<_, Timeout>(name),
        other => panic!("{other:?}"),
    });
    assert_eq!(got, Ok("medium"));
    for _ in 0..4 {
        assert_eq!(
            chain.call(&clock, |_| Err::<(), _>(Timeout)),
            Err(ChainError::Inner(Timeout))
        );
    }
    let mut called = false;
    let refused = chain.call(&clock, |_| {
        called = true;
        Ok::<_, Timeout>(())
    });
    assert!(!called);
    let refused = refused.unwrap_err();
    assert_eq!(
        refused,
        ChainError::Exhausted {
            retry_in: Some(COOLDOWN)
        }
    );
    assert_eq!(
        refused.to_string(),
        "fallback chain exhausted: every backup has failed and the primary is cooling down"
    );
    assert_eq!(ChainError::Inner(Timeout).to_string(), "timed out");
    // The one question every error answers.
    assert!(refused.is_refused());
    assert_eq!(refused.retry_in(), Some(COOLDOWN));
    assert!(ChainError::<Timeout>::Probing.is_refused());
    assert!(!ChainError::Inner(Timeout).is_refused());
    assert_eq!(
        ChainError::<Timeout>::Probing.to_string(),
        "fallback chain busy: the primary is on probation and every backup has failed"
    );
}

#[test]
fn budgets_are_checked() {
    assert_eq!(Backup::new("x").budget(), 2);
    assert_eq!(Backup::new("x").with_budget(5).budget(), 5);
    assert_eq!(Backup::new("x").try_with_budget(0), Err(BudgetError));
    assert_eq!(Backup::new("x").try_with_budget(256), Err(BudgetError));
    assert_eq!(Backup::new("x").try_with_budget(255).map(|b| b.budget()), Ok(255));
}

#[test]
fn a_rejected_budget_and_a_missing_backup_say_why() {
    assert_eq!(
        BudgetError.to_string(),
        "a backup's budget must be between 1 and 255 failed turns"
    );
    assert_eq!(
        NoSuchBackup.to_string(),
        "no backup at this place in the fallback chain"
    );
}

#[test]
fn the_report_shows_every_backup() {
    let (chain, clock) = tripped();
    turn(&chain, &clock, Outcome::STRIKE);
    turn(&chain, &clock, Outcome::Success);
    let r = chain.report(s(10));
    assert_eq!((r.primary, r.phase, r.route), ("large", ChainPhase::Fallback, MEDIUM));
    assert_eq!(r.counters.trips, 1);
    assert_eq!(r.counters.skips, 2, "turns routed around the primary");
    let b = r.backups[0];
    assert_eq!(
        (b.name, b.budget, b.attempts, b.turns, b.failed),
        ("medium", 2, 1, 2, false)
    );
    assert_eq!(r.backups[1].turns, 0);
}

// ---- the registry -----------------------------------------------------------------------

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
static RADIO: FallbackChain<1> = FallbackChain::new(&POLICY, "lora", [Backup::new("nb-iot")]);
breaker_core::register!(RADIO, "chain-test/radio", CLOCK);

#[test]
fn a_static_chain_is_listed_in_the_registry_by_its_primary_breaker() {
    let entry = registry::get("chain-test/radio").unwrap();
    assert!(std::ptr::addr_eq(entry.breaker(), RADIO.breaker()));
    assert_eq!(entry.state().phase(), Phase::Closed);
    RADIO.route(&CLOCK).failure(Verdict::Trip);
    // The dashboard sees the chain's phase (Fallback = open) and its reroutes as skips.
    assert_eq!(entry.state().phase(), Phase::Open);
    assert!(!entry.would_allow());
    assert_eq!(
        RADIO.route(&CLOCK).route(),
        Route::Backup {
            index: 0,
            name: "nb-iot"
        }
    );
    assert_eq!(entry.counters().skips, 1);
    // A reset from the dashboard is a recovery for the chain.
    registry::reset("chain-test/radio").unwrap();
    assert_eq!(RADIO.phase(CLOCK.now()), ChainPhase::Primary);
}

use breaker_core::Clock as _;

// ---- names, texts and the small accessors ------------------------------------------------

#[test]
fn every_name_and_text_is_the_one_given() {
    let chain = chain();
    assert_eq!(chain.primary(), "large");
    assert_eq!(Backup::new("medium").name(), "medium");
    assert_eq!(chain.backups().map(|b| b.name()), ["medium", "small"]);
    for (phase, name) in [
        (ChainPhase::Primary, "primary"),
        (ChainPhase::Fallback, "fallback"),
        (ChainPhase::Recovering, "recovering"),
    ] {
        assert_eq!((phase.name(), phase.to_string()), (name, name.to_string()));
    }
    assert_eq!(chain.backup(1).map(|b| b.name), Some("small"));
    assert_eq!(chain.backup(2), None, "two backups: places 0 and 1");
}

#[test]
fn a_route_is_routed_only_to_the_primary_or_a_backup() {
    for (route, routed) in [
        (PRIMARY, true),
        (PROBE, true),
        (MEDIUM, true),
        (Route::Exhausted { retry_in: None }, false),
        (Route::Probing, false),
    ] {
        assert_eq!(route.is_routed(), routed, "{route:?}");
    }
}

#[test]
fn a_chain_error_hands_back_the_call_s_own_error_and_only_that() {
    use std::error::Error as _;

    assert_eq!(ChainError::Inner(Timeout).into_inner(), Some(Timeout));
    assert_eq!(ChainError::<Timeout>::Probing.into_inner(), None);
    assert_eq!(ChainError::<Timeout>::Exhausted { retry_in: None }.into_inner(), None);
    let io = ChainError::Inner(std::io::Error::other("i/o"));
    assert_eq!(io.source().map(ToString::to_string).as_deref(), Some("i/o"));
    assert!(ChainError::<std::io::Error>::Probing.source().is_none());
}

#[test]
fn the_oracle_of_a_forced_chain_with_every_backup_failed_gives_no_retry_time() {
    let chain = chain();
    chain.breaker().force_open(s(0));
    assert_eq!(chain.would_route(s(5)), MEDIUM);
    chain.disable(0).unwrap();
    chain.disable(1).unwrap();
    // Forced open until reset: no cooldown to wait for (a timed trip would say 55 s).
    assert_eq!(chain.would_route(s(5)), Route::Exhausted { retry_in: None });
    assert_eq!(
        chain.route(&ManualClock::new(s(5))).route(),
        Route::Exhausted { retry_in: None }
    );
}

#[test]
fn a_chain_debugs_as_its_primary_breaker_with_the_backups_book() {
    let (chain, clock) = tripped();
    assert_eq!(
        format!("{:?}", chain.route(&clock)),
        format!("Turn {{ route: {MEDIUM:?} }}")
    );
    let text = format!("{chain:?}");
    assert!(text.starts_with("FallbackChain { breaker: "), "{text}");
    for part in [
        "primary: \"large\"",
        "name: \"medium\"",
        "name: \"small\"",
        "fallback_activated: true",
    ] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
}

#[test]
fn a_count_left_from_an_earlier_outage_stays_stale_through_many_recoveries() {
    // A failed turn on "medium" in the first outage, then eight recoveries (and seven more
    // outages that never reach a backup): the ninth outage starts with fresh budgets.
    let (chain, clock) = tripped();
    turn(&chain, &clock, Outcome::STRIKE);
    assert_eq!(attempts(&chain), [1, 0]);
    let mut t = 0;
    for recovery in 1..=8 {
        if recovery > 1 {
            assert_eq!(turn(&chain, &clock, Outcome::TRIP), PRIMARY);
        }
        t += 60;
        clock.set(s(t));
        assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
        assert_eq!(turn(&chain, &clock, Outcome::Success), PROBE);
        assert_eq!(chain.phase(s(t)), ChainPhase::Primary, "recovery {recovery}");
    }
    assert_eq!(turn(&chain, &clock, Outcome::TRIP), PRIMARY);
    assert_eq!(attempts(&chain), [0, 0]);
    assert_eq!(chain.backup(0).map(|b| b.failed), Some(false));
}
