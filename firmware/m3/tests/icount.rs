//! Instructions per guarded call on the Cortex-M3, counted on QEMU (`-icount shift=0`):
//! `cargo test --release --test icount`. See `firmware/common/icount.rs` for the method,
//! and `firmware/common/icount_bus.rs` for the transactions over a shared bus; this core
//! also counts them through embassy-embedded-hal's async `I2cDevice`.
#![no_std]
#![no_main]

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use breaker_embedded::{Guarded, ManualClock, SharedBreaker};
use embassy_embedded_hal::shared_bus::asynch::i2c::I2cDevice;
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_sync::mutex::Mutex;
use embedded_hal::i2c::{ErrorKind, Operation};
use embedded_hal_async::i2c::I2c as AsyncI2c;
use firmware_m3 as fw;

#[path = "../../common/icount.rs"]
mod icount;
#[path = "../../common/icount_bus.rs"]
mod icount_bus;

use icount::Case;
use icount_bus::{NullBus, CLOCK, CLOSED, DEVICE, OPEN};

/// The figures recorded on this core (instructions per call, loop included): unguarded,
/// attribute closed, attribute refused, by hand closed, by hand refused.
const RECORDED: [u32; 5] = [16, 34, 47, 37, 51];

/// Per transaction over a shared bus (loop included): `RefCellDevice` bare, guarded
/// closed, guarded refused, guarded closed with a recovery step; `CriticalSectionDevice`
/// bare, guarded closed.
const RECORDED_BUS: [u32; 6] = [102, 129, 89, 123, 106, 133];

/// Per async transaction over embassy-embedded-hal's `I2cDevice` (polled once, the bus
/// idle; loop included): bare, guarded closed, guarded refused.
const RECORDED_ASYNC: [u32; 3] = [174, 280, 113];

impl AsyncI2c for NullBus {
    async fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        embedded_hal::i2c::I2c::transaction(self, address, operations)
    }
}

/// One async driver transaction, polled once (the bus is idle, so it completes): `i`
/// when it works; `Err` if it failed, was refused, or did not complete.
#[inline(always)]
fn transaction<I: AsyncI2c>(device: &mut I, i: u32) -> Result<u32, ()> {
    let mut buf = [0; 2];
    let polled = {
        let future = pin!(device.write_read(DEVICE, &[0x00], &mut buf));
        future.poll(&mut Context::from_waker(Waker::noop()))
    };
    match polled {
        Poll::Ready(Ok(())) => Ok(i.wrapping_add(u32::from(buf[0]))),
        _ => Err(()),
    }
}

type Bare<'a> = I2cDevice<'a, NoopRawMutex, NullBus>;
type Shared<'a> = Guarded<Bare<'a>, &'static SharedBreaker, &'static ManualClock>;

/// The async transaction as a driver's function of its own per device type, out of line
/// (`size.sh` reports each one's size by name).
#[inline(never)]
fn transact_async(device: &mut Bare<'_>, i: u32) -> Result<u32, ()> {
    transaction(device, i)
}

#[inline(never)]
fn transact_async_guarded(device: &mut Shared<'_>, i: u32) -> Result<u32, ()> {
    transaction(device, i)
}

/// `n` async transactions on the device `$device` makes (over an `I2cDevice` of `bus`).
macro_rules! looped {
    ($name:ident, $transact:ident, |$bus:ident| $device:expr) => {
        #[inline(never)]
        fn $name(n: u32) -> u32 {
            let $bus = Mutex::<NoopRawMutex, _>::new(NullBus);
            let mut device = $device;
            let mut acc = 0u32;
            for i in 0..n {
                match $transact(&mut device, i) {
                    Ok(v) => acc = acc.wrapping_add(v),
                    Err(()) => acc = acc.wrapping_add(1),
                }
            }
            acc
        }
    };
}
looped!(loop_async, transact_async, |bus| I2cDevice::new(&bus));
looped!(loop_async_guarded, transact_async_guarded, |bus| Guarded::new(
    I2cDevice::new(&bus),
    &CLOSED,
    &CLOCK
));
looped!(loop_async_refused, transact_async_guarded, |bus| Guarded::new(
    I2cDevice::new(&bus),
    &OPEN,
    &CLOCK
));

const ASYNC: [Case; 3] = [
    Case::new(
        "I2cDevice (async) write_read, bare",
        loop_async,
        false,
        RECORDED_ASYNC[0],
    ),
    Case::new(
        "Guarded<I2cDevice> (async), closed success",
        loop_async_guarded,
        false,
        RECORDED_ASYNC[1],
    ),
    Case::new(
        "Guarded<I2cDevice> (async), refusal",
        loop_async_refused,
        true,
        RECORDED_ASYNC[2],
    ),
];

#[cortex_m_rt::entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    icount_bus::set_up();
    let sets: [&[Case]; 3] = [&icount::cases(RECORDED), &icount_bus::cases(RECORDED_BUS), &ASYNC];
    if icount::run(peripherals.SYST, fw::CORE_CLOCK_HZ, &sets) {
        defmt::info!("icount test passed: no figure above its record");
        fw::exit_success()
    } else {
        defmt::error!("icount test FAILED: see the figures above");
        fw::exit_failure()
    }
}
