//! One breaker per device on a shared I2C bus: a fixed-size table keyed by 7-bit address,
//! or a keyed table ([`KeyedBreakers`]) whose breakers are created on first use.

use core::borrow::Borrow;
use core::fmt;

use crate::counts::{CountStore, DefaultCounts};
use crate::hal::{GuardsPeripheral, PickBreaker};
use crate::{KeyedBreakers, KeyedEntry, Observer, Policy, SharedBreaker, TableKey};

/// One [`SharedBreaker`] per device on a shared I2C bus, keyed by 7-bit address: a
/// [`KeyedBreakers`] table whose `N` addresses are listed up front (no heap), built in a
/// `static`. The `i`-th address gets the `i`-th breaker; no address is added and none
/// evicted ([`DeviceBreakers::table`] is the keyed table itself).
///
/// Guard the bus with the table (`Guarded::new(i2c, &TABLE, clock)`) and each transaction
/// goes through the breaker of its address: a dead sensor that NACKs trips its own
/// breaker and is refused, while its neighbours on the same bus keep working. Share the
/// guarded bus between drivers as any bus is shared, with `embedded-hal-bus`
/// (`RefCellDevice`, `CriticalSectionDevice`, ...). A transaction to an address the table
/// does not list fails with [`GuardedError::Unlisted`](crate::GuardedError::Unlisted)
/// without reaching the bus (list every device the drivers talk to).
///
/// Each entry is a whole `SharedBreaker`, so each device may have its own policy (a slow
/// sensor may get a longer cooldown: `[SharedBreaker::new(&FAST), SharedBreaker::new(&SLOW)]`);
/// they share one observer type and one storage of counters ([`crate::counts`]). For a bus whose
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
/// static SENSORS: DeviceBreakers<2> = DeviceBreakers::new(
///     [0x48, 0x76], // a TMP102, a BME280
///     [const { SharedBreaker::new(&POLICY) }; 2],
/// );
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
pub struct DeviceBreakers<const N: usize, O: Observer = (), S = DefaultCounts> {
    /// The listed addresses, in the order given, where a constant expression can read
    /// them ([`DeviceBreakers::breaker_of`]).
    addresses: [u8; N],
    /// The table's slot of each listed address (7-bit addresses: fewer than 256 slots).
    slots: [u8; N],
    /// The keyed table the addresses are listed in.
    table: KeyedBreakers<u8, N, O, &'static Policy, S>,
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

impl<const N: usize, O: Observer, S: CountStore> DeviceBreakers<N, O, S> {
    /// A table listing `addresses`, the `i`-th with the `i`-th of `breakers`: a
    /// [`KeyedBreakers`] table keyed by address, its keys listed up front (none added,
    /// none evicted).
    ///
    /// # Panics
    /// If an address does not fit 7 bits or is listed twice, or the table lists no
    /// address: in a `static`, a compile error. See [`DeviceBreakers::try_new`] for tables
    /// built at run time.
    #[cfg(not(loom))]
    pub const fn new(addresses: [u8; N], breakers: [SharedBreaker<O, &'static Policy, S>; N]) -> Self {
        match check(&addresses) {
            Ok(()) => {
                let (keys, to, slots) = placed(&addresses);
                DeviceBreakers {
                    addresses,
                    slots,
                    table: KeyedBreakers::new(breakers).listing(&keys, to),
                }
            }
            // A `const` panic needs a literal message per case to show it at compile time.
            Err(DeviceTableError::NotSevenBit { .. }) => {
                panic!("an I2C device address must fit 7 bits (0x00 to 0x7f)")
            }
            Err(DeviceTableError::Duplicate { .. }) => panic!("an I2C device address is listed twice"),
        }
    }

    /// [`DeviceBreakers::new`] (not `const` under loom).
    #[cfg(loom)]
    pub fn new(addresses: [u8; N], breakers: [SharedBreaker<O, &'static Policy, S>; N]) -> Self {
        Self::try_new(addresses, breakers).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A table listing `addresses`, the `i`-th with the `i`-th of `breakers`, or why not.
    ///
    /// # Panics
    /// If the table lists no address (`N` is 0).
    pub fn try_new(
        addresses: [u8; N],
        breakers: [SharedBreaker<O, &'static Policy, S>; N],
    ) -> Result<Self, DeviceTableError> {
        check(&addresses)?;
        let (keys, to, slots) = placed(&addresses);
        Ok(DeviceBreakers {
            addresses,
            slots,
            table: KeyedBreakers::new(breakers).listing(&keys, to),
        })
    }

    /// The breaker listed for `address`: a lookup in the keyed table.
    pub fn get(&self, address: u8) -> Option<&SharedBreaker<O, &'static Policy, S>> {
        self.table.get(address)
    }

    /// The breaker listed for `address`, in a constant expression: what
    /// [`register!`](crate::register)'s table form uses to list it in the registry.
    ///
    /// # Panics
    /// If the table does not list `address`: in a `static`, a compile error. Use
    /// [`DeviceBreakers::get`] at run time.
    pub const fn breaker_of(&self, address: u8) -> &SharedBreaker<O, &'static Policy, S> {
        let mut i = 0;
        while i < N {
            if self.addresses[i] == address {
                return self.table.breaker_at(self.slots[i] as usize);
            }
            i += 1;
        }
        panic!("this DeviceBreakers table does not list the address: add it to the table, or name one it lists")
    }

    /// Each listed address with its breaker, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (u8, &SharedBreaker<O, &'static Policy, S>)> {
        (self.addresses.iter().zip(&self.slots)).map(|(a, slot)| (*a, self.table.breaker_at(*slot as usize)))
    }

    /// The keyed table the addresses are listed in: its lookups, entries
    /// ([`KeyedBreakers::try_entry`] answers [`TableError::Unlisted`](crate::TableError::Unlisted)
    /// for an address not listed) and iteration.
    pub const fn table(&self) -> &KeyedBreakers<u8, N, O, &'static Policy, S> {
        &self.table
    }

