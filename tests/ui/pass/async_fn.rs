//! `async fn`, free and generic, with `?` and `.await` in the body.
#![deny(warnings)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug, PartialEq)]
pub enum Error {
    Parse,
    Refused,
}
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}
impl From<std::num::ParseIntError> for Error {
    fn from(_: std::num::ParseIntError) -> Self {
        Error::Parse
    }
}

async fn read(text: &str) -> &str {
    text
}

/// Parses what it reads.
#[circuit_breaker(trip = 2, cooldown = "5s")]
pub async fn parse(text: &str) -> Result<u32, Error> {
    let n: u32 = read(text).await.parse()?;
    Ok(n)
}

#[circuit_breaker]
async fn echo<T: Clone + Send>(value: &T) -> Result<T, Error>
where
    T: std::fmt::Debug,
{
    Ok(value.clone())
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
    assert_eq!(block_on(parse("42")), Ok(42));
    assert_eq!(block_on(parse("x")), Err(Error::Parse));
    assert_eq!(block_on(parse("x")), Err(Error::Parse));
    assert_eq!(block_on(parse("42")), Err(Error::Refused));
    assert_eq!(block_on(echo(&"hi".to_owned())), Ok("hi".to_owned()));
    // The future is `Send` when the body's is: the permit holds only `Sync` references.
    fn assert_send<F: Future + Send>(_: F) {}
    assert_send(parse("1"));
}
