//! `SharedBreaker::call_async`: a guarded `async` call, its permit held across the `.await`.

use core::borrow::Borrow;
use core::future::Future;

use crate::{CallError, Classify, Clock, Observer, Outcome, Policy, SharedBreaker, Verdict};

impl<O: ?Sized + Observer, P: Borrow<Policy>, S: crate::counts::CountStore> SharedBreaker<O, P, S> {
    /// Awaits `call` if the breaker allows it and reports its outcome, classifying its
    /// error with [`Classify`]: the `async` counterpart of [`SharedBreaker::call`], what
    /// `#[circuit_breaker]` does for an `async fn`.
    ///
    /// A refused call returns at once with [`CallError::Refused`]; `call` is dropped
    /// without being polled, so nothing is sent. The permit lives across the `.await`:
    /// if the returned future is dropped while it is the half-open probe (a timeout that
    /// fired, a cancelled task), the probe counts as failed at that moment and the
    /// breaker re-opens instead of waiting for an answer that never comes.
    ///
    /// ```
    /// use breaker_core::{CallError, Duration, Policy, SharedBreaker, StdClock};
    ///
    /// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
    /// static UPSTREAM: SharedBreaker = SharedBreaker::new(&POLICY);
    ///
    /// async fn fetch() -> Result<u32, CallError<std::io::Error>> {
    ///     UPSTREAM.call_async(&StdClock, async { Ok(42) }).await
    /// }
    /// # use std::future::Future;
    /// # let mut f = std::pin::pin!(fetch());
    /// # let std::task::Poll::Ready(v) = f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) else { panic!() };
    /// # assert_eq!(v.unwrap(), 42);
    /// ```
    pub async fn call_async<T, E: Classify, C: Clock>(
        &self,
        clock: &C,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, CallError<E>> {
        self.call_async_classified(clock, call, |e| e.verdict()).await
    }

    /// [`SharedBreaker::call_async`] with the verdict given by `classify` instead of
    /// [`Classify`].
    pub async fn call_async_classified<T, E, C: Clock>(
        &self,
        clock: &C,
        call: impl Future<Output = Result<T, E>>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        let permit = self.try_acquire(clock).map_err(CallError::Refused)?;
        match call.await {
            Ok(value) => {
                permit.record(Outcome::Success);
                Ok(value)
            }
            Err(error) => {
                permit.record(Outcome::Error(classify(&error)));
                Err(CallError::Inner(error))
            }
        }
    }
}
