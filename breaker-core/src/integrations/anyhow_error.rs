//! `anyhow::Error` as a breaker's error type (feature `anyhow`).
//!
//! `anyhow::Error` already carries a refusal: its blanket `From` takes any error, and
//! [`Refused`] is one; `downcast_ref::<Refused>()` finds it again. What it lacked is a
//! verdict, which only this crate may give it (the orphan rule).

use crate::{Classify, Refused, Verdict};

/// The verdict of an `anyhow::Error`, from what it holds (context added with
/// `.context(...)` does not hide it):
///
/// - a [`Refused`] (a refusal passed up with `?`): neutral, the call was never made;
/// - with the `std` feature, a `std::io::Error`: by its kind, as
///   [`Classify`]'s impl for `std::io::Error` says (timeouts and refused connections
///   strike, permission denied trips, invalid input is neutral);
/// - anything else: a strike.
///
/// For finer verdicts, pass your own function: `classify = my_verdict` on the attribute,
/// or [`SharedBreaker::call_classified`](crate::SharedBreaker::call_classified).
///
/// ```
/// use breaker_core::{Classify, Refused, RefusalReason, Verdict};
///
/// let refused = Refused { reason: RefusalReason::Open, retry_in: None };
/// let error = anyhow::Error::from(refused).context("fetching the forecast");
/// assert_eq!(error.verdict(), Verdict::Neutral);
/// assert_eq!(error.downcast_ref::<Refused>(), Some(&refused));
/// assert_eq!(anyhow::anyhow!("upstream said 503").verdict(), Verdict::Strike);
/// ```
impl Classify for anyhow::Error {
    fn verdict(&self) -> Verdict {
        if self.downcast_ref::<Refused>().is_some() {
            return Verdict::Neutral;
        }
        #[cfg(feature = "std")]
        if let Some(io) = self.downcast_ref::<std::io::Error>() {
            return io.verdict();
        }
        Verdict::Strike
    }
}
