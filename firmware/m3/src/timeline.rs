//! The scenario's two timelines, run concurrently: one embassy task per device, both
//! stepping on the same epoch.

use core::cell::Cell;

use critical_section::Mutex;
use embassy_executor::Spawner;
use embassy_time::{Instant, Timer};

use crate::scenario::{self, Run};

/// Where each task leaves its finished timeline.
static RADIO_RUN: Mutex<Cell<Option<Run>>> = Mutex::new(Cell::new(None));
static SENSOR_RUN: Mutex<Cell<Option<Run>>> = Mutex::new(Cell::new(None));

#[embassy_executor::task]
async fn radio(epoch: Instant) {
    let run = scenario::run_radio(epoch).await;
    critical_section::with(|cs| RADIO_RUN.borrow(cs).set(Some(run)));
}

#[embassy_executor::task]
async fn sensor(epoch: Instant) {
    let run = scenario::run_sensor(epoch).await;
    critical_section::with(|cs| SENSOR_RUN.borrow(cs).set(Some(run)));
}

/// When the registry is dumped mid-run, after the epoch: tick 7.5, both breakers open.
pub const MID_RUN_DUMP_MS: u64 = 750;

/// Runs both timelines from now, dumps the registry at [`MID_RUN_DUMP_MS`] (unless built
/// with `no-breakers`), and returns the radio's and the sensor's runs once both are done.
pub async fn run(spawner: Spawner) -> (Run, Run) {
    let epoch = Instant::now();
    spawner.must_spawn(radio(epoch));
    spawner.must_spawn(sensor(epoch));

    #[cfg(not(feature = "no-breakers"))]
    {
        Timer::at(Instant::from_millis(epoch.as_millis() + MID_RUN_DUMP_MS)).await;
        defmt::info!("registry mid-run, 7.5 ticks in:");
        breaker_embedded::log_registry();
    }

    loop {
        let done = critical_section::with(|cs| (RADIO_RUN.borrow(cs).get(), SENSOR_RUN.borrow(cs).get()));
        if let (Some(radio), Some(sensor)) = done {
            return (radio, sensor);
        }
        Timer::after_millis(10).await;
    }
}
