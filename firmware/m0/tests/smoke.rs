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

/// How many 100 ms samples may follow when the clock fell behind the host's over the
/// rounds (a loaded host starves the emulator now and then).
const SAMPLES: u32 = 10;

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
    // A wrong core-clock assumption would skew the clock against the host's 4x, in every
    // interval. A starved emulator (a loaded host) loses SysTick interrupts, so the clock
    // can fall behind in some intervals, never run ahead: it must never run ahead 2x, and
    // keep pace (within 2x and the host's coarse clock) over the rounds or, failing that,
    // over one of a few shorter samples.
    assert!(host_elapsed * 2 >= elapsed, "clock runs ahead of the host's clock");
    let mut in_step = host_elapsed <= elapsed * 2 + 50;
    for _ in 0..SAMPLES {
        if in_step {
            break;
        }
        let host_start = fw::host_millis().expect("semihosting SYS_CLOCK");
        let start = fw::time_driver::now_millis();
        fw::time_driver::delay_ms(100);
        let elapsed = fw::time_driver::now_millis() - start;
        let host_elapsed = fw::host_millis().expect("semihosting SYS_CLOCK") - host_start;
        defmt::info!("sample: {} ms of clock time, {} ms of host time", elapsed, host_elapsed);
        assert!(host_elapsed * 2 >= elapsed, "clock runs ahead of the host's clock");
        in_step = host_elapsed <= elapsed * 2 + 20;
    }
    assert!(in_step, "clock fell behind the host's clock in every sample");

    defmt::info!("smoke test passed");
    fw::exit_success()
}
