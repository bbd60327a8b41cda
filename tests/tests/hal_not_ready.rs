//! `Guarded::retry_not_ready`: a transaction that fails "not ready yet" (an address NACK by
//! default) is tried again, shortly and a bounded number of times, inside its one breaker
//! permit. A retry that succeeds is one success; tries spent are one strike; other errors
//! are not retried; a half-open probe is retried within its permit; the waits are the given
//! `DelayNs`'s, recorded here by a mock, never the breaker's clock. With the recovery step
//! and with a `DeviceBreakers` table. Blocking and async.

mod hal_mock;

use breaker_core::hal::{NoRetry, NotReady};
use breaker_core::{
    Clock, DeviceBreakers, Duration, Guarded, GuardedError, Instant, ManualClock, Phase, Policy, SharedBreaker, State,
};
use embedded_hal::i2c::{ErrorKind, I2c, NoAcknowledgeSource};
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use hal_mock::block_on;

const NACK: ErrorKind = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
const NACK_DATA: ErrorKind = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data);

/// Three tries in all, 2 ms apart.
const BUSY: NotReady = NotReady::new(3, Duration::from_millis(2));
/// 2 ms, as the `DelayNs` is asked for it.
const TWO_MS_IN_NS: u32 = 2_000_000;

/// A `DelayNs`, blocking and async, that waits for nothing and records each wait asked of
/// it, in nanoseconds.
#[derive(Debug, Default)]
struct Waits {
    ns: Vec<u32>,
}

impl embedded_hal::delay::DelayNs for Waits {
    fn delay_ns(&mut self, ns: u32) {
        self.ns.push(ns);
    }
}

impl embedded_hal_async::delay::DelayNs for Waits {
    async fn delay_ns(&mut self, ns: u32) {
        self.ns.push(ns);
    }
}

/// A read of the sensor's register 0x00, answered (two bytes) or failed with `error`.
fn read(address: u8, error: Option<ErrorKind>) -> Transaction {
    let t = Transaction::write_read(address, vec![0x00], vec![0x19, 0x10]);
    match error {
        Some(kind) => t.with_error(kind),
        None => t,
    }
}

static POLICY: Policy = Policy::new(2, Duration::from_secs(5));
static PATIENT: Policy = Policy::new(5, Duration::from_secs(5));
static THREE: Policy = Policy::new(3, Duration::from_secs(5));

#[test]
fn a_sensor_that_nacks_twice_then_answers_is_one_success_after_exactly_two_waits() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let i2c = Mock::new(&[read(0x48, Some(NACK)), read(0x48, Some(NACK)), read(0x48, None)]);
    let mut bus = Guarded::new(i2c, &breaker, &clock).retry_not_ready(BUSY, Waits::default());
    let mut buf = [0; 2];
    bus.write_read(0x48, &[0x00], &mut buf).unwrap();
    assert_eq!(buf, [0x19, 0x10]);
    assert_eq!(bus.not_ready().delay().ns, [TWO_MS_IN_NS, TWO_MS_IN_NS]);
    assert_eq!((bus.not_ready().tries(), bus.not_ready().retries()), (3, 2));
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 0 });
    assert_eq!(breaker.counters().failures, 0);
    assert_eq!(clock.now(), Instant::ZERO, "the breaker's clock is not what waits");
    bus.into_inner().done();
}

#[test]
fn a_sensor_that_keeps_nacking_is_exactly_one_strike_after_the_tries() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let i2c = Mock::new(&[read(0x48, Some(NACK)), read(0x48, Some(NACK)), read(0x48, Some(NACK))]);
    let mut bus = Guarded::new(i2c, &breaker, &clock).retry_not_ready(BUSY, Waits::default());
    let mut buf = [0; 2];
    assert_eq!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Inner(NACK)));
    assert_eq!(bus.not_ready().tries(), 3);
    assert_eq!(bus.not_ready().delay().ns, [TWO_MS_IN_NS, TWO_MS_IN_NS]);
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 1 });
    assert_eq!(breaker.counters().failures, 1);
    bus.into_inner().done();
}

