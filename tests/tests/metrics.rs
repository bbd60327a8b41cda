//! The `metrics` feature: every registered breaker's series as a recorder receives them
//! from `breaker_core::metrics::publish`, through a breaker's life; never-called and
//! hand-registered breakers included, counters a shared breaker does not keep left out (and
//! published where its policy counts every call),
//! the failure ratio absent below the minimum number of calls, and a quota reading.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ::metrics::{Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

use breaker_core::metrics::{publish, publish_breaker, publish_quota};
use breaker_core::{
    Breaker, Clock, Duration, Instant, LivePolicy, ManualClock, Outcome, Phase, Policy, QuotaGauge, QuotaPolicy,
    Sample, SharedBreaker, WindowSize, Windowed,
};

/// A recorder that keeps the last value of every series, keyed as Prometheus prints
/// it: `name{label="value",...}` (labels sorted), and each name's unit and description.
#[derive(Default)]
struct Keep(Arc<Mutex<BTreeMap<String, f64>>>, Described);

type Described = Mutex<BTreeMap<String, (Option<Unit>, String)>>;

struct Cell(String, Arc<Mutex<BTreeMap<String, f64>>>, AtomicU64);

impl CounterFn for Cell {
    fn increment(&self, value: u64) {
        let v = self.2.fetch_add(value, Ordering::Relaxed) + value;
        self.1.lock().unwrap().insert(self.0.clone(), v as f64);
    }
    fn absolute(&self, value: u64) {
        let v = self.2.fetch_max(value, Ordering::Relaxed).max(value);
        self.1.lock().unwrap().insert(self.0.clone(), v as f64);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, _: f64) {
        unreachable!("published gauges are set")
    }
    fn decrement(&self, _: f64) {
        unreachable!("published gauges are set")
    }
    fn set(&self, value: f64) {
        self.1.lock().unwrap().insert(self.0.clone(), value);
    }
}

fn series(key: &Key) -> String {
    let mut labels: Vec<String> = key.labels().map(|l| format!("{}=\"{}\"", l.key(), l.value())).collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Keep {
    fn cell(&self, key: &Key) -> Arc<Cell> {
        Arc::new(Cell(series(key), self.0.clone(), AtomicU64::new(0)))
    }
    fn get(&self, series: &str) -> Option<f64> {
        self.0.lock().unwrap().get(series).copied()
    }
    fn describe(&self, name: KeyName, unit: Option<Unit>, text: SharedString) {
        self.1
            .lock()
            .unwrap()
            .insert(name.as_str().to_owned(), (unit, text.into_owned()));
    }
    fn of(&self, breaker: &str) -> Vec<String> {
        let needle = format!("breaker=\"{breaker}\"");
        self.0
            .lock()
            .unwrap()
            .keys()
            .filter(|k| k.contains(&needle))
            .cloned()
            .collect()
    }
}

impl Recorder for Keep {
    fn describe_counter(&self, name: KeyName, unit: Option<Unit>, text: SharedString) {
        self.describe(name, unit, text);
    }
    fn describe_gauge(&self, name: KeyName, unit: Option<Unit>, text: SharedString) {
        self.describe(name, unit, text);
    }
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        // Counters are kept by value in the cell: one cell per series.
        let name = series(key);
        let start = self.get(&name).unwrap_or(0.0) as u64;
        let cell = self.cell(key);
        cell.2.store(start, Ordering::Relaxed);
        Counter::from_arc(cell)
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.cell(key))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
static PLAIN: SharedBreaker = SharedBreaker::new(&POLICY);
breaker_core::register!(PLAIN, "metrics-test/plain", CLOCK);
static IDLE: SharedBreaker = SharedBreaker::new(&POLICY);
breaker_core::register!(IDLE, "metrics-test/idle", CLOCK);
static TWIN_A: SharedBreaker = SharedBreaker::new(&POLICY);
static TWIN_B: SharedBreaker = SharedBreaker::new(&POLICY);
breaker_core::register!(TWIN_A, "metrics-test/twin", CLOCK);
breaker_core::register!(TWIN_B, "metrics-test/twin", CLOCK);
static RATE: Policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(30)).with_min_calls(4);
static WINDOWED: SharedBreaker<Windowed> = SharedBreaker::windowed(&RATE, Windowed::calls(()));
breaker_core::register!(WINDOWED, "metrics-test/windowed", CLOCK);
static COUNTING_POLICY: Policy = Policy::new(2, Duration::from_secs(30)).counting_calls();
static COUNTING: SharedBreaker = SharedBreaker::new(&COUNTING_POLICY);
breaker_core::register!(COUNTING, "metrics-test/counting", CLOCK);

