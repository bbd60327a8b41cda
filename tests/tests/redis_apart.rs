//! A replica apart from Redis: unreachable, paused (slow), or holding a value it must not
//! obey. Calls never wait on it past the timeout and never fail because of it; the local
//! breaker carries on, each event is reported once, and the replica joins Redis again
//! when it can, with no second probe from the meeting.

use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_core::{CallError, Classify, Duration, Observer, Phase, Policy, Reason, RefusalReason, State, Transition};
use breaker_redis::{value, Config, LinkEvent, RedisBreaker, RedisLink, Resync, ValueError};
use redis::Commands;
use tests::redis_server::{server_binary, shared_url, unique_key, RedisServer};

#[derive(Debug)]
struct Down;
impl Classify for Down {}

type Events = Arc<Mutex<Vec<LinkEvent>>>;

/// The timeout of the paused-server test's link.
const TIMEOUT_MS: u64 = 200;

/// What a call may wait past the timeout before it counts as held by Redis: the thread
/// scheduling of a loaded host, many times over (the wait is reported either way).
const MARGIN: StdDuration = StdDuration::from_secs(2);

/// The longest any wait of these tests may take before it counts as a hang.
const HANG: StdDuration = StdDuration::from_secs(60);

/// A link whose reports are kept, and that reads Redis only when asked (`refresh`, a gate
/// transition, an outcome to swap in): no refresh or reconnection of its own races the
/// test's steps (which replica meets a restarted Redis first, whether the link or a call
/// finds a paused one first), so each step is the test's, on a host however loaded.
fn link(url: &str, timeout_ms: u64) -> (RedisLink, Events) {
    let events: Events = Arc::default();
    let kept = events.clone();
    let config = Config::new()
        .timeout(StdDuration::from_millis(timeout_ms))
        .refresh(StdDuration::from_secs(3600))
        .retry(StdDuration::from_secs(3600))
        .log(move |e| {
            eprintln!("test link: {e}");
            kept.lock().unwrap().push(e.clone());
        });
    (RedisLink::open(url, config).expect("a valid URL"), events)
}

fn fail(b: &RedisBreaker) -> Result<(), CallError<Down>> {
    b.call(|| Err::<(), _>(Down))
}

fn ok(b: &RedisBreaker) -> Result<(), CallError<Down>> {
    b.call(|| Ok::<(), Down>(()))
}

fn count(events: &Events, pred: impl Fn(&LinkEvent) -> bool) -> usize {
    events.lock().unwrap().iter().filter(|e| pred(e)).count()
}

/// How many times the link reported a resynchronisation of this kind.
fn resyncs(events: &Events, how: Resync) -> usize {
    count(
        events,
        |e| matches!(e, LinkEvent::Resynchronised { how: h, .. } if *h == how),
    )
}