#[test]
fn a_data_nack_or_a_bus_error_is_not_retried() {
    let breaker = SharedBreaker::new(&PATIENT);
    let clock = ManualClock::new(Instant::ZERO);
    let i2c = Mock::new(&[
        read(0x48, Some(NACK_DATA)),
        read(0x48, Some(ErrorKind::Bus)),
        read(0x48, Some(ErrorKind::ArbitrationLoss)),
    ]);
    let mut bus = Guarded::new(i2c, &breaker, &clock).retry_not_ready(BUSY, Waits::default());
    let mut buf = [0; 2];
    for kind in [NACK_DATA, ErrorKind::Bus, ErrorKind::ArbitrationLoss] {
        assert_eq!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Inner(kind)));
        assert_eq!(bus.not_ready().tries(), 1, "{kind:?}");
    }
    assert!(bus.not_ready().delay().ns.is_empty(), "no wait");
    assert_eq!(bus.not_ready().retries(), 0);
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 3 });
    bus.into_inner().done();
}

#[test]
fn a_predicate_of_ones_own_retries_the_kinds_it_names() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    // An EEPROM in its write cycle may NACK the data too; 500 µs apart.
    let any_nack = |e: &ErrorKind| matches!(e, ErrorKind::NoAcknowledge(_));
    let policy = NotReady::new(4, Duration::ZERO).with_delay_us(500).when(any_nack);
    let i2c = Mock::new(&[
        Transaction::write(0x50, vec![0x00, 0x2A]).with_error(NACK_DATA),
        Transaction::write(0x50, vec![0x00, 0x2A]).with_error(NACK),
        Transaction::write(0x50, vec![0x00, 0x2A]),
        Transaction::write(0x50, vec![0x00, 0x2A]).with_error(ErrorKind::Bus),
    ]);
    let mut bus = Guarded::new(i2c, &breaker, &clock).retry_not_ready(policy, Waits::default());
    bus.write(0x50, &[0x00, 0x2A]).unwrap();
    assert_eq!(bus.not_ready().tries(), 3);
    assert_eq!(bus.write(0x50, &[0x00, 0x2A]), Err(GuardedError::Inner(ErrorKind::Bus)));
    assert_eq!(bus.not_ready().tries(), 1, "a bus error is not a NACK");
    assert_eq!(bus.not_ready().delay().ns, [500_000, 500_000]);
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 1 });
    bus.into_inner().done();
}

#[test]
fn the_breaker_trips_after_trip_transactions_not_trip_times_the_tries() {
    let breaker = SharedBreaker::new(&POLICY); // trip = 2
    let clock = ManualClock::new(Instant::ZERO);
    let i2c = Mock::new(&[
        read(0x48, Some(NACK)),
        read(0x48, Some(NACK)),
        read(0x48, Some(NACK)),
        read(0x48, Some(NACK)),
        read(0x48, Some(NACK)),
        read(0x48, Some(NACK)),
        // Open: the next read is refused without reaching the bus.
    ]);
    let mut bus = Guarded::new(i2c, &breaker, &clock).retry_not_ready(BUSY, Waits::default());
    let mut buf = [0; 2];
    assert_eq!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Inner(NACK)));
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 1 });
    assert_eq!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Inner(NACK)));
    assert_eq!(breaker.phase(clock.now()), Phase::Open);
    assert!(bus.write_read(0x48, &[0x00], &mut buf).unwrap_err().refused().is_some());
    let c = breaker.counters();
    assert_eq!((c.failures, c.trips, c.skips), (2, 1, 1));
    assert_eq!(bus.not_ready().delay().ns.len(), 4);
    assert_eq!(bus.not_ready().retries(), 4);
    bus.into_inner().done();
}

#[test]
fn a_half_open_probe_retried_to_success_closes_the_breaker() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let mut script = vec![read(0x48, Some(NACK)); 6];
    // After the cooldown, the probe: busy twice, then it answers.
    script.extend([read(0x48, Some(NACK)), read(0x48, Some(NACK)), read(0x48, None)]);
    let mut bus = Guarded::new(Mock::new(&script), &breaker, &clock).retry_not_ready(BUSY, Waits::default());
    let mut buf = [0; 2];
    for _ in 0..2 {
        assert!(bus.write_read(0x48, &[0x00], &mut buf).is_err());
    }
    assert_eq!(breaker.phase(clock.now()), Phase::Open);
    clock.advance(Duration::from_secs(5));
    bus.write_read(0x48, &[0x00], &mut buf).unwrap();
    assert_eq!(bus.not_ready().tries(), 3, "the probe was retried within its permit");
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 0 });
    let c = breaker.counters();
    assert_eq!((c.failures, c.trips, c.probes), (2, 1, 1));
    assert_eq!(bus.not_ready().delay().ns.len(), 6);
    bus.into_inner().done();
}

