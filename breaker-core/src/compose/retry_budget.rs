//! The retry budget: the retries of every caller of one upstream held to a share of their
//! first attempts plus a floor per second, over a sliding window (Finagle's `RetryBudget`).
//!
//! See [`RetryBudget`].

use core::fmt;

use crate::atomic::{AtomicU32, AtomicU64, Ordering};
use crate::{Duration, Instant};

/// Buckets in the window.
const N: u32 = 10;

// The word layouts. The head (the current bucket) and each slot of the ring (a past
// bucket) are one `AtomicU64` each, laid out alike:
//
//   bits 63..38  the bucket's index on the clock's grid (reading / width; < 2^26, since a
//                bucket is at least 100 ms wide)
//   bit  37      slot: written (a zero slot is empty); head: clear
//   bits 36..32  the window's generation (bumped when the window starts afresh), mod 32
//   bits 31..0   the bucket's balance in hundredths of a retry, an `i32` stored plus 2^31
//                (so that adding to the word adds to the balance, and a carry out of
//                these bits is an overflow)
//
// Moving the window on writes the head, marked written, into its slot, then replaces the
// head; the replacement succeeds only if the head is still what was written, so a slot
// ends up holding its bucket's final word.
const INDEX_SHIFT: u32 = 38;
const WRITTEN: u64 = 1 << 37;
const GEN_SHIFT: u32 = 32;
const GEN_MASK: u64 = 0x1f;

const fn index_of(w: u64) -> u32 {
    (w >> INDEX_SHIFT) as u32
}

const fn gen_of(w: u64) -> u32 {
    ((w >> GEN_SHIFT) & GEN_MASK) as u32
}

const BIAS: u32 = 1 << 31;

const fn net_of(w: u64) -> i32 {
    (w as u32 ^ BIAS) as i32
}

const fn word(index: u32, gen: u32, net: i32) -> u64 {
    ((index as u64) << INDEX_SHIFT) | (((gen as u64) & GEN_MASK) << GEN_SHIFT) | ((net as u32 ^ BIAS) as u64)
}

/// `w` with `amount` hundredths added to its balance, unless that overflows.
#[inline(always)]
const fn plus(w: u64, amount: u32) -> Option<u64> {
    match (w as u32).checked_add(amount) {
        Some(_) => Some(w + amount as u64),
        None => None,
    }
}

/// `w` with `amount` hundredths taken from its balance, unless that overflows.
#[inline(always)]
const fn minus(w: u64, amount: u32) -> Option<u64> {
    match (w as u32).checked_sub(amount) {
        Some(_) => Some(w - amount as u64),
        None => None,
    }
}

/// Where a reading falls, seen from the head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// In the current bucket (or before it by at most the window).
    Current,
    /// In bucket `target`, 1 to 9 buckets after the current one.
    Near(u32),
    /// Ten or more buckets away (or more than the window before): a fresh window at
    /// bucket `target`.
    Far(u32),
}

