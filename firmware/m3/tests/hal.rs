//! Any driver, guarded, on the emulator: `cargo test --release --test hal`.
//!
//! Two TMP102 thermometers share one simulated I2C bus, each read by the `tmp1x2` driver
//! crate, unchanged, through `embedded-hal-bus`'s `RefCellDevice` over one `Guarded` bus
//! whose `DeviceBreakers` table keeps a breaker per address (both listed in the registry,
//! both logging their transitions). One reading per sensor every 100 ms of embassy time,
//! 20 ticks. The bus fails in scripted windows:
//!
//! | tick | 0-3 | 4 | 5 | 6-7 | 8-9 | 10 | 11-15 | 16 | 17-19 |
//! |---|---|---|---|---|---|---|---|---|---|
//! | inside (0x48) | ok | ok | overrun | ok | data NACK | ok | ok | bus error | ok |
//! | outside (0x49) | ok | address NACK | address NACK | address NACK | address NACK | address NACK | ok | bus error | ok |
//!
//! Policy of both: trip after 3 strikes, 350 ms cooldown. The outside sensor trips at tick
//! 6 and is refused at 7-9 while the inside one keeps being read; its probe at 10 still
//! NACKs (re-open), 11-13 are refused, the probe at 14 closes it. The inside sensor never
//! trips: an overrun is neutral, two data NACKs stay below the trip count. The bus error
//! at 16 is one strike for each. Every figure is checked: what each driver returned at
//! each tick (and the temperature it read), how many transactions reached the bus per
//! address, and each breaker's counters and state, read through the registry.
//!
//! Two other builds are for `../size.sh`, which compares their sizes with this one's: with
//! the feature `unguarded` the drivers talk to the bare bus (no breaker at all; the checks
//! then fail by design), and with `by-hand` each `read_temperature()` is wrapped in the
//! same breaker's `call_classified` by hand (the figures are the same).
//!
//! The registry also lists the `radio` and `sensor` breakers of the package's library (its
//! outage scenario, linked in but not run here).
#![no_std]
#![no_main]

use core::cell::RefCell;
use core::ops::Range;
use core::sync::atomic::{AtomicU32, Ordering};

#[cfg(not(feature = "unguarded"))]
use breaker_embedded::{
    registry, Brief, DefmtLog, DeviceBreakers, Duration, EmbassyClock, Policy, SharedBreaker, State,
};
#[cfg(not(any(feature = "unguarded", feature = "by-hand")))]
use breaker_embedded::{Guarded, GuardedError};
use embassy_executor::Spawner;
use embassy_time::{Instant, Timer};
use embedded_hal::i2c::{ErrorKind, ErrorType, I2c, NoAcknowledgeSource, Operation};
use embedded_hal_bus::i2c::RefCellDevice;
use firmware_m3 as fw;
use fw::scenario::figure;
use tmp1x2::{SlaveAddr, Tmp1x2};

/// Readings per sensor.
const TICKS: usize = 20;
/// Time between two rounds of readings, in milliseconds of embassy time.
const TICK_MS: u64 = 100;

const INSIDE: u8 = 0x48;
const OUTSIDE: u8 = 0x49;

/// Ticks at which the outside sensor does not acknowledge its address.
const OUTSIDE_NACKS: Range<u32> = 4..11;
/// The tick at which the controller overruns while reading the inside sensor.
const INSIDE_OVERRUN: u32 = 5;
/// Ticks at which the inside sensor does not acknowledge the register pointer.
const INSIDE_DATA_NACKS: Range<u32> = 8..10;
/// The tick at which a glitch corrupts the bus for both sensors.
const BUS_ERROR: u32 = 16;

/// The simulated bus's notion of time: the current tick.
static TICK: AtomicU32 = AtomicU32::new(0);
/// Transactions that reached the bus, per sensor (inside, outside).
static REACHED: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

/// The temperature a sensor reads at `tick`, in 1/16 °C (the TMP102's resolution): the
/// inside one 20 °C and warming, the outside one -5 °C and cooling.
fn sixteenths(address: u8, tick: u32) -> i32 {
    let tick = tick as i32;
    if address == INSIDE {
        320 + tick
    } else {
        -80 - tick
    }
}

/// The fault the bus shows for a transaction to `address` at `tick`, if any.
fn fault(address: u8, tick: u32) -> Option<ErrorKind> {
    if tick == BUS_ERROR {
        return Some(ErrorKind::Bus);
    }
    match address {
        OUTSIDE if OUTSIDE_NACKS.contains(&tick) => Some(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address)),
        INSIDE if tick == INSIDE_OVERRUN => Some(ErrorKind::Overrun),
        INSIDE if INSIDE_DATA_NACKS.contains(&tick) => Some(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data)),
        _ => None,
    }
}

