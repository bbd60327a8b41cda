//! Replicas sharing one breaker through a real Redis: a trip reaches the others within the
//! stated bound, every replica's strikes count, exactly one of them gets the probe, and the
//! closed-state path makes no round trip, and a half-open failure rate counts every
//! replica's probes. Each replica is a `RedisLink` of its own (its own
//! connection, thread and clock), as separate processes would have; `redis_processes.rs`
//! runs them as processes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_core::{CallError, Classify, Duration, Instant, ManualClock, Phase, Policy, State};
use breaker_redis::{Config, RedisBreaker, RedisLink};
use tests::redis_server::{shared_url, unique_key};

#[derive(Debug)]
struct Down;
impl Classify for Down {}

fn link(url: &str, config: Config) -> RedisLink {
    RedisLink::open(url, config).expect("a valid URL")
}

/// Generous timeouts: the machine running the tests is shared and loaded, and a gate
/// transition that waited past the timeout would be decided by the local breaker instead
/// of the shared one these tests are about. Redis never fails here, so no call waits long.
fn config() -> Config {
    Config::new()
        .timeout(StdDuration::from_secs(5))
        .refresh(StdDuration::from_millis(50))
        .log(|e| eprintln!("test link: {e}"))
}

/// Puts the replicas in step: every outcome handed to any link has landed in Redis, and
/// every link has read Redis since.
fn settle(links: &[&RedisLink]) {
    for _ in 0..2 {
        for l in links {
            l.refresh();
        }
    }
}

fn fail(b: &RedisBreaker) -> Result<(), CallError<Down>> {
    b.call(|| Err::<(), _>(Down))
}

fn ok(b: &RedisBreaker) -> Result<(), CallError<Down>> {
    b.call(|| Ok::<(), Down>(()))
}

#[test]
fn a_trip_by_one_replica_reaches_the_others_within_the_bound() {
    let Some(url) = shared_url("a_trip_by_one_replica_reaches_the_others_within_the_bound") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_secs(60));
    let key = unique_key("trip-bound");
    let config = config();
    let bound = config.trip_bound();
    let (a, b) = (link(&url, config.clone()), link(&url, config));
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    assert!(ra.is_shared() && rb.is_shared());
    assert!(rb.would_allow());

    assert!(matches!(fail(&ra), Err(CallError::Inner(Down))));
    a.refresh(); // the strike has landed in Redis: the trip happened now
    let tripped = StdInstant::now();
    while rb.would_allow() {
        assert!(
            tripped.elapsed() <= bound,
            "replica b still closed after {:?} (bound: Config::trip_bound = {bound:?})",
            tripped.elapsed()
        );
        std::thread::sleep(StdDuration::from_millis(1));
    }
    let seen = tripped.elapsed();
    eprintln!("the trip reached the other replica in {seen:?} (bound: Config::trip_bound = {bound:?})");
    assert_eq!(rb.phase(), Phase::Open);
    assert!(matches!(ok(&rb), Err(CallError::Refused(_))));
    // Seen by polling, not by a call of b's: b's counters show its refusal only.
    assert_eq!((rb.counters().trips, rb.counters().skips), (0, 1));
    assert_eq!(ra.counters().trips, 1);
}

#[test]
fn strikes_from_every_replica_count_toward_one_trip() {
    let Some(url) = shared_url("strikes_from_every_replica_count_toward_one_trip") else {
        return;
    };
    static POLICY: Policy = Policy::new(3, Duration::from_secs(60));
    let key = unique_key("strikes");
    let links: Vec<RedisLink> = (0..3).map(|_| link(&url, config())).collect();
    let replicas: Vec<RedisBreaker> = links.iter().map(|l| l.breaker(&key, &POLICY)).collect();
    // One strike each: no replica saw three, the shared breaker did.
    let all: Vec<&RedisLink> = links.iter().collect();
    for r in &replicas {
        assert!(matches!(fail(r), Err(CallError::Inner(Down))));
        settle(&all);
    }
    for r in &replicas {
        assert_eq!(r.phase(), Phase::Open, "{r:?}");
        assert_eq!(r.counters().failures, 1);
    }
    let trips: u32 = replicas.iter().map(|r| r.counters().trips).sum();
    assert_eq!(trips, 1, "one trip, made by the replica whose strike was the third");
}

#[test]
fn a_success_anywhere_clears_the_shared_strikes() {
    let Some(url) = shared_url("a_success_anywhere_clears_the_shared_strikes") else {
        return;
    };
    static POLICY: Policy = Policy::new(3, Duration::from_secs(60));
    let key = unique_key("clear");
    let (a, b) = (link(&url, config()), link(&url, config()));
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    let _ = fail(&ra);
    let _ = fail(&ra);
    settle(&[&a, &b]); // b learns of the two strikes, so its next success is sent
    ok(&rb).unwrap();
    settle(&[&a, &b]);
    let _ = fail(&ra);
    settle(&[&a, &b]);
    assert_eq!(ra.state(), breaker_core::State::Closed { strikes: 1 });
}