#[test]
fn the_recovery_step_runs_once_after_the_tries_of_the_failure_that_trips() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let mut script = vec![read(0x48, Some(NACK)), read(0x48, None)]; // busy once: no step
    script.extend(vec![read(0x48, Some(NACK)); 6]); // two failures of three tries: a trip
    script.extend([read(0x48, Some(NACK)), read(0x48, None)]); // the probe, after its step
    let recoveries = std::cell::Cell::new(0);
    let mut bus = Guarded::new(Mock::new(&script), &breaker, &clock)
        .recover_with(|_: &mut Mock| {
            recoveries.set(recoveries.get() + 1);
            true
        })
        .retry_not_ready(BUSY, Waits::default());
    let mut buf = [0; 2];
    bus.write_read(0x48, &[0x00], &mut buf).unwrap();
    assert_eq!(recoveries.get(), 0, "a retry that succeeds runs no step");
    assert!(bus.write_read(0x48, &[0x00], &mut buf).is_err());
    assert_eq!(recoveries.get(), 0, "a failure that does not trip runs no step");
    assert!(bus.write_read(0x48, &[0x00], &mut buf).is_err());
    assert_eq!(
        (recoveries.get(), bus.not_ready().tries()),
        (1, 3),
        "the step ran once, after the third try"
    );
    clock.advance(Duration::from_secs(5));
    bus.write_read(0x48, &[0x00], &mut buf).unwrap();
    assert_eq!(
        (recoveries.get(), bus.not_ready().tries()),
        (2, 2),
        "one step before the probe's two tries"
    );
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 0 });
    assert_eq!(bus.not_ready().retries(), 1 + 2 + 2 + 1);
    bus.into_inner().done();
}

#[test]
fn with_a_table_one_busy_device_does_not_affect_its_neighbour() {
    let table = DeviceBreakers::new([0x48, 0x76], [const { SharedBreaker::new(&POLICY) }; 2]);
    let clock = ManualClock::new(Instant::ZERO);
    let i2c = Mock::new(&[
        read(0x76, Some(NACK)),
        read(0x76, Some(NACK)),
        read(0x76, Some(NACK)),
        read(0x48, None),
        read(0x76, Some(NACK)),
        read(0x76, Some(NACK)),
        read(0x76, Some(NACK)),
        read(0x48, None),
        // 0x76 is open and refused; 0x48 still reaches the bus.
        read(0x48, None),
    ]);
    let mut bus = Guarded::new(i2c, &table, &clock).retry_not_ready(BUSY, Waits::default());
    let mut buf = [0; 2];
    for _ in 0..2 {
        assert_eq!(bus.write_read(0x76, &[0x00], &mut buf), Err(GuardedError::Inner(NACK)));
        bus.write_read(0x48, &[0x00], &mut buf).unwrap();
        assert_eq!(bus.not_ready().tries(), 1, "0x48 answers at once");
    }
    assert!(bus.write_read(0x76, &[0x00], &mut buf).unwrap_err().refused().is_some());
    bus.write_read(0x48, &[0x00], &mut buf).unwrap();
    let (inside, outside) = (table.get(0x48).unwrap(), table.get(0x76).unwrap());
    assert_eq!(inside.state(clock.now()), State::Closed { strikes: 0 });
    assert_eq!(outside.phase(clock.now()), Phase::Open);
    assert_eq!((outside.counters().failures, outside.counters().trips), (2, 1));
    assert_eq!(bus.not_ready().delay().ns.len(), 4);
    bus.into_inner().done();
}

#[test]
fn without_a_policy_nothing_is_retried() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let mut bus = Guarded::new(Mock::new(&[read(0x48, Some(NACK))]), &breaker, &clock);
    let _: &NoRetry = bus.not_ready();
    let mut buf = [0; 2];
    assert_eq!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Inner(NACK)));
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 1 });
    bus.into_inner().done();
}

#[test]
fn a_policy_needs_at_least_one_try() {
    assert!(NotReady::try_new(0, Duration::from_millis(2)).is_none());
    let once = NotReady::try_new(1, Duration::from_millis(2)).unwrap();
    assert_eq!((once.tries(), once.delay_us()), (1, 2_000));
    assert_eq!(BUSY.with_delay_us(250).delay_us(), 250);
}

