//! Drivers sharing one I2C bus, each device with its own breaker, on the emulator:
//! `cargo test --release --test shared_bus`.
//!
//! A TMP102 thermometer and an EEPROM on one simulated bus; the EEPROM wedges and is
//! reset by its `Guarded`'s recovery step while the thermometer keeps being read (see
//! `firmware/common/shared_bus.rs` for the timeline and the figures). Three runs of the
//! same scenario, every figure checked in each: blocking through `embedded-hal-bus`'s
//! `RefCellDevice` and its `CriticalSectionDevice`, and async through
//! embassy-embedded-hal's `I2cDevice` over an embassy-sync mutex, on embassy's executor;
//! then a fourth: one `Guarded` over the bus itself, its breakers a `KeyedBreakers` table
//! keyed by address (created on first use), shared by both drivers through
//! `RefCellDevice` handles.
#![no_std]
#![no_main]

use core::cell::RefCell;

use breaker_embedded::hal::AsyncRecover;
use breaker_embedded::{ByErrorKind, DefmtLog, EmbassyClock, Guarded, KeyedBreakers, SharedBreaker};
use embassy_embedded_hal::shared_bus::asynch::i2c::I2cDevice;
use embassy_executor::Spawner;
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_sync::mutex::Mutex;
use embedded_hal::i2c::{ErrorKind, Operation};
use embedded_hal_async::i2c::I2c as AsyncI2c;
use embedded_hal_bus::i2c::{CriticalSectionDevice, RefCellDevice};
use firmware_m3 as fw;

#[path = "../../common/shared_bus.rs"]
mod shared_bus;

use shared_bus::{
    reading, Blocking, BreakerOf, Breakers, Devices, GeneralCallReset, Reading, SimBus, EEPROM, POLICY, THERMOMETER,
};
use tmp1x2::{SlaveAddr, Tmp1x2};

impl AsyncI2c for SimBus {
    async fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        embedded_hal::i2c::I2c::transaction(self, address, operations)
    }
}

/// The EEPROM's recovery step for its async device: the general-call reset, awaiting the
/// shared bus like any transaction. (For the device type itself: an impl for any `D` would
/// overlap `AsyncRecover`'s blanket impl for every `Recover`.)
struct AsyncGeneralCallReset;

impl<'a> AsyncRecover<Device<'a>> for AsyncGeneralCallReset {
    async fn recover(&mut self, device: &mut Device<'a>) -> bool {
        shared_bus::step_ran();
        let (address, bytes) = shared_bus::RESET;
        device.write(address, &bytes).await.is_ok()
    }
}

type Device<'a> = I2cDevice<'a, NoopRawMutex, SimBus>;

/// The async form: both drivers' transactions by hand over `I2cDevice` handles.
struct Async<'a, 'b> {
    thermometer: Guarded<Device<'a>, &'b SharedBreaker<DefmtLog>, EmbassyClock>,
    eeprom: Guarded<Device<'a>, &'b SharedBreaker<DefmtLog>, EmbassyClock, ByErrorKind, AsyncGeneralCallReset>,
}

impl Devices for Async<'_, '_> {
    async fn temperature(&mut self) -> Reading<i32> {
        let mut raw = [0; 2];
        let result = self.thermometer.write_read(THERMOMETER, &[0x00], &mut raw).await;
        reading(result.map(|()| i32::from(i16::from_be_bytes(raw) >> 4)))
    }

    async fn cell(&mut self, cell: u8) -> Reading<u8> {
        let mut byte = [0];
        let result = self.eeprom.write_read(EEPROM, &[0x00, cell], &mut byte).await;
        reading(result.map(|()| byte[0]))
    }
}

/// The keyed form's breakers: four slots, for whichever addresses the drivers use.
type Table = KeyedBreakers<u8, 4, DefmtLog>;

impl BreakerOf for Table {
    fn breaker(&self, address: u8) -> Option<&SharedBreaker<DefmtLog>> {
        self.get(address)
    }
}

/// The whole bus guarded once, over the keyed table, with the recovery step.
type KeyedBus<'t> = Guarded<SimBus, &'t Table, EmbassyClock, ByErrorKind, GeneralCallReset>;

/// The keyed form: both drivers over `RefCellDevice` handles of the one guarded bus.
struct Keyed<'a, 't> {
    thermometer: Tmp1x2<RefCellDevice<'a, KeyedBus<'t>>, tmp1x2::marker::mode::Continuous>,
    eeprom: RefCellDevice<'a, KeyedBus<'t>>,
}

impl Devices for Keyed<'_, '_> {
    async fn temperature(&mut self) -> Reading<i32> {
        match self.thermometer.read_temperature() {
            Ok(celsius) => Reading::Value((celsius * 16.0) as i32),
            Err(tmp1x2::Error::I2C(e)) => reading(Err(e)),
        }
    }

    async fn cell(&mut self, cell: u8) -> Reading<u8> {
        reading(shared_bus::read_cell(&mut self.eeprom, cell))
    }
}

#[cortex_m_rt::entry]
fn entry() -> ! {
    fw::executor::run(|spawner| spawner.must_spawn(main(spawner)))
}

#[embassy_executor::task]
async fn main(_spawner: Spawner) {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    fw::time_driver::init(peripherals.SYST);

    let breakers = Breakers::new();
    let bus = RefCell::new(SimBus);
    let mut devices = Blocking::new(RefCellDevice::new(&bus), RefCellDevice::new(&bus), &breakers);
    let mut ok = shared_bus::run("RefCellDevice", &mut devices, &breakers).await;

    let breakers = Breakers::new();
    let bus = critical_section::Mutex::new(RefCell::new(SimBus));
    let mut devices = Blocking::new(
        CriticalSectionDevice::new(&bus),
        CriticalSectionDevice::new(&bus),
        &breakers,
    );
    ok &= shared_bus::run("CriticalSectionDevice", &mut devices, &breakers).await;

    let breakers = Breakers::new();
    let bus = Mutex::<NoopRawMutex, _>::new(SimBus);
    let mut devices = Async {
        thermometer: Guarded::new(I2cDevice::new(&bus), &breakers.thermometer, EmbassyClock),
        eeprom: Guarded::new(I2cDevice::new(&bus), &breakers.eeprom, EmbassyClock).recover_with(AsyncGeneralCallReset),
    };
    ok &= shared_bus::run("embassy-embedded-hal I2cDevice (async)", &mut devices, &breakers).await;

    let table: Table =
        KeyedBreakers::new([const { SharedBreaker::with_observer(&POLICY, DefmtLog::new("bus/keyed")) }; 4]);
    let bus = RefCell::new(Guarded::new(SimBus, &table, EmbassyClock).recover_with(GeneralCallReset));
    let mut devices = Keyed {
        thermometer: Tmp1x2::new(RefCellDevice::new(&bus), SlaveAddr::Default),
        eeprom: RefCellDevice::new(&bus),
    };
    ok &= shared_bus::run(
        "RefCellDevice over one Guarded bus, KeyedBreakers<u8, 4>",
        &mut devices,
        &table,
    )
    .await;
    ok &= fw::scenario::figure("keyed table", "addresses holding a breaker", 2, table.len() as u32);
    ok &= fw::scenario::figure("keyed table", "evictions", 0, table.evictions());

    if ok {
        defmt::info!("shared-bus test passed: every figure as expected, in the four forms");
    } else {
        defmt::error!("shared-bus test FAILED: see the figures above");
    }
    fw::exit(ok)
}
