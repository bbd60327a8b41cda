//! Three `#[circuit_breaker]` functions guard a simulated flaky upstream, on a manual
//! clock, and the registry is printed as a table after each phase.
//!
//! ```text
//! cargo run -p demos --example app
//! ```

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Waker};

use breaker_core::{
    circuit_breaker, registry, set_global_clock, Classify, Clock, Duration, Instant, ManualClock, Refused, Verdict,
};

/// The time every breaker below reads: `set_global_clock` points the default clock here,
/// so the demo moves minutes in microseconds. Without that line they would read the
/// real clock.
static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// The simulated upstream's health.
static UPSTREAM: AtomicU8 = AtomicU8::new(HEALTHY);
const HEALTHY: u8 = 0;
const DOWN: u8 = 1;
const KEY_REVOKED: u8 = 2;

#[derive(Debug)]
enum UpstreamError {
    /// 503: might pass.
    Unavailable,
    /// 401: no retry helps until someone rotates the key.
    Unauthorized,
    /// The breaker refused: nothing was sent.
    Refused(Refused),
}

impl From<Refused> for UpstreamError {
    fn from(r: Refused) -> Self {
        UpstreamError::Refused(r)
    }
}

impl Classify for UpstreamError {
    fn verdict(&self) -> Verdict {
        match self {
            UpstreamError::Unavailable => Verdict::Strike,
            UpstreamError::Unauthorized => Verdict::Trip,
            UpstreamError::Refused(_) => Verdict::Neutral,
        }
    }
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Unavailable => f.write_str("503 service unavailable"),
            UpstreamError::Unauthorized => f.write_str("401 unauthorized"),
            UpstreamError::Refused(r) => write!(f, "{r}"),
        }
    }
}

fn upstream() -> Result<(), UpstreamError> {
    match UPSTREAM.load(Ordering::Relaxed) {
        HEALTHY => Ok(()),
        DOWN => Err(UpstreamError::Unavailable),
        _ => Err(UpstreamError::Unauthorized),
    }
}

/// A quote lookup: trips after 3 consecutive 503s, waits 30 s before probing.
#[circuit_breaker(trip = 3, cooldown = "30s", probe_lease = "5s", name = "quotes::fetch")]
fn fetch_quote(symbol: &str) -> Result<u32, UpstreamError> {
    upstream()?;
    Ok(symbol.len() as u32 * 100)
}

/// Metrics are pushed from async code: the permit is held across the `.await`.
#[circuit_breaker(trip = 2, cooldown = "10s", backoff = 2, max_cooldown = "1m")]
async fn push_metrics(batch: &[u32]) -> Result<usize, UpstreamError> {
    std::future::ready(()).await;
    upstream()?;
    Ok(batch.len())
}

#[derive(Debug)]
enum PaymentError {
    Declined,
    Upstream(UpstreamError),
}

impl From<Refused> for PaymentError {
    fn from(r: Refused) -> Self {
        PaymentError::Upstream(UpstreamError::Refused(r))
    }
}

impl std::fmt::Display for PaymentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PaymentError::Declined => f.write_str("card declined"),
            PaymentError::Upstream(u) => u.fmt(f),
        }
    }
}

/// A card declined says nothing about the upstream's health; its own errors do.
fn payment_verdict(e: &PaymentError) -> Verdict {
    match e {
        PaymentError::Declined => Verdict::Neutral,
        PaymentError::Upstream(u) => u.verdict(),
    }
}

/// Two probe successes needed to close.
#[circuit_breaker(trip = 3, cooldown = "1m", probes = 2, classify = payment_verdict, name = "payments::charge")]
fn charge(cents: u32) -> Result<u32, PaymentError> {
    if cents > 10_000 {
        return Err(PaymentError::Declined);
    }
    upstream().map_err(PaymentError::Upstream)?;
    Ok(cents)
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// The registry as `registry::table()` prints it: one aligned row per breaker, each
/// read with the pure oracle (a dump never takes a probe slot).
fn dump(phase: &str) {
    println!("\n== {phase} (t = {}s)", CLOCK.now().as_millis() / 1000);
    print!("{}", registry::table());
}

fn call_all(label: &str) {
    let quote = fetch_quote("ACME").map_err(|e| e.to_string());
    let metrics = block_on(push_metrics(&[1, 2, 3])).map_err(|e| e.to_string());
    let payment = charge(1_999).map_err(|e| e.to_string());
    println!("{label:<10} quote: {quote:?}; metrics: {metrics:?}; charge: {payment:?}");
}

fn main() {
    // The one line that points every default-clock breaker at the demo's clock.
    set_global_clock(|| CLOCK.now());
    if let Err(dup) = registry::check_unique() {
        eprintln!("warning: {dup}");
    }

    dump("start: every breaker is listed before its first call");

    call_all("healthy");
    dump("phase 1: healthy upstream");

    UPSTREAM.store(DOWN, Ordering::Relaxed);
    for i in 1..=4 {
        call_all(&format!("outage #{i}"));
        CLOCK.advance(Duration::from_secs(1));
    }
    dump("phase 2: upstream down, breakers trip and refuse without calling");

    CLOCK.advance(Duration::from_secs(30));
    call_all("probe");
    dump("phase 3: 30 s later, still down: the probes fail; push_metrics backs off to 20 s");

    UPSTREAM.store(HEALTHY, Ordering::Relaxed);
    CLOCK.advance(Duration::from_secs(60));
    call_all("recovery");
    call_all("recovery");
    dump("phase 4: upstream back, probes succeed and the breakers close");

    UPSTREAM.store(KEY_REVOKED, Ordering::Relaxed);
    call_all("revoked");
    registry::force_open("quotes::fetch").expect("registered once");
    dump("phase 5: a 401 trips on first contact; an operator forces quotes open");

    UPSTREAM.store(HEALTHY, Ordering::Relaxed);
    for entry in registry::iter() {
        entry.reset();
    }
    call_all("reset");
    dump("phase 6: key rotated, every breaker reset by the registry");
}
