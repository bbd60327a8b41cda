//! The outage demo: a flaky radio and a flaky I2C sensor, each behind a
//! `#[circuit_breaker]` async function, called once every 100 ms by two embassy tasks
//! for 2 s; the registry of breakers is dumped mid-run and at the end.
//!
//! Run it on QEMU with `cargo run --release`. `tests/outage.rs` runs the same timeline
//! and checks every figure; `../size.sh` measures this binary with and without the
//! breakers (feature `no-breakers`).
#![no_std]
#![no_main]

use embassy_executor::Spawner;
use firmware_m3 as fw;

#[cortex_m_rt::entry]
fn entry() -> ! {
    fw::executor::run(|spawner| spawner.must_spawn(main(spawner)))
}

#[embassy_executor::task]
async fn main(spawner: Spawner) {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    fw::time_driver::init(peripherals.SYST);

    let (radio, sensor) = fw::timeline::run(spawner).await;
    defmt::info!("radio  saw {=[u8]:a}", radio.seen);
    defmt::info!("sensor saw {=[u8]:a}", sensor.seen);

    #[cfg(not(feature = "no-breakers"))]
    breaker_embedded::log_registry();

    fw::exit_success()
}
