//! `I2c` (blocking and async) for `Guarded`: each transaction one call through the
//! breaker its address picks.

use embedded_hal::i2c::{AddressMode, ErrorKind, ErrorType, I2c, Operation};

use crate::hal::guarded::{call, call_async, pick};
use crate::hal::{AsyncRecover, AsyncRetryNotReady, Guarded, GuardedError, PickBreaker, Recover, RetryNotReady};
use crate::{ClassifyHal, Clock};

impl<T: ErrorType, B, C, K, R, W> ErrorType for Guarded<T, B, C, K, R, W> {
    type Error = GuardedError<T::Error>;
}

impl<A, T, B, C, K, R, W> I2c<A> for Guarded<T, B, C, K, R, W>
where
    A: AddressMode + Copy + Into<u16>,
    T: I2c<A>,
    B: PickBreaker<A>,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
    R: Recover<T>,
    W: RetryNotReady<ErrorKind, T::Error>,
{
    #[inline]
    fn read(&mut self, address: A, read: &mut [u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify, recover, retry) = self.parts();
        let breaker = pick(breakers, address)?;
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.read(address, read)
        })
    }

    #[inline]
    fn write(&mut self, address: A, write: &[u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify, recover, retry) = self.parts();
        let breaker = pick(breakers, address)?;
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.write(address, write)
        })
    }

    #[inline]
    fn write_read(&mut self, address: A, write: &[u8], read: &mut [u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify, recover, retry) = self.parts();
        let breaker = pick(breakers, address)?;
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.write_read(address, write, read)
        })
    }

    #[inline]
    fn transaction(&mut self, address: A, operations: &mut [Operation<'_>]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify, recover, retry) = self.parts();
        let breaker = pick(breakers, address)?;
        call::<ErrorKind, _, _, _, _, _, _, _, _>(breaker, clock, classify, recover, retry, inner, |inner| {
            inner.transaction(address, operations)
        })
    }
}

impl<A, T, B, C, K, R, W> embedded_hal_async::i2c::I2c<A> for Guarded<T, B, C, K, R, W>
where
    A: AddressMode + Copy + Into<u16>,
    T: embedded_hal_async::i2c::I2c<A>,
    B: PickBreaker<A>,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
    R: AsyncRecover<T>,
    W: AsyncRetryNotReady<ErrorKind, T::Error>,
{
    #[inline]
    async fn read(&mut self, address: A, read: &mut [u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify, recover, retry) = self.parts();
        let breaker = pick(breakers, address)?;
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.read(address, read).await,
        )
        .await
    }

    #[inline]
    async fn write(&mut self, address: A, write: &[u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify, recover, retry) = self.parts();
        let breaker = pick(breakers, address)?;
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.write(address, write).await,
        )
        .await
    }

    #[inline]
    async fn write_read(&mut self, address: A, write: &[u8], read: &mut [u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify, recover, retry) = self.parts();
        let breaker = pick(breakers, address)?;
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.write_read(address, write, read).await,
        )
        .await
    }

    #[inline]
    async fn transaction(&mut self, address: A, operations: &mut [Operation<'_>]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify, recover, retry) = self.parts();
        let breaker = pick(breakers, address)?;
        call_async::<ErrorKind, _, _, _, _, _, _, _, _>(
            breaker,
            clock,
            classify,
            recover,
            retry,
            inner,
            async |inner| inner.transaction(address, operations).await,
        )
        .await
    }
}
