//! What `#[circuit_breaker]` expands to reaches only this module, by absolute paths.
//! Not public API: anything here may change in any release.
//!
//! A crate that re-exports this one for the attribute (as `breaker-embedded` does) keeps a
//! `#[doc(hidden)] pub mod __private` of its own with `pub use breaker_core::__private::*;`
//! and, where it wants another default clock, its own `DefaultClock` (a unit struct
//! implementing [`Clock`] + `Sync`), which shadows the glob import.

pub use linkme;

pub use crate::global_clock::GlobalClock as DefaultClock;
pub use crate::registry::Entry;
pub use crate::{CallError, Classify, Clock, Duration, Policy, Refused, SharedBreaker, SharedPermit, Verdict};

/// The registry's table: one [`Entry`] per annotated function, gathered by the linker.
/// On Cortex-M the `breaker.x` fragment places it in flash (see [`crate::registry`]).
#[linkme::distributed_slice]
pub static BREAKERS: [Entry];

/// A function's error type must be able to carry a refusal: `E: From<Refused>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a circuit-breaker refusal",
    label = "`#[circuit_breaker]` returns `Err({Self}::from(Refused))` when the breaker refuses a call",
    note = "add `impl From<breaker_core::Refused> for {Self}` (for example a `Refused(breaker_core::Refused)` variant)"
)]
pub trait CarriesRefusal: Sized {
    /// The error that stands for a refused call.
    fn from_refused(refused: Refused) -> Self;
}

impl<E: From<Refused>> CarriesRefusal for E {
    #[inline(always)]
    fn from_refused(refused: Refused) -> Self {
        E::from(refused)
    }
}

/// The error a refused call returns.
#[inline(always)]
pub fn refused<E: CarriesRefusal>(refused: Refused) -> E {
    E::from_refused(refused)
}

/// The wrapped function's result, from the shared breaker's.
#[inline(always)]
pub fn into_result<T, E: CarriesRefusal>(result: Result<T, CallError<E>>) -> Result<T, E> {
    match result {
        Ok(v) => Ok(v),
        Err(CallError::Inner(e)) => Err(e),
        Err(CallError::Refused(r)) => Err(E::from_refused(r)),
    }
}

/// Without `classify = ...`, the error type's [`Classify`] impl gives the verdict.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say which failures should trip the circuit breaker",
    label = "`#[circuit_breaker]` asks this error type for a verdict",
    note = "add `impl breaker_core::Classify for {Self} {{}}` (every error then counts as a strike; override `verdict` to choose), or pass `classify = path::to::fn` taking `&{Self}` and returning `breaker_core::Verdict`"
)]
pub trait Classified {
    /// What this error testifies.
    fn classified(&self) -> Verdict;
}

impl<E: Classify + ?Sized> Classified for E {
    #[inline(always)]
    fn classified(&self) -> Verdict {
        self.verdict()
    }
}

/// The default `classify`: the error type's own [`Classify`] verdict.
#[inline(always)]
pub fn verdict<E: Classified + ?Sized>(error: &E) -> Verdict {
    error.classified()
}
