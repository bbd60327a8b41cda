//! An axum server whose `/forecast` route is guarded by a circuit breaker (a tower layer,
//! next to the error handler), and whose `/breakers` route serves the whole registry as
//! JSON (`/breakers.txt`: as an aligned table), `/health`: the overall status, and
//! `/metrics`: every registered breaker in Prometheus's text format. `/` is a status page
//! (`status.html`: one self-contained file, no external assets) polling `/status.json`:
//! every breaker's report with its timeline drawn as SVG.
//!
//! ```text
//! cargo run -p examples --example service    # then: curl localhost:3000/health
//! cargo run -p examples --example service -- --listen 127.0.0.1:8080 --outage
//! curl -X DELETE localhost:8080/admin/outage # the upstream is back (POST: down again)
//! ```
//!
//! `/health` answers 200 with `"status": "up"` or `"degraded"` (a breaker open or
//! half-open: the service still answers, with that dependency refused), so an orchestrator
//! does not restart a pod whose breaker is doing its job; only a breaker listed in
//! `CRITICAL` makes it `"down"`, with 503. This service lists none.
//!
//! The forecast comes from a simulated upstream that answers 500 while `UPSTREAM_DOWN` is
//! set. Three 5xx answers in a row open the breaker: the route then answers 503 at once
//! with a `Retry-After`, without calling the upstream, until the cooldown has passed and
//! one probe succeeds. `tests/service.rs` drives it through a real server on loopback;
//! `tests/prometheus.rs` has a real Prometheus server scrape it through an outage.
//!
//! `/metrics` publishes the registry's series (`breaker_core::metrics`, whose docs list
//! them) at each scrape, through `metrics-exporter-prometheus` without its HTTP listener:
//! the route renders the text itself, so the breakers' series and the service's other
//! routes share one server and one port.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;

use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::http::{header, Request, Response, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::{get, post};
use axum::{Json, Router};
use breaker_core::registry::{self, HealthStatus};
use breaker_core::tower::{BoxError, CircuitBreakerLayer};
use breaker_core::{Duration, GlobalClock, History, Outcome, Policy, Refusal, SharedBreaker};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tower::{service_fn, ServiceBuilder};

/// Whether the simulated upstream is down (it answers 500 then).
pub static UPSTREAM_DOWN: AtomicBool = AtomicBool::new(false);
/// How many requests reached the upstream: a refused call never does.
pub static UPSTREAM_CALLS: AtomicU32 = AtomicU32::new(0);

/// Three strikes in a row open it for 30 s; it counts every call (so that `/metrics` has
/// its successes too: `breaker_calls_total{outcome="success"}`).
static POLICY: Policy = Policy::new(3, Duration::from_secs(30)).counting_calls();
/// The breaker in front of the upstream: a `static`, so every clone of the route's
/// service shares it and the registry lists it (and `/metrics` publishes it), with its
/// last 32 transitions.
static UPSTREAM: SharedBreaker<History<32>> = SharedBreaker::with_observer(&POLICY, History::new(()));
const NAME: &str = "forecast::upstream";
// The registry reads the same clock as the layer: `GlobalClock` (the real clock, unless a
// test installs a manual one).
breaker_core::register!(UPSTREAM, NAME, GlobalClock);

/// The simulated upstream.
async fn upstream(_request: Request<Body>) -> Result<Response<Body>, Infallible> {
    UPSTREAM_CALLS.fetch_add(1, Ordering::Relaxed);
    let response = if UPSTREAM_DOWN.load(Ordering::Relaxed) {
        (StatusCode::INTERNAL_SERVER_ERROR, "upstream failed").into_response()
    } else {
        (StatusCode::OK, "sunny, 21 °C").into_response()
    };
    Ok(response)
}

/// A 5xx answer from the upstream is a strike; anything else is a success.
fn by_status(result: &Result<Response<Body>, Infallible>) -> Outcome {
    match result {
        Ok(response) if response.status().is_server_error() => Outcome::STRIKE,
        _ => Outcome::Success,
    }
}

/// The layer's errors as HTTP: a refusal is 503 with `Retry-After`; anything else 502.
async fn handle_error(error: BoxError) -> Response<Body> {
    match error.refusal() {
        Some(refused) => {
            let retry_after = refused.retry_in.map_or(1, |d| d.as_millis().div_ceil(1000));
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, retry_after.to_string())],
                format!("{refused:#}"),
            )
                .into_response()
        }
        None => (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
    }
}

