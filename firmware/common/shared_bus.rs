//! The shared-bus scenario (m3's and m0's `tests/shared_bus.rs` include it as their
//! `shared_bus` module): a TMP102 thermometer (0x48, read by the `tmp1x2` driver crate,
//! unchanged) and a 24C-series EEPROM (0x50) on one simulated I2C bus, shared through a
//! shared-bus device handle per driver (`embedded-hal-bus`'s `RefCellDevice` or
//! `CriticalSectionDevice`, or embassy-embedded-hal's async `I2cDevice`), each handle with
//! a breaker of its own inside (`Guarded` over the device, not over the bus). The EEPROM's
//! `Guarded` has a recovery step (`recover_with`): an I2C general-call reset, counted.
//! (m3 also runs it with one `Guarded` over the bus itself, its breakers a keyed table by
//! address, created on first use, shared by both drivers' `RefCellDevice` handles: the
//! same figures, the table's breakers checked by address.)
//!
//! One reading of each device every 100 ms of embassy time, 20 ticks; policy of both
//! breakers: trip after 2 strikes, 350 ms cooldown. At tick 4 the EEPROM wedges: it NACKs
//! its address until a general-call reset reaches it, and a reset before tick 12 does not
//! help (the device is still browning out). The thermometer answers at every tick.
//!
//! | EEPROM at tick | 0-3 | 4 | 5 | 6-8 | 9 | 10-12 | 13 | 14-19 |
//! |---|---|---|---|---|---|---|---|---|
//! | the bus | ok | NACK | NACK | (not asked) | NACK | (not asked) | ok | ok |
//! | the breaker | closed | strike | trip | refused | probe fails, re-opens | refused | probe, closes | closed |
//! | recovery step | | | once (the trip) | | twice (before the probe; the re-opening) | | once (before the probe) | |
//!
//! Every figure is checked for each run: what each driver's caller saw at each tick (and
//! every value read), the transactions that reached the bus per address, each breaker's
//! counters and final state, and the recovery step: at which ticks it ran and how often
//! (4 times: once per trip, 2, and once before each probe, 2), each run a general-call
//! reset that reached the bus.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use breaker_embedded::hal::Recover;
use breaker_embedded::{
    ByErrorKind, Clock, DefmtLog, Duration, EmbassyClock, Guarded, GuardedError, Policy, SharedBreaker, State,
};
use embassy_time::{Instant, Timer};
use embedded_hal::i2c::{ErrorKind, ErrorType, I2c, NoAcknowledgeSource, Operation};
use tmp1x2::{SlaveAddr, Tmp1x2};

use crate::fw::scenario::figure;

/// Readings per device.
pub const TICKS: usize = 20;
/// Time between two rounds of readings, in milliseconds of embassy time.
const TICK_MS: u64 = 100;

pub const THERMOMETER: u8 = 0x48;
pub const EEPROM: u8 = 0x50;
/// The I2C general call, and its software-reset command.
const GENERAL_CALL: u8 = 0x00;
const SOFT_RESET: u8 = 0x06;

/// The tick at which the EEPROM wedges.
const WEDGES_AT: u32 = 4;
/// The first tick at which a general-call reset un-wedges it.
const RESETTABLE_FROM: u32 = 12;

/// The simulated bus's notion of time: the current tick.
static TICK: AtomicU32 = AtomicU32::new(0);
/// Whether the EEPROM NACKs its address.
static WEDGED: AtomicBool = AtomicBool::new(false);
/// Transactions that reached the bus: thermometer, EEPROM, general-call resets.
static REACHED: [AtomicU32; 3] = [AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)];
/// Runs of the recovery step.
static STEPS: AtomicU32 = AtomicU32::new(0);

