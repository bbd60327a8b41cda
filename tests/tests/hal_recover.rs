//! `Guarded::recover_with`: a recovery step runs once per trip and once before each
//! half-open probe (never for a call that succeeds or fails without tripping), a recovered
//! peripheral answers the probe, and a step that finds it still wedged fails the probe
//! without reaching the bus. Blocking and async; an async probe whose future is dropped
//! re-opens the breaker, and that re-opening runs the step too (a blocking step at the
//! drop, an async one at the start of the next transaction).

use std::cell::Cell;

use breaker_core::hal::{AsyncRecover, Guarded, GuardedError};
use breaker_core::{Clock, Duration, Instant, ManualClock, Phase, Policy, SharedBreaker};
use embedded_hal::i2c::{ErrorKind, ErrorType, I2c, NoAcknowledgeSource, Operation};
use std::future::Future;

/// A bus that wedges: once `wedged`, every transaction fails until `reset`.
#[derive(Default)]
struct WedgingBus {
    wedged: bool,
    /// Transactions that reached the bus.
    reached: u32,
    /// Resets done.
    resets: u32,
    /// Async transactions that reach the bus never finish (a transfer the bus never
    /// completes: only a timeout, which drops the future, ends them).
    hang: bool,
}

impl WedgingBus {
    fn reset(&mut self) {
        self.wedged = false;
        self.resets += 1;
    }
}

impl ErrorType for WedgingBus {
    type Error = ErrorKind;
}

impl I2c for WedgingBus {
    fn transaction(&mut self, _: u8, _: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        self.reached += 1;
        if self.wedged {
            Err(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address))
        } else {
            Ok(())
        }
    }
}

impl embedded_hal_async::i2c::I2c for WedgingBus {
    async fn transaction(&mut self, address: u8, operations: &mut [Operation<'_>]) -> Result<(), ErrorKind> {
        if self.hang {
            self.reached += 1;
            core::future::pending::<()>().await;
        }
        I2c::transaction(self, address, operations)
    }
}

static POLICY: Policy = Policy::new(2, Duration::from_secs(5));

#[test]
fn the_recovery_step_runs_once_per_trip_and_once_before_each_probe() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let mut bus = Guarded::new(WedgingBus::default(), &breaker, &clock).recover_with(|bus: &mut WedgingBus| {
        bus.reset();
        true
    });
    bus.write(0x48, &[0]).unwrap();
    bus.inner_mut().wedged = true;
    assert!(matches!(bus.write(0x48, &[0]), Err(GuardedError::Inner(_))));
    assert_eq!(bus.inner().resets, 0, "a failure that does not trip runs no step");
    assert!(matches!(bus.write(0x48, &[0]), Err(GuardedError::Inner(_))));
    assert_eq!(breaker.phase(clock.now()), Phase::Open);
    assert_eq!(bus.inner().resets, 1, "the trip ran the step once");
    // The bus wedges again while open: the probe's step resets it.
    bus.inner_mut().wedged = true;
    assert!(matches!(bus.write(0x48, &[0]), Err(GuardedError::Refused(_))));
    assert_eq!(bus.inner().resets, 1, "refused calls never run the step");
    clock.advance(Duration::from_secs(5));
    bus.write(0x48, &[0]).unwrap(); // the probe, after the reset
    assert_eq!((bus.inner().resets, bus.inner().reached), (2, 4));
    assert_eq!(breaker.phase(clock.now()), Phase::Closed);
    bus.write(0x48, &[0]).unwrap();
    assert_eq!(bus.inner().resets, 2, "closed again: no step");
}

