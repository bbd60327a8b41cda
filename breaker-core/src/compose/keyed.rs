//! Breakers per key in bounded memory: one breaker per upstream host, tenant or bus
//! address, created on first use, in a table whose capacity never grows.
//!
//! - [`KeyedBreakers`]: `no_std`, no heap, a fixed capacity `N` (a const generic), keys
//!   that fit 32 bits ([`TableKey`]: `u8`, `u16`, `u32`, `Ipv4Addr`), built in a `static`.
//!   Lookups are lock-free and never wait, so an interrupt handler may use the table.
//! - [`KeyedBreakerMap`] (feature `std`): string keys (a host name, a tenant), a capacity
//!   chosen at run time.
//!
//! Each lookup hands out an entry ([`KeyedEntry`], [`MapEntry`]) that implements
//! [`CircuitBreaker`], so every composite (the retry ladder, the quota guard, the tower
//! layer, `Guarded` with the `embedded-hal` feature) works over it, and `tower::KeyedLayer`
//! (feature `tower`) puts a table in a tower stack.
//!
//! ```
//! use breaker_core::keyed::KeyedBreakers;
//! use breaker_core::{CircuitBreaker, Clock, Duration, Instant, ManualClock, Outcome, Phase, Policy, SharedBreaker};
//!
//! static POLICY: Policy = Policy::new(2, Duration::from_secs(30));
//! // One breaker per tenant id, for at most 8 tenants at a time.
//! static TENANTS: KeyedBreakers<u32, 8> = KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 8]);
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//!
//! for _ in 0..2 {
//!     let mut tenant = TENANTS.entry(41);
//!     tenant.attempt(&CLOCK).unwrap().record(Outcome::STRIKE);
//! }
//! // Tenant 41 is refused; tenant 42 gets a breaker of its own on first use.
//! assert!(TENANTS.entry(41).attempt(&CLOCK).is_err());
//! assert!(TENANTS.entry(42).attempt(&CLOCK).is_ok());
//! assert_eq!(TENANTS.get(41).unwrap().phase(CLOCK.now()), Phase::Open);
//! assert_eq!(TENANTS.len(), 2);
//! ```
//!
//! # When the table is full
//!
//! A key sits in its *neighbourhood*: the slot its hash names (its home slot) and the 31
//! after it, round the table (a table of fewer than 32 slots: all of them). A key seen for
//! the first time takes the first free slot there. With none free there, it takes the slot
//! of an entry there that is **closed and idle**, and only such a one:
//!
//! - *closed* with no strikes pending (a windowed breaker: closed, its window is
//!   dropped). An open or half-open entry is never evicted: a fresh breaker in its place
//!   would let the herd loose on an upstream that is down. Nor is one with strikes.
//! - *idle*: [`KeyedBreakers`] sweeps the neighbourhood from the home slot in
//!   second-chance order (the "clock" approximation of least recently used): each slot
//!   carries a "used" mark, set by every lookup of its key; the sweep clears a set mark
//!   and passes on, and evicts the first closed entry whose mark is clear, so an entry
//!   looked up since a sweep last passed it is kept; a second turn takes any closed entry.
//!   [`KeyedBreakerMap`] evicts exactly the least recently looked-up closed entry that no
//!   handle holds (no call in flight).
//!
//! So a table churned by many more keys than it holds keeps every key within 32 slots of
//! its home: a lookup never looks at more, a hit or a miss, however long the table has
//! run. The price: a key whose neighbourhood holds 32 entries that may not be evicted is
//! refused a breaker even if other slots are free. In a table at most half full of keys
//! hashed at random this does not happen in practice (nearly all keys sit within four
//! slots of their home slot); size a table at twice the keys it should hold at once.
//!
//! When no entry can be evicted, the table **refuses to create** one: the lookup answers
//! [`TableError::Full`] through [`KeyedBreakers::try_entry`], and
//! [`KeyedBreakers::entry`] hands out an *unguarded* entry instead, through which calls
//! go ahead uncounted, as they would through a fresh (closed) breaker, with
//! [`KeyedEntry::is_guarded`] `false`. The keys already held, the open ones above all,
//! keep their breakers. [`KeyedBreakers`] answers [`TableError::Busy`] (or an unguarded
//! entry) in the one other case where it does not wait: the key is being placed by an
//! eviction on another thread or in an interrupted context, at that moment.
//!
//! A new entry starts closed with zeroed counters. An outcome reported for an entry
//! evicted since its call was let through is dropped, and never changes the state of the
//! key that took the slot; one reported in the very instant of the eviction may still show
//! in that key's failure counter.
//!
//! # Cost
//!
//! A lookup hashes the key to a home slot and scans from there, over 32 slots at most: a
//! hit costs a load and a compare per slot scanned (one, when the table is far from full;
//! the first four are looked at inline, the rest out of line), and the mark's load;
//! a call through an entry ([`CircuitBreaker::call`]) does one load and compare of the
//! slot's word more than a call through a lone [`SharedBreaker`], closed or refused while
//! open (two for a probe, a counted call, and a call through
//! [`CircuitBreaker::attempt`], which check the slot after the gate and at the report),
//! beside the entry's own test of being unguarded and the registers the caller's loop
//! keeps for it. Evictions are serialised by a flag taken with one compare-and-swap
//! (never waited for: a second evictor answers [`TableError::Busy`]). `bench/README.md`
//! has the instructions of a closed call and of a refusal through a half-full table of
//! 1,024 slots, and through a churned one, beside a lone breaker's.
//!
//! # Memory
//!
//! A [`KeyedBreakers`] is its slots and nothing else: per key a slot word (8 bytes), a use
//! mark (4) and a breaker, whose counters live where its third parameter says
//! ([`crate::counts`]). Fill a large table with [`SharedBreaker::lean`] breakers, which
//! keep the first five counters (failures, skips, trips, probes, lease expiries): 52 bytes
//! per key on x86-64, 52 KiB for 1,024 keys. The default storage keeps all sixteen
//! (100 bytes per key).
//!
//! ```
//! use breaker_core::counts::Lean;
//! use breaker_core::keyed::KeyedBreakers;
//! use breaker_core::{Duration, Policy, SharedBreaker};
//!
//! static POLICY: Policy = Policy::new(5, Duration::from_secs(10));
//! static HOSTS: KeyedBreakers<u32, 1024, (), &Policy, Lean> =
//!     KeyedBreakers::new([const { SharedBreaker::lean(&POLICY) }; 1024]);
//! # #[cfg(target_pointer_width = "64")]
//! assert_eq!(size_of_val(&HOSTS) / 1024, 52);
//! ```