fn raw(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// Refreshes `l` until `b` follows Redis again.
fn rejoin(l: &RedisLink, b: &RedisBreaker) {
    let back = StdInstant::now();
    while !b.is_shared() {
        assert!(back.elapsed() < HANG, "never resynchronised");
        l.refresh();
    }
}

/// Waits until `b`'s link has given up on a frozen Redis and `b` decides locally.
fn until_apart(b: &RedisBreaker) {
    let frozen = StdInstant::now();
    while b.is_shared() {
        assert!(frozen.elapsed() < HANG, "the link never gave up on a frozen Redis");
        std::thread::sleep(StdDuration::from_millis(5));
    }
}

#[test]
fn an_unreachable_redis_leaves_a_working_local_breaker_and_one_report() {
    static POLICY: Policy = Policy::new(3, Duration::from_millis(100));
    // A loopback port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (l, events) = link(&format!("redis://127.0.0.1:{port}/"), 200);
    let b = l.breaker("breaker-test:unreachable", &POLICY);
    assert!(!b.is_shared() && !l.is_connected());
    let started = StdInstant::now();
    for _ in 0..1_000 {
        ok(&b).unwrap();
    }
    for _ in 0..3 {
        assert!(matches!(fail(&b), Err(CallError::Inner(Down))));
    }
    assert!(
        matches!(ok(&b), Err(CallError::Refused(_))),
        "the local breaker tripped"
    );
    std::thread::sleep(StdDuration::from_millis(110));
    let probe = b.try_acquire().expect("the local breaker grants the probe");
    assert!(probe.is_probe() && probe.is_local());
    probe.success();
    assert_eq!(b.phase(), Phase::Closed);
    // Had each of these 1,005 calls waited the link's timeout, they would have taken
    // minutes.
    assert!(started.elapsed() < HANG / 6, "calls waited on an unreachable Redis");
    l.refresh();
    l.refresh();
    assert_eq!(
        count(&events, |e| matches!(e, LinkEvent::Unreachable { .. })),
        1,
        "reported once"
    );
    assert_eq!(b.counters().trips, 1);
}

/// The transitions an observer was told of: from, to, why.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(Phase, Phase, Reason)>>>);

impl Observer for Seen {
    fn on_transition(&self, t: &Transition) {
        self.0.lock().unwrap().push((t.from, t.to, t.why));
    }
}

#[test]
fn the_observer_given_to_a_breaker_apart_hears_its_transitions() {
    static POLICY: Policy = Policy::new(2, Duration::from_millis(100));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (l, _events) = link(&format!("redis://127.0.0.1:{port}/"), 200);
    let seen = Seen::default();
    let b = l.breaker_with_observer("breaker-test:observed", &POLICY, seen.clone());
    assert!(!b.is_shared());
    for _ in 0..2 {
        assert!(matches!(fail(&b), Err(CallError::Inner(Down))));
    }
    std::thread::sleep(StdDuration::from_millis(110));
    ok(&b).unwrap();
    assert_eq!(b.phase(), Phase::Closed);
    assert_eq!(
        *seen.0.lock().unwrap(),
        [
            (Phase::Closed, Phase::Open, Reason::Strikes),
            (Phase::Open, Phase::HalfOpen, Reason::CooldownElapsed),
            (Phase::HalfOpen, Phase::Closed, Reason::Recovered),
        ]
    );
}

#[test]
fn a_paused_redis_never_holds_a_call_past_the_timeout() {
    let Some(binary) = server_binary("a_paused_redis_never_holds_a_call_past_the_timeout") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_millis(50)).with_probe_lease(Duration::from_secs(10));
    let server = RedisServer::start(binary);
    // The link reads Redis only when the test refreshes it (its own refresh could meet the
    // paused server first and send the breaker apart before the call is made).
    let (l, events) = link(&server.url(), TIMEOUT_MS);
    let b = l.breaker("breaker-test:paused", &POLICY);
    assert!(b.is_shared());
    let _ = fail(&b);
    l.refresh();
    assert_eq!(b.phase(), Phase::Open);
    let cooling = StdInstant::now();
    while !b.would_allow() {
        assert!(cooling.elapsed() < HANG, "the cooldown never ended");
        std::thread::sleep(StdDuration::from_millis(5));
    }

    // Redis is frozen (SIGSTOP) until the test resumes it, after the call: a call that
    // waited for its answer would hang. The cooldown is over, so the call is a gate
    // transition: it waits for Redis at most the timeout, then the local breaker decides.
    server.pause();
    let asked = StdInstant::now();
    let probe = b.try_acquire().expect("the local breaker grants the probe");
    let waited = asked.elapsed();
    assert!(probe.is_probe() && probe.is_local(), "decided locally");
    eprintln!("the call waited {waited:?} for a frozen Redis (timeout {TIMEOUT_MS} ms)");
    assert!(
        waited < StdDuration::from_millis(TIMEOUT_MS) + MARGIN,
        "the call waited {waited:?} for a frozen Redis (timeout {TIMEOUT_MS} ms)"
    );
    // The link's own round trip times out too: it reports the outage once (it marks
    // itself disconnected first, then reports: wait for both).
    let down = StdInstant::now();
    while l.is_connected() || count(&events, |e| matches!(e, LinkEvent::Unreachable { .. })) == 0 {
        assert!(down.elapsed() < HANG, "the link never gave up on a frozen Redis");
        std::thread::sleep(StdDuration::from_millis(5));
    }
    // Whichever timed out first (the call: `Slow`; the link: it answered the call
    // "decide locally"), one outage, reported once.
    assert!(count(&events, |e| matches!(e, LinkEvent::Slow { .. })) <= 1);
    assert_eq!(count(&events, |e| matches!(e, LinkEvent::Unreachable { .. })), 1);

    // Meanwhile the breaker goes on: refusals and, once the probe answers, closed calls,
    // none of them asking Redis (the link makes no round trip for them).
    let trips = l.round_trips();
    assert!(matches!(ok(&b), Err(CallError::Refused(_))));
    probe.success();
    for _ in 0..1_000 {
        ok(&b).unwrap();
    }
    assert_eq!(l.round_trips(), trips, "calls went to Redis");
    assert_eq!(b.phase(), Phase::Closed);

    // Redis answers again (and runs what it was sent while frozen): the replica joins it,
    // with the local history it kept.
    server.resume();
    rejoin(&l, &b);
    assert_eq!(b.phase(), Phase::Closed);
    assert_eq!(resyncs(&events, Resync::Pushed), 1);
    l.refresh();
    let stored: Vec<u8> = raw(&server.url()).get("breaker-test:paused").unwrap();
    let word = value::decode(&stored, value::fingerprint(&POLICY)).unwrap();
    assert_eq!(word, b.mirror().word(), "Redis took the local word");
}

