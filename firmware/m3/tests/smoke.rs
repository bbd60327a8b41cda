//! On-target smoke test of the firmware scaffolding, run on QEMU by
//! `cargo test --release --test smoke`: the semihosting exit status is the
//! verdict (a failed check panics, and the panic handler exits with failure).
//!
//! Checks: defmt logging, the executor running two tasks concurrently, the
//! SysTick time driver (timers never early, roughly on time, and embassy time
//! in step with the host's clock, i.e. the assumed core clock is right).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use embassy_executor::Spawner;
use embassy_time::{Duration, Instant, Timer};
use firmware_m3 as fw;

/// How many 100 ms samples may follow when embassy time fell behind the host's clock over
/// the tasks' run (a loaded host starves the emulator now and then).
const SAMPLES: u32 = 10;

/// Number of [`sleeper`] tasks that are done.
static FINISHED: AtomicU32 = AtomicU32::new(0);

/// Sleeps `period_ms` milliseconds `rounds` times, checking each wake-up.
#[embassy_executor::task(pool_size = 2)]
async fn sleeper(name: &'static str, period_ms: u64, rounds: u32) {
    let period = Duration::from_millis(period_ms);
    for round in 1..=rounds {
        let before = Instant::now();
        Timer::after(period).await;
        let slept = before.elapsed();
        defmt::info!(
            "{=str}: round {=u32}/{=u32}, slept {} ms",
            name,
            round,
            rounds,
            slept.as_millis()
        );
        assert!(slept >= period, "timer fired early");
        assert!(slept <= period + Duration::from_millis(50), "timer fired far too late");
    }
    FINISHED.fetch_add(1, Ordering::Release);
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let peripherals = cortex_m::Peripherals::take().expect("peripherals taken once");
    fw::time_driver::init(peripherals.SYST);

    let host_start = fw::host_millis().expect("semihosting SYS_CLOCK");
    let start = Instant::now();
    spawner.must_spawn(sleeper("a", 30, 5)); // 150 ms
    spawner.must_spawn(sleeper("b", 70, 4)); // 280 ms
    while FINISHED.load(Ordering::Acquire) < 2 {
        Timer::after_millis(5).await;
    }
    let elapsed = start.elapsed().as_millis();
    let host_elapsed = fw::host_millis().expect("semihosting SYS_CLOCK") - host_start;
    defmt::info!(
        "tasks done after {} ms of embassy time, {} ms of host time",
        elapsed,
        host_elapsed
    );

    // The tasks ran concurrently: the total is the longer task, not the sum.
    assert!((280..600).contains(&elapsed), "elapsed embassy time out of bounds");
    // A wrong core-clock assumption would skew embassy time against the host's clock 4x,
    // in every interval. A starved emulator (a loaded host) loses SysTick interrupts, so
    // embassy time can fall behind in some intervals, never run ahead: it must never run
    // ahead 2x, and keep pace (within 2x and the host's coarse clock) over the tasks'
    // run or, failing that, over one of a few shorter samples.
    assert!(
        host_elapsed * 2 >= elapsed,
        "embassy time runs ahead of the host's clock"
    );
    let mut in_step = host_elapsed <= elapsed * 2 + 50;
    for _ in 0..SAMPLES {
        if in_step {
            break;
        }
        let host_start = fw::host_millis().expect("semihosting SYS_CLOCK");
        let start = Instant::now();
        Timer::after_millis(100).await;
        let elapsed = start.elapsed().as_millis();
        let host_elapsed = fw::host_millis().expect("semihosting SYS_CLOCK") - host_start;
        defmt::info!(
            "sample: {} ms of embassy time, {} ms of host time",
            elapsed,
            host_elapsed
        );
        assert!(
            host_elapsed * 2 >= elapsed,
            "embassy time runs ahead of the host's clock"
        );
        in_step = host_elapsed <= elapsed * 2 + 20;
    }
    assert!(in_step, "embassy time fell behind the host's clock in every sample");

    defmt::info!("smoke test passed");
    fw::exit_success()
}