#[test]
fn a_peripheral_still_wedged_fails_the_probe_without_reaching_the_bus() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let tries = Cell::new(0);
    let mut bus = Guarded::new(WedgingBus::default(), &breaker, &clock).recover_with(|_: &mut WedgingBus| {
        tries.set(tries.get() + 1);
        false
    });
    bus.inner_mut().wedged = true;
    for _ in 0..2 {
        let _ = bus.write(0x48, &[0]);
    }
    assert_eq!(tries.get(), 1, "the trip ran the step");
    clock.advance(Duration::from_secs(5));
    assert_eq!(bus.write(0x48, &[0]), Err(GuardedError::Unrecovered));
    assert_eq!(
        (tries.get(), bus.inner().reached),
        (2, 2),
        "the probe's step ran (and not again for its re-opening); the probe never reached the bus"
    );
    let c = breaker.counters();
    assert_eq!(
        (breaker.phase(clock.now()), c.trips, c.probes),
        (Phase::Open, 2, 1),
        "the probe failed: re-opened"
    );
    assert_eq!(
        GuardedError::<ErrorKind>::Unrecovered.to_string(),
        "peripheral still wedged after its recovery step: probe failed"
    );
}

/// An async step: a reset that awaits (here: nothing to await, the shape is what counts).
struct AsyncReset;

impl AsyncRecover<WedgingBus> for AsyncReset {
    async fn recover(&mut self, bus: &mut WedgingBus) -> bool {
        bus.reset();
        true
    }
}

#[test]
fn an_async_transaction_runs_an_async_step_before_the_probe() {
    use embedded_hal_async::i2c::I2c as _;
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let mut bus = Guarded::new(WedgingBus::default(), &breaker, &clock).recover_with(AsyncReset);
    let run = |bus: &mut Guarded<WedgingBus, _, _, _, AsyncReset>| {
        let mut f = std::pin::pin!(bus.write(0x48, &[0]));
        let cx = &mut std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(cx) {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => panic!("the scripted bus answers at once"),
        }
    };
    bus.inner_mut().wedged = true;
    for _ in 0..2 {
        assert!(run(&mut bus).is_err());
    }
    assert_eq!(bus.inner().resets, 1, "the trip ran the step");
    bus.inner_mut().wedged = true;
    clock.advance(Duration::from_secs(5));
    assert_eq!(run(&mut bus), Ok(()));
    assert_eq!(bus.inner().resets, 2, "and the probe");
    assert_eq!(breaker.phase(clock.now()), Phase::Closed);
}

/// Polls `f` once: its answer, or `None` if it is still pending (and then drops it, as a
/// timeout that fired does).
fn poll_once<F: Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    let cx = &mut std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(cx) {
        std::task::Poll::Ready(r) => Some(r),
        std::task::Poll::Pending => None,
    }
}

type Bus<'a, R> = Guarded<WedgingBus, &'a SharedBreaker, &'a ManualClock, breaker_core::ByErrorKind, R>;

/// An async write through `bus`.
async fn write<R: AsyncRecover<WedgingBus>>(bus: &mut Bus<'_, R>) -> Result<(), GuardedError<ErrorKind>> {
    embedded_hal_async::i2c::I2c::write(bus, 0x48, &[0]).await
}

/// Trips `breaker` through `bus` (two NACKs), then lets its cooldown pass.
fn trip_and_cool<R: AsyncRecover<WedgingBus>>(bus: &mut Bus<'_, R>, clock: &ManualClock) {
    bus.inner_mut().wedged = true;
    for _ in 0..2 {
        assert!(matches!(poll_once(write(bus)), Some(Err(GuardedError::Inner(_)))));
    }
    clock.advance(Duration::from_secs(5));
}

