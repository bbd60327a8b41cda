//! Support code shared by every firmware program of this package (the demo
//! binary, the on-target tests and future examples) on QEMU's `microbit`
//! machine (nRF51822, Cortex-M0, `thumbv6m-none-eabi`), and the outage
//! [`scenario`] run without an executor ([`run_timelines`]).
//!
//! Linking this crate provides:
//! - the defmt global logger (semihosting stdout, decoded on the host by
//!   `defmt-print`) and a defmt timestamp in milliseconds of [`time_driver`] time;
//! - an embassy-time driver on SysTick ([`time_driver`]) and [`block_on`], which
//!   runs one future to completion without an executor; call [`time_driver::init`]
//!   once before using time;
//! - a panic handler and fault handlers that log and end the run with failure;
//! - exit helpers ([`exit_success`], [`exit_failure`]) that end the QEMU run
//!   with exit status 0 or 1, and the host's clock ([`host_millis`]).
//!
//! The Cortex-M0 has no compare-and-swap: read-modify-write atomics come from
//! `portable-atomic` (critical sections from cortex-m's single-core
//! implementation). That includes every breaker's state word.
//!
//! A program uses it with `use firmware_m0 as fw;` and must call at least one
//! of its functions (all of them do: `fw::time_driver::init`, `fw::exit_*`).
#![no_std]

/// Core clock of QEMU's `microbit` machine (the nRF51's 16 MHz HCLK), which SysTick
/// counts.
pub const CORE_CLOCK_HZ: u32 = 16_000_000;

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

#[path = "../../common/handlers.rs"]
mod handlers;
#[path = "../../common/rt_embassy.rs"]
pub mod rt;
#[path = "../../common/scenario.rs"]
pub mod scenario;
#[path = "../../common/semihosting.rs"]
mod semihosting;
#[path = "../../common/time_driver.rs"]
pub mod time_driver;

pub use semihosting::{exit, exit_failure, exit_success, host_millis};

// The global logger lives in `defmt-semihosting`; this pulls it into the link.
use defmt_semihosting as _;

defmt::timestamp!("{=u64:ms}", time_driver::now_millis());

/// Runs `future` to completion on this core, without an executor: polls it,
/// sleeps until the next interrupt (SysTick comes every millisecond), polls
/// again. Enough for one future at a time; it may await embassy timers.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        cortex_m::asm::wfi();
    }
}

/// Runs the scenario's two timelines one after the other (there is no executor
/// to run them side by side; each device has its own breaker, so the figures
/// are the same): the radio's, then the sensor's. Returns their runs.
pub fn run_timelines() -> (scenario::Run, scenario::Run) {
    let radio = block_on(scenario::run_radio(embassy_time::Instant::now()));
    let sensor = block_on(scenario::run_sensor(embassy_time::Instant::now()));
    (radio, sensor)
}
