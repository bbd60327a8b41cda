//! `Guarded` and `DeviceBreakers` (or a `KeyedBreakers` table) over shared-bus devices, the way drivers share one I2C
//! bus in firmware: a TMP102 thermometer (the `tmp1x2` driver crate) and an EEPROM on one
//! bus, each device handle with its breaker inside, one device failing while the other
//! keeps working. Blocking through embedded-hal-bus (`RefCellDevice`,
//! `CriticalSectionDevice`), async through embassy-embedded-hal's `I2cDevice`. The bus
//! is a scripted mock that fails the test on any transaction it was not told to expect,
//! so a refused transaction that reached the bus fails it.

mod hal_mock;

use core::cell::RefCell;
use core::task::Poll;

use breaker_core::{
    Clock, DeviceBreakers, Duration, Guarded, GuardedError, Instant, KeyedBreakers, ManualClock, Phase, Policy,
    RefusalReason, SharedBreaker, State,
};
use embassy_embedded_hal::shared_bus::asynch::i2c::I2cDevice;
use embassy_embedded_hal::shared_bus::I2cDeviceError;
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_sync::mutex::Mutex as AsyncMutex;
use embedded_hal::i2c::{ErrorKind, I2c, NoAcknowledgeSource};
use embedded_hal_bus::i2c::{CriticalSectionDevice, RefCellDevice};
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use hal_mock::{block_on, poll_once};
use tmp1x2::{SlaveAddr, Tmp1x2};

const NACK: ErrorKind = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
const THERMOMETER: u8 = 0x48;
const EEPROM: u8 = 0x50;

/// The TMP102's temperature register read: pointer 0x00, then two bytes (0x14 0x00 is
/// 20.0 °C, each 0x10 of the second byte 1/16 °C more).
fn temperature(lsb: u8) -> Transaction {
    Transaction::write_read(THERMOMETER, vec![0x00], vec![0x14, lsb])
}

/// A 24C-series EEPROM's random read of one byte at `cell`: the cell's address, then the
/// byte.
fn eeprom_read(cell: u8, byte: u8) -> Transaction {
    Transaction::write_read(EEPROM, vec![0x00, cell], vec![byte])
}

/// Reads one byte of the EEPROM through any `I2c`: what its driver does.
fn read_cell<I: I2c>(i2c: &mut I, cell: u8) -> Result<u8, I::Error> {
    let mut byte = [0];
    i2c.write_read(EEPROM, &[0x00, cell], &mut byte)?;
    Ok(byte[0])
}

/// What a caller saw: `.` worked, `x` failed at the device, `-` refused by the breaker.
fn seen<T, E>(result: &Result<T, GuardedError<E>>) -> char {
    match result {
        Ok(_) => '.',
        Err(GuardedError::Refused(_)) => '-',
        Err(_) => 'x',
    }
}

#[test]
fn refcell_devices_each_with_a_breaker_one_fails_the_other_keeps_working() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(1));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static MEMORY: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    // Round by round, the thermometer always answers; the EEPROM answers, then NACKs its
    // address twice (a write cycle that does not end), and is never asked while open.
    let bus = RefCell::new(Mock::new(&[
        temperature(0x00),
        eeprom_read(0, 0xA0),
        temperature(0x10),
        eeprom_read(1, 0).with_error(NACK),
        temperature(0x20),
        eeprom_read(2, 0).with_error(NACK),
        temperature(0x30),
        temperature(0x40),
        // After the EEPROM's 1 s cooldown: its probe, which works and closes it.
        temperature(0x50),
        eeprom_read(5, 0xA5),
    ]));
    let mut thermometer = Tmp1x2::new(
        Guarded::new(RefCellDevice::new(&bus), &SENSOR, &CLOCK),
        SlaveAddr::Default,
    );
    let mut eeprom = Guarded::new(RefCellDevice::new(&bus), &MEMORY, &CLOCK);

    let mut eeprom_seen = String::new();
    for round in 0..6u8 {
        if round == 5 {
            CLOCK.advance(Duration::from_secs(1));
        }
        let t = thermometer.read_temperature().expect("the thermometer keeps working");
        assert_eq!(t, 20.0 + f32::from(round) / 16.0);
        let cell = read_cell(&mut eeprom, round);
        if let Err(GuardedError::Refused(refused)) = &cell {
            assert_eq!(refused.reason, RefusalReason::Open);
        }
        eeprom_seen.push(seen(&cell));
    }
    assert_eq!(eeprom_seen, ".xx--.");
    assert_eq!(SENSOR.state(CLOCK.now()), State::Closed { strikes: 0 });
    assert_eq!(SENSOR.counters().failures, 0);
    assert_eq!(MEMORY.state(CLOCK.now()), State::Closed { strikes: 0 });
    let c = MEMORY.counters();
    assert_eq!((c.failures, c.skips, c.trips, c.probes), (2, 2, 1, 1));

    bus.into_inner().done(); // exactly the scripted transactions reached the bus
}

