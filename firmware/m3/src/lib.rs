//! Support code shared by every firmware program of this package (the demo
//! binary, the on-target tests and future examples) on QEMU's `lm3s6965evb`
//! (Cortex-M3, `thumbv7m-none-eabi`), and the outage [`scenario`] with its
//! [`timeline`] of two concurrent embassy tasks.
//!
//! Linking this crate provides:
//! - the defmt global logger (semihosting stdout, decoded on the host by
//!   `defmt-print`) and a defmt timestamp in milliseconds of embassy time;
//! - an embassy-time driver on SysTick ([`time_driver`]); call
//!   [`time_driver::init`] once before using timers;
//! - a thread-mode embassy executor that sleeps with `WFI` ([`executor::run`]), which
//!   every program's `#[cortex_m_rt::entry]` starts;
//! - a panic handler and fault handlers that log and end the run with failure;
//! - exit helpers ([`exit_success`], [`exit_failure`]) that end the QEMU run
//!   with exit status 0 or 1, and the host's clock ([`host_millis`]).
//!
//! A program uses it with `use firmware_m3 as fw;` and must call at least one
//! of its functions (all of them do: `fw::time_driver::init`, `fw::exit_*`).
#![no_std]

/// Core clock of the lm3s6965 under QEMU after reset (not the board's 50 MHz: nothing
/// configures the PLL), which SysTick counts.
pub const CORE_CLOCK_HZ: u32 = 12_500_000;

pub mod executor;
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
pub mod timeline;

pub use semihosting::{exit, exit_failure, exit_success, host_millis};

// The global logger lives in `defmt-semihosting`; this pulls it into the link.
use defmt_semihosting as _;

defmt::timestamp!("{=u64:ms}", time_driver::now_millis());
