//! The composition matrix: every composite that takes a [`CircuitBreaker`] over every
//! breaker kind, each cell the same scripted outage: two failures trip the breaker, three
//! calls are refused without reaching the upstream, after the cooldown exactly one call
//! (the probe) goes through and closes it, and one more failure is counted once and does
//! not trip. The kinds' counters must show each outcome exactly once.
//!
//! The Redis column is in `redis_shared.rs`'s neighbour `composition_redis` below, on the
//! real server the test command starts. The table with each cell's result is in
//! `docs/composition.md`.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

use breaker_core::hal::Guarded;
use breaker_core::tower::CircuitBreakerLayer;
use breaker_core::{
    circuit_breaker, registry, Backup, Breaker, CallError, CircuitBreaker, Classify, Counters, Duration, FallbackChain,
    GuardsCalls, HealthRouter, Instant, LivePolicy, ManualClock, Phase, Policy, Priority, QuotaGuard, QuotaPolicy,
    Refusal, RetryPolicy, Route, RouterError, Row, SharedBreaker, Steer, Tool, WindowSize, Windowed,
};
use embedded_hal::i2c::{ErrorKind, ErrorType, I2c, NoAcknowledgeSource, Operation};

/// What one call of the script came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Got {
    Ok,
    Failed,
    Refused,
}

#[derive(Debug)]
struct Down;
impl Classify for Down {}

impl std::fmt::Display for Down {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("down")
    }
}
impl std::error::Error for Down {}

fn got<T, E>(r: Result<T, CallError<E>>) -> Got {
    match r {
        Ok(_) => Got::Ok,
        Err(CallError::Refused(_)) => Got::Refused,
        Err(CallError::Inner(_)) => Got::Failed,
    }
}

/// Trip after 2 strikes, 10 s cooldown, one probe closes.
static POLICY: Policy = Policy::new(2, Duration::from_secs(10));
/// The same outage in a count window: 2 calls, 50 % failures trip.
static WINDOW_POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(2), Duration::from_secs(10));
/// One attempt per call: the ladder's own retries are tested in `retry_ladder.rs`.
static ONCE: RetryPolicy = RetryPolicy::new(0, Duration::from_millis(1));

/// The script: `true` means the upstream answers. The clock advances by the cooldown
/// before the sixth call.
const SCRIPT: [bool; 7] = [false, false, true, true, true, true, false];

/// Puts a replica in step with Redis after each call (nothing for the local kinds).
type Settle<'s> = &'s dyn Fn();

/// One row's run: each call's result with the breaker's phase and counters after it.
type Run = Vec<(Got, (Phase, Counters))>;

/// Checks a row's run against the outage script, and that only admitted calls reached the
/// upstream, each once.
fn check(cell: &str, run: &Run, reached: &AtomicU32) {
    use Phase::{Closed, Open};
    let gots: Vec<Got> = run.iter().map(|c| c.0).collect();
    assert_eq!(
        gots,
        [
            Got::Failed,
            Got::Failed,
            Got::Refused,
            Got::Refused,
            Got::Refused,
            Got::Ok,
            Got::Failed
        ],
        "{cell}: the calls"
    );
    let phases: Vec<Phase> = run.iter().map(|c| c.1 .0).collect();
    assert_eq!(
        phases,
        [Closed, Open, Open, Open, Open, Closed, Closed],
        "{cell}: the phases"
    );
    let tripped = run[1].1 .1;
    assert_eq!(
        (tripped.trips, tripped.failures),
        (1, 2),
        "{cell}: tripped once, each failure once"
    );
    assert_eq!(run[4].1 .1.skips, 3, "{cell}: three refusals counted");
    let end = run[6].1 .1;
    assert_eq!(
        (end.probes, end.failures, end.trips),
        (1, 3, 1),
        "{cell}: one probe, each failure once"
    );
    assert_eq!(
        reached.load(SeqCst),
        4,
        "{cell}: every admitted call reached the upstream once, no refused one"
    );
}

/// Runs the script, calling `call` for each step and `read` after it.
fn script(clock: &ManualClock, mut step: impl FnMut(bool) -> (Got, (Phase, Counters))) -> Run {
    let mut run = Vec::new();
    for (i, up) in SCRIPT.into_iter().enumerate() {
        if i == 5 {
            clock.advance(Duration::from_secs(10));
        }
        run.push(step(up));
    }
    run
}

