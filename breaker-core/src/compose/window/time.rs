//! The time window: `B` buckets (ten by default) of calls, failures and slow calls, one
//! atomic word each.

use core::fmt;

use super::sealed::{Kind, Store};
use super::{
    Bucket, Pushed, Sample, Shape, Tally, Window, WindowSnapshot, MAX_BUCKET_CALLS, MAX_WINDOW_BUCKETS, WINDOW_BUCKETS,
};
use crate::atomic::{AtomicU64, Ordering};
use crate::Instant;

/// The storage of a time window ([`WindowSize::Time`](super::WindowSize::Time)): the
/// samples of a closed breaker's last span of time, in `B` buckets of `1/B` of the span
/// each: [`WINDOW_BUCKETS`] (ten) unless the type says otherwise, 1 to
/// [`MAX_WINDOW_BUCKETS`] (a compile error beyond). 8 bytes per bucket, whatever the span:
/// 80 bytes with ten, 480 with sixty (`TimeWindow<60>`: resilience4j's one bucket per
/// second over a minute). Each call reads every bucket once, so more buckets cost more per
/// call (`bench/README.md`).
///
/// Each bucket is one word,
///
/// ```text
/// bits 52..64  the generation its samples belong to
/// bits 30..52  the bucket's number: (milliseconds / bucket width) modulo B * 2^k, the
///              largest such multiple of B up to 2^22 (10 * 2^18 for ten buckets)
/// bits 20..30  slow calls    bits 10..20  failures    bits 0..10  calls (1 to 1023;
///              a full bucket halves its three counts before its next call)
/// ```
///
/// so one compare-and-swap adds a sample to its bucket, or starts the bucket afresh when
/// its number has moved on. Bucket `b` lives in slot `b % B`. Put in a
/// [`Windowed`](super::Windowed).
pub struct TimeWindow<const B: usize = 10> {
    buckets: [AtomicU64; B],
}

const FAILURES_AT: u32 = 10;
const SLOW_AT: u32 = 20;
const NUMBER_AT: u32 = 30;
const TAG_AT: u32 = 52;
const COUNT: u64 = 0x3FF;

/// Bucket numbers of a window of `B` buckets count modulo this: a multiple of the `B`
/// slots (so a bucket keeps its slot when the numbers wrap) up to 2^22 (the bits they
/// have): `B` times the largest power of two that fits.
const fn numbers<const B: usize>() -> u32 {
    let b = if B == 0 { 1 } else { B as u32 };
    let mut n = b;
    while n << 1 <= 1 << 22 {
        n <<= 1;
    }
    n
}
const _: () = assert!(numbers::<WINDOW_BUCKETS_USIZE>() == WINDOW_BUCKETS << 18);
const _: () = assert!(numbers::<{ MAX_WINDOW_BUCKETS as usize }>() <= 1 << 22);
// Ten buckets of full counts add up in a lane of `spread`, and so do the most buckets.
const _: () = assert!(MAX_WINDOW_BUCKETS * MAX_BUCKET_CALLS < 1 << 21);
const WINDOW_BUCKETS_USIZE: usize = WINDOW_BUCKETS as usize;

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
const fn bucket<const B: usize>(gen: u16, n: u32, calls: u32, failures: u32, slow: u32) -> u64 {
    empty(gen)
        | ((n % numbers::<B>()) as u64) << NUMBER_AT
        | (slow as u64 & COUNT) << SLOW_AT
        | (failures as u64 & COUNT) << FAILURES_AT
        | (calls as u64 & COUNT)
}

/// How many buckets `a` is after `b`, modulo the numbering (both below [`numbers`], as
/// every number this code writes is; no division: this runs for every bucket of every
/// sample).
const fn after<const B: usize>(a: u32, b: u32) -> u32 {
    let d = a.wrapping_sub(b);
    if a >= b {
        d
    } else {
        d.wrapping_add(numbers::<B>())
    }
}

/// The slot of bucket number `n`.
const fn slot<const B: usize>(n: u32) -> usize {
    (n % if B == 0 { 1 } else { B as u32 }) as usize
}

/// The number of the bucket `now` falls in, for buckets `width` ms wide.
fn number_at<const B: usize>(now: Instant, width: u32) -> u32 {
    now.as_millis() / width.max(1) % numbers::<B>()
}

