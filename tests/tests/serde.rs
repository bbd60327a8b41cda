//! The `serde` feature: the JSON a health endpoint returns, and snapshots and policies
//! that deserialize only into states and settings a breaker can hold.

use breaker_core::registry::{Entry, Table};
use breaker_core::{
    Bucket, Counters, Duration, History, Instant, ManualClock, Phase, Policy, PolicyError, Reason, RefusalReason,
    Refused, SharedBreaker, Snapshot, State, Transition, TransitionCounts, WindowSize, WindowSnapshot, Windowed,
};
use serde_json::{json, Value};

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn states_are_tagged_by_phase_in_milliseconds() {
    assert_eq!(
        to_json(&State::Closed { strikes: 2 }),
        json!({"phase": "closed", "strikes": 2})
    );
    assert_eq!(
        to_json(&State::Open {
            remaining: Duration::from_millis(348),
            forced: false
        }),
        json!({"phase": "open", "remaining_ms": 348, "forced": false})
    );
    assert_eq!(
        to_json(&State::HalfOpen {
            probing: true,
            streak: 1
        }),
        json!({"phase": "half_open", "probing": true, "streak": 1})
    );
    assert_eq!(to_json(&Phase::HalfOpen), json!("half_open"));
    assert_eq!(to_json(&Reason::ProbeFailed), json!("probe_failed"));
    assert_eq!(
        to_json(&Refused {
            reason: RefusalReason::Open,
            retry_in: Some(Duration::from_secs(2))
        }),
        json!({"reason": "open", "retry_in_ms": 2000})
    );
    assert_eq!(
        to_json(&Transition {
            from: Phase::Closed,
            to: Phase::Open,
            why: Reason::Strikes,
            at: Instant::from_millis(1200),
            cooldown: Duration::from_secs(30),
        }),
        json!({"from": "closed", "to": "open", "why": "strikes", "at_ms": 1200, "cooldown_ms": 30000})
    );
}

static POLICY: Policy = Policy::new(3, Duration::from_secs(30))
    .with_probe_lease(Duration::from_secs(5))
    .with_backoff(2, Duration::from_mins(5));
static RADIO: SharedBreaker = SharedBreaker::new(&POLICY);
static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(1000));
static ENTRIES: [Entry; 1] = [Entry::new("radio", &RADIO, &CLOCK, "radio.rs", 7)];

#[test]
fn a_registry_table_serializes_as_its_reports() {
    for _ in 0..3 {
        let _ = RADIO.call(&CLOCK, || {
            Err::<(), _>(std::io::Error::from(std::io::ErrorKind::TimedOut))
        });
    }
    assert_eq!(
        to_json(&Table::new(&ENTRIES)),
        json!([{
            "name": "radio",
            "now_ms": 1000,
            "state": {"phase": "open", "remaining_ms": 30000, "forced": false},
            // A shared breaker keeps no calls, successes or neutrals: absent, not zeros.
            "counters": {
                "failures": 3, "skips": 0, "trips": 1, "probes": 0, "lease_expiries": 0,
                "probe_successes": 0, "probe_failures": 0, "probe_neutrals": 0,
                "transitions": {
                    "closed_to_open": 1, "open_to_half_open": 0, "half_open_to_closed": 0,
                    "half_open_to_open": 0, "open_to_closed": 0
                }
            },
            "would_allow": false,
            "shadow": false,
            "policy": {
                "trip": 3, "cooldown_ms": 30000, "probe_lease_ms": 5000, "probes_to_close": 1,
                "backoff_multiplier": 2, "max_cooldown_ms": 300000, "patient_probation": false
            },
            // It keeps no history: null, not an empty list.
            "history": null
        }])
    );
}

static COUNTING_POLICY: Policy = Policy::new(3, Duration::from_secs(30)).counting_calls();
static COUNTING: SharedBreaker = SharedBreaker::new(&COUNTING_POLICY);
static COUNTING_ENTRIES: [Entry; 1] = [Entry::new("counting", &COUNTING, &CLOCK, "counting.rs", 8)];

#[test]
fn a_report_of_a_breaker_counting_every_call_carries_its_calls_successes_and_neutrals() {
    let _ = COUNTING.call(&CLOCK, || Ok::<_, std::io::Error>(()));
    let _ = COUNTING.call(&CLOCK, || {
        Err::<(), _>(std::io::Error::from(std::io::ErrorKind::TimedOut))
    });
    let report = to_json(&Table::new(&COUNTING_ENTRIES))[0].clone();
    let counters = &report["counters"];
    assert_eq!(
        [
            &counters["calls"],
            &counters["successes"],
            &counters["neutrals"],
            &counters["failures"]
        ],
        [&json!(2), &json!(1), &json!(0), &json!(1)]
    );
    assert_eq!(report["policy"]["count_calls"], json!(true));
}