    /// The number of devices listed.
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether the table lists no device (never: a table lists at least one).
    pub const fn is_empty(&self) -> bool {
        N == 0
    }
}

/// The listed addresses as the keyed table's keys, the slot of each
/// ([`KeyedBreakers::placement`]), and that slot as a byte (fewer than 128 addresses fit 7
/// bits), for the constant lookups of [`DeviceBreakers::breaker_of`].
const fn placed<const N: usize>(addresses: &[u8; N]) -> ([u32; N], [usize; N], [u8; N]) {
    let mut keys = [0; N];
    let mut i = 0;
    while i < N {
        keys[i] = addresses[i] as u32;
        i += 1;
    }
    let to = KeyedBreakers::<u8, N>::placement(&keys);
    let mut slots = [0; N];
    let mut i = 0;
    while i < N {
        slots[i] = to[i] as u8;
        i += 1;
    }
    (keys, to, slots)
}

/// Every address fits 7 bits and none is listed twice.
const fn check<const N: usize>(addresses: &[u8; N]) -> Result<(), DeviceTableError> {
    let mut i = 0;
    while i < N {
        let address = addresses[i];
        if address > 0x7f {
            return Err(DeviceTableError::NotSevenBit { address });
        }
        let mut j = 0;
        while j < i {
            if addresses[j] == address {
                return Err(DeviceTableError::Duplicate { address });
            }
            j += 1;
        }
        i += 1;
    }
    Ok(())
}

impl<const N: usize, O: Observer, S: CountStore> GuardsPeripheral for &DeviceBreakers<N, O, S> {}

impl<'t, const N: usize, O: Observer, S: CountStore> PickBreaker<u8> for &'t DeviceBreakers<N, O, S> {
    type Breaker<'a>
        = &'t SharedBreaker<O, &'static Policy, S>
    where
        Self: 'a;

    #[inline]
    fn pick(&mut self, address: u8) -> Option<&'t SharedBreaker<O, &'static Policy, S>> {
        self.get(address)
    }
}

impl<K: TableKey, const N: usize, O: Observer, P: Borrow<Policy>, S: CountStore> GuardsPeripheral
    for &KeyedBreakers<K, N, O, P, S>
{
}

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
impl<'t, A, K, const N: usize, O, P, S> PickBreaker<A> for &'t KeyedBreakers<K, N, O, P, S>
where
    A: Into<K>,
    K: TableKey,
    O: Observer,
    P: Borrow<Policy>,
    S: CountStore,
{
    type Breaker<'a>
        = KeyedEntry<'t, K, N, O, P, S>
    where
        Self: 'a;

    #[inline]
    fn pick(&mut self, address: A) -> Option<KeyedEntry<'t, K, N, O, P, S>> {
        Some(self.entry(address.into()))
    }
}

