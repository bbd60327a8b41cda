//! Where a [`SharedBreaker`](crate::SharedBreaker) keeps its counters: the third type
//! parameter, `S`, chosen by what a program keeps of them and how many cores refuse calls
//! through one breaker at the same moment.
//!
//! | storage | counters kept | x86-64 size of a `SharedBreaker<(), &'static Policy, S>` | choose it for |
//! |---|---|---:|---|
//! | [`Packed`] (the default on hosted targets) | all sixteen | 88 B | anything: the breaker of a function, a service, a host |
//! | [`Lean`] (the default on bare metal) | failures, skips, trips, probes, lease expiries | 40 B | a keyed table of many breakers ([`KeyedBreakers`](crate::KeyedBreakers): 52 B per key); RAM-starved targets |
//! | [`Spread`] (hosted targets) | all sixteen | 768 B | one breaker that several cores hammer *while it refuses* |
//!
//! Every storage runs the same state machine, over the same state word, with the same
//! instructions on the closed-state path. They differ in what [`SharedBreaker::counters`](crate::SharedBreaker::counters)
//! reports and in what a refusal writes:
//!
//! - [`Packed`] and [`Lean`] keep their counters beside the state word. A refusal counts
//!   its skip there with a plain load and store, not a locked read-modify-write (exact for
//!   one caller at a time; two refusals at the same instant by two threads may count as
//!   one): on one core as cheap as it gets, but two cores refused at the same moment each
//!   take the word's cache line from the other.
//! - [`Spread`] keeps its counters on a cache line of their own and counts the refusal
//!   fast path's skips in four more lines chosen by the caller's stack, so that threads
//!   refused at once write lines of their own and the word's line stays shared. It costs
//!   a dozen cache lines per breaker: choose it when a profile shows cores contending on a
//!   breaker that is open (a dependency down under heavy traffic), not by default.
//!   `bench/README.md` has the figures of the three side by side.
//! - [`Lean`] counts only the first five counters: the probes' outcomes, the changes of
//!   phase and the counts of every call ([`Policy::counting_calls`](crate::Policy::counting_calls))
//!   read as zero, as on bare metal (an [`Observer`](crate::Observer) hears every change).
//!   A lean breaker whose policy asks to count every call counts no calls and pays nothing
//!   for it.
//!
//! ```
//! use breaker_core::counts::{Lean, Spread};
//! use breaker_core::{Duration, Policy, SharedBreaker};
//!
//! static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
//! static DEFAULT: SharedBreaker = SharedBreaker::new(&POLICY);
//! static SMALL: SharedBreaker<(), &Policy, Lean> = SharedBreaker::lean(&POLICY);
//! static CONTENDED: SharedBreaker<(), &Policy, Spread> = SharedBreaker::spread(&POLICY);
//! # #[cfg(target_pointer_width = "64")]
//! assert_eq!(
//!     [size_of_val(&DEFAULT), size_of_val(&SMALL)],
//!     [88, 40],
//! );
//! # let _ = &CONTENDED;
//! ```
//!
//! On bare metal (`target_os = "none"`) a shared breaker notes only the first five events
//! (keeping the code of the others out of its firmware), so [`Lean`] is the default there
//! and a [`Packed`] one reports the others as zero too; [`Spread`] does not exist there
//! (one core, no cache shared between cores).

#[cfg(not(target_os = "none"))]
use crate::atomic::AtomicU64;
use crate::atomic::{AtomicU32, Ordering};
use crate::machine::Events;
#[cfg(not(target_os = "none"))]
use crate::padded::{skip_slot, Padded, SKIP_SLOTS};

/// How many counters a storage that keeps them all has: one per low bit of [`Events`].
const ALL: usize = 16;
/// How many a [`Lean`] storage keeps: failures, skips, trips, probes, lease expiries.
const FIVE: usize = 5;