/// The breakers without which this service can do nothing: one of them open makes
/// `/health` answer 503 `"down"`. None here: the forecast is one dependency among many.
pub const CRITICAL: &[&str] = &[];

/// `/health`: 200 with `up` or `degraded`, 503 with `down`; the breakers' reports beside.
async fn health() -> Response<Body> {
    let health = registry::health(CRITICAL);
    let status = match health.status() {
        HealthStatus::Up | HealthStatus::Degraded => StatusCode::OK,
        HealthStatus::Down => StatusCode::SERVICE_UNAVAILABLE,
    };
    (status, Json(health)).into_response()
}

/// `/status.json`, what the status page polls: the health, and each breaker's report with
/// its timeline as SVG (drawn here, so the page and the demos draw the same picture).
async fn status() -> Json<serde_json::Value> {
    let health = registry::health(CRITICAL);
    let breakers: Vec<_> = registry::iter()
        .map(|entry| entry.report())
        .map(|report| serde_json::json!({ "report": report, "timeline": report.timeline().to_string() }))
        .collect();
    Json(serde_json::json!({ "status": health.status(), "breakers": breakers }))
}

/// The Prometheus recorder, installed by the first call (in [`app`], before any traffic,
/// so that no transition is counted into the void).
fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            eprintln!("service: another metrics recorder is installed; /metrics shows only what reaches ours");
        }
        handle
    })
}

/// `/metrics`: the registry's series, published now, in Prometheus's text format.
async fn metrics() -> String {
    breaker_core::metrics::publish();
    prometheus().render()
}

/// `/admin/outage`: `POST` takes the simulated upstream down, `DELETE` brings it back.
fn outage() -> axum::routing::MethodRouter {
    let set = |down| {
        move || async move {
            UPSTREAM_DOWN.store(down, Ordering::Relaxed);
            StatusCode::NO_CONTENT
        }
    };
    post(set(true)).delete(set(false))
}

/// The whole application: the guarded route, the health endpoints, the status page, the
/// metrics and the outage switch.
pub fn app() -> Router {
    prometheus();
    let forecast = ServiceBuilder::new()
        .layer(HandleErrorLayer::new(handle_error))
        .layer(CircuitBreakerLayer::new(&UPSTREAM, GlobalClock).classify(by_status))
        .service(service_fn(upstream));
    Router::new()
        .route_service("/forecast", forecast)
        .route("/breakers", get(|| async { Json(registry::table()) }))
        .route("/breakers.txt", get(|| async { registry::table().to_string() }))
        .route("/health", get(health))
        .route("/", get(|| async { Html(include_str!("status.html")) }))
        .route("/status.json", get(status))
        .route("/metrics", get(metrics))
        .route("/admin/outage", outage())
}

/// `--listen ADDR` (default `127.0.0.1:3000`) and `--outage` (start with the upstream down).
pub fn parse_args(mut args: impl Iterator<Item = String>) -> Result<(SocketAddr, bool), String> {
    let (mut listen, mut down) = (SocketAddr::from(([127, 0, 0, 1], 3000)), false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => {
                let value = args.next().ok_or("--listen needs an address, such as 127.0.0.1:8080")?;
                listen = value
                    .parse()
                    .map_err(|e| format!("--listen {value:?}: {e} (expected IP:PORT)"))?;
            }
            "--outage" => down = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok((listen, down))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (listen, down) = parse_args(std::env::args().skip(1)).unwrap_or_else(|e| {
        eprintln!("service: {e}\nusage: service [--listen IP:PORT] [--outage]");
        std::process::exit(2)
    });
    UPSTREAM_DOWN.store(down, Ordering::Relaxed);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    println!(
        "listening on http://{}/ (try /forecast, /breakers and /metrics)",
        listener.local_addr()?
    );
    Ok(axum::serve(listener, app()).await?)
}