/// A window with a slow-call rule, on a clock of its own (the test moves it).
static SLOW_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
static SLOW_RULE: Policy = Policy::failure_rate(50, WindowSize::Calls(10), Duration::from_secs(30))
    .with_min_calls(4)
    .with_slow_calls(Duration::from_secs(1), 80);
static SLOW: SharedBreaker<Windowed> = SharedBreaker::windowed(&SLOW_RULE, Windowed::calls(()));
breaker_core::register!(SLOW, "metrics-test/slow", SLOW_CLOCK);

fn state_set(keep: &Keep, breaker: &str) -> [f64; 3] {
    ["closed", "open", "half_open"].map(|s| {
        keep.get(&format!("breaker_state{{breaker=\"{breaker}\",state=\"{s}\"}}"))
            .unwrap()
    })
}

#[test]
fn a_breaker_is_published_through_its_life_with_one_state_at_a_time() {
    let keep = Keep::default();
    let b = "metrics-test/plain";
    let at = || ::metrics::with_local_recorder(&keep, publish);
    let get = |s: &str| keep.get(&s.replace("B", b));

    at();
    assert_eq!(state_set(&keep, b), [1.0, 0.0, 0.0]);
    assert_eq!(get("breaker_open_remaining_seconds{breaker=\"B\"}"), Some(0.0));
    assert_eq!(
        get("breaker_calls_total{breaker=\"B\",outcome=\"rejected\"}"),
        Some(0.0)
    );
    // Calls that succeeded or were neutral are not counted by a shared breaker: not
    // published as zeros.
    assert!(
        keep.of(b)
            .iter()
            .filter(|s| s.starts_with("breaker_calls_total"))
            .all(|s| !s.contains("success") && !s.contains("neutral")),
        "{:?}",
        keep.of(b)
    );

    ::metrics::with_local_recorder(&keep, || {
        for _ in 0..2 {
            PLAIN.try_acquire(&CLOCK).unwrap().record(Outcome::STRIKE);
        }
        for _ in 0..3 {
            assert!(PLAIN.try_acquire(&CLOCK).is_err());
        }
    });
    CLOCK.advance(Duration::from_secs(10));
    at();
    assert_eq!(state_set(&keep, b), [0.0, 1.0, 0.0]);
    assert_eq!(get("breaker_open_remaining_seconds{breaker=\"B\"}"), Some(20.0));
    assert_eq!(get("breaker_calls_total{breaker=\"B\",outcome=\"failure\"}"), Some(2.0));
    assert_eq!(
        get("breaker_calls_total{breaker=\"B\",outcome=\"rejected\"}"),
        Some(3.0)
    );
    assert_eq!(get("breaker_trips_total{breaker=\"B\"}"), Some(1.0));
    assert_eq!(
        get("breaker_transitions_total{breaker=\"B\",from=\"closed\",to=\"open\"}"),
        Some(1.0)
    );

    // The cooldown passes; the probe succeeds.
    CLOCK.advance(Duration::from_secs(20));
    let now = CLOCK.now();
    ::metrics::with_local_recorder(&keep, || {
        let p = PLAIN.try_acquire(&CLOCK).unwrap();
        at();
        assert_eq!(state_set(&keep, b), [0.0, 0.0, 1.0]);
        p.record(Outcome::Success);
    });
    at();
    assert_eq!(state_set(&keep, b), [1.0, 0.0, 0.0]);
    assert_eq!(get("breaker_open_remaining_seconds{breaker=\"B\"}"), Some(0.0));
    assert_eq!(
        get("breaker_probes_total{breaker=\"B\",outcome=\"success\"}"),
        Some(1.0)
    );
    assert_eq!(
        get("breaker_transitions_total{breaker=\"B\",from=\"open\",to=\"half_open\"}"),
        Some(1.0)
    );
    assert_eq!(
        get("breaker_transitions_total{breaker=\"B\",from=\"half_open\",to=\"closed\"}"),
        Some(1.0)
    );

    // Forced open: no probe until a reset.
    PLAIN.force_open(now);
    at();
    assert_eq!(
        get("breaker_open_remaining_seconds{breaker=\"B\"}"),
        Some(f64::INFINITY)
    );
    PLAIN.reset(now);
    at();
    assert_eq!(state_set(&keep, b), [1.0, 0.0, 0.0]);
}