fn bump(counter: &AtomicU32) {
    // Load and store: the Cortex-M0 has no read-modify-write atomics, and nothing else
    // touches the counters.
    counter.store(counter.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// The thermometer's temperature at `tick`, in 1/16 °C: 20 °C and warming.
fn sixteenths(tick: u32) -> i32 {
    320 + tick as i32
}

/// The byte the EEPROM holds at `cell`.
pub fn cell_value(cell: u8) -> u8 {
    0x40 ^ cell
}

/// A TMP102, a 24C-series EEPROM and the general call on one simulated I2C bus; any other
/// address is not acknowledged.
pub struct SimBus;

impl ErrorType for SimBus {
    type Error = ErrorKind;
}

impl I2c for SimBus {
    fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        let tick = TICK.load(Ordering::Relaxed);
        match address {
            GENERAL_CALL => {
                bump(&REACHED[2]);
                if matches!(operations, [Operation::Write([SOFT_RESET])]) && tick >= RESETTABLE_FROM {
                    WEDGED.store(false, Ordering::Relaxed);
                }
            }
            THERMOMETER => {
                bump(&REACHED[0]);
                let mut pointer = 0;
                for op in operations {
                    match op {
                        Operation::Write(bytes) => pointer = bytes.first().copied().unwrap_or(pointer),
                        Operation::Read(buf) => {
                            // Temperature (12 bits, two's complement, in the top bits), or
                            // the configuration register's reset value.
                            let register = if pointer == 0x00 {
                                (sixteenths(tick) << 4) as u16
                            } else {
                                0x60A0
                            };
                            for (byte, value) in buf.iter_mut().zip(register.to_be_bytes()) {
                                *byte = value;
                            }
                        }
                    }
                }
            }
            EEPROM => {
                bump(&REACHED[1]);
                if WEDGED.load(Ordering::Relaxed) {
                    return Err(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address));
                }
                // A random read: the cell's two address bytes, then the bytes from there.
                let mut cell = 0;
                for op in operations {
                    match op {
                        Operation::Write(bytes) => cell = bytes.get(1).copied().unwrap_or(cell),
                        Operation::Read(buf) => {
                            for byte in buf.iter_mut() {
                                *byte = cell_value(cell);
                                cell = cell.wrapping_add(1);
                            }
                        }
                    }
                }
            }
            _ => return Err(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address)),
        }
        Ok(())
    }
}

/// Counts a run of the recovery step; called by every step, blocking or async.
pub fn step_ran() {
    bump(&STEPS);
}

/// The EEPROM's recovery step for a blocking device: a general-call reset through the
/// device's own handle (so past the breaker, on the shared bus). Ready if it was
/// acknowledged.
pub struct GeneralCallReset;

impl<D: I2c> Recover<D> for GeneralCallReset {
    fn recover(&mut self, device: &mut D) -> bool {
        step_ran();
        let (address, bytes) = RESET;
        device.write(address, &bytes).is_ok()
    }
}

/// The general-call reset: its address and bytes (also for an async step).
pub const RESET: (u8, [u8; 1]) = (GENERAL_CALL, [SOFT_RESET]);

/// Reads one byte of the EEPROM through any `I2c`: what its driver does.
pub fn read_cell<I: I2c>(i2c: &mut I, cell: u8) -> Result<u8, I::Error> {
    let mut byte = [0];
    i2c.write_read(EEPROM, &[0x00, cell], &mut byte)?;
    Ok(byte[0])
}

/// Trip after 2 strikes, refuse for 350 ms.
pub static POLICY: Policy = Policy::new(2, Duration::from_millis(350));

/// The two devices' breakers, logging their transitions.
pub struct Breakers {
    pub thermometer: SharedBreaker<DefmtLog>,
    pub eeprom: SharedBreaker<DefmtLog>,
}

impl Breakers {
    pub const fn new() -> Breakers {
        Breakers {
            thermometer: SharedBreaker::with_observer(&POLICY, DefmtLog::new("bus/thermometer")),
            eeprom: SharedBreaker::with_observer(&POLICY, DefmtLog::new("bus/eeprom")),
        }
    }
}

/// Where a run's breakers are: one per device handle ([`Breakers`]), or a keyed table's.
pub trait BreakerOf {
    /// The breaker that guarded `address`'s transactions, if there is one.
    fn breaker(&self, address: u8) -> Option<&SharedBreaker<DefmtLog>>;
}

