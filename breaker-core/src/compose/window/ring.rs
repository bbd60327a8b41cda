//! The large count window: the last N samples (up to 1008), two bits each, in a ring of
//! 64 atomic words behind one atomic cursor.

use core::fmt;

use super::sealed::{Kind, Store};
use super::{Pushed, Sample, Shape, Tally, Window, WindowSnapshot, MAX_RING_CALLS, MAX_WINDOW_CALLS};
use crate::atomic::{AtomicU64, Ordering};
use crate::Instant;

/// The storage of a count window ([`WindowSize::Calls`](super::WindowSize::Calls)) of up to
/// [`MAX_RING_CALLS`] calls: the last N samples of a closed breaker, two bits each (failed,
/// slow), in a ring of 64 words behind a cursor. 520 bytes, whatever N; use it for
/// windows beyond [`MAX_WINDOW_CALLS`], which a 16-byte [`CallWindow`](super::CallWindow)
/// holds.
///
/// The cursor is one word that holds everything the judging rule reads:
///
/// ```text
/// bits 52..64  the generation the samples belong to
/// bits 33..52  the position the next sample takes (counting modulo 2^19)
/// bits 23..33  samples held      bits 13..23  of them failed      bits 3..13  slow
/// bits  0..3   the newest sample (bit 0 failed, bit 1 slow) and bit 2: it may not be in
///              the ring yet
/// ```
///
/// The ring holds the samples themselves, position `p` in word `p / 16 % 64`, two bits at
/// `2 * (p % 16)`; the top half of a word is the number of the 16 positions it holds
/// (`p / 16`, modulo 2^15). A sample is added with one compare-and-swap on the cursor, which
/// counts it, pushes out the oldest sample (read from the ring: it is never the one still
/// on its way) and records the new one as the newest; the sample is then written into the
/// ring, by its caller or by whichever caller comes next (the write is idempotent, and
/// every caller completes the newest sample's write before adding its own). So no caller
/// ever waits for another, and the counts and the verdict come from the one
/// compare-and-swap, as with a [`CallWindow`](super::CallWindow). A ring of 1024 positions
/// holds a window of at most 1008: the word that a new group of 16 positions takes over
/// held positions already out of the window.
///
/// Cost per call: in the healthy steady state (a full window of clean successes, and
/// another one) one load of the cursor, as with a `CallWindow`; otherwise loads of two ring
/// words, the cursor's compare-and-swap, and the compare-and-swap writing the sample.
/// Put in a [`Windowed`](super::Windowed) ([`Windowed::ring`](super::Windowed::ring)).
pub struct CallRing {
    cursor: AtomicU64,
    ring: [AtomicU64; WORDS],
}

/// Ring words, and positions per word.
const WORDS: usize = 64;
const PER_WORD: u32 = 16;
/// Positions in the ring.
const SLOTS: u32 = WORDS as u32 * PER_WORD;
const _: () = assert!(MAX_RING_CALLS == SLOTS - PER_WORD);

const TAG_AT: u32 = 52;
const POS_AT: u32 = 33;
const POS_BITS: u32 = 19;
const POSITIONS: u32 = 1 << POS_BITS;
const LEN_AT: u32 = 23;
const FAILURES_AT: u32 = 13;
const SLOW_AT: u32 = 3;
const COUNT: u64 = 0x3FF;
/// The samples held and both counts (above the newest sample's bits): the steady state is
/// `size` held and no failure or slow call.
const CLEAN: u64 = (1 << (POS_AT - SLOW_AT)) - 1;
/// Set while the newest sample may not be in the ring yet.
const PENDING: u64 = 1 << 2;
/// Group numbers (of 16 positions) count modulo this.
const GROUPS: u32 = POSITIONS / PER_WORD;
const _: () = assert!(MAX_RING_CALLS as u64 <= COUNT && POSITIONS.is_multiple_of(SLOTS));

