//! The `serde` feature: the JSON a health endpoint returns, and snapshots and policies
//! that deserialize only into states and settings a breaker can hold.

use breaker_core::registry::{Entry, Table};
use breaker_core::{
    Counters, Duration, Instant, ManualClock, Phase, Policy, Reason, RefusalReason, Refused, SharedBreaker, Snapshot,
    State, Transition,
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
            "counters": {
                "calls": 0, "successes": 0, "failures": 3, "neutrals": 0,
                "skips": 0, "trips": 1, "probes": 0, "lease_expiries": 0
            },
            "would_allow": false,
            "policy": {
                "trip": 3, "cooldown_ms": 30000, "probe_lease_ms": 5000, "probes_to_close": 1,
                "backoff_multiplier": 2, "max_cooldown_ms": 300000, "patient_probation": false
            }
        }])
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
        counters: Counters {
            failures: 9,
            trips: 3,
            ..Counters::ZERO
        },
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