#[test]
fn a_trip_while_apart_reaches_redis_when_the_replica_rejoins() {
    let Some(binary) = server_binary("a_trip_while_apart_reaches_redis_when_the_replica_rejoins") else {
        return;
    };
    static POLICY: Policy = Policy::new(3, Duration::from_secs(600));
    let server = RedisServer::start(binary);
    let (a, a_events) = link(&server.url(), TIMEOUT_MS);
    let (b, _) = link(&server.url(), TIMEOUT_MS);
    let key = "breaker-test:trip-apart";
    let (ra, rb) = (a.breaker(key, &POLICY), b.breaker(key, &POLICY));
    assert!(ra.is_shared() && rb.is_shared());
    assert_eq!((ra.key(), rb.key()), (key, key));

    // Redis freezes. Replica a fails: the link's write of the strike times out, and a
    // goes apart. Its local breaker decides from then on: a fails until it trips.
    server.pause();
    let _ = fail(&ra);
    until_apart(&ra);
    for failures in 0.. {
        assert!(failures < 10, "replica a never tripped apart: {:?}", ra.state());
        if ra.phase() == Phase::Open {
            break;
        }
        let _ = fail(&ra);
    }
    assert!(!ra.is_shared());

    // Redis thaws (and runs the strike a sent it while frozen). Replica b, which never met
    // the frozen Redis, strikes once: Redis moved on while a was apart, and is closed.
    server.resume();
    let _ = fail(&rb);
    b.refresh();
    assert!(rb.is_shared());
    assert_eq!(rb.phase(), Phase::Closed);

    // a rejoins: Redis takes the trip a made while apart, and b sees the breaker open.
    rejoin(&a, &ra);
    assert_eq!(resyncs(&a_events, Resync::AdoptedWithTrip), 1);
    b.refresh();
    assert_eq!((ra.phase(), rb.phase()), (Phase::Open, Phase::Open));
    assert!(matches!(ok(&rb), Err(CallError::Refused(_))));
}