const fn tag(c: u64) -> u16 {
    (c >> TAG_AT) as u16
}
const fn pos(c: u64) -> u32 {
    (c >> POS_AT) as u32 & (POSITIONS - 1)
}
const fn len(c: u64) -> u32 {
    (c >> LEN_AT & COUNT) as u32
}
const fn failures(c: u64) -> u32 {
    (c >> FAILURES_AT & COUNT) as u32
}
const fn slow(c: u64) -> u32 {
    (c >> SLOW_AT & COUNT) as u32
}
/// The newest sample's two bits.
const fn newest(c: u64) -> u64 {
    c & 0b11
}

/// A cursor of generation `gen` (counts cut to their bits).
const fn cursor(gen: u16, pos: u32, len: u32, failures: u32, slow: u32, pending: Option<u64>) -> u64 {
    let pending = match pending {
        Some(bits) => PENDING | bits & 0b11,
        None => 0,
    };
    (gen as u64) << TAG_AT
        | ((pos & (POSITIONS - 1)) as u64) << POS_AT
        | (len as u64 & COUNT) << LEN_AT
        | (failures as u64 & COUNT) << FAILURES_AT
        | (slow as u64 & COUNT) << SLOW_AT
        | pending
}

/// A sample's two bits.
const fn bits(sample: Sample) -> u64 {
    sample.fails() as u64 | (sample.slow() as u64) << 1
}

/// Position `p`'s word, group number and shift in its word.
const fn place(p: u32) -> (usize, u32, u32) {
    let p = p & (POSITIONS - 1);
    ((p % SLOTS / PER_WORD) as usize, p / PER_WORD, 2 * (p % PER_WORD))
}

/// `p` positions before `q`, modulo the numbering.
const fn back(q: u32, p: u32) -> u32 {
    q.wrapping_sub(p) & (POSITIONS - 1)
}

impl CallRing {
    /// An empty window (of the first generation, that of a new breaker).
    #[cfg(not(loom))]
    pub const fn new() -> CallRing {
        CallRing {
            cursor: AtomicU64::new(cursor(0, 0, 0, 0, 0, None)),
            ring: [const { AtomicU64::new(0) }; WORDS],
        }
    }

    /// An empty window (not `const` under loom).
    #[cfg(loom)]
    pub fn new() -> CallRing {
        CallRing {
            cursor: AtomicU64::new(cursor(0, 0, 0, 0, 0, None)),
            ring: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Adds a sample of `new`'s bits to a window of `size`, from the cursor `c` on.
    #[inline(never)]
    fn add(&self, mut c: u64, gen: u16, size: u32, new: u64) -> Pushed {
        loop {
            if tag(c) != gen {
                return Pushed::Stale;
            }
            let held = len(c);
            if new == 0 && held == size && failures(c) == 0 && slow(c) == 0 {
                return Pushed::Unchanged;
            }
            // The newest sample is in the ring before any other is read or added.
            self.settle(c);
            let p = pos(c);
            let (mut fails, mut slows) = (failures(c), slow(c));
            let mut kept = held;
            // Push out the oldest until the new sample fits (more than one only after the
            // policy's window shrank).
            while kept >= size {
                let out = self.read(p.wrapping_sub(kept));
                fails = fails.saturating_sub((out & 1) as u32);
                slows = slows.saturating_sub((out >> 1) as u32);
                kept -= 1;
            }
            let next = cursor(
                gen,
                p.wrapping_add(1),
                kept + 1,
                fails + (new & 1) as u32,
                slows + (new >> 1) as u32,
                Some(new),
            );
            match self
                .cursor
                .compare_exchange_weak(c, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.write(p, new);
                    return Pushed::Changed(Tally {
                        calls: len(next),
                        failures: failures(next),
                        timed: len(next),
                        slow: slow(next),
                    });
                }
                Err(actual) => c = actual,
            }
        }
    }

    /// The two bits of the sample at position `p`, which the ring holds (0 if it holds a
    /// later group there: only a caller that fell far behind reads that).
    fn read(&self, p: u32) -> u64 {
        let (at, group, shift) = place(p);
        match self.ring.get(at) {
            Some(cell) => {
                let w = cell.load(Ordering::Acquire);
                if (w >> 32) as u32 == group {
                    w >> shift & 0b11
                } else {
                    0
                }
            }
            None => 0,
        }
    }

    /// Writes `bits` as the sample at position `p`: into its group's word, or into a fresh
    /// word for its group if the word still holds an older group. A caller that fell behind
    /// (the word holds a later group) writes nothing; writing a sample twice changes
    /// nothing.
    fn write(&self, p: u32, bits: u64) {
        let (at, group, shift) = place(p);
        let Some(cell) = self.ring.get(at) else {
            return;
        };
        let mut w = cell.load(Ordering::Acquire);
        loop {
            let held = (w >> 32) as u32;
            let ahead = group.wrapping_sub(held) % GROUPS;
            let next = if ahead == 0 {
                w & !(0b11 << shift) | bits << shift
            } else if ahead < GROUPS / 2 {
                (group as u64) << 32 | bits << shift
            } else {
                return;
            };
            if next == w {
                return;
            }
            match cell.compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(actual) => w = actual,
            }
        }
    }

