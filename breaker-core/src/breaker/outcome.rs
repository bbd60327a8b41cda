//! What a call's result says about the upstream's health.

use crate::Duration;

/// What a failed call testifies about the upstream.
///
/// ```
/// use breaker_core::{Classify, Duration, Verdict};
///
/// enum HttpError { Timeout, Unavailable, Unauthorized, TooManyRequests { retry_after_s: u32 }, BadRequest }
///
/// impl Classify for HttpError {
///     fn verdict(&self) -> Verdict {
///         match self {
///             // Might pass: count it towards the trip.
///             HttpError::Timeout | HttpError::Unavailable => Verdict::Strike,
///             // No retry can help now: trip on first contact.
///             HttpError::Unauthorized => Verdict::Trip,
///             // The server says how long to stay away: the cooldown honours it.
///             HttpError::TooManyRequests { retry_after_s } => {
///                 Verdict::TripFor(Duration::checked_from_secs(*retry_after_s).unwrap_or(Duration::MAX))
///             }
///             // Our own mistake says nothing about the upstream.
///             HttpError::BadRequest => Verdict::Neutral,
///         }
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Verdict {
    /// A failure that might pass (timeout, 503, radio NACK): counts towards the trip.
    Strike,
    /// A failure no retry can help now (revoked key, hardware fault): trips at once.
    Trip,
    /// Like [`Verdict::Trip`], and the breaker stays open at least this long (a server's
    /// `Retry-After`, a radio's back-off window), even if its cooldown is shorter.
    TripFor(Duration),
    /// Says nothing about the upstream's health (the caller's own bad request, a
    /// cancelled call): neither success nor failure.
    Neutral,
}

/// The outcome of one admitted call, as reported to the breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Outcome {
    /// The call worked.
    Success,
    /// The call failed, or was neutral, with this verdict.
    Error(Verdict),
}

impl From<Verdict> for Outcome {
    fn from(v: Verdict) -> Outcome {
        Outcome::Error(v)
    }
}

impl Outcome {
    /// A strike.
    pub const STRIKE: Outcome = Outcome::Error(Verdict::Strike);
    /// A trip verdict with no minimum open time.
    pub const TRIP: Outcome = Outcome::Error(Verdict::Trip);
    /// A neutral outcome.
    pub const NEUTRAL: Outcome = Outcome::Error(Verdict::Neutral);
}

/// An error type's own verdict. The default method gives [`Verdict::Strike`]: an error
/// that expresses no opinion is suspicious, not a death sentence.
pub trait Classify {
    /// What this error testifies.
    fn verdict(&self) -> Verdict {
        Verdict::Strike
    }
}

impl<E: Classify + ?Sized> Classify for &E {
    fn verdict(&self) -> Verdict {
        (**self).verdict()
    }
}

/// An error that cannot happen (an axum `Router`'s, a `service_fn` that never fails) has
/// no verdict to give.
impl Classify for core::convert::Infallible {
    fn verdict(&self) -> Verdict {
        match *self {}
    }
}
