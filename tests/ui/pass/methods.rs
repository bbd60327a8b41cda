//! Methods: `&self`, `&mut self`, `self`, `async`, in inherent impls and as a trait's
//! default method.
#![deny(warnings)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug, PartialEq)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

pub struct Radio {
    sent: u32,
}

impl Radio {
    #[circuit_breaker(name = "radio::sent")]
    pub fn sent(&self) -> Result<u32, Error> {
        Ok(self.sent)
    }

    #[circuit_breaker(name = "radio::send")]
    pub fn send(&mut self, frame: &[u8]) -> Result<usize, Error> {
        self.sent += 1;
        Ok(frame.len())
    }

    #[circuit_breaker(name = "radio::into_count")]
    pub fn into_count(self) -> Result<u32, Error> {
        Ok(self.sent)
    }

    #[circuit_breaker(name = "radio::flush")]
    pub async fn flush(&mut self) -> Result<Self, Error> {
        Ok(Radio { sent: self.sent })
    }
}

pub trait Link {
    fn id(&self) -> u8;

    #[circuit_breaker(name = "link::ping")]
    fn ping(&self) -> Result<u8, Error> {
        Ok(self.id())
    }
}

impl Link for Radio {
    fn id(&self) -> u8 {
        7
    }
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
    let mut radio = Radio { sent: 0 };
    assert_eq!(radio.send(b"abc"), Ok(3));
    assert_eq!(radio.sent(), Ok(1));
    assert_eq!(radio.ping(), Ok(7));
    let radio = block_on(radio.flush()).unwrap();
    assert_eq!(radio.into_count(), Ok(1));
}