#[test]
fn forced_opening_reset_and_a_trip_from_before_going_apart_are_not_carried_back() {
    let Some(binary) = server_binary("forced_opening_reset_and_a_trip_from_before_going_apart_are_not_carried_back")
    else {
        return;
    };
    static POLICY: Policy = Policy::new(3, Duration::from_secs(600));
    let server = RedisServer::start(binary);
    let (a, a_events) = link(&server.url(), TIMEOUT_MS);
    let (b, _) = link(&server.url(), TIMEOUT_MS);
    let key = "breaker-test:before-apart";
    let (ra, rb) = (a.breaker(key, &POLICY), b.breaker(key, &POLICY));

    // Held open by one replica, closed by the other's reset: both reach every replica.
    ra.force_open();
    b.refresh();
    assert!(matches!(
        ok(&rb),
        Err(CallError::Refused(r)) if r.reason == RefusalReason::ForcedOpen
    ));
    rb.reset();
    a.refresh();
    assert_eq!(ra.state(), State::Closed { strikes: 0 });
    ok(&ra).unwrap();

    // A trip while shared: both replicas see it.
    ra.trip(Reason::TripVerdict);
    b.refresh();
    assert_eq!((ra.phase(), rb.phase()), (Phase::Open, Phase::Open));

    // a goes apart (its link's read of a frozen Redis times out), still cooling down from
    // that trip. Meanwhile the fleet (b) closes the breaker, after Redis thaws.
    server.pause();
    a.refresh();
    until_apart(&ra);
    assert_eq!(ra.phase(), Phase::Open);
    server.resume();
    rb.reset();
    b.refresh();
    assert_eq!(rb.phase(), Phase::Closed);

    // a rejoins and takes Redis's state: its trip happened before it went apart, so the
    // fleet knew it and decided since; it is not carried back.
    rejoin(&a, &ra);
    assert_eq!(
        (
            resyncs(&a_events, Resync::Adopted),
            resyncs(&a_events, Resync::AdoptedWithTrip)
        ),
        (1, 0)
    );
    b.refresh();
    assert_eq!((ra.phase(), rb.phase()), (Phase::Closed, Phase::Closed));
}

#[test]
fn a_foreign_value_is_reported_not_obeyed_and_not_overwritten() {
    let Some(url) = shared_url("a_foreign_value_is_reported_not_obeyed_and_not_overwritten") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_secs(60));
    let key = unique_key("foreign");
    let mut con = raw(&url);
    let _: () = con.set(&key, "somebody else's session").unwrap();
    let (l, events) = link(&url, 500);
    let b = l.breaker(&key, &POLICY);
    assert!(!b.is_shared());
    // The local breaker works: it trips, and the foreign value stays as it was.
    let _ = fail(&b);
    assert!(matches!(ok(&b), Err(CallError::Refused(_))));
    for _ in 0..3 {
        l.refresh();
    }
    let kept: String = con.get(&key).unwrap();
    assert_eq!(kept, "somebody else's session");
    assert_eq!(
        count(&events, |e| matches!(
            e,
            LinkEvent::BadValue {
                error: ValueError::Foreign,
                ..
            }
        )),
        1,
        "reported once"
    );
    // Deleted: the replica writes its own state there and follows Redis again.
    let _: () = con.del(&key).unwrap();
    l.refresh();
    assert!(b.is_shared());
    assert_eq!(resyncs(&events, Resync::Created), 1);
    let stored: Vec<u8> = con.get(&key).unwrap();
    assert_eq!(
        value::decode(&stored, value::fingerprint(&POLICY)),
        Ok(b.mirror().word())
    );
    assert_eq!(b.phase(), Phase::Open, "the local trip was kept");
}

#[test]
fn a_corrupt_value_is_reported_not_obeyed() {
    let Some(url) = shared_url("a_corrupt_value_is_reported_not_obeyed") else {
        return;
    };
    static POLICY: Policy = Policy::new(2, Duration::from_secs(60));
    let key = unique_key("corrupt");
    let (l, events) = link(&url, 500);
    let b = l.breaker(&key, &POLICY);
    let _ = fail(&b);
    l.refresh();
    assert_eq!(b.state(), State::Closed { strikes: 1 });
    // One character of the stored word changes (a bit flip, a bad write): the checksum says so.
    let mut con = raw(&url);
    let mut stored: Vec<u8> = con.get(&key).unwrap();
    stored[19] = if stored[19] == b'0' { b'1' } else { b'0' };
    let _: () = con.set(&key, &stored).unwrap();
    l.refresh();
    assert!(!b.is_shared());
    assert_eq!(
        b.state(),
        State::Closed { strikes: 1 },
        "the corrupt word was not obeyed"
    );
    assert_eq!(
        count(&events, |e| matches!(
            e,
            LinkEvent::BadValue {
                error: ValueError::Checksum,
                ..
            }
        )),
        1
    );
    let after: Vec<u8> = con.get(&key).unwrap();
    assert_eq!(after, stored, "not overwritten");
}

