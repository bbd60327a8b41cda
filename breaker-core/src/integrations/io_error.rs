//! `std::io::Error` (and boxed errors) as a breaker's error type: it carries a refusal and
//! classifies itself by its `ErrorKind`.
//!
//! With these, a function returning `std::io::Result<T>` can be wrapped by
//! `#[circuit_breaker]` as it is, and `SharedBreaker::call` classifies I/O errors with no
//! code of yours. The orphan rule forbids writing these impls outside this crate.

use std::boxed::Box;
use std::io::{Error, ErrorKind};

use crate::{Classify, Refused, Verdict};

/// A refusal as an I/O error of kind [`ErrorKind::ConnectionRefused`]: the call was
/// refused before any connection was tried, so code that already handles an unreachable
/// upstream handles it too. The [`Refused`] is kept inside: find it with
/// [`Error::get_ref`] + `downcast_ref`, or take it back with [`Error::downcast`].
///
/// ```
/// use breaker_core::{Refused, RefusalReason};
///
/// let refused = Refused { reason: RefusalReason::Open, retry_in: None };
/// let error = std::io::Error::from(refused);
/// assert_eq!(error.kind(), std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(error.to_string(), "circuit breaker open: call refused");
/// assert_eq!(error.downcast::<Refused>().unwrap(), refused);
/// ```
impl From<Refused> for Error {
    fn from(refused: Refused) -> Error {
        Error::new(ErrorKind::ConnectionRefused, refused)
    }
}

/// The verdict of an I/O error, by its kind:
///
/// | error | verdict | why |
/// |---|---|---|
/// | a [`Refused`] inside (this crate's `From<Refused>`) | neutral | the call was never made |
/// | `PermissionDenied` | trip | no retry helps until someone changes the permissions or credentials |
/// | `InvalidInput`, `NotFound`, `AlreadyExists`, `Unsupported` | neutral | the caller's own request was wrong; the upstream is fine |
/// | `Interrupted`, `WouldBlock` | neutral | nothing happened: a signal, or a non-blocking call that would have waited |
/// | every other kind: `TimedOut`, `ConnectionRefused`, `ConnectionReset`, `ConnectionAborted`, `NotConnected`, `BrokenPipe`, `UnexpectedEof`, `InvalidData`, `Other`, ... | strike | might pass |
///
/// For another table, pass your own function (`classify = my_verdict` on the attribute,
/// or [`SharedBreaker::call_classified`](crate::SharedBreaker::call_classified)).
///
/// ```
/// use std::io::{Error, ErrorKind};
/// use breaker_core::{Classify, Verdict};
///
/// assert_eq!(Error::from(ErrorKind::TimedOut).verdict(), Verdict::Strike);
/// assert_eq!(Error::from(ErrorKind::PermissionDenied).verdict(), Verdict::Trip);
/// assert_eq!(Error::from(ErrorKind::InvalidInput).verdict(), Verdict::Neutral);
/// ```
impl Classify for Error {
    fn verdict(&self) -> Verdict {
        if self.get_ref().is_some_and(|inner| inner.is::<Refused>()) {
            return Verdict::Neutral;
        }
        match self.kind() {
            ErrorKind::PermissionDenied => Verdict::Trip,
            ErrorKind::InvalidInput
            | ErrorKind::NotFound
            | ErrorKind::AlreadyExists
            | ErrorKind::Unsupported
            | ErrorKind::Interrupted
            | ErrorKind::WouldBlock => Verdict::Neutral,
            _ => Verdict::Strike,
        }
    }
}

/// A boxed error (`tower`'s `BoxError`, `Box<dyn Error>` results): a [`Refused`] inside
/// is neutral, a boxed `std::io::Error` is classified by its kind (the table above),
/// anything else is a strike.
impl Classify for Box<dyn core::error::Error + Send + Sync> {
    fn verdict(&self) -> Verdict {
        dyn_verdict(self.as_ref())
    }
}

/// [`Classify`] for a boxed error without `Send + Sync`: the same rules.
impl Classify for Box<dyn core::error::Error> {
    fn verdict(&self) -> Verdict {
        dyn_verdict(self.as_ref())
    }
}

/// Whether `error` is the tower layer's refusal (feature `tower`).
fn is_tower_refusal(error: &(dyn core::error::Error + 'static)) -> bool {
    #[cfg(feature = "tower")]
    return error.is::<crate::tower::RefusedError>();
    #[cfg(not(feature = "tower"))]
    {
        let _ = error;
        false
    }
}

/// The verdict of an error known only as a trait object: a refusal is neutral, an I/O
/// error follows its kind, anything else is a strike.
pub(crate) fn dyn_verdict(error: &(dyn core::error::Error + 'static)) -> Verdict {
    if error.is::<Refused>() || is_tower_refusal(error) {
        Verdict::Neutral
    } else if let Some(io) = error.downcast_ref::<Error>() {
        io.verdict()
    } else {
        Verdict::Strike
    }
}
