//! Instructions per guarded call on the Cortex-M3, counted on QEMU (`-icount shift=0`):
//! `cargo test --release --test icount`. See `firmware/common/icount.rs` for the method.
#![no_std]
#![no_main]

use firmware_m3 as fw;

#[path = "../../common/icount.rs"]
mod icount;

/// The figures recorded on this core (instructions per call, loop included): unguarded,
/// attribute closed, attribute refused, by hand closed, by hand refused.
const RECORDED: [u32; 5] = [16, 34, 47, 37, 51];

#[cortex_m_rt::entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    if icount::run(peripherals.SYST, fw::CORE_CLOCK_HZ, &icount::cases(RECORDED)) {
        defmt::info!("icount test passed: no figure above its record");
        fw::exit_success()
    } else {
        defmt::error!("icount test FAILED: see the figures above");
        fw::exit_failure()
    }
}
