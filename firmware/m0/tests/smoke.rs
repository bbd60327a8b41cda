//! On-target smoke test of the firmware scaffolding, run on QEMU by
//! `cargo test --release --test smoke`: the semihosting exit status is the
//! verdict (a failed check panics, and the panic handler exits with failure).
//!
//! Checks: defmt logging, 64-bit atomics through portable-atomic on a core
//! without compare-and-swap, and the SysTick clock (delays never short,
//! roughly on time, and in step with the host's clock, i.e. the assumed core
//! clock is right).
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use firmware_m0 as fw;
use portable_atomic::{AtomicU32, AtomicU64, Ordering};

#[entry]
fn main() -> ! {
    // Compare-and-swap on a Cortex-M0, 32 and 64 bits wide.
    let small = AtomicU32::new(1);
    assert_eq!(small.compare_exchange(1, 2, Ordering::AcqRel, Ordering::Acquire), Ok(1));
    assert_eq!(small.fetch_add(3, Ordering::AcqRel), 2);
    let wide = AtomicU64::new(u64::from(u32::MAX));
    assert_eq!(wide.fetch_add(1, Ordering::AcqRel), u64::from(u32::MAX));
    assert_eq!(wide.load(Ordering::Acquire), 1 << 32);
    defmt::info!("portable-atomic CAS works");

    let peripherals = cortex_m::Peripherals::take().expect("peripherals taken once");
    fw::time_driver::init(peripherals.SYST);

    let host_start = fw::host_millis().expect("semihosting SYS_CLOCK");
    let start = fw::time_driver::now_millis();
    for (round, ms) in [30, 70, 100, 100].into_iter().enumerate() {
        let before = fw::time_driver::now_millis();
        fw::time_driver::delay_ms(ms);
        let slept = fw::time_driver::now_millis() - before;
        defmt::info!("round {=usize}: slept {} ms", round + 1, slept);
        assert!(slept >= ms, "delay returned early");
        assert!(slept <= ms + 50, "delay far too long");
    }
    let elapsed = fw::time_driver::now_millis() - start;
    let host_elapsed = fw::host_millis().expect("semihosting SYS_CLOCK") - host_start;
    defmt::info!(
        "done after {} ms of clock time, {} ms of host time",
        elapsed,
        host_elapsed
    );

    assert!((300..600).contains(&elapsed), "elapsed clock time out of bounds");
    // A wrong core-clock assumption would skew this ratio; the host's 10 ms
    // clock and scheduling noise barely move it.
    assert!(
        host_elapsed * 2 >= elapsed && host_elapsed <= elapsed * 2 + 50,
        "clock out of step with the host's clock"
    );

    defmt::info!("smoke test passed");
    fw::exit_success()
}
