//! The tower layer over a keyed table: one breaker per host (the request URI's authority),
//! so a dead host is refused while the others are served; a fixed table keyed by port; a
//! full table letting a new host through unguarded; a dropped probe future failing only
//! its own host's probe.

use std::future::Future;
use std::num::NonZeroUsize;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use breaker_core::keyed::{KeyedBreakerMap, KeyedBreakers};
use breaker_core::tower::{BoxError, KeyedLayer};
use breaker_core::{Clock, Duration, Instant, ManualClock, Phase, Policy, Refusal, SharedBreaker};
use http::Request;
use tower::{service_fn, Layer, Service};

mod tower_support;
use tower_support::Unready;

fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future waited"),
    }
}

fn get(uri: &str) -> Request<()> {
    Request::get(uri).body(()).unwrap()
}

fn authority(r: &Request<()>) -> String {
    r.uri().authority().map_or_else(String::new, |a| a.as_str().to_owned())
}

/// Hosts whose name starts with "dead" time out; the rest answer with their name.
fn upstream(
    calls: &'static AtomicU32,
) -> impl Service<
    Request<()>,
    Response = String,
    Error = std::io::Error,
    Future = impl Future<Output = Result<String, std::io::Error>>,
> + Clone {
    service_fn(move |r: Request<()>| {
        calls.fetch_add(1, Ordering::Relaxed);
        let host = authority(&r);
        async move {
            if host.starts_with("dead") {
                Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
            } else {
                Ok(host)
            }
        }
    })
}

#[test]
fn a_dead_host_is_refused_while_the_others_are_served() {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    let clock = &CLOCK;
    let hosts =
        Arc::new(KeyedBreakerMap::new(NonZeroUsize::new(8).unwrap(), Policy::new(2, Duration::from_secs(30))).unwrap());
    let layer = KeyedLayer::new(hosts.clone(), authority, clock);
    let mut svc = layer.layer(upstream(&CALLS));

    for _ in 0..2 {
        let e: BoxError = now(svc.call(get("http://dead.example:8080/x"))).unwrap_err();
        assert!(!e.is_refused());
    }
    assert_eq!(hosts.get("dead.example:8080").unwrap().phase(clock.now()), Phase::Open);
    // The dead host is refused without reaching the upstream; the two others are served,
    // by clones of the service and by a service the layer makes later.
    let mut later = layer.layer(upstream(&CALLS));
    for svc in [&mut svc, &mut later] {
        let e = now(svc.call(get("http://dead.example:8080/x"))).unwrap_err();
        assert!(e.is_refused());
        assert_eq!(now(svc.call(get("http://a.example/"))).unwrap(), "a.example");
        assert_eq!(now(svc.call(get("http://b.example:81/"))).unwrap(), "b.example:81");
    }
    assert_eq!(CALLS.load(Ordering::Relaxed), 2 + 4);
    assert_eq!(hosts.len(), 3);
    assert_eq!(hosts.get("dead.example:8080").unwrap().counters().skips, 2);
    for host in ["a.example", "b.example:81"] {
        assert_eq!(hosts.get(host).unwrap().phase(clock.now()), Phase::Closed);
    }
}

#[test]
fn a_fixed_table_keyed_by_port_and_a_full_one_lets_a_new_key_through_unguarded() {
    static POLICY: Policy = Policy::new(1, Duration::from_secs(30));
    static PORTS: KeyedBreakers<u16, 1> = KeyedBreakers::new([SharedBreaker::new(&POLICY)]);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let port = |r: &Request<()>| r.uri().port_u16().unwrap_or(80);
    let mut svc = KeyedLayer::new(&PORTS, port, &CLOCK).layer(upstream(&CALLS));

    assert!(now(svc.call(get("http://dead:9000/"))).is_err());
    assert!(now(svc.call(get("http://dead:9000/"))).unwrap_err().is_refused());
    // One slot, held by an open breaker: port 9001 cannot have one, and goes through
    // unguarded (its failures count nowhere), never refused.
    for _ in 0..3 {
        let e = now(svc.call(get("http://dead:9001/"))).unwrap_err();
        assert!(!e.is_refused());
    }
    assert!(PORTS.get(9001).is_none());
    assert_eq!(PORTS.get(9000).unwrap().phase(CLOCK.now()), Phase::Open);
    assert_eq!(CALLS.load(Ordering::Relaxed), 1 + 3);
}

#[test]
fn a_dropped_probe_future_fails_only_its_own_hosts_probe() {
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    let clock = &CLOCK;
    let hosts =
        Arc::new(KeyedBreakerMap::new(NonZeroUsize::new(4).unwrap(), Policy::new(1, Duration::from_secs(10))).unwrap());
    // A service that never answers: its futures are dropped unanswered.
    let pending = service_fn(|_: Request<()>| std::future::pending::<Result<(), std::io::Error>>());
    let mut svc = KeyedLayer::new(hosts.clone(), authority, clock).layer(pending);
    for host in ["http://a/", "http://b/"] {
        hosts
            .entry(&authority(&get(host)))
            .breaker()
            .unwrap()
            .trip(breaker_core::Reason::TripVerdict, clock.now());
    }
    clock.advance(Duration::from_secs(10));
    // a's probe is taken and dropped: a re-opens; b still offers its probe.
    drop(svc.call(get("http://a/")));
    assert_eq!(hosts.get("a").unwrap().phase(clock.now()), Phase::Open);
    assert!(!hosts.get("a").unwrap().would_allow(clock.now()));
    assert!(hosts.get("b").unwrap().would_allow(clock.now()));
}

#[test]
fn poll_ready_passes_the_inner_services_readiness_through() {
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    let hosts =
        Arc::new(KeyedBreakerMap::new(NonZeroUsize::new(2).unwrap(), Policy::new(2, Duration::from_secs(30))).unwrap());
    let mut svc = KeyedLayer::new(hosts.clone(), authority, &CLOCK).layer(Unready(0));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(svc.poll_ready(&mut cx).is_pending());
    match svc.poll_ready(&mut cx) {
        Poll::Ready(Err(e)) => assert_eq!(e.to_string(), "overloaded"),
        other => panic!("{other:?}"),
    }
    assert!(hosts.is_empty());
}
