//! The outage scenario on a Cortex-M0 (no compare-and-swap: every breaker's
//! state word goes through portable-atomic's critical sections), checked on the
//! emulator: `cargo test --release --test outage`.
//!
//! The registry lists both guarded functions before their first call; then the
//! radio's and the sensor's timelines run (`firmware/common/scenario.rs`, the same code
//! as on the Cortex-M3) and every figure is checked. A wrong figure logs what it
//! expected and ends the run with failure (QEMU exits 1).
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use firmware_m0 as fw;
use fw::scenario::{self, EXPECTED_RADIO, EXPECTED_SENSOR};

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    fw::time_driver::init(peripherals.SYST);

    defmt::info!("registry before the first call:");
    breaker_embedded::log_registry();
    let mut ok = scenario::check_registry();

    let (radio, sensor) = fw::run_timelines();
    defmt::info!("registry at the end:");
    breaker_embedded::log_registry();
    ok &= scenario::check(&radio, &EXPECTED_RADIO);
    ok &= scenario::check(&sensor, &EXPECTED_SENSOR);

    if ok {
        defmt::info!("outage test passed on the Cortex-M0: every figure as expected");
    } else {
        defmt::error!("outage test FAILED: see the figures above");
    }
    fw::exit(ok)
}