static KEEPING: SharedBreaker<History<2>> = SharedBreaker::with_observer(&POLICY, History::new(()));
static KEEPING_ENTRIES: [Entry; 1] = [Entry::new("keeping", &KEEPING, &CLOCK, "keeping.rs", 9)];

#[test]
fn a_report_lists_its_history_oldest_first_and_only_what_the_ring_keeps() {
    let history = |entries| to_json(&Table::new(entries))[0]["history"].clone();
    assert_eq!(history(&KEEPING_ENTRIES), json!([]));
    let at = |ms| Instant::from_millis(ms);
    KEEPING.force_open(at(100));
    KEEPING.reset(at(200));
    for _ in 0..3 {
        let _ = KEEPING.call(&CLOCK, || {
            Err::<(), _>(std::io::Error::from(std::io::ErrorKind::TimedOut))
        });
    }
    // Three transitions; the ring keeps two: the reset and the trip, oldest first.
    assert_eq!(
        history(&KEEPING_ENTRIES),
        json!([
            {"from": "open", "to": "closed", "why": "reset", "at_ms": 200, "cooldown_ms": 0},
            {"from": "closed", "to": "open", "why": "strikes", "at_ms": 1000, "cooldown_ms": 30000}
        ])
    );
}

fn snapshot() -> Snapshot {
    Snapshot {
        phase: Phase::Open,
        forced: false,
        probing: false,
        strikes: 0,
        streak: 0,
        step: 2,
        remaining: Duration::from_secs(17),
        // Every counter different, so that a round trip shows each one kept in its place.
        counters: Counters {
            calls: 40,
            successes: 21,
            failures: 9,
            neutrals: 2,
            skips: 5,
            trips: 3,
            probes: 4,
            lease_expiries: 1,
            probe_successes: 6,
            probe_failures: 7,
            probe_neutrals: 8,
            transitions: TransitionCounts {
                closed_to_open: 10,
                open_to_half_open: 11,
                half_open_to_closed: 12,
                half_open_to_open: 13,
                open_to_closed: 14,
            },
        },
        window: WindowSnapshot::None,
    }
}

#[test]
fn snapshots_round_trip() {
    let text = serde_json::to_string(&snapshot()).unwrap();
    assert_eq!(serde_json::from_str::<Snapshot>(&text).unwrap(), snapshot());
    let value = to_json(&snapshot());
    assert_eq!(value["remaining_ms"], json!(17000));
    assert_eq!(value["phase"], json!("open"));
}

#[test]
fn a_corrupt_snapshot_is_an_error_never_a_wrong_state() {
    let good = to_json(&snapshot());
    let corrupt = |field: &str, value: Value| {
        let mut v = good.clone();
        v[field] = value;
        serde_json::from_value::<Snapshot>(v)
    };
    assert!(corrupt("probing", json!(true)).is_err(), "probing while open");
    assert!(
        corrupt("forced", json!(true)).is_ok(),
        "forced while open is a real state"
    );
    let mut closed_forced = good.clone();
    closed_forced["phase"] = json!("closed");
    closed_forced["forced"] = json!(true);
    assert!(serde_json::from_value::<Snapshot>(closed_forced).is_err());
    assert!(corrupt("streak", json!(16)).is_err());
    assert!(corrupt("step", json!(16)).is_err());
    assert!(corrupt("strikes", json!(256)).is_err());
    assert!(corrupt("remaining_ms", json!(1u64 << 30)).is_err());
    assert!(corrupt("remaining_ms", json!(-1)).is_err());
    assert!(corrupt("phase", json!("ajar")).is_err());
    assert!(corrupt("extra", json!(1)).is_err(), "unknown field");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("counters");
    assert!(serde_json::from_value::<Snapshot>(missing).is_err());
    assert!(serde_json::from_str::<Snapshot>("{").is_err());
}

#[test]
fn policies_round_trip_and_nonsense_is_rejected() {
    let text = serde_json::to_string(&POLICY).unwrap();
    assert_eq!(serde_json::from_str::<Policy>(&text).unwrap(), POLICY);
    let patient = Policy::new(1, Duration::from_secs(60)).with_patient_probation();
    assert_eq!(serde_json::from_value::<Policy>(to_json(&patient)).unwrap(), patient);
    let base = to_json(&POLICY);
    let with = |field: &str, value: Value| {
        let mut v = base.clone();
        v[field] = value;
        serde_json::from_value::<Policy>(v)
    };
    let trip_zero = with("trip", json!(0)).unwrap_err().to_string();
    assert!(trip_zero.contains("trip must be between 1 and 255"), "{trip_zero}");
    assert!(with("max_cooldown_ms", json!(1000)).is_err(), "cap below the cooldown");
    assert!(with("cooldown_ms", json!(0)).is_err());
    assert!(with("probes_to_close", json!(16)).is_err());
    // Left out, patient probation is off.
    let mut without = base.clone();
    without.as_object_mut().unwrap().remove("patient_probation");
    assert_eq!(serde_json::from_value::<Policy>(without).unwrap(), POLICY);
}