static TABLE_POLICY: Policy = Policy::new(3, Duration::from_secs(2));
static TABLE: DeviceBreakers<2> =
    DeviceBreakers::new([THERMOMETER, EEPROM], [const { SharedBreaker::new(&TABLE_POLICY) }; 2]);
static TABLE_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[test]
fn critical_section_devices_share_one_table_of_breakers_by_address() {
    // Both drivers' handles guard with the same table: each transaction goes through the
    // breaker of the address it talks to. The EEPROM's bus errors (three strikes) open
    // its breaker only.
    let bus = critical_section::Mutex::new(RefCell::new(Mock::new(&[
        temperature(0x00),
        eeprom_read(0, 0).with_error(ErrorKind::Bus),
        temperature(0x10),
        eeprom_read(1, 0).with_error(ErrorKind::Bus),
        temperature(0x20),
        eeprom_read(2, 0).with_error(ErrorKind::Bus),
        temperature(0x30),
        temperature(0x40),
        // 2 s later: the EEPROM's probe works.
        eeprom_read(5, 0x5A),
    ])));
    let mut thermometer = Tmp1x2::new(
        Guarded::new(CriticalSectionDevice::new(&bus), &TABLE, &TABLE_CLOCK),
        SlaveAddr::Default,
    );
    let mut eeprom = Guarded::new(CriticalSectionDevice::new(&bus), &TABLE, &TABLE_CLOCK);

    let mut eeprom_seen = String::new();
    for round in 0..5u8 {
        assert!(thermometer.read_temperature().is_ok(), "round {round}");
        eeprom_seen.push(seen(&read_cell(&mut eeprom, round)));
    }
    assert_eq!(eeprom_seen, "xxx--");
    let now = TABLE_CLOCK.now();
    assert_eq!(TABLE.breaker_of(EEPROM).phase(now), Phase::Open);
    assert_eq!(TABLE.breaker_of(THERMOMETER).state(now), State::Closed { strikes: 0 });

    TABLE_CLOCK.advance(Duration::from_secs(2));
    assert_eq!(read_cell(&mut eeprom, 5), Ok(0x5A));
    let c = TABLE.breaker_of(EEPROM).counters();
    assert_eq!((c.failures, c.skips, c.trips, c.probes), (3, 2, 1, 1));
    assert_eq!(TABLE.breaker_of(THERMOMETER).counters().failures, 0);

    // A handle that talks to an address the table does not list fails without
    // reaching the bus.
    let mut stray = [0];
    assert_eq!(
        eeprom.read(0x1D, &mut stray),
        Err(GuardedError::Unlisted { address: 0x1D })
    );

    critical_section::with(|cs| bus.borrow(cs).borrow_mut().done());
}