#[test]
fn an_spi_device_or_a_serial_port_retries_what_its_predicate_names() {
    use embedded_hal::spi::{ErrorKind as SpiKind, SpiDevice};
    use embedded_io::{ErrorKind as IoKind, Write};

    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    // A device that cannot take its select line yet; nothing else is retried.
    let busy = NotReady::new(3, Duration::from_millis(1)).when(|e: &SpiKind| *e == SpiKind::ChipSelectFault);
    let spi = hal_mock::Spi::new(&[Err(SpiKind::ChipSelectFault), Ok(()), Err(SpiKind::ModeFault)]);
    let mut spi = Guarded::new(spi, &breaker, &clock).retry_not_ready(busy, Waits::default());
    spi.write(&[0x9F]).unwrap();
    assert_eq!(spi.not_ready().tries(), 2);
    assert_eq!(spi.write(&[0x9F]), Err(GuardedError::Inner(SpiKind::ModeFault)));
    assert_eq!(spi.not_ready().tries(), 1);
    assert_eq!(spi.not_ready().delay().ns, [1_000_000]);
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 1 });
    assert_eq!(spi.inner().log, ["write", "write", "write"]);
    spi.inner().done();

    let breaker = SharedBreaker::new(&POLICY);
    let timed_out = NotReady::new(2, Duration::from_millis(1)).when(|e: &IoKind| *e == IoKind::TimedOut);
    let port = hal_mock::Serial::new(&[Err(IoKind::TimedOut), Err(IoKind::TimedOut)]);
    let mut port = Guarded::new(port, &breaker, &clock).retry_not_ready(timed_out, Waits::default());
    assert_eq!(port.write(b"AT\r"), Err(GuardedError::Inner(IoKind::TimedOut)));
    assert_eq!((port.not_ready().tries(), port.not_ready().delay().ns.len()), (2, 1));
    assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 1 });
    port.inner().script.done();
}

mod asynchronous {
    use embedded_hal_async::i2c::I2c;

    use super::*;

