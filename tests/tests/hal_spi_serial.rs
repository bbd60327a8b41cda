//! `Guarded` as a blocking `SpiDevice` and as an `embedded-io` serial port: each
//! transaction one call through the breaker, forwarded to the same method; verdicts by
//! `ErrorKind`; a refused call never reaches the peripheral.

mod hal_mock;

use breaker_core::{Clock, Duration, Guarded, GuardedError, Instant, ManualClock, Phase, Policy, SharedBreaker, State};
use embedded_hal::spi::{Error as _, ErrorKind as SpiKind, Operation, SpiDevice};
use embedded_io::{Error as _, ErrorKind as IoKind, Read, ReadExactError, ReadReady, Write, WriteReady};

#[test]
fn spi_each_method_is_one_transaction_forwarded_to_the_same_method() {
    static POLICY: Policy = Policy::new(5, Duration::from_secs(1));
    static FLASH: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let mut answers = vec![Ok(()); 5];
    answers.extend([Err(SpiKind::FrameFormat); 5]);
    let mut spi = Guarded::new(hal_mock::Spi::new(&answers), &FLASH, &CLOCK);
    let mut buf = [0; 3];

    spi.transaction(&mut [Operation::Write(&[0x9F]), Operation::Read(&mut buf)])
        .unwrap();
    assert_eq!(buf, [0xA5; 3]);
    spi.read(&mut buf).unwrap();
    spi.write(&[1, 2]).unwrap();
    spi.transfer(&mut buf, &[3]).unwrap();
    spi.transfer_in_place(&mut buf).unwrap();

    let frame = Err(GuardedError::Inner(SpiKind::FrameFormat));
    assert_eq!(spi.transaction(&mut [Operation::Write(&[0x9F])]), frame);
    assert_eq!(spi.read(&mut buf), frame);
    assert_eq!(spi.write(&[1, 2]), frame);
    assert_eq!(spi.transfer(&mut buf, &[3]), frame);
    assert_eq!(FLASH.state(CLOCK.now()), State::Closed { strikes: 4 });
    assert_eq!(spi.transfer_in_place(&mut buf), frame);
    assert_eq!(FLASH.phase(CLOCK.now()), Phase::Open);

    for refused in [
        spi.transaction(&mut [Operation::Write(&[0x9F])]),
        spi.read(&mut buf),
        spi.write(&[1, 2]),
        spi.transfer(&mut buf, &[3]),
        spi.transfer_in_place(&mut buf),
    ] {
        let err = refused.unwrap_err();
        assert!(err.refused().is_some());
        assert_eq!(err.kind(), SpiKind::Other);
    }
    assert_eq!(FLASH.counters().skips, 5);

    let script = spi.into_inner();
    script.done();
    let each = ["transaction", "read", "write", "transfer", "transfer_in_place"];
    assert_eq!(script.log, [each, each].concat());
}

#[test]
fn spi_overrun_is_neutral_mode_faults_are_strikes() {
    static POLICY: Policy = Policy::new(2, Duration::from_secs(1));
    static FLASH: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let script = [
        Err(SpiKind::ModeFault),
        Err(SpiKind::Overrun),
        Err(SpiKind::Overrun),
        Ok(()), // a success clears the strike
        Err(SpiKind::ChipSelectFault),
        Err(SpiKind::ModeFault),
    ];
    let mut spi = Guarded::new(hal_mock::Spi::new(&script), &FLASH, &CLOCK);
    let strikes = |spi: &mut Guarded<_, _, _>| {
        let _ = SpiDevice::write(spi, &[0]);
        FLASH.state(CLOCK.now())
    };
    assert_eq!(strikes(&mut spi), State::Closed { strikes: 1 });
    assert_eq!(strikes(&mut spi), State::Closed { strikes: 1 });
    assert_eq!(strikes(&mut spi), State::Closed { strikes: 1 });
    assert_eq!(strikes(&mut spi), State::Closed { strikes: 0 });
    assert_eq!(strikes(&mut spi), State::Closed { strikes: 1 });
    assert_eq!(strikes(&mut spi).phase(), Phase::Open);
    assert_eq!(FLASH.counters().failures, 3);
    spi.into_inner().done();
}

