//! Instructions per guarded call on the Cortex-M0, counted on QEMU (`-icount shift=0`):
//! `cargo test --release --test icount`. See `firmware/common/icount.rs` for the method.
#![no_std]
#![no_main]

use firmware_m0 as fw;

#[path = "../../common/icount.rs"]
mod icount;
#[path = "../../common/icount_bus.rs"]
mod icount_bus;

/// The figures recorded on this core (instructions per call, loop included): unguarded,
/// attribute closed, attribute refused, by hand closed, by hand refused.
const RECORDED: [u32; 5] = [15, 33, 59, 40, 62];

/// Per transaction over a shared bus (loop included): `RefCellDevice` bare, guarded
/// closed, guarded refused, guarded closed with a recovery step; `CriticalSectionDevice`
/// bare, guarded closed.
const RECORDED_BUS: [u32; 6] = [107, 142, 197, 135, 113, 148];

#[cortex_m_rt::entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    icount_bus::set_up();
    let sets: [&[icount::Case]; 2] = [&icount::cases(RECORDED), &icount_bus::cases(RECORDED_BUS)];
    if icount::run(peripherals.SYST, fw::CORE_CLOCK_HZ, &sets) {
        defmt::info!("icount test passed: no figure above its record");
        fw::exit_success()
    } else {
        defmt::error!("icount test FAILED: see the figures above");
        fw::exit_failure()
    }
}
