//! `Guarded` as a blocking `I2c`: scripted NACKs, bus errors and overruns on a mock bus
//! that fails the test if anything unscripted reaches it; verdicts by `ErrorKind` and by a
//! classifier; a real driver crate over it unchanged; one breaker per address on a shared
//! bus, listed in the registry.

mod hal_mock;

use core::cell::RefCell;

use breaker_core::registry;
use breaker_core::{
    ByErrorKind, Clock, DeviceBreakers, Duration, Guarded, GuardedError, Instant, ManualClock, Phase, Policy,
    RefusalReason, SharedBreaker, State, Verdict,
};
use embedded_hal::i2c::{Error as _, ErrorKind, ErrorType, I2c, NoAcknowledgeSource, Operation, TenBitAddress};
use embedded_hal_bus::i2c::RefCellDevice;
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use tmp1x2::{SlaveAddr, Tmp1x2};

const NACK: ErrorKind = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
const NACK_DATA: ErrorKind = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data);

/// The TMP102's temperature register read: pointer 0x00, then two bytes.
fn temperature(address: u8, msb: u8, lsb: u8) -> Transaction {
    Transaction::write_read(address, vec![0x00], vec![msb, lsb])
}

fn temperature_fails(address: u8, kind: ErrorKind) -> Transaction {
    temperature(address, 0, 0).with_error(kind)
}

#[test]
fn nacks_trip_the_breaker_and_a_refused_transaction_never_reaches_the_bus() {
    static POLICY: Policy = Policy::new(3, Duration::from_secs(1));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let i2c = Mock::new(&[
        Transaction::write(0x48, vec![1]).with_error(NACK),
        Transaction::write(0x48, vec![2]).with_error(NACK),
        Transaction::write(0x48, vec![3]).with_error(NACK),
        // Open for 1 s: writes 4 and 5 are refused. After the cooldown, write 6 is the probe.
        Transaction::write(0x48, vec![6]),
    ]);
    let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK);
    for byte in 1..=3 {
        assert_eq!(bus.write(0x48, &[byte]), Err(GuardedError::Inner(NACK)));
    }
    assert_eq!(SENSOR.phase(CLOCK.now()), Phase::Open);
    for byte in 4..=5 {
        let refused = bus.write(0x48, &[byte]).unwrap_err().refused().expect("refused");
        assert_eq!(refused.reason, RefusalReason::Open);
    }
    CLOCK.advance(Duration::from_secs(1));
    bus.write(0x48, &[6]).unwrap();
    assert_eq!(SENSOR.state(CLOCK.now()), State::Closed { strikes: 0 });
    let c = SENSOR.counters();
    assert_eq!((c.failures, c.skips, c.trips, c.probes), (3, 2, 1, 1));
    bus.into_inner().done(); // exactly the scripted transactions reached the bus
}

