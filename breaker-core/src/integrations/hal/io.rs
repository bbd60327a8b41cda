//! `embedded-io` `Read`, `Write`, `ReadReady`, `WriteReady` (and the async `Read`,
//! `Write`) for `Guarded`: each `read`, `write` and `flush` one call through the breaker.

use embedded_io::{ErrorKind, ErrorType, Read, ReadReady, Write, WriteReady};

use crate::hal::guarded::{call, call_async};
use crate::hal::{AsyncRecover, AsyncRetryNotReady, Guarded, GuardedError, Recover, RetryNotReady};
use crate::{CircuitBreaker, ClassifyHal, Clock};

impl<T: ErrorType, B, C, K, R, W> ErrorType for Guarded<T, B, C, K, R, W>
where
    T::Error: 'static,
{
    type Error = GuardedError<T::Error>;
}

impl<T, B, C, K, R, W> Read for Guarded<T, B, C, K, R, W>
where
    T: Read,
    T::Error: 'static,
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
    R: Recover<T>,
    W: RetryNotReady<ErrorKind, T::Error>,
{
    /// Reads through the breaker. The provided `read_exact` calls this until the buffer is
    /// full, so each of its reads is a call of its own, and a refusal ends it.
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.read(buf)
        })
    }
}

impl<T, B, C, K, R, W> Write for Guarded<T, B, C, K, R, W>
where
    T: Write,
    T::Error: 'static,
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
    R: Recover<T>,
    W: RetryNotReady<ErrorKind, T::Error>,
{
    /// Writes through the breaker. The provided `write_all` calls this until everything is
    /// written, so each of its writes is a call of its own, and a refusal ends it.
    #[inline]
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.write(buf)
        })
    }

    #[inline]
    fn flush(&mut self) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.flush()
        })
    }
}

/// Whether a `read` would return at once: yes while the breaker would refuse it (the
/// refusal is immediate), else what the port says. A query, not a transaction: it asks
/// the breaker's pure oracle (never taking the probe slot), and the port's error is
/// passed on uncounted.
impl<T, B, C, K, R, W> ReadReady for Guarded<T, B, C, K, R, W>
where
    T: ReadReady,
    T::Error: 'static,
    B: CircuitBreaker,
    C: Clock,
{
    fn read_ready(&mut self) -> Result<bool, Self::Error> {
        let (inner, breaker, clock, _, _, _) = self.parts();
        if !breaker.would_allow(clock) {
            return Ok(true);
        }
        inner.read_ready().map_err(GuardedError::Inner)
    }
}

/// Whether a `write` would return at once: as [`ReadReady`] for `Guarded` answers.
impl<T, B, C, K, R, W> WriteReady for Guarded<T, B, C, K, R, W>
where
    T: WriteReady,
    T::Error: 'static,
    B: CircuitBreaker,
    C: Clock,
{
    fn write_ready(&mut self) -> Result<bool, Self::Error> {
        let (inner, breaker, clock, _, _, _) = self.parts();
        if !breaker.would_allow(clock) {
            return Ok(true);
        }
        inner.write_ready().map_err(GuardedError::Inner)
    }
}

impl<T, B, C, K, R, W> embedded_io_async::Read for Guarded<T, B, C, K, R, W>
where
    T: embedded_io_async::Read,
    T::Error: 'static,
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
    R: AsyncRecover<T>,
    W: AsyncRetryNotReady<ErrorKind, T::Error>,
{
    /// Reads through the breaker; see the blocking `read`.
    #[inline]
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.read(buf).await,
        )
        .await
    }
}

impl<T, B, C, K, R, W> embedded_io_async::Write for Guarded<T, B, C, K, R, W>
where
    T: embedded_io_async::Write,
    T::Error: 'static,
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
    R: AsyncRecover<T>,
    W: AsyncRetryNotReady<ErrorKind, T::Error>,
{
    /// Writes through the breaker; see the blocking `write`.
    #[inline]
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.write(buf).await,
        )
        .await
    }

    #[inline]
    async fn flush(&mut self) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.flush().await,
        )
        .await
    }
}