static PROBE_POLICY: Policy = Policy::new(1, Duration::from_secs(10)).with_probe_lease(Duration::from_secs(5));
static PROBED: SharedBreaker = SharedBreaker::new(&PROBE_POLICY);
static PROBE_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
breaker_core::register!(PROBED, "metrics-test/probed", PROBE_CLOCK);

#[test]
fn probes_are_published_by_outcome_and_changes_of_phase_by_kind_for_every_breaker() {
    let keep = Keep::default();
    let b = "metrics-test/probed";
    let probes = |outcome: &str| {
        keep.get(&format!(
            "breaker_probes_total{{breaker=\"{b}\",outcome=\"{outcome}\"}}"
        ))
    };
    let changes = |from: &str, to: &str| {
        keep.get(&format!(
            "breaker_transitions_total{{breaker=\"{b}\",from=\"{from}\",to=\"{to}\"}}"
        ))
    };
    let kinds = [
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
        ("half_open", "open"),
        ("open", "closed"),
    ];
    let scrape = || {
        ::metrics::with_local_recorder(&keep, publish);
        (
            ["success", "failure", "neutral", "lapsed"].map(|o| probes(o).unwrap()),
            kinds.map(|(from, to)| changes(from, to).unwrap()),
        )
    };
    let clock = &PROBE_CLOCK;
    let cooldown = || clock.advance(Duration::from_secs(10));
    let probe = || PROBED.try_acquire(clock).expect("the probe");

    // Never called: every series there, at zero; no observer is needed for any of them.
    assert_eq!(scrape(), ([0.0; 4], [0.0; 5]));

    // Trip; a probe answered neutral (the slot freed), then one that fails (re-open).
    PROBED.try_acquire(clock).unwrap().record(Outcome::STRIKE);
    cooldown();
    probe().record(Outcome::NEUTRAL);
    probe().record(Outcome::STRIKE);
    assert_eq!(scrape(), ([0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0, 0.0]));

    // A probe whose lease lapses (noticed by the next caller, who becomes the probe once
    // the longer cooldown of the backoff has passed), a dropped permit (a failed probe),
    // then a success that closes.
    clock.advance(Duration::from_secs(20));
    let lost = probe();
    clock.advance(Duration::from_secs(5));
    assert!(!PROBED.would_allow(clock.now()));
    std::mem::forget(lost);
    clock.advance(Duration::from_secs(40));
    drop(probe());
    clock.advance(Duration::from_secs(80));
    probe().record(Outcome::Success);
    assert_eq!(scrape(), ([1.0, 2.0, 1.0, 1.0], [1.0, 4.0, 1.0, 3.0, 0.0]));

    // Forced open from closed, then reset from open: counted by kind too.
    PROBED.force_open(clock.now());
    PROBED.reset(clock.now());
    assert_eq!(scrape(), ([1.0, 2.0, 1.0, 1.0], [2.0, 4.0, 1.0, 3.0, 1.0]));
    assert_eq!(PROBED.counters().transitions.get(Phase::Open, Phase::Closed), 1);
}

#[test]
fn never_called_breakers_are_published_and_shared_names_are_not() {
    let keep = Keep::default();
    ::metrics::with_local_recorder(&keep, publish);
    assert_eq!(state_set(&keep, "metrics-test/idle"), [1.0, 0.0, 0.0]);
    assert_eq!(
        keep.get("breaker_calls_total{breaker=\"metrics-test/idle\",outcome=\"failure\"}"),
        Some(0.0)
    );
    assert_eq!(keep.of("metrics-test/twin"), Vec::<String>::new());
    // Live: the shadow gauge at 0.
    assert_eq!(keep.get("breaker_shadow{breaker=\"metrics-test/idle\"}"), Some(0.0));
    // Not windowed: no window series.
    assert!(keep
        .of("metrics-test/idle")
        .iter()
        .all(|s| !s.contains("ratio") && !s.contains("window")));
}

