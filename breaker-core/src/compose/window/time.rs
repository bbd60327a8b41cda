//! The time window: ten buckets of calls, failures and slow calls, one atomic word each.

use core::fmt;

use super::sealed::{Kind, Store};
use super::{Bucket, Pushed, Sample, Tally, Window, WindowSnapshot, MAX_BUCKET_CALLS, WINDOW_BUCKETS};
use crate::atomic::{AtomicU64, Ordering};
use crate::Instant;

/// The storage of a time window ([`WindowSize::Time`](super::WindowSize::Time)): the
/// samples of a closed breaker's last span of time, in [`WINDOW_BUCKETS`] buckets of a
/// tenth of the span each. 80 bytes, whatever the span.
///
/// Each bucket is one word,
///
/// ```text
/// bits 52..64  the generation its samples belong to
/// bits 30..52  the bucket's number: (milliseconds / bucket width) modulo 10 * 2^18
/// bits 20..30  slow successes    bits 10..20  failures    bits 0..10  calls (1 to 1023;
///              a full bucket halves its three counts before its next call)
/// ```
///
/// so one compare-and-swap adds a sample to its bucket, or starts the bucket afresh when
/// its number has moved on. Bucket `b` lives in slot `b % 10`. Put in a
/// [`Windowed`](super::Windowed).
pub struct TimeWindow {
    buckets: [AtomicU64; WINDOW_BUCKETS as usize],
}

const FAILURES_AT: u32 = 10;
const SLOW_AT: u32 = 20;
const NUMBER_AT: u32 = 30;
const TAG_AT: u32 = 52;
const COUNT: u64 = 0x3FF;
/// Bucket numbers count modulo this: a multiple of the ten slots (so a bucket keeps its
/// slot when the numbers wrap) below 2^22 (the bits they have).
const NUMBERS: u32 = WINDOW_BUCKETS << 18;
const _: () = assert!(NUMBERS.is_multiple_of(WINDOW_BUCKETS) && NUMBERS <= 1 << 22);
const SLOTS: usize = WINDOW_BUCKETS as usize;

const fn tag(word: u64) -> u16 {
    (word >> TAG_AT) as u16
}

const fn number(word: u64) -> u32 {
    (word >> NUMBER_AT) as u32 & ((1 << 22) - 1)
}

const fn calls(word: u64) -> u32 {
    (word & COUNT) as u32
}

const fn failures(word: u64) -> u32 {
    (word >> FAILURES_AT & COUNT) as u32
}

const fn slow(word: u64) -> u32 {
    (word >> SLOW_AT & COUNT) as u32
}

/// An empty bucket of generation `gen`.
const fn empty(gen: u16) -> u64 {
    (gen as u64) << TAG_AT
}

/// A bucket of generation `gen`, number `n`, with these counts (cut to their bits).
const fn bucket(gen: u16, n: u32, calls: u32, failures: u32, slow: u32) -> u64 {
    empty(gen)
        | ((n % NUMBERS) as u64) << NUMBER_AT
        | (slow as u64 & COUNT) << SLOW_AT
        | (failures as u64 & COUNT) << FAILURES_AT
        | (calls as u64 & COUNT)
}

/// How many buckets `a` is after `b`, modulo the numbering (both below [`NUMBERS`], as
/// every number this code writes is; no division: this runs for every bucket of every
/// sample).
const fn after(a: u32, b: u32) -> u32 {
    let d = a.wrapping_sub(b);
    if a >= b {
        d
    } else {
        d.wrapping_add(NUMBERS)
    }
}

/// The slot of bucket number `n`.
const fn slot(n: u32) -> usize {
    (n % WINDOW_BUCKETS) as usize
}

/// The number of the bucket `now` falls in, for buckets `width` ms wide.
fn number_at(now: Instant, width: u32) -> u32 {
    now.as_millis() / width.max(1) % NUMBERS
}

