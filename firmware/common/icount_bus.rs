//! Instructions per guarded transaction over a shared I2C bus (m3's and m0's `icount`
//! tests include it as their `icount_bus` module, measured by `icount.rs`'s method): one
//! `write_read` (a register pointer, then two bytes, as a TMP102's temperature read)
//! through an `embedded-hal-bus` device handle, bare and inside `Guarded` with a breaker of
//! its own.
//!
//! The transaction is a driver's function, out of line (`#[inline(never)]`), one per
//! device type (`transact_*`, whose sizes `size.sh` reports); the bus under the device is a stand-in whose transaction is out of line too and
//! always succeeds, so the differences between the cases are the device's and the
//! breaker's. Each loop builds its bus and device once, before its calls (set-up cancels
//! out of the method). The clock is `icount.rs`'s `ManualClock`.

use core::cell::RefCell;

use breaker_embedded::hal::Recover;
use breaker_embedded::{ByErrorKind, Duration, Guarded, GuardedError, Instant, ManualClock, Policy, SharedBreaker};
use embedded_hal::i2c::{ErrorKind, ErrorType, I2c, NoAcknowledgeSource, Operation};
use embedded_hal_bus::i2c::{CriticalSectionDevice, RefCellDevice};

use crate::icount::Case;

/// The address the stand-in bus answers.
pub const DEVICE: u8 = 0x48;

/// What the stand-in bus reads; zero, but the compiler cannot know it.
static FILL: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

/// A bus whose one device answers every transaction at once.
pub struct NullBus;

impl ErrorType for NullBus {
    type Error = ErrorKind;
}

impl I2c for NullBus {
    #[inline(never)]
    fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        if address != DEVICE {
            return Err(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address));
        }
        let fill = FILL.load(core::sync::atomic::Ordering::Relaxed);
        for op in operations {
            if let Operation::Read(buf) = op {
                buf.fill(fill);
            }
        }
        Ok(())
    }
}

/// One driver transaction: the temperature register's pointer, then its two bytes. `i`
/// when it works (the bytes read are zero).
#[inline(always)]
fn transaction<I: I2c>(device: &mut I, i: u32) -> Result<u32, I::Error> {
    let mut buf = [0; 2];
    device.write_read(DEVICE, &[0x00], &mut buf)?;
    Ok(i.wrapping_add(u32::from(buf[0])))
}

/// The recovery step of the case with one: never run (the breaker stays closed).
pub struct Ready;

impl<T> Recover<T> for Ready {
    fn recover(&mut self, _: &mut T) -> bool {
        core::hint::black_box(true)
    }
}

type Bare<'a> = RefCellDevice<'a, NullBus>;
type Shared<'a> = Guarded<RefCellDevice<'a, NullBus>, &'static SharedBreaker, &'static ManualClock>;
type Recovering<'a> =
    Guarded<RefCellDevice<'a, NullBus>, &'static SharedBreaker, &'static ManualClock, ByErrorKind, Ready>;
type Cs<'a> = CriticalSectionDevice<'a, NullBus>;
type SharedCs<'a> = Guarded<CriticalSectionDevice<'a, NullBus>, &'static SharedBreaker, &'static ManualClock>;

/// The transaction as a driver's function of its own per device type, out of line (so
/// that `size.sh` can report each one's size by name).
macro_rules! transact {
    ($name:ident, $device:ty, $error:ty) => {
        #[inline(never)]
        pub fn $name(device: &mut $device, i: u32) -> Result<u32, $error> {
            transaction(device, i)
        }
    };
}
transact!(transact_refcell, Bare<'_>, ErrorKind);
transact!(transact_refcell_guarded, Shared<'_>, GuardedError<ErrorKind>);
transact!(transact_refcell_recover, Recovering<'_>, GuardedError<ErrorKind>);
transact!(transact_cs, Cs<'_>, ErrorKind);
transact!(transact_cs_guarded, SharedCs<'_>, GuardedError<ErrorKind>);

pub static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
static TRIP_AT_ONCE: Policy = Policy::new(1, Duration::from_secs(3_600));
/// The breaker of the closed cases.
pub static CLOSED: SharedBreaker = SharedBreaker::new(&POLICY);
/// The breaker of the refused case, tripped by [`set_up`].
pub static OPEN: SharedBreaker = SharedBreaker::new(&TRIP_AT_ONCE);

/// Trips [`OPEN`]: one transaction to an address nobody answers.
pub fn set_up() {
    let bus = RefCell::new(NullBus);
    let mut device = Guarded::new(RefCellDevice::new(&bus), &OPEN, &CLOCK);
    let _ = core::hint::black_box(device.write(DEVICE ^ 1, &[0]));
}

/// `n` calls of `$transact` on the device `$device` makes (from a bus `$bus` makes).
macro_rules! looped {
    ($name:ident, $transact:ident, |$b:ident| $bus:expr, $device:expr) => {
        #[inline(never)]
        fn $name(n: u32) -> u32 {
            let $b = $bus;
            let mut device = $device;
            let mut acc = 0u32;
            for i in 0..n {
                match $transact(&mut device, i) {
                    Ok(v) => acc = acc.wrapping_add(v),
                    Err(_) => acc = acc.wrapping_add(1),
                }
            }
            acc
        }
    };
}
looped!(
    loop_refcell,
    transact_refcell,
    |bus| RefCell::new(NullBus),
    RefCellDevice::new(&bus)
);
looped!(
    loop_refcell_guarded,
    transact_refcell_guarded,
    |bus| RefCell::new(NullBus),
    Guarded::new(RefCellDevice::new(&bus), &CLOSED, &CLOCK)
);
looped!(
    loop_refcell_refused,
    transact_refcell_guarded,
    |bus| RefCell::new(NullBus),
    Guarded::new(RefCellDevice::new(&bus), &OPEN, &CLOCK)
);
looped!(
    loop_refcell_recover,
    transact_refcell_recover,
    |bus| RefCell::new(NullBus),
    Guarded::new(RefCellDevice::new(&bus), &CLOSED, &CLOCK).recover_with(Ready)
);
looped!(
    loop_cs,
    transact_cs,
    |bus| critical_section::Mutex::new(RefCell::new(NullBus)),
    CriticalSectionDevice::new(&bus)
);
looped!(
    loop_cs_guarded,
    transact_cs_guarded,
    |bus| critical_section::Mutex::new(RefCell::new(NullBus)),
    Guarded::new(CriticalSectionDevice::new(&bus), &CLOSED, &CLOCK)
);

/// The cases, with the figures recorded for this core: `RefCellDevice` bare, guarded
/// (closed success, refusal, closed success with a recovery step), `CriticalSectionDevice`
/// bare, guarded (closed success).
pub const fn cases(recorded: [u32; 6]) -> [Case; 6] {
    [
        Case::new("RefCellDevice write_read, bare", loop_refcell, false, recorded[0]),
        Case::new(
            "Guarded<RefCellDevice>, closed success",
            loop_refcell_guarded,
            false,
            recorded[1],
        ),
        Case::new(
            "Guarded<RefCellDevice>, refusal",
            loop_refcell_refused,
            true,
            recorded[2],
        ),
        Case::new(
            "Guarded<RefCellDevice> with recover_with, closed success",
            loop_refcell_recover,
            false,
            recorded[3],
        ),
        Case::new("CriticalSectionDevice write_read, bare", loop_cs, false, recorded[4]),
        Case::new(
            "Guarded<CriticalSectionDevice>, closed success",
            loop_cs_guarded,
            false,
            recorded[5],
        ),
    ]
}