/// A budget of retries shared by every [`Ladder`](crate::Ladder) in front of one upstream
/// ([`Ladder::budget`](crate::Ladder::budget)): at most `percent` % of the first attempts
/// plus `min_per_sec` retries a second, over a sliding `window`. Fixed size (eleven 64-bit
/// atomic words and six 32-bit numbers), lock-free, no allocation; [`RetryBudget::new`] is
/// a `const fn`, so a budget lives in a `static` and every thread shares it.
///
/// Retries multiply load exactly when an upstream can least take it: with three retries a
/// call, an outage quadruples the traffic. A budget shared by every ladder in front of one
/// upstream caps that: with Finagle's default, retries may add 20 % to the first attempts,
/// plus 10 retries a second so that a quiet upstream can still be retried.
///
/// # Semantics
///
/// Amounts are kept exactly, in hundredths of a retry; nothing is rounded until a retry is
/// asked for.
///
/// - **The window** is [`RetryBudget::BUCKETS`] buckets of `window / 10` each (rounded down
///   to the millisecond), on the clock's grid: bucket `k` covers the readings
///   `k * width ..= (k + 1) * width - 1` ms. At a reading in bucket `k` the window is
///   buckets `k - 9 ..= k`: a bucket's counts leave all at once when it is ten buckets old,
///   so what is counted spans between nine and ten widths of the past.
/// - **A deposit** ([`RetryBudget::deposit`], made by a ladder once the first attempt the
///   breaker let through is answered) adds `percent` hundredths to the bucket of its
///   reading.
/// - **A withdrawal** ([`RetryBudget::try_withdraw`], made by a ladder before each retry)
///   succeeds, taking 100 hundredths from the bucket of its reading, if and only if the
///   balance is at least one whole retry, where
///   `balance = 100 * min_per_sec * window_secs + Σ deposits − Σ withdrawals` over the
///   window. Over any window the retries allowed therefore never exceed
///   `min_per_sec * window_secs + percent / 100 * first attempts` (rounded down).
/// - **The floor** (`min_per_sec * window_secs` retries) is a constant part of the balance,
///   as in Finagle, not a refill: with no traffic at all, that many retries are allowed in
///   any window, and more only as old withdrawals leave the window.
/// - **Time** is the reading passed in (a ladder passes its clock's). A reading in a later
///   bucket moves the window on to it (buckets ten or more old leave). A reading before the
///   current bucket (the newest any caller has counted in) by at most the window counts in
///   the current bucket: callers whose readings are a little apart share it, and the window
///   never slides back. A reading earlier still starts the window afresh there (the floor
///   alone), as does a jump of ten buckets or more ahead (by then everything has left
///   anyway). Like every instant in this crate, readings are compared within 2^31 ms (about
///   24.8 days); when the millisecond counter wraps (every 2^32 ms) the window starts
///   afresh. A new budget's current bucket is bucket 0.
/// - **Capacity**: a bucket holds at most 2^31 − 1 hundredths either way (about 21 million
///   retries' worth): a deposit past that is not counted, a withdrawal past it refused.
///
/// Every operation is a few atomic loads and one compare-and-swap on the word holding the
/// current bucket, retried if another caller changed it in between (lock-free: no lock, and
/// no caller waits for another to finish). Moving the window on to a new bucket writes the
/// current one into its slot of the ring, then swaps the new one in. Two callers asking
/// for the last retry get it once; no deposit is lost. The counts of retries allowed and refused are kept
/// beside, for reports ([`RetryBudget::snapshot`]).
///
/// # Example
///
/// ```
/// use breaker_core::{Duration, Instant, RetryBudget};
///
/// // Finagle's default: 20 % of the first attempts, plus 10 retries a second, over 10 s.
/// static BUDGET: RetryBudget = RetryBudget::new(20, 10, Duration::from_secs(10));
///
/// let t = Instant::from_millis(500);
/// // No traffic yet: the floor alone, 10 a second over 10 s.
/// assert_eq!(BUDGET.snapshot(t).balance, 100);
/// for _ in 0..100 {
///     assert!(BUDGET.try_withdraw(t));
/// }
/// assert!(!BUDGET.try_withdraw(t)); // spent
/// // Five first attempts at 20 % pay for one more retry.
/// for _ in 0..5 {
///     BUDGET.deposit(t);
/// }
/// assert!(BUDGET.try_withdraw(t));
/// assert!(!BUDGET.try_withdraw(t));
/// let s = BUDGET.snapshot(t);
/// assert_eq!((s.allowed, s.refused, s.balance), (101, 2, 0));
/// // Ten seconds on, everything has left the window: the floor again.
/// assert_eq!(BUDGET.snapshot(Instant::from_millis(10_500)).balance, 100);
/// ```
///
/// Nonsense is rejected: in a `const` or `static` it does not compile,
///
/// ```compile_fail
/// use breaker_core::{Duration, RetryBudget};
/// static NEVER: RetryBudget = RetryBudget::new(20, 10, Duration::ZERO); // at least 1 s
/// ```
///
/// and [`RetryBudget::try_new`] returns a [`RetryBudgetError`] for values known only at
/// run time.
pub struct RetryBudget {
    percent: u32,
    min_per_sec: u32,
    /// A bucket's width, in ms (at least 100).
    width: u32,
    /// `(N + 1) * width`: a reading counts in the current bucket if it is less than this
    /// after the start of the window that ends with it (see [`RetryBudget::is_current`]).
    span: u32,
    /// The current bucket.
    head: AtomicU64,
    /// The past buckets, at `index % N`.
    slots: [AtomicU64; N as usize],
    allowed: AtomicU32,
    refused: AtomicU32,
}