/// The current bucket number for a clock reading in bucket `n`, given the buckets
/// `words`: `n`, or the newest bucket written if that is ahead of `n` by less than the
/// window (a clock that stepped back, or a caller whose reading is a little older than
/// another's: no time passed). A bucket further ahead is from a clock that stepped back
/// by more than the window, and is left to expire.
fn current(words: &[u64; SLOTS], n: u32) -> u32 {
    let mut ahead = 0;
    for w in words {
        let a = after(number(*w), n);
        if calls(*w) > 0 && a < WINDOW_BUCKETS && a > ahead {
            ahead = a;
        }
    }
    let cur = n + ahead;
    if cur >= NUMBERS {
        cur - NUMBERS
    } else {
        cur
    }
}

/// Whether `word` is a bucket of the window whose current bucket is `cur`.
const fn live(word: u64, cur: u32) -> bool {
    calls(word) > 0 && after(cur, number(word)) < WINDOW_BUCKETS
}

/// A bucket's three counts in three 21-bit lanes of a `u64`, so that ten buckets add up
/// (at most 10 x 1023 per lane) in one addition each.
const fn spread(word: u64) -> u64 {
    (word & COUNT) | (word >> FAILURES_AT & COUNT) << 21 | (word >> SLOW_AT & COUNT) << 42
}

/// The sums of [`spread`] lanes.
const fn unspread(lanes: u64) -> Tally {
    let lane = (1 << 21) - 1;
    let calls = (lanes & lane) as u32;
    Tally {
        calls,
        failures: (lanes >> 21 & lane) as u32,
        timed: calls,
        slow: (lanes >> 42 & lane) as u32,
    }
}

/// What the buckets of the window whose current bucket is `cur` hold.
fn sum(words: &[u64; SLOTS], cur: u32) -> Tally {
    let mut t = Tally::default();
    for w in words.iter().filter(|w| live(**w, cur)) {
        t.calls += calls(*w);
        t.failures += failures(*w);
        t.slow += slow(*w);
    }
    t.timed = t.calls;
    t
}

impl TimeWindow {
    /// An empty window (of the first generation, that of a new breaker).
    #[cfg(not(loom))]
    pub const fn new() -> TimeWindow {
        TimeWindow {
            buckets: [const { AtomicU64::new(empty(0)) }; SLOTS],
        }
    }

    /// An empty window (not `const` under loom).
    #[cfg(loom)]
    pub fn new() -> TimeWindow {
        TimeWindow {
            buckets: core::array::from_fn(|_| AtomicU64::new(empty(0))),
        }
    }

    /// Every bucket, each read once.
    fn words(&self) -> [u64; SLOTS] {
        let mut words = [0; SLOTS];
        for (w, b) in words.iter_mut().zip(&self.buckets) {
            *w = b.load(Ordering::Acquire);
        }
        words
    }
}

impl Default for TimeWindow {
    fn default() -> TimeWindow {
        TimeWindow::new()
    }
}

impl fmt::Debug for TimeWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words = self.words();
        let mut list = f.debug_list();
        for w in words {
            list.entry(&(tag(w), number(w), calls(w), failures(w), slow(w)));
        }
        list.finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for TimeWindow {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "TimeWindow [");
        for (i, w) in self.words().into_iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            defmt::write!(
                f,
                "{=str}({}, {}, {}, {}, {})",
                sep,
                tag(w),
                number(w),
                calls(w),
                failures(w),
                slow(w)
            );
        }
        defmt::write!(f, "]");
    }
}

impl Kind for TimeWindow {
    const TIME: bool = true;
}

impl Store for TimeWindow {
    fn is_time(&self) -> bool {
        true
    }

