use breaker_core::{DeviceBreakers, Duration, ManualClock, Instant, Policy, SharedBreaker};

static POLICY: Policy = Policy::new(3, Duration::from_secs(5));
static BUS: DeviceBreakers<2> = DeviceBreakers::new([0x48, 0x49], [const { SharedBreaker::new(&POLICY) }; 2]);
static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

// 0x4A is not in the table: there is no breaker to list.
breaker_core::register!(BUS[0x4A], "i2c1/missing", CLOCK);

fn main() {}
