//! Time as the breaker sees it, at the edges: the longest span, conversions, comparisons
//! across the counter's wrap, how spans and instants print, and the clocks.

use breaker_core::{Clock, Duration, Instant, ManualClock, StdClock};

#[test]
fn the_longest_span_is_two_to_the_thirty_minus_one_milliseconds() {
    assert_eq!(Duration::MAX.as_millis(), (1 << 30) - 1);
    assert_eq!(Duration::from_millis((1 << 30) - 1), Duration::MAX);
    assert_eq!(Duration::from_millis(1 << 30), Duration::MAX, "clamped");
    assert_eq!(Duration::from_millis(1_000).as_millis(), 1_000);
    assert_eq!(
        Duration::checked_from_secs(1_073_741),
        Some(Duration::from_millis(1_073_741_000))
    );
    assert_eq!(Duration::checked_from_secs(1_073_742), None);
    assert_eq!(Duration::from_secs(7).as_millis(), 7_000);
    assert_eq!(Duration::from_mins(3).as_millis(), 180_000);
}

#[test]
fn span_arithmetic_is_checked_or_saturating() {
    let d = Duration::from_millis;
    assert_eq!(d(5).checked_add(d(7)), Some(d(12)));
    assert_eq!(Duration::MAX.checked_add(Duration::ZERO), Some(Duration::MAX));
    assert_eq!(Duration::MAX.checked_add(d(1)), None);
    assert_eq!(d(7).checked_sub(d(5)), Some(d(2)));
    assert_eq!(d(5).checked_sub(d(5)), Some(Duration::ZERO));
    assert_eq!(d(5).checked_sub(d(7)), None);
    assert_eq!(d(7).saturating_sub(d(5)), d(2));
    assert_eq!(d(5).saturating_sub(d(7)), Duration::ZERO);
    assert_eq!(d(6).checked_mul(3), Some(d(18)));
    assert_eq!(Duration::MAX.checked_mul(1), Some(Duration::MAX));
    assert_eq!(d(1 << 29).checked_mul(2), None);
    assert_eq!(d(u32::MAX / 2).checked_mul(4), None, "past u32 too");
    assert_eq!((d(3).min(d(4)), d(4).min(d(3)), d(3).min(d(3))), (d(3), d(3), d(3)));
    assert_eq!((d(3).max(d(4)), d(4).max(d(3)), d(4).max(d(4))), (d(4), d(4), d(4)));
}

#[test]
fn spans_and_instants_print_as_people_write_them() {
    assert_eq!(Duration::from_mins(90).to_string(), "90m");
    assert_eq!(Duration::from_secs(61).to_string(), "61s");
    assert_eq!(Duration::from_millis(60_001).to_string(), "60001ms");
    assert_eq!(Duration::from_millis(1).to_string(), "1ms");
    assert_eq!(Instant::from_millis(1234).to_string(), "t=1234ms");
    assert_eq!(Instant::ZERO.to_string(), "t=0ms");
}

#[test]
fn instants_compare_across_the_wrap_and_a_backwards_step_is_no_time() {
    let near_end = Instant::from_millis(u32::MAX - 1);
    let after = near_end.wrapping_add(Duration::from_millis(5));
    assert_eq!(after, Instant::from_millis(3));
    assert_eq!(after.wrapping_sub(Duration::from_millis(5)), near_end);
    assert_eq!(after.since(near_end), Duration::from_millis(5));
    assert_eq!(near_end.since(after), Duration::ZERO);
    // Just under half the counter apart still reads as elapsed time (longer than any span
    // a policy holds).
    let far = Instant::from_millis((1 << 31) - 1);
    assert_eq!(far.since(Instant::ZERO).as_millis(), (1 << 31) - 1);
    // Half the counter or more apart reads as a clock that stepped back.
    assert_eq!(Instant::from_millis(1 << 31).since(Instant::ZERO), Duration::ZERO);
    assert_eq!(Instant::from_millis_u64((1 << 32) + 17), Instant::from_millis(17));
    assert_eq!(Instant::from_millis_u64(u64::MAX).as_millis(), u32::MAX);
}

#[test]
fn a_manual_clock_moves_only_when_told_and_wraps_like_a_counter() {
    let clock = ManualClock::new(Instant::from_millis(u32::MAX - 2));
    assert_eq!(clock.now(), Instant::from_millis(u32::MAX - 2));
    clock.advance(Duration::from_millis(5));
    assert_eq!(clock.now(), Instant::from_millis(2));
    clock.set(Instant::from_millis(1));
    assert_eq!(clock.now(), Instant::from_millis(1), "backwards is allowed");
    // A reference to a clock is a clock.
    fn read(c: impl Clock) -> Instant {
        c.now()
    }
    assert_eq!(read(&clock), Instant::from_millis(1));
}

#[test]
fn the_std_clock_counts_real_milliseconds() {
    let outer = std::time::Instant::now();
    let first = StdClock.now();
    let inner = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(30));
    let inner = inner.elapsed();
    let second = StdClock.now();
    let outer = outer.elapsed();
    // The same monotonic clock, in whole milliseconds: at least the sleep between the two
    // readings (less one for the truncation), at most the time around them.
    let counted = u128::from(second.since(first).as_millis());
    assert!(counted + 1 >= inner.as_millis(), "{counted} ms counted over {inner:?}");
    assert!(
        counted <= outer.as_millis() + 1,
        "{counted} ms counted within {outer:?}"
    );
}
