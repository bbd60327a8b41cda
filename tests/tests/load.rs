//! Load: many threads on one shared breaker, on a fallback chain and on a health router,
//! with outcomes scripted so that every expected count is known exactly. No timing is
//! asserted: the clock is a manual one, and a slow or loaded host only takes longer.

use std::sync::Barrier;
use std::thread;

use breaker_core::{
    Backup, Clock, Duration, FallbackChain, HealthRouter, Instant, ManualClock, Outcome, Phase, Policy, Route, Row,
    SharedBreaker, Tool,
};

const THREADS: u32 = 8;
const CALLS: u32 = 4_000;

/// The outcome of a thread's `i`-th call: a strike, a neutral answer, then two successes.
/// Between two strikes of one thread come two of its successes, so at most `THREADS`
/// strikes are ever consecutive: a trip count above that never trips.
fn scripted(i: u32) -> Outcome {
    match i % 4 {
        0 => Outcome::STRIKE,
        1 => Outcome::NEUTRAL,
        _ => Outcome::Success,
    }
}

/// Strikes among one thread's `CALLS` calls.
const STRIKES_PER_THREAD: u32 = CALLS.div_ceil(4);

/// Runs `work(thread)` on `THREADS` threads started together.
fn on_threads(work: impl Fn(u32) + Sync) {
    let start = Barrier::new(THREADS as usize);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (start, work) = (&start, &work);
            s.spawn(move || {
                start.wait();
                work(t);
            });
        }
    });
}

static NEVER_TRIPS: Policy = Policy::new(255, Duration::from_secs(30));

#[test]
fn a_shared_breaker_under_many_threads_counts_every_outcome_once() {
    static BREAKER: SharedBreaker = SharedBreaker::new(&NEVER_TRIPS);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    on_threads(|_| {
        for i in 0..CALLS {
            BREAKER
                .try_acquire(&CLOCK)
                .expect("closed throughout")
                .record(scripted(i));
        }
    });
    let c = BREAKER.counters();
    assert_eq!(c.failures, THREADS * STRIKES_PER_THREAD);
    assert_eq!((c.trips, c.skips, c.probes), (0, 0, 0));
    assert_eq!(BREAKER.phase(Instant::ZERO), Phase::Closed);
}

#[test]
fn a_chain_under_many_threads_counts_every_turn_once() {
    static CHAIN: FallbackChain<1> = FallbackChain::new(&NEVER_TRIPS, "primary", [Backup::new("backup")]);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    // Closed: every turn to the primary, its strikes counted once.
    on_threads(|_| {
        for i in 0..CALLS {
            let turn = CHAIN.route(&CLOCK);
            assert_eq!(turn.route(), Route::Primary { probe: false });
            turn.record(scripted(i));
        }
    });
    assert_eq!(CHAIN.breaker().counters().failures, THREADS * STRIKES_PER_THREAD);
    // Forced open: every turn to the backup, each counted in its turns; successes only,
    // so the backup's budget is never spent.
    CHAIN.breaker().force_open(CLOCK.now());
    on_threads(|_| {
        for _ in 0..CALLS {
            let turn = CHAIN.route(&CLOCK);
            assert_eq!(
                turn.route(),
                Route::Backup {
                    index: 0,
                    name: "backup"
                }
            );
            turn.success();
        }
    });
    let report = CHAIN.report(CLOCK.now());
    assert_eq!(report.backups[0].turns, THREADS * CALLS);
    assert_eq!((report.backups[0].attempts, report.exhausted), (0, 0));
    assert!(report.fallback_activated);
}

#[test]
fn a_router_under_many_threads_counts_every_request_once() {
    static TOOL: SharedBreaker = SharedBreaker::new(&NEVER_TRIPS);
    static MIRROR: SharedBreaker = SharedBreaker::new(&NEVER_TRIPS);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    static ROUTER: HealthRouter<1> = HealthRouter::new([Row::new(
        Tool::new("tool", &TOOL, &CLOCK),
        &[Tool::new("mirror", &MIRROR, &CLOCK)],
    )]);
    #[derive(Debug)]
    struct Down;
    impl breaker_core::Classify for Down {}
    let answer = |i: u32| match scripted(i) {
        Outcome::STRIKE => Err(Down),
        _ => Ok(i),
    };

    // Healthy: every request served by the tool itself, its strikes counted once.
    on_threads(|_| {
        for i in 0..CALLS {
            let r = ROUTER.call("tool", |t| {
                assert_eq!(t.name(), "tool");
                answer(i)
            });
            assert_eq!(r.is_ok(), i % 4 != 0);
        }
    });
    // Sick (forced open): every request substituted by the mirror.
    TOOL.force_open(CLOCK.now());
    on_threads(|_| {
        for i in 0..CALLS {
            let r = ROUTER.call("tool", |t| {
                assert_eq!(t.name(), "mirror");
                answer(i)
            });
            assert_eq!(r.is_ok(), i % 4 != 0);
        }
    });
    // Both sick: every request refused softly, nothing called.
    MIRROR.force_open(CLOCK.now());
    on_threads(|_| {
        for _ in 0..CALLS {
            assert!(ROUTER.call("tool", |_| -> Result<(), Down> { unreachable!() }).is_err());
        }
    });

    let all = THREADS * CALLS;
    let report = ROUTER.report()[0];
    assert_eq!(
        (report.served, report.substitutions, report.refusals),
        (2 * all, all, all)
    );
    assert_eq!(TOOL.counters().failures, THREADS * STRIKES_PER_THREAD);
    assert_eq!(MIRROR.counters().failures, THREADS * STRIKES_PER_THREAD);
    // The router asks the oracle first: a sick tool's breaker never counts a skip from it.
    assert_eq!((TOOL.counters().skips, MIRROR.counters().skips), (0, 0));
}
