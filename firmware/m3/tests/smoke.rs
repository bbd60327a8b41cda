//! On-target smoke test of the firmware scaffolding, run on QEMU by
//! `cargo test --release --test smoke`: the semihosting exit status is the
//! verdict (a failed check panics, and the panic handler exits with failure).
//!
//! Checks: defmt logging, the executor running two tasks concurrently, the
//! SysTick time driver (timers never early and on time), and embassy time following
//! the instructions executed (the runner's `-icount shift=0`: one nanosecond each), so
//! the assumed core clock is right and no run depends on the host's load.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use embassy_executor::Spawner;
use embassy_time::{Duration, Instant, Timer};
use firmware_m3 as fw;

/// Iterations of the two-instruction loop the clock check runs: 10 ms of virtual time.
const SPIN_ITERATIONS: u32 = 5_000_000;

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
        // Virtual time stands still while a task runs (a few thousand instructions are
        // microseconds), so a timer wakes its task in the tick it is due.
        assert!(slept <= period + Duration::from_millis(1), "timer fired late");
    }
    FINISHED.fetch_add(1, Ordering::Release);
}

#[cortex_m_rt::entry]
fn entry() -> ! {
    fw::executor::run(|spawner| spawner.must_spawn(main(spawner)))
}

#[embassy_executor::task]
async fn main(spawner: Spawner) {
    let peripherals = cortex_m::Peripherals::take().expect("peripherals taken once");
    fw::time_driver::init(peripherals.SYST);

    let host_start = fw::host_millis();
    let start = Instant::now();
    spawner.must_spawn(sleeper("a", 30, 5)); // 150 ms
    spawner.must_spawn(sleeper("b", 70, 4)); // 280 ms
    while FINISHED.load(Ordering::Acquire) < 2 {
        Timer::after_millis(5).await;
    }
    let elapsed = start.elapsed().as_millis();
    defmt::info!("tasks done after {} ms of embassy time", elapsed);
    // The tasks ran concurrently: the total is the longer task (and this loop's 5 ms
    // step), not the sum.
    assert!((280..=285).contains(&elapsed), "elapsed embassy time out of bounds");

    // 10,000,000 instructions are 10 ms of virtual time; SysTick, counting the core clock
    // this package assumes, must say so. A wrong core clock skews it (a 50 MHz assumption
    // on the 12.5 MHz core would read 2 or 3 ms); so does a run without the runner's
    // `-icount`, where the loop takes however long the host takes.
    let before = Instant::now();
    fw::time_driver::spin(SPIN_ITERATIONS);
    let spun = before.elapsed().as_millis();
    defmt::info!("10,000,000 instructions took {} ms of embassy time", spun);
    assert!(
        (10..=11).contains(&spun),
        "embassy time does not follow the instructions executed"
    );

    // The host's clock is only reported: with `sleep=off` idle virtual time takes no host
    // time, and a loaded host makes everything else slower.
    if let (Some(from), Some(to)) = (host_start, fw::host_millis()) {
        defmt::info!("the test took {} ms of host time", to.saturating_sub(from));
    }

    defmt::info!("smoke test passed");
    fw::exit_success()
}
