//! An axum server whose `/forecast` route is guarded by a circuit breaker (a tower layer,
//! next to the error handler), and whose `/breakers` route serves the whole registry as
//! JSON (`/breakers.txt`: as an aligned table), and `/health`: the overall status. `/` is
//! a status page (`status.html`: one self-contained file, no external assets) polling
//! `/status.json`: every breaker's report with its timeline drawn as SVG.
//!
//! ```text
//! cargo run -p examples --example service    # then: curl localhost:3000/health
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
//! one probe succeeds. `tests/service.rs` drives it through a real server on loopback.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::http::{header, Request, Response, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::{Json, Router};
use breaker_core::registry::{self, HealthStatus};
use breaker_core::tower::{BoxError, CircuitBreakerLayer};
use breaker_core::{Duration, GlobalClock, History, Outcome, Policy, Refusal, SharedBreaker};
use tower::{service_fn, ServiceBuilder};

/// Whether the simulated upstream is down (it answers 500 then).
pub static UPSTREAM_DOWN: AtomicBool = AtomicBool::new(false);
/// How many requests reached the upstream: a refused call never does.
pub static UPSTREAM_CALLS: AtomicU32 = AtomicU32::new(0);

static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
/// The breaker in front of the upstream: a `static`, so every clone of the route's
/// service shares it and the registry lists it, with its last 32 transitions.
static UPSTREAM: SharedBreaker<History<32>> = SharedBreaker::with_observer(&POLICY, History::new(()));
// The registry reads the same clock as the layer: `GlobalClock` (the real clock, unless a
// test installs a manual one).
breaker_core::register!(UPSTREAM, "forecast::upstream", GlobalClock);

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

/// The whole application: the guarded route, the health endpoints and the status page.
pub fn app() -> Router {
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
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 3000)).await?;
    println!(
        "listening on http://{}/ (try /forecast and /breakers)",
        listener.local_addr()?
    );
    axum::serve(listener, app()).await
}
