//! `fallback = path`: free functions, `async fn`s, methods with every receiver (the
//! receiver is passed first, as `self`), generics, `impl Trait` and pattern parameters,
//! an error type without `From<Refused>` (a refusal never becomes an error), and the
//! attribute's other arguments beside it.
#![deny(warnings)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use breaker_core::{circuit_breaker, Classify, Duration, Instant, ManualClock};

#[derive(Debug, PartialEq)]
pub struct Nack;
impl Classify for Nack {}

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[circuit_breaker(trip = 1, fallback = send_cached, clock = CLOCK, log)]
pub fn send(frame: &[u8]) -> Result<usize, Nack> {
    if frame.is_empty() {
        Err(Nack)
    } else {
        Ok(frame.len())
    }
}

pub fn send_cached(frame: &[u8]) -> Result<usize, Nack> {
    Ok(frame.len() + 100)
}

#[circuit_breaker(trip = 1, fallback = self::backup::fetch, clock = CLOCK)]
pub async fn fetch(key: u8, (a, _): (u8, u8)) -> Result<u8, Nack> {
    if key == 0 {
        Err(Nack)
    } else {
        Ok(key + a)
    }
}

mod backup {
    pub async fn fetch(key: u8, pair: (u8, u8)) -> Result<u8, super::Nack> {
        Ok(key + pair.1 + 50)
    }
}

#[circuit_breaker(trip = 1, fallback = show_plain, clock = CLOCK)]
pub fn show<T: std::fmt::Debug>(value: T, prefix: impl AsRef<str>) -> Result<String, Nack>
where
    T: Clone,
{
    let _ = value.clone();
    Err(Nack)
}

pub fn show_plain<T: std::fmt::Debug + Clone>(value: T, _prefix: impl AsRef<str>) -> Result<String, Nack> {
    Ok(format!("{value:?}"))
}

pub struct Radio {
    sent: u32,
}

impl Radio {
    #[circuit_breaker(name = "radio::sent", trip = 1, fallback = Self::sent_cached, clock = CLOCK)]
    pub fn sent(&self) -> Result<u32, Nack> {
        Err(Nack)
    }

    fn sent_cached(&self) -> Result<u32, Nack> {
        Ok(self.sent)
    }

    #[circuit_breaker(name = "radio::push", trip = 1, fallback = Self::push_later, clock = CLOCK)]
    pub fn push(&mut self, n: u32) -> Result<u32, Nack> {
        let _ = n;
        Err(Nack)
    }

    fn push_later(&mut self, n: u32) -> Result<u32, Nack> {
        self.sent += n;
        Ok(self.sent)
    }

    #[circuit_breaker(name = "radio::close", trip = 1, fallback = close_anyway, clock = CLOCK)]
    pub fn close(self) -> Result<u32, Nack> {
        Err(Nack)
    }

    #[circuit_breaker(name = "radio::boxed", trip = 1, fallback = Self::boxed_cached, clock = CLOCK)]
    pub fn boxed(self: Box<Self>) -> Result<u32, Nack> {
        Err(Nack)
    }

    fn boxed_cached(self: Box<Self>) -> Result<u32, Nack> {
        Ok(self.sent + 1)
    }

    #[circuit_breaker(name = "radio::flush", trip = 1, fallback = Self::flush_later, clock = CLOCK)]
    pub async fn flush(&mut self) -> Result<&mut Self, Nack> {
        Err(Nack)
    }

    async fn flush_later(&mut self) -> Result<&mut Self, Nack> {
        self.sent = 0;
        Ok(self)
    }
}

fn close_anyway(radio: Radio) -> Result<u32, Nack> {
    Ok(radio.sent)
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
    assert_eq!(send(b"ab"), Ok(2));
    assert_eq!(send(b""), Err(Nack));
    assert_eq!(send(b"ab"), Ok(102));
    assert_eq!(block_on(fetch(0, (1, 2))), Err(Nack));
    assert_eq!(block_on(fetch(1, (1, 2))), Ok(53));
    assert_eq!(show(1, "x"), Err(Nack));
    assert_eq!(show(1, "x").unwrap(), "1");
    let mut radio = Radio { sent: 3 };
    assert_eq!(radio.sent(), Err(Nack));
    assert_eq!(radio.sent(), Ok(3));
    assert_eq!(radio.push(1), Err(Nack));
    assert_eq!(radio.push(2), Ok(5));
    assert!(block_on(radio.flush()).is_err());
    assert_eq!(block_on(radio.flush()).map(|r| r.sent), Ok(0));
    assert_eq!(Box::new(Radio { sent: 1 }).boxed(), Err(Nack));
    assert_eq!(Box::new(Radio { sent: 1 }).boxed(), Ok(2));
    assert_eq!(Radio { sent: 9 }.close(), Err(Nack));
    assert_eq!(Radio { sent: 9 }.close(), Ok(9));
    CLOCK.advance(Duration::from_secs(30));
}
