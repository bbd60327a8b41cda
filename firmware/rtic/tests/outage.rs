//! The outage scenario on RTIC v2, checked on the emulator: `cargo test --release --test
//! outage`.
//!
//! The scenario every firmware package runs (`firmware/common/scenario.rs`): a radio and
//! an I2C sensor, each behind a `#[circuit_breaker]` async function reading the RTIC
//! monotonic (`RticClock<Mono>`), one call every 100 ms for 2 s, with scripted outages
//! (NACKs, a hardware fault, a hung bus that the caller's 50 ms `timeout_after` drops).
//! Each device's timeline is an RTIC software task; a third one dumps the registry at
//! tick 7.5 and, once both are done (they leave their runs in shared resources), checks
//! every figure: the same figures as on embassy, from the same source.
//!
//! Any wrong figure logs what it expected and ends the run with failure (QEMU exits 1).
#![no_std]
#![no_main]

#[rtic::app(device = lm3s6965, dispatchers = [SSI0, UART0])]
mod app {
    use breaker_core::registry;
    use firmware_rtic as fw;
    use fw::rt::Instant;
    use fw::scenario::{self, Run, EXPECTED_RADIO, EXPECTED_SENSOR};
    use fw::Mono;
    use rtic_monotonics::systick::prelude::*;

    /// When the registry is dumped, after the epoch: tick 7.5, both breakers open.
    const MID_RUN_DUMP_MS: u64 = 750;

    #[shared]
    struct Shared {
        /// Where each timeline task leaves its finished run.
        radio: Option<Run>,
        sensor: Option<Run>,
    }

    #[local]
    struct Local {}

    #[init]
    fn init(cx: init::Context) -> (Shared, Local) {
        Mono::start(cx.core.SYST, fw::CORE_CLOCK_HZ);
        if supervise::spawn().is_err() {
            fw::exit_failure()
        }
        (
            Shared {
                radio: None,
                sensor: None,
            },
            Local {},
        )
    }

    /// Sleeps between interrupts (the tasks run in their dispatchers' handlers).
    #[idle]
    fn idle(_: idle::Context) -> ! {
        loop {
            cortex_m::asm::wfi();
        }
    }

    #[task(shared = [radio], priority = 1)]
    async fn radio(mut cx: radio::Context, epoch: Instant) {
        let run = scenario::run_radio(epoch).await;
        cx.shared.radio.lock(|slot| *slot = Some(run));
    }

    #[task(shared = [sensor], priority = 1)]
    async fn sensor(mut cx: sensor::Context, epoch: Instant) {
        let run = scenario::run_sensor(epoch).await;
        cx.shared.sensor.lock(|slot| *slot = Some(run));
    }

    /// Starts both timelines on one epoch, dumps the registry mid-run, checks the end.
    #[task(shared = [radio, sensor], priority = 2)]
    async fn supervise(mut cx: supervise::Context) {
        let mut ok = scenario::check_registry();
        let epoch = Mono::now();
        if radio::spawn(epoch).is_err() || sensor::spawn(epoch).is_err() {
            defmt::error!("could not spawn the timelines");
            fw::exit_failure()
        }
        Mono::delay_until(fw::rt::after(epoch, MID_RUN_DUMP_MS)).await;
        defmt::info!("registry mid-run, 7.5 ticks in:");
        log_registry();

        let (radio, sensor) = loop {
            let radio = cx.shared.radio.lock(|slot| *slot);
            let sensor = cx.shared.sensor.lock(|slot| *slot);
            if let (Some(radio), Some(sensor)) = (radio, sensor) {
                break (radio, sensor);
            }
            Mono::delay(10.millis()).await;
        };
        defmt::info!("registry at the end:");
        log_registry();
        ok &= scenario::check(&radio, &EXPECTED_RADIO);
        ok &= scenario::check(&sensor, &EXPECTED_SENSOR);
        if ok {
            defmt::info!("outage test passed on RTIC: every figure as expected");
        } else {
            defmt::error!("outage test FAILED on RTIC: see the figures above");
        }
        fw::exit(ok)
    }

    /// One line per registered breaker: its name, state and counters.
    fn log_registry() {
        for entry in registry::iter() {
            defmt::info!("breaker {=str}: {} | {}", entry.name(), entry.state(), entry.counters());
        }
    }
}