    /// Completes the newest sample's write, if it may be on its way.
    fn settle(&self, c: u64) {
        if c & PENDING != 0 {
            self.write(pos(c).wrapping_sub(1), newest(c));
        }
    }

    /// The sample at position `p` as the cursor `c` knows it (the newest from the cursor).
    fn sample_at(&self, c: u64, p: u32) -> u64 {
        if c & PENDING != 0 && back(pos(c), p) == 1 {
            newest(c)
        } else {
            self.read(p)
        }
    }
}

impl Default for CallRing {
    fn default() -> CallRing {
        CallRing::new()
    }
}

impl fmt::Debug for CallRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.cursor.load(Ordering::Acquire);
        f.debug_struct("CallRing")
            .field("gen", &tag(c))
            .field("calls", &len(c))
            .field("failures", &failures(c))
            .field("slow", &slow(c))
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for CallRing {
    fn format(&self, f: defmt::Formatter<'_>) {
        let c = self.cursor.load(Ordering::Acquire);
        defmt::write!(
            f,
            "CallRing {{ gen: {}, calls: {}, failures: {}, slow: {} }}",
            tag(c),
            len(c),
            failures(c),
            slow(c)
        )
    }
}

impl Kind for CallRing {
    const SHAPE: Shape = Shape {
        time: false,
        size: MAX_RING_CALLS,
    };
}

impl Store for CallRing {
    fn shape(&self) -> Shape {
        Self::SHAPE
    }

    // The steady state inlined into the breaker's call path (as a `CallWindow`'s is), the
    // rest out of line.
    #[inline(always)]
    fn push(&self, rule: &Window, gen: u16, sample: Sample, _now: Instant) -> Pushed {
        let size = rule.calls().clamp(1, MAX_RING_CALLS);
        let new = bits(sample);
        let c = self.cursor.load(Ordering::Acquire);
        // The healthy steady state, tested first: a full window of clean samples.
        if new == 0 && tag(c) == gen && c >> SLOW_AT & CLEAN == u64::from(size) << (LEN_AT - SLOW_AT) {
            return Pushed::Unchanged;
        }
        self.add(c, gen, size, new)
    }
    fn clear(&self, gen: u16) {
        // The position carries on (the ring's group numbers follow it); the counts restart.
        let mut c = self.cursor.load(Ordering::Acquire);
        loop {
            let next = cursor(gen, pos(c), 0, 0, 0, None);
            match self
                .cursor
                .compare_exchange_weak(c, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(actual) => c = actual,
            }
        }
    }

    fn tally(&self, _rule: &Window, gen: u16, _now: Instant) -> Option<Tally> {
        let c = self.cursor.load(Ordering::Acquire);
        (tag(c) == gen).then(|| Tally {
            calls: len(c),
            failures: failures(c),
            timed: len(c),
            slow: slow(c),
        })
    }

    fn save(&self, _rule: &Window, gen: u16, _now: Instant) -> WindowSnapshot {
        let c = self.cursor.load(Ordering::Acquire);
        if tag(c) != gen {
            return WindowSnapshot::None;
        }
        // The newest samples a snapshot has room for; a slow failure is kept as a failure.
        let kept = len(c).min(MAX_WINDOW_CALLS);
        let (mut failures, mut slow) = (0u64, 0u64);
        for i in 0..kept {
            let s = self.sample_at(c, pos(c).wrapping_sub(i + 1));
            failures |= (s & 1) << i;
            slow |= (s >> 1 & !s & 1) << i;
        }
        WindowSnapshot::Calls {
            len: kept as u8,
            failures,
            slow,
        }
    }