/// The upstream: counts the calls that reach it.
fn upstream(reached: &AtomicU32, up: bool) -> Result<(), Down> {
    reached.fetch_add(1, SeqCst);
    if up {
        Ok(())
    } else {
        Err(Down)
    }
}

// ---- the rows: one composite each, generic over the kind ----------------------------------

/// The retry ladder in front of `b`.
fn ladder<B: CircuitBreaker>(mut b: B, clock: &ManualClock, reached: &AtomicU32, settle: Settle) -> Run {
    script(clock, |up| {
        let r = ONCE.ladder(&mut b, clock).call(|| upstream(reached, up));
        settle();
        (got(r.result), (b.state(clock).phase(), b.counters()))
    })
}

/// The quota guard steering `b` (no quota reported: the breaker alone decides).
fn quota_guard<B: Steer>(b: B, clock: &ManualClock, reached: &AtomicU32, settle: Settle) -> Run {
    let mut guard = QuotaGuard::<B>::new(b, QuotaPolicy::new());
    script(clock, |up| {
        let r = guard.call(clock, Priority::Normal, || (upstream(reached, up), None));
        settle();
        (
            got(r),
            (guard.breaker().state(clock).phase(), guard.breaker().counters()),
        )
    })
}

/// The tower layer over `b` (a handle that clones into the same breaker).
fn tower_layer<B: GuardsCalls + Clone>(
    b: B,
    clock: &'static ManualClock,
    reached: &'static AtomicU32,
    settle: Settle,
) -> Run {
    use tower::{Layer, Service};
    let reader = b.clone();
    let mut svc = CircuitBreakerLayer::new(b, clock)
        .layer(tower::service_fn(move |up: bool| async move { upstream(reached, up) }));
    script(clock, |up| {
        let g = match ready(svc.call(up)) {
            Ok(()) => Got::Ok,
            Err(e) if e.is_refused() => Got::Refused,
            Err(_) => Got::Failed,
        };
        settle();
        (g, (reader.state(clock).phase(), reader.counters()))
    })
}

/// A health router tool over `b`, with no substitute: refused while its breaker is open.
fn router_tool<B>(b: &B, clock: &'static ManualClock, reached: &AtomicU32, settle: Settle) -> Run
where
    B: Sync,
    for<'x> &'x B: CircuitBreaker,
{
    let router = HealthRouter::new([Row::new(Tool::shared("tool", b, clock), &[])]);
    script(clock, |up| {
        let g = match router.call("tool", |_| upstream(reached, up)) {
            Ok(()) => Got::Ok,
            Err(RouterError::Inner(Down)) => Got::Failed,
            Err(_) => Got::Refused,
        };
        settle();
        // The router asks the pure oracle first and never enters a gate it would find
        // shut: it counts those refusals itself, once, in its report.
        let counters = Counters {
            skips: router.report()[0].refusals,
            ..CircuitBreaker::counters(&b)
        };
        (g, (CircuitBreaker::state(&b, clock).phase(), counters))
    })
}

/// A future that is ready at once (the service's are), polled once.
fn ready<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let cx = &mut std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the service's future is ready at once"),
    }
}

/// A guarded I2C bus whose sensor answers when `up`.
struct Bus<'r> {
    reached: &'r AtomicU32,
    up: bool,
}

impl ErrorType for Bus<'_> {
    type Error = ErrorKind;
}

impl I2c for Bus<'_> {
    fn transaction(&mut self, _: u8, _: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        upstream(self.reached, self.up).map_err(|_| ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address))
    }
}

/// `Guarded` over `b`: each transaction one call.
fn guarded<B: GuardsCalls>(b: B, clock: &ManualClock, reached: &AtomicU32, settle: Settle) -> Run {
    let mut bus = Guarded::new(Bus { reached, up: false }, b, clock);
    script(clock, |up| {
        bus.inner_mut().up = up;
        let g = match bus.write(0x48, &[0]) {
            Ok(()) => Got::Ok,
            Err(e) if e.is_refused() => Got::Refused,
            Err(_) => Got::Failed,
        };
        settle();
        (g, (bus.breakers().state(clock).phase(), bus.breakers().counters()))
    })
}

// ---- the columns: the breaker kinds ----------------------------------------------------------

/// A clock and an upstream counter of a cell's own, for `'static` handles (the tower layer's
/// clock is cloned into each service).
fn cell() -> (&'static ManualClock, &'static AtomicU32) {
    (
        Box::leak(Box::new(ManualClock::new(Instant::ZERO))),
        Box::leak(Box::new(AtomicU32::new(0))),
    )
}

