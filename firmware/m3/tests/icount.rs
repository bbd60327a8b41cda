//! Instructions per guarded call on the Cortex-M3, counted on QEMU (`-icount shift=0`):
//! `cargo test --release --test icount`. See `firmware/common/icount.rs` for the method,
//! and `firmware/common/icount_bus.rs` for the transactions over a shared bus; this core
//! also counts them through embassy-embedded-hal's async `I2cDevice`, and through one
//! `Guarded` bus over a `KeyedBreakers` table (a breaker per address), shared by
//! `RefCellDevice` handles.
#![no_std]
#![no_main]

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use core::cell::RefCell;

use breaker_embedded::{
    CircuitBreaker, Duration, Guarded, GuardedError, KeyedBreakers, ManualClock, Outcome, Policy, SharedBreaker,
};
use embassy_embedded_hal::shared_bus::asynch::i2c::I2cDevice;
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_sync::mutex::Mutex;
use embedded_hal::i2c::{ErrorKind, Operation};
use embedded_hal_async::i2c::I2c as AsyncI2c;
use embedded_hal_bus::i2c::RefCellDevice;
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

/// Per transaction through a `RefCellDevice` over one `Guarded` bus whose breakers are a
/// `KeyedBreakers<u8, 4>` table (loop included): closed success, refusal.
const RECORDED_KEYED: [u32; 2] = [160, 114];

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

static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
static TRIP_AT_ONCE: Policy = Policy::new(1, Duration::from_secs(3_600));
/// The table of the closed case: its entry for [`DEVICE`] is made by the first call.
static KEYED: KeyedBreakers<u8, 4> = KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 4]);
/// The table of the refused case: [`DEVICE`]'s entry tripped by [`keyed_set_up`].
static KEYED_OPEN: KeyedBreakers<u8, 4> = KeyedBreakers::new([const { SharedBreaker::new(&TRIP_AT_ONCE) }; 4]);

/// Trips [`KEYED_OPEN`]'s breaker for [`DEVICE`]: one strike.
fn keyed_set_up() {
    if let Ok(attempt) = KEYED_OPEN.entry(DEVICE).attempt(&CLOCK) {
        attempt.record(Outcome::STRIKE);
    }
}

type KeyedBus = Guarded<NullBus, &'static KeyedBreakers<u8, 4>, &'static ManualClock>;
type KeyedDevice<'a> = RefCellDevice<'a, KeyedBus>;

/// One driver transaction through a handle of the keyed bus, out of line (`size.sh`
/// reports its size by name): `i` when it works.
#[inline(never)]
fn transact_keyed(device: &mut KeyedDevice<'_>, i: u32) -> Result<u32, GuardedError<ErrorKind>> {
    let mut buf = [0; 2];
    embedded_hal::i2c::I2c::write_read(device, DEVICE, &[0x00], &mut buf)?;
    Ok(i.wrapping_add(u32::from(buf[0])))
}

/// `n` transactions through a handle of a bus guarded over `$table`.
macro_rules! looped_keyed {
    ($name:ident, $table:expr) => {
        #[inline(never)]
        fn $name(n: u32) -> u32 {
            let bus = RefCell::new(Guarded::new(NullBus, $table, &CLOCK));
            let mut device = RefCellDevice::new(&bus);
            let mut acc = 0u32;
            for i in 0..n {
                match transact_keyed(&mut device, i) {
                    Ok(v) => acc = acc.wrapping_add(v),
                    Err(_) => acc = acc.wrapping_add(1),
                }
            }
            acc
        }
    };
}
looped_keyed!(loop_keyed, &KEYED);
looped_keyed!(loop_keyed_refused, &KEYED_OPEN);

const KEYED_CASES: [Case; 2] = [
    Case::new(
        "RefCellDevice over Guarded<bus, &KeyedBreakers>, closed success",
        loop_keyed,
        false,
        RECORDED_KEYED[0],
    ),
    Case::new(
        "RefCellDevice over Guarded<bus, &KeyedBreakers>, refusal",
        loop_keyed_refused,
        true,
        RECORDED_KEYED[1],
    ),
];

#[cortex_m_rt::entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    icount_bus::set_up();
    keyed_set_up();
    let sets: [&[Case]; 4] = [
        &icount::cases(RECORDED),
        &icount_bus::cases(RECORDED_BUS),
        &ASYNC,
        &KEYED_CASES,
    ];
    if icount::run(peripherals.SYST, fw::CORE_CLOCK_HZ, &sets) {
        defmt::info!("icount test passed: no figure above its record");
        fw::exit_success()
    } else {
        defmt::error!("icount test FAILED: see the figures above");
        fw::exit_failure()
    }
}