use core::borrow::Borrow;
use core::fmt;
use core::marker::PhantomData;

use crate::atomic::{AtomicU32, AtomicU64, Ordering};
use crate::counts::{CountStore, DefaultCounts};
use crate::layout::{Core, Ticket};
use crate::{
    CallError, CallTicket, CircuitBreaker, Clock, Counters, Duration, Observer, Outcome, Policy, Reason, Refused,
    SharedBreaker, State, Verdict,
};

/// A key of a [`KeyedBreakers`] table: anything that converts to 32 bits and back without
/// loss (a bus address, a tenant id, an IPv4 address). A wider key (a host name) goes in a
/// [`KeyedBreakerMap`], or is hashed by the caller to 32 bits (keys that collide then share
/// a breaker).
pub trait TableKey: Copy + Eq {
    /// The key as 32 bits.
    fn to_bits(self) -> u32;
    /// The key `bits` came from ([`TableKey::to_bits`]).
    fn from_bits(bits: u32) -> Self;
}

macro_rules! table_key {
    ($($t:ty),*) => {$(
        impl TableKey for $t {
            #[inline(always)]
            fn to_bits(self) -> u32 {
                u32::from(self)
            }
            #[inline(always)]
            fn from_bits(bits: u32) -> Self {
                // Only ever given the bits of a key of this type.
                bits as $t
            }
        }
    )*};
}
table_key!(u8, u16, u32);

impl TableKey for core::net::Ipv4Addr {
    #[inline(always)]
    fn to_bits(self) -> u32 {
        u32::from(self)
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        core::net::Ipv4Addr::from(bits)
    }
}

/// Why a keyed table handed out no breaker for a key (see [the module
/// documentation](self#when-the-table-is-full)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum TableError {
    /// Every slot holds an entry that may not be evicted (open, half-open, with strikes
    /// pending, or in use).
    Full,
    /// Another caller is evicting an entry at this moment (perhaps for this very key):
    /// the table does not wait for it.
    Busy,
    /// The table lists its keys up front (a `DeviceBreakers` table, feature
    /// `embedded-hal`) and not this one: it creates no entry for a key it does not list.
    Unlisted,
}

impl TableError {
    /// What went wrong, as one sentence.
    pub const fn message(self) -> &'static str {
        match self {
            TableError::Full => "keyed breaker table full: every entry is open, half-open, struck or in use",
            TableError::Busy => "keyed breaker table busy: another caller is evicting an entry",
            TableError::Unlisted => "keyed breaker table of listed keys: this key is not listed",
        }
    }
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl core::error::Error for TableError {}

/// A table of breakers keyed by the caller: what `tower::KeyedLayer` (feature `tower`)
/// takes. Implemented by `&KeyedBreakers` (keys of its [`TableKey`] type) and by
/// `&KeyedBreakerMap` and `Arc<KeyedBreakerMap>` (any `AsRef<str>` key).
pub trait KeyedTable<Q: ?Sized> {
    /// What a lookup hands out: a breaker handle, possibly unguarded.
    type Entry: CircuitBreaker + Clone;

    /// The entry of `key`, created on first use; an unguarded entry when the table can
    /// hold no more.
    fn entry(&self, key: &Q) -> Self::Entry;
}

// ---- the fixed table ----------------------------------------------------------------

/// A slot's word: the key in the low half (compared in one instruction, without a shift),
/// the state in bits 32 and 33 and a version (bumped on every eviction) above them. Zero:
/// empty, never used.
const EMPTY: u64 = 0;
const READY: u64 = 1 << 32;
const PLACING: u64 = 2 << 32;
const STATE_MASK: u64 = 0b11 << 32;
const VERSION_ONE: u64 = 1 << 34;
const KEY_AND_STATE: u64 = 0xFFFF_FFFF | STATE_MASK;
/// The slot index of an unguarded entry.
const UNGUARDED: u32 = u32::MAX;
/// How many slots, from its home slot on, a key may sit in (a table of fewer slots: all of
/// them): a lookup looks at no more, and a new key evicts among these.
const NEIGHBOURHOOD: usize = 32;
/// How many slots of a key's neighbourhood a lookup looks at inline, before it calls the
/// rest of the scan: in a table half full of keys hashed at random, 97 % of the keys sit
/// within four slots of their home slot (75 % in it).
const INLINE_PROBES: usize = 4;

#[inline(always)]
const fn word_of(key: u32, version_bits: u64, state: u64) -> u64 {
    (version_bits & !KEY_AND_STATE) | state | key as u64
}

#[inline(always)]
const fn key_of(w: u64) -> u32 {
    w as u32
}

/// Whether a slot's word `w` holds `key`, ready: one compare of the word's low half and
/// one bit test. (An empty slot's word is zero, so key 0 matches its low half too: the
/// state says which.)
#[inline(always)]
const fn holds(w: u64, key: u32) -> bool {
    key_of(w) == key && w & READY != 0
}

/// Where a lookup found (or placed) its key: the slot and the slot's word, or no slot
/// ([`UNGUARDED`]) with a word of the key and the [`TableError`] in the state's place. Two
/// words, handed back in registers where a `Result` of the same would go through memory.
#[derive(Clone, Copy)]
struct Place {
    slot: u32,
    word: u64,
}

impl Place {
    #[inline(always)]
    const fn found(i: usize, word: u64) -> Self {
        Place { slot: i as u32, word }
    }

    #[inline(always)]
    const fn failed(why: TableError, key: u32) -> Self {
        Place {
            slot: UNGUARDED,
            word: (why as u64) << 32 | key as u64,
        }
    }

    /// Why there is no slot (`None`: there is one).
    #[inline(always)]
    const fn error(self) -> Option<TableError> {
        if self.slot != UNGUARDED {
            return None;
        }
        let why = self.word >> 32;
        Some(if why == TableError::Full as u64 {
            TableError::Full
        } else if why == TableError::Busy as u64 {
            TableError::Busy
        } else {
            TableError::Unlisted
        })
    }
}