/// The storage of a shared breaker's counters: [`Packed`], [`Lean`] or [`Spread`] (see
/// [the module](self)). Sealed: only those implement it.
pub trait CountStore: sealed::Store {}

impl CountStore for Packed {}
impl CountStore for Lean {}
#[cfg(not(target_os = "none"))]
impl CountStore for Spread {}

/// The storage a [`SharedBreaker`](crate::SharedBreaker) has when none is named:
/// [`Packed`] on hosted targets, [`Lean`] on bare metal.
#[cfg(not(target_os = "none"))]
pub type DefaultCounts = Packed;
/// The storage a [`SharedBreaker`](crate::SharedBreaker) has when none is named:
/// [`Packed`] on hosted targets, [`Lean`] on bare metal.
#[cfg(target_os = "none")]
pub type DefaultCounts = Lean;

/// Every counter, beside the state word (the default on hosted targets): 72 bytes, the
/// sixteen counters and a 64-bit count of the refusal fast path's skips (hosted targets).
pub struct Packed {
    counts: [AtomicU32; ALL],
    /// 64 bits, so that counting is one increment with no saturation test: at a billion
    /// refusals a second it would take 584 years to wrap.
    #[cfg(not(target_os = "none"))]
    fast_skips: AtomicU64,
}

/// The first five counters (failures, skips, trips, probes, lease expiries), beside the
/// state word: 20 bytes. The default on bare metal; for keyed tables of many breakers.
pub struct Lean {
    counts: [AtomicU32; FIVE],
}

/// Every counter on a cache line of its own, and the refusal fast path's skips spread over
/// four more (hosted targets): for one breaker that several cores hammer while it refuses.
#[cfg(not(target_os = "none"))]
pub struct Spread {
    counts: Padded<[AtomicU32; ALL]>,
    /// 64 bits, so that counting is one increment with no saturation test: at a billion
    /// refusals a second a slot would take 584 years to wrap.
    fast_skips: [Padded<AtomicU64>; SKIP_SLOTS],
}

/// Storages show their name only: [`SharedBreaker::counters`](crate::SharedBreaker::counters)
/// reads what they hold.
macro_rules! debug_by_name {
    ($($storage:ident),*) => {$(
        impl core::fmt::Debug for $storage {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(stringify!($storage))
            }
        }
    )*};
}
debug_by_name!(Packed, Lean);
#[cfg(not(target_os = "none"))]
debug_by_name!(Spread);

/// `N` counters, all zero.
#[cfg(not(loom))]
const fn zeros<const N: usize>() -> [AtomicU32; N] {
    [const { AtomicU32::new(0) }; N]
}

/// `N` counters, all zero (loom's atomics are not made in `const`).
#[cfg(loom)]
fn zeros<const N: usize>() -> [AtomicU32; N] {
    core::array::from_fn(|_| AtomicU32::new(0))
}

/// A storage's zeroed value, as the `const` of [`sealed::Store`] (a fresh copy at each
/// use, for `static`s) or, under loom (whose atomics are not made in `const`), its
/// function.
macro_rules! zeroed {
    ($storage:ident, $zero:expr) => {
        #[cfg(not(loom))]
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: $storage = $zero;
        #[cfg(loom)]
        fn zero() -> $storage {
            $zero
        }
    };
}

/// Counts one refusal of the fast path in `skips` with a plain load and store, not a
/// locked read-modify-write, saturating at `u32::MAX`: exact for one caller at a time; two
/// refusals at the same instant by two threads may count as one.
#[inline(always)]
fn count_plain(skips: &AtomicU32) {
    // Saturating: at `u32::MAX` the add wraps to zero, and nothing is written.
    let n = skips.load(Ordering::Relaxed).wrapping_add(1);
    if n != 0 {
        skips.store(n, Ordering::Relaxed);
    }
}

/// The index of [`Events::SKIPPED`] among the counters.
const SKIPPED: usize = Events::SKIPPED.trailing_zeros() as usize;

/// The private part of [`CountStore`]: what a breaker asks of its counters.
pub(crate) mod sealed {
    use super::*;