/// The current bucket number for a clock reading in bucket `n`, given the buckets
/// `words`: `n`, or the newest bucket written if that is ahead of `n` by less than the
/// window (a clock that stepped back, or a caller whose reading is a little older than
/// another's: no time passed). A bucket further ahead is from a clock that stepped back
/// by more than the window, and is left to expire.
fn current<const B: usize>(words: &[u64; B], n: u32) -> u32 {
    let mut ahead = 0;
    for w in words {
        let a = after::<B>(number(*w), n);
        if calls(*w) > 0 && a < B as u32 && a > ahead {
            ahead = a;
        }
    }
    let cur = n + ahead;
    if cur >= numbers::<B>() {
        cur - numbers::<B>()
    } else {
        cur
    }
}

/// Whether `word` is a bucket of the window whose current bucket is `cur`.
const fn live<const B: usize>(word: u64, cur: u32) -> bool {
    calls(word) > 0 && after::<B>(cur, number(word)) < B as u32
}

/// A bucket's three counts in three 21-bit lanes of a `u64`, so that the buckets add up
/// (at most [`MAX_WINDOW_BUCKETS`] x 1023 per lane) in one addition each.
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
fn sum<const B: usize>(words: &[u64; B], cur: u32) -> Tally {
    let mut t = Tally::default();
    for w in words.iter().filter(|w| live::<B>(**w, cur)) {
        t.calls += calls(*w);
        t.failures += failures(*w);
        t.slow += slow(*w);
    }
    t.timed = t.calls;
    t
}

impl<const B: usize> TimeWindow<B> {
    /// A compile error unless `B` is 1 to [`MAX_WINDOW_BUCKETS`].
    const BUCKETS_FIT: () = assert!(
        B >= 1 && B <= MAX_WINDOW_BUCKETS as usize,
        "a time window has 1 to 240 buckets"
    );

    /// An empty window (of the first generation, that of a new breaker).
    #[cfg(not(loom))]
    pub const fn new() -> TimeWindow<B> {
        #[allow(clippy::let_unit_value)]
        let () = Self::BUCKETS_FIT;
        TimeWindow {
            buckets: [const { AtomicU64::new(empty(0)) }; B],
        }
    }

    /// An empty window (not `const` under loom).
    #[cfg(loom)]
    pub fn new() -> TimeWindow<B> {
        #[allow(clippy::let_unit_value)]
        let () = Self::BUCKETS_FIT;
        TimeWindow {
            buckets: core::array::from_fn(|_| AtomicU64::new(empty(0))),
        }
    }

    /// Every bucket, each read once.
    fn words(&self) -> [u64; B] {
        let mut words = [0; B];
        for (w, b) in words.iter_mut().zip(&self.buckets) {
            *w = b.load(Ordering::Acquire);
        }
        words
    }
}

impl<const B: usize> Default for TimeWindow<B> {
    fn default() -> TimeWindow<B> {
        TimeWindow::new()
    }
}

impl<const B: usize> fmt::Debug for TimeWindow<B> {
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
impl<const B: usize> defmt::Format for TimeWindow<B> {
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

impl<const B: usize> Kind for TimeWindow<B> {
    const SHAPE: Shape = Shape {
        time: true,
        size: B as u32,
    };
}

impl<const B: usize> Store for TimeWindow<B> {
    fn shape(&self) -> Shape {
        Self::SHAPE
    }