#[test]
fn exactly_one_probe_across_replicas_racing_for_it() {
    let Some(url) = shared_url("exactly_one_probe_across_replicas_racing_for_it") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_millis(30)).with_probe_lease(Duration::from_secs(30));
    let key = unique_key("one-probe");
    const REPLICAS: usize = 3;
    const THREADS: usize = 3;
    const WINDOWS: usize = 10;
    let links: Vec<Arc<RedisLink>> = (0..REPLICAS).map(|_| Arc::new(link(&url, config()))).collect();
    let replicas: Vec<RedisBreaker> = links.iter().map(|l| l.breaker(&key, &POLICY)).collect();
    for window in 0..WINDOWS {
        // Trip it, let every replica see it, then race 9 threads for the probe.
        let _ = fail(&replicas[window % REPLICAS]);
        settle(&links.iter().map(|l| &**l).collect::<Vec<_>>());
        for r in &replicas {
            assert_eq!(r.phase(), Phase::Open, "window {window}");
        }
        std::thread::sleep(StdDuration::from_millis(40)); // the cooldown is over everywhere
        let probes = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(REPLICAS * THREADS));
        let tried = Arc::new(Barrier::new(REPLICAS * THREADS));
        let handles: Vec<_> = (0..REPLICAS * THREADS)
            .map(|i| {
                let r = replicas[i % REPLICAS].clone();
                let (probes, start, tried) = (probes.clone(), start.clone(), tried.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let permit = r.try_acquire();
                    // Hold the probe until every thread has tried (however late a loaded
                    // host runs it), then report a success: the breaker closes for the
                    // next window.
                    tried.wait();
                    if let Ok(p) = permit {
                        assert!(p.is_probe(), "half-open admits only the probe");
                        assert!(!p.is_local(), "Redis was up: the shared breaker decided");
                        probes.fetch_add(1, Ordering::SeqCst);
                        p.success();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            probes.load(Ordering::SeqCst),
            1,
            "window {window}: one probe across all replicas"
        );
        settle(&links.iter().map(|l| &**l).collect::<Vec<_>>());
        for r in &replicas {
            assert_eq!(r.phase(), Phase::Closed, "window {window}");
        }
    }
    let granted: u32 = replicas.iter().map(|r| r.counters().probes).sum();
    assert_eq!(granted as usize, WINDOWS);
}

#[test]
fn the_closed_path_makes_no_round_trip() {
    let Some(url) = shared_url("the_closed_path_makes_no_round_trip") else {
        return;
    };
    static POLICY: Policy = Policy::new(3, Duration::from_secs(60));
    let key = unique_key("closed-path");
    // No polling during the test: only calls could make round trips.
    let l = link(&url, config().refresh(StdDuration::from_secs(3600)));
    let r = l.breaker(&key, &POLICY);
    l.refresh();
    let before = l.round_trips();
    for _ in 0..100_000 {
        ok(&r).unwrap();
    }
    assert_eq!(l.round_trips(), before, "closed-state calls made round trips");
    // So do calls through a permit, answered with a success.
    for _ in 0..1_000 {
        r.try_acquire().unwrap().success();
    }
    l.refresh();
    assert_eq!(l.round_trips(), before + 1, "closed-state permits made round trips");
    // A strike changes the word: one compare-and-swap.
    let _ = fail(&r);
    l.refresh();
    assert_eq!(
        l.round_trips(),
        before + 3,
        "the permits' refresh, then one swap for the strike and one read for this refresh"
    );
}

#[test]
fn a_key_deleted_under_a_shared_breaker_is_put_back_at_its_next_write() {
    let Some(url) = shared_url("a_key_deleted_under_a_shared_breaker_is_put_back_at_its_next_write") else {
        return;
    };
    static POLICY: Policy = Policy::new(3, Duration::from_secs(60));
    let key = unique_key("deleted");
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = events.clone();
    let l = link(
        &url,
        config()
            .refresh(StdDuration::from_secs(3600))
            .log(move |e| kept.lock().unwrap().push(e.to_string())),
    );
    let r = l.breaker(&key, &POLICY);
    let _ = fail(&r);
    l.refresh();
    assert_eq!(r.state(), State::Closed { strikes: 1 });
    // The key is deleted behind the replica's back (a flush, an operator): its next write
    // finds it absent, puts back the word it follows and steps on it. Nothing is reported
    // as a bad value, and the replica stays shared.
    let mut con = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("DEL").arg(&key).query(&mut con).unwrap();
    let _ = fail(&r);
    l.refresh();
    assert!(r.is_shared());
    assert_eq!(r.state(), State::Closed { strikes: 2 });
    assert_eq!(*events.lock().unwrap(), Vec::<String>::new(), "reported");
    let stored: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut con).unwrap();
    assert_eq!(
        breaker_redis::value::decode(&stored, breaker_redis::value::fingerprint(&POLICY)).unwrap(),
        r.mirror().word()
    );
}