/// A `static` shared breaker of a cell's own.
fn static_shared() -> &'static SharedBreaker {
    Box::leak(Box::new(SharedBreaker::new(&POLICY)))
}

/// A shared breaker owning its policy (as one built from a configuration file), in an `Arc`.
fn owned_shared() -> Arc<SharedBreaker<(), Policy>> {
    Arc::new(SharedBreaker::with_policy(POLICY))
}

/// A shared breaker whose policy can be reloaded (`LivePolicy`), in an `Arc`.
fn live_shared() -> Arc<SharedBreaker<(), LivePolicy>> {
    Arc::new(SharedBreaker::with_policy(LivePolicy::new(POLICY)))
}

/// A shared breaker with a count window.
fn windowed() -> &'static SharedBreaker<Windowed<breaker_core::CallWindow>> {
    Box::leak(Box::new(SharedBreaker::windowed(&WINDOW_POLICY, Windowed::calls(()))))
}

macro_rules! rows {
    ($kind:ident, $make:expr) => {
        mod $kind {
            use super::*;

            #[test]
            fn ladder() {
                let (clock, reached) = cell();
                check(
                    concat!("ladder x ", stringify!($kind)),
                    &super::ladder($make, clock, reached, &|| ()),
                    reached,
                );
            }

            #[test]
            fn tower_layer() {
                let (clock, reached) = cell();
                check(
                    concat!("tower x ", stringify!($kind)),
                    &super::tower_layer($make, clock, reached, &|| ()),
                    reached,
                );
            }

            #[test]
            fn guarded() {
                let (clock, reached) = cell();
                check(
                    concat!("guarded x ", stringify!($kind)),
                    &super::guarded($make, clock, reached, &|| ()),
                    reached,
                );
            }

            #[test]
            fn router_tool() {
                let (clock, reached) = cell();
                let b = $make;
                check(
                    concat!("router tool x ", stringify!($kind)),
                    &super::router_tool(&*b, clock, reached, &|| ()),
                    reached,
                );
            }

            #[test]
            fn quota_guard() {
                let (clock, reached) = cell();
                check(
                    concat!("quota guard x ", stringify!($kind)),
                    &super::quota_guard($make, clock, reached, &|| ()),
                    reached,
                );
            }
        }
    };
}

rows!(static_shared_breaker, static_shared());
rows!(owned_policy_shared_breaker_in_an_arc, owned_shared());
rows!(windowed_shared_breaker, windowed());
rows!(live_policy_shared_breaker_in_an_arc, live_shared());

/// The fallback chain's primary: its breaker is the chain's own (it observes every
/// transition to route the backups), static or owning its policy. A turn the primary's
/// breaker refuses goes to the backup instead, which serves it: `Got::Refused` here means
/// "not sent to the primary".
fn chain_primary<P: breaker_core::PolicyStore>(
    chain: &FallbackChain<1, (), P>,
    clock: &ManualClock,
    reached: &AtomicU32,
) -> Run {
    script(clock, |up| {
        let to_primary = std::cell::Cell::new(false);
        let r = chain.call(clock, |route| match route {
            Route::Primary { .. } => {
                to_primary.set(true);
                upstream(reached, up)
            }
            Route::Backup { .. } => Ok(()),
            other => panic!("a turn routed to {other:?}"),
        });
        let got = match (to_primary.get(), r) {
            (false, Ok(())) => Got::Refused,
            (true, Ok(())) => Got::Ok,
            (true, Err(_)) => Got::Failed,
            (false, Err(e)) => panic!("the backup failed: {e:?}"),
        };
        let b = chain.breaker();
        (got, (b.state(breaker_core::Clock::now(clock)).phase(), b.counters()))
    })
}

mod chain_primary {
    use super::*;

    #[test]
    fn static_shared_breaker() {
        let (clock, reached) = cell();
        static CHAIN: FallbackChain<1> = FallbackChain::new(&POLICY, "primary", [Backup::new("backup")]);
        check(
            "chain primary x static",
            &chain_primary(&CHAIN, clock, reached),
            reached,
        );
    }

    #[test]
    fn owned_policy_in_an_arc() {
        let (clock, reached) = cell();
        let chain = Arc::new(FallbackChain::with_policy(POLICY, "primary", [Backup::new("backup")]));
        check(
            "chain primary x owned policy",
            &chain_primary(&chain, clock, reached),
            reached,
        );
    }