#[test]
fn a_half_open_rate_round_trips_and_is_written_only_where_set() {
    let rated = Policy::new(3, Duration::from_secs(30)).with_half_open_rate(10, 50);
    let v = to_json(&rated);
    assert_eq!(v["half_open"], json!({"calls": 10, "failure_rate": 50}));
    assert_eq!(serde_json::from_value::<Policy>(v.clone()).unwrap(), rated);
    // Without the rule, no field: JSON written before it still parses to the same policy.
    assert!(to_json(&POLICY).get("half_open").is_none());
    let with = |half_open: Value| {
        let mut w = v.clone();
        w["half_open"] = half_open;
        serde_json::from_value::<Policy>(w)
    };
    let calls = with(json!({"calls": 16, "failure_rate": 50})).unwrap_err().to_string();
    assert!(
        calls.contains("half-open permitted calls must be between 1 and 15"),
        "{calls}"
    );
    assert!(with(json!({"calls": 10, "failure_rate": 0})).is_err());
    assert!(with(json!({"calls": 10})).is_err(), "the rate is needed");
    assert!(
        with(json!({"calls": 10, "failure_rate": 50, "wait": true})).is_err(),
        "unknown field"
    );
    let mut both = v.clone();
    both["probes_to_close"] = json!(2);
    let both = serde_json::from_value::<Policy>(both).unwrap_err().to_string();
    assert!(both.contains("exclude each other"), "{both}");
}

#[test]
fn durations_past_the_maximum_are_errors_not_clamps() {
    assert_eq!(
        serde_json::from_str::<Duration>("1500").unwrap(),
        Duration::from_millis(1500)
    );
    assert_eq!(serde_json::from_str::<Duration>("1073741823").unwrap(), Duration::MAX);
    assert!(serde_json::from_str::<Duration>("1073741824").is_err());
    assert_eq!(
        serde_json::from_str::<Instant>("4294967295").unwrap(),
        Instant::from_millis(u32::MAX)
    );
}

#[test]
fn windowed_snapshots_round_trip_and_an_impossible_window_is_an_error() {
    let calls = Snapshot {
        phase: Phase::Closed,
        step: 0,
        remaining: Duration::ZERO,
        window: WindowSnapshot::Calls {
            len: 5,
            failures: 0b00101,
            slow: 0b01000,
        },
        ..snapshot()
    };
    let back: Snapshot = serde_json::from_value(to_json(&calls)).unwrap();
    assert_eq!(back, calls);
    assert_eq!(to_json(&calls)["window"]["calls"]["len"], json!(5));
    let mut buckets = [Bucket::default(); 10];
    buckets[0] = Bucket {
        calls: 7,
        failures: 3,
        slow: 1,
    };
    let time = Snapshot {
        window: WindowSnapshot::Time { buckets },
        ..calls
    };
    assert_eq!(serde_json::from_value::<Snapshot>(to_json(&time)).unwrap(), time);
    // Left out, the window is none (what snapshots without one look like).
    let mut without = to_json(&snapshot());
    without.as_object_mut().unwrap().remove("window");
    assert_eq!(serde_json::from_value::<Snapshot>(without).unwrap(), snapshot());
    // A sample beyond the samples held, a failure that is also slow, a window while open,
    // more failures than calls: none is a state a breaker can be in.
    let bad = |edit: &dyn Fn(&mut Value)| {
        let mut v = to_json(&calls);
        edit(&mut v);
        serde_json::from_value::<Snapshot>(v)
    };
    assert!(bad(&|v| v["window"]["calls"]["failures"] = json!(1u64 << 5)).is_err());
    assert!(bad(&|v| v["window"]["calls"]["slow"] = json!(0b00001)).is_err());
    assert!(bad(&|v| v["window"]["calls"]["len"] = json!(52)).is_err());
    assert!(bad(&|v| v["phase"] = json!("open")).is_err());
    let mut v = to_json(&time);
    v["window"]["time"][0]["failures"] = json!(8);
    assert!(serde_json::from_value::<Snapshot>(v).is_err());
}