#[test]
fn a_breaker_counting_every_call_publishes_its_successes_and_neutral_outcomes() {
    use breaker_core::Verdict;
    for r in [Ok(()), Ok(()), Err(Verdict::Neutral), Ok(()), Err(Verdict::Strike)] {
        let _ = COUNTING.call_classified(&CLOCK, || r, |v| *v);
    }
    let keep = Keep::default();
    ::metrics::with_local_recorder(&keep, publish);
    let calls = |outcome: &str| {
        keep.get(&format!(
            "breaker_calls_total{{breaker=\"metrics-test/counting\",outcome=\"{outcome}\"}}"
        ))
    };
    assert_eq!(
        ["success", "neutral", "failure", "rejected"].map(calls),
        [Some(3.0), Some(1.0), Some(1.0), Some(0.0)]
    );
    // A breaker that does not count has no success or neutral series (not a zero).
    assert_eq!(
        keep.get("breaker_calls_total{breaker=\"metrics-test/idle\",outcome=\"success\"}"),
        None
    );
    assert_eq!(
        keep.get("breaker_calls_total{breaker=\"metrics-test/idle\",outcome=\"neutral\"}"),
        None
    );
}

#[test]
fn the_failure_ratio_is_absent_below_the_minimum_number_of_calls() {
    let keep = Keep::default();
    let b = "metrics-test/windowed";
    let ratio = format!("breaker_failure_ratio{{breaker=\"{b}\"}}");
    let call = |outcome| WINDOWED.try_acquire(&CLOCK).unwrap().record(outcome);
    call(Outcome::STRIKE);
    call(Outcome::Success);
    call(Outcome::Success);
    ::metrics::with_local_recorder(&keep, publish);
    assert_eq!(keep.get(&format!("breaker_window_calls{{breaker=\"{b}\"}}")), Some(3.0));
    assert_eq!(keep.get(&ratio), None);
    call(Outcome::Success);
    ::metrics::with_local_recorder(&keep, publish);
    assert_eq!(keep.get(&ratio), Some(0.25));
    // No slow-call rule: no slow-call ratio.
    assert!(keep.of(b).iter().all(|s| !s.contains("slow")));
}

#[test]
fn with_a_slow_call_rule_the_slow_call_ratio_is_published_beside_the_failure_ratio() {
    let keep = Keep::default();
    let b = "metrics-test/slow";
    // Four calls: a failure, a success of 2 s (slow: over 1 s), two quick successes.
    let call = |outcome, took| {
        let started = SLOW_CLOCK.now();
        let permit = SLOW.try_acquire(&SLOW_CLOCK).unwrap();
        SLOW_CLOCK.advance(Duration::from_millis(took));
        permit.record_timed(outcome, started);
    };
    call(Outcome::STRIKE, 10);
    call(Outcome::Success, 2_000);
    call(Outcome::Success, 10);
    call(Outcome::Success, 10);
    ::metrics::with_local_recorder(&keep, publish);
    assert_eq!(keep.get(&format!("breaker_window_calls{{breaker=\"{b}\"}}")), Some(4.0));
    assert_eq!(
        keep.get(&format!("breaker_failure_ratio{{breaker=\"{b}\"}}")),
        Some(0.25)
    );
    assert_eq!(
        keep.get(&format!("breaker_slow_call_ratio{{breaker=\"{b}\"}}")),
        Some(0.25)
    );
}

#[test]
fn every_series_published_is_described_and_the_remaining_time_in_seconds() {
    let keep = Keep::default();
    ::metrics::with_local_recorder(&keep, publish);
    let names: std::collections::BTreeSet<String> = keep
        .0
        .lock()
        .unwrap()
        .keys()
        .map(|series| series[..series.find('{').unwrap()].to_owned())
        .collect();
    assert!(names.contains("breaker_transitions_total") && names.contains("breaker_window_calls"));
    let described = keep.1.lock().unwrap();
    for name in &names {
        let (_, text) = described.get(name).unwrap_or_else(|| panic!("{name} is not described"));
        assert!(!text.is_empty(), "{name}");
    }
    assert_eq!(described["breaker_open_remaining_seconds"].0, Some(Unit::Seconds));
    assert_eq!(described["breaker_state"].0, None);
}

