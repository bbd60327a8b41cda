//! `SpiDevice` (blocking and async) for `Guarded`: each transaction, chip select
//! included, one call through the breaker.

use embedded_hal::spi::{ErrorKind, ErrorType, Operation, SpiDevice};

use crate::hal::guarded::{call, call_async};
use crate::hal::{AsyncRecover, AsyncRetryNotReady, Guarded, GuardedError, Recover, RetryNotReady};
use crate::{CircuitBreaker, ClassifyHal, Clock};

impl<T: ErrorType, B, C, K, R, N> ErrorType for Guarded<T, B, C, K, R, N> {
    type Error = GuardedError<T::Error>;
}

impl<W, T, B, C, K, R, N> SpiDevice<W> for Guarded<T, B, C, K, R, N>
where
    W: Copy + 'static,
    T: SpiDevice<W>,
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
    R: Recover<T>,
    N: RetryNotReady<ErrorKind, T::Error>,
{
    #[inline]
    fn transaction(&mut self, operations: &mut [Operation<'_, W>]) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.transaction(operations)
        })
    }

    #[inline]
    fn read(&mut self, buf: &mut [W]) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.read(buf)
        })
    }

    #[inline]
    fn write(&mut self, buf: &[W]) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.write(buf)
        })
    }

    #[inline]
    fn transfer(&mut self, read: &mut [W], write: &[W]) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.transfer(read, write)
        })
    }

    #[inline]
    fn transfer_in_place(&mut self, buf: &mut [W]) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.transfer_in_place(buf)
        })
    }
}

impl<W, T, B, C, K, R, N> embedded_hal_async::spi::SpiDevice<W> for Guarded<T, B, C, K, R, N>
where
    W: Copy + 'static,
    T: embedded_hal_async::spi::SpiDevice<W>,
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
    R: AsyncRecover<T>,
    N: AsyncRetryNotReady<ErrorKind, T::Error>,
{
    #[inline]
    async fn transaction(&mut self, operations: &mut [Operation<'_, W>]) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.transaction(operations).await,
        )
        .await
    }

    #[inline]
    async fn read(&mut self, buf: &mut [W]) -> Result<(), Self::Error> {
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

    #[inline]
    async fn write(&mut self, buf: &[W]) -> Result<(), Self::Error> {
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
    async fn transfer(&mut self, read: &mut [W], write: &[W]) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.transfer(read, write).await,
        )
        .await
    }

    #[inline]
    async fn transfer_in_place(&mut self, buf: &mut [W]) -> Result<(), Self::Error> {
        let (inner, breaker, clock, classify, recover, retry) = self.parts();
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.transfer_in_place(buf).await,
        )
        .await
    }
}