#[test]
fn each_method_is_one_transaction_forwarded_to_the_same_method() {
    static POLICY: Policy = Policy::new(4, Duration::from_secs(1));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    // Four transactions that work, then one failure per method: four strikes, the fourth
    // trips (trip = 4). The script logs which method of the bus each one reached.
    let mut answers = vec![Ok(()); 4];
    answers.extend([Err(NACK); 4]);
    let mut bus = Guarded::new(hal_mock::I2c::new(&answers), &SENSOR, &CLOCK);
    let (mut two, mut one) = ([0; 2], [0; 1]);

    bus.read(0x48, &mut two).unwrap();
    assert_eq!(two, [0xA5; 2]);
    bus.write(0x48, &[1]).unwrap();
    bus.write_read(0x48, &[0], &mut one).unwrap();
    assert_eq!(one, [0xA5]);
    bus.transaction(0x48, &mut [Operation::Write(&[2]), Operation::Read(&mut one)])
        .unwrap();

    assert_eq!(bus.read(0x48, &mut two), Err(GuardedError::Inner(NACK)));
    assert_eq!(bus.write(0x48, &[1]), Err(GuardedError::Inner(NACK)));
    assert_eq!(bus.write_read(0x48, &[0], &mut one), Err(GuardedError::Inner(NACK)));
    assert_eq!(SENSOR.state(CLOCK.now()), State::Closed { strikes: 3 });
    assert_eq!(
        bus.transaction(0x48, &mut [Operation::Write(&[2])]),
        Err(GuardedError::Inner(NACK))
    );
    assert_eq!(SENSOR.phase(CLOCK.now()), Phase::Open);

    // Open: every method is refused without reaching the bus.
    assert!(bus.read(0x48, &mut two).unwrap_err().refused().is_some());
    assert!(bus.write(0x48, &[1]).unwrap_err().refused().is_some());
    assert!(bus.write_read(0x48, &[0], &mut one).unwrap_err().refused().is_some());
    assert!(bus
        .transaction(0x48, &mut [Operation::Write(&[2])])
        .unwrap_err()
        .refused()
        .is_some());
    assert_eq!(SENSOR.counters().skips, 4);

    let script = bus.into_inner();
    script.done();
    let each = ["read", "write", "write_read", "transaction"];
    assert_eq!(script.log, [each, each].concat());
}

#[test]
fn bus_errors_and_arbitration_losses_are_strikes_an_overrun_is_neutral() {
    static POLICY: Policy = Policy::new(3, Duration::from_secs(1));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let i2c = Mock::new(&[
        temperature_fails(0x48, ErrorKind::Bus),
        temperature_fails(0x48, ErrorKind::Overrun), // neutral: the strikes stay at 1
        temperature_fails(0x48, ErrorKind::ArbitrationLoss),
        temperature_fails(0x48, ErrorKind::Overrun),
        temperature_fails(0x48, NACK_DATA), // the third strike
    ]);
    let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK);
    let mut buf = [0; 2];
    let now = || CLOCK.now();

    assert_eq!(
        bus.write_read(0x48, &[0], &mut buf),
        Err(GuardedError::Inner(ErrorKind::Bus))
    );
    assert_eq!(SENSOR.state(now()), State::Closed { strikes: 1 });
    assert_eq!(
        bus.write_read(0x48, &[0], &mut buf),
        Err(GuardedError::Inner(ErrorKind::Overrun))
    );
    assert_eq!(SENSOR.state(now()), State::Closed { strikes: 1 });
    assert!(bus.write_read(0x48, &[0], &mut buf).is_err());
    assert_eq!(SENSOR.state(now()), State::Closed { strikes: 2 });
    assert!(bus.write_read(0x48, &[0], &mut buf).is_err());
    assert_eq!(SENSOR.state(now()), State::Closed { strikes: 2 });
    assert!(bus.write_read(0x48, &[0], &mut buf).is_err());
    assert_eq!(SENSOR.phase(now()), Phase::Open);
    assert_eq!(SENSOR.counters().failures, 3); // the overruns are not failures
    bus.into_inner().done();
}

#[test]
fn a_classifier_replaces_the_kind_table() {
    static POLICY: Policy = Policy::new(3, Duration::from_secs(1));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    // A data NACK means the sensor latched up: trip at once. An overrun falls back to
    // the default table (neutral).
    let latch_up = |e: &ErrorKind| match e {
        ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data) => Verdict::Trip,
        other => ByErrorKind::i2c(other.kind()),
    };
    let i2c = Mock::new(&[
        Transaction::write(0x48, vec![1]).with_error(ErrorKind::Overrun),
        Transaction::write(0x48, vec![1]).with_error(NACK_DATA),
    ]);
    let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK).classify_with(latch_up);
    assert!(bus.write(0x48, &[1]).is_err());
    assert_eq!(SENSOR.state(CLOCK.now()), State::Closed { strikes: 0 });
    assert!(bus.write(0x48, &[1]).is_err());
    assert_eq!(SENSOR.phase(CLOCK.now()), Phase::Open);
    assert_eq!(SENSOR.counters().trips, 1);
    bus.into_inner().done();
}

