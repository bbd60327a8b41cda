//! A cache line of its own: keeps the counters a refusal writes off the state word's line,
//! and spreads the refusals' skip count over a few lines by the caller's stack (the
//! [`Spread`](crate::counts::Spread) storage of counters, hosted targets).
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

/// Slots the refusal fast path counts its skips in, on hosted targets: one per cache line,
/// four of them, so that threads refused at the same time mostly write lines of their own.
/// (Bare metal, one core, counts them in the breaker's one skip counter.)
#[cfg(not(target_os = "none"))]
pub(crate) const SKIP_SLOTS: usize = 4;

/// The skip slot of the caller whose stack holds `here` (the address of one of its
/// locals): the bits above 2 MiB (a thread's stack is at least that far from the next
/// one), folded once. A thread keeps its slot, so its count is exact; two threads usually
/// get two slots, and share one at worst.
#[cfg(not(target_os = "none"))]
#[inline(always)]
pub(crate) fn skip_slot(here: usize) -> usize {
    let x = here >> 21;
    (x ^ x >> 2) % SKIP_SLOTS
}

#[cfg(all(test, not(target_os = "none")))]
mod tests {
    use super::*;

    const MIB2: usize = 1 << 21;

    #[test]
    fn a_stack_keeps_its_slot_and_every_slot_is_in_range() {
        for region in 0..64usize {
            let base = 0x7f00_0000_0000 + region * MIB2;
            let slot = skip_slot(base);
            assert!(slot < SKIP_SLOTS);
            // Anywhere within the same 2 MiB: the same slot (a thread's count stays exact).
            assert_eq!(skip_slot(base + MIB2 - 1), slot, "region {region}");
            assert_eq!(skip_slot(base + 4096), slot, "region {region}");
        }
    }

    #[test]
    fn neighbouring_stacks_take_different_slots() {
        let slot = |region: usize| skip_slot(0x7f00_0000_0000 + region * MIB2);
        for first in (0..64).step_by(4) {
            // Four stacks 2 MiB apart: four slots.
            let mut four: [usize; 4] = core::array::from_fn(|i| slot(first + i));
            four.sort_unstable();
            assert_eq!(four, [0, 1, 2, 3], "regions {first}..{}", first + 4);
            // Stacks 8 MiB apart (a stride the plain modulo would fold together): the
            // fold sends them to different slots.
            for i in 0..4 {
                assert_ne!(
                    slot(first + i),
                    slot(first + i + 4),
                    "regions {} and {}",
                    first + i,
                    first + i + 4
                );
            }
        }
    }
}
