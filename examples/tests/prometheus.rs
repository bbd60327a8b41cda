//! The `service` example scraped by a real Prometheus server through an outage: the
//! service runs in this process on a loopback port, with a manual clock; a `prometheus`
//! of our own, on another loopback port with a temporary configuration and data
//! directory, scrapes its `/metrics` every second; the test reads what Prometheus stored
//! through its HTTP API (`/api/v1/query`).
//!
//! It needs the `prometheus` binary (Debian's `prometheus` package; `scripts/test.sh`
//! installs it): found as `BREAKER_PROMETHEUS`, else on `PATH`. Without one the test says so
//! and passes, unless `BREAKER_PROMETHEUS_REQUIRED=1` (the test command sets it), where it
//! fails. Every wait polls until Prometheus shows the value, with a deadline that only
//! bounds a hang: nothing here depends on how fast the machine is.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Instant as WallInstant;

use breaker_core::{set_global_clock, Clock, Duration, Instant, ManualClock};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[allow(dead_code)] // its `main` is the example's
#[path = "../examples/service.rs"]
mod service;

use service::UPSTREAM_CALLS;

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// How long any one wait may take before the test calls it a hang.
const DEADLINE: std::time::Duration = std::time::Duration::from_secs(180);

/// One HTTP request on a fresh connection (HTTP/1.0: a plain body, whatever the server):
/// the status code and the body.
async fn request(addr: SocketAddr, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let bad = || std::io::Error::other(format!("not an HTTP response: {text:?}"));
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(bad)?;
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    Ok((status, body.to_owned()))
}

/// The prometheus binary, or `None` (and why) where the test may be skipped.
fn prometheus_binary() -> Option<PathBuf> {
    let found = std::env::var_os("BREAKER_PROMETHEUS").map(PathBuf::from).or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("prometheus"))
            .find(|p| p.is_file())
    });
    let required = std::env::var("BREAKER_PROMETHEUS_REQUIRED").is_ok_and(|v| v == "1");
    match found {
        Some(path) if path.is_file() => Some(path),
        Some(path) if required => panic!(
            "BREAKER_PROMETHEUS_REQUIRED is set but BREAKER_PROMETHEUS={} is not a file",
            path.display()
        ),
        None if required => {
            panic!("BREAKER_PROMETHEUS_REQUIRED is set but no prometheus binary is on PATH or in BREAKER_PROMETHEUS")
        }
        _ => {
            eprintln!("skipped: no prometheus binary (install Debian's `prometheus`, or set BREAKER_PROMETHEUS)");
            None
        }
    }
}

/// A Prometheus server of our own, killed by its PID and its directory removed on drop.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    addr: SocketAddr,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback port nobody held a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port()
}