/// One [`SharedBreaker`] per key, created on first use, in a table of `N` slots that
/// lives in a `static` (no heap; see [the module documentation](self) for eviction and the
/// answer of a full table).
///
/// The breakers are given to [`KeyedBreakers::new`], one per slot (`[const {
/// SharedBreaker::new(&POLICY) }; N]`), so each slot may have its own policy and a table
/// of windowed breakers is as easy; they share one observer type. A slot's breaker serves
/// one key after another: read a key's breaker through the table ([`KeyedBreakers::get`],
/// [`KeyedBreakers::iter`]), not through a reference kept from an earlier lookup.
pub struct KeyedBreakers<K: TableKey, const N: usize, O: Observer = (), P = &'static Policy, S = DefaultCounts> {
    /// Each slot's word (key, version, state): together, for a scan that stays on few
    /// cache lines.
    slots: [AtomicU64; N],
    /// Each slot's "used" mark: set by lookups, cleared by the eviction sweep.
    used: [AtomicU32; N],
    breakers: [SharedBreaker<O, P, S>; N],
    /// Held (1) while one caller evicts.
    evicting: AtomicU32,
    evictions: AtomicU32,
    /// The keys were listed up front ([`KeyedBreakers::listing`]): no key is added and
    /// none evicted.
    listed: bool,
    _key: PhantomData<fn(K) -> K>,
}

macro_rules! keyed_init {
    ($breakers:expr, $atomics:ident) => {
        KeyedBreakers {
            slots: $atomics!(AtomicU64),
            used: $atomics!(AtomicU32),
            breakers: $breakers,
            evicting: AtomicU32::new(0),
            evictions: AtomicU32::new(0),
            listed: false,
            _key: PhantomData,
        }
    };
}

#[cfg(not(loom))]
macro_rules! const_atomics {
    ($t:ident) => {
        [const { $t::new(0) }; N]
    };
}

#[cfg(loom)]
macro_rules! loom_atomics {
    ($t:ident) => {
        core::array::from_fn(|_| $t::new(0))
    };
}

/// `KeyedBreakers::listing`, `const` but under loom (whose atomics are not made in
/// `const`).
macro_rules! listing_fn {
    (#[$cfg:meta] $($const:ident)?) => {
        /// This table with its keys listed up front, each with the breaker given to
        /// [`KeyedBreakers::new`] at the same index, in the slot `to` gives it (what
        /// [`KeyedBreakers::placement`] gives it: its home slot, or the first free one
        /// after it, as a lookup scans): a closed list. A lookup of a listed key finds it
        /// as any key is found; a key not listed gets no entry ([`TableError::Unlisted`]),
        /// and no listed key is ever evicted. What a `DeviceBreakers` table (feature
        /// `embedded-hal`) is. The caller checked that no
        /// key is listed twice.
        #[$cfg]
        #[cfg_attr(not(feature = "embedded-hal"), allow(dead_code))] // DeviceBreakers' only
        pub(crate) $($const)? fn listing(mut self, keys: &[u32; N], mut to: [usize; N]) -> Self {
            let mut i = 0;
            while i < N {
                self.slots[to[i]] = AtomicU64::new(word_of(keys[i], 0, READY));
                i += 1;
            }
            // Each breaker to its key's slot: follow each cycle of the permutation, one
            // swap putting one breaker in place.
            let mut i = 0;
            while i < N {
                while to[i] != i {
                    let j = to[i];
                    self.breakers.swap(i, j);
                    to.swap(i, j);
                }
                i += 1;
            }
            self.listed = true;
            self
        }
    };
}

impl<K: TableKey, const N: usize, O: Observer, P: Borrow<Policy>, S: CountStore> KeyedBreakers<K, N, O, P, S> {
    /// A table of `N` slots, all free, with `breakers` (all closed and unused), one per
    /// slot.
    ///
    /// # Panics
    /// If `N` is 0 or above 65,536: in a `static`, a compile error.
    #[cfg(not(loom))]
    pub const fn new(breakers: [SharedBreaker<O, P, S>; N]) -> Self {
        assert!(N > 0 && N <= 1 << 16, "a keyed breaker table holds 1 to 65536 slots");
        keyed_init!(breakers, const_atomics)
    }

    /// [`KeyedBreakers::new`] (not `const` under loom).
    #[cfg(loom)]
    pub fn new(breakers: [SharedBreaker<O, P, S>; N]) -> Self {
        assert!(N > 0 && N <= 1 << 16, "a keyed breaker table holds 1 to 65536 slots");
        keyed_init!(breakers, loom_atomics)
    }

    listing_fn!(#[cfg(not(loom))] const);
    listing_fn!(#[cfg(loom)]);

    /// The slot of each of `keys` listed in a table of `N` slots, in order: its home slot,
    /// or the first one after it (round the table) that no earlier key took.
    #[cfg_attr(not(feature = "embedded-hal"), allow(dead_code))] // DeviceBreakers' only
    pub(crate) const fn placement(keys: &[u32; N]) -> [usize; N] {
        let mut taken = [false; N];
        let mut to = [0; N];
        let mut i = 0;
        while i < N {
            let mut slot = Self::home(keys[i]);
            while taken[slot] {
                slot = if slot + 1 == N { 0 } else { slot + 1 };
            }
            taken[slot] = true;
            to[i] = slot;
            i += 1;
        }
        to
    }

    /// The breaker of slot `i`, in a constant expression (a listed table's `i`-th key's).
    #[cfg_attr(not(feature = "embedded-hal"), allow(dead_code))] // DeviceBreakers' only
    pub(crate) const fn breaker_at(&self, i: usize) -> &SharedBreaker<O, P, S> {
        &self.breakers[i]
    }

    /// Whether the keys were listed up front (a `DeviceBreakers` table, feature
    /// `embedded-hal`): no key is then added, and none evicted.
    pub const fn is_listed(&self) -> bool {
        self.listed
    }

    /// The slot a key's scan starts at (a multiplicative hash, mapped onto `0..N`).
    #[inline(always)]
    const fn home(key: u32) -> usize {
        ((key.wrapping_mul(0x9E37_79B9) as u64 * N as u64) >> 32) as usize
    }

    /// The entry of `key`: its breaker, created on first use; an unguarded entry (calls go
    /// ahead uncounted) when the table can hold no more or is busy placing it (see [the
    /// module documentation](self#when-the-table-is-full)). Marks the entry used.
    #[inline]
    pub fn entry(&self, key: K) -> KeyedEntry<'_, K, N, O, P, S> {
        let Place { slot, word } = self.find_or_claim(key.to_bits());
        KeyedEntry {
            table: self,
            slot,
            word,
            _key: PhantomData,
        }
    }

    /// The entry of `key`, created on first use, or why there is none: the table is
    /// [full](TableError::Full) of entries that may not be evicted, or
    /// [busy](TableError::Busy) evicting one for another caller. Marks the entry used.
    #[inline]
    pub fn try_entry(&self, key: K) -> Result<KeyedEntry<'_, K, N, O, P, S>, TableError> {
        let place = self.find_or_claim(key.to_bits());
        match place.error() {
            Some(why) => Err(why),
            None => Ok(KeyedEntry {
                table: self,
                slot: place.slot,
                word: place.word,
                _key: PhantomData,
            }),
        }
    }

