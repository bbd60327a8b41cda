//! On-target smoke test of the firmware scaffolding, run on QEMU by
//! `cargo test --release --test smoke`: the semihosting exit status is the
//! verdict (a failed check panics, and the panic handler exits with failure).
//!
//! Checks: defmt logging, 64-bit atomics through portable-atomic on a core
//! without compare-and-swap, and the SysTick clock (delays never short, and on
//! time) following the instructions executed (the runner's `-icount shift=0`: one
//! nanosecond each), so the assumed core clock is right and no run depends on the
//! host's load.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use firmware_m0 as fw;
use portable_atomic::{AtomicU32, AtomicU64, Ordering};

/// Iterations of the two-instruction loop the clock check runs: 10 ms of virtual time.
const SPIN_ITERATIONS: u32 = 5_000_000;

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

    let host_start = fw::host_millis();
    let start = fw::time_driver::now_millis();
    for (round, ms) in [30, 70, 100, 100].into_iter().enumerate() {
        let before = fw::time_driver::now_millis();
        fw::time_driver::delay_ms(ms);
        let slept = fw::time_driver::now_millis() - before;
        defmt::info!("round {=usize}: slept {} ms", round + 1, slept);
        assert!(slept >= ms, "delay returned early");
        // `delay_ms` waits one tick more (the current one is partly gone), and virtual
        // time stands still while the core works, so it wakes in the tick it is due.
        assert!(slept <= ms + 2, "delay too long");
    }
    let elapsed = fw::time_driver::now_millis() - start;
    defmt::info!("done after {} ms of clock time", elapsed);
    assert!((300..=308).contains(&elapsed), "elapsed clock time out of bounds");

    // 10,000,000 instructions are 10 ms of virtual time; SysTick, counting the core clock
    // this package assumes, must say so. A wrong core clock skews it; so does a run
    // without the runner's `-icount`, where the loop takes however long the host takes.
    let before = fw::time_driver::now_millis();
    fw::time_driver::spin(SPIN_ITERATIONS);
    let spun = fw::time_driver::now_millis() - before;
    defmt::info!("10,000,000 instructions took {} ms of clock time", spun);
    assert!(
        (10..=11).contains(&spun),
        "the clock does not follow the instructions executed"
    );

    // The host's clock is only reported: with `sleep=off` idle virtual time takes no host
    // time, and a loaded host makes everything else slower.
    if let (Some(from), Some(to)) = (host_start, fw::host_millis()) {
        defmt::info!("the test took {} ms of host time", to.saturating_sub(from));
    }

    defmt::info!("smoke test passed");
    fw::exit_success()
}
