//! The error of a guarded transaction: refused, unlisted, or the peripheral's own error.

use core::fmt;

use embedded_hal::{i2c, spi};

use crate::{CallError, Refused};

/// The error type of a [`Guarded`](crate::Guarded) peripheral: the breaker refused the
/// transaction, no breaker is listed for its address, or the peripheral's own error `E`,
/// kept as it was.
///
/// It implements the HAL's `Error` trait of whatever `E` implements
/// ([`embedded_hal::i2c::Error`], [`embedded_hal::spi::Error`], [`embedded_io::Error`]), so
/// a driver sees an ordinary bus error: `E`'s own kind for [`GuardedError::Inner`], and
/// `ErrorKind::Other` for a refusal. A driver that wraps bus errors in its own (most do,
/// as `Error::I2C(e)`) hands it back unchanged; match it to tell a refusal from a failure:
///
/// ```
/// use breaker_core::{Guarded, GuardedError, Duration, Instant, ManualClock, Policy, SharedBreaker};
/// use embedded_hal::i2c::{Error as _, ErrorKind, I2c, NoAcknowledgeSource};
/// # use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
///
/// static POLICY: Policy = Policy::new(1, Duration::from_secs(5));
/// static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
///
/// let nack = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
/// // Only the first write reaches the bus: it NACKs, and the breaker (trip = 1) opens.
/// let i2c = Mock::new(&[Transaction::write(0x48, vec![0x01]).with_error(nack)]);
/// let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK);
///
/// let err = bus.write(0x48, &[0x01]).unwrap_err();
/// assert_eq!(err, GuardedError::Inner(nack));
/// assert_eq!(err.kind(), nack);
///
/// let err = bus.write(0x48, &[0x01]).unwrap_err();
/// assert!(err.refused().is_some());
/// assert_eq!(err.kind(), ErrorKind::Other);
/// assert_eq!(err.to_string(), "circuit breaker open: call refused");
/// bus.into_inner().done(); // nothing else reached the bus
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GuardedError<E> {
    /// The breaker refused: the transaction did not reach the bus.
    Refused(Refused),
    /// The transaction reached the bus and failed with the peripheral's own error.
    Inner(E),
    /// A [`DeviceBreakers`](crate::DeviceBreakers) table lists no breaker for this
    /// address: the transaction did not reach the bus. List the address in the table.
    Unlisted {
        /// The address of the transaction.
        address: u16,
    },
    /// The breaker let a half-open probe through, but the [recovery step](crate::hal::Recover)
    /// found the peripheral still wedged: the transaction did not reach the bus, and the
    /// probe counted as failed.
    Unrecovered,
}

impl<E> GuardedError<E> {
    /// The refusal, if the breaker refused.
    pub fn refused(&self) -> Option<Refused> {
        match self {
            GuardedError::Refused(r) => Some(*r),
            _ => None,
        }
    }

    /// The peripheral's own error, if the transaction reached the bus.
    pub fn inner(&self) -> Option<&E> {
        match self {
            GuardedError::Inner(e) => Some(e),
            _ => None,
        }
    }

    /// The peripheral's own error, if the transaction reached the bus.
    pub fn into_inner(self) -> Option<E> {
        match self {
            GuardedError::Inner(e) => Some(e),
            _ => None,
        }
    }
}

impl<E> From<CallError<E>> for GuardedError<E> {
    #[inline]
    fn from(e: CallError<E>) -> Self {
        match e {
            CallError::Refused(r) => GuardedError::Refused(r),
            CallError::Inner(e) => GuardedError::Inner(e),
        }
    }
}

impl<E: fmt::Display> fmt::Display for GuardedError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuardedError::Refused(r) => r.fmt(f),
            GuardedError::Inner(e) => e.fmt(f),
            GuardedError::Unlisted { address } => write!(
                f,
                "no circuit breaker is listed for address {address:#04x}: transaction not sent"
            ),
            GuardedError::Unrecovered => f.write_str("peripheral still wedged after its recovery step: probe failed"),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for GuardedError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            GuardedError::Refused(r) => Some(r),
            GuardedError::Inner(e) => Some(e),
            GuardedError::Unlisted { .. } | GuardedError::Unrecovered => None,
        }
    }
}

impl<E: i2c::Error> i2c::Error for GuardedError<E> {
    #[inline]
    fn kind(&self) -> i2c::ErrorKind {
        match self {
            GuardedError::Inner(e) => e.kind(),
            GuardedError::Refused(_) | GuardedError::Unlisted { .. } | GuardedError::Unrecovered => {
                i2c::ErrorKind::Other
            }
        }
    }
}

impl<E: spi::Error> spi::Error for GuardedError<E> {
    #[inline]
    fn kind(&self) -> spi::ErrorKind {
        match self {
            GuardedError::Inner(e) => e.kind(),
            GuardedError::Refused(_) | GuardedError::Unlisted { .. } | GuardedError::Unrecovered => {
                spi::ErrorKind::Other
            }
        }
    }
}

impl<E: embedded_io::Error + 'static> embedded_io::Error for GuardedError<E> {
    #[inline]
    fn kind(&self) -> embedded_io::ErrorKind {
        match self {
            GuardedError::Inner(e) => e.kind(),
            GuardedError::Refused(_) | GuardedError::Unlisted { .. } | GuardedError::Unrecovered => {
                embedded_io::ErrorKind::Other
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GuardedError;

    #[test]
    fn only_the_peripherals_own_error_comes_out() {
        assert_eq!(GuardedError::Inner(7u8).into_inner(), Some(7));
        assert_eq!(GuardedError::<u8>::Unrecovered.into_inner(), None);
    }
}