    /// Marks slot `i` used: a load, and a store only when the sweep cleared it.
    #[inline(always)]
    fn touch(&self, i: usize) {
        if self.used[i].load(Ordering::Relaxed) == 0 {
            self.used[i].store(1, Ordering::Relaxed);
        }
    }

    /// The slot holding `key` (and its word), taking a free one on first use, evicting
    /// when none is free. The first [`INLINE_PROBES`] slots of the key's neighbourhood are
    /// looked at here, inline; the rest of the scan is out of line.
    #[inline]
    fn find_or_claim(&self, key: u32) -> Place {
        let mut i = Self::home(key);
        for _ in 0..if N < INLINE_PROBES { N } else { INLINE_PROBES } {
            let w = self.slots[i].load(Ordering::Acquire);
            if holds(w, key) {
                self.touch(i);
                return Place::found(i, w);
            }
            if key_of(w) == key || w == EMPTY {
                return self.scan_from(i, key);
            }
            i = Self::next(i);
        }
        self.scan_from(i, key)
    }

    /// How many slots from its home on a key may sit in: [`NEIGHBOURHOOD`], or the whole
    /// table when smaller or [listed](KeyedBreakers::is_listed) (a listed key sits where
    /// [`KeyedBreakers::placement`] put it).
    #[inline(always)]
    fn reach(&self) -> usize {
        if self.listed || N < NEIGHBOURHOOD {
            N
        } else {
            NEIGHBOURHOOD
        }
    }

    /// The scan's next slot, round the table (a mask when `N` is a power of two).
    #[inline(always)]
    const fn next(i: usize) -> usize {
        if N.is_power_of_two() {
            (i + 1) & (N - 1)
        } else if i + 1 == N {
            0
        } else {
            i + 1
        }
    }

    /// The scan for `key` from slot `i` of its neighbourhood on, to the neighbourhood's end:
    /// the key's slot when it holds it; else the first free slot, taken with one
    /// compare-and-swap (its breaker is fresh: nothing to reset; slots never become free
    /// again, so every caller scanning for this key meets this slot first; a caller that
    /// loses it to another key scans on); [busy](TableError::Busy) when an eviction is
    /// placing the key; when no slot of the neighbourhood is free, an eviction there.
    #[inline(never)]
    fn scan_from(&self, mut i: usize, key: u32) -> Place {
        let ready = word_of(key, 0, READY);
        // The slots of the neighbourhood before `i` (none when the inline lookup went round
        // a table of up to four slots: they are looked at again).
        let mut done = (i + N - Self::home(key)) % N;
        while done < self.reach() {
            let w = self.slots[i].load(Ordering::Acquire);
            if holds(w, key) {
                self.touch(i);
                return Place::found(i, w);
            }
            if w == EMPTY {
                match self.slots[i].compare_exchange(EMPTY, ready, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => {
                        self.touch(i);
                        return Place::found(i, ready);
                    }
                    Err(_) => continue, // taken meanwhile: look at its word again
                }
            }
            if key_of(w) == key {
                return Place::failed(TableError::Busy, key); // being placed by an eviction
            }
            i = Self::next(i);
            done += 1;
        }
        self.evict_for(key)
    }

