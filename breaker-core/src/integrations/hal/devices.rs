//! One breaker per device on a shared I2C bus: a fixed-size table keyed by 7-bit address,
//! or a keyed table ([`KeyedBreakers`]) whose breakers are created on first use.

use core::borrow::Borrow;
use core::fmt;

use crate::hal::{GuardsPeripheral, PickBreaker};
use crate::{KeyedBreakers, KeyedEntry, Observer, Policy, SharedBreaker, TableKey};

/// One [`SharedBreaker`] per device on a shared I2C bus, keyed by 7-bit address: a fixed
/// table of `N` entries (no heap), built in a `static`.
///
/// Guard the bus with the table (`Guarded::new(i2c, &TABLE, clock)`) and each transaction
/// goes through the breaker of its address: a dead sensor that NACKs trips its own
/// breaker and is refused, while its neighbours on the same bus keep working. Share the
/// guarded bus between drivers as any bus is shared, with `embedded-hal-bus`
/// (`RefCellDevice`, `CriticalSectionDevice`, ...). A transaction to an address the table
/// does not list fails with [`GuardedError::Unlisted`](crate::GuardedError::Unlisted)
/// without reaching the bus (list every device the drivers talk to).
///
/// Each entry is a whole `SharedBreaker`, so each device has its own policy (a slow
/// sensor may get a longer cooldown); they share one observer type. For a bus whose
/// devices are not known in advance, guard it with a [`KeyedBreakers`] table keyed by
/// address instead (`Guarded::new(i2c, &TABLE, clock)` too): any address gets a breaker on
/// first use, in a bounded table, and none is unlisted (see [`PickBreaker`]'s impls). List each in the
/// [registry](crate::registry) with [`register!`](crate::register)'s table form,
/// `register!(TABLE[address], "name", CLOCK)`:
///
/// ```
/// use breaker_core::{registry, DeviceBreakers, Duration, Guarded, GuardedError, Instant, ManualClock, Policy, SharedBreaker};
/// use embedded_hal::i2c::{ErrorKind, I2c, NoAcknowledgeSource};
/// use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
///
/// static POLICY: Policy = Policy::new(2, Duration::from_secs(5));
/// static SENSORS: DeviceBreakers<2> = DeviceBreakers::new([
///     (0x48, SharedBreaker::new(&POLICY)), // a TMP102
///     (0x76, SharedBreaker::new(&POLICY)), // a BME280
/// ]);
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
/// breaker_core::register!(SENSORS[0x48], "i2c1/tmp102", CLOCK);
/// breaker_core::register!(SENSORS[0x76], "i2c1/bme280", CLOCK);
///
/// let nack = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
/// let i2c = Mock::new(&[
///     Transaction::write(0x76, vec![0xF4]).with_error(nack),
///     Transaction::write(0x76, vec![0xF4]).with_error(nack),
///     // 0x76 is refused from here on; 0x48 still reaches the bus.
///     Transaction::write(0x48, vec![0x01]),
/// ]);
/// let mut bus = Guarded::new(i2c, &SENSORS, &CLOCK);
/// assert!(bus.write(0x76, &[0xF4]).is_err());
/// assert!(bus.write(0x76, &[0xF4]).is_err());
/// assert!(matches!(bus.write(0x76, &[0xF4]), Err(GuardedError::Refused(_))));
/// bus.write(0x48, &[0x01]).unwrap();
/// assert_eq!(bus.write(0x1D, &[0x00]), Err(GuardedError::Unlisted { address: 0x1D }));
/// bus.into_inner().done();
///
/// let bme280 = registry::get("i2c1/bme280").unwrap().report();
/// assert_eq!((bme280.counters.failures, bme280.counters.skips, bme280.would_allow), (2, 1, false));
/// assert!(registry::get("i2c1/tmp102").unwrap().would_allow());
/// ```
pub struct DeviceBreakers<const N: usize, O: Observer = ()> {
    devices: [(u8, SharedBreaker<O>); N],
}

/// Why a [`DeviceBreakers`] table was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DeviceTableError {
    /// The address does not fit 7 bits (it is above `0x7f`).
    NotSevenBit {
        /// The address.
        address: u8,
    },
    /// The address is listed twice.
    Duplicate {
        /// The address.
        address: u8,
    },
}