    fn push(&self, rule: &Window, gen: u16, sample: Sample, now: Instant) -> Pushed {
        let n = number_at(now, rule.bucket_ms());
        let (fail, slow_one) = match sample {
            Sample::Ok => (0, 0),
            Sample::Fail => (1, 0),
            Sample::Slow => (0, 1),
        };
        let at = slot(n);
        loop {
            // One pass over the buckets, each read once: their generation, what the window
            // ending at `n` holds, and whether some bucket is ahead of `n` (rare: then the
            // buckets are read again and `current` decides).
            let mut lanes = 0u64;
            let mut foreign = 0;
            let mut ahead = false;
            let mut old = 0;
            for (i, cell) in self.buckets.iter().enumerate() {
                let word = cell.load(Ordering::Acquire);
                if i == at {
                    old = word;
                }
                foreign |= tag(word) ^ gen;
                if calls(word) != 0 {
                    let number = number(word);
                    if after(n, number) < WINDOW_BUCKETS {
                        lanes += spread(word);
                    } else if after(number, n) < WINDOW_BUCKETS {
                        ahead = true;
                    }
                }
            }
            if foreign != 0 {
                return Pushed::Stale;
            }
            let mut t = unspread(lanes);
            let (cur, at) = if ahead {
                // Read again, all at once, and let `current` decide.
                let words = self.words();
                if words.iter().any(|w| tag(*w) != gen) {
                    return Pushed::Stale;
                }
                let cur = current(&words, n);
                t = sum(&words, cur);
                old = words.get(slot(cur)).copied().unwrap_or(0);
                (cur, slot(cur))
            } else {
                (n, at)
            };
            let Some(cell) = self.buckets.get(at) else {
                return Pushed::Stale; // unreachable: a slot is below 10
            };
            let counted = calls(old) > 0 && number(old) == cur;
            let base = match (counted, calls(old) >= MAX_BUCKET_CALLS) {
                (false, _) => bucket(gen, cur, 0, 0, 0),
                (true, false) => old,
                // Full: halve its counts (the rates stay, the newest calls weigh more) and
                // go on counting. (Rounding keeps failures + slow <= calls.)
                (true, true) => bucket(gen, cur, calls(old).div_ceil(2), failures(old) / 2, slow(old) / 2),
            };
            let next = bucket(gen, cur, calls(base) + 1, failures(base) + fail, slow(base) + slow_one);
            if cell
                .compare_exchange(old, next, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // The window as it is now: the bucket's new counts in place of its old ones
                // (a bucket of this slot that was not `cur` was not in the window).
                if counted {
                    // (Counted in `t` above; saturating all the same: no panic path here.)
                    t.calls = t.calls.saturating_sub(calls(old));
                    t.failures = t.failures.saturating_sub(failures(old));
                    t.slow = t.slow.saturating_sub(slow(old));
                }
                t.calls += calls(next);
                t.failures += failures(next);
                t.slow += slow(next);
                t.timed = t.calls;
                return Pushed::Changed(t);
            }
            // Lost a race for this bucket (or another one moved the window): read again.
        }
    }

    fn clear(&self, gen: u16) {
        for b in &self.buckets {
            b.store(empty(gen), Ordering::Release);
        }
    }

    fn tally(&self, rule: &Window, gen: u16, now: Instant) -> Option<Tally> {
        let words = self.words();
        if words.iter().any(|w| tag(*w) != gen) {
            return None;
        }
        Some(sum(&words, current(&words, number_at(now, rule.bucket_ms()))))
    }

    fn save(&self, rule: &Window, gen: u16, now: Instant) -> WindowSnapshot {
        let words = self.words();
        if words.iter().any(|w| tag(*w) != gen) {
            return WindowSnapshot::None;
        }
        let cur = current(&words, number_at(now, rule.bucket_ms()));
        let mut buckets = [Bucket::default(); SLOTS];
        for w in words.iter().filter(|w| live(**w, cur)) {
            if let Some(b) = buckets.get_mut(after(cur, number(*w)) as usize) {
                *b = Bucket {
                    calls: calls(*w) as u16,
                    failures: failures(*w) as u16,
                    slow: slow(*w) as u16,
                };
            }
        }
        WindowSnapshot::Time { buckets }
    }