    fn push(&self, rule: &Window, gen: u16, sample: Sample, now: Instant) -> Pushed {
        let n = number_at::<B>(now, rule.bucket_ms(B as u32));
        let (fail, slow_one) = (sample.fails() as u32, sample.slow() as u32);
        let at = slot::<B>(n);
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
                    if after::<B>(n, number) < B as u32 {
                        lanes += spread(word);
                    } else if after::<B>(number, n) < B as u32 {
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
                old = words.get(slot::<B>(cur)).copied().unwrap_or(0);
                (cur, slot::<B>(cur))
            } else {
                (n, at)
            };
            let Some(cell) = self.buckets.get(at) else {
                return Pushed::Stale; // unreachable: a slot is below B
            };
            let counted = calls(old) > 0 && number(old) == cur;
            let base = match (counted, calls(old) >= MAX_BUCKET_CALLS) {
                (false, _) => bucket::<B>(gen, cur, 0, 0, 0),
                (true, false) => old,
                // Full: halve its counts (the rates stay, the newest calls weigh more) and
                // go on counting. (Rounding keeps failures <= calls and slow <= calls, and
                // failures + slow <= calls unless slow failures count as both.)
                (true, true) => bucket::<B>(gen, cur, calls(old).div_ceil(2), failures(old) / 2, slow(old) / 2),
            };
            let next = bucket::<B>(gen, cur, calls(base) + 1, failures(base) + fail, slow(base) + slow_one);
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
        Some(sum(
            &words,
            current(&words, number_at::<B>(now, rule.bucket_ms(B as u32))),
        ))
    }

