//! `Guarded` as the async twins (`embedded-hal-async` `I2c` and `SpiDevice`,
//! `embedded-io-async` `Read` and `Write`): each transaction one call through the
//! breaker; a refused transaction's future is never even made; a probe whose future is
//! dropped mid-transaction counts as failed, so the breaker re-opens instead of wedging.

mod hal_mock;

use core::future::Future;
use core::task::Poll;

use breaker_core::{
    Clock, DeviceBreakers, Duration, Guarded, GuardedError, Instant, ManualClock, Phase, Policy, Reason, SharedBreaker,
    State,
};
use embedded_hal::i2c::{ErrorKind, ErrorType, NoAcknowledgeSource, Operation};
use embedded_hal_async::i2c::I2c;
use embedded_hal_async::spi::SpiDevice;
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use embedded_io::ErrorKind as IoKind;
use embedded_io_async::{Read, Write};
use hal_mock::{block_on, poll_once};

const NACK: ErrorKind = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);

#[test]
fn async_i2c_nacks_trip_and_a_refused_transaction_never_reaches_the_bus() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(1));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let i2c = Mock::new(&[
        Transaction::read(0x48, vec![1, 2]),
        Transaction::write(0x48, vec![1]).with_error(NACK),
        Transaction::write_read(0x48, vec![0], vec![0]).with_error(NACK),
        // Open: the next three are refused. After the cooldown, the probe.
        Transaction::write_read(0x48, vec![0], vec![0x42]),
    ]);
    let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK);
    block_on(async {
        let (mut two, mut one) = ([0; 2], [0; 1]);
        bus.read(0x48, &mut two).await.unwrap();
        assert_eq!(two, [1, 2]);
        assert_eq!(bus.write(0x48, &[1]).await, Err(GuardedError::Inner(NACK)));
        assert_eq!(
            bus.write_read(0x48, &[0], &mut one).await,
            Err(GuardedError::Inner(NACK))
        );
        assert!(bus.read(0x48, &mut two).await.unwrap_err().refused().is_some());
        assert!(bus.write(0x48, &[1]).await.unwrap_err().refused().is_some());
        let ops = &mut [Operation::Write(&[0])];
        assert!(bus.transaction(0x48, ops).await.unwrap_err().refused().is_some());
        CLOCK.advance(Duration::from_secs(1));
        bus.write_read(0x48, &[0], &mut one).await.unwrap();
        assert_eq!(one, [0x42]);
    });
    assert_eq!(SENSOR.phase(CLOCK.now()), Phase::Closed);
    let c = SENSOR.counters();
    assert_eq!((c.failures, c.skips, c.trips, c.probes), (2, 3, 1, 1));
    bus.into_inner().done();
}

#[test]
fn async_i2c_table_refuses_the_dead_address_and_serves_its_neighbour() {
    static POLICY: Policy = Policy::new(1, Duration::from_secs(1));
    static BUS: DeviceBreakers<2> = DeviceBreakers::new([0x48, 0x76], [const { SharedBreaker::new(&POLICY) }; 2]);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let i2c = Mock::new(&[
        Transaction::write(0x76, vec![0xF4]).with_error(NACK),
        Transaction::write(0x48, vec![0x01]),
        Transaction::write(0x48, vec![0x01]),
    ]);
    let mut bus = Guarded::new(i2c, &BUS, &CLOCK);
    block_on(async {
        assert!(bus.write(0x76, &[0xF4]).await.is_err());
        bus.write(0x48, &[0x01]).await.unwrap();
        assert!(bus.write(0x76, &[0xF4]).await.unwrap_err().refused().is_some());
        bus.write(0x48, &[0x01]).await.unwrap();
        assert_eq!(
            bus.write(0x10, &[0]).await,
            Err(GuardedError::Unlisted { address: 0x10 })
        );
    });
    assert_eq!(BUS.get(0x76).unwrap().phase(CLOCK.now()), Phase::Open);
    assert_eq!(BUS.get(0x48).unwrap().phase(CLOCK.now()), Phase::Closed);
    bus.into_inner().done();
}

/// An async I2C bus whose transaction futures never finish (a sensor stretching the
/// clock for ever). It counts the futures it makes, eagerly, when each is made: a HAL may
/// start a transfer right there.
struct Hung {
    futures_made: u32,
}

impl ErrorType for Hung {
    type Error = ErrorKind;
}

