//! The replicas behind a bad network: a fault-injecting proxy (`tests/src/fault_proxy.rs`)
//! between one replica's link and Redis adds latency below and above the timeout, resets
//! the connections, swallows every request (a blackhole), loses the replies of requests
//! Redis runs, or cuts a reply mid-frame. A second replica stays directly on Redis.
//!
//! For each fault: no call waits past `Config::timeout` plus a margin for a loaded host
//! (every call is timed; the worst wait is reported), no call fails because of the
//! network, the faulted replica's breaker keeps deciding (locally when it cannot reach
//! Redis), the outage is reported once, and when the network is clean again the replica
//! joins Redis with its local history (`Resync::Pushed`: nobody else moved; a write of its
//! own that ran in Redis without an answer does not count as a move), after which both
//! replicas agree with Redis's word.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_core::{CallError, Classify, Duration, Instant, ManualClock, Phase, Policy, State};
use breaker_redis::{value, Config, LinkEvent, RedisBreaker, RedisLink, Resync};
use redis::Commands;
use tests::fault_proxy::{Fault, FaultProxy};
use tests::redis_server::{shared_url, unique_key, url_port};

#[derive(Debug)]
struct Down;
impl Classify for Down {}

/// The links' timeout where the fault sends the replica apart.
const TIMEOUT: StdDuration = StdDuration::from_millis(200);
/// The timeout where the latency stays below it: generous, so that a loaded host that
/// stretches the round trip does not send the replica apart.
const PATIENT: StdDuration = StdDuration::from_secs(5);
/// What a call may wait past the timeout before it counts as held by the network: the
/// thread scheduling of a loaded host, many times over (the worst wait is reported).
const MARGIN: StdDuration = StdDuration::from_secs(2);
/// The longest any wait of the test itself may take before it counts as a hang.
const HANG: StdDuration = StdDuration::from_secs(60);

/// Two strikes trip it for a second; a probe slot not answered stays taken for the whole
/// test (its lease is ten minutes), so a probe granted to nobody would show.
static POLICY: Policy = Policy::new(2, Duration::from_secs(1)).with_probe_lease(Duration::from_secs(600));

type Events = Arc<Mutex<Vec<LinkEvent>>>;

/// A replica on the shared manual clock whose link reads Redis only when asked (no
/// refresh or reconnection of its own races the test's steps), with its reports kept.
fn replica(url: &str, clock: &'static ManualClock, timeout: StdDuration) -> (RedisLink, Events) {
    let events: Events = Arc::default();
    let kept = events.clone();
    let config = Config::new()
        .timeout(timeout)
        .refresh(StdDuration::from_secs(3600))
        .retry(StdDuration::from_secs(3600))
        .shared_clock(clock)
        .log(move |e| {
            eprintln!("test link: {e}");
            kept.lock().unwrap().push(e.clone());
        });
    (RedisLink::open(url, config).expect("a valid URL"), events)
}

fn count(events: &Events, pred: impl Fn(&LinkEvent) -> bool) -> usize {
    events.lock().unwrap().iter().filter(|e| pred(e)).count()
}

fn settle(links: &[&RedisLink]) {
    for _ in 0..2 {
        for l in links {
            l.refresh();
        }
    }
}

/// Waits until `l` has lost its connection.
fn until_down(l: &RedisLink) {
    let down = StdInstant::now();
    while l.is_connected() {
        assert!(down.elapsed() < HANG, "the link never noticed");
        std::thread::sleep(StdDuration::from_millis(5));
    }
}

fn fail(b: &RedisBreaker) -> Result<(), CallError<Down>> {
    b.call(|| Err::<(), _>(Down))
}

fn ok(b: &RedisBreaker) -> Result<(), CallError<Down>> {
    b.call(|| Ok::<(), Down>(()))
}

/// Every call of the faulted replica, timed.
#[derive(Default)]
struct Waits {
    calls: u32,
    worst: StdDuration,
}

impl Waits {
    fn time<T>(&mut self, call: impl FnOnce() -> T) -> T {
        let started = StdInstant::now();
        let out = call();
        self.calls += 1;
        self.worst = self.worst.max(started.elapsed());
        out
    }
}

