//! `#[circuit_breaker]` through `breaker-embedded`: it resolves to this crate, reads
//! embassy time with no setup, guards `async fn`s, and lists them in the registry.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use breaker_embedded::{circuit_breaker, registry, Classify, Phase, Refused, State, Verdict};
use embassy_time::{Duration, MockDriver};

#[derive(Debug, PartialEq)]
enum SensorError {
    Nack,
    HardwareFault,
    Refused(Refused),
}

impl From<Refused> for SensorError {
    fn from(r: Refused) -> Self {
        SensorError::Refused(r)
    }
}

impl Classify for SensorError {
    fn verdict(&self) -> Verdict {
        match self {
            SensorError::Nack => Verdict::Strike,
            SensorError::HardwareFault => Verdict::Trip,
            SensorError::Refused(_) => Verdict::Neutral,
        }
    }
}

#[circuit_breaker(name = "test::sensor", trip = 2, cooldown = "250ms")]
async fn read_sensor(answer: Result<u16, SensorError>) -> Result<u16, SensorError> {
    answer
}

/// Polls a future that never waits to completion.
fn ready<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future waited"),
    }
}

fn advance_ms(ms: u64) {
    MockDriver::get().advance(Duration::from_millis(ms));
}

/// Embassy's mock clock is one per process, and the tests of this binary run on parallel
/// threads: each test that reads or moves it holds this lock, so that no other test's
/// time passes under it.
fn embassy_time() -> std::sync::MutexGuard<'static, ()> {
    static CLOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that failed while holding the lock leaves nothing inconsistent behind.
    CLOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn an_async_function_trips_on_a_hard_fault_and_recovers_on_embassy_time() {
    let _time = embassy_time();
    let entry = registry::get("test::sensor").expect("listed before its first call");
    assert_eq!(entry.state(), State::Closed { strikes: 0 });

    assert_eq!(ready(read_sensor(Ok(7))), Ok(7));
    // A NACK is a strike (one of two); a hardware fault trips at once.
    assert_eq!(ready(read_sensor(Err(SensorError::Nack))), Err(SensorError::Nack));
    assert_eq!(entry.state(), State::Closed { strikes: 1 });
    assert_eq!(ready(read_sensor(Ok(7))), Ok(7));
    assert_eq!(entry.state(), State::Closed { strikes: 0 });
    assert_eq!(
        ready(read_sensor(Err(SensorError::HardwareFault))),
        Err(SensorError::HardwareFault)
    );
    assert_eq!(entry.state().phase(), Phase::Open);
    assert!(matches!(ready(read_sensor(Ok(7))), Err(SensorError::Refused(_))));

    // The registry reads the same clock as the function: embassy time.
    advance_ms(249);
    assert!(!entry.would_allow());
    advance_ms(1);
    assert!(entry.would_allow());
    assert_eq!(ready(read_sensor(Ok(8))), Ok(8));
    assert_eq!(entry.state(), State::Closed { strikes: 0 });

    let c = entry.counters();
    assert_eq!((c.failures, c.skips, c.trips, c.probes), (2, 1, 1, 1));
}

/// With `log`, the observer is `__private::Log`, which this crate shadows with `DefmtLog`.
#[circuit_breaker(name = "test::logged", trip = 1, cooldown = "100ms", log)]
async fn logged(up: bool) -> Result<(), SensorError> {
    if up {
        Ok(())
    } else {
        Err(SensorError::Nack)
    }
}

#[test]
fn a_logged_function_logs_through_defmt() {
    assert_eq!(
        core::any::TypeId::of::<breaker_embedded::__private::Log>(),
        core::any::TypeId::of::<breaker_embedded::DefmtLog>()
    );
    // `Log::new(name)` in a `static`, as the attribute writes it.
    static LOG: breaker_embedded::__private::Log = breaker_embedded::__private::Log::new("test::logged");
    assert_eq!(LOG.name(), "test::logged");

    // The lines need a defmt logger: the firmware's QEMU run shows them. Embassy time must
    // not pass between the trip and the refusal (a 100 ms cooldown): the other test of
    // this binary advances it, so the clock is held.
    let _time = embassy_time();
    let entry = registry::get("test::logged").expect("listed");
    assert_eq!(ready(logged(true)), Ok(()));
    assert_eq!(ready(logged(false)), Err(SensorError::Nack));
    assert_eq!(entry.state().phase(), Phase::Open);
    assert!(matches!(ready(logged(true)), Err(SensorError::Refused(_))));
}

/// Retried without `retry_sleep`: the attempts wait on embassy's `Timer` (through
/// breaker-core, which has no async timer, this is a compile error).
#[circuit_breaker(
    name = "test::retried",
    trip = 10,
    retry = 2,
    retry_delay = "100ms",
    retry_backoff = 1
)]
async fn retried(attempts: &core::sync::atomic::AtomicU32) -> Result<u32, SensorError> {
    match attempts.fetch_add(1, core::sync::atomic::Ordering::Relaxed) + 1 {
        3 => Ok(3),
        _ => Err(SensorError::Nack),
    }
}

#[test]
fn a_retried_async_function_waits_on_embassy_time_between_attempts() {
    let _time = embassy_time();
    let attempts = core::sync::atomic::AtomicU32::new(0);
    let mut call = pin!(retried(&attempts));
    let mut poll = || call.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    // The first attempt fails; the retry waits 100 ms of embassy time, not less.
    assert!(poll().is_pending());
    assert_eq!(attempts.load(core::sync::atomic::Ordering::Relaxed), 1);
    advance_ms(99);
    assert!(poll().is_pending());
    advance_ms(1);
    assert!(poll().is_pending(), "the second attempt fails and waits again");
    assert_eq!(attempts.load(core::sync::atomic::Ordering::Relaxed), 2);
    advance_ms(100);
    assert_eq!(poll(), Poll::Ready(Ok(3)));
}