#[test]
fn serial_read_write_and_flush_are_each_one_call_through_the_breaker() {
    static POLICY: Policy = Policy::new(3, Duration::from_secs(2));
    static MODEM: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let script = [
        Ok(()),
        Ok(()),
        Ok(()),
        Err(IoKind::TimedOut),
        Err(IoKind::Interrupted), // neutral
        Err(IoKind::InvalidData),
        Err(IoKind::TimedOut), // the third strike
        // After the cooldown: the probe (a flush) works.
        Ok(()),
    ];
    let mut port = Guarded::new(hal_mock::Serial::new(&script), &MODEM, &CLOCK);
    let mut buf = [0; 4];
    assert_eq!(port.read(&mut buf), Ok(4));
    assert_eq!(buf, [0x5A; 4]);
    assert_eq!(port.write(b"AT\r\n"), Ok(4));
    port.flush().unwrap();

    assert_eq!(port.write(b"AT\r\n"), Err(GuardedError::Inner(IoKind::TimedOut)));
    assert_eq!(port.read(&mut buf), Err(GuardedError::Inner(IoKind::Interrupted)));
    assert_eq!(MODEM.state(CLOCK.now()), State::Closed { strikes: 1 });
    assert!(port.read(&mut buf).is_err());
    assert!(port.flush().is_err());
    assert_eq!(MODEM.phase(CLOCK.now()), Phase::Open);

    let refused = port.write(b"AT\r\n").unwrap_err();
    assert_eq!(refused.kind(), IoKind::Other);
    assert_eq!(refused.refused().unwrap().retry_in, Some(Duration::from_secs(2)));
    // The provided `read_exact` and `write_all` call through: a refusal ends them.
    assert!(matches!(
        port.read_exact(&mut buf),
        Err(ReadExactError::Other(GuardedError::Refused(_)))
    ));
    assert!(matches!(port.write_all(b"AT"), Err(GuardedError::Refused(_))));
    assert_eq!(MODEM.counters().skips, 3);

    CLOCK.advance(Duration::from_secs(2));
    port.flush().unwrap();
    assert_eq!(MODEM.phase(CLOCK.now()), Phase::Closed);
    let serial = port.into_inner();
    serial.script.done();
    assert_eq!(
        serial.script.log,
        ["read", "write", "flush", "write", "read", "read", "flush", "flush"]
    );
}

#[test]
fn serial_permission_denied_trips_at_once_and_the_error_chains_its_source() {
    static POLICY: Policy = Policy::new(3, Duration::from_secs(2));
    static MODEM: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let mut port = Guarded::new(hal_mock::Serial::new(&[Err(IoKind::PermissionDenied)]), &MODEM, &CLOCK);
    let err = port.write(b"x").unwrap_err();
    assert_eq!(err.kind(), IoKind::PermissionDenied);
    let source = core::error::Error::source(&err).expect("the port's error");
    assert_eq!(source.to_string(), IoKind::PermissionDenied.to_string());
    assert_eq!(MODEM.phase(CLOCK.now()), Phase::Open);
    assert_eq!(MODEM.counters().trips, 1);
    port.into_inner().script.done();
}

#[test]
fn readiness_says_a_refused_call_returns_at_once_and_never_takes_the_probe() {
    static POLICY: Policy = Policy::new(1, Duration::from_secs(1));
    static MODEM: SharedBreaker = SharedBreaker::new(&POLICY);
    static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

    let mut port = Guarded::new(hal_mock::Serial::new(&[Err(IoKind::TimedOut), Ok(())]), &MODEM, &CLOCK);
    // Closed: the port answers (nothing buffered).
    assert_eq!((port.read_ready(), port.write_ready()), (Ok(false), Ok(false)));
    assert!(port.read(&mut [0]).is_err());
    // Open: a read would be refused at once, so it is "ready"; the port is not asked.
    assert_eq!((port.read_ready(), port.write_ready()), (Ok(true), Ok(true)));
    // Cooldown over: the queries ask the pure oracle, so the probe slot is still free.
    CLOCK.advance(Duration::from_secs(1));
    assert_eq!((port.read_ready(), port.write_ready()), (Ok(false), Ok(false)));
    assert_eq!(MODEM.counters().probes, 0);
    assert_eq!(port.read(&mut [0]), Ok(1));
    assert_eq!(MODEM.counters().probes, 1);
    let serial = port.into_inner();
    serial.script.done();
    assert_eq!(
        serial.script.log,
        ["read_ready", "write_ready", "read", "read_ready", "write_ready", "read"]
    );
}