/// Why a retry budget was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RetryBudgetError {
    /// The share of first attempts was above [`RetryBudget::MAX_PERCENT`].
    PercentTooHigh,
    /// The window was shorter than [`RetryBudget::MIN_WINDOW`] (zero included).
    WindowTooShort,
}

impl RetryBudgetError {
    /// What went wrong, as one sentence.
    pub const fn message(self) -> &'static str {
        match self {
            RetryBudgetError::PercentTooHigh => "retry budget percent must be at most 1000",
            RetryBudgetError::WindowTooShort => "retry budget window must be at least 1 s",
        }
    }

    const fn fail(self) -> ! {
        // A `const` panic needs a literal message per variant to show it at compile time.
        match self {
            RetryBudgetError::PercentTooHigh => panic!("retry budget percent must be at most 1000"),
            RetryBudgetError::WindowTooShort => panic!("retry budget window must be at least 1 s"),
        }
    }
}

impl fmt::Display for RetryBudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl core::error::Error for RetryBudgetError {}

/// A retry budget's figures at one reading: for a report or a health endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RetryBudgetSnapshot {
    /// Whole retries the budget would allow now, were nothing else deposited: the balance
    /// rounded down. Negative when the window's withdrawals outweigh what is left of its
    /// deposits (those that paid for them have left the window).
    pub balance: i64,
    /// Withdrawals allowed since the budget was made (wrapping at 2^32).
    pub allowed: u32,
    /// Withdrawals refused since the budget was made (wrapping at 2^32).
    pub refused: u32,
}

/// How far back a bucket's counts stay in the sum: the `N` buckets of the window and the
/// one being filled, each `width` ms wide.
const fn span(width: u32) -> u32 {
    (N + 1) * width
}

/// The width of a bucket for `window`, or why not.
const fn check(percent: u32, window: Duration) -> Result<u32, RetryBudgetError> {
    if percent > RetryBudget::MAX_PERCENT {
        return Err(RetryBudgetError::PercentTooHigh);
    }
    if window.as_millis() < RetryBudget::MIN_WINDOW.as_millis() {
        return Err(RetryBudgetError::WindowTooShort);
    }
    Ok(window.as_millis() / N)
}

impl RetryBudget {
    /// The highest share of first attempts a budget accepts, in percent: ten retries per
    /// first attempt.
    pub const MAX_PERCENT: u32 = 1000;
    /// The shortest window a budget accepts.
    pub const MIN_WINDOW: Duration = Duration::from_secs(1);
    /// Buckets in a budget's window.
    pub const BUCKETS: u32 = N;

    /// A budget allowing `percent` % of the first attempts (0 to [`RetryBudget::MAX_PERCENT`])
    /// plus `min_per_sec` retries a second, over `window` (at least
    /// [`RetryBudget::MIN_WINDOW`]). `RetryBudget::new(20, 10, Duration::from_secs(10))` is
    /// Finagle's default. A budget of `0` and `0` allows no retry at all.
    ///
    /// # Panics
    /// On a nonsense value (a compile error in a `const`); see [`RetryBudget::try_new`].
    #[cfg(not(loom))]
    pub const fn new(percent: u32, min_per_sec: u32, window: Duration) -> RetryBudget {
        match Self::try_new(percent, min_per_sec, window) {
            Ok(budget) => budget,
            Err(e) => e.fail(),
        }
    }

    /// [`RetryBudget::new`] for values known only at run time.
    #[cfg(not(loom))]
    pub const fn try_new(percent: u32, min_per_sec: u32, window: Duration) -> Result<RetryBudget, RetryBudgetError> {
        match check(percent, window) {
            Ok(width) => Ok(RetryBudget {
                percent,
                min_per_sec,
                width,
                span: span(width),
                head: AtomicU64::new(word(0, 0, 0)),
                slots: [const { AtomicU64::new(0) }; N as usize],
                allowed: AtomicU32::new(0),
                refused: AtomicU32::new(0),
            }),
            Err(e) => Err(e),
        }
    }

    /// [`RetryBudget::new`] (not `const` under loom).
    #[cfg(loom)]
    pub fn new(percent: u32, min_per_sec: u32, window: Duration) -> RetryBudget {
        match Self::try_new(percent, min_per_sec, window) {
            Ok(budget) => budget,
            Err(e) => e.fail(),
        }
    }