#[test]
fn a_refusal_is_an_error_of_kind_other_that_gives_the_refusal_back() {
    static POLICY: Policy = Policy::new(1, Duration::from_millis(750));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let i2c = Mock::new(&[Transaction::write(0x48, vec![1]).with_error(NACK)]);
    let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK);
    let failed = bus.write(0x48, &[1]).unwrap_err();
    assert_eq!(failed.kind(), NACK); // the inner error's own kind
    assert_eq!(failed.inner(), Some(&NACK));
    CLOCK.advance(Duration::from_millis(250));
    let refused = bus.write(0x48, &[1]).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Other);
    assert_eq!(refused.refused().unwrap().retry_in, Some(Duration::from_millis(500)));
    assert_eq!(refused.to_string(), "circuit breaker open: call refused");
    assert_eq!(refused.into_inner(), None);
    bus.into_inner().done();
}

#[test]
fn a_driver_crate_compiles_against_guarded_unchanged_and_gets_the_refusal_back() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(2));
    static THERMOMETER: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let i2c = Mock::new(&[
        temperature(0x49, 0x19, 0x10), // 25.0625 °C
        temperature_fails(0x49, NACK),
        temperature_fails(0x49, NACK),
        temperature(0x49, 0x1A, 0x00), // the probe, after the cooldown: 26 °C
    ]);
    let mut sensor = Tmp1x2::new(
        Guarded::new(i2c, &THERMOMETER, &CLOCK),
        SlaveAddr::Alternative(false, true),
    );
    assert_eq!(sensor.read_temperature().unwrap(), 25.0625);
    for _ in 0..2 {
        assert!(matches!(
            sensor.read_temperature(),
            Err(tmp1x2::Error::I2C(GuardedError::Inner(NACK)))
        ));
    }
    match sensor.read_temperature() {
        Err(tmp1x2::Error::I2C(GuardedError::Refused(r))) => assert_eq!(r.retry_in, Some(Duration::from_secs(2))),
        other => panic!("expected a refusal, got {other:?}"),
    }
    CLOCK.advance(Duration::from_secs(2));
    assert_eq!(sensor.read_temperature().unwrap(), 26.0);
    assert_eq!(THERMOMETER.phase(CLOCK.now()), Phase::Closed);
    sensor.destroy().into_inner().done();
}

static TABLE_POLICY: Policy = Policy::new(2, Duration::from_secs(3));
static SHARED_BUS: DeviceBreakers<3> =
    DeviceBreakers::new([0x48, 0x49, 0x4A], [const { SharedBreaker::new(&TABLE_POLICY) }; 3]);
static TABLE_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
breaker_core::register!(SHARED_BUS[0x48], "i2c1/inside", TABLE_CLOCK);
breaker_core::register!(SHARED_BUS[0x49], "i2c1/outside", TABLE_CLOCK);
breaker_core::register!(SHARED_BUS[0x4A], "i2c1/spare", TABLE_CLOCK);

