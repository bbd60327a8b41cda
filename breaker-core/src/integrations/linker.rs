//! Everything that meets the linker, and the crate's only `unsafe` code (each block with
//! its `// SAFETY:` argument):
//!
//! - the global clock's run-time override, a `fn() -> Instant` kept in an `AtomicPtr`;
//! - without `std`, the global clock function the final binary defines with
//!   [`global_clock!`](crate::global_clock);
//! - on Cortex-M, a symbol that only the `breaker.x` fragment defines, so that reading
//!   the registry without the fragment fails to link instead of reading a table the
//!   start-up code never put in place.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicPtr, Ordering};

use crate::Instant;

/// The function stored in `slot` by `global_clock::set_global_clock`, if any.
#[inline]
pub(crate) fn load_clock_fn(slot: &AtomicPtr<()>) -> Option<fn() -> Instant> {
    let stored = slot.load(Ordering::Acquire);
    if stored.is_null() {
        return None;
    }
    // SAFETY: the slot only ever holds null or a pointer made by `set_global_clock` from
    // a `fn() -> Instant` (function and data pointers have the same size on every target
    // Rust supports), and it is not null here, so this turns it back into that very
    // function pointer.
    Some(unsafe { core::mem::transmute::<*mut (), fn() -> Instant>(stored) })
}

/// The global clock named by `global_clock!` (builds without `std`).
#[cfg(not(feature = "std"))]
#[inline]
pub(crate) fn global_clock_symbol() -> Instant {
    unsafe extern "Rust" {
        /// Defined by `breaker_core::global_clock!` in the final binary.
        fn __breaker_core_global_clock_now() -> Instant;
    }
    // SAFETY: the only definition of this symbol comes from `global_clock!`, which gives
    // it exactly this signature (`extern "Rust" fn() -> Instant`) and a body that only
    // calls the user's safe `fn() -> Instant`. Without a definition the binary does not
    // link, so this call never reaches a missing function.
    unsafe { __breaker_core_global_clock_now() }
}

/// Makes the final binary need the `breaker.x` linker fragment wherever the registry is
/// read. The name is the message: `undefined symbol: __breaker_core_registry_needs_-Tbreaker.x`
/// is what a firmware without `-Tbreaker.x` gets from the linker.
#[cfg(all(target_arch = "arm", target_os = "none"))]
#[inline]
pub(crate) fn require_registry_fragment() {
    unsafe extern "C" {
        #[link_name = "__breaker_core_registry_needs_-Tbreaker.x"]
        static FRAGMENT_LINKED: u8;
    }
    // Only the address is taken (safe; never read through). `black_box` keeps the
    // reference alive through LTO, so a missing fragment is always a link error.
    core::hint::black_box(core::ptr::addr_of!(FRAGMENT_LINKED));
}

/// Hosts need no fragment.
#[cfg(not(all(target_arch = "arm", target_os = "none")))]
#[inline(always)]
pub(crate) fn require_registry_fragment() {}
