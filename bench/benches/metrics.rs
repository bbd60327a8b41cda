//! `cargo bench -p bench --bench metrics [--features metrics]`: what the `metrics` and
//! `tracing` features cost a closed-state call and a refusal, and what counting every call
//! (`Policy::counting_calls`, for `breaker_calls_total`'s `success` series) costs a closed
//! call. Built without the feature its
//! cases are `metrics-off-*`; with it, `metrics-on-*`: breaker-core's `metrics` and
//! `tracing` features are on, the breakers under test are observed by `TracingLog` (each
//! transition traced; every breaker counts its transitions itself), a `tracing` subscriber
//! counting events is installed, and before each loop the benchmark installs
//! `metrics-exporter-prometheus`'s recorder and publishes and renders the registry once
//! (the breakers under test are registered), as a service scraped by Prometheus would;
//! after the loop it publishes and renders again. `BENCH=metrics bench/callgrind.sh` builds
//! both and compares them.
//!
//! Modes (argv; `cargo bench` adds a `--bench` flag, which is ignored):
//!
//! * no mode: ns per call of both cases, interleaved rounds, medians, and heap allocations
//!   per call.
//! * `--icount CASE COUNT`: runs one case for `COUNT` calls and exits (for callgrind.sh).
//! * `--allocs`: heap allocations made inside each case's loop of 100 000 calls, one line
//!   per case (`CASE\tALLOCATIONS`).
//! * `--list`: prints the case keys.

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use bench::{CountingAlloc, TimedCase};
use breaker_core::{CallError, Duration, Policy, SharedBreaker, StdClock};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

const ROUNDS: usize = 15;

static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
/// The same, counting every call (`Policy::counting_calls`): what `breaker_calls_total`'s
/// `success` series costs.
static COUNTED_POLICY: Policy = Policy::new(3, Duration::from_secs(30)).counting_calls();

/// The breakers' observer: none without the feature; with it, each transition traced.
#[cfg(not(feature = "metrics"))]
type Observed = ();
#[cfg(feature = "metrics")]
type Observed = breaker_core::TracingLog;
type Breaker = SharedBreaker<Observed>;

#[cfg(not(feature = "metrics"))]
static CLOSED: Breaker = SharedBreaker::new(&POLICY);
#[cfg(not(feature = "metrics"))]
static TRIPPED: Breaker = SharedBreaker::new(&POLICY);
#[cfg(not(feature = "metrics"))]
static COUNTED: Breaker = SharedBreaker::new(&COUNTED_POLICY);
#[cfg(feature = "metrics")]
static CLOSED: Breaker = SharedBreaker::with_observer(&POLICY, observer("bench/metrics/closed"));
#[cfg(feature = "metrics")]
static TRIPPED: Breaker = SharedBreaker::with_observer(&POLICY, observer("bench/metrics/tripped"));
#[cfg(feature = "metrics")]
static COUNTED: Breaker = SharedBreaker::with_observer(&COUNTED_POLICY, observer("bench/metrics/counted"));

#[cfg(feature = "metrics")]
const fn observer(name: &'static str) -> Observed {
    breaker_core::TracingLog::new(name)
}

static CLOCK: StdClock = StdClock;
breaker_core::register!(CLOSED, "bench/metrics/closed", CLOCK);
breaker_core::register!(TRIPPED, "bench/metrics/tripped", CLOCK);
breaker_core::register!(COUNTED, "bench/metrics/counted", CLOCK);

#[derive(Debug)]
struct Nack;
impl breaker_core::Classify for Nack {}

/// The closed path: `SharedBreaker::call` succeeding, summed.
#[inline(never)]
fn loop_closed(b: &Breaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Ok(v) = b.call(&CLOCK, || Ok::<_, Nack>(black_box(i))) {
            acc = acc.wrapping_add(v);
        }
    }
    acc
}