    #[test]
    fn live_policy() {
        let (clock, reached) = cell();
        let chain = FallbackChain::with_policy(LivePolicy::new(POLICY), "primary", [Backup::new("backup")]);
        check(
            "chain primary x live policy",
            &chain_primary(&chain, clock, reached),
            reached,
        );
    }
}

/// The single-owner `Breaker`: every row but the tower layer, whose services are clones
/// (a `Breaker` is not `Clone`: each clone would be a breaker of its own).
mod breaker {
    use super::*;

    #[test]
    fn ladder() {
        let (clock, reached) = cell();
        check(
            "ladder x Breaker",
            &super::ladder(Breaker::new(POLICY), clock, reached, &|| ()),
            reached,
        );
    }

    #[test]
    fn ladder_by_mut() {
        let (clock, reached) = cell();
        let mut b = Breaker::new(POLICY);
        check(
            "ladder x &mut Breaker",
            &super::ladder(&mut b, clock, reached, &|| ()),
            reached,
        );
        assert_eq!(b.counters().probes, 1);
    }

    #[test]
    fn guarded() {
        let (clock, reached) = cell();
        check(
            "guarded x Breaker",
            &super::guarded(Breaker::new(POLICY), clock, reached, &|| ()),
            reached,
        );
    }

    #[test]
    fn quota_guard() {
        let (clock, reached) = cell();
        check(
            "quota guard x Breaker",
            &super::quota_guard(Breaker::new(POLICY), clock, reached, &|| ()),
            reached,
        );
    }
}

/// An annotated function's breaker, through its registry entry: the composites call the
/// function, whose own gate decides and counts (the entry gates itself), so each outcome
/// counts once and the function gets its own probe.
mod annotated_function {
    use super::*;

    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    static REACHED: AtomicU32 = AtomicU32::new(0);

    /// The function's error: the upstream's, or its own breaker's refusal (neutral).
    #[derive(Debug)]
    enum FetchError {
        Down,
        Refused,
    }

    impl From<breaker_core::Refused> for FetchError {
        fn from(_: breaker_core::Refused) -> Self {
            FetchError::Refused
        }
    }

    impl Classify for FetchError {
        fn verdict(&self) -> breaker_core::Verdict {
            match self {
                FetchError::Down => breaker_core::Verdict::Strike,
                FetchError::Refused => breaker_core::Verdict::Neutral,
            }
        }
    }

    #[circuit_breaker(name = "composition/fetch", trip = 2, cooldown = "10s", clock = CLOCK)]
    fn fetch(up: bool) -> Result<(), FetchError> {
        upstream(&REACHED, up).map_err(|Down| FetchError::Down)
    }

    /// The function's result, its own refusal included.
    fn got_nested(r: Result<(), CallError<FetchError>>) -> Got {
        match r {
            Ok(()) => Got::Ok,
            Err(CallError::Refused(_)) | Err(CallError::Inner(FetchError::Refused)) => Got::Refused,
            Err(CallError::Inner(FetchError::Down)) => Got::Failed,
        }
    }

    #[test]
    fn ladder_and_entry() {
        let entry = registry::get("composition/fetch").unwrap();
        assert!(CircuitBreaker::gates_itself(&entry));
        let mut gate = entry;
        let run = script(&CLOCK, |up| {
            let r = ONCE.ladder(&mut gate, &CLOCK).call(|| fetch(up));
            (got_nested(r.result), (entry.state().phase(), entry.counters()))
        });
        check("ladder x annotated function", &run, &REACHED);
    }
}

/// A breaker shared by replicas through the real Redis the test command starts: a
/// `RedisBreaker` (a cloneable handle) and `&RedisBreaker`, on the replicas' shared time
/// (a manual clock here, given to the link).
mod redis_shared_breaker {
    use super::*;
    use breaker_redis::{Config, RedisBreaker, RedisLink};
    use tests::redis_server::{shared_url, unique_key};

    /// A link whose shared time is `clock`, and one breaker on a fresh key.
    fn breaker(test: &str, clock: &'static ManualClock) -> Option<(RedisLink, RedisBreaker)> {
        let url = shared_url(test)?;
        // Generous timeouts: the machine running the tests is shared and loaded.
        let config = Config::new()
            .timeout(std::time::Duration::from_secs(2))
            .shared_clock(clock)
            .log(|e| eprintln!("test link: {e}"));
        let link = RedisLink::open(url.as_str(), config).expect("a valid URL");
        let b = link.breaker(unique_key(test), &POLICY);
        assert!(b.is_shared(), "{test}: the link reached Redis");
        Some((link, b))
    }

