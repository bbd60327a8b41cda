//! `#[circuit_breaker(fallback = path)]`: a refused call calls `path` with the same
//! arguments and returns its result, sync and async, functions and methods.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};

use breaker_core::{circuit_breaker, registry, Classify, Duration, Instant, ManualClock, Phase, Verdict};

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// An error type that cannot carry a refusal: with `fallback`, it needs not.
#[derive(Debug, PartialEq)]
enum RadioError {
    Nack,
    Fault,
}

impl Classify for RadioError {
    fn verdict(&self) -> Verdict {
        match self {
            RadioError::Nack => Verdict::Strike,
            RadioError::Fault => Verdict::Trip,
        }
    }
}

static LORA_RUNS: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "fallback::lora", trip = 2, cooldown = "10s", clock = CLOCK, fallback = nb_iot)]
fn lora(frame: &[u8], fail: bool) -> Result<String, RadioError> {
    LORA_RUNS.fetch_add(1, Ordering::Relaxed);
    if fail {
        return Err(RadioError::Nack);
    }
    Ok(format!("lora sent {}", frame.len()))
}

fn nb_iot(frame: &[u8], fail: bool) -> Result<String, RadioError> {
    if fail {
        Err(RadioError::Fault)
    } else {
        Ok(format!("nb-iot sent {}", frame.len()))
    }
}

#[test]
fn a_refused_call_calls_the_fallback_with_the_same_arguments_and_returns_its_result() {
    let entry = registry::get("fallback::lora").unwrap();
    assert_eq!(
        lora(b"abc", false).unwrap(),
        "lora sent 3",
        "allowed: the body, not the fallback"
    );
    // The body's own errors are returned as they are: the fallback is for refusals.
    assert_eq!(lora(b"abc", true), Err(RadioError::Nack));
    assert_eq!(lora(b"abc", true), Err(RadioError::Nack));
    assert_eq!(entry.state().phase(), Phase::Open);
    let runs = LORA_RUNS.load(Ordering::Relaxed);
    // Refused: the body does not run; the fallback gets the same arguments.
    assert_eq!(lora(b"abcd", false).unwrap(), "nb-iot sent 4");
    assert_eq!(
        lora(b"abcd", true),
        Err(RadioError::Fault),
        "the fallback's own result, error too"
    );
    assert_eq!(LORA_RUNS.load(Ordering::Relaxed), runs);
    assert_eq!(entry.counters().skips, 2, "a refusal is still a refusal");
    assert_eq!(
        entry.counters().failures,
        2,
        "the fallback's failures are not the breaker's"
    );
    // After the cooldown the body is the probe again.
    CLOCK.advance(Duration::from_secs(10));
    assert_eq!(lora(b"ab", false).unwrap(), "lora sent 2");
    assert_eq!(entry.state().phase(), Phase::Closed);
}

// ---- async -------------------------------------------------------------------------------

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

static ASYNC_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[circuit_breaker(name = "fallback::fetch", trip = 1, cooldown = "5s", clock = ASYNC_CLOCK, fallback = fetch_cached)]
async fn fetch(key: u32, (lo, hi): (u32, u32)) -> Result<u32, RadioError> {
    if key == 0 {
        Err(RadioError::Nack)
    } else {
        Ok(key + lo + hi)
    }
}

async fn fetch_cached(key: u32, range: (u32, u32)) -> Result<u32, RadioError> {
    Ok(1000 + key + range.0 + range.1)
}

#[test]
fn an_async_fn_awaits_its_async_fallback_and_parameters_written_as_patterns_are_passed_on() {
    assert_eq!(block_on(fetch(1, (2, 3))), Ok(6));
    assert_eq!(block_on(fetch(0, (2, 3))), Err(RadioError::Nack));
    assert_eq!(block_on(fetch(1, (2, 3))), Ok(1006));
    ASYNC_CLOCK.advance(Duration::from_secs(5));
    assert_eq!(block_on(fetch(1, (2, 3))), Ok(6));
}

// ---- methods -----------------------------------------------------------------------------

static METHOD_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

struct Sensor {
    reads: u32,
    cached: u16,
}

impl Sensor {
    #[circuit_breaker(name = "fallback::sensor::read", trip = 1, cooldown = "5s", clock = METHOD_CLOCK, fallback = Self::read_cached)]
    fn read(&self, fail: bool) -> Result<u16, RadioError> {
        if fail {
            Err(RadioError::Fault)
        } else {
            Ok(42)
        }
    }

    fn read_cached(&self, _fail: bool) -> Result<u16, RadioError> {
        Ok(self.cached)
    }

    #[circuit_breaker(name = "fallback::sensor::poll", trip = 1, cooldown = "5s", clock = METHOD_CLOCK, fallback = Self::poll_twin)]
    fn poll(&mut self, fail: bool) -> Result<u32, RadioError> {
        self.reads += 1;
        if fail {
            Err(RadioError::Nack)
        } else {
            Ok(self.reads)
        }
    }

    fn poll_twin(&mut self, _fail: bool) -> Result<u32, RadioError> {
        self.reads += 100;
        Ok(self.reads)
    }

    #[circuit_breaker(name = "fallback::sensor::shut_down", trip = 1, cooldown = "5s", clock = METHOD_CLOCK, fallback = power_off)]
    fn shut_down(self, fail: bool) -> Result<u32, RadioError> {
        if fail {
            Err(RadioError::Nack)
        } else {
            Ok(self.reads)
        }
    }
}

/// A free function can stand in for a method: it takes the receiver's type first.
fn power_off(sensor: Sensor, _fail: bool) -> Result<u32, RadioError> {
    Ok(sensor.reads + 7000)
}

#[test]
fn a_method_passes_its_receiver_first_as_self() {
    let mut sensor = Sensor { reads: 0, cached: 7 };
    assert_eq!(sensor.read(true), Err(RadioError::Fault));
    assert_eq!(sensor.read(false), Ok(7), "&self: Self::read_cached(self, ..)");
    assert_eq!(sensor.poll(true), Err(RadioError::Nack));
    assert_eq!(
        sensor.poll(false),
        Ok(101),
        "&mut self: the fallback may change the receiver"
    );
    assert_eq!(sensor.reads, 101);
    let _ = Sensor { reads: 1, cached: 0 }.shut_down(true);
    assert_eq!(
        Sensor { reads: 2, cached: 0 }.shut_down(false),
        Ok(7002),
        "self by value"
    );
}

// ---- generics ----------------------------------------------------------------------------

static GENERIC_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[circuit_breaker(name = "fallback::describe", trip = 1, cooldown = "5s", clock = GENERIC_CLOCK, fallback = describe_plainly)]
fn describe<T: std::fmt::Debug>(value: T, fail: bool, style: impl AsRef<str>) -> Result<String, RadioError> {
    if fail {
        Err(RadioError::Nack)
    } else {
        Ok(format!("{}{value:?}", style.as_ref()))
    }
}

fn describe_plainly<T: std::fmt::Debug>(value: T, _fail: bool, _style: impl AsRef<str>) -> Result<String, RadioError> {
    Ok(format!("plain {value:?}"))
}

#[test]
fn generic_functions_and_impl_trait_arguments_pass_through() {
    assert_eq!(describe(1u8, false, "*").unwrap(), "*1");
    assert_eq!(describe("x", true, "*"), Err(RadioError::Nack));
    assert_eq!(describe(vec![1], false, String::from("*")).unwrap(), "plain [1]");
}
