//! What a failed transaction testifies: verdicts from the HAL's `ErrorKind`, or your own.

use embedded_hal::{i2c, spi};

use crate::Verdict;

/// Gives the [`Verdict`] of a failed transaction's error `E`, for [`Guarded`](crate::Guarded).
///
/// `Kind` names the trait family the error comes from by its error-kind type:
/// [`embedded_hal::i2c::ErrorKind`] for `I2c`, [`embedded_hal::spi::ErrorKind`] for
/// `SpiDevice`, [`embedded_io::ErrorKind`] for serial ports. It only tells the families
/// apart, so that [`ByErrorKind`] can read each family's kinds.
///
/// Any `Fn(&E) -> Verdict` is a classifier for every family; that is the usual way to
/// replace the defaults. Fall back to them with [`ByErrorKind::i2c`] and its siblings:
///
/// ```
/// use breaker_core::{ByErrorKind, Duration, Guarded, Instant, ManualClock, Policy, SharedBreaker, Verdict};
/// use embedded_hal::i2c::{Error as _, ErrorKind, NoAcknowledgeSource};
/// # use embedded_hal_mock::eh1::i2c::Mock;
///
/// static POLICY: Policy = Policy::new(3, Duration::from_secs(5));
/// static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
///
/// /// On this board a NACK of the data means the sensor latched up: only a power cycle
/// /// helps, so it trips at once. Everything else as by default.
/// fn verdict(e: &ErrorKind) -> Verdict {
///     match e.kind() {
///         ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data) => Verdict::Trip,
///         kind => ByErrorKind::i2c(kind),
///     }
/// }
///
/// # let i2c = Mock::new(&[]);
/// let bus = Guarded::new(i2c, &SENSOR, &CLOCK).classify_with(verdict);
/// # bus.into_inner().done();
/// ```
pub trait ClassifyHal<Kind, E: ?Sized> {
    /// What `error` testifies about the device.
    fn verdict(&self, error: &E) -> Verdict;
}

impl<Kind, E: ?Sized, F: Fn(&E) -> Verdict> ClassifyHal<Kind, E> for F {
    #[inline]
    fn verdict(&self, error: &E) -> Verdict {
        self(error)
    }
}

/// The default classifier of [`Guarded`](crate::Guarded): the verdict from the error's
/// `kind()`, by the tables below.
///
/// A failure that might pass is a strike; one that says nothing about the device (the
/// controller's own overrun, the caller's bad request) is neutral; an error that expresses
/// no opinion (`Other`, or a kind added to the HAL later) is a strike, as [`Classify`](crate::Classify)'s
/// default is. Bus errors never prove that no retry can help, so the I2C and SPI tables have
/// no trip verdict: a sensor's own fault flag is the driver's to report, and your
/// classifier's to turn into [`Verdict::Trip`].
///
/// | I2C [`ErrorKind`](embedded_hal::i2c::ErrorKind) | verdict | why |
/// |---|---|---|
/// | `NoAcknowledge(Address)` | strike | the device is absent, asleep or busy: the NACKing sensor a breaker is for |
/// | `NoAcknowledge(Data)`, `NoAcknowledge(Unknown)` | strike | the device refused a byte: busy, or mid-reset |
/// | `Bus` | strike | a misplaced START or STOP: noise, or a device holding SDA |
/// | `ArbitrationLoss` | strike | another controller won the bus; the next try may not lose |
/// | `Overrun` | neutral | the controller's own receive buffer overran: the device did nothing wrong |
/// | `Other`, later kinds | strike | no opinion: suspicious |
///
/// | SPI [`ErrorKind`](embedded_hal::spi::ErrorKind) | verdict | why |
/// |---|---|---|
/// | `Overrun` | neutral | the controller's own receive buffer overran |
/// | `ModeFault` | strike | another device drove the select line: contention on the bus |
/// | `FrameFormat` | strike | a garbled frame on the wire |
/// | `ChipSelectFault` | strike | the select line could not be driven |
/// | `Other`, later kinds | strike | no opinion: suspicious |
///
/// | serial [`ErrorKind`](embedded_io::ErrorKind) | verdict | why |
/// |---|---|---|
/// | `PermissionDenied` | trip | the peer refuses us: no retry helps until something changes |
/// | `TimedOut`, `InvalidData`, `WriteZero`, `BrokenPipe`, `NotConnected`, `ConnectionRefused`, `ConnectionReset`, `ConnectionAborted`, `NotFound`, `AddrNotAvailable` | strike | the peer or the line is failing now; it may come back |
/// | `Interrupted`, `InvalidInput`, `Unsupported`, `OutOfMemory`, `AlreadyExists`, `AddrInUse` | neutral | our own call or our own side: says nothing about the peer |
/// | `Other`, later kinds | strike | no opinion: suspicious |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ByErrorKind;