    /// [`RetryBudget::try_new`] (not `const` under loom).
    #[cfg(loom)]
    pub fn try_new(percent: u32, min_per_sec: u32, window: Duration) -> Result<RetryBudget, RetryBudgetError> {
        let width = check(percent, window)?;
        Ok(RetryBudget {
            percent,
            min_per_sec,
            width,
            span: span(width),
            head: AtomicU64::new(word(0, 0, 0)),
            slots: core::array::from_fn(|_| AtomicU64::new(0)),
            allowed: AtomicU32::new(0),
            refused: AtomicU32::new(0),
        })
    }

    /// The share of first attempts that may be retried, in percent.
    pub const fn percent(&self) -> u32 {
        self.percent
    }

    /// The retries allowed a second whatever the traffic.
    pub const fn min_per_sec(&self) -> u32 {
        self.min_per_sec
    }

    /// The window: ten buckets, each a tenth of the window given, rounded down to the
    /// millisecond.
    pub const fn window(&self) -> Duration {
        Duration::from_millis(self.width * N)
    }

    /// Counts a first attempt at `now`: `percent` hundredths of a retry, in the bucket of
    /// `now`.
    #[inline(always)]
    pub fn deposit(&self, now: Instant) {
        // The usual case, inline: `now` in the current bucket, nobody else changing it.
        let h = self.head.load(Ordering::Acquire);
        if self.is_current(h, now) {
            let Some(next) = plus(h, self.percent) else {
                return; // the bucket is full: not counted
            };
            if self
                .head
                .compare_exchange_weak(h, next, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
        }
        self.deposit_again(now);
    }

    /// [`RetryBudget::deposit`] once the window must move or another caller got in first.
    #[cold]
    #[inline(never)]
    fn deposit_again(&self, now: Instant) {
        let mut h = self.current(now);
        loop {
            let Some(next) = plus(h, self.percent) else {
                return; // the bucket is full: not counted
            };
            match self
                .head
                .compare_exchange_weak(h, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(seen) => h = self.settle(seen, now),
            }
        }
    }

    /// Asks for one retry at `now`: `true`, and the retry is counted in the bucket of
    /// `now`, if the balance is at least one whole retry; `false` otherwise (nothing
    /// changes but the count of refusals).
    pub fn try_withdraw(&self, now: Instant) -> bool {
        let allowed = self.withdraw(now);
        let count = if allowed { &self.allowed } else { &self.refused };
        count.fetch_add(1, Ordering::Relaxed);
        allowed
    }

    fn withdraw(&self, now: Instant) -> bool {
        let mut h = self.current(now);
        loop {
            let Some(next) = minus(h, 100) else {
                return false; // the bucket cannot count another
            };
            let index = index_of(h);
            if self.sum(index, gen_of(h), index, net_of(h)) < 100 {
                // Refused on what was read, if the head did not move meanwhile (a slot the
                // sum read cannot change while the head stays).
                let again = self.head.load(Ordering::Acquire);
                if again == h {
                    return false;
                }
                h = self.settle(again, now);
                continue;
            }
            match self.head.compare_exchange(h, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(seen) => h = self.settle(seen, now),
            }
        }
    }

    /// The budget's figures at `now`, without changing anything.
    pub fn snapshot(&self, now: Instant) -> RetryBudgetSnapshot {
        let h = self.head.load(Ordering::Acquire);
        let (index, gen, net) = (index_of(h), gen_of(h), net_of(h));
        let sum = match self.place(h, now) {
            Place::Current => self.sum(index, gen, index, net),
            Place::Near(target) => self.sum(target, gen, index, net),
            Place::Far(_) => self.floor(),
        };
        RetryBudgetSnapshot {
            balance: sum.div_euclid(100),
            allowed: self.allowed.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    /// The floor, in hundredths: `100 * min_per_sec * window_secs`, which with ten buckets
    /// of `width` ms is `min_per_sec * width`.
    const fn floor(&self) -> i64 {
        self.min_per_sec as i64 * self.width as i64
    }

    /// The balance, in hundredths, of the window ending at bucket `view`, with the head at
    /// bucket `head` holding `net` in generation `gen`. The head is in that window: it is
    /// `view`, or one of the nine buckets before it (a head further back is a `Place::Far`,
    /// whose window holds the floor alone).
    fn sum(&self, view: u32, gen: u32, head: u32, net: i32) -> i64 {
        debug_assert!(view.wrapping_sub(head) < N);
        let mut sum = self.floor() + i64::from(net);
        // The nine buckets before `view`: each can be in one slot only, written with this
        // generation; the head's own bucket is counted from the head.
        let mut pos = view % N;
        for age in 1..N {
            pos = if pos == 0 { N - 1 } else { pos - 1 };
            let Some(index) = view.checked_sub(age) else {
                break; // before bucket 0: nothing
            };
            if index == head {
                continue;
            }
            let w = self.slots[pos as usize].load(Ordering::Acquire);
            if w >> GEN_SHIFT == (word(index, gen, 0) | WRITTEN) >> GEN_SHIFT {
                sum += i64::from(net_of(w));
            }
        }
        sum
    }

    /// Whether `now` counts in head `h`'s bucket: in it, or before it by at most the
    /// window. With `offset` the reading's distance from the bucket's start, that is
    /// `-window <= offset < width`, which wrapping arithmetic tests in one comparison
    /// (the window and the span are less than 2^31 ms).
    #[inline(always)]
    fn is_current(&self, h: u64, now: Instant) -> bool {
        let start = index_of(h).wrapping_mul(self.width);
        let window = self.span - self.width;
        now.as_millis().wrapping_sub(start).wrapping_add(window) < self.span
    }

    /// Where `now` falls, seen from head `h`.
    #[inline(always)]
    fn place(&self, h: u64, now: Instant) -> Place {
        if self.is_current(h, now) {
            return Place::Current;
        }
        self.place_elsewhere(index_of(h), now)
    }

    #[cold]
    fn place_elsewhere(&self, index: u32, now: Instant) -> Place {
        let target = now.as_millis() / self.width;
        let ahead = target.wrapping_sub(index);
        if (1..N).contains(&ahead) {
            Place::Near(target)
        } else {
            Place::Far(target)
        }
    }

    /// The head, moved on to the bucket of `now` if needed.
    #[inline(always)]
    fn current(&self, now: Instant) -> u64 {
        self.settle(self.head.load(Ordering::Acquire), now)
    }

    /// `h` if `now` counts in it; otherwise the head once moved on.
    #[inline(always)]
    fn settle(&self, h: u64, now: Instant) -> u64 {
        if self.place(h, now) == Place::Current {
            return h;
        }
        self.move_on(h, now)
    }

    /// Moves the window on until the head is one `now` counts in: writes the head into its
    /// slot, then replaces it with the bucket of `now` if it is still what was written
    /// (otherwise another caller changed it: it is read again and the move retried, or not
    /// needed any more).
    #[cold]
    #[inline(never)]
    fn move_on(&self, mut h: u64, now: Instant) -> u64 {
        loop {
            let next = match self.place(h, now) {
                Place::Current => return h,
                Place::Near(target) => {
                    self.record(h);
                    word(target, gen_of(h), 0)
                }
                // Nothing of the old window is counted from the new one: no need to record.
                Place::Far(target) => word(target, gen_of(h) + 1, 0),
            };
            match self.head.compare_exchange(h, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return next,
                Err(seen) => h = seen,
            }
        }
    }

    /// Writes head `h` into its slot, unless the slot already holds it or the head is no
    /// longer `h` (then the move that follows fails, and whoever moves on writes the head
    /// they move from).
    fn record(&self, h: u64) {
        let slot = &self.slots[(index_of(h) % N) as usize];
        let written = h | WRITTEN;
        let mut seen = slot.load(Ordering::Acquire);
        loop {
            if seen == written {
                return;
            }
            // While the head is still `h`, the slot holds nothing newer than `h`'s bucket
            // (the slot's next bucket comes after the head moves on from `h`), so replacing
            // what was read is right; if the head changes before the exchange, so has the
            // slot if it matters (the mover wrote its own head there), and the exchange
            // fails.
            if self.head.load(Ordering::Acquire) != h {
                return;
            }
            match slot.compare_exchange(seen, written, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(now_seen) => seen = now_seen,
            }
        }
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.head.load(Ordering::Acquire);
        let index = index_of(h);
        f.debug_struct("RetryBudget")
            .field("percent", &self.percent)
            .field("min_per_sec", &self.min_per_sec)
            .field("window", &self.window())
            .field("balance", &self.sum(index, gen_of(h), index, net_of(h)).div_euclid(100))
            .field("allowed", &self.allowed.load(Ordering::Relaxed))
            .field("refused", &self.refused.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for RetryBudget {
    fn format(&self, f: defmt::Formatter<'_>) {
        let h = self.head.load(Ordering::Acquire);
        let index = index_of(h);
        defmt::write!(
            f,
            "RetryBudget(percent {}, min_per_sec {}, window {}, balance {}, allowed {}, refused {})",
            self.percent,
            self.min_per_sec,
            self.window(),
            self.sum(index, gen_of(h), index, net_of(h)).div_euclid(100),
            self.allowed.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed)
        );
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn at(ms: u32) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn nonsense_is_rejected() {
        let s = Duration::from_secs(10);
        assert_eq!(
            RetryBudget::try_new(1001, 10, s).err(),
            Some(RetryBudgetError::PercentTooHigh)
        );
        assert_eq!(
            RetryBudget::try_new(20, 10, Duration::ZERO).err(),
            Some(RetryBudgetError::WindowTooShort)
        );
        assert_eq!(
            RetryBudget::try_new(20, 10, Duration::from_millis(999)).err(),
            Some(RetryBudgetError::WindowTooShort)
        );
        assert!(RetryBudget::try_new(1000, 0, Duration::from_secs(1)).is_ok());
        assert!(RetryBudget::try_new(0, 0, Duration::MAX).is_ok());
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            RetryBudgetError::WindowTooShort.to_string(),
            "retry budget window must be at least 1 s"
        );
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn eleven_words_and_six_numbers() {
        assert_eq!(core::mem::size_of::<RetryBudget>(), 11 * 8 + 6 * 4);
    }

    #[test]
    fn the_window_is_rounded_down_to_ten_buckets() {
        let b = RetryBudget::new(20, 10, Duration::from_millis(1_009));
        assert_eq!(b.window(), Duration::from_millis(1_000));
        assert_eq!((b.percent(), b.min_per_sec()), (20, 10));
    }

    #[test]
    fn exact_hundredths_and_the_floor() {
        // 30 %, no floor: three deposits are 0.9 of a retry, the fourth makes 1.2.
        let b = RetryBudget::new(30, 0, Duration::from_secs(10));
        assert!(!b.try_withdraw(at(0)));
        for _ in 0..3 {
            b.deposit(at(0));
        }
        assert!(!b.try_withdraw(at(0)));
        b.deposit(at(0));
        assert!(b.try_withdraw(at(0)));
        assert!(!b.try_withdraw(at(0)));
        assert_eq!(
            b.snapshot(at(0)),
            RetryBudgetSnapshot {
                balance: 0,
                allowed: 1,
                refused: 3
            }
        );
    }

    #[test]
    fn buckets_leave_the_window_when_ten_buckets_old() {
        let b = RetryBudget::new(100, 0, Duration::from_secs(10));
        b.deposit(at(999)); // bucket 0
        b.deposit(at(1_000)); // bucket 1
        assert_eq!(b.snapshot(at(9_999)).balance, 2);
        assert_eq!(b.snapshot(at(10_000)).balance, 1, "bucket 0 has left");
        assert_eq!(b.snapshot(at(11_000)).balance, 0);
        // The same, moving the window by operations rather than looking.
        assert!(b.try_withdraw(at(10_500)));
        assert!(!b.try_withdraw(at(10_500)));
        // The withdrawal at 10.5 s leaves at 20 s; bucket 1's deposit left at 11 s.
        assert_eq!(b.snapshot(at(19_999)).balance, -1);
        assert_eq!(b.snapshot(at(20_000)).balance, 0);
    }

    #[test]
    fn a_reading_slightly_earlier_counts_in_the_current_bucket() {
        let b = RetryBudget::new(100, 0, Duration::from_secs(10));
        b.deposit(at(5_000));
        b.deposit(at(4_000)); // a caller whose reading lags: bucket 5 still
        assert_eq!(b.snapshot(at(14_999)).balance, 2);
        assert_eq!(b.snapshot(at(15_000)).balance, 0, "both left with bucket 5");
    }

    #[test]
    fn far_jumps_either_way_start_afresh() {
        let b = RetryBudget::new(100, 1, Duration::from_secs(10));
        for _ in 0..5 {
            b.deposit(at(50_000));
        }
        assert_eq!(b.snapshot(at(50_000)).balance, 15);
        // More than the window back: afresh.
        assert_eq!(b.snapshot(at(39_000)).balance, 10);
        b.deposit(at(39_000));
        assert_eq!(b.snapshot(at(39_000)).balance, 11);
        // The old buckets do not come back when the clock reaches them again.
        assert_eq!(b.snapshot(at(50_000)).balance, 10);
        b.deposit(at(50_000));
        assert_eq!(b.snapshot(at(50_000)).balance, 11);
        // Far ahead: afresh too.
        assert_eq!(b.snapshot(at(4_000_000_000)).balance, 10);
        assert!(b.try_withdraw(at(4_000_000_000)));
        assert_eq!(b.snapshot(at(4_000_000_000)).balance, 9);
    }

    #[test]
    fn buckets_from_before_a_step_back_do_not_come_back() {
        let b = RetryBudget::new(100, 1, Duration::from_secs(10));
        b.deposit(at(41_000));
        b.deposit(at(50_000)); // bucket 41 goes to its slot
        assert_eq!(b.snapshot(at(50_000)).balance, 12);
        // Back by more than the window: afresh.
        assert_eq!(b.snapshot(at(39_000)).balance, 10);
        b.deposit(at(39_000));
        b.deposit(at(41_500));
        // The new bucket 41, not the old one too.
        assert_eq!(b.snapshot(at(41_500)).balance, 12);
        b.deposit(at(42_000));
        assert_eq!(b.snapshot(at(48_999)).balance, 13);
        assert_eq!(
            b.snapshot(at(50_000)).balance,
            12,
            "bucket 39 has left, and the old 41 is not back"
        );
    }

    #[test]
    fn the_head_s_bucket_leaves_the_window_when_its_last_millisecond_does() {
        // Ten buckets of 1 s: a deposit in bucket 0, read while the head is still there.
        let b = RetryBudget::new(100, 0, Duration::from_secs(10));
        b.deposit(at(500));
        assert_eq!(b.snapshot(at(9_999)).balance, 1);
        assert_eq!(b.snapshot(at(10_000)).balance, 0, "bucket 0 is ten buckets back");
    }

    #[test]
    fn the_counter_wrap_starts_afresh() {
        let b = RetryBudget::new(100, 0, Duration::from_secs(10));
        let before = Instant::from_millis(u32::MAX - 100);
        // (A new budget's current bucket is bucket 0, which `before` reads a little before:
        // start it where it is.)
        b.deposit(before.wrapping_sub(Duration::from_secs(60)));
        b.deposit(before);
        assert_eq!(b.snapshot(before).balance, 1);
        let after = before.wrapping_add(Duration::from_millis(3_000));
        assert_eq!(b.snapshot(after).balance, 0);
        b.deposit(after);
        assert!(b.try_withdraw(after));
        assert!(!b.try_withdraw(after));
    }

    #[test]
    fn a_word_holds_every_balance_index_and_generation() {
        for net in [i32::MIN, i32::MIN + 50, -1, 0, 1, i32::MAX] {
            for (index, gen) in [(0, 0), (1, 31), (u32::MAX >> 6, 7)] {
                let w = word(index, gen, net);
                assert_eq!((index_of(w), gen_of(w), net_of(w)), (index, gen, net));
                assert_eq!(w & WRITTEN, 0);
            }
        }
    }

    #[test]
    fn a_bucket_does_not_overflow() {
        let b = RetryBudget::new(1000, 0, Duration::from_secs(1));
        b.head.store(word(0, 0, i32::MAX - 500), Ordering::Relaxed);
        b.deposit(at(0));
        assert_eq!(net_of(b.head.load(Ordering::Relaxed)), i32::MAX - 500);
        b.head.store(word(0, 0, i32::MIN + 50), Ordering::Relaxed);
        assert!(!b.try_withdraw(at(0)));
    }

    #[test]
    fn debug_shows_the_figures() {
        extern crate std;
        let b = RetryBudget::new(20, 10, Duration::from_secs(10));
        assert!(b.try_withdraw(at(0)));
        let shown = std::format!("{b:?}");
        assert_eq!(
            shown,
            "RetryBudget { percent: 20, min_per_sec: 10, window: Duration { millis: 10000 }, balance: 99, allowed: 1, refused: 0 }"
        );
    }
}
