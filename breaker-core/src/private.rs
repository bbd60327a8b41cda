//! What `#[circuit_breaker]` expands to reaches only this module, by absolute paths.
//! Not public API: anything here may change in any release.
//!
//! A crate that re-exports this one for the attribute (as `breaker-embedded` does) keeps a
//! `#[doc(hidden)] pub mod __private` of its own with `pub use breaker_core::__private::*;`
//! and, where it wants another default clock, its own `DefaultClock` (a unit struct
//! implementing [`Clock`] + `Sync`), which shadows the glob import. Its own `Log` shadows
//! the observer of `#[circuit_breaker(log)]` functions the same way: an
//! [`Observer`](crate::Observer) + `Sync` type with a `const fn new(name: &'static str)`
//! (`breaker-embedded` puts its `DefmtLog` there).

pub use linkme;

pub use crate::global_clock::GlobalClock as DefaultClock;
pub use crate::registry::Entry;
#[cfg(feature = "std")]
pub use crate::StderrLog as Log;
pub use crate::{CallError, Classify, Clock, Duration, Policy, Refused, SharedBreaker, SharedPermit, Verdict};
// `#[circuit_breaker(window = ..)]`'s policy and breaker.
pub use crate::{CallWindow, Outcome, TimeWindow, WindowSize, Windowed};
#[cfg(not(feature = "std"))]
use crate::{Observer, Transition};

/// The registry's table: one [`Entry`] per annotated function, gathered by the linker.
/// On Cortex-M the `breaker.x` fragment places it in flash (see [`crate::registry`]).
#[linkme::distributed_slice]
pub static BREAKERS: [Entry];

/// The observer of `#[circuit_breaker(log)]` functions without the `std` feature: there
/// is nowhere to write, so it is a zero-sized type that does nothing. With `std` it is
/// [`StderrLog`](crate::StderrLog); `breaker-embedded` shadows it with `DefmtLog`, which
/// logs through defmt.
#[cfg(not(feature = "std"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Log;

#[cfg(not(feature = "std"))]
impl Log {
    /// The logger of the breaker registered as `name` (unused: nothing is logged).
    pub const fn new(name: &'static str) -> Log {
        let _ = name;
        Log
    }
}

#[cfg(not(feature = "std"))]
impl Observer for Log {
    #[inline(always)]
    fn on_transition(&self, _: &Transition) {}
}

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
