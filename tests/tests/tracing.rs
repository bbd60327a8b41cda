//! The `tracing` feature: one event per transition with the documented target, level and
//! fields, and nothing per call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use breaker_core::{Classify, Clock, Duration, Instant, ManualClock, Policy, SharedBreaker, TracingLog};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event as caught: level, target and fields (the message under `message`).
#[derive(Debug, Clone, PartialEq)]
struct Caught {
    level: Level,
    target: String,
    fields: BTreeMap<String, String>,
}

#[derive(Default, Clone)]
struct Catcher(Arc<Mutex<Vec<Caught>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Catcher {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Caught {
            level: *event.metadata().level(),
            target: event.metadata().target().to_string(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[derive(Debug)]
struct Down;
impl Classify for Down {}

fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn one_event_per_transition_with_the_documented_fields_and_none_per_call() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
    static UPSTREAM: SharedBreaker<TracingLog> = SharedBreaker::with_observer(&POLICY, TracingLog::new("upstream"));
    assert_eq!(UPSTREAM.observer().name(), "upstream");
    let clock = ManualClock::new(Instant::ZERO);
    let catcher = Catcher::default();
    tracing::subscriber::with_default(catcher.clone(), || {
        // Calls that change nothing are silent.
        for _ in 0..100 {
            UPSTREAM.call(&clock, || Ok::<_, Down>(())).unwrap();
        }
        let _ = UPSTREAM.call(&clock, || Err::<(), _>(Down));
        assert!(
            catcher.0.lock().unwrap().is_empty(),
            "a strike below the trip is silent"
        );
        let _ = UPSTREAM.call(&clock, || Err::<(), _>(Down)); // trips
        for _ in 0..10 {
            assert!(UPSTREAM.call(&clock, || Ok::<_, Down>(())).is_err()); // refused: silent
        }
        clock.advance(Duration::from_secs(30));
        UPSTREAM.call(&clock, || Ok::<_, Down>(())).unwrap(); // the probe closes it
        UPSTREAM.force_open(clock.now());
    });
    let caught = catcher.0.lock().unwrap().clone();
    let expected = [
        (
            Level::WARN,
            fields(&[
                ("message", "circuit breaker opened"),
                ("breaker", "upstream"),
                ("from", "closed"),
                ("to", "open"),
                ("reason", "strikes"),
                ("next_probe_in_ms", "30000"),
            ]),
        ),
        (
            Level::INFO,
            fields(&[
                ("message", "circuit breaker half-open: probing"),
                ("breaker", "upstream"),
                ("from", "open"),
                ("to", "half_open"),
                ("reason", "cooldown_elapsed"),
            ]),
        ),
        (
            Level::INFO,
            fields(&[
                ("message", "circuit breaker closed"),
                ("breaker", "upstream"),
                ("from", "half_open"),
                ("to", "closed"),
                ("reason", "recovered"),
            ]),
        ),
        (
            Level::WARN,
            fields(&[
                ("message", "circuit breaker forced open until reset"),
                ("breaker", "upstream"),
                ("from", "closed"),
                ("to", "open"),
                ("reason", "forced_open"),
            ]),
        ),
    ];
    assert_eq!(caught.len(), expected.len(), "{caught:#?}");
    for (got, (level, fields)) in caught.iter().zip(expected) {
        assert_eq!(
            (got.level, got.target.as_str(), &got.fields),
            (level, "breaker", &fields)
        );
    }
}