impl ByErrorKind {
    /// The verdict of an I2C error of this kind (see the table).
    pub const fn i2c(kind: i2c::ErrorKind) -> Verdict {
        match kind {
            i2c::ErrorKind::Overrun => Verdict::Neutral,
            // NoAcknowledge, Bus, ArbitrationLoss, Other and kinds added later.
            _ => Verdict::Strike,
        }
    }

    /// The verdict of an SPI error of this kind (see the table).
    pub const fn spi(kind: spi::ErrorKind) -> Verdict {
        match kind {
            spi::ErrorKind::Overrun => Verdict::Neutral,
            // ModeFault, FrameFormat, ChipSelectFault, Other and kinds added later.
            _ => Verdict::Strike,
        }
    }

    /// The verdict of a serial-port (`embedded-io`) error of this kind (see the table).
    pub const fn io(kind: embedded_io::ErrorKind) -> Verdict {
        use embedded_io::ErrorKind as K;
        match kind {
            K::PermissionDenied => Verdict::Trip,
            K::Interrupted | K::InvalidInput | K::Unsupported | K::OutOfMemory | K::AlreadyExists | K::AddrInUse => {
                Verdict::Neutral
            }
            // TimedOut, InvalidData, WriteZero, the connection kinds, NotFound,
            // AddrNotAvailable, Other and kinds added later.
            _ => Verdict::Strike,
        }
    }
}

impl<E: i2c::Error + ?Sized> ClassifyHal<i2c::ErrorKind, E> for ByErrorKind {
    #[inline]
    fn verdict(&self, error: &E) -> Verdict {
        Self::i2c(error.kind())
    }
}

impl<E: spi::Error + ?Sized> ClassifyHal<spi::ErrorKind, E> for ByErrorKind {
    #[inline]
    fn verdict(&self, error: &E) -> Verdict {
        Self::spi(error.kind())
    }
}

impl<E: embedded_io::Error + ?Sized> ClassifyHal<embedded_io::ErrorKind, E> for ByErrorKind {
    #[inline]
    fn verdict(&self, error: &E) -> Verdict {
        Self::io(error.kind())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i2c_nacks_bus_errors_and_arbitration_losses_are_strikes_an_overrun_is_neutral() {
        use i2c::{ErrorKind as K, NoAcknowledgeSource as N};
        for kind in [
            K::NoAcknowledge(N::Address),
            K::NoAcknowledge(N::Data),
            K::NoAcknowledge(N::Unknown),
            K::Bus,
            K::ArbitrationLoss,
            K::Other,
        ] {
            assert_eq!(ByErrorKind.verdict(&kind), Verdict::Strike, "{kind:?}");
        }
        assert_eq!(ByErrorKind.verdict(&K::Overrun), Verdict::Neutral);
    }

    #[test]
    fn spi_overrun_is_neutral_the_rest_are_strikes() {
        use spi::ErrorKind as K;
        for kind in [K::ModeFault, K::FrameFormat, K::ChipSelectFault, K::Other] {
            assert_eq!(ByErrorKind.verdict(&kind), Verdict::Strike, "{kind:?}");
        }
        assert_eq!(ByErrorKind.verdict(&K::Overrun), Verdict::Neutral);
    }

    #[test]
    fn serial_permission_denied_trips_our_own_mistakes_are_neutral() {
        use embedded_io::ErrorKind as K;
        let strikes = [
            K::Other,
            K::TimedOut,
            K::InvalidData,
            K::WriteZero,
            K::BrokenPipe,
            K::NotConnected,
            K::ConnectionRefused,
            K::ConnectionReset,
            K::ConnectionAborted,
            K::NotFound,
            K::AddrNotAvailable,
        ];
        let neutral = [
            K::Interrupted,
            K::InvalidInput,
            K::Unsupported,
            K::OutOfMemory,
            K::AlreadyExists,
            K::AddrInUse,
        ];
        for kind in strikes {
            assert_eq!(ByErrorKind.verdict(&kind), Verdict::Strike, "{kind:?}");
        }
        for kind in neutral {
            assert_eq!(ByErrorKind.verdict(&kind), Verdict::Neutral, "{kind:?}");
        }
        assert_eq!(ByErrorKind.verdict(&K::PermissionDenied), Verdict::Trip);
    }

    #[test]
    fn a_closure_replaces_the_table() {
        let always_trip = |_: &i2c::ErrorKind| Verdict::Trip;
        assert_eq!(
            ClassifyHal::<i2c::ErrorKind, _>::verdict(&always_trip, &i2c::ErrorKind::Overrun),
            Verdict::Trip
        );
    }
}