#[test]
fn windowed_policies_round_trip_and_nonsense_is_rejected() {
    let count = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30))
        .with_min_calls(10)
        .with_slow_calls(Duration::from_secs(2), 80);
    let json = to_json(&count);
    assert_eq!(json["trip"], json!(0));
    assert_eq!(
        json["window"],
        json!({"calls": 20, "failure_rate": 50, "min_calls": 10, "slow_call_ms": 2000, "slow_rate": 80})
    );
    assert_eq!(serde_json::from_value::<Policy>(json.clone()).unwrap(), count);
    let time = Policy::failure_rate(25, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(30));
    assert_eq!(serde_json::from_value::<Policy>(to_json(&time)).unwrap(), time);
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut v = json.clone();
        edit(&mut v);
        serde_json::from_value::<Policy>(v)
    };
    assert!(with(&|v| v["window"]["failure_rate"] = json!(101)).is_err());
    assert!(
        with(&|v| v["window"]["min_calls"] = json!(21)).is_err(),
        "more than the window holds"
    );
    assert!(
        with(&|v| v["window"]["time_ms"] = json!(10_000)).is_err(),
        "calls and time"
    );
    assert!(with(&|v| v["trip"] = json!(3)).is_err(), "a trip count beside a window");
    assert!(with(&|v| {
        v["window"].as_object_mut().unwrap().remove("slow_rate");
    })
    .is_err());
    // Slow failures: written only when counted (so existing JSON reads as before), and
    // refused without a slow-call rule.
    let counted = count.with_slow_failures(true);
    let counted_json = to_json(&counted);
    assert_eq!(counted_json["window"]["slow_failures"], json!(true));
    assert_eq!(serde_json::from_value::<Policy>(counted_json).unwrap(), counted);
    assert_eq!(with(&|v| v["window"]["slow_failures"] = json!(false)).unwrap(), count);
    assert!(with(&|v| {
        let w = v["window"].as_object_mut().unwrap();
        w.remove("slow_rate");
        w.remove("slow_call_ms");
        w.insert("slow_failures".into(), json!(true));
    })
    .is_err());
    // Counting every call: written only when set, read back.
    let counting = count.counting_calls();
    let counting_json = to_json(&counting);
    assert_eq!(counting_json["count_calls"], json!(true));
    assert_eq!(serde_json::from_value::<Policy>(counting_json).unwrap(), counting);
    assert!(to_json(&count).get("count_calls").is_none());
    assert_eq!(with(&|v| v["count_calls"] = json!(false)).unwrap(), count);
    // A count window of 1000 calls (a ring's), and no more than 1008.
    assert_eq!(
        with(&|v| {
            v["window"]["calls"] = json!(1000);
        })
        .unwrap()
        .window()
        .map(|w| w.size()),
        Some(WindowSize::Calls(1000))
    );
    assert!(with(&|v| v["window"]["calls"] = json!(1009)).is_err());
}

#[test]
fn a_windowed_policy_from_a_configuration_file_is_refused_by_a_breaker_without_a_window() {
    // A configuration file may hold either kind of policy: the fallible constructors
    // answer with an error, not a panic, and a windowed breaker takes it.
    let file = serde_json::to_string(&Policy::failure_rate(
        50,
        WindowSize::Calls(20),
        Duration::from_secs(30),
    ))
    .unwrap();
    let policy: Policy = serde_json::from_str(&file).unwrap();
    assert_eq!(
        SharedBreaker::try_with_policy(policy).err(),
        Some(PolicyError::NeedsWindow)
    );
    let breaker = SharedBreaker::try_with_policy_and_observer(policy, Windowed::calls(())).unwrap();
    assert_eq!(breaker.policy().window().map(|w| w.failure_rate()), Some(50));
}

#[test]
fn health_serializes_its_status_beside_the_breakers_reports() {
    static HEALTH_POLICY: Policy = Policy::new(1, Duration::from_secs(30));
    static A: SharedBreaker = SharedBreaker::new(&HEALTH_POLICY);
    static B: SharedBreaker = SharedBreaker::new(&HEALTH_POLICY);
    static TWO: [Entry; 2] = [
        Entry::new("a", &A, &CLOCK, "a.rs", 1),
        Entry::new("b", &B, &CLOCK, "b.rs", 2),
    ];
    let status = |critical: &[&str]| {
        let json = serde_json::to_value(breaker_core::registry::Health::new(&TWO, critical)).unwrap();
        assert_eq!(json["breakers"].as_array().unwrap().len(), 2);
        json["status"].as_str().unwrap().to_owned()
    };
    assert_eq!(status(&["b"]), "up");
    A.force_open(breaker_core::Clock::now(&CLOCK));
    assert_eq!(status(&["b"]), "degraded");
    assert_eq!(status(&["a"]), "down");
    assert_eq!(status(&["not-registered"]), "degraded");
    A.reset(breaker_core::Clock::now(&CLOCK));
    assert_eq!(status(&["a"]), "up");
}