    /// Every slot of the key's neighbourhood is taken and none holds `key`: evicts a
    /// closed, idle entry there for it.
    #[cold]
    #[inline(never)]
    fn evict_for(&self, key: u32) -> Place {
        if self.listed {
            return Place::failed(TableError::Unlisted, key);
        }
        if self
            .evicting
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Place::failed(TableError::Busy, key);
        }
        let placed = self.evict_locked(key);
        self.evicting.store(0, Ordering::Release);
        placed
    }

    fn evict_locked(&self, key: u32) -> Place {
        let (home, reach) = (Self::home(key), self.reach());
        // Placed by another evictor since this caller's scan? (Evictions are serialised by
        // the flag, so this look is the last word: no key is placed twice.)
        let mut i = home;
        for _ in 0..reach {
            let w = self.slots[i].load(Ordering::Acquire);
            if holds(w, key) {
                self.touch(i);
                return Place::found(i, w);
            }
            i = Self::next(i);
        }
        // Two turns of the sweep over the neighbourhood, from the home slot: the first
        // clears every mark it passes, so the second finds any closed entry there is.
        for _turn in 0..2 {
            let mut next = home;
            for _ in 0..reach {
                let i = next;
                next = Self::next(i);
                if let Some(place) = self.evict_at(i, key) {
                    return place;
                }
            }
        }
        Place::failed(TableError::Full, key)
    }

    /// One step of the eviction's sweep, at slot `i`: clears its mark if set; else, if its
    /// entry is closed and idle, gives its slot to `key`.
    fn evict_at(&self, i: usize, key: u32) -> Option<Place> {
        let w = self.slots[i].load(Ordering::Acquire);
        if w & STATE_MASK != READY {
            return None;
        }
        if self.used[i].load(Ordering::Relaxed) != 0 {
            self.used[i].store(0, Ordering::Relaxed);
            return None;
        }
        let breaker = &self.breakers[i];
        let state = breaker.word_cell().load(Ordering::Acquire);
        if !Core::is_idle(state) {
            return None; // open, half-open, or strikes pending: never evicted
        }
        // Claim the slot for the new key, then reset its breaker (one compare-and-swap
        // from the idle word seen: a call of the old key reported meanwhile keeps it).
        // A caller holding the old key's entry sees the slot's word change and looks
        // its key up again; a lookup of the new key meets "placing" and does not wait.
        let version = (w & !KEY_AND_STATE).wrapping_add(VERSION_ONE);
        let placing = word_of(key, version, PLACING);
        if self.slots[i]
            .compare_exchange(w, placing, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return None;
        }
        if !breaker.recycle(state) {
            self.slots[i].store(w, Ordering::Release);
            return None;
        }
        let ready = word_of(key, version, READY);
        self.slots[i].store(ready, Ordering::Release);
        self.used[i].store(1, Ordering::Relaxed);
        self.evictions.fetch_add(1, Ordering::Relaxed);
        Some(Place::found(i, ready))
    }

    /// The breaker holding `key` now, if any: no entry is created, and the entry is not
    /// marked used. For reading (a health endpoint); calls go through
    /// [`KeyedBreakers::entry`].
    pub fn get(&self, key: K) -> Option<&SharedBreaker<O, P, S>> {
        self.slot_of(key.to_bits()).map(|i| &self.breakers[i])
    }

    fn slot_of(&self, key: u32) -> Option<usize> {
        let mut i = Self::home(key);
        for _ in 0..self.reach() {
            let w = self.slots[i].load(Ordering::Acquire);
            if w == EMPTY {
                return None;
            }
            if holds(w, key) {
                return Some(i);
            }
            i = Self::next(i);
        }
        None
    }

    /// Each key the table holds, with its breaker, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &SharedBreaker<O, P, S>)> {
        self.slots.iter().zip(&self.breakers).filter_map(|(slot, breaker)| {
            let w = slot.load(Ordering::Acquire);
            (w & STATE_MASK == READY).then(|| (K::from_bits(key_of(w)), breaker))
        })
    }

    /// The number of keys the table holds.
    pub fn len(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.load(Ordering::Acquire) & STATE_MASK == READY)
            .count()
    }

    /// Whether the table holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of slots, `N`.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// How many entries have been evicted to make room (wrapping after `u32::MAX`).
    pub fn evictions(&self) -> u32 {
        self.evictions.load(Ordering::Relaxed)
    }
}

impl<K: TableKey + fmt::Debug, const N: usize, O: Observer, P: Borrow<Policy>, S: CountStore> fmt::Debug
    for KeyedBreakers<K, N, O, P, S>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'t, K: TableKey, const N: usize, O: Observer, P: Borrow<Policy>, S: CountStore> KeyedTable<K>
    for &'t KeyedBreakers<K, N, O, P, S>
{
    type Entry = KeyedEntry<'t, K, N, O, P, S>;

    #[inline]
    fn entry(&self, key: &K) -> KeyedEntry<'t, K, N, O, P, S> {
        KeyedBreakers::entry(*self, *key)
    }
}

/// A key's entry in a [`KeyedBreakers`] table: a [`CircuitBreaker`] handle to the key's
/// breaker (`Copy`), or an unguarded one through which calls go ahead uncounted (the table
/// could hold no more: see [the module documentation](self#when-the-table-is-full)).
///
/// Look the entry up for each call (or each burst of calls): an entry kept while its key is
/// evicted (only possible once it is closed and idle) looks its key up again at its next
/// call.
pub struct KeyedEntry<'t, K: TableKey, const N: usize, O: Observer = (), P = &'static Policy, S = DefaultCounts> {
    table: &'t KeyedBreakers<K, N, O, P, S>,
    slot: u32,
    /// The slot's word when the key was found (any change means the key was evicted), its
    /// low half the key; for an unguarded entry, the key and why it is unguarded.
    word: u64,
    _key: PhantomData<fn(K) -> K>,
}

impl<K: TableKey, const N: usize, O: Observer, P, S> Clone for KeyedEntry<'_, K, N, O, P, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: TableKey, const N: usize, O: Observer, P, S> Copy for KeyedEntry<'_, K, N, O, P, S> {}

impl<K: TableKey + fmt::Debug, const N: usize, O: Observer, P, S> fmt::Debug for KeyedEntry<'_, K, N, O, P, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedEntry")
            .field("key", &K::from_bits(key_of(self.word)))
            .field("guarded", &(self.slot != UNGUARDED))
            .finish()
    }
}

impl<'t, K: TableKey, const N: usize, O: Observer, P: Borrow<Policy>, S: CountStore> KeyedEntry<'t, K, N, O, P, S> {
    /// The key.
    pub fn key(&self) -> K {
        K::from_bits(key_of(self.word))
    }

    /// Whether calls go through a breaker of the key's own (`false`: the table could hold
    /// no more, and calls go ahead uncounted).
    pub fn is_guarded(&self) -> bool {
        self.slot != UNGUARDED
    }

    /// The key's breaker, while the key holds its slot (`None` for an unguarded entry, or
    /// once the key was evicted).
    pub fn breaker(&self) -> Option<&'t SharedBreaker<O, P, S>> {
        self.current().map(|i| &self.table.breakers[i])
    }

    /// The slot, if the key still holds it.
    #[inline(always)]
    fn current(&self) -> Option<usize> {
        let i = self.slot as usize;
        (self.slot != UNGUARDED && self.table.slots[i].load(Ordering::Acquire) == self.word).then_some(i)
    }

    /// [`CircuitBreaker::enter`] for an entry whose key was evicted while its gate ran:
    /// the decision was another key's, and a probe it took is given back unjudged; then
    /// the key is looked up again and its gate asked (off the hot path).
    #[cold]
    #[inline(never)]
    fn enter_evicted<C: Clock>(
        &mut self,
        decision: Result<Ticket, Refused>,
        clock: &C,
    ) -> Result<KeyedTicket, Refused> {
        if let Ok(ticket) = decision {
            if ticket.probe {
                self.table.breakers[self.slot as usize].report(ticket, Outcome::NEUTRAL, clock);
            }
        }
        self.enter_again(clock)
    }

    /// [`CircuitBreaker::enter`] for an entry whose key was evicted: the key looked up
    /// again, and its gate asked.
    #[cold]
    #[inline(never)]
    fn enter_again<C: Clock>(&mut self, clock: &C) -> Result<KeyedTicket, Refused> {
        *self = self.table.entry(self.key());
        self.enter(clock)
    }

    /// Looks the key up again if it was evicted since this entry was handed out.
    fn refresh(&mut self) {
        if self.slot != UNGUARDED && self.current().is_none() {
            *self = self.table.entry(self.key());
        }
    }
}

