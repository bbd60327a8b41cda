//! Failure-rate windows: a count window (small, and of 1000 calls in a ring) and a time
//! window (of ten buckets, and of sixty), a slow-call rule (counting slow failures too),
//! `log`, and an `async fn`; each breaker's policy and storage are what the arguments say.
#![deny(warnings)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use breaker_core::{circuit_breaker, registry, Classify, Duration, Refused, WindowSize};

#[derive(Debug, PartialEq)]
pub enum Error {
    Timeout,
    Refused,
}
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}

#[circuit_breaker(window = 20, failure_rate = 50, min_calls = 10, slow_call = "2s", slow_rate = 80, name = "count")]
fn count(ok: bool) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(Error::Timeout)
    }
}

#[circuit_breaker(window = "10s", cooldown = "1m", probes = 2, log, name = "time")]
fn time() -> Result<u8, Error> {
    Ok(1)
}

#[circuit_breaker(window = 51, slow_call = "250ms", slow_rate = 100, name = "async")]
async fn fetch() -> Result<u8, Error> {
    Ok(2)
}

#[circuit_breaker(window = 1000, min_calls = 100, slow_call = "1s", slow_rate = 90, slow_failures = true, name = "ring")]
fn ring() -> Result<u8, Error> {
    Ok(3)
}

#[circuit_breaker(window = "60s", buckets = 60, min_calls = 61, name = "minute")]
fn minute() -> Result<u8, Error> {
    Ok(4)
}

// Calls out watched for the slow-call rule while still out, over each kind of window.
#[circuit_breaker(window = 1000, slow_call = "1s", slow_rate = 90, in_flight = 16, name = "ring_watched")]
fn ring_watched() -> Result<u8, Error> {
    Ok(5)
}

#[circuit_breaker(window = "60s", buckets = 60, slow_call = "1s", slow_rate = 90, in_flight = 254, name = "minute_watched")]
async fn minute_watched() -> Result<u8, Error> {
    Ok(6)
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn main() {
    assert_eq!(count(true), Ok(()));
    assert_eq!(count(false), Err(Error::Timeout));
    assert_eq!(time(), Ok(1));
    assert_eq!(block_on(fetch()), Ok(2));

    let w = registry::get("count").unwrap().policy().window().unwrap();
    assert_eq!((w.size(), w.failure_rate(), w.min_calls()), (WindowSize::Calls(20), 50, 10));
    assert_eq!(w.slow_calls(), Some((Duration::from_secs(2), 80)));
    let t = registry::get("time").unwrap().policy();
    let w = t.window().unwrap();
    assert_eq!((w.size(), w.failure_rate(), w.min_calls()), (WindowSize::Time(Duration::from_secs(10)), 50, 10));
    assert_eq!((t.trip(), t.probes_to_close()), (0, 2));
    let w = registry::get("async").unwrap().policy().window().unwrap();
    assert_eq!((w.size(), w.min_calls()), (WindowSize::Calls(51), 51));
    assert_eq!((ring(), minute()), (Ok(3), Ok(4)));
    let w = registry::get("ring").unwrap().policy().window().unwrap();
    assert_eq!((w.size(), w.min_calls(), w.slow_failures()), (WindowSize::Calls(1000), 100, true));
    assert_eq!(w.slow_calls(), Some((Duration::from_secs(1), 90)));
    let w = registry::get("minute").unwrap().policy().window().unwrap();
    assert_eq!((w.size(), w.min_calls(), w.slow_failures()), (WindowSize::Time(Duration::from_secs(60)), 61, false));
    assert_eq!((ring_watched(), block_on(minute_watched())), (Ok(5), Ok(6)));
    let stats = registry::get("ring_watched").unwrap().breaker().window_stats(breaker_core::Instant::ZERO);
    assert_eq!(stats.map(|s| s.calls), Some(1));
    let stats = registry::get("count").unwrap().breaker().window_stats(breaker_core::Instant::ZERO);
    assert_eq!(stats.map(|s| (s.calls, s.failures)), Some((2, 1)));
}
