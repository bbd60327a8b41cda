use breaker_core::{DeviceBreakers, Duration, Policy, SharedBreaker};

static POLICY: Policy = Policy::new(3, Duration::from_secs(5));
static BUS: DeviceBreakers<2> = DeviceBreakers::new([0x48, 0x48], [const { SharedBreaker::new(&POLICY) }; 2]);

fn main() {
    let _ = &BUS;
}
