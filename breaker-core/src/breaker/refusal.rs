//! One question for every error the library returns: was the call refused, and when may
//! I try again?

#[cfg(feature = "embedded-hal")]
use crate::GuardedError;
use crate::{CallError, ChainError, Duration, RefusalReason, Refused, Retried, RouterError, Stop};

/// "Was this refused, and when may I try again?", answered the same way by every error
/// type the library returns: [`Refused`] itself, [`CallError`], `GuardedError` (feature
/// `embedded-hal`),
/// [`ChainError`], [`RouterError`], a retry ladder's [`Retried`], and (feature `tower`)
/// the tower layer's boxed error.
///
/// The answer is a [`Refused`]: it prints as `circuit breaker open: call refused` (with
/// `{:#}`, why and how long is left) whatever the wrapped error type is, so a refusal
/// prints without the call's own error implementing `Display`.
///
/// What counts as refused, for each type:
///
/// | type | refused when | `retry_in` |
/// |---|---|---|
/// | [`CallError`], `GuardedError` | `Refused(r)` | `r.retry_in` |
/// | [`ChainError`] | `Exhausted` (every backup failed, the primary cools down), `Probing` | the primary's cooldown left (`Exhausted`) |
/// | [`RouterError`] | `Unavailable` (no tool or substitute healthy) | `None` |
/// | [`Retried`] | the breaker refused an attempt, or a strike left it open past the next delay ([`Stop::Opened`]: the last strike is in `result`, and the breaker will refuse what comes next) | the breaker's wait left |
///
/// Nothing else is a refusal: a call that was made and failed, `RouterError::UnknownTool`,
/// `GuardedError::Unlisted` (a configuration error, not a breaker's answer).
///
/// ```
/// use breaker_core::{CallError, Classify, Duration, Instant, ManualClock, Policy, Refusal, SharedBreaker};
///
/// #[derive(Debug)]
/// struct Timeout; // no `Display`: refusals still print
/// impl Classify for Timeout {}
///
/// static POLICY: Policy = Policy::new(1, Duration::from_secs(30));
/// static API: SharedBreaker = SharedBreaker::new(&POLICY);
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
///
/// let failed = API.call(&CLOCK, || Err::<(), _>(Timeout)).unwrap_err();
/// assert!(!failed.is_refused());
/// let refused = API.call(&CLOCK, || Ok::<(), Timeout>(())).unwrap_err();
/// assert!(refused.is_refused());
/// assert_eq!(refused.retry_in(), Some(Duration::from_secs(30)));
/// assert_eq!(format!("{:#}", refused.refusal().unwrap()), "circuit breaker open: call refused (cooling down, retry in 30s)");
/// ```
pub trait Refusal {
    /// The refusal, if the call was refused (see the table above for each type).
    fn refusal(&self) -> Option<Refused>;

    /// Whether the call was refused.
    fn is_refused(&self) -> bool {
        self.refusal().is_some()
    }

    /// When refused: the wait before a call may be let through again, when known.
    fn retry_in(&self) -> Option<Duration> {
        self.refusal().and_then(|r| r.retry_in)
    }
}

impl Refusal for Refused {
    fn refusal(&self) -> Option<Refused> {
        Some(*self)
    }
}

impl<E> Refusal for CallError<E> {
    fn refusal(&self) -> Option<Refused> {
        match self {
            CallError::Refused(r) => Some(*r),
            CallError::Inner(_) => None,
        }
    }
}

#[cfg(feature = "embedded-hal")]
impl<E> Refusal for GuardedError<E> {
    fn refusal(&self) -> Option<Refused> {
        self.refused()
    }
}

impl<E> Refusal for ChainError<E> {
    fn refusal(&self) -> Option<Refused> {
        match *self {
            ChainError::Exhausted { retry_in } => Some(open(retry_in)),
            ChainError::Probing => Some(Refused {
                reason: RefusalReason::Probing,
                retry_in: None,
            }),
            ChainError::Inner(_) => None,
        }
    }
}

impl<E> Refusal for RouterError<E> {
    fn refusal(&self) -> Option<Refused> {
        match self {
            RouterError::Unavailable { .. } => Some(Refused {
                reason: RefusalReason::Open,
                retry_in: None,
            }),
            RouterError::UnknownTool | RouterError::Inner(_) => None,
        }
    }
}

impl<T, E> Refusal for Retried<T, E> {
    fn refusal(&self) -> Option<Refused> {
        match (&self.result, self.stop) {
            (Err(CallError::Refused(r)), _) => Some(*r),
            (_, Stop::Opened { retry_in }) => Some(open(retry_in)),
            _ => None,
        }
    }
}

impl<T: Refusal + ?Sized> Refusal for &T {
    fn refusal(&self) -> Option<Refused> {
        (**self).refusal()
    }
}

/// An open breaker's refusal: cooling down with `retry_in` left, or forced open (`None`).
fn open(retry_in: Option<Duration>) -> Refused {
    Refused {
        reason: if retry_in.is_some() {
            RefusalReason::Open
        } else {
            RefusalReason::ForcedOpen
        },
        retry_in,
    }
}