#[test]
fn a_nacking_address_is_refused_while_its_neighbours_on_the_bus_keep_working() {
    // Two TMP102 drivers share one guarded bus through embedded-hal-bus; the one at
    // 0x49 dies (NACKs its address).
    let i2c = Mock::new(&[
        temperature(0x48, 0x14, 0x00),
        temperature(0x49, 0x0A, 0x00),
        temperature(0x48, 0x14, 0x10),
        temperature_fails(0x49, NACK),
        temperature(0x48, 0x14, 0x20),
        temperature_fails(0x49, NACK),
        // 0x49 is open: from here on only 0x48 reaches the bus.
        temperature(0x48, 0x14, 0x30),
        temperature(0x48, 0x14, 0x40),
        temperature(0x48, 0x14, 0x50),
    ]);
    let bus = RefCell::new(Guarded::new(i2c, &SHARED_BUS, &TABLE_CLOCK));
    let mut inside = Tmp1x2::new(RefCellDevice::new(&bus), SlaveAddr::Alternative(false, false));
    let mut outside = Tmp1x2::new(RefCellDevice::new(&bus), SlaveAddr::Alternative(false, true));

    let mut seen = String::new();
    for round in 0..6u8 {
        let t = inside.read_temperature().expect("the neighbour keeps working");
        assert_eq!(t, 20.0 + f32::from(round) * 0.0625);
        seen.push(match outside.read_temperature() {
            Ok(_) => '.',
            Err(tmp1x2::Error::I2C(GuardedError::Inner(_))) => 'x',
            Err(tmp1x2::Error::I2C(GuardedError::Refused(_))) => '-',
            Err(e) => panic!("{e:?}"),
        });
    }
    assert_eq!(seen, ".xx---");

    let report = |name| registry::get(name).unwrap().report();
    let (ins, out, spare) = (report("i2c1/inside"), report("i2c1/outside"), report("i2c1/spare"));
    assert_eq!(
        (ins.state, ins.counters.failures, ins.would_allow),
        (State::Closed { strikes: 0 }, 0, true)
    );
    assert_eq!(out.state.phase(), Phase::Open);
    assert_eq!(
        (out.counters.failures, out.counters.skips, out.would_allow),
        (2, 3, false)
    );
    assert_eq!((spare.counters.failures, spare.counters.skips), (0, 0));
    bus.into_inner().into_inner().done();
}

#[test]
fn each_device_of_a_table_is_listed_in_the_registry_by_its_own_name() {
    for (name, address) in [("i2c1/inside", 0x48), ("i2c1/outside", 0x49), ("i2c1/spare", 0x4A)] {
        let entry = registry::get(name).unwrap();
        assert!(core::ptr::addr_eq(entry.breaker(), SHARED_BUS.get(address).unwrap()));
        assert_eq!(entry.policy(), &TABLE_POLICY);
    }
    assert!(registry::check_unique().is_ok());
}

#[test]
fn an_unlisted_address_fails_without_reaching_the_bus() {
    let i2c = Mock::new(&[]);
    let mut bus = Guarded::new(i2c, &SHARED_BUS, &TABLE_CLOCK);
    let err = bus.write(0x1D, &[0]).unwrap_err();
    assert_eq!(err, GuardedError::Unlisted { address: 0x1D });
    assert_eq!(err.kind(), ErrorKind::Other);
    assert_eq!(
        err.to_string(),
        "no circuit breaker is listed for address 0x1d: transaction not sent"
    );
    bus.into_inner().done();
}

/// A 10-bit-address bus that acknowledges everything but one address.
struct TenBit {
    reached: Vec<TenBitAddress>,
}

impl ErrorType for TenBit {
    type Error = ErrorKind;
}

impl I2c<TenBitAddress> for TenBit {
    fn transaction(&mut self, address: TenBitAddress, _: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        self.reached.push(address);
        if address == 0x3FF {
            Err(NACK)
        } else {
            Ok(())
        }
    }
}

#[test]
fn ten_bit_addresses_go_through_one_breaker() {
    static POLICY: Policy = Policy::new(1, Duration::from_secs(1));
    static BUS: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let mut bus = Guarded::new(TenBit { reached: vec![] }, &BUS, &CLOCK);
    I2c::<TenBitAddress>::write(&mut bus, 0x200, &[1]).unwrap();
    assert!(I2c::<TenBitAddress>::write(&mut bus, 0x3FF, &[1]).is_err());
    assert!(I2c::<TenBitAddress>::write(&mut bus, 0x200, &[1])
        .unwrap_err()
        .refused()
        .is_some());
    assert_eq!(bus.into_inner().reached, [0x200, 0x3FF]);
}
