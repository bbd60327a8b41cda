//! Drivers sharing one I2C bus, each device with its own breaker, on a Cortex-M0 (no
//! compare-and-swap): `cargo test --release --test shared_bus`.
//!
//! A TMP102 thermometer and an EEPROM on one simulated bus; the EEPROM wedges and is
//! reset by its `Guarded`'s recovery step while the thermometer keeps being read (see
//! `firmware/common/shared_bus.rs` for the timeline and the figures). Two runs of the same
//! scenario, blocking, every figure checked in each: through `embedded-hal-bus`'s
//! `CriticalSectionDevice` and its `RefCellDevice`, without an executor (`block_on`).
#![no_std]
#![no_main]

use core::cell::RefCell;

use embedded_hal_bus::i2c::{CriticalSectionDevice, RefCellDevice};
use firmware_m0 as fw;

#[path = "../../common/shared_bus.rs"]
mod shared_bus;

use shared_bus::{Blocking, Breakers, SimBus};

#[cortex_m_rt::entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    fw::time_driver::init(peripherals.SYST);

    let breakers = Breakers::new();
    let bus = critical_section::Mutex::new(RefCell::new(SimBus));
    let mut devices = Blocking::new(
        CriticalSectionDevice::new(&bus),
        CriticalSectionDevice::new(&bus),
        &breakers,
    );
    let mut ok = fw::block_on(shared_bus::run("CriticalSectionDevice", &mut devices, &breakers));

    let breakers = Breakers::new();
    let bus = RefCell::new(SimBus);
    let mut devices = Blocking::new(RefCellDevice::new(&bus), RefCellDevice::new(&bus), &breakers);
    ok &= fw::block_on(shared_bus::run("RefCellDevice", &mut devices, &breakers));

    if ok {
        defmt::info!("shared-bus test passed: every figure as expected, in both forms");
    } else {
        defmt::error!("shared-bus test FAILED: see the figures above");
    }
    fw::exit(ok)
}
