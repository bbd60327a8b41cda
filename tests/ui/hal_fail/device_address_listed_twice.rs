use breaker_core::{DeviceBreakers, Duration, Policy, SharedBreaker};

static POLICY: Policy = Policy::new(3, Duration::from_secs(5));
static BUS: DeviceBreakers<2> = DeviceBreakers::new([
    (0x48, SharedBreaker::new(&POLICY)),
    (0x48, SharedBreaker::new(&POLICY)),
]);

fn main() {
    let _ = &BUS;
}
