//! The `service` example through a real server on loopback: the guarded route opens after
//! three 5xx answers, refuses with 503 and `Retry-After` without calling the upstream,
//! recovers after the cooldown, and `/breakers` serves the registry as JSON throughout.

use std::sync::atomic::Ordering;

use breaker_core::{set_global_clock, Clock, Duration, Instant, ManualClock};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[allow(dead_code)] // its `main` is the example's
#[path = "../examples/service.rs"]
mod service;

use service::{UPSTREAM_CALLS, UPSTREAM_DOWN};

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// One HTTP/1.1 GET on a fresh connection: the status code, the headers, the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// The upstream's entry in `/breakers`.
async fn upstream_report(addr: std::net::SocketAddr) -> Value {
    let (status, head, body) = get(addr, "/breakers").await;
    assert_eq!(status, 200);
    assert!(head.contains("content-type: application/json"), "{head}");
    let all: Value = serde_json::from_str(&body).unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "forecast::upstream")
        .cloned()
        .expect("the upstream's breaker is listed")
}

#[tokio::test(flavor = "current_thread")]
async fn the_guarded_route_opens_refuses_and_recovers_and_the_registry_is_served_as_json() {
    set_global_clock(|| CLOCK.now());
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, service::app()).await });

    let (status, _, body) = get(addr, "/forecast").await;
    assert_eq!((status, body.as_str()), (200, "sunny, 21 °C"));
    assert_eq!(upstream_report(addr).await["state"]["phase"], "closed");
    let (status, _, body) = get(addr, "/health").await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["status"], "up");

    // Three 5xx answers in a row: strikes, and the breaker opens.
    UPSTREAM_DOWN.store(true, Ordering::Relaxed);
    for _ in 0..3 {
        assert_eq!(get(addr, "/forecast").await.0, 500);
    }
    assert_eq!(UPSTREAM_CALLS.load(Ordering::Relaxed), 4);

    // Open: 503 at once, the upstream not called, told when to come back.
    CLOCK.advance(Duration::from_secs(10));
    let (status, head, body) = get(addr, "/forecast").await;
    assert_eq!(status, 503);
    assert!(head.contains("retry-after: 20"), "{head}");
    assert_eq!(body, "circuit breaker open: call refused (cooling down, retry in 20s)");
    assert_eq!(UPSTREAM_CALLS.load(Ordering::Relaxed), 4);

    // Degraded, not down: 200, so that an orchestrator keeps the pod running.
    let (status, _, body) = get(addr, "/health").await;
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((status, &health["status"]), (200, &Value::from("degraded")), "{body}");
    assert!(health["breakers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "forecast::upstream"));

    let report = upstream_report(addr).await;
    assert_eq!(report["state"]["phase"], "open");
    assert_eq!(report["state"]["remaining_ms"], 20_000);
    assert_eq!(report["would_allow"], false);
    assert_eq!(report["counters"]["failures"], 3);
    assert_eq!(report["counters"]["skips"], 1);
    assert_eq!(report["counters"]["trips"], 1);
    assert_eq!(report["policy"]["cooldown_ms"], 30_000);

    // After the cooldown one probe goes through; the upstream is back, so it closes.
    UPSTREAM_DOWN.store(false, Ordering::Relaxed);
    CLOCK.advance(Duration::from_secs(20));
    assert_eq!(get(addr, "/forecast").await.0, 200);
    let report = upstream_report(addr).await;
    assert_eq!(report["state"]["phase"], "closed");
    assert_eq!(report["counters"]["probes"], 1);
    assert_eq!(
        serde_json::from_str::<Value>(&get(addr, "/health").await.2).unwrap()["status"],
        "up"
    );

    let (status, _, table) = get(addr, "/breakers.txt").await;
    assert_eq!(status, 200);
    assert!(table.starts_with("breaker "), "{table}");
    assert!(table.contains("forecast::upstream"), "{table}");

    server.abort();
}
