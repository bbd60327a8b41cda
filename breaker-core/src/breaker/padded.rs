//! A cache line of its own: keeps the counters a refusal writes off the state word's line.
//!
//! Every call reads the state word; a refusal also counts a skip. With the counters on the
//! word's cache line, each count would take that line away from every other core reading
//! the word. Padded to the line size of the targets that have caches shared between cores
//! (128 bytes where the adjacent-line prefetcher pairs 64-byte lines); bare-metal targets
//! (Cortex-M: no data cache, one core) keep the fields packed, so a breaker's RAM is
//! unchanged there.

use core::ops::Deref;

/// `T`, alone on its cache line (on hosted targets; as it is on bare metal).
#[cfg_attr(
    all(
        not(target_os = "none"),
        any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "powerpc64")
    ),
    repr(align(128))
)]
#[cfg_attr(
    all(
        not(target_os = "none"),
        not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "powerpc64"))
    ),
    repr(align(64))
)]
pub(crate) struct Padded<T>(pub T);

impl<T> Deref for Padded<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}