/// The ticket of a [`KeyedEntry`]'s gate: the breaker's, and the slot it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyedTicket {
    ticket: Ticket,
    slot: u32,
    word: u64,
}

impl CallTicket for KeyedTicket {
    #[inline(always)]
    fn is_probe(&self) -> bool {
        self.ticket.probe
    }
}

impl<K: TableKey, const N: usize, O: Observer, P: Borrow<Policy>, S: CountStore> crate::GuardsCalls
    for KeyedEntry<'_, K, N, O, P, S>
{
}

impl<K: TableKey, const N: usize, O: Observer, P: Borrow<Policy>, S: CountStore> CircuitBreaker
    for KeyedEntry<'_, K, N, O, P, S>
{
    type Ticket = KeyedTicket;

    #[inline(always)]
    fn enter<C: Clock>(&mut self, clock: &C) -> Result<KeyedTicket, Refused> {
        if self.slot == UNGUARDED {
            return Ok(KeyedTicket {
                ticket: Ticket { gen: 0, probe: false },
                slot: UNGUARDED,
                word: 0,
            });
        }
        // Evicted since the lookup: the key looked up again before any gate is asked, so
        // that the slot's new key's breaker counts no refusal of this call. (Evicted while
        // the gate runs, below, is caught after it.)
        if self.current().is_none() {
            return self.enter_again(clock);
        }
        let i = self.slot as usize;
        let decision = self.table.breakers[i].acquire_ticket(clock);
        // The slot's word after the gate: unchanged, the decision was this key's (an
        // eviction resets the breaker after it changes the word, so a gate that saw the
        // reset sees the change here).
        if self.table.slots[i].load(Ordering::Acquire) == self.word {
            let (slot, word) = (self.slot, self.word);
            return decision.map(|ticket| KeyedTicket { ticket, slot, word });
        }
        self.enter_evicted(decision, clock)
    }

    #[inline]
    fn report<C: Clock>(&mut self, ticket: KeyedTicket, outcome: Outcome, clock: &C) {
        if let Some(breaker) = self.table.ticket_breaker(&ticket) {
            breaker.report_inline(ticket.ticket, outcome, clock);
        }
    }

    fn abandon<C: Clock>(&mut self, ticket: KeyedTicket, clock: &C) {
        if let Some(breaker) = self.table.ticket_breaker(&ticket) {
            breaker.abandon(ticket.ticket, clock);
        }
    }

    /// One call through the key's breaker: closed with nothing pending, on the lone
    /// breaker's own path (no clock read, nothing written), with the slot's word checked
    /// after the breaker's is read; anything else through the entry's gate, which checks
    /// the slot's word after it decides and looks the key up again if it changed hands.
    #[inline(always)]
    fn call_classified<T, E, C: Clock>(
        &mut self,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        let (table, i, word) = (self.table, self.slot as usize, self.word);
        // One test for both: an unguarded entry's slot is past the table's end.
        let Some(breaker) = table.breakers.get(i) else {
            return f().map_err(CallError::Inner);
        };
        let held = || table.slots[i].load(Ordering::Acquire) == word;
        match breaker.call_held(clock, held, f, classify) {
            Ok(result) => result,
            // A refusal the breaker could not settle alone, a probe, a counted or windowed
            // call, or a slot that changed hands: through the entry's gate, which checks
            // the slot after it decides and looks the key up again if it changed hands.
            // On a copy, written back after: the entry's own fields then stay in registers
            // on the paths above, where a call through `self` would keep them in memory.
            Err((f, classify)) => {
                let mut entry = *self;
                let result = crate::circuit::call_through_attempt(&mut entry, clock, f, classify);
                *self = entry;
                result
            }
        }
    }

    /// The key's state: a key the table does not hold (evicted, or unguarded) reads as a
    /// fresh breaker would, closed.
    fn state<C: Clock>(&self, clock: &C) -> State {
        match self.table.slot_of(key_of(self.word)) {
            Some(i) => self.table.breakers[i].state(clock.now()),
            None => State::Closed { strikes: 0 },
        }
    }

    /// Trips the key's breaker (looked up again if it was evicted); an unguarded entry has
    /// none, and nothing happens.
    fn trip<C: Clock>(&mut self, why: Reason, hold: Duration, clock: &C) {
        self.refresh();
        if let Some(breaker) = self.breaker() {
            breaker.trip_for(why, hold, clock.now());
        }
    }

    /// The policy of the key's breaker (an unguarded entry: of the table's first slot).
    fn policy(&self) -> Policy {
        let i = if self.slot == UNGUARDED { 0 } else { self.slot as usize };
        *self.table.breakers[i].policy()
    }

    /// The counters of the key's breaker (zero for an unguarded entry, or once evicted).
    fn counters(&self) -> Counters {
        self.breaker().map_or(Counters::ZERO, SharedBreaker::counters)
    }

    /// Whether the key's breaker counts every call (its policy asks, and its storage of
    /// counters keeps those counts: a [`Lean`](crate::counts::Lean) one does not).
    fn counts_calls(&self) -> bool {
        let i = if self.slot == UNGUARDED { 0 } else { self.slot as usize };
        self.table.breakers[i].counting()
    }
}

impl<K: TableKey, const N: usize, O: Observer, P: Borrow<Policy>, S: CountStore> KeyedBreakers<K, N, O, P, S> {
    /// The breaker a ticket's outcome goes to: `None` for an unguarded ticket, or when its
    /// key was evicted since (the outcome is dropped).
    #[inline(always)]
    fn ticket_breaker(&self, ticket: &KeyedTicket) -> Option<&SharedBreaker<O, P, S>> {
        let i = ticket.slot as usize;
        (ticket.slot != UNGUARDED && self.slots[i].load(Ordering::Acquire) == ticket.word).then(|| &self.breakers[i])
    }
}

// ---- the hosted map -----------------------------------------------------------------

