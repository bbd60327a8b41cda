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

/// The attribute whose generated code names `::breaker_embedded`: `breaker-embedded`
/// re-exports it as its `circuit_breaker`.
#[cfg(feature = "macros")]
pub use breaker_macros::circuit_breaker_embedded;

pub use crate::global_clock::GlobalClock as DefaultClock;
pub use crate::registry::Entry;
#[cfg(feature = "std")]
pub use crate::StderrLog as Log;
pub use crate::{CallError, Classify, Clock, Duration, Policy, Refused, SharedBreaker, SharedPermit, Verdict};
// `#[circuit_breaker(retry = ..)]`: the policy, and the sleep used without `retry_sleep`
// (a runtime crate may shadow it, as breaker-embedded does with embassy's timer).
pub use crate::{DefaultSleep, Jitter, RetryPolicy};
// `#[circuit_breaker(window = ..)]`'s policy and breaker.
pub use crate::{CallRing, CallWindow, InFlight, Outcome, TimeWindow, WindowSize, Windowed};
// `#[circuit_breaker(history = N)]`'s observer.
pub use crate::History;
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

// The notes below never suggest an impl the orphan rule forbids without saying so: the
// impls are only possible where `{Self}` is defined, and `refused = ...` / `classify = ...`
// work for every type. `do_not_recommend` on the blanket impls keeps rustc from burying
// the notes under the blanket impl and the other implementors.

/// A function's error type must be able to carry a refusal: `E: From<Refused>`, unless
/// `refused = path` names the function that makes the error.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a circuit-breaker refusal: `#[circuit_breaker]` returns `Err({Self}::from(Refused))` when the breaker refuses a call",
    label = "if `{Self}` is defined in your crate, add `impl From<breaker_core::Refused> for {Self}`; if not, pass `refused = my_refusal`",
    note = "for your own type, add for example a `Refused(breaker_core::Refused)` variant and `impl From<breaker_core::Refused> for {Self}`",
    note = "for another crate's type the orphan rule forbids that impl: pass `refused = my_refusal` to the attribute, naming a `fn my_refusal(refused: breaker_core::Refused) -> {Self}` (breaker-core already gives `std::io::Error` and `anyhow::Error` `From<Refused>`)"
)]
pub trait CarriesRefusal: Sized {
    /// The error that stands for a refused call.
    fn from_refused(refused: Refused) -> Self;
}

#[diagnostic::do_not_recommend]
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

/// Runs a `fallback = ...` function's body, a closure so that its `return`s and `?`s end
/// the body and not the wrapper that reports its outcome.
#[inline(always)]
pub fn run<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// Without `classify = ...`, the error type's [`Classify`] impl gives the verdict.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say which failures should trip the circuit breaker: `#[circuit_breaker]` asks its error type for a verdict",
    label = "if `{Self}` is defined in your crate, add `impl breaker_core::Classify for {Self} {{}}`; if not, pass `classify = my_verdict`",
    note = "for your own type, `impl breaker_core::Classify for {Self} {{}}` counts every error as a strike; override `verdict` to choose",
    note = "for another crate's type the orphan rule forbids that impl: pass `classify = my_verdict` to the attribute, naming a `fn my_verdict(error: &{Self}) -> breaker_core::Verdict` (breaker-core already classifies `std::io::Error`, and `anyhow::Error` with its `anyhow` feature)"
)]
pub trait Classified {
    /// What this error testifies.
    fn classified(&self) -> Verdict;
}

#[diagnostic::do_not_recommend]
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

/// The default `classify` of a function returning `anyhow::Result<T>` (or
/// `Result<T, anyhow::Error>`): with the `anyhow` feature, [`verdict`]; the expansion
/// also invokes [`anyhow_feature`], which fails the build without it.
#[cfg(feature = "anyhow")]
pub use verdict as anyhow_verdict;

/// Without the `anyhow` feature, [`anyhow_feature`] has failed the build already: this
/// only keeps the expansion well-typed, so that its error is the only one.
#[cfg(not(feature = "anyhow"))]
pub fn anyhow_verdict<E: ?Sized>(_: &E) -> Verdict {
    Verdict::Strike
}

/// Nothing with the `anyhow` feature; without it, the compile error saying to turn it on.
#[cfg(feature = "anyhow")]
#[doc(hidden)]
#[macro_export]
macro_rules! __breaker_core_anyhow_feature {
    () => {};
}

/// Nothing with the `anyhow` feature; without it, the compile error saying to turn it on.
#[cfg(not(feature = "anyhow"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __breaker_core_anyhow_feature {
    () => {
        ::core::compile_error!(
            "`anyhow::Error` is classified by breaker-core's `anyhow` feature, which is off: turn it on with `breaker-core = { version = \"0.1\", features = [\"anyhow\"] }` in Cargo.toml (or pass `classify = my_verdict`, naming a `fn my_verdict(error: &anyhow::Error) -> breaker_core::Verdict`)"
        );
    };
}
pub use crate::__breaker_core_anyhow_feature as anyhow_feature;

/// An argument a retried function takes by value: each attempt gets its own clone.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be given to each attempt of a retried call: it is not `Clone`",
    label = "taken by value, so the first attempt could consume it",
    note = "`#[circuit_breaker(retry = ..)]` runs the body once per attempt, each with its own clone of the arguments taken by value; take this argument by reference (`&{Self}`), or make `{Self}` `Clone` (a `Copy` type is copied for free)"
)]
pub trait RetriedArgument: Sized {
    /// The copy one attempt gets.
    fn for_attempt(&self) -> Self;
}

impl<T: Clone> RetriedArgument for T {
    #[inline(always)]
    fn for_attempt(&self) -> T {
        self.clone()
    }
}

/// A fresh copy of a by-value argument for one attempt of a retried call.
#[inline(always)]
pub fn retried_argument<T: RetriedArgument>(argument: &T) -> T {
    argument.for_attempt()
}

/// The verdict of `classify = path`: the function is taken as a `fn(&E) -> Verdict` once
/// `E` is known, so a wrong signature is reported as "expected fn pointer
/// `fn(&E) -> Verdict`" at the path.
#[inline(always)]
pub fn classify_with<E: ?Sized>(error: &E, classify: fn(&E) -> Verdict) -> Verdict {
    classify(error)
}

/// The error of a refused call with `refused = path`: the function is taken as a
/// `fn(Refused) -> E`, so a wrong signature is reported as "expected fn pointer
/// `fn(Refused) -> E`" at the path.
#[inline(always)]
pub fn refused_with<E>(refused: Refused, refused_error: fn(Refused) -> E) -> E {
    refused_error(refused)
}
