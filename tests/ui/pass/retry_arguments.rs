//! Every retry argument, on sync and async functions and methods: by-value arguments are
//! cloned for each attempt (copied, for `Copy` types), `&mut` ones reborrowed, `mut`
//! bindings stay mutable in the body.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use breaker_core::{circuit_breaker, Classify, Clock, Duration, Instant, ManualClock, Refused};

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

fn sleep(d: Duration) {
    CLOCK.advance(d);
}

async fn sleep_async(d: Duration) {
    CLOCK.advance(d);
}

#[derive(Debug, PartialEq)]
pub enum Error {
    Nack,
    Refused,
}
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}

#[circuit_breaker(
    trip = 10,
    retry = 3,
    retry_delay = "10ms",
    retry_backoff = 3,
    retry_max_delay = "50ms",
    retry_jitter = "full",
    retry_budget = "1s",
    retry_sleep = sleep,
    clock = CLOCK,
)]
fn send(frame: Vec<u8>, mut tries: u32, log: &mut Vec<usize>, (a, b): (u8, String)) -> Result<usize, Error> {
    tries += 1;
    log.push(frame.len() + usize::from(a) + b.len());
    drop(frame); // consumed: each attempt has its own clone
    drop(b);
    if log.len() < 3 {
        Err(Error::Nack)
    } else {
        Ok(tries as usize)
    }
}

struct Radio {
    sent: u32,
}

impl Radio {
    #[circuit_breaker(retry = 2, retry_jitter = "decorrelated", retry_sleep = sleep_async, clock = CLOCK)]
    async fn transmit(&mut self, frame: String) -> Result<u32, Error> {
        self.sent += 1;
        let _owned: String = frame;
        if self.sent < 2 {
            return Err(Error::Nack);
        }
        Ok(self.sent)
    }

    #[circuit_breaker(retry = 1, retry_jitter = "equal", retry_sleep = sleep, clock = CLOCK)]
    fn id(&self) -> Result<u32, Error> {
        Ok(self.sent)
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            return v;
        }
    }
}

fn main() {
    let mut log = Vec::new();
    assert_eq!(send(vec![1, 2], 0, &mut log, (1, "xy".to_string())), Ok(1));
    assert_eq!(log, [5, 5, 5]);
    let mut radio = Radio { sent: 0 };
    assert_eq!(block_on(radio.transmit("hi".to_string())), Ok(2));
    assert_eq!(radio.id(), Ok(2));
    assert_ne!(CLOCK.now(), Instant::ZERO, "the retries slept on the manual clock");
}