    /// Every outcome handed to the link has landed in Redis, and the link has read Redis
    /// since.
    fn settle(link: &RedisLink) {
        link.refresh();
        link.refresh();
    }

    #[test]
    fn ladder() {
        let (clock, reached) = cell();
        let Some((link, b)) = breaker("composition_redis_ladder", clock) else {
            return;
        };
        check(
            "ladder x RedisBreaker",
            &super::ladder(&b, clock, reached, &|| settle(&link)),
            reached,
        );
    }

    #[test]
    fn tower_layer() {
        let (clock, reached) = cell();
        let Some((link, b)) = breaker("composition_redis_tower", clock) else {
            return;
        };
        check(
            "tower x RedisBreaker",
            &super::tower_layer(b, clock, reached, &|| settle(&link)),
            reached,
        );
    }

    #[test]
    fn router_tool() {
        let (clock, reached) = cell();
        let Some((link, b)) = breaker("composition_redis_router", clock) else {
            return;
        };
        check(
            "router tool x RedisBreaker",
            &super::router_tool(&b, clock, reached, &|| settle(&link)),
            reached,
        );
    }

    #[test]
    fn guarded() {
        let (clock, reached) = cell();
        let Some((link, b)) = breaker("composition_redis_guarded", clock) else {
            return;
        };
        check(
            "guarded x RedisBreaker",
            &super::guarded(b, clock, reached, &|| settle(&link)),
            reached,
        );
    }
}

#[test]
fn an_attempt_shows_whether_it_is_the_probe() {
    let clock = ManualClock::new(Instant::ZERO);
    let mut b = Breaker::new(Policy::new(2, Duration::from_secs(10)));
    let closed = b.attempt(&clock).unwrap();
    assert_eq!(format!("{closed:?}"), "Attempt { probe: false }");
    closed.record(breaker_core::Outcome::TRIP);
    clock.advance(Duration::from_secs(10));
    let probe = b.attempt(&clock).unwrap();
    assert_eq!(format!("{probe:?}"), "Attempt { probe: true }");
    probe.record(breaker_core::Outcome::Success);
}

/// The trait's oracles, as the composites' generic code reads them, answer alike for a
/// kind, through a `&mut` to it, and for a kind on the trait's defaults (the keyed map's
/// entry): whether a call would be allowed (closed, then tripped through the handle),
/// whether it is shadowed, and whether its counters count every call.
#[test]
fn the_trait_s_oracles_answer_alike_through_every_handle() {
    fn oracles<B: CircuitBreaker>(b: &B, clock: &ManualClock) -> (bool, bool, bool) {
        (b.would_allow(clock), b.is_shadow(), b.counts_calls())
    }
    let clock = ManualClock::new(Instant::ZERO);
    let hold = Duration::from_secs(60);

    // The single-owner breaker counts every call, whatever its policy.
    let mut single = Breaker::new(Policy::new(2, Duration::from_secs(10)));
    assert_eq!(oracles(&single, &clock), (true, false, true));
    assert_eq!(oracles(&&mut single, &clock), (true, false, true));
    CircuitBreaker::trip(&mut &mut single, breaker_core::Reason::Strikes, hold, &clock);
    assert_eq!(oracles(&single, &clock), (false, false, true));
    assert_eq!(oracles(&&mut single, &clock), (false, false, true));
    single.set_shadow(true);
    assert!(single.is_shadow() && oracles(&&mut single, &clock).1);

    // The keyed map's entry keeps the trait's defaults.
    for (policy, counting) in [
        (Policy::new(2, Duration::from_secs(10)), false),
        (Policy::new(2, Duration::from_secs(10)).counting_calls(), true),
    ] {
        let map = breaker_core::keyed::KeyedBreakerMap::new(std::num::NonZeroUsize::new(4).unwrap(), policy).unwrap();
        let mut entry = map.entry("upstream");
        assert_eq!(oracles(&entry, &clock), (true, false, counting));
        assert_eq!(oracles(&&mut entry, &clock), (true, false, counting));
        entry.trip(breaker_core::Reason::Strikes, hold, &clock);
        assert_eq!(oracles(&entry, &clock), (false, false, counting));
    }
}