    pub trait Store: Sync + Sized {
        /// The storage with every counter zero.
        #[cfg(not(loom))]
        const ZERO: Self;
        /// The storage with every counter zero.
        #[cfg(loom)]
        fn zero() -> Self;
        /// Whether it keeps the counts of every call (admitted calls, successes, neutral
        /// outcomes), so that a policy that counts them is obeyed.
        const CALLS: bool;
        /// The counters, indexed like the low bits of [`Events`].
        fn counts(&self) -> &[AtomicU32];
        /// Counts one refusal of the refusal fast path.
        fn count_skip(&self);
        /// The skips counted by the refusal fast path outside [`Store::counts`].
        fn fast_skips(&self) -> u64 {
            0
        }
        /// Zeroes what [`Store::fast_skips`] reads.
        fn clear_fast_skips(&self) {}
    }

    impl Store for Packed {
        zeroed!(
            Packed,
            Packed {
                counts: zeros(),
                #[cfg(not(target_os = "none"))]
                fast_skips: AtomicU64::new(0),
            }
        );
        const CALLS: bool = true;
        #[inline(always)]
        fn counts(&self) -> &[AtomicU32] {
            &self.counts
        }
        /// In a 64-bit count of its own (hosted targets): one `inc` of memory on x86-64.
        #[cfg(not(target_os = "none"))]
        #[inline(always)]
        fn count_skip(&self) {
            let skips = &self.fast_skips;
            skips.store(skips.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
        #[cfg(target_os = "none")]
        #[inline(always)]
        fn count_skip(&self) {
            count_plain(&self.counts[SKIPPED]);
        }
        #[cfg(not(target_os = "none"))]
        fn fast_skips(&self) -> u64 {
            self.fast_skips.load(Ordering::Relaxed)
        }
        #[cfg(not(target_os = "none"))]
        fn clear_fast_skips(&self) {
            self.fast_skips.store(0, Ordering::Relaxed);
        }
    }

    impl Store for Lean {
        zeroed!(Lean, Lean { counts: zeros() });
        const CALLS: bool = false;
        #[inline(always)]
        fn counts(&self) -> &[AtomicU32] {
            &self.counts
        }
        #[inline(always)]
        fn count_skip(&self) {
            count_plain(&self.counts[SKIPPED]);
        }
    }

    #[cfg(not(target_os = "none"))]
    impl Store for Spread {
        zeroed!(
            Spread,
            Spread {
                counts: Padded(zeros()),
                fast_skips: [
                    Padded(AtomicU64::new(0)),
                    Padded(AtomicU64::new(0)),
                    Padded(AtomicU64::new(0)),
                    Padded(AtomicU64::new(0)),
                ],
            }
        );
        const CALLS: bool = true;
        #[inline(always)]
        fn counts(&self) -> &[AtomicU32] {
            &self.counts.0
        }
        /// In the skip slot of the caller's stack (its own cache line, 64 bits: one `inc`
        /// of memory on x86-64): threads refused at the same time do not fight over one
        /// line. Exact for one caller at a time; two refusals at the same instant by two
        /// threads that share a slot may count as one.
        #[inline(always)]
        fn count_skip(&self) {
            // A local's address, for the slot: left uninitialised, so that nothing is
            // written to it. `skip_slot` is below `SKIP_SLOTS`: the index is in range.
            let here = core::mem::MaybeUninit::<u8>::uninit();
            let slot = &self.fast_skips[skip_slot(core::ptr::addr_of!(here) as usize)];
            slot.store(slot.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
        fn fast_skips(&self) -> u64 {
            self.fast_skips
                .iter()
                .fold(0u64, |sum, slot| sum.saturating_add(slot.load(Ordering::Relaxed)))
        }
        fn clear_fast_skips(&self) {
            for slot in &self.fast_skips {
                slot.store(0, Ordering::Relaxed);
            }
        }
    }
}