#[cfg(feature = "std")]
pub use map::{KeyedBreakerMap, MapEntry, MapItem};

#[cfg(feature = "std")]
mod map {
    use core::borrow::Borrow;
    use core::fmt;
    use core::num::NonZeroUsize;
    use std::boxed::Box;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, RwLock};
    use std::vec::Vec;

    use super::{KeyedTable, TableError};
    use crate::layout::Core;
    use crate::{
        CircuitBreaker, Clock, Counters, Duration, Observer, Outcome, Policy, PolicyError, Reason, Refused,
        SharedBreaker, SharedTicket, State,
    };

    /// A key with its breaker, as [`KeyedBreakerMap::snapshot`] lists them.
    pub type MapItem<O, P> = (Box<str>, Arc<SharedBreaker<O, P>>);

    struct Held<O: Observer, P> {
        breaker: Arc<SharedBreaker<O, P>>,
        /// The table's tick at the last lookup.
        used: AtomicU64,
    }

    /// One [`SharedBreaker`] per string key (a host name, a tenant), created on first use,
    /// in a map of a capacity chosen at run time (see [the module documentation](super)
    /// for eviction and the answer of a full map).
    ///
    /// Lookups take a read lock (a hit is a hash of the key, an `Arc` clone and one
    /// counter update); creating and evicting take the write lock. Every breaker gets the
    /// map's policy, held as `P` (by default the [`Policy`] itself, copied into each).
    /// A handle to an evicted breaker stays valid; its outcomes reach that breaker only,
    /// and the key's next lookup creates a fresh one. The map holds at most `capacity`
    /// breakers, plus those whose handles callers still hold.
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use breaker_core::keyed::KeyedBreakerMap;
    /// use breaker_core::{CircuitBreaker, Duration, Instant, ManualClock, Outcome, Policy};
    ///
    /// let hosts = KeyedBreakerMap::new(NonZeroUsize::new(100).unwrap(), Policy::new(1, Duration::from_secs(10))).unwrap();
    /// let clock = ManualClock::new(Instant::ZERO);
    /// hosts.entry("db-1:5432").attempt(&clock).unwrap().record(Outcome::STRIKE);
    /// assert!(hosts.entry("db-1:5432").attempt(&clock).is_err()); // open
    /// assert!(hosts.entry("db-2:5432").attempt(&clock).is_ok());
    /// assert_eq!(hosts.len(), 2);
    /// ```
    pub struct KeyedBreakerMap<O: Observer = (), P: Borrow<Policy> = Policy> {
        entries: RwLock<HashMap<Box<str>, Held<O, P>>>,
        capacity: usize,
        tick: AtomicU64,
        evictions: AtomicU64,
        policy: P,
        observer: Box<dyn Fn() -> O + Send + Sync>,
    }

    impl<P: Borrow<Policy> + Clone> KeyedBreakerMap<(), P> {
        /// A map of at most `capacity` breakers following `policy`, or
        /// [`PolicyError::NeedsWindow`] for a windowed policy (which needs a window per
        /// breaker: [`KeyedBreakerMap::with_observer`] with a
        /// [`Windowed`](crate::Windowed) observer).
        pub fn new(capacity: NonZeroUsize, policy: P) -> Result<Self, PolicyError> {
            KeyedBreakerMap::with_observer(capacity, policy, || ())
        }
    }

    impl<O: Observer, P: Borrow<Policy> + Clone> KeyedBreakerMap<O, P> {
        /// A map of at most `capacity` breakers following `policy`, each with the
        /// observer `observer` makes (a [`Windowed`](crate::Windowed) one for a windowed
        /// policy), or why the policy cannot run with it.
        pub fn with_observer(
            capacity: NonZeroUsize,
            policy: P,
            observer: impl Fn() -> O + Send + Sync + 'static,
        ) -> Result<Self, PolicyError> {
            // One breaker made and dropped: every later one is made the same way.
            SharedBreaker::try_with_policy_and_observer(policy.clone(), observer())?;
            Ok(KeyedBreakerMap {
                entries: RwLock::new(HashMap::new()),
                capacity: capacity.get(),
                tick: AtomicU64::new(0),
                evictions: AtomicU64::new(0),
                policy,
                observer: Box::new(observer),
            })
        }

        fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Box<str>, Held<O, P>>> {
            // Nothing panics while holding the lock; a poisoned one is still consistent.
            self.entries.read().unwrap_or_else(|e| e.into_inner())
        }

        fn lookup(held: &Held<O, P>, tick: &AtomicU64) -> Arc<SharedBreaker<O, P>> {
            held.used
                .store(tick.fetch_add(1, Ordering::Relaxed) + 1, Ordering::Relaxed);
            held.breaker.clone()
        }

        /// The breaker of `key`, created on first use, or [`TableError::Full`] when every
        /// entry is open, half-open, struck or in use (a handle to it is held).
        pub fn try_entry(&self, key: &str) -> Result<Arc<SharedBreaker<O, P>>, TableError> {
            if let Some(held) = self.read().get(key) {
                return Ok(Self::lookup(held, &self.tick));
            }
            let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
            if let Some(held) = entries.get(key) {
                return Ok(Self::lookup(held, &self.tick));
            }
            if entries.len() >= self.capacity {
                // The least recently used entry that is closed with no strikes pending
                // and that no handle holds (no call in flight).
                let victim = entries
                    .iter()
                    .filter(|(_, h)| {
                        Arc::strong_count(&h.breaker) == 1
                            && Core::is_idle(h.breaker.word_cell().load(crate::atomic::Ordering::Acquire))
                    })
                    .min_by_key(|(_, h)| h.used.load(Ordering::Relaxed))
                    .map(|(k, _)| k.clone());
                match victim {
                    Some(victim) => {
                        entries.remove(&victim);
                        self.evictions.fetch_add(1, Ordering::Relaxed);
                    }
                    None => return Err(TableError::Full),
                }
            }
            let held = Held {
                breaker: Arc::new(SharedBreaker::with_policy_and_observer(
                    self.policy.clone(),
                    (self.observer)(),
                )),
                used: AtomicU64::new(0),
            };
            let breaker = Self::lookup(&held, &self.tick);
            entries.insert(key.into(), held);
            Ok(breaker)
        }

        /// The entry of `key`: its breaker, created on first use, or an unguarded entry
        /// (calls go ahead uncounted) when the map is full.
        pub fn entry(&self, key: &str) -> MapEntry<O, P> {
            match self.try_entry(key) {
                Ok(breaker) => MapEntry(Inner::Guarded(breaker)),
                Err(_) => MapEntry(Inner::Unguarded(self.policy.clone())),
            }
        }

        /// The breaker holding `key` now, if any (nothing created, not marked used).
        pub fn get(&self, key: &str) -> Option<Arc<SharedBreaker<O, P>>> {
            self.read().get(key).map(|h| h.breaker.clone())
        }

        /// Each key the map holds, with its breaker, sorted by key.
        pub fn snapshot(&self) -> Vec<MapItem<O, P>> {
            let mut all: Vec<_> = self
                .read()
                .iter()
                .map(|(k, h)| (k.clone(), h.breaker.clone()))
                .collect();
            all.sort_by(|a, b| a.0.cmp(&b.0));
            all
        }

        /// The number of keys the map holds.
        pub fn len(&self) -> usize {
            self.read().len()
        }

        /// Whether the map holds no key.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// The most keys the map holds.
        pub fn capacity(&self) -> usize {
            self.capacity
        }

        /// How many entries have been evicted to make room.
        pub fn evictions(&self) -> u64 {
            self.evictions.load(Ordering::Relaxed)
        }
    }

    impl<O: Observer, P: Borrow<Policy>> fmt::Debug for KeyedBreakerMap<O, P> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
            f.debug_struct("KeyedBreakerMap")
                .field("len", &entries.len())
                .field("capacity", &self.capacity)
                .finish()
        }
    }

    impl<Q: AsRef<str>, O: Observer, P: Borrow<Policy> + Clone> KeyedTable<Q> for &KeyedBreakerMap<O, P> {
        type Entry = MapEntry<O, P>;

        fn entry(&self, key: &Q) -> MapEntry<O, P> {
            KeyedBreakerMap::entry(self, key.as_ref())
        }
    }

    impl<Q: AsRef<str>, O: Observer, P: Borrow<Policy> + Clone> KeyedTable<Q> for Arc<KeyedBreakerMap<O, P>> {
        type Entry = MapEntry<O, P>;

        fn entry(&self, key: &Q) -> MapEntry<O, P> {
            KeyedBreakerMap::entry(self, key.as_ref())
        }
    }

    enum Inner<O: Observer, P> {
        Guarded(Arc<SharedBreaker<O, P>>),
        Unguarded(P),
    }

    /// A key's entry in a [`KeyedBreakerMap`]: a handle to the key's breaker, or an
    /// unguarded one through which calls go ahead uncounted (the map was full).
    pub struct MapEntry<O: Observer = (), P: Borrow<Policy> = Policy>(Inner<O, P>);

    impl<O: Observer, P: Borrow<Policy> + Clone> Clone for MapEntry<O, P> {
        fn clone(&self) -> Self {
            MapEntry(match &self.0 {
                Inner::Guarded(b) => Inner::Guarded(b.clone()),
                Inner::Unguarded(p) => Inner::Unguarded(p.clone()),
            })
        }
    }

    impl<O: Observer, P: Borrow<Policy>> fmt::Debug for MapEntry<O, P> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("MapEntry").field("guarded", &self.is_guarded()).finish()
        }
    }

    impl<O: Observer, P: Borrow<Policy>> MapEntry<O, P> {
        /// Whether calls go through a breaker of the key's own.
        pub fn is_guarded(&self) -> bool {
            matches!(self.0, Inner::Guarded(_))
        }

        /// The key's breaker (`None` for an unguarded entry).
        pub fn breaker(&self) -> Option<&Arc<SharedBreaker<O, P>>> {
            match &self.0 {
                Inner::Guarded(b) => Some(b),
                Inner::Unguarded(_) => None,
            }
        }
    }

    impl<O: Observer, P: Borrow<Policy>> crate::GuardsCalls for MapEntry<O, P> {}

    impl<O: Observer, P: Borrow<Policy>> CircuitBreaker for MapEntry<O, P> {
        type Ticket = Option<SharedTicket>;

        #[inline]
        fn enter<C: Clock>(&mut self, clock: &C) -> Result<Option<SharedTicket>, Refused> {
            match &mut self.0 {
                Inner::Guarded(b) => CircuitBreaker::enter(b, clock).map(Some),
                Inner::Unguarded(_) => Ok(None),
            }
        }
        #[inline]
        fn report<C: Clock>(&mut self, ticket: Option<SharedTicket>, outcome: Outcome, clock: &C) {
            if let (Inner::Guarded(b), Some(t)) = (&mut self.0, ticket) {
                CircuitBreaker::report(b, t, outcome, clock);
            }
        }
        fn abandon<C: Clock>(&mut self, ticket: Option<SharedTicket>, clock: &C) {
            if let (Inner::Guarded(b), Some(t)) = (&mut self.0, ticket) {
                CircuitBreaker::abandon(b, t, clock);
            }
        }
        /// The key's state (unguarded: closed, as a fresh breaker).
        fn state<C: Clock>(&self, clock: &C) -> State {
            match &self.0 {
                Inner::Guarded(b) => CircuitBreaker::state(b, clock),
                Inner::Unguarded(_) => State::Closed { strikes: 0 },
            }
        }
        /// Trips the key's breaker (unguarded: nothing happens).
        fn trip<C: Clock>(&mut self, why: Reason, hold: Duration, clock: &C) {
            if let Inner::Guarded(b) = &mut self.0 {
                CircuitBreaker::trip(b, why, hold, clock);
            }
        }
        fn policy(&self) -> Policy {
            match &self.0 {
                Inner::Guarded(b) => CircuitBreaker::policy(b),
                Inner::Unguarded(p) => *p.borrow(),
            }
        }
        fn counters(&self) -> Counters {
            match &self.0 {
                Inner::Guarded(b) => CircuitBreaker::counters(b),
                Inner::Unguarded(_) => Counters::ZERO,
            }
        }
    }

    impl crate::CallTicket for Option<SharedTicket> {
        fn is_probe(&self) -> bool {
            self.as_ref().is_some_and(crate::CallTicket::is_probe)
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