#[test]
fn a_replica_with_another_policy_is_reported_and_stays_local() {
    let Some(url) = shared_url("a_replica_with_another_policy_is_reported_and_stays_local") else {
        return;
    };
    static THREE: Policy = Policy::new(3, Duration::from_secs(60));
    static FIVE: Policy = Policy::new(5, Duration::from_secs(60));
    let key = unique_key("policy");
    let (a, _) = link(&url, 500);
    let (b, events) = link(&url, 500);
    let ra = a.breaker(&key, &THREE);
    let rb = b.breaker(&key, &FIVE);
    assert!(ra.is_shared() && !rb.is_shared());
    assert_eq!(
        count(&events, |e| matches!(
            e,
            LinkEvent::BadValue {
                error: ValueError::OtherPolicy { .. },
                ..
            }
        )),
        1
    );
}

#[test]
fn a_restart_without_persistence_keeps_the_one_probe() {
    let Some(binary) = server_binary("a_restart_without_persistence_keeps_the_one_probe") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_millis(100)).with_probe_lease(Duration::from_secs(30));
    let mut server = RedisServer::start(binary);
    let (a, a_events) = link(&server.url(), 200);
    let (b, _) = link(&server.url(), 200);
    let (ra, rb) = (
        a.breaker("breaker-test:restart", &POLICY),
        b.breaker("breaker-test:restart", &POLICY),
    );
    let _ = fail(&ra);
    a.refresh();
    b.refresh();
    assert_eq!(rb.phase(), Phase::Open);

    // Redis dies; the cooldown runs out; replica a's local breaker grants a probe.
    server.stop();
    a.refresh();
    b.refresh();
    assert!(!ra.is_shared() && !rb.is_shared());
    std::thread::sleep(StdDuration::from_millis(110));
    let probe = ra.try_acquire().expect("a's local breaker grants the probe");
    assert!(probe.is_probe() && probe.is_local());

    // Redis comes back empty. a meets it first: Redis takes a's word, probe slot and all,
    // so b (which meets it next) is refused: the meeting made no second probe.
    server.restart();
    a.refresh();
    assert!(ra.is_shared());
    assert_eq!(resyncs(&a_events, Resync::Created), 1);
    b.refresh();
    assert!(rb.is_shared());
    assert_eq!(
        rb.state(),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    let refused = rb.try_acquire();
    assert!(refused.is_err(), "a second probe: {refused:?}");
    // a's probe answers into Redis; both replicas see the breaker close.
    probe.success();
    a.refresh();
    b.refresh();
    assert_eq!((ra.phase(), rb.phase()), (Phase::Closed, Phase::Closed));
    ok(&rb).unwrap();
}

