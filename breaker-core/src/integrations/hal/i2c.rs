//! `I2c` (blocking and async) for `Guarded`: each transaction one call through the
//! breaker its address picks.

use embedded_hal::i2c::{AddressMode, ErrorKind, ErrorType, I2c, Operation};

use crate::hal::guarded::{call, call_async, pick};
use crate::hal::{Guarded, GuardedError, PickBreaker};
use crate::{ClassifyHal, Clock};

impl<T: ErrorType, B, C, K> ErrorType for Guarded<T, B, C, K> {
    type Error = GuardedError<T::Error>;
}

impl<A, T, B, C, K> I2c<A> for Guarded<T, B, C, K>
where
    A: AddressMode + Copy + Into<u16>,
    T: I2c<A>,
    B: PickBreaker<A>,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
{
    #[inline]
    fn read(&mut self, address: A, read: &mut [u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify) = self.parts();
        let breaker = pick(breakers, address)?;
        call::<ErrorKind, _, _, _, _, _>(breaker, clock, classify, || inner.read(address, read))
    }

    #[inline]
    fn write(&mut self, address: A, write: &[u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify) = self.parts();
        let breaker = pick(breakers, address)?;
        call::<ErrorKind, _, _, _, _, _>(breaker, clock, classify, || inner.write(address, write))
    }

    #[inline]
    fn write_read(&mut self, address: A, write: &[u8], read: &mut [u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify) = self.parts();
        let breaker = pick(breakers, address)?;
        call::<ErrorKind, _, _, _, _, _>(breaker, clock, classify, || inner.write_read(address, write, read))
    }

    #[inline]
    fn transaction(&mut self, address: A, operations: &mut [Operation<'_>]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify) = self.parts();
        let breaker = pick(breakers, address)?;
        call::<ErrorKind, _, _, _, _, _>(breaker, clock, classify, || inner.transaction(address, operations))
    }
}

impl<A, T, B, C, K> embedded_hal_async::i2c::I2c<A> for Guarded<T, B, C, K>
where
    A: AddressMode + Copy + Into<u16>,
    T: embedded_hal_async::i2c::I2c<A>,
    B: PickBreaker<A>,
    C: Clock,
    K: ClassifyHal<ErrorKind, T::Error>,
{
    #[inline]
    async fn read(&mut self, address: A, read: &mut [u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify) = self.parts();
        let breaker = pick(breakers, address)?;
        call_async::<ErrorKind, _, _, _, _, _, _>(breaker, clock, classify, || inner.read(address, read)).await
    }

    #[inline]
    async fn write(&mut self, address: A, write: &[u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify) = self.parts();
        let breaker = pick(breakers, address)?;
        call_async::<ErrorKind, _, _, _, _, _, _>(breaker, clock, classify, || inner.write(address, write)).await
    }

    #[inline]
    async fn write_read(&mut self, address: A, write: &[u8], read: &mut [u8]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify) = self.parts();
        let breaker = pick(breakers, address)?;
        call_async::<ErrorKind, _, _, _, _, _, _>(breaker, clock, classify, || inner.write_read(address, write, read))
            .await
    }

    #[inline]
    async fn transaction(&mut self, address: A, operations: &mut [Operation<'_>]) -> Result<(), Self::Error> {
        let (inner, breakers, clock, classify) = self.parts();
        let breaker = pick(breakers, address)?;
        call_async::<ErrorKind, _, _, _, _, _, _>(breaker, clock, classify, || inner.transaction(address, operations))
            .await
    }
}
