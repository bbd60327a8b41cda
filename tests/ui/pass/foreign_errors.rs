//! Error types the user does not own: `std::io::Error` and `anyhow::Error` work as they
//! are (breaker-core gives them `From<Refused>` and `Classify`); any other foreign type
//! (here `String`) works through `refused = ...` and `classify = ...`; a `thiserror` enum
//! of the user's own needs two short impls.
#![deny(warnings)]

use breaker_core::{circuit_breaker, Classify, Refused, Verdict};

#[circuit_breaker(trip = 1, name = "pass::io")]
fn read_config(fail: bool) -> std::io::Result<u8> {
    if fail {
        Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
    } else {
        Ok(1)
    }
}

#[circuit_breaker(trip = 1, name = "pass::anyhow")]
async fn fetch(fail: bool) -> anyhow::Result<u8> {
    if fail {
        anyhow::bail!("upstream said 503");
    }
    Ok(2)
}

fn refusal_text(r: Refused) -> String {
    format!("{r:#}")
}

fn text_verdict(e: &String) -> Verdict {
    if e.contains("401") {
        Verdict::Trip
    } else {
        Verdict::Strike
    }
}

#[circuit_breaker(trip = 1, name = "pass::string", classify = text_verdict, refused = refusal_text)]
fn legacy(fail: bool) -> Result<u8, String> {
    if fail {
        Err("401 unauthorized".to_owned())
    } else {
        Ok(3)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("timed out")]
    Timeout,
    #[error(transparent)]
    Refused(#[from] Refused),
}

impl Classify for ApiError {
    fn verdict(&self) -> Verdict {
        match self {
            ApiError::Timeout => Verdict::Strike,
            ApiError::Refused(_) => Verdict::Neutral,
        }
    }
}

#[circuit_breaker(trip = 1, name = "pass::thiserror")]
fn call_api(fail: bool) -> Result<u8, ApiError> {
    if fail {
        Err(ApiError::Timeout)
    } else {
        Ok(4)
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn main() {
    assert_eq!(read_config(false).unwrap(), 1);
    assert!(read_config(true).is_err());
    let refused = read_config(false).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    assert!(refused.downcast::<Refused>().is_ok());

    assert_eq!(block_on(fetch(false)).unwrap(), 2);
    assert!(block_on(fetch(true)).is_err());
    assert!(block_on(fetch(false)).unwrap_err().downcast_ref::<Refused>().is_some());

    assert_eq!(legacy(false), Ok(3));
    assert!(legacy(true).is_err());
    assert!(legacy(false).unwrap_err().starts_with("circuit breaker open: call refused (cooling down, retry in"));

    assert_eq!(call_api(false).unwrap(), 4);
    assert!(call_api(true).is_err());
    assert!(matches!(call_api(false), Err(ApiError::Refused(_))));
}