/// Runs the scenario through `fault`; `reaches_redis` says whether the faulted replica
/// still gets answers within the timeout (then it never goes apart; its timeout is then
/// [`PATIENT`], otherwise [`TIMEOUT`]).
fn through(test: &str, fault: Fault, reaches_redis: bool, clock: &'static ManualClock) {
    let timeout = if reaches_redis { PATIENT } else { TIMEOUT };
    let Some(url) = shared_url(test) else {
        return;
    };
    let port = url_port(&url).expect("a loopback URL with a port");
    let proxy = FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port)));
    let key = unique_key(test);
    let (a, a_events) = replica(&proxy.url(), clock, timeout);
    let (b, b_events) = replica(&url, clock, PATIENT);
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    assert!(ra.is_shared() && rb.is_shared());

    // The healthy replica trips the shared breaker; both see it; the cooldown runs out, so
    // a's next call is a gate transition, which asks Redis through the proxy.
    let _ = fail(&rb);
    let _ = fail(&rb);
    settle(&[&a, &b]);
    let open = State::Open {
        remaining: Duration::from_secs(1),
        forced: false,
    };
    assert_eq!((ra.state(), rb.state()), (open, open));
    clock.advance(Duration::from_secs(1));

    proxy.set(fault);
    let mut waits = Waits::default();
    let probe = waits
        .time(|| ra.try_acquire())
        .expect("the gate lets the probe through");
    assert!(probe.is_probe());
    assert_eq!(
        probe.is_local(),
        !reaches_redis,
        "{fault:?}: decided by {}",
        if probe.is_local() { "the local breaker" } else { "Redis" }
    );
    if !reaches_redis {
        // The link's own round trip fails too (or already did): the outage is reported once.
        // (The link marks itself disconnected before it reports the outage: wait for the
        // report, not only for the flag.)
        let down = StdInstant::now();
        let unreachable = || count(&a_events, |e| matches!(e, LinkEvent::Unreachable { .. }));
        while a.is_connected() || unreachable() == 0 {
            assert!(down.elapsed() < HANG, "{fault:?}: the link never gave up");
            std::thread::sleep(StdDuration::from_millis(5));
        }
        assert_eq!(unreachable(), 1);
        // Trying Redis again through the fault fails within the timeout too, and is not
        // reported again.
        a.refresh();
        assert!(!ra.is_shared());
        assert_eq!(count(&a_events, |e| matches!(e, LinkEvent::Unreachable { .. })), 1);
    }
    // While the probe is out, the others are refused at once; its answer closes the
    // breaker (a's own, or the shared one once it has landed), and calls go through.
    for _ in 0..100 {
        assert!(matches!(waits.time(|| ok(&ra)), Err(CallError::Refused(_))));
    }
    waits.time(|| probe.success());
    if reaches_redis {
        a.refresh();
    }
    assert_eq!(ra.phase(), Phase::Closed);
    for _ in 0..1_000 {
        waits.time(|| ok(&ra)).expect("closed: the call goes through");
    }
    // And the breaker keeps counting: two strikes trip it again (on Redis's word, or on
    // a's own), a success after the cooldown's probe closes it.
    assert!(matches!(waits.time(|| fail(&ra)), Err(CallError::Inner(Down))));
    assert!(matches!(waits.time(|| fail(&ra)), Err(CallError::Inner(Down))));
    if reaches_redis {
        a.refresh();
    }
    assert!(matches!(waits.time(|| ok(&ra)), Err(CallError::Refused(_))));
    clock.advance(Duration::from_secs(1));
    let again = waits.time(|| ra.try_acquire()).expect("the next probe");
    assert_eq!(again.is_local(), !reaches_redis);
    waits.time(|| again.success());
    if reaches_redis {
        a.refresh();
    }
    assert_eq!(ra.phase(), Phase::Closed);

    eprintln!(
        "{fault:?}: {} calls, worst wait {:?} (timeout {timeout:?}), {} connections through the proxy",
        waits.calls,
        waits.worst,
        proxy.accepted()
    );
    assert!(
        waits.worst < timeout + MARGIN,
        "{fault:?}: a call waited {:?} (timeout {timeout:?})",
        waits.worst
    );

    // The network is clean again: a joins Redis with what it did meanwhile.
    proxy.set(Fault::None);
    let back = StdInstant::now();
    while !ra.is_shared() {
        assert!(back.elapsed() < HANG, "{fault:?}: never resynchronised");
        a.refresh();
    }
    settle(&[&a, &b]);
    let resyncs = count(&a_events, |e| matches!(e, LinkEvent::Resynchronised { .. }));
    if reaches_redis {
        assert_eq!(resyncs, 0, "{fault:?}: never apart");
        assert!(
            a_events.lock().unwrap().is_empty(),
            "{fault:?}: {:?}",
            a_events.lock().unwrap()
        );
    } else {
        assert_eq!(
            count(&a_events, |e| matches!(
                e,
                LinkEvent::Resynchronised {
                    how: Resync::Pushed,
                    ..
                }
            )),
            1,
            "{fault:?}: {:?}",
            a_events.lock().unwrap()
        );
    }
    assert!(
        b_events.lock().unwrap().is_empty(),
        "the healthy replica: {:?}",
        b_events.lock().unwrap()
    );
    assert_eq!((ra.phase(), rb.phase()), (Phase::Closed, Phase::Closed));
    let stored: Vec<u8> = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap()
        .get(&key)
        .unwrap();
    let word = value::decode(&stored, value::fingerprint(&POLICY)).unwrap();
    assert_eq!(
        (word, word),
        (ra.mirror().word(), rb.mirror().word()),
        "{fault:?}: all agree with Redis"
    );
    ok(&rb).unwrap();
}