impl BreakerOf for Breakers {
    fn breaker(&self, address: u8) -> Option<&SharedBreaker<DefmtLog>> {
        match address {
            THERMOMETER => Some(&self.thermometer),
            EEPROM => Some(&self.eeprom),
            _ => None,
        }
    }
}

/// What a guarded transaction came to.
pub enum Reading<T> {
    Value(T),
    Failed,
    Refused,
}

/// A guarded transaction's result as a [`Reading`].
pub fn reading<T, E>(result: Result<T, GuardedError<E>>) -> Reading<T> {
    match result {
        Ok(v) => Reading::Value(v),
        Err(GuardedError::Refused(_)) => Reading::Refused,
        Err(_) => Reading::Failed,
    }
}

/// The two drivers of a run, each over its own guarded shared-bus device handle.
pub trait Devices {
    /// The thermometer's temperature, in 1/16 °C.
    async fn temperature(&mut self) -> Reading<i32>;
    /// The EEPROM's byte at `cell`.
    async fn cell(&mut self, cell: u8) -> Reading<u8>;
}

/// The blocking form: `tmp1x2` and the EEPROM over two device handles `D` of one bus.
pub struct Blocking<'b, D: I2c> {
    thermometer: Tmp1x2<Guarded<D, &'b SharedBreaker<DefmtLog>, EmbassyClock>, tmp1x2::marker::mode::Continuous>,
    eeprom: Guarded<D, &'b SharedBreaker<DefmtLog>, EmbassyClock, ByErrorKind, GeneralCallReset>,
}

impl<'b, D: I2c> Blocking<'b, D> {
    pub fn new(thermometer: D, eeprom: D, breakers: &'b Breakers) -> Self {
        Blocking {
            thermometer: Tmp1x2::new(
                Guarded::new(thermometer, &breakers.thermometer, EmbassyClock),
                SlaveAddr::Default,
            ),
            eeprom: Guarded::new(eeprom, &breakers.eeprom, EmbassyClock).recover_with(GeneralCallReset),
        }
    }
}

impl<D: I2c> Devices for Blocking<'_, D> {
    async fn temperature(&mut self) -> Reading<i32> {
        match self.thermometer.read_temperature() {
            Ok(celsius) => Reading::Value((celsius * 16.0) as i32),
            Err(tmp1x2::Error::I2C(e)) => reading(Err(e)),
        }
    }

    async fn cell(&mut self, cell: u8) -> Reading<u8> {
        reading(read_cell(&mut self.eeprom, cell))
    }
}

/// One device's timeline: `.` the right value, `?` a wrong one, `x` a bus error, `-`
/// refused by the breaker.
struct Timeline {
    name: &'static str,
    ticks: [u8; TICKS],
}

impl Timeline {
    const fn new(name: &'static str) -> Timeline {
        Timeline {
            name,
            ticks: [b' '; TICKS],
        }
    }

    fn record<T: PartialEq>(&mut self, tick: u32, reading: Reading<T>, expected: T) -> u8 {
        let symbol = match reading {
            Reading::Value(v) if v == expected => b'.',
            Reading::Value(_) => b'?',
            Reading::Refused => b'-',
            Reading::Failed => b'x',
        };
        if let Some(slot) = self.ticks.get_mut(tick as usize) {
            *slot = symbol;
        }
        symbol
    }

    fn count(&self, symbol: u8) -> u32 {
        self.ticks.iter().filter(|&&c| c == symbol).count() as u32
    }

    fn check(&self, expected: &[u8; TICKS]) -> bool {
        let ok = self.ticks == *expected;
        if ok {
            defmt::info!("check {=str} timeline: {=[u8]:a} (as expected)", self.name, self.ticks);
        } else {
            defmt::error!(
                "check {=str} timeline: got {=[u8]:a}, expected {=[u8]:a}",
                self.name,
                self.ticks,
                *expected
            );
        }
        ok
    }
}