#[test]
fn a_quota_reading_is_published_with_its_light_as_a_state_set() {
    let keep = Keep::default();
    let mut gauge = QuotaGauge::<10>::new(QuotaPolicy::new());
    let s = |secs: u32| Instant::from_millis(secs * 1000);
    ::metrics::with_local_recorder(&keep, || publish_quota("q", &gauge.reading()));
    assert_eq!(keep.of("q"), Vec::<String>::new());
    gauge.observe(Sample::new(s(0), 4_900, 5_000));
    ::metrics::with_local_recorder(&keep, || publish_quota("q", &gauge.reading()));
    assert_eq!(keep.get("breaker_quota_remaining{breaker=\"q\"}"), Some(4_900.0));
    assert_eq!(keep.get("breaker_quota_share_ratio{breaker=\"q\"}"), Some(0.98));
    assert_eq!(keep.get("breaker_quota_exhausted_in_seconds{breaker=\"q\"}"), None);
    gauge.observe(Sample::new(s(30), 4_100, 5_000));
    ::metrics::with_local_recorder(&keep, || publish_quota("q", &gauge.reading()));
    assert_eq!(
        keep.get("breaker_quota_exhausted_in_seconds{breaker=\"q\"}"),
        Some(153.75)
    );
    for (light, on) in [("green", 1.0), ("amber", 0.0), ("red", 0.0)] {
        assert_eq!(
            keep.get(&format!("breaker_quota_light{{breaker=\"q\",light=\"{light}\"}}")),
            Some(on)
        );
    }
}

#[test]
fn breakers_built_at_run_time_are_published_by_name_and_go_when_no_longer_published() {
    let keep = Keep::default();
    let clock = ManualClock::new(Instant::ZERO);
    let search = Arc::new(SharedBreaker::with_policy(LivePolicy::new(Policy::new(
        2,
        Duration::from_secs(30),
    ))));
    let mut radio = Breaker::new(Policy::new(1, Duration::from_secs(5)));
    let scrape = |search: Option<&SharedBreaker<(), LivePolicy>>, radio: &Breaker| {
        ::metrics::with_local_recorder(&keep, || {
            publish();
            if let Some(search) = search {
                publish_breaker("runtime/search", search, &clock);
            }
            publish_breaker("runtime/radio", radio, &clock);
        })
    };
    scrape(Some(&search), &radio);
    assert_eq!(state_set(&keep, "runtime/search"), [1.0, 0.0, 0.0]);
    assert_eq!(state_set(&keep, "runtime/radio"), [1.0, 0.0, 0.0]);

    for _ in 0..2 {
        let _ = search.call(&clock, || Err::<(), _>(std::io::Error::other("down")));
    }
    let _ = radio.call(&clock, || Err::<(), _>(std::io::Error::other("nack")));
    let _ = radio.call(&clock, || Ok::<_, std::io::Error>(()));
    scrape(Some(&search), &radio);
    assert_eq!(state_set(&keep, "runtime/search"), [0.0, 1.0, 0.0]);
    assert_eq!(
        keep.get("breaker_open_remaining_seconds{breaker=\"runtime/search\"}"),
        Some(30.0)
    );
    assert_eq!(keep.get("breaker_trips_total{breaker=\"runtime/search\"}"), Some(1.0));
    assert_eq!(
        keep.get("breaker_calls_total{breaker=\"runtime/search\",outcome=\"failure\"}"),
        Some(2.0)
    );
    assert_eq!(state_set(&keep, "runtime/radio"), [0.0, 1.0, 0.0]);
    assert_eq!(
        keep.get("breaker_calls_total{breaker=\"runtime/radio\",outcome=\"rejected\"}"),
        Some(1.0)
    );
    // In shadow mode, said by its gauge: the would-be refusal is counted as rejected.
    radio.set_shadow(true);
    let _ = radio.call(&clock, || Ok::<_, std::io::Error>(()));
    scrape(Some(&search), &radio);
    assert_eq!(keep.get("breaker_shadow{breaker=\"runtime/radio\"}"), Some(1.0));
    assert_eq!(keep.get("breaker_shadow{breaker=\"runtime/search\"}"), Some(0.0));
    assert_eq!(
        keep.get("breaker_calls_total{breaker=\"runtime/radio\",outcome=\"rejected\"}"),
        Some(2.0)
    );
    radio.set_shadow(false);
    // No window series for them, and the registry's breakers are still there.
    assert!(keep.of("runtime/search").iter().all(|s| !s.contains("window")));
    assert_eq!(state_set(&keep, "metrics-test/idle"), [1.0, 0.0, 0.0]);

    // Dropped and no longer published: a scrape writes nothing more for it (the exporter
    // forgets it after its idle timeout), while the others go on.
    drop(search);
    keep.0.lock().unwrap().retain(|k, _| !k.contains("runtime/"));
    scrape(None, &radio);
    assert_eq!(keep.of("runtime/search"), Vec::<String>::new());
    assert_eq!(state_set(&keep, "runtime/radio"), [0.0, 1.0, 0.0]);
}