impl<const N: usize, O: Observer, S: CountStore> fmt::Debug for DeviceBreakers<N, O, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Address(u8);
        impl fmt::Debug for Address {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#04x}", self.0)
            }
        }
        f.debug_map()
            .entries(self.iter().map(|(a, b)| (Address(a), b)))
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
        let wide = DeviceBreakers::try_new([0x48, 0x80], [const { SharedBreaker::new(&POLICY) }; 2]);
        assert_eq!(wide.unwrap_err(), DeviceTableError::NotSevenBit { address: 0x80 });
        let twice = DeviceBreakers::try_new([0x48, 0x48], [const { SharedBreaker::new(&POLICY) }; 2]);
        let err = twice.unwrap_err();
        assert_eq!(err, DeviceTableError::Duplicate { address: 0x48 });
        assert_eq!(std::format!("{err}"), "an I2C device address is listed twice: 0x48");
    }

    #[test]
    fn lookups_find_each_listed_address_and_nothing_else() {
        static TABLE: DeviceBreakers<3> =
            DeviceBreakers::new([0x00, 0x48, 0x7f], [const { SharedBreaker::new(&POLICY) }; 3]);
        static SECOND: &SharedBreaker = TABLE.breaker_of(0x48);
        assert!(core::ptr::eq(TABLE.get(0x48).unwrap(), SECOND));
        assert!(TABLE.get(0x49).is_none());
        let addresses: std::vec::Vec<u8> = TABLE.iter().map(|(a, _)| a).collect();
        assert_eq!(addresses, [0x00, 0x48, 0x7f]);
        assert_eq!((TABLE.len(), TABLE.is_empty()), (3, false));
        assert!(std::format!("{TABLE:?}").starts_with("{0x00: SharedBreaker"));
        // A keyed table whose keys were listed: it creates no entry for another address.
        assert!(TABLE.table().is_listed());
        assert_eq!(TABLE.table().len(), 3);
        assert!(core::ptr::eq(
            TABLE.table().try_entry(0x48).unwrap().breaker().unwrap(),
            SECOND
        ));
        assert_eq!(TABLE.table().try_entry(0x49).unwrap_err(), crate::TableError::Unlisted);
        assert!(!TABLE.table().entry(0x49).is_guarded());
    }

    #[test]
    fn each_address_gets_the_breaker_listed_with_it_wherever_its_slot_is() {
        // Sixteen addresses in sixteen slots, homes colliding, each with a policy of its
        // own (trip = its index + 1): every lookup finds its own breaker.
        static POLICIES: [Policy; 16] = {
            let mut p = [Policy::new(1, Duration::from_secs(1)); 16];
            let mut i = 0;
            while i < 16 {
                p[i] = Policy::new(i as u32 + 1, Duration::from_secs(1));
                i += 1;
            }
            p
        };
        const ADDRESSES: [u8; 16] = [
            0x08, 0x10, 0x18, 0x20, 0x28, 0x30, 0x38, 0x40, 0x48, 0x49, 0x4A, 0x4B, 0x50, 0x68, 0x76, 0x77,
        ];
        static TABLE: DeviceBreakers<16> = DeviceBreakers::new(ADDRESSES, {
            let mut b = [const { SharedBreaker::new(&POLICIES[0]) }; 16];
            let mut i = 1;
            while i < 16 {
                b[i] = SharedBreaker::new(&POLICIES[i]);
                i += 1;
            }
            b
        });
        for (i, address) in ADDRESSES.into_iter().enumerate() {
            let want = i as u32 + 1;
            assert_eq!(TABLE.get(address).unwrap().policy().trip(), want, "{address:#04x}");
            assert_eq!(TABLE.breaker_of(address).policy().trip(), want, "{address:#04x}");
            let entry = TABLE.table().try_entry(address).unwrap();
            assert_eq!(entry.breaker().unwrap().policy().trip(), want, "{address:#04x}");
        }
        let listed: std::vec::Vec<(u8, u32)> = TABLE.iter().map(|(a, b)| (a, b.policy().trip())).collect();
        assert_eq!(
            listed,
            ADDRESSES
                .iter()
                .zip(1..)
                .map(|(a, t)| (*a, t))
                .collect::<std::vec::Vec<_>>()
        );
        // The slots are the keys' homes (or the next free), as a lookup scans: a table of
        // 16 addresses has each within a few slots of its home.
        assert_eq!(TABLE.table().len(), 16);
    }

    #[test]
    fn no_listed_address_is_ever_evicted() {
        use crate::{Clock, Instant, ManualClock, Phase};
        static TABLE: DeviceBreakers<2> = DeviceBreakers::new([0x48, 0x76], [const { SharedBreaker::new(&POLICY) }; 2]);
        let clock = ManualClock::new(Instant::ZERO);
        // Both closed and idle (what an eviction takes), and a churn of other addresses:
        // none takes a listed slot, and each listed address keeps its breaker.
        let before: std::vec::Vec<*const SharedBreaker> = TABLE.iter().map(|(_, b)| b as *const _).collect();
        for address in 0..=0x7f {
            let entry = TABLE.table().entry(address);
            assert_eq!(entry.is_guarded(), address == 0x48 || address == 0x76, "{address:#04x}");
        }
        assert_eq!(TABLE.table().evictions(), 0);
        let after: std::vec::Vec<*const SharedBreaker> = TABLE.iter().map(|(_, b)| b as *const _).collect();
        assert_eq!(before, after);
        for (address, breaker) in TABLE.iter() {
            assert!(core::ptr::eq(TABLE.get(address).unwrap(), breaker));
            assert_eq!(breaker.phase(clock.now()), Phase::Closed);
        }
    }
}
