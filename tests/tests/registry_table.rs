//! The registry as an aligned table (`registry::Table`), compared whole.

use breaker_core::registry::{Entry, Table};
use breaker_core::{Classify, Duration, Instant, ManualClock, Policy, SharedBreaker};

#[derive(Debug)]
struct Nack;
impl Classify for Nack {}

static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
static RADIO: SharedBreaker = SharedBreaker::new(&POLICY);
static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
static ENTRIES: [Entry; 2] = [
    Entry::new("radio", &RADIO, &CLOCK, "radio.rs", 1),
    Entry::new("app::sensor::read", &SENSOR, &CLOCK, "sensor.rs", 2),
];

#[test]
fn the_table_aligns_every_column() {
    for _ in 0..2 {
        let _ = RADIO.call(&CLOCK, || Err::<(), _>(Nack));
    }
    let _ = RADIO.call(&CLOCK, || Ok::<_, Nack>(()));
    CLOCK.advance(Duration::from_millis(29_798));
    let _ = SENSOR.call(&CLOCK, || Err::<(), _>(Nack));
    let expected = "\
breaker            state                            allow  failures  skips  trips  probes  lease expiries
radio              open, cooling down (202ms left)  no            2      1      1       0               0
app::sensor::read  closed (1 strike)                yes           1      0      0       0               0
";
    assert_eq!(Table::new(&ENTRIES).to_string(), expected);
    assert_eq!(
        ENTRIES[0].report().to_string(),
        "radio: open, cooling down (202ms left) | failures 2, skips 1, trips 1, probes 0, lease expiries 0"
    );
}