impl I2c for Hung {
    #[allow(clippy::manual_async_fn)] // the count must happen when the future is made
    fn transaction(&mut self, _: u8, _: &mut [Operation<'_>]) -> impl Future<Output = Result<(), ErrorKind>> {
        self.futures_made += 1;
        core::future::pending()
    }
}

#[test]
fn a_dropped_probe_counts_as_failed_and_a_refused_transaction_makes_no_future() {
    static POLICY: Policy = Policy::new(1, Duration::from_secs(1)).with_backoff(2, Duration::from_secs(8));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let mut bus = Guarded::new(Hung { futures_made: 0 }, &SENSOR, &CLOCK);
    SENSOR.trip(Reason::Predicted, CLOCK.now());
    // Open: refused before the bus's future is made.
    assert!(matches!(
        poll_once(bus.write(0x48, &[1])),
        Poll::Ready(Err(GuardedError::Refused(_)))
    ));
    assert_eq!(bus.inner().futures_made, 0);

    // The cooldown is over: this call is the probe. It hangs; the caller gives up and
    // drops the future (as `with_timeout` does).
    CLOCK.advance(Duration::from_secs(1));
    assert!(poll_once(bus.write(0x48, &[1])).is_pending());
    assert_eq!(bus.inner().futures_made, 1);
    // Not wedged in half-open: the dropped probe re-opened it, with the cooldown doubled.
    assert_eq!(
        SENSOR.state(CLOCK.now()),
        State::Open {
            remaining: Duration::from_secs(2),
            forced: false
        }
    );
    let c = SENSOR.counters();
    assert_eq!((c.probes, c.failures, c.trips, c.lease_expiries), (1, 1, 2, 0));
}

#[test]
fn async_spi_each_method_is_one_transaction() {
    static POLICY: Policy = Policy::new(5, Duration::from_secs(1));
    static FLASH: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    use embedded_hal::spi::ErrorKind as SpiKind;
    let mut answers = vec![Ok(()); 5];
    answers.extend([Err(SpiKind::ModeFault); 5]);
    let mut spi = Guarded::new(hal_mock::Spi::new(&answers), &FLASH, &CLOCK);
    block_on(async {
        let mut buf = [0; 2];
        for round in 0..2 {
            let results = [
                spi.transaction(&mut [embedded_hal::spi::Operation::Read(&mut buf)])
                    .await,
                spi.read(&mut buf).await,
                spi.write(&[1]).await,
                spi.transfer(&mut buf, &[2]).await,
                spi.transfer_in_place(&mut buf).await,
            ];
            let expected = if round == 0 {
                Ok(())
            } else {
                Err(GuardedError::Inner(SpiKind::ModeFault))
            };
            assert!(results.iter().all(|r| *r == expected), "round {round}: {results:?}");
        }
        assert!(spi.write(&[1]).await.unwrap_err().refused().is_some());
    });
    assert_eq!(FLASH.phase(CLOCK.now()), Phase::Open);
    let script = spi.into_inner();
    script.done();
    let each = ["transaction", "read", "write", "transfer", "transfer_in_place"];
    assert_eq!(script.log, [each, each].concat());
}

#[test]
fn async_serial_timeouts_trip_and_the_refusal_ends_write_all() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(1));
    static MODEM: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let script = [Ok(()), Ok(()), Err(IoKind::TimedOut), Err(IoKind::TimedOut), Ok(())];
    let mut port = Guarded::new(hal_mock::Serial::new(&script), &MODEM, &CLOCK);
    block_on(async {
        let mut buf = [0; 3];
        assert_eq!(port.read(&mut buf).await, Ok(3));
        assert_eq!(port.write(b"AT").await, Ok(2));
        assert_eq!(port.flush().await, Err(GuardedError::Inner(IoKind::TimedOut)));
        assert_eq!(port.read(&mut buf).await, Err(GuardedError::Inner(IoKind::TimedOut)));
        assert!(matches!(port.write_all(b"AT").await, Err(GuardedError::Refused(_))));
        CLOCK.advance(Duration::from_secs(1));
        assert_eq!(port.write(b"AT").await, Ok(2));
    });
    assert_eq!(MODEM.phase(CLOCK.now()), Phase::Closed);
    let serial = port.into_inner();
    serial.script.done();
    assert_eq!(serial.script.log, ["read", "write", "flush", "read", "write"]);
}