/// Two TMP102s on a simulated I2C bus: a register pointer write, then the register read
/// (the temperature register, 0x00, as a 12-bit two's complement value in the top bits);
/// failing as [`fault`] says. Any other address is not acknowledged.
struct SimBus;

impl ErrorType for SimBus {
    type Error = ErrorKind;
}

impl I2c for SimBus {
    fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        let counter = match address {
            INSIDE => &REACHED[0],
            OUTSIDE => &REACHED[1],
            _ => return Err(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address)),
        };
        counter.store(counter.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        let tick = TICK.load(Ordering::Relaxed);
        if let Some(kind) = fault(address, tick) {
            return Err(kind);
        }
        let mut pointer = 0;
        for op in operations {
            match op {
                Operation::Write(bytes) => pointer = bytes.first().copied().unwrap_or(pointer),
                Operation::Read(buf) => {
                    // Temperature, or the configuration register's reset value.
                    let register = if pointer == 0x00 {
                        (sixteenths(address, tick) << 4) as u16
                    } else {
                        0x60A0
                    };
                    for (byte, value) in buf.iter_mut().zip(register.to_be_bytes()) {
                        *byte = value;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The breakers: one per thermometer on the bus, each logging its transitions, both in
/// the registry.
#[cfg(not(feature = "unguarded"))]
mod breakers {
    use super::*;

    /// Trip after 3 strikes, refuse for 350 ms.
    pub static POLICY: Policy = Policy::new(3, Duration::from_millis(350));
    pub static BUS: DeviceBreakers<2, DefmtLog> = DeviceBreakers::new(
        [INSIDE, OUTSIDE],
        [
            SharedBreaker::with_observer(&POLICY, DefmtLog::new("i2c/inside")),
            SharedBreaker::with_observer(&POLICY, DefmtLog::new("i2c/outside")),
        ],
    );
    breaker_embedded::register!(BUS[INSIDE], "i2c/inside", EmbassyClock);
    breaker_embedded::register!(BUS[OUTSIDE], "i2c/outside", EmbassyClock);
}

/// What a driver's `read_temperature` came to.
#[cfg_attr(feature = "unguarded", allow(dead_code))] // no refusals without breakers
enum Reading {
    Celsius(f32),
    Failed,
    Refused,
}

/// The test itself: the drivers over the guarded bus.
#[cfg(not(any(feature = "unguarded", feature = "by-hand")))]
mod bus {
    use super::*;

    pub type Bus = Guarded<SimBus, &'static DeviceBreakers<2, DefmtLog>, EmbassyClock>;

    pub fn new() -> Bus {
        Guarded::new(SimBus, &breakers::BUS, EmbassyClock)
    }

    pub fn read(_: u8, read: impl FnOnce() -> Result<f32, tmp1x2::Error<GuardedError<ErrorKind>>>) -> Reading {
        match read() {
            Ok(t) => Reading::Celsius(t),
            Err(tmp1x2::Error::I2C(GuardedError::Refused(_))) => Reading::Refused,
            Err(_) => Reading::Failed,
        }
    }
}

/// Size baseline: the drivers over the bare bus.
#[cfg(feature = "unguarded")]
mod bus {
    use super::*;

    pub type Bus = SimBus;

    pub fn new() -> Bus {
        SimBus
    }

    pub fn read(_: u8, read: impl FnOnce() -> Result<f32, tmp1x2::Error<ErrorKind>>) -> Reading {
        match read() {
            Ok(t) => Reading::Celsius(t),
            Err(_) => Reading::Failed,
        }
    }
}

/// Size comparison: the same breakers, each driver call wrapped by hand instead.
#[cfg(all(feature = "by-hand", not(feature = "unguarded")))]
mod bus {
    use super::*;
    use breaker_embedded::{ByErrorKind, CallError};

    pub type Bus = SimBus;

    pub fn new() -> Bus {
        SimBus
    }

    pub fn read(address: u8, read: impl FnOnce() -> Result<f32, tmp1x2::Error<ErrorKind>>) -> Reading {
        let Some(breaker) = breakers::BUS.get(address) else {
            return Reading::Failed;
        };
        let classify = |e: &tmp1x2::Error<ErrorKind>| match e {
            tmp1x2::Error::I2C(kind) => ByErrorKind::i2c(*kind),
        };
        match breaker.call_classified(&EmbassyClock, read, classify) {
            Ok(t) => Reading::Celsius(t),
            Err(CallError::Refused(_)) => Reading::Refused,
            Err(CallError::Inner(_)) => Reading::Failed,
        }
    }
}

/// What one driver returned at each tick: `.` a reading (the right one), `x` an error
/// from the bus, `-` refused by the breaker, `?` a wrong temperature.
struct Seen {
    name: &'static str,
    address: u8,
    ticks: [u8; TICKS],
}

impl Seen {
    const fn new(name: &'static str, address: u8) -> Seen {
        Seen {
            name,
            address,
            ticks: [b' '; TICKS],
        }
    }

    fn record(&mut self, tick: u32, reading: Reading) {
        let expected = sixteenths(self.address, tick);
        let symbol = match reading {
            Reading::Celsius(t) if (t * 16.0) as i32 == expected => b'.',
            Reading::Celsius(_) => b'?',
            Reading::Refused => b'-',
            Reading::Failed => b'x',
        };
        if let Some(slot) = self.ticks.get_mut(tick as usize) {
            *slot = symbol;
        }
        defmt::info!("t={=u32:02} {=str}: {=char}", tick, self.name, symbol as char);
    }

    fn count(&self, symbol: u8) -> u32 {
        self.ticks.iter().filter(|&&c| c == symbol).count() as u32
    }
}

/// What each sensor's timeline must show.
#[cfg_attr(feature = "unguarded", allow(dead_code))] // no breaker counters to check
struct Expected {
    seen: &'static [u8; TICKS],
    /// Breaker failures (strikes: NACKs and bus errors; not the neutral overrun).
    failures: u32,
    skips: u32,
    trips: u32,
    probes: u32,
}

const EXPECTED_INSIDE: Expected = Expected {
    seen: b".....x..xx......x...",
    failures: 3,
    skips: 0,
    trips: 0,
    probes: 0,
};

const EXPECTED_OUTSIDE: Expected = Expected {
    seen: b"....xxx---x---..x...",
    failures: 5,
    skips: 6,
    trips: 2,
    probes: 2,
};

fn check(seen: &Seen, expected: &Expected, reached: u32) -> bool {
    let name = seen.name;
    let mut ok = true;
    if seen.ticks == *expected.seen {
        defmt::info!("check {=str} timeline: {=[u8]:a} (as expected)", name, seen.ticks);
    } else {
        defmt::error!(
            "check {=str} timeline: got {=[u8]:a}, expected {=[u8]:a}",
            name,
            seen.ticks,
            *expected.seen
        );
        ok = false;
    }
    ok &= figure(name, "wrong temperatures", 0, seen.count(b'?'));
    ok &= figure(name, "refusals seen by the driver", expected.skips, seen.count(b'-'));
    ok &= figure(
        name,
        "transactions that reached the bus",
        TICKS as u32 - expected.skips,
        reached,
    );
    ok & check_breaker(name, expected)
}

#[cfg(not(feature = "unguarded"))]
fn check_breaker(name: &str, expected: &Expected) -> bool {
    let Ok(entry) = registry::get(name) else {
        defmt::error!("check {=str}: not in the registry", name);
        return false;
    };
    let c = entry.counters();
    let mut ok = figure(name, "breaker failures", expected.failures, c.failures);
    ok &= figure(name, "breaker skips", expected.skips, c.skips);
    ok &= figure(name, "breaker trips", expected.trips, c.trips);
    ok &= figure(name, "breaker probes", expected.probes, c.probes);
    let state = entry.state();
    if state != (State::Closed { strikes: 0 }) {
        defmt::error!("check {=str}: ends {}, expected closed", name, Brief(state));
        ok = false;
    }
    ok
}

#[cfg(feature = "unguarded")]
fn check_breaker(name: &str, _: &Expected) -> bool {
    defmt::error!("check {=str}: built `unguarded`, no breaker to check", name);
    false
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

    let bus = RefCell::new(bus::new());
    // The driver crate, unchanged: generic over `I2c`, here a shared guarded bus.
    let mut inside = Tmp1x2::new(RefCellDevice::new(&bus), SlaveAddr::Alternative(false, false));
    let mut outside = Tmp1x2::new(RefCellDevice::new(&bus), SlaveAddr::Alternative(false, true));
    let (mut seen_inside, mut seen_outside) = (Seen::new("i2c/inside", INSIDE), Seen::new("i2c/outside", OUTSIDE));

    let epoch = Instant::now();
    for tick in 0..TICKS as u32 {
        Timer::at(epoch + embassy_time::Duration::from_millis(TICK_MS * u64::from(tick))).await;
        TICK.store(tick, Ordering::Relaxed);
        seen_inside.record(tick, bus::read(INSIDE, || inside.read_temperature()));
        seen_outside.record(tick, bus::read(OUTSIDE, || outside.read_temperature()));
    }

    #[cfg(not(feature = "unguarded"))]
    breaker_embedded::log_registry();
    let reached = |i: usize| REACHED[i].load(Ordering::Relaxed);
    let mut ok = check(&seen_inside, &EXPECTED_INSIDE, reached(0));
    ok &= check(&seen_outside, &EXPECTED_OUTSIDE, reached(1));
    if ok {
        defmt::info!("hal test passed: every figure as expected");
    } else {
        defmt::error!("hal test FAILED: see the figures above");
    }
    fw::exit(ok)
}
