//! Support code of this package's firmware programs on QEMU's `lm3s6965evb`
//! (Cortex-M3, `thumbv7m-none-eabi`) under RTIC v2, and the outage [`scenario`] every
//! firmware package runs, here on RTIC's monotonic ([`rt`]).
//!
//! Linking this crate provides:
//! - [`Mono`], the RTIC monotonic on SysTick at 1 kHz (rtic-monotonics'
//!   `systick_monotonic!`); start it with `Mono::start(SYST, CORE_CLOCK_HZ)` in `init`;
//! - the defmt global logger (semihosting stdout, decoded on the host by
//!   `defmt-print`) and a defmt timestamp in milliseconds of the monotonic;
//! - a panic handler and fault handlers that log and end the run with failure;
//! - exit helpers ([`exit_success`], [`exit_failure`], [`exit`]) that end the QEMU run
//!   with exit status 0 or 1.
//!
//! There is no embassy here: the breakers come from `breaker-core` itself, reading the
//! monotonic through `RticClock`.
#![no_std]

/// Core clock of the lm3s6965 under QEMU after reset (not the board's 50 MHz: nothing
/// configures the PLL), which SysTick counts.
pub const CORE_CLOCK_HZ: u32 = 12_500_000;

#[path = "../../common/handlers.rs"]
mod handlers;
pub mod rt;
#[path = "../../common/scenario.rs"]
pub mod scenario;
#[path = "../../common/semihosting.rs"]
mod semihosting;

pub use semihosting::{exit, exit_failure, exit_success, host_millis};

// The global logger lives in `defmt-semihosting`; this pulls it into the link.
use defmt_semihosting as _;
use rtic_monotonics::systick::prelude::*;

systick_monotonic!(Mono, 1_000);

defmt::timestamp!("{=u32:ms}", Mono::now().duration_since_epoch().to_millis());