#[test]
fn latency_below_the_timeout_is_waited_for() {
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(10_000));
    through(
        "latency_below_the_timeout_is_waited_for",
        Fault::Latency(StdDuration::from_millis(50)),
        true,
        &CLOCK,
    );
}

#[test]
fn a_new_breaker_waits_for_its_first_read_of_redis_behind_a_slow_network() {
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(10_000));
    let test = "a_new_breaker_waits_for_its_first_read_of_redis_behind_a_slow_network";
    let Some(url) = shared_url(test) else {
        return;
    };
    let port = url_port(&url).expect("a loopback URL with a port");
    let proxy = FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port)));
    // Each reply held 400 ms, under the timeout of 1 s: a new breaker's connection and
    // first read (two round trips, each bounded by the timeout) take 800 ms or more, and
    // `breaker` waits for them (three timeouts at most), so the breaker it hands back
    // follows Redis already.
    proxy.set(Fault::Latency(StdDuration::from_millis(400)));
    let (l, _) = replica(&proxy.url(), &CLOCK, StdDuration::from_secs(1));
    let created = StdInstant::now();
    let b = l.breaker(unique_key(test), &POLICY);
    let waited = created.elapsed();
    assert!(b.is_shared(), "handed back apart after {waited:?}");
    assert!(waited >= StdDuration::from_millis(800), "{waited:?}");
    assert!(l.is_connected());
    assert!(format!("{l:?}").starts_with("RedisLink { connected: true, config: Config { timeout: 1s"));
}

#[test]
fn an_unreachable_redis_is_tried_again_at_the_retry_interval_not_the_refresh_one() {
    let test = "an_unreachable_redis_is_tried_again_at_the_retry_interval_not_the_refresh_one";
    let Some(url) = shared_url(test) else {
        return;
    };
    let port = url_port(&url).expect("a loopback URL with a port");
    let proxy = FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port)));
    // Read every 20 ms while connected; tried again after an hour once unreachable.
    let config = Config::new()
        .timeout(TIMEOUT)
        .refresh(StdDuration::from_millis(20))
        .retry(StdDuration::from_secs(3600))
        .log(|e| eprintln!("test link: {e}"));
    let l = RedisLink::open(proxy.url().as_str(), config).unwrap();
    let b = l.breaker(unique_key(test), &POLICY);
    assert!(b.is_shared());
    // Every connection is reset from now on: the link's next read fails and it goes down.
    proxy.set(Fault::Reset);
    until_down(&l);
    // It does not try again for the retry interval: no connection in 300 ms (at the
    // refresh interval it would have made about 15).
    let tries = proxy.accepted();
    std::thread::sleep(StdDuration::from_millis(300));
    assert_eq!(proxy.accepted(), tries, "tried again before the retry interval");
    assert!(!b.is_shared());
    // A refresh asks at once, and finds the network clean again.
    proxy.set(Fault::None);
    l.refresh();
    assert!(proxy.accepted() > tries);
    assert!(l.is_connected() && b.is_shared());

    // The same when a call's write meets the fault (the link reads only when asked here):
    // no attempt before the retry interval either.
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(10_000));
    let (q, _) = replica(&proxy.url(), &CLOCK, TIMEOUT);
    let qb = q.breaker(unique_key(test), &POLICY);
    assert!(qb.is_shared());
    proxy.set(Fault::Reset);
    let tries = proxy.accepted();
    let _ = fail(&qb);
    until_down(&q);
    std::thread::sleep(StdDuration::from_millis(300));
    assert_eq!(proxy.accepted(), tries, "tried again before the retry interval");
}

#[test]
fn latency_above_the_timeout_sends_the_replica_apart() {
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(10_000));
    through(
        "latency_above_the_timeout_sends_the_replica_apart",
        Fault::Latency(TIMEOUT * 3),
        false,
        &CLOCK,
    );
}

#[test]
fn reset_connections_send_the_replica_apart() {
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(10_000));
    through("reset_connections_send_the_replica_apart", Fault::Reset, false, &CLOCK);
}

#[test]
fn a_blackhole_sends_the_replica_apart() {
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(10_000));
    through("a_blackhole_sends_the_replica_apart", Fault::Blackhole, false, &CLOCK);
}

#[test]
fn replies_that_never_come_send_the_replica_apart() {
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(10_000));
    through(
        "replies_that_never_come_send_the_replica_apart",
        Fault::LoseReplies,
        false,
        &CLOCK,
    );
}

#[test]
fn replies_cut_mid_frame_send_the_replica_apart() {
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(10_000));
    through(
        "replies_cut_mid_frame_send_the_replica_apart",
        Fault::CutReplies,
        false,
        &CLOCK,
    );
}