    #[test]
    fn a_sensor_that_nacks_twice_then_answers_is_one_success_after_exactly_two_waits() {
        let breaker = SharedBreaker::new(&POLICY);
        let clock = ManualClock::new(Instant::ZERO);
        let i2c = Mock::new(&[read(0x48, Some(NACK)), read(0x48, Some(NACK)), read(0x48, None)]);
        let mut bus = Guarded::new(i2c, &breaker, &clock).retry_not_ready(BUSY, Waits::default());
        let mut buf = [0; 2];
        block_on(bus.write_read(0x48, &[0x00], &mut buf)).unwrap();
        assert_eq!(buf, [0x19, 0x10]);
        assert_eq!(bus.not_ready().delay().ns, [TWO_MS_IN_NS, TWO_MS_IN_NS]);
        assert_eq!(bus.not_ready().tries(), 3);
        assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 0 });
        bus.into_inner().done();
    }

    #[test]
    fn a_sensor_that_keeps_nacking_is_one_strike_and_other_errors_are_not_retried() {
        let breaker = SharedBreaker::new(&THREE);
        let clock = ManualClock::new(Instant::ZERO);
        let mut script = vec![read(0x48, Some(NACK)); 3];
        script.extend([read(0x48, Some(NACK_DATA)), read(0x48, Some(ErrorKind::Bus))]);
        let mut bus = Guarded::new(Mock::new(&script), &breaker, &clock).retry_not_ready(BUSY, Waits::default());
        let mut buf = [0; 2];
        assert_eq!(
            block_on(bus.write_read(0x48, &[0x00], &mut buf)),
            Err(GuardedError::Inner(NACK))
        );
        assert_eq!(bus.not_ready().tries(), 3);
        assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 1 });
        for kind in [NACK_DATA, ErrorKind::Bus] {
            assert_eq!(
                block_on(bus.write_read(0x48, &[0x00], &mut buf)),
                Err(GuardedError::Inner(kind))
            );
            assert_eq!(bus.not_ready().tries(), 1);
        }
        // Three strikes: open, with two waits in all.
        assert_eq!(breaker.phase(clock.now()), Phase::Open);
        assert_eq!(breaker.counters().failures, 3);
        assert_eq!(bus.not_ready().delay().ns, [TWO_MS_IN_NS, TWO_MS_IN_NS]);
        bus.into_inner().done();
    }

    #[test]
    fn the_breaker_trips_after_trip_transactions_and_a_probe_retried_to_success_closes_it() {
        let breaker = SharedBreaker::new(&POLICY);
        let clock = ManualClock::new(Instant::ZERO);
        let mut script = vec![read(0x48, Some(NACK)); 6];
        script.extend([read(0x48, Some(NACK)), read(0x48, Some(NACK)), read(0x48, None)]);
        let mut bus = Guarded::new(Mock::new(&script), &breaker, &clock).retry_not_ready(BUSY, Waits::default());
        let mut buf = [0; 2];
        block_on(async {
            for _ in 0..2 {
                assert!(bus.write_read(0x48, &[0x00], &mut buf).await.is_err());
            }
            assert_eq!(breaker.phase(clock.now()), Phase::Open);
            assert!(bus
                .write_read(0x48, &[0x00], &mut buf)
                .await
                .unwrap_err()
                .refused()
                .is_some());
            clock.advance(Duration::from_secs(5));
            bus.write_read(0x48, &[0x00], &mut buf).await.unwrap();
        });
        assert_eq!(bus.not_ready().tries(), 3, "the probe was retried within its permit");
        assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 0 });
        let c = breaker.counters();
        assert_eq!((c.failures, c.trips, c.skips, c.probes), (2, 1, 1, 1));
        assert_eq!(bus.not_ready().delay().ns.len(), 6);
        bus.into_inner().done();
    }

    /// An async recovery step (a reset pin held low for a while).
    struct Reset<'a>(&'a std::cell::Cell<u32>);

    impl breaker_core::hal::AsyncRecover<Mock> for Reset<'_> {
        async fn recover(&mut self, _: &mut Mock) -> bool {
            self.0.set(self.0.get() + 1);
            true
        }
    }

    #[test]
    fn an_async_recovery_step_runs_after_the_tries_of_the_trip_and_once_before_the_probe() {
        let breaker = SharedBreaker::new(&POLICY);
        let clock = ManualClock::new(Instant::ZERO);
        let mut script = vec![read(0x48, Some(NACK)); 6];
        script.extend([read(0x48, Some(NACK)), read(0x48, None)]);
        let resets = std::cell::Cell::new(0);
        let mut bus = Guarded::new(Mock::new(&script), &breaker, &clock)
            .recover_with(Reset(&resets))
            .retry_not_ready(BUSY, Waits::default());
        let mut buf = [0; 2];
        block_on(async {
            assert!(bus.write_read(0x48, &[0x00], &mut buf).await.is_err());
            assert_eq!(resets.get(), 0);
            assert!(bus.write_read(0x48, &[0x00], &mut buf).await.is_err());
            assert_eq!(resets.get(), 1, "the trip ran the step once, after the tries");
            clock.advance(Duration::from_secs(5));
            bus.write_read(0x48, &[0x00], &mut buf).await.unwrap();
        });
        assert_eq!((resets.get(), bus.not_ready().tries()), (2, 2));
        assert_eq!(breaker.state(clock.now()), State::Closed { strikes: 0 });
        bus.into_inner().done();
    }

    #[test]
    fn with_a_table_one_busy_device_does_not_affect_its_neighbour() {
        let table = DeviceBreakers::new([0x48, 0x76], [const { SharedBreaker::new(&POLICY) }; 2]);
        let clock = ManualClock::new(Instant::ZERO);
        let mut script = Vec::new();
        for _ in 0..2 {
            script.extend(vec![read(0x76, Some(NACK)); 3]);
            script.push(read(0x48, None));
        }
        script.push(read(0x48, None));
        let mut bus = Guarded::new(Mock::new(&script), &table, &clock).retry_not_ready(BUSY, Waits::default());
        let mut buf = [0; 2];
        block_on(async {
            for _ in 0..2 {
                assert!(bus.write_read(0x76, &[0x00], &mut buf).await.is_err());
                bus.write_read(0x48, &[0x00], &mut buf).await.unwrap();
            }
            assert!(bus
                .write_read(0x76, &[0x00], &mut buf)
                .await
                .unwrap_err()
                .refused()
                .is_some());
            bus.write_read(0x48, &[0x00], &mut buf).await.unwrap();
        });
        assert_eq!(
            table.get(0x48).unwrap().state(clock.now()),
            State::Closed { strikes: 0 }
        );
        assert_eq!(table.get(0x76).unwrap().phase(clock.now()), Phase::Open);
        assert_eq!(bus.not_ready().delay().ns.len(), 4);
        bus.into_inner().done();
    }
}
