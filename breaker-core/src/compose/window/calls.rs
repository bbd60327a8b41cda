//! The count window: the last N samples, one bit each, in one atomic word per rule.

use core::fmt;

use super::sealed::{Kind, Store};
use super::{Pushed, Sample, Shape, Tally, Window, WindowSnapshot, MAX_WINDOW_CALLS};
use crate::atomic::{AtomicU64, Ordering};
use crate::Instant;

/// The storage of a count window ([`WindowSize::Calls`](super::WindowSize::Calls)) of up to
/// [`MAX_WINDOW_CALLS`] calls: the last N samples of a closed breaker, one bit each. 16
/// bytes, whatever N. A larger window is kept in a [`CallRing`](super::CallRing).
///
/// It keeps two words, one per rule: the failures, and the slow calls (used only with a
/// slow-call rule). Each word is
///
/// ```text
/// bits 52..64  the generation the samples belong to
/// bits  0..52  a marker bit at position n (n = samples held, 0..=N), and below it one
///              bit per sample, the newest at bit 0: 1 = failed (slow), 0 = not
/// ```
///
/// so one compare-and-swap adds a sample, pushes out the oldest, and keeps the count in
/// step with the bits. Put in a [`Windowed`](super::Windowed).
pub struct CallWindow {
    failures: AtomicU64,
    slow: AtomicU64,
}

/// The generation's bits.
const TAG_AT: u32 = 52;
/// The marker and sample bits.
const PLANE: u64 = (1 << TAG_AT) - 1;

/// An empty word of generation `gen`: the marker at bit 0.
const fn empty(gen: u16) -> u64 {
    (gen as u64) << TAG_AT | 1
}

/// The generation a word belongs to.
const fn tag(word: u64) -> u16 {
    (word >> TAG_AT) as u16
}

/// The marker and sample bits (never zero: a word always has its marker).
const fn plane(word: u64) -> u64 {
    let p = word & PLANE;
    if p == 0 {
        1
    } else {
        p
    }
}

/// Samples held.
const fn held(word: u64) -> u32 {
    63 - plane(word).leading_zeros()
}

/// Samples marked (failed, or slow).
const fn marked(word: u64) -> u32 {
    plane(word).count_ones() - 1
}

/// `word` with one more sample, `bit`, in a window of `size` samples (at most
/// [`MAX_WINDOW_CALLS`]): the oldest is pushed out once `size` are held (or more, after a
/// policy change).
const fn shifted(word: u64, size: u32, bit: bool) -> u64 {
    let plane = plane(word);
    // The plane is below 2^52: shifting it left once stays within 64 bits.
    let grown = plane << 1 | bit as u64;
    let full = 1u64 << size;
    let plane = if plane >= full {
        // `size` or more held: keep the newest `size` samples, the marker back at `size`.
        grown & (full - 1) | full
    } else {
        grown
    };
    word & !PLANE | plane
}

/// A word of generation `gen` holding `len` samples, `bits` marking them (newest at 0).
const fn word_of(gen: u16, len: u32, bits: u64) -> u64 {
    let len = if len > MAX_WINDOW_CALLS { MAX_WINDOW_CALLS } else { len };
    let mask = (1u64 << len) - 1;
    empty(gen) & !PLANE | (bits & mask) | 1 << len
}

/// Adds `bit` to the word at `cell`, in a window of `size` samples (at most
/// [`MAX_WINDOW_CALLS`]), if it belongs to generation `gen`. `None` if it does not; else
/// the word after, and whether it changed (a word full of clean samples does not change
/// with another clean one, and is not written).
#[inline(always)]
fn push_word(cell: &AtomicU64, gen: u16, size: u32, bit: bool) -> Option<(u64, bool)> {
    let mut word = cell.load(Ordering::Acquire);
    loop {
        if tag(word) != gen {
            return None;
        }
        // The healthy steady state, tested first: a full window of clean samples.
        if !bit && word & PLANE == 1 << size {
            return Some((word, false));
        }
        let next = shifted(word, size, bit);
        if next == word {
            return Some((word, false));
        }
        match cell.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Some((next, true)),
            Err(actual) => word = actual,
        }
    }
}

impl CallWindow {
    /// An empty window (of the first generation, that of a new breaker).
    #[cfg(not(loom))]
    pub const fn new() -> CallWindow {
        CallWindow {
            failures: AtomicU64::new(empty(0)),
            slow: AtomicU64::new(empty(0)),
        }
    }

    /// An empty window (not `const` under loom).
    #[cfg(loom)]
    pub fn new() -> CallWindow {
        CallWindow {
            failures: AtomicU64::new(empty(0)),
            slow: AtomicU64::new(empty(0)),
        }
    }
}

impl Default for CallWindow {
    fn default() -> CallWindow {
        CallWindow::new()
    }
}

impl fmt::Debug for CallWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (fw, sw) = (self.failures.load(Ordering::Acquire), self.slow.load(Ordering::Acquire));
        f.debug_struct("CallWindow")
            .field("gen", &tag(fw))
            .field("calls", &held(fw))
            .field("failures", &marked(fw))
            .field("slow", &marked(sw))
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for CallWindow {
    fn format(&self, f: defmt::Formatter<'_>) {
        let (fw, sw) = (self.failures.load(Ordering::Acquire), self.slow.load(Ordering::Acquire));
        defmt::write!(
            f,
            "CallWindow {{ gen: {}, calls: {}, failures: {}, slow: {} }}",
            tag(fw),
            held(fw),
            marked(fw),
            marked(sw)
        )
    }
}