impl DeviceTableError {
    /// What went wrong, as one sentence.
    pub const fn message(self) -> &'static str {
        match self {
            DeviceTableError::NotSevenBit { .. } => "an I2C device address must fit 7 bits (0x00 to 0x7f)",
            DeviceTableError::Duplicate { .. } => "an I2C device address is listed twice",
        }
    }
}

impl fmt::Display for DeviceTableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceTableError::NotSevenBit { address } | DeviceTableError::Duplicate { address } => {
                write!(f, "{}: {address:#04x}", self.message())
            }
        }
    }
}

impl core::error::Error for DeviceTableError {}

impl<const N: usize, O: Observer> DeviceBreakers<N, O> {
    /// A table of `(address, breaker)` entries.
    ///
    /// # Panics
    /// If an address does not fit 7 bits or is listed twice: in a `static`, a compile
    /// error. See [`DeviceBreakers::try_new`] for tables built at run time.
    pub const fn new(devices: [(u8, SharedBreaker<O>); N]) -> Self {
        match check(&devices) {
            Ok(()) => DeviceBreakers { devices },
            // A `const` panic needs a literal message per case to show it at compile time.
            Err(DeviceTableError::NotSevenBit { .. }) => {
                panic!("an I2C device address must fit 7 bits (0x00 to 0x7f)")
            }
            Err(DeviceTableError::Duplicate { .. }) => panic!("an I2C device address is listed twice"),
        }
    }

    /// A table of `(address, breaker)` entries, or why not.
    pub fn try_new(devices: [(u8, SharedBreaker<O>); N]) -> Result<Self, DeviceTableError> {
        check(&devices).map(|()| DeviceBreakers { devices })
    }

    /// The breaker listed for `address`.
    pub fn get(&self, address: u8) -> Option<&SharedBreaker<O>> {
        self.devices.iter().find(|(a, _)| *a == address).map(|(_, b)| b)
    }

    /// The breaker listed for `address`, in a constant expression: what
    /// [`register!`](crate::register)'s table form uses to list it in the registry.
    ///
    /// # Panics
    /// If the table does not list `address`: in a `static`, a compile error. Use
    /// [`DeviceBreakers::get`] at run time.
    pub const fn breaker_of(&self, address: u8) -> &SharedBreaker<O> {
        let mut i = 0;
        while i < N {
            if self.devices[i].0 == address {
                return &self.devices[i].1;
            }
            i += 1;
        }
        panic!("this DeviceBreakers table does not list the address: add it to the table, or name one it lists")
    }

    /// Each listed address with its breaker, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (u8, &SharedBreaker<O>)> {
        self.devices.iter().map(|(a, b)| (*a, b))
    }

    /// The number of devices listed.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether the table lists no device.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }
}

/// Every address fits 7 bits and none is listed twice.
const fn check<O: Observer, const N: usize>(devices: &[(u8, SharedBreaker<O>); N]) -> Result<(), DeviceTableError> {
    let mut i = 0;
    while i < N {
        let address = devices[i].0;
        if address > 0x7f {
            return Err(DeviceTableError::NotSevenBit { address });
        }
        let mut j = 0;
        while j < i {
            if devices[j].0 == address {
                return Err(DeviceTableError::Duplicate { address });
            }
            j += 1;
        }
        i += 1;
    }
    Ok(())
}

impl<const N: usize, O: Observer> GuardsPeripheral for &DeviceBreakers<N, O> {}

impl<'t, const N: usize, O: Observer> PickBreaker<u8> for &'t DeviceBreakers<N, O> {
    type Breaker<'a>
        = &'t SharedBreaker<O>
    where
        Self: 'a;

    #[inline]
    fn pick(&mut self, address: u8) -> Option<&'t SharedBreaker<O>> {
        self.get(address)
    }
}

impl<K: TableKey, const N: usize, O: Observer, P: Borrow<Policy>> GuardsPeripheral for &KeyedBreakers<K, N, O, P> {}