/// The user's classifier decides an async transaction's verdict, as it does a blocking
/// one's (`hal_i2c.rs`'s `a_classifier_replaces_the_kind_table`): here a classifier that
/// inverts the default table for each family, so that a verdict taken from anywhere but
/// the classifier shows in the counters.
#[test]
fn an_async_transaction_takes_its_verdict_from_the_users_classifier() {
    use breaker_core::{ByErrorKind, Verdict};
    use embedded_hal::spi::ErrorKind as SpiKind;

    // I2C: a data NACK (a strike by default) is neutral, an overrun (neutral by default)
    // trips at once.
    static POLICY: Policy = Policy::new(3, Duration::from_secs(1));
    static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    let inverted = |e: &ErrorKind| match e {
        ErrorKind::NoAcknowledge(_) => Verdict::Neutral,
        ErrorKind::Overrun => Verdict::Trip,
        other => ByErrorKind::i2c(*other),
    };
    let i2c = Mock::new(&[
        Transaction::write(0x48, vec![1]).with_error(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data)),
        Transaction::write(0x48, vec![1]).with_error(NACK),
        Transaction::write(0x48, vec![1]).with_error(ErrorKind::Overrun),
    ]);
    let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK).classify_with(inverted);
    block_on(async {
        for _ in 0..2 {
            assert!(bus.write(0x48, &[1]).await.unwrap_err().inner().is_some());
            assert_eq!(SENSOR.state(CLOCK.now()), State::Closed { strikes: 0 });
        }
        assert_eq!(
            bus.write(0x48, &[1]).await,
            Err(GuardedError::Inner(ErrorKind::Overrun))
        );
    });
    assert_eq!(SENSOR.phase(CLOCK.now()), Phase::Open);
    // (A shared breaker counts neither calls nor neutral outcomes.)
    let c = SENSOR.counters();
    assert_eq!((c.failures, c.trips), (1, 1));
    bus.into_inner().done();

    // SPI: a mode fault holds the breaker open for a minute, past its 1 s cooldown.
    static FLASH: SharedBreaker = SharedBreaker::new(&POLICY);
    let hold = |e: &SpiKind| match e {
        SpiKind::ModeFault => Verdict::TripFor(Duration::from_secs(60)),
        other => ByErrorKind::spi(*other),
    };
    let mut spi = Guarded::new(hal_mock::Spi::new(&[Err(SpiKind::ModeFault)]), &FLASH, &CLOCK).classify_with(hold);
    block_on(async {
        assert_eq!(spi.write(&[1]).await, Err(GuardedError::Inner(SpiKind::ModeFault)));
    });
    assert_eq!(
        FLASH.state(CLOCK.now()),
        State::Open {
            remaining: Duration::from_secs(60),
            forced: false
        }
    );
    spi.into_inner().done();

    // Serial: a timeout (a strike by default) is neutral, so four of them leave the
    // modem closed; permission denied (a trip by default) is a strike.
    static MODEM: SharedBreaker = SharedBreaker::new(&POLICY);
    let lenient = |e: &IoKind| match e {
        IoKind::TimedOut => Verdict::Neutral,
        IoKind::PermissionDenied => Verdict::Strike,
        other => ByErrorKind::io(*other),
    };
    let script = [
        Err(IoKind::TimedOut),
        Err(IoKind::TimedOut),
        Err(IoKind::TimedOut),
        Err(IoKind::TimedOut),
        Err(IoKind::PermissionDenied),
    ];
    let mut port = Guarded::new(hal_mock::Serial::new(&script), &MODEM, &CLOCK).classify_with(lenient);
    block_on(async {
        let mut buf = [0; 3];
        assert_eq!(port.read(&mut buf).await, Err(GuardedError::Inner(IoKind::TimedOut)));
        assert_eq!(port.write(b"AT").await, Err(GuardedError::Inner(IoKind::TimedOut)));
        assert_eq!(port.flush().await, Err(GuardedError::Inner(IoKind::TimedOut)));
        assert_eq!(port.read(&mut buf).await, Err(GuardedError::Inner(IoKind::TimedOut)));
        assert_eq!(
            port.write(b"AT").await,
            Err(GuardedError::Inner(IoKind::PermissionDenied))
        );
    });
    assert_eq!(MODEM.state(CLOCK.now()), State::Closed { strikes: 1 });
    let c = MODEM.counters();
    assert_eq!((c.failures, c.trips), (1, 0));
    port.into_inner().script.done();
}