const EXPECTED_THERMOMETER: &[u8; TICKS] = b"....................";
const EXPECTED_EEPROM: &[u8; TICKS] = b"....xx---x---.......";
/// Runs of the recovery step per tick.
const EXPECTED_STEPS: &[u8; TICKS] = b"00000100020001000000";

/// One breaker's expected counters: failures, skips, trips, probes.
fn check_breaker(name: &str, breaker: Option<&SharedBreaker<DefmtLog>>, expected: [u32; 4]) -> bool {
    let Some(breaker) = breaker else {
        defmt::error!("check {=str}: no breaker guarded it", name);
        return false;
    };
    let c = breaker.counters();
    let mut ok = figure(name, "breaker failures", expected[0], c.failures);
    ok &= figure(name, "breaker skips", expected[1], c.skips);
    ok &= figure(name, "breaker trips", expected[2], c.trips);
    ok &= figure(name, "breaker probes", expected[3], c.probes);
    if breaker.state(EmbassyClock.now()) != (State::Closed { strikes: 0 }) {
        defmt::error!("check {=str}: does not end closed", name);
        ok = false;
    }
    ok
}

/// Runs the scenario over `devices` (named `form` in the log), whose handles guard with
/// `breakers`, fresh ones; checks every figure. `true` if all match.
pub async fn run(form: &str, devices: &mut impl Devices, breakers: &impl BreakerOf) -> bool {
    defmt::info!("shared bus through {=str}", form);
    TICK.store(0, Ordering::Relaxed);
    WEDGED.store(false, Ordering::Relaxed);
    for counter in REACHED.iter().chain([&STEPS]) {
        counter.store(0, Ordering::Relaxed);
    }
    let mut thermometer = Timeline::new("thermometer");
    let mut eeprom = Timeline::new("eeprom");
    let mut steps = Timeline::new("eeprom recovery steps");

    let epoch = Instant::now();
    for tick in 0..TICKS as u32 {
        Timer::at(epoch + embassy_time::Duration::from_millis(TICK_MS * u64::from(tick))).await;
        TICK.store(tick, Ordering::Relaxed);
        if tick == WEDGES_AT {
            WEDGED.store(true, Ordering::Relaxed);
        }
        let t = thermometer.record(tick, devices.temperature().await, sixteenths(tick));
        let before = STEPS.load(Ordering::Relaxed);
        let e = eeprom.record(tick, devices.cell(tick as u8).await, cell_value(tick as u8));
        let ran = STEPS.load(Ordering::Relaxed).wrapping_sub(before);
        if let Some(slot) = steps.ticks.get_mut(tick as usize) {
            *slot = b'0'.wrapping_add(ran as u8);
        }
        defmt::info!(
            "t={=u32:02} thermometer: {=char}  eeprom: {=char}  recovery steps: {=u32}",
            tick,
            t as char,
            e as char,
            ran
        );
    }

    let reached = |i: usize| REACHED[i].load(Ordering::Relaxed);
    let mut ok = thermometer.check(EXPECTED_THERMOMETER);
    ok &= figure(
        "thermometer",
        "transactions that reached the bus",
        TICKS as u32,
        reached(0),
    );
    ok &= check_breaker("thermometer", breakers.breaker(THERMOMETER), [0, 0, 0, 0]);
    ok &= eeprom.check(EXPECTED_EEPROM);
    ok &= figure("eeprom", "wrong values", 0, eeprom.count(b'?'));
    ok &= figure("eeprom", "transactions that reached the bus", 14, reached(1));
    ok &= check_breaker("eeprom", breakers.breaker(EEPROM), [3, 6, 2, 2]);
    ok &= steps.check(EXPECTED_STEPS);
    let c = breakers.breaker(EEPROM).map(|b| b.counters()).unwrap_or_default();
    let ran = STEPS.load(Ordering::Relaxed);
    ok &= figure("eeprom", "recovery steps", 4, ran);
    ok &= figure("eeprom", "recovery steps = trips + probes", c.trips + c.probes, ran);
    ok &= figure("eeprom", "general-call resets that reached the bus", ran, reached(2));
    ok
}