impl Prometheus {
    /// Starts `binary` scraping `target`'s `/metrics` every second, and waits until it is
    /// ready. A port taken between choosing it and binding it makes Prometheus exit: then
    /// it tries another.
    async fn start(binary: &PathBuf, target: SocketAddr) -> Prometheus {
        for attempt in 0..5 {
            let dir = std::env::temp_dir().join(format!("breaker-prometheus-{}-{attempt}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let config = dir.join("prometheus.yml");
            std::fs::write(
                &config,
                format!(
                    "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                     scrape_configs:\n  - job_name: service\n    static_configs:\n      - targets: ['{target}']\n"
                ),
            )
            .unwrap();
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
            let child = Command::new(binary)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
                .arg(format!("--web.listen-address={addr}"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
            let mut prometheus = Prometheus { child, dir, addr };
            let started = WallInstant::now();
            loop {
                if let Some(status) = prometheus.child.try_wait().unwrap() {
                    let log = std::fs::read_to_string(prometheus.dir.join("prometheus.log")).unwrap_or_default();
                    eprintln!("prometheus exited ({status}) on attempt {attempt}:\n{log}");
                    break;
                }
                if let Ok((200, _)) = request(addr, "GET", "/-/ready").await {
                    return prometheus;
                }
                assert!(started.elapsed() < DEADLINE, "prometheus did not become ready");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
        panic!("prometheus did not start in five attempts (see the logs above)");
    }

    /// The value of every series `query` selects now, with its labels (none while
    /// Prometheus does not answer).
    async fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let Ok((200, body)) = request(self.addr, "GET", &format!("/api/v1/query?query={encoded}")).await else {
            return Vec::new();
        };
        let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        answer["data"]["result"]
            .as_array()
            .unwrap_or_else(|| panic!("no result in {body}"))
            .iter()
            .map(|r| {
                let value = r["value"][1].as_str().unwrap();
                (r["metric"].clone(), value.parse::<f64>().unwrap())
            })
            .collect()
    }

    /// The one value `query` selects, once `ok` holds for it; panics at the deadline with
    /// what Prometheus answered last.
    async fn until(&self, query: &str, ok: impl Fn(f64) -> bool) -> f64 {
        let started = WallInstant::now();
        loop {
            let answer = self.query(query).await;
            if let [(_, value)] = answer.as_slice() {
                if ok(*value) {
                    return *value;
                }
            }
            assert!(
                started.elapsed() < DEADLINE,
                "{query}: still {answer:?} after {DEADLINE:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// Waits until `query` is `want`, and checks that the state set still has exactly one
    /// state at 1.
    async fn until_eq(&self, query: &str, want: f64) {
        self.until(query, |v| v == want).await;
        let states = r#"sum(breaker_state{breaker="forecast::upstream"})"#;
        assert_eq!(self.until(states, |_| true).await, 1.0, "{states}");
    }
}

const UP: &str = r#"{breaker="forecast::upstream"}"#;

fn q(series: &str, labels: &str) -> String {
    let extra = if labels.is_empty() {
        String::new()
    } else {
        format!(",{labels}")
    };
    format!("{series}{}{extra}}}", UP.trim_end_matches('}'))
}

#[tokio::test(flavor = "current_thread")]
async fn prometheus_sees_the_breaker_open_refuse_count_down_and_recover() {
    let Some(binary) = prometheus_binary() else {
        return;
    };
    set_global_clock(|| CLOCK.now());
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let service_addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, service::app()).await });
    let prometheus = Prometheus::start(&binary, service_addr).await;
    let get = |path: &'static str| async move { request(service_addr, "GET", path).await.unwrap().0 };

    // Before any call: closed, nothing refused, nothing left to wait.
    prometheus.until_eq(&q("breaker_state", r#"state="closed""#), 1.0).await;
    prometheus.until_eq(&q("breaker_state", r#"state="open""#), 0.0).await;
    prometheus
        .until_eq(&q("breaker_calls_total", r#"outcome="rejected""#), 0.0)
        .await;
    prometheus.until_eq(&q("breaker_open_remaining_seconds", ""), 0.0).await;

    // Two calls that succeed: the breaker counts every call (its policy says so).
    for _ in 0..2 {
        assert_eq!(get("/forecast").await, 200);
    }
    let successes = q("breaker_calls_total", r#"outcome="success""#);
    prometheus.until_eq(&successes, 2.0).await;
    prometheus
        .until_eq(&q("breaker_calls_total", r#"outcome="neutral""#), 0.0)
        .await;

    // The outage: three 5xx answers open the breaker; then refusals, counted here.
    assert_eq!(request(service_addr, "POST", "/admin/outage").await.unwrap().0, 204);
    for _ in 0..3 {
        assert_eq!(get("/forecast").await, 500);
    }
    let mut refusals = 0;
    for _ in 0..7 {
        assert_eq!(get("/forecast").await, 503);
        refusals += 1;
    }
    assert_eq!(
        UPSTREAM_CALLS.load(Ordering::Relaxed),
        5,
        "a refusal never reaches the upstream"
    );

    prometheus.until_eq(&q("breaker_state", r#"state="open""#), 1.0).await;
    prometheus.until_eq(&q("breaker_state", r#"state="closed""#), 0.0).await;
    let rejected = q("breaker_calls_total", r#"outcome="rejected""#);
    assert_eq!(prometheus.until(&rejected, |v| v >= 7.0).await, f64::from(refusals));
    prometheus
        .until_eq(&q("breaker_calls_total", r#"outcome="failure""#), 3.0)
        .await;

    // The time left before the probe falls toward 0 as the (manual) clock runs.
    let remaining = q("breaker_open_remaining_seconds", "");
    for (advance, left) in [(0, 30.0), (10, 20.0), (15, 5.0)] {
        CLOCK.advance(Duration::from_secs(advance));
        prometheus.until_eq(&remaining, left).await;
    }
    // Nothing above the cooldown was ever stored.
    let highest = format!("max_over_time({remaining}[10m])");
    assert_eq!(prometheus.until(&highest, |_| true).await, 30.0);

    // Recovery: the upstream is back, the cooldown passes, one probe closes the breaker.
    assert_eq!(request(service_addr, "DELETE", "/admin/outage").await.unwrap().0, 204);
    CLOCK.advance(Duration::from_secs(5));
    prometheus.until_eq(&remaining, 0.0).await;
    assert_eq!(get("/forecast").await, 200);
    prometheus.until_eq(&q("breaker_state", r#"state="closed""#), 1.0).await;
    prometheus.until_eq(&q("breaker_state", r#"state="open""#), 0.0).await;
    prometheus
        .until_eq(&q("breaker_state", r#"state="half_open""#), 0.0)
        .await;
    prometheus.until_eq(&remaining, 0.0).await;
    prometheus
        .until_eq(&q("breaker_probes_total", r#"outcome="success""#), 1.0)
        .await;
    // The probe's success is a success call too.
    prometheus.until_eq(&successes, 3.0).await;
    for (from, to) in [("closed", "open"), ("open", "half_open"), ("half_open", "closed")] {
        let transitions = q("breaker_transitions_total", &format!(r#"from="{from}",to="{to}""#));
        prometheus.until_eq(&transitions, 1.0).await;
    }
    // No refusal since: the counter grew by exactly the refusals made.
    assert_eq!(prometheus.until(&rejected, |_| true).await, f64::from(refusals));

    drop(prometheus);
    server.abort();
}