#[test]
fn a_dropped_async_probe_runs_a_blocking_step_for_its_re_opening_at_the_drop() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let mut bus = Guarded::new(WedgingBus::default(), &breaker, &clock).recover_with(|bus: &mut WedgingBus| {
        bus.reset();
        true
    });
    trip_and_cool(&mut bus, &clock);
    assert_eq!(bus.inner().resets, 1, "the trip ran the step");
    // The probe: its step runs, its transfer hangs, and a timeout drops its future.
    bus.inner_mut().hang = true;
    assert!(poll_once(write(&mut bus)).is_none());
    let c = breaker.counters();
    assert_eq!(
        (breaker.phase(clock.now()), c.trips, c.probes),
        (Phase::Open, 2, 1),
        "re-opened"
    );
    assert_eq!(
        bus.inner().resets,
        3,
        "the probe's step, then the re-opening's, at the drop"
    );
    // Refused while open: no step.
    bus.inner_mut().hang = false;
    assert!(matches!(
        poll_once(write(&mut bus)),
        Some(Err(GuardedError::Refused(_)))
    ));
    assert_eq!(bus.inner().resets, 3);
    clock.advance(Duration::from_secs(10));
    assert_eq!(poll_once(write(&mut bus)), Some(Ok(())));
    let c = breaker.counters();
    assert_eq!((breaker.phase(clock.now()), c.trips, c.probes), (Phase::Closed, 2, 2));
    assert_eq!(bus.inner().resets, 4, "once per trip and once before each probe: 2 + 2");
}

/// An async step that can stall: while `stall`, it never finishes (a boot wait a timeout
/// cuts short); else it resets the bus.
#[derive(Default)]
struct SlowReset {
    stall: bool,
    /// Steps started.
    started: u32,
}

impl AsyncRecover<WedgingBus> for SlowReset {
    async fn recover(&mut self, bus: &mut WedgingBus) -> bool {
        self.started += 1;
        if self.stall {
            core::future::pending::<()>().await;
        }
        bus.reset();
        true
    }
}

#[test]
fn a_dropped_async_probe_owes_an_async_step_to_the_next_transaction() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(Instant::ZERO);
    let mut bus = Guarded::new(WedgingBus::default(), &breaker, &clock).recover_with(SlowReset::default());
    trip_and_cool(&mut bus, &clock);
    assert_eq!(bus.inner().resets, 1, "the trip ran the step");

    // A probe dropped during its transfer: re-opened, and the step for that re-opening,
    // which cannot be awaited in a drop, is owed.
    bus.inner_mut().hang = true;
    assert!(poll_once(write(&mut bus)).is_none());
    assert_eq!(breaker.phase(clock.now()), Phase::Open);
    assert_eq!(bus.inner().resets, 2, "the probe's step only, so far");
    // The next transaction (refused: the breaker is open) runs it first.
    bus.inner_mut().hang = false;
    assert!(matches!(
        poll_once(write(&mut bus)),
        Some(Err(GuardedError::Refused(_)))
    ));
    assert_eq!(bus.inner().resets, 3, "the owed step, once");
    assert!(matches!(
        poll_once(write(&mut bus)),
        Some(Err(GuardedError::Refused(_)))
    ));
    assert_eq!(bus.inner().resets, 3, "and only once");

    // A probe dropped during its own step (the step stalls): re-opened, a step owed.
    clock.advance(Duration::from_secs(10));
    bus.recovery_mut().stall = true;
    assert!(poll_once(write(&mut bus)).is_none());
    assert_eq!((breaker.phase(clock.now()), bus.inner().resets), (Phase::Open, 3));
    // The owed step is cut short too: still owed.
    assert!(poll_once(write(&mut bus)).is_none());
    bus.recovery_mut().stall = false;
    assert!(matches!(
        poll_once(write(&mut bus)),
        Some(Err(GuardedError::Refused(_)))
    ));
    assert_eq!(bus.inner().resets, 4, "the owed step, once it finished");

    // The third probe goes through.
    clock.advance(Duration::from_secs(20));
    assert_eq!(poll_once(write(&mut bus)), Some(Ok(())));
    let c = breaker.counters();
    assert_eq!((breaker.phase(clock.now()), c.trips, c.probes), (Phase::Closed, 3, 3));
    assert_eq!(
        bus.inner().resets + 1,
        c.trips + c.probes,
        "once per trip and once before each probe, but for the probe whose step was cut short"
    );
    assert_eq!(
        bus.recovery().started,
        7,
        "every step started: 3 trips, 3 probes, 1 cut short and owed again"
    );
}
