//! The outage demo on a Cortex-M0: the same two `#[circuit_breaker]` functions
//! as the Cortex-M3 firmware (a flaky radio, a flaky I2C sensor), driven
//! without an executor; the registry lists both breakers before the first call
//! and after the last.
//!
//! Run it on QEMU with `cargo run --release`; `tests/outage.rs` checks the figures.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use firmware_m0 as fw;

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    fw::time_driver::init(peripherals.SYST);

    #[cfg(not(feature = "no-breakers"))]
    breaker_embedded::log_registry();
    let (radio, sensor) = fw::run_timelines();
    defmt::info!("radio  saw {=[u8]:a}", radio.seen);
    defmt::info!("sensor saw {=[u8]:a}", sensor.seen);
    #[cfg(not(feature = "no-breakers"))]
    breaker_embedded::log_registry();

    fw::exit_success()
}