impl Kind for CallWindow {
    const SHAPE: Shape = Shape {
        time: false,
        size: MAX_WINDOW_CALLS,
    };
}

impl Store for CallWindow {
    fn shape(&self) -> Shape {
        Self::SHAPE
    }

    // Inlined into the breaker's call path (the breaker knows its window's type there):
    // the steady state is then a load and two tests, with no call.
    #[inline(always)]
    fn push(&self, rule: &Window, gen: u16, sample: Sample, _now: Instant) -> Pushed {
        let size = rule.calls().min(MAX_WINDOW_CALLS);
        let Some((fails, changed)) = push_word(&self.failures, gen, size, sample.fails()) else {
            return Pushed::Stale;
        };
        let (slow, changed) = if rule.times_calls() {
            match push_word(&self.slow, gen, size, sample.slow()) {
                Some((slow, also)) => (slow, changed || also),
                None => return Pushed::Stale,
            }
        } else {
            (empty(gen), changed)
        };
        if !changed {
            return Pushed::Unchanged;
        }
        Pushed::Changed(Tally {
            calls: held(fails),
            failures: marked(fails),
            timed: held(slow),
            slow: marked(slow),
        })
    }

    fn clear(&self, gen: u16) {
        self.failures.store(empty(gen), Ordering::Release);
        self.slow.store(empty(gen), Ordering::Release);
    }

    fn tally(&self, rule: &Window, gen: u16, _now: Instant) -> Option<Tally> {
        let fails = self.failures.load(Ordering::Acquire);
        let slow = if rule.times_calls() {
            self.slow.load(Ordering::Acquire)
        } else {
            empty(gen)
        };
        if tag(fails) != gen || tag(slow) != gen {
            return None;
        }
        Some(Tally {
            calls: held(fails),
            failures: marked(fails),
            timed: held(slow),
            slow: marked(slow),
        })
    }

    fn save(&self, rule: &Window, gen: u16, _now: Instant) -> WindowSnapshot {
        let fails = self.failures.load(Ordering::Acquire);
        let slow = if rule.times_calls() {
            self.slow.load(Ordering::Acquire)
        } else {
            empty(gen)
        };
        if tag(fails) != gen || tag(slow) != gen {
            return WindowSnapshot::None;
        }
        // The two words hold the same samples once no sample is on its way between them:
        // keep the samples both know of. (A slow failure is kept as a failure: a snapshot
        // has no sample in both.)
        let len = held(fails).min(if rule.times_calls() { held(slow) } else { held(fails) });
        let bits = |word: u64| plane(word) & ((1u64 << len) - 1);
        WindowSnapshot::Calls {
            len: len as u8,
            failures: bits(fails),
            slow: bits(slow) & !bits(fails),
        }
    }

    fn load(&self, rule: &Window, gen: u16, saved: &WindowSnapshot, _now: Instant) {
        match *saved {
            WindowSnapshot::Calls { len, failures, slow } if !rule.is_time() => {
                // A smaller window keeps the newest samples.
                let len = u32::from(len).min(rule.calls());
                self.failures.store(word_of(gen, len, failures), Ordering::Release);
                let slow = if rule.times_calls() { slow & !failures } else { 0 };
                self.slow.store(word_of(gen, len, slow), Ordering::Release);
            }
            _ => self.clear(gen),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_counts_and_slides() {
        let mut w = empty(7);
        assert_eq!((held(w), marked(w), tag(w)), (0, 0, 7));
        for bit in [true, false, true] {
            w = shifted(w, 3, bit);
        }
        assert_eq!((held(w), marked(w)), (3, 2));
        // Full: a clean sample pushes out the oldest failure.
        w = shifted(w, 3, false);
        assert_eq!((held(w), marked(w), tag(w)), (3, 1, 7));
        w = shifted(w, 3, false);
        w = shifted(w, 3, false);
        assert_eq!((held(w), marked(w)), (3, 0));
        // Full of clean samples: another one changes nothing (nothing to write).
        assert_eq!(shifted(w, 3, false), w);
    }

    #[test]
    fn the_widest_window_fits_its_word() {
        let mut w = empty(0xFFF);
        for i in 0..200 {
            w = shifted(w, MAX_WINDOW_CALLS, i % 3 == 0);
        }
        assert_eq!(held(w), MAX_WINDOW_CALLS);
        assert_eq!(tag(w), 0xFFF);
        assert_eq!(
            marked(w),
            (0..MAX_WINDOW_CALLS).filter(|k| (199 - k) % 3 == 0).count() as u32
        );
    }

    #[test]
    fn a_smaller_window_keeps_the_newest_samples() {
        let mut w = empty(1);
        for bit in [true, true, false, false] {
            w = shifted(w, 4, bit);
        }
        // The policy shrank to 2: the next sample leaves the newest two, then itself.
        w = shifted(w, 2, true);
        assert_eq!((held(w), marked(w)), (2, 1));
        assert_eq!(word_of(1, 2, 0b01), shifted(shifted(empty(1), 2, false), 2, true));
    }

    #[test]
    fn a_zero_plane_reads_as_empty_and_never_underflows() {
        let corrupt = 5u64 << TAG_AT;
        assert_eq!((held(corrupt), marked(corrupt)), (0, 0));
        assert_eq!(held(shifted(corrupt, 3, true)), 1);
    }
}