/// A keyed table over a bus: each transaction goes through the entry of its address
/// ([`KeyedBreakers::entry`]), a breaker created on first use, so any address gets one
/// without being listed. `KeyedBreakers<u8, N>` for 7-bit addresses, `KeyedBreakers<u16,
/// N>` for 7- and 10-bit ones. When the table can hold no more (every slot open,
/// half-open or struck), a new address's transactions go ahead uncounted, as the table
/// answers any caller ([`KeyedEntry::is_guarded`] `false`); the addresses it holds keep
/// their breakers.
///
/// ```
/// use breaker_core::{Clock, Duration, Guarded, GuardedError, Instant, KeyedBreakers, ManualClock, Phase, Policy, SharedBreaker};
/// use embedded_hal::i2c::{ErrorKind, I2c, NoAcknowledgeSource};
/// use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
///
/// static POLICY: Policy = Policy::new(2, Duration::from_secs(5));
/// // At most 4 devices' breakers at a time, whichever addresses the drivers use.
/// static I2C1: KeyedBreakers<u8, 4> = KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 4]);
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
///
/// let nack = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
/// let i2c = Mock::new(&[
///     Transaction::write(0x76, vec![0xF4]).with_error(nack),
///     Transaction::write(0x76, vec![0xF4]).with_error(nack),
///     Transaction::write(0x48, vec![0x01]),
/// ]);
/// let mut bus = Guarded::new(i2c, &I2C1, &CLOCK);
/// assert!(bus.write(0x76, &[0xF4]).is_err());
/// assert!(bus.write(0x76, &[0xF4]).is_err());
/// assert!(matches!(bus.write(0x76, &[0xF4]), Err(GuardedError::Refused(_))));
/// bus.write(0x48, &[0x01]).unwrap(); // 0x48's breaker, made now
/// assert_eq!(I2C1.get(0x76).unwrap().phase(CLOCK.now()), Phase::Open);
/// assert_eq!(I2C1.len(), 2);
/// bus.into_inner().done();
/// ```
impl<'t, A, K, const N: usize, O, P> PickBreaker<A> for &'t KeyedBreakers<K, N, O, P>
where
    A: Into<K>,
    K: TableKey,
    O: Observer,
    P: Borrow<Policy>,
{
    type Breaker<'a>
        = KeyedEntry<'t, K, N, O, P>
    where
        Self: 'a;

    #[inline]
    fn pick(&mut self, address: A) -> Option<KeyedEntry<'t, K, N, O, P>> {
        Some(self.entry(address.into()))
    }
}

impl<const N: usize, O: Observer> fmt::Debug for DeviceBreakers<N, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Address(u8);
        impl fmt::Debug for Address {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#04x}", self.0)
            }
        }
        f.debug_map()
            .entries(self.devices.iter().map(|(a, b)| (Address(*a), b)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Duration, Policy};

    static POLICY: Policy = Policy::new(3, Duration::from_secs(1));

    #[test]
    fn a_table_rejects_wide_and_duplicate_addresses() {
        let wide = DeviceBreakers::try_new([(0x48, SharedBreaker::new(&POLICY)), (0x80, SharedBreaker::new(&POLICY))]);
        assert_eq!(wide.unwrap_err(), DeviceTableError::NotSevenBit { address: 0x80 });
        let twice = DeviceBreakers::try_new([(0x48, SharedBreaker::new(&POLICY)), (0x48, SharedBreaker::new(&POLICY))]);
        let err = twice.unwrap_err();
        assert_eq!(err, DeviceTableError::Duplicate { address: 0x48 });
        assert_eq!(std::format!("{err}"), "an I2C device address is listed twice: 0x48");
    }

    #[test]
    fn lookups_find_each_listed_address_and_nothing_else() {
        static TABLE: DeviceBreakers<3> = DeviceBreakers::new([
            (0x00, SharedBreaker::new(&POLICY)),
            (0x48, SharedBreaker::new(&POLICY)),
            (0x7f, SharedBreaker::new(&POLICY)),
        ]);
        static SECOND: &SharedBreaker = TABLE.breaker_of(0x48);
        assert!(core::ptr::eq(TABLE.get(0x48).unwrap(), SECOND));
        assert!(TABLE.get(0x49).is_none());
        let addresses: std::vec::Vec<u8> = TABLE.iter().map(|(a, _)| a).collect();
        assert_eq!(addresses, [0x00, 0x48, 0x7f]);
        assert_eq!((TABLE.len(), TABLE.is_empty()), (3, false));
        assert!(std::format!("{TABLE:?}").starts_with("{0x00: SharedBreaker"));
    }
}