#[test]
fn a_call_out_that_is_not_a_probe_does_not_hold_the_meeting_back() {
    let Some(binary) = server_binary("a_call_out_that_is_not_a_probe_does_not_hold_the_meeting_back") else {
        return;
    };
    static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
    let mut server = RedisServer::start(binary);
    let (a, a_events) = link(&server.url(), 200);
    let (b, _) = link(&server.url(), 200);
    let (ra, rb) = (
        a.breaker("breaker-test:not-a-probe", &POLICY),
        b.breaker("breaker-test:not-a-probe", &POLICY),
    );
    ok(&ra).unwrap();
    a.refresh();
    b.refresh();
    assert!(ra.is_shared() && rb.is_shared());

    // Redis dies. Apart, each replica's local breaker takes a strike (3 trip it); a's then
    // admits a call through its gate (a strike is pending, so off the happy path): a local
    // admission that is not a probe, still out when the replicas meet Redis again.
    server.stop();
    a.refresh();
    b.refresh();
    assert!(!ra.is_shared() && !rb.is_shared());
    assert!(matches!(fail(&ra), Err(CallError::Inner(Down))));
    assert!(matches!(fail(&rb), Err(CallError::Inner(Down))));
    let out = ra.try_acquire().expect("closed, with one strike");
    assert!(!out.is_probe() && out.is_local());

    // Redis comes back empty; b meets it first and writes its word, so Redis moved on from
    // the word a last shared: a adopts it at once. Only a probe of its own (none is out)
    // would keep a apart until it answered.
    server.restart();
    b.refresh();
    assert!(rb.is_shared());
    a.refresh();
    assert!(ra.is_shared(), "a stayed apart for a call that is not a probe");
    assert_eq!(resyncs(&a_events, Resync::Adopted), 1);
    // The call answers into the shared breaker: a success clears the fleet's strike.
    out.success();
    a.refresh();
    b.refresh();
    assert_eq!(rb.state(), State::Closed { strikes: 0 });
}

#[test]
fn a_local_probe_out_keeps_its_replica_apart_until_it_answers() {
    use breaker_core::{CallTicket, CircuitBreaker, Outcome, StdClock};

    let Some(binary) = server_binary("a_local_probe_out_keeps_its_replica_apart_until_it_answers") else {
        return;
    };
    static POLICY: Policy = Policy::new(2, Duration::from_millis(100)).with_probe_lease(Duration::from_secs(30));
    let mut server = RedisServer::start(binary);
    let (a, a_events) = link(&server.url(), 200);
    let (b, _) = link(&server.url(), 200);
    let key = "breaker-test:local-probe";
    let (ra, rb) = (a.breaker(key, &POLICY), b.breaker(key, &POLICY));
    // Through the `CircuitBreaker` trait too, a shared breaker's ticket is Redis's.
    let ticket = (&ra).enter(&StdClock).unwrap();
    assert!(!ticket.is_local() && !ticket.is_probe());
    (&ra).report(ticket, Outcome::Success, &StdClock);
    let permit = ra.try_acquire().unwrap();
    assert!(
        format!("{permit:?}").contains("probe: false, local: false"),
        "{permit:?}"
    );
    permit.success();

    // Redis dies. Apart, a's local breaker trips, cools down and grants a probe.
    server.stop();
    a.refresh();
    b.refresh();
    assert!(!ra.is_shared() && !rb.is_shared());
    let _ = fail(&ra);
    let _ = fail(&ra);
    assert_eq!(ra.phase(), Phase::Open);
    std::thread::sleep(StdDuration::from_millis(110));
    let probe = (&ra).enter(&StdClock).expect("a's local breaker grants the probe");
    assert!(probe.is_probe() && probe.is_local());
    assert!(format!("{ra:?}").contains(key), "{ra:?}");

    // Redis comes back empty; b meets it first, writes its word and strikes once: Redis
    // moved on from the word a last shared. a stays apart while its probe is out (the
    // fleet could grant a second one), and meets Redis once the probe has answered.
    server.restart();
    b.refresh();
    assert!(rb.is_shared());
    let _ = fail(&rb);
    b.refresh();
    assert_eq!(rb.state(), State::Closed { strikes: 1 });
    a.refresh();
    assert!(!ra.is_shared(), "a met Redis with its local probe out");
    let ticket = (&ra).enter(&StdClock);
    assert!(ticket.is_err(), "the probe slot is a's own, taken: {ticket:?}");
    (&ra).report(probe, Outcome::Success, &StdClock);
    rejoin(&a, &ra);
    assert_eq!(resyncs(&a_events, Resync::Adopted), 1);
    b.refresh();
    assert_eq!((ra.phase(), rb.phase()), (Phase::Closed, Phase::Closed));
}