    fn load(&self, rule: &Window, gen: u16, saved: &WindowSnapshot, now: Instant) {
        self.clear(gen);
        if let WindowSnapshot::Calls { len, failures, slow } = *saved {
            if rule.is_time() {
                return;
            }
            // Oldest first; a smaller window keeps the newest samples.
            let len = u32::from(len).min(MAX_WINDOW_CALLS).min(rule.calls());
            let timed = rule.times_calls();
            for i in (0..len).rev() {
                let sample = if failures >> i & 1 != 0 {
                    Sample::Fail
                } else if timed && slow >> i & 1 != 0 {
                    Sample::Slow
                } else {
                    Sample::Ok
                };
                self.push(rule, gen, sample, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Duration, Policy, WindowSize};

    fn rule(n: u32) -> Window {
        Policy::failure_rate(50, WindowSize::Calls(n), Duration::from_secs(1))
            .with_slow_calls(Duration::from_secs(1), 50)
            .window()
            .unwrap()
    }

    fn changed(p: Pushed) -> (u32, u32, u32) {
        match p {
            Pushed::Changed(t) => (t.calls, t.failures, t.slow),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cursor_round_trips() {
        let c = cursor(0xFFF, POSITIONS - 1, 1008, 1007, 3, Some(0b10));
        assert_eq!(
            (
                tag(c),
                pos(c),
                len(c),
                failures(c),
                slow(c),
                newest(c),
                c & PENDING != 0
            ),
            (0xFFF, POSITIONS - 1, 1008, 1007, 3, 0b10, true)
        );
        assert_eq!(place(SLOTS + 17), (1, (SLOTS + 17) / 16, 2));
    }

    #[test]
    fn the_widest_window_slides_and_counts() {
        let r = CallRing::new();
        let rule = rule(MAX_RING_CALLS);
        for i in 0..3000u32 {
            let s = match i % 7 {
                0 => Sample::Fail,
                3 => Sample::Slow,
                _ => Sample::Ok,
            };
            r.push(&rule, 0, s, Instant::ZERO);
        }
        let t = r.tally(&rule, 0, Instant::ZERO).unwrap();
        let last = 3000 - MAX_RING_CALLS..3000;
        assert_eq!(t.calls, MAX_RING_CALLS);
        assert_eq!(t.failures, last.clone().filter(|i| i % 7 == 0).count() as u32);
        assert_eq!(t.slow, last.filter(|i| i % 7 == 3).count() as u32);
    }

    #[test]
    fn a_healthy_full_window_writes_nothing() {
        let r = CallRing::new();
        let rule = rule(3);
        for _ in 0..3 {
            r.push(&rule, 0, Sample::Ok, Instant::ZERO);
        }
        assert_eq!(r.push(&rule, 0, Sample::Ok, Instant::ZERO), Pushed::Unchanged);
        assert_eq!(changed(r.push(&rule, 0, Sample::SlowFail, Instant::ZERO)), (3, 1, 1));
        assert_eq!(changed(r.push(&rule, 0, Sample::Ok, Instant::ZERO)), (3, 1, 1));
        assert_eq!(changed(r.push(&rule, 0, Sample::Ok, Instant::ZERO)), (3, 1, 1));
        assert_eq!(changed(r.push(&rule, 0, Sample::Ok, Instant::ZERO)), (3, 0, 0));
    }

    #[test]
    fn a_full_healthy_window_shrunk_is_cut_to_its_new_size() {
        // 64 clean samples, then a window of 1: the next clean sample is a change (the
        // window is cut to it), not the healthy steady state.
        let r = CallRing::new();
        for _ in 0..64 {
            r.push(&rule(64), 0, Sample::Ok, Instant::ZERO);
        }
        assert_eq!(r.push(&rule(64), 0, Sample::Ok, Instant::ZERO), Pushed::Unchanged);
        assert_eq!(changed(r.push(&rule(1), 0, Sample::Ok, Instant::ZERO)), (1, 0, 0));
        assert_eq!(r.push(&rule(1), 0, Sample::Ok, Instant::ZERO), Pushed::Unchanged);
    }

    #[test]
    fn a_clear_restarts_the_counts_and_drops_old_samples() {
        let r = CallRing::new();
        let rule = rule(4);
        for _ in 0..10 {
            r.push(&rule, 0, Sample::Fail, Instant::ZERO);
        }
        r.clear(1);
        assert_eq!(r.push(&rule, 0, Sample::Fail, Instant::ZERO), Pushed::Stale);
        for _ in 0..4 {
            r.push(&rule, 1, Sample::Ok, Instant::ZERO);
        }
        assert_eq!(changed(r.push(&rule, 1, Sample::Fail, Instant::ZERO)), (4, 1, 0));
    }

    #[test]
    fn a_smaller_window_keeps_the_newest_samples() {
        let r = CallRing::new();
        for s in [Sample::Fail, Sample::Fail, Sample::Ok, Sample::Ok] {
            r.push(&rule(4), 0, s, Instant::ZERO);
        }
        assert_eq!(changed(r.push(&rule(2), 0, Sample::Fail, Instant::ZERO)), (2, 1, 0));
    }

    #[test]
    fn a_snapshot_keeps_the_newest_samples_it_has_room_for() {
        let r = CallRing::new();
        let rule = rule(200);
        for i in 0..200 {
            let s = if i % 2 == 0 { Sample::Fail } else { Sample::Slow };
            r.push(&rule, 0, s, Instant::ZERO);
        }
        let saved = r.save(&rule, 0, Instant::ZERO);
        let WindowSnapshot::Calls { len, failures, slow } = saved else {
            panic!("{saved:?}")
        };
        // Newest first: the newest (199) was slow, the one before it failed.
        assert_eq!(len, 51);
        assert_eq!(failures & 0b11, 0b10);
        assert_eq!(slow & 0b11, 0b01);
        let back = CallRing::new();
        back.load(&rule, 3, &saved, Instant::ZERO);
        assert_eq!(
            back.tally(&rule, 3, Instant::ZERO)
                .map(|t| (t.calls, t.failures, t.slow)),
            Some((51, 25, 26))
        );
        assert_eq!(back.save(&rule, 3, Instant::ZERO), saved);
    }

    #[test]
    fn a_save_marks_each_sample_s_failure_and_slowness_in_its_own_bit() {
        let r = CallRing::new();
        let rule = rule(8);
        for s in [Sample::Ok, Sample::Fail, Sample::Slow, Sample::SlowFail] {
            r.push(&rule, 0, s, Instant::ZERO);
        }
        // Newest first: the slow failure (kept as a failure), slow, failed, fine.
        assert_eq!(
            r.save(&rule, 0, Instant::ZERO),
            WindowSnapshot::Calls {
                len: 4,
                failures: 0b0101,
                slow: 0b0010,
            }
        );
    }

    #[test]
    fn a_load_takes_slow_calls_only_for_a_rule_that_times_calls() {
        let saved = WindowSnapshot::Calls {
            len: 3,
            failures: 0b001,
            slow: 0b010,
        };
        let r = CallRing::new();
        r.load(&rule(8), 0, &saved, Instant::ZERO);
        let t = r
            .tally(&rule(8), 0, Instant::ZERO)
            .map(|t| (t.calls, t.failures, t.slow));
        assert_eq!(t, Some((3, 1, 1)));
        let untimed = Policy::failure_rate(50, WindowSize::Calls(8), Duration::from_secs(1))
            .window()
            .unwrap();
        r.load(&untimed, 0, &saved, Instant::ZERO);
        let t = r
            .tally(&untimed, 0, Instant::ZERO)
            .map(|t| (t.calls, t.failures, t.slow));
        assert_eq!(t, Some((3, 1, 0)));
    }

    #[test]
    fn a_caller_far_behind_writes_nothing() {
        let r = CallRing::new();
        // Position 5's group is 0; the word now holds group 64 (positions 1024..).
        r.write(1024, 0b01);
        r.write(5, 0b01);
        assert_eq!(r.read(5), 0);
        assert_eq!(r.read(1024), 0b01);
    }
}