#[test]
fn async_calls_share_the_breaker() {
    let Some(url) = shared_url("async_calls_share_the_breaker") else {
        return;
    };
    static POLICY: Policy = Policy::new(2, Duration::from_millis(50));
    // The cooldown runs on a shared manual clock: a loaded host that takes longer than it
    // to settle the replicas must not end it early.
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(1_000));
    let key = unique_key("async");
    let (a, b) = (
        link(&url, config().shared_clock(&CLOCK)),
        link(&url, config().shared_clock(&CLOCK)),
    );
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let _ = ra.call_async(async { Err::<(), _>(Down) }).await;
        let _ = rb.call_async(async { Err::<(), _>(Down) }).await;
        settle(&[&a, &b]);
        assert!(matches!(
            ra.call_async(async { Ok::<_, Down>(()) }).await,
            Err(CallError::Refused(_))
        ));
        CLOCK.advance(Duration::from_millis(50));
        // The cooldown is over: the async gate awaits Redis for the probe.
        let p = rb.acquire_async().await.unwrap();
        assert!(p.is_probe() && !p.is_local());
        assert!(
            ra.acquire_async().await.is_err(),
            "the other replica is refused while the probe is out"
        );
        p.success();
        settle(&[&a, &b]);
        assert_eq!(ra.phase(), Phase::Closed);
    });
}

#[test]
fn a_replica_that_dies_holding_the_probe_does_not_wedge_the_others() {
    let Some(url) = shared_url("a_replica_that_dies_holding_the_probe_does_not_wedge_the_others") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_millis(30)).with_probe_lease(Duration::from_millis(100));
    // The replicas' shared time is a manual clock: the lease runs out when the test says,
    // not when a loaded host happens to be slow.
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(1_000));
    let key = unique_key("dead-probe");
    let (a, b) = (
        link(&url, config().shared_clock(&CLOCK)),
        link(&url, config().shared_clock(&CLOCK)),
    );
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    let _ = fail(&ra);
    settle(&[&a, &b]);
    CLOCK.advance(Duration::from_millis(30));
    let probe = ra.try_acquire().expect("a takes the probe");
    assert!(probe.is_probe() && !probe.is_local());
    // Replica a dies with the probe out: nothing is ever reported.
    std::mem::forget(probe);
    drop((ra, a));
    b.refresh();
    CLOCK.advance(Duration::from_millis(99));
    assert!(rb.try_acquire().is_err(), "the probe slot is taken");
    // Past the lease (and the cooldown after it), b's gate finds the lease run out in the
    // shared word, re-opens it backdated to the lease's end, and takes the next probe.
    CLOCK.advance(Duration::from_millis(1 + 30));
    let next = rb.try_acquire().expect("not wedged");
    assert!(next.is_probe() && !next.is_local());
    assert_eq!(rb.counters().lease_expiries, 1);
    next.success();
    b.refresh();
    assert_eq!(rb.phase(), Phase::Closed);
}

#[test]
fn probes_from_every_replica_count_toward_one_half_open_rate() {
    let Some(url) = shared_url("probes_from_every_replica_count_toward_one_half_open_rate") else {
        return;
    };
    // Half-open: 4 probes, re-open at 50 % (2 failures), close at 3 successes.
    static POLICY: Policy = Policy::new(1, Duration::from_millis(30))
        .with_probe_lease(Duration::from_secs(30))
        .with_half_open_rate(4, 50);
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(1_000));
    let key = unique_key("half-open-rate");
    let (a, b) = (
        link(&url, config().shared_clock(&CLOCK)),
        link(&url, config().shared_clock(&CLOCK)),
    );
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    let probe = |r: &RedisBreaker, strike: bool| {
        let p = r.try_acquire().expect("the probe slot is free");
        assert!(p.is_probe() && !p.is_local());
        if strike {
            p.failure(breaker_core::Verdict::Strike);
        } else {
            p.success();
        }
        settle(&[&a, &b]);
    };
    let _ = fail(&ra);
    settle(&[&a, &b]);
    // One failed probe from each replica: 2 of 4, the shared breaker re-opens.
    CLOCK.advance(Duration::from_millis(30));
    probe(&ra, true);
    assert_eq!(rb.phase(), Phase::HalfOpen, "one failure of four is below the rate");
    probe(&rb, true);
    assert_eq!((ra.phase(), rb.phase()), (Phase::Open, Phase::Open));
    // Three successes and a failure, taken in turns: 1 of 4 is below 50 %, closed.
    CLOCK.advance(Duration::from_millis(30));
    probe(&ra, false);
    probe(&rb, true);
    probe(&ra, false);
    assert_eq!(
        rb.state(),
        breaker_core::State::HalfOpen {
            probing: false,
            streak: 2
        }
    );
    probe(&rb, false);
    assert_eq!((ra.phase(), rb.phase()), (Phase::Closed, Phase::Closed));
    let failed: u32 = [&ra, &rb].iter().map(|r| r.counters().probe_failures).sum();
    assert_eq!(failed, 3);
}