#[test]
fn one_guarded_bus_over_a_keyed_table_gives_each_address_a_breaker_on_first_use() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(1));
    static BUS: KeyedBreakers<u8, 2> = KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 2]);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    // One `Guarded` over the whole bus, shared between the drivers: each transaction goes
    // through its address's breaker, created when the address is first seen.
    let bus = RefCell::new(Guarded::new(
        Mock::new(&[
            temperature(0x00),
            eeprom_read(0, 0).with_error(NACK),
            temperature(0x10),
            eeprom_read(1, 0).with_error(NACK),
            temperature(0x20),
            temperature(0x30),
            temperature(0x40),
            // After the cooldown: the EEPROM's probe works.
            eeprom_read(4, 0x44),
            // A third address: both slots taken, both closed, so one is evicted for it.
            Transaction::write(0x1D, vec![0x2A]),
        ]),
        &BUS,
        &CLOCK,
    ));
    assert!(BUS.is_empty(), "no breaker before the first transaction");
    let mut thermometer = Tmp1x2::new(RefCellDevice::new(&bus), SlaveAddr::Default);
    let mut eeprom = RefCellDevice::new(&bus);

    let mut eeprom_seen = String::new();
    for round in 0..5u8 {
        if round == 4 {
            CLOCK.advance(Duration::from_secs(1));
        }
        assert!(thermometer.read_temperature().is_ok(), "round {round}");
        eeprom_seen.push(seen(&read_cell(&mut eeprom, round)));
        if round == 2 {
            assert_eq!(BUS.get(EEPROM).unwrap().phase(CLOCK.now()), Phase::Open);
        }
    }
    assert_eq!(eeprom_seen, "xx--.");
    assert_eq!(BUS.len(), 2);
    let c = BUS.get(EEPROM).unwrap().counters();
    assert_eq!((c.failures, c.skips, c.trips, c.probes), (2, 2, 1, 1));
    assert_eq!(BUS.get(THERMOMETER).unwrap().counters().failures, 0);

    // No address is unlisted: a device the drivers never named gets a slot (here by
    // evicting a closed, idle entry: the table is bounded), without an `Unlisted` error.
    assert_eq!(bus.borrow_mut().write(0x1D, &[0x2A]), Ok(()));
    assert_eq!((BUS.len(), BUS.evictions()), (2, 1));
    assert!(BUS.get(0x1D).is_some());

    bus.into_inner().into_inner().done();
}

#[test]
fn async_shared_bus_devices_each_with_a_breaker_and_a_probe_cancelled_while_the_bus_is_busy() {
    use embedded_hal_async::i2c::I2c as _;

    static POLICY: Policy = Policy::new(2, Duration::from_secs(1));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static MEMORY: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let bus = AsyncMutex::<NoopRawMutex, _>::new(Mock::new(&[
        temperature(0x00),
        eeprom_read(0, 0).with_error(NACK),
        temperature(0x10),
        eeprom_read(1, 0).with_error(NACK),
        temperature(0x20),
        // The EEPROM's first probe never reaches the bus (cancelled while waiting for
        // it); the second, after the doubled wait, does.
        eeprom_read(4, 0xE4),
    ]));
    let mut thermometer = Guarded::new(I2cDevice::new(&bus), &SENSOR, &CLOCK);
    let mut eeprom = Guarded::new(I2cDevice::new(&bus), &MEMORY, &CLOCK);

    let mut eeprom_seen = String::new();
    for round in 0..3u8 {
        let mut t = [0; 2];
        block_on(thermometer.write_read(THERMOMETER, &[0x00], &mut t)).expect("the thermometer keeps working");
        assert_eq!(t, [0x14, round * 0x10]);
        let mut byte = [0];
        let cell = block_on(eeprom.write_read(EEPROM, &[0x00, round], &mut byte));
        if let Err(GuardedError::Inner(inner)) = &cell {
            assert!(matches!(inner, I2cDeviceError::I2c(kind) if *kind == NACK));
        }
        eeprom_seen.push(seen(&cell));
    }
    assert_eq!(eeprom_seen, "xx-");

    // Cooldown over; another task holds the bus. A transaction on the open breaker's
    // device would not even wait for it, but this one is the probe: it waits for the
    // bus, and its caller gives up (drops the future). A dropped probe counts as failed.
    CLOCK.advance(Duration::from_secs(1));
    {
        let Poll::Ready(_held) = poll_once(bus.lock()) else {
            panic!("nothing else holds the bus")
        };
        let mut byte = [0];
        assert!(poll_once(eeprom.write_read(EEPROM, &[0x00, 3], &mut byte)).is_pending());
    }
    assert_eq!(MEMORY.phase(CLOCK.now()), Phase::Open);
    let mut byte = [0];
    let refused = block_on(eeprom.write_read(EEPROM, &[0x00, 3], &mut byte));
    assert!(refused.unwrap_err().refused().is_some());

    // Re-opened for the policy's 1 s (it has no backoff): then the probe goes through
    // the idle bus and closes the breaker.
    CLOCK.advance(Duration::from_secs(1));
    block_on(eeprom.write_read(EEPROM, &[0x00, 4], &mut byte)).unwrap();
    assert_eq!(byte, [0xE4]);
    assert_eq!(MEMORY.state(CLOCK.now()), State::Closed { strikes: 0 });
    let c = MEMORY.counters();
    assert_eq!((c.failures, c.skips, c.trips, c.probes), (3, 2, 2, 2));
    assert_eq!(SENSOR.counters().failures, 0);

    bus.into_inner().done();
}
