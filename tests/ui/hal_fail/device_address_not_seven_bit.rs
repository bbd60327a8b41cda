use breaker_core::{DeviceBreakers, Duration, Policy, SharedBreaker};

static POLICY: Policy = Policy::new(3, Duration::from_secs(5));
// 0x90 is an 8-bit "write address" (0x48 shifted left): I2C addresses are 7-bit.
static BUS: DeviceBreakers<2> = DeviceBreakers::new([0x48, 0x90], [const { SharedBreaker::new(&POLICY) }; 2]);

fn main() {
    let _ = &BUS;
}
