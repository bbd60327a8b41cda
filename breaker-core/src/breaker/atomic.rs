//! The atomics the shared breaker stands on: `core`'s where the target has them,
//! `portable-atomic`'s on targets without compare-and-swap or 64-bit atomics, loom's
//! under `cfg(loom)` model checking.

#[cfg(loom)]
pub(crate) use loom::hint::spin_loop;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::hint::spin_loop;

#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(all(not(loom), not(feature = "portable-atomic"), not(target_has_atomic = "64")))]
compile_error!(
    "breaker-core keeps a breaker's state in one 64-bit atomic word, which this target lacks: \
     enable the `portable-atomic` feature (and provide a `critical-section` implementation in your binary)"
);