/// The refusal: `SharedBreaker::call` on a breaker open and cooling down.
#[inline(never)]
fn loop_rejected(b: &Breaker, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        if let Err(CallError::Refused(_)) = b.call(&CLOCK, || Ok::<_, Nack>(black_box(i))) {
            acc = acc.wrapping_add(1);
        }
    }
    acc
}

/// With the feature: the recorder and the subscriber, installed once.
#[cfg(feature = "metrics")]
fn recorder() -> &'static metrics_exporter_prometheus::PrometheusHandle {
    use std::sync::OnceLock;
    static HANDLE: OnceLock<metrics_exporter_prometheus::PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        tracing::subscriber::set_global_default(Events).expect("the only subscriber");
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .expect("the only recorder")
    })
}

/// With the feature: one scrape's work.
#[cfg(feature = "metrics")]
fn scrape() {
    let handle = recorder();
    breaker_core::metrics::publish();
    black_box(handle.render());
}

#[cfg(not(feature = "metrics"))]
fn scrape() {}

/// A `tracing` subscriber that takes every event and counts it (the transitions of the
/// tripped breaker); it keeps no spans.
#[cfg(feature = "metrics")]
struct Events;

#[cfg(feature = "metrics")]
static EVENTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(feature = "metrics")]
impl tracing::Subscriber for Events {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {
        EVENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Trips `TRIPPED` (with the feature, its opening is counted and traced: the recorder and
/// the subscriber are installed first).
fn trip() {
    #[cfg(feature = "metrics")]
    recorder();
    for _ in 0..3 {
        let _ = TRIPPED.call(&CLOCK, || Err::<(), _>(Nack));
    }
}

fn run(looped: fn(&Breaker, u64) -> u64, b: &'static Breaker, n: u64) -> (StdDuration, u64) {
    trip();
    scrape();
    let before = ALLOC.snapshot();
    let start = StdInstant::now();
    black_box(looped(black_box(b), n));
    let elapsed = start.elapsed();
    let allocs = ALLOC.snapshot().since(before).allocs;
    scrape();
    (elapsed, allocs)
}

fn run_closed(n: u64) -> (StdDuration, u64) {
    run(loop_closed, &CLOSED, n)
}

fn run_rejected(n: u64) -> (StdDuration, u64) {
    run(loop_rejected, &TRIPPED, n)
}

fn run_counted(n: u64) -> (StdDuration, u64) {
    run(loop_closed, &COUNTED, n)
}

#[cfg(not(feature = "metrics"))]
const CASES: &[TimedCase] = &[
    TimedCase {
        key: "metrics-off-closed",
        label: "closed call, features `metrics` and `tracing` off",
        run: run_closed,
    },
    TimedCase {
        key: "metrics-off-rejected",
        label: "refusal, features `metrics` and `tracing` off",
        run: run_rejected,
    },
    TimedCase {
        key: "metrics-off-counted",
        label: "closed call of a breaker counting every call, features off",
        run: run_counted,
    },
];

#[cfg(feature = "metrics")]
const CASES: &[TimedCase] = &[
    TimedCase {
        key: "metrics-on-closed",
        label: "closed call, features `metrics` and `tracing` on, registry published",
        run: run_closed,
    },
    TimedCase {
        key: "metrics-on-rejected",
        label: "refusal, features `metrics` and `tracing` on, registry published",
        run: run_rejected,
    },
    TimedCase {
        key: "metrics-on-counted",
        label: "closed call of a breaker counting every call, features on, registry published",
        run: run_counted,
    },
];

fn main() {
    bench::timed_main("metrics", CASES, ROUNDS, || {
        #[cfg(feature = "metrics")]
        println!(
            "\ntracing events (the tripped breaker's transitions): {}",
            EVENTS.load(std::sync::atomic::Ordering::Relaxed)
        );
        println!("\nInstructions per call, both builds: `BENCH=metrics bench/callgrind.sh`.");
    });
}