    fn save(&self, rule: &Window, gen: u16, now: Instant) -> WindowSnapshot {
        let words = self.words();
        if words.iter().any(|w| tag(*w) != gen) {
            return WindowSnapshot::None;
        }
        let cur = current(&words, number_at::<B>(now, rule.bucket_ms(B as u32)));
        // The newest ten buckets (all of them with ten or fewer); a slow failure is kept as
        // a failure (a snapshot's bucket has failures + slow <= calls).
        let mut buckets = [Bucket::default(); WINDOW_BUCKETS as usize];
        for w in words.iter().filter(|w| live::<B>(**w, cur)) {
            if let Some(b) = buckets.get_mut(after::<B>(cur, number(*w)) as usize) {
                *b = Bucket {
                    calls: calls(*w) as u16,
                    failures: failures(*w) as u16,
                    slow: slow(*w).min(calls(*w) - failures(*w).min(calls(*w))) as u16,
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
        let cur = number_at::<B>(now, rule.bucket_ms(B as u32));
        // A window of fewer than ten buckets takes the newest it has room for.
        for (k, b) in (0u32..B as u32).zip(buckets) {
            let calls = u32::from(b.calls).min(MAX_BUCKET_CALLS);
            let failures = u32::from(b.failures).min(calls);
            let slow = u32::from(b.slow).min(calls - failures);
            if calls == 0 {
                continue;
            }
            let n = (cur + numbers::<B>() - k) % numbers::<B>();
            if let Some(cell) = self.buckets.get(slot::<B>(n)) {
                cell.store(bucket::<B>(gen, n, calls, failures, slow), Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOTS: usize = 10;
    const NUMBERS: u32 = numbers::<SLOTS>();
    const fn bucket(gen: u16, n: u32, calls: u32, failures: u32, slow: u32) -> u64 {
        super::bucket::<SLOTS>(gen, n, calls, failures, slow)
    }
    const fn slot(n: u32) -> usize {
        super::slot::<SLOTS>(n)
    }
    const fn after(a: u32, b: u32) -> u32 {
        super::after::<SLOTS>(a, b)
    }

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
    fn the_current_bucket_holds_across_the_numbering_s_wrap() {
        // Slots never used hold number 0 with no calls: a reading just before the wrap
        // (where 0 would be one bucket ahead) is not moved on by them.
        let words = [empty(1); SLOTS];
        assert_eq!(current(&words, NUMBERS - 1), NUMBERS - 1);
        // A clock stepped back across the wrap, two buckets behind the newest: the window
        // stays at that bucket, numbered after the wrap.
        let mut words = [empty(1); SLOTS];
        words[slot(2)] = bucket(1, 2, 1, 0, 0);
        assert_eq!(current(&words, NUMBERS - 2), 2);
        assert_eq!(current(&words, NUMBERS - 1), 2);
    }

    fn rule_of_ten_seconds() -> Window {
        use crate::{Duration, Policy, WindowSize};
        Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(1))
            .with_slow_calls(Duration::from_secs(1), 50)
            .window()
            .unwrap()
    }

    #[test]
    fn a_push_answers_without_the_bucket_a_window_behind_in_its_slot() {
        let rule = rule_of_ten_seconds();
        let w = TimeWindow::<10>::new();
        w.push(&rule, 0, Sample::Fail, Instant::ZERO);
        // Bucket 10 takes bucket 0's slot: the failure has left the window.
        let Pushed::Changed(t) = w.push(&rule, 0, Sample::Ok, Instant::from_millis(10_000)) else {
            panic!("a push into a fresh bucket changes the window");
        };
        assert_eq!((t.calls, t.failures, t.slow), (1, 0, 0));
    }

    #[test]
    fn slow_failures_are_saved_and_loaded_as_failures_only() {
        // A slow failure counts in a bucket's failures and its slow calls; a snapshot's
        // bucket has failures + slow <= calls, so it keeps the failure.
        let rule = rule_of_ten_seconds();
        let w = TimeWindow::<10>::new();
        let at = Instant::from_millis(3_000);
        w.push(&rule, 0, Sample::SlowFail, at);
        w.push(&rule, 0, Sample::SlowFail, at);
        w.push(&rule, 0, Sample::Slow, at);
        assert_eq!(w.words()[3], bucket(0, 3, 3, 2, 3));
        let saved = w.save(&rule, 0, at);
        let mut buckets = [Bucket::default(); WINDOW_BUCKETS as usize];
        buckets[0] = Bucket {
            calls: 3,
            failures: 2,
            slow: 1,
        };
        assert_eq!(saved, WindowSnapshot::Time { buckets });
        // A snapshot's bucket with more than that (not one `save` writes) is cut the same
        // way on loading.
        buckets[0] = Bucket {
            calls: 2,
            failures: 2,
            slow: 2,
        };
        let back = TimeWindow::<10>::new();
        back.load(&rule, 0, &WindowSnapshot::Time { buckets }, at);
        assert_eq!(back.words()[3], bucket(0, 3, 2, 2, 0));
    }

    #[test]
    fn a_full_bucket_halves_and_goes_on_counting() {
        use crate::{Duration, Policy, WindowSize};
        let policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(1));
        let rule = policy.window().unwrap();
        let w = TimeWindow::<10>::new();
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
    fn a_saved_window_keeps_bucket_zero_beside_slots_never_used() {
        // Never-used slots hold number 0 with no calls: they are not buckets of the window,
        // and must not stand in for bucket 0 (the first after the clock's zero).
        use crate::{Duration, Policy, WindowSize};
        let policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(1));
        let rule = policy.window().unwrap();
        let w = TimeWindow::<10>::new();
        w.push(&rule, 0, Sample::Fail, Instant::ZERO);
        w.push(&rule, 0, Sample::Slow, Instant::ZERO);
        w.push(&rule, 0, Sample::Ok, Instant::ZERO);
        let mut buckets = [Bucket::default(); WINDOW_BUCKETS as usize];
        buckets[0] = Bucket {
            calls: 3,
            failures: 1,
            slow: 1,
        };
        assert_eq!(w.save(&rule, 0, Instant::ZERO), WindowSnapshot::Time { buckets });
    }

    #[test]
    fn a_loaded_window_puts_the_saved_newest_bucket_at_the_current_one() {
        use crate::{Duration, Policy, WindowSize};
        let policy = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(1));
        let rule = policy.window().unwrap();
        let w = TimeWindow::<10>::new();
        w.push(&rule, 0, Sample::Fail, Instant::from_millis(3_000));
        w.push(&rule, 0, Sample::Ok, Instant::from_millis(4_000));
        w.push(&rule, 0, Sample::Slow, Instant::from_millis(5_000));
        let saved = w.save(&rule, 0, Instant::from_millis(5_500));
        // Loaded two buckets later: buckets 7, 6 and 5 hold what 5, 4 and 3 held.
        let later = Instant::from_millis(7_500);
        let back = TimeWindow::<10>::new();
        back.load(&rule, 2, &saved, later);
        assert_eq!(
            back.tally(&rule, 2, later),
            Some(Tally {
                calls: 3,
                failures: 1,
                timed: 3,
                slow: 1
            })
        );
        assert_eq!(back.save(&rule, 2, later), saved);
        // Bucket 5 (the saved bucket 3, its failure) leaves the window at bucket 15.
        let t = back.tally(&rule, 2, Instant::from_millis(15_000)).unwrap();
        assert_eq!((t.calls, t.failures, t.slow), (2, 0, 1));
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