    fn load(&self, rule: &Window, gen: u16, saved: &WindowSnapshot, now: Instant) {
        self.clear(gen);
        let WindowSnapshot::Time { buckets } = saved else {
            return;
        };
        if !rule.is_time() {
            return;
        }
        let cur = number_at(now, rule.bucket_ms());
        for (k, b) in (0u32..).zip(buckets) {
            let calls = u32::from(b.calls).min(MAX_BUCKET_CALLS);
            let failures = u32::from(b.failures).min(calls);
            let slow = u32::from(b.slow).min(calls - failures);
            if calls == 0 {
                continue;
            }
            let n = (cur + NUMBERS - k) % NUMBERS;
            if let Some(cell) = self.buckets.get(slot(n)) {
                cell.store(bucket(gen, n, calls, failures, slow), Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_word_round_trips() {
        let w = bucket(0xABC, NUMBERS - 1, 1023, 512, 511);
        assert_eq!(
            (tag(w), number(w), calls(w), failures(w), slow(w)),
            (0xABC, NUMBERS - 1, 1023, 512, 511)
        );
        assert_eq!(number(bucket(0, NUMBERS, 1, 0, 0)), 0);
    }

    #[test]
    fn numbering_wraps_without_moving_a_bucket_to_another_slot() {
        assert_eq!(slot(NUMBERS - 1), 9);
        assert_eq!(slot(after(NUMBERS + 3, 0)), 3);
        assert_eq!(after(2, NUMBERS - 1), 3);
    }

    #[test]
    fn the_current_bucket_never_goes_back_within_the_window() {
        let mut words = [empty(1); SLOTS];
        words[5] = bucket(1, 105, 1, 0, 0);
        // A reading in bucket 103 (two behind the newest): the window stays at 105.
        assert_eq!(current(&words, 103), 105);
        // A reading far behind (the clock stepped back by more than the window): afresh.
        assert_eq!(current(&words, 50), 50);
        // Ahead: the reading wins.
        assert_eq!(current(&words, 120), 120);
    }

    #[test]
    fn a_full_bucket_halves_and_goes_on_counting() {
        use crate::{Duration, Policy, WindowSize};
        let policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(1));
        let rule = policy.window().unwrap();
        let w = TimeWindow::new();
        let at = Instant::from_millis(5_000);
        for _ in 0..1023 {
            w.push(&rule, 0, Sample::Ok, at);
        }
        for _ in 0..10 {
            w.push(&rule, 0, Sample::Slow, at);
        }
        // 1023 successes, then: halved to 512, and the 10 slow calls counted after.
        assert_eq!(
            w.tally(&rule, 0, at),
            Some(Tally {
                calls: 522,
                failures: 0,
                timed: 522,
                slow: 10
            })
        );
        // A burst of failures after a burst of successes is seen, whatever the rate.
        let mut tripping = None;
        for i in 0..2000 {
            if let Pushed::Changed(t) = w.push(&rule, 0, Sample::Fail, at) {
                if t.failures * 2 >= t.calls {
                    tripping = Some(i);
                    break;
                }
            }
        }
        assert!(tripping.is_some_and(|i| i < 1100), "{tripping:?}");
        let words = w.words();
        assert!(words
            .iter()
            .all(|w| failures(*w) + slow(*w) <= calls(*w) && calls(*w) <= 1023));
    }

    #[test]
    fn only_the_last_ten_buckets_count() {
        let mut words = [empty(1); SLOTS];
        for (i, w) in words.iter_mut().enumerate() {
            *w = bucket(1, 20 + i as u32, 2, 1, 0);
        }
        assert_eq!(sum(&words, 29).calls, 20);
        // Bucket 30 replaces 20 in slot 0; at 30 the window is 21..=30.
        words[0] = bucket(1, 30, 1, 1, 0);
        let t = sum(&words, 30);
        assert_eq!((t.calls, t.failures, t.timed), (19, 10, 19));
        assert_eq!(sum(&words, 39).calls, 1);
        assert_eq!(sum(&words, 40).calls, 0);
    }
}
