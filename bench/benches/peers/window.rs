//! The failure-rate window's rows: breaker-core's windowed `SharedBreaker` (a count window
//! of the last 20 calls, a time window of 10 s) beside recloser 1.4's ring buffer of the
//! last 20 outcomes and failsafe 1.3's success rate over a 10 s window, each set to trip
//! at 50 % of failures (judged from 10 calls on where the peer has that setting) and to
//! refuse for 30 s.
//!
//! A windowed breaker must record every closed-state call in its window, so its closed
//! path writes shared memory, except one case: a count window full of clean successes is
//! left as it is by one more (the healthy steady state). The rows show the three costs:
//!
//! * `ours-window-calls`: a count window in its steady state (20 successes held): no write;
//! * `ours-window-dirty`: a count window that always holds a failure (every 16th call
//!   fails, 6 %, below the threshold): every call changes it, one compare-and-swap;
//! * `ours-window-time`: a time window: every call counts in its bucket (a full bucket
//!   halves its counts and goes on), one clock read, one compare-and-swap and a read of the
//!   ten buckets to judge the window;
//! * `ours-window-ring`, `ours-window-ring-dirty`: the large count window, a `CallRing` of
//!   the last 1000 calls (resilience4j's default of 100, ten times over), steady and with a
//!   failure in it (every 16th call), beside `recloser-rate-1000`, recloser's ring of the
//!   last 1000 calls;
//! * `ours-window-time60`: a time window of 60 s in 60 buckets (`TimeWindow<60>`): every
//!   call reads sixty buckets.
//! * `ours-window-slow`, `ours-window-inflight`: the count window of 20 with a slow-call
//!   rule (every call timed, two clock reads), steady, without and with eight in-flight
//!   slots (`InFlight<CallWindow, 8>`: the gate scans the slots, the call claims one and
//!   frees it): what catching slow calls while still out costs a closed call.

use std::hint::black_box;
use std::time::Duration as StdDuration;

use breaker_core::{
    CallRing, CallWindow, Clock, Duration, InFlight, Observer, Policy, SharedBreaker, StdClock, TimeWindow, WindowSize,
    Windowed,
};
use failsafe::CircuitBreaker as _;

use super::{footprint, timed, two_threads, work, Case, Expect, Fail, Footprint, Group};

/// 50 % of the last 20 calls, from 10 calls on; 30 s open.
static COUNT_POLICY: Policy =
    Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30)).with_min_calls(10);
/// 50 % of the last 10 s, from 10 calls on; 30 s open.
static TIME_POLICY: Policy =
    Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(30)).with_min_calls(10);

/// 50 % of the last 1000 calls (judged from 10 calls on); 30 s open.
static RING_POLICY: Policy =
    Policy::failure_rate(50, WindowSize::Calls(1000), Duration::from_secs(30)).with_min_calls(10);
/// 50 % of the last 60 s, in 60 buckets, from 10 calls on; 30 s open.
static MINUTE_POLICY: Policy =
    Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(60)), Duration::from_secs(30)).with_min_calls(10);

/// As `COUNT_POLICY`, with a slow-call rule: 80 % of calls longer than 2 s.
static SLOW_POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30))
    .with_min_calls(10)
    .with_slow_calls(Duration::from_secs(2), 80);

type CountBreaker = SharedBreaker<Windowed<CallWindow>>;
type WatchedBreaker = SharedBreaker<Windowed<InFlight<CallWindow, 8>>>;
type TimeBreaker = SharedBreaker<Windowed<TimeWindow>>;
type RingBreaker = SharedBreaker<Windowed<CallRing>>;
type MinuteBreaker = SharedBreaker<Windowed<TimeWindow<60>>>;
type FailsafeRate =
    failsafe::StateMachine<failsafe::failure_policy::SuccessRateOverTimeWindow<failsafe::backoff::Constant>, ()>;

fn new_count() -> CountBreaker {
    SharedBreaker::windowed(&COUNT_POLICY, Windowed::calls(()))
}

fn new_slow() -> CountBreaker {
    SharedBreaker::windowed(&SLOW_POLICY, Windowed::calls(()))
}

fn new_watched() -> WatchedBreaker {
    SharedBreaker::windowed(&SLOW_POLICY, Windowed::in_flight(CallWindow::new(), ()))
}

fn new_time() -> TimeBreaker {
    SharedBreaker::windowed(&TIME_POLICY, Windowed::time(()))
}

fn new_ring() -> RingBreaker {
    SharedBreaker::windowed(&RING_POLICY, Windowed::ring(()))
}

fn new_minute() -> MinuteBreaker {
    SharedBreaker::windowed(&MINUTE_POLICY, Windowed::time_buckets(()))
}

/// recloser 1.4: a failure rate of 50 % over a ring of the last 1000 calls, 30 s open.
fn new_recloser_rate_1000() -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(0.5)
        .closed_len(1000)
        .half_open_len(1)
        .open_wait(StdDuration::from_secs(30))
        .build()
}

/// recloser 1.4: a failure rate of 50 % over a ring of the last 20 calls (it judges once
/// the ring is full), 30 s open.
fn new_recloser_rate() -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(0.5)
        .closed_len(20)
        .half_open_len(1)
        .open_wait(StdDuration::from_secs(30))
        .build()
}

/// failsafe 1.3: a success rate of at least 50 % over a 10 s window (an exponential moving
/// average), from 10 calls on, 30 s open.
fn new_failsafe_rate() -> FailsafeRate {
    let policy = failsafe::failure_policy::success_rate_over_time_window(
        0.5,
        10,
        StdDuration::from_secs(10),
        failsafe::backoff::constant(StdDuration::from_secs(30)),
    );
    failsafe::Config::new().failure_policy(policy).build()
}

// ---- the measured loops ---------------------------------------------------------------

/// A windowed breaker's `call`, like `loop_ours`.
#[inline(never)]
fn loop_windowed<O: Observer, C: Clock>(b: &SharedBreaker<O>, clock: &C, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        match b.call(clock, || work(i)) {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

/// One call in 16 fails (`i % 16 == 15`): a count window of 20 always holds a failure.
#[inline(never)]
fn loop_window_dirty<O: Observer>(b: &SharedBreaker<O>, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let r = b.call(&StdClock, || if i % 16 == 15 { Err(black_box(Fail)) } else { work(i) });
        match r {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

/// What `loop_window_dirty` sums over `n` calls if none was refused (closed form).
fn dirty_sum(n: u64) -> u64 {
    let all = (u128::from(n) * u128::from(n.saturating_sub(1)) / 2) as u64;
    // The failing calls: i = 16k + 15 for k < m, the m of them below n.
    let m = n / 16;
    let failing = 16u128 * u128::from(m) * u128::from(m.saturating_sub(1)) / 2 + 15 * u128::from(m);
    all.wrapping_sub(failing as u64).wrapping_add(m)
}

#[inline(never)]
fn loop_failsafe_rate(b: &FailsafeRate, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        match b.call(|| work(i)) {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(_) => acc = acc.wrapping_add(1),
        }
    }
    acc
}

// ---- runners ----------------------------------------------------------------------------

/// A count window already holding 20 clean successes: the steady state.
fn steady_count() -> CountBreaker {
    let b = new_count();
    loop_windowed(&b, &StdClock, 20);
    b
}

fn run_window_calls(n: u64) -> StdDuration {
    let b = steady_count();
    let b = black_box(&b);
    timed(n, Expect::AllOk, "ours, count window", || {
        loop_windowed(b, &StdClock, n)
    })
}

/// `loop_window_dirty` on `b`, timed, its sum checked (`what` names the case).
fn timed_dirty<O: Observer>(b: &SharedBreaker<O>, n: u64, what: &str) -> StdDuration {
    let b = black_box(b);
    let start = std::time::Instant::now();
    let acc = loop_window_dirty(b, n);
    let elapsed = start.elapsed();
    assert_eq!(black_box(acc), dirty_sum(n), "{what}: a call was refused");
    elapsed
}

fn run_window_dirty(n: u64) -> StdDuration {
    timed_dirty(&new_count(), n, "ours, dirty count window")
}

fn run_window_slow(n: u64) -> StdDuration {
    let b = new_slow();
    loop_windowed(&b, &StdClock, 20);
    let b = black_box(&b);
    timed(n, Expect::AllOk, "ours, count window, slow-call rule", || {
        loop_windowed(b, &StdClock, n)
    })
}

fn run_window_inflight(n: u64) -> StdDuration {
    let b = new_watched();
    loop_windowed(&b, &StdClock, 20);
    let b = black_box(&b);
    timed(n, Expect::AllOk, "ours, count window, in-flight slots", || {
        loop_windowed(b, &StdClock, n)
    })
}

fn run_window_time(n: u64) -> StdDuration {
    let b = new_time();
    let b = black_box(&b);
    timed(n, Expect::AllOk, "ours, time window", || loop_windowed(b, &StdClock, n))
}

/// A ring of 1000 already holding 1000 clean successes: the steady state.
fn steady_ring() -> RingBreaker {
    let b = new_ring();
    loop_windowed(&b, &StdClock, 1000);
    b
}

fn run_window_ring(n: u64) -> StdDuration {
    let b = steady_ring();
    let b = black_box(&b);
    timed(n, Expect::AllOk, "ours, ring of 1000", || {
        loop_windowed(b, &StdClock, n)
    })
}

fn run_window_ring_dirty(n: u64) -> StdDuration {
    timed_dirty(&new_ring(), n, "ours, dirty ring of 1000")
}

fn run_window_time60(n: u64) -> StdDuration {
    let b = new_minute();
    let b = black_box(&b);
    timed(n, Expect::AllOk, "ours, time window of 60 buckets", || {
        loop_windowed(b, &StdClock, n)
    })
}

fn run_recloser_rate_1000(n: u64) -> StdDuration {
    let b = new_recloser_rate_1000();
    let b = black_box(&b);
    timed(n, Expect::AllOk, "recloser, rate over 1000", || {
        super::loop_recloser(b, n)
    })
}

fn run_recloser_rate(n: u64) -> StdDuration {
    let b = new_recloser_rate();
    let b = black_box(&b);
    timed(n, Expect::AllOk, "recloser, rate", || super::loop_recloser(b, n))
}

/// A count window tripped (50 % of its calls failed): every call refused while it cools
/// down.
fn run_window_rejected(n: u64) -> StdDuration {
    let b = new_count();
    assert!(trip_windowed(&b) < MAX_FAILURES, "the count window did not trip");
    let b = black_box(&b);
    timed(n, Expect::AllRefused, "ours, count window, refused", || {
        loop_windowed(b, &StdClock, n)
    })
}

/// recloser's rate over 20 calls, tripped: every call refused.
fn run_recloser_rate_rejected(n: u64) -> StdDuration {
    let b = new_recloser_rate();
    assert!(trip_recloser_rate(&b) < MAX_FAILURES, "recloser did not trip");
    let b = black_box(&b);
    timed(n, Expect::AllRefused, "recloser, rate, refused", || {
        super::loop_recloser(b, n)
    })
}

fn run_failsafe_rate(n: u64) -> StdDuration {
    let b = new_failsafe_rate();
    let b = black_box(&b);
    timed(n, Expect::AllOk, "failsafe, rate", || loop_failsafe_rate(b, n))
}

fn run_window_calls_2t(n: u64) -> StdDuration {
    two_threads(
        &steady_count(),
        n,
        Expect::AllOk,
        "ours, count window, 2 threads",
        |b, n| loop_windowed(b, &StdClock, n),
    )
}

fn run_window_time_2t(n: u64) -> StdDuration {
    two_threads(&new_time(), n, Expect::AllOk, "ours, time window, 2 threads", |b, n| {
        loop_windowed(b, &StdClock, n)
    })
}

fn run_recloser_rate_2t(n: u64) -> StdDuration {
    two_threads(
        &new_recloser_rate(),
        n,
        Expect::AllOk,
        "recloser, rate, 2 threads",
        super::loop_recloser,
    )
}

fn run_failsafe_rate_2t(n: u64) -> StdDuration {
    two_threads(
        &new_failsafe_rate(),
        n,
        Expect::AllOk,
        "failsafe, rate, 2 threads",
        loop_failsafe_rate,
    )
}

/// The window's cases, after the consecutive ones in the tables.
pub const CASES: &[Case] = &[
    Case {
        key: "ours-window-calls",
        label: "breaker-core, count window (20 calls), steady",
        group: Group::Closed,
        run: run_window_calls,
    },
    Case {
        key: "ours-window-dirty",
        label: "breaker-core, count window (20 calls), a failure in it",
        group: Group::Closed,
        run: run_window_dirty,
    },
    Case {
        key: "ours-window-time",
        label: "breaker-core, time window (10 s)",
        group: Group::Closed,
        run: run_window_time,
    },
    Case {
        key: "recloser-rate",
        label: "recloser 1.4, rate over 20 calls",
        group: Group::Closed,
        run: run_recloser_rate,
    },
    Case {
        key: "failsafe-rate",
        label: "failsafe 1.3, success rate over 10 s",
        group: Group::Closed,
        run: run_failsafe_rate,
    },
    Case {
        key: "ours-window-rejected",
        label: "breaker-core, count window (20 calls), open: refused",
        group: Group::Rejected,
        run: run_window_rejected,
    },
    Case {
        key: "recloser-rate-rejected",
        label: "recloser 1.4, rate over 20 calls, open: refused",
        group: Group::Rejected,
        run: run_recloser_rate_rejected,
    },
    Case {
        key: "ours-window-ring",
        label: "breaker-core, count window (1000 calls, CallRing), steady",
        group: Group::Closed,
        run: run_window_ring,
    },
    Case {
        key: "ours-window-ring-dirty",
        label: "breaker-core, count window (1000 calls, CallRing), a failure in it",
        group: Group::Closed,
        run: run_window_ring_dirty,
    },
    Case {
        key: "recloser-rate-1000",
        label: "recloser 1.4, rate over 1000 calls",
        group: Group::Closed,
        run: run_recloser_rate_1000,
    },
    Case {
        key: "ours-window-time60",
        label: "breaker-core, time window (60 s, 60 buckets)",
        group: Group::Closed,
        run: run_window_time60,
    },
    Case {
        key: "ours-window-slow",
        label: "breaker-core, count window (20 calls), slow-call rule, steady",
        group: Group::Closed,
        run: run_window_slow,
    },
    Case {
        key: "ours-window-inflight",
        label: "breaker-core, count window (20 calls), slow-call rule, 8 in-flight slots",
        group: Group::Closed,
        run: run_window_inflight,
    },
    Case {
        key: "ours-window-calls-2t",
        label: "breaker-core, count window (20 calls), steady",
        group: Group::TwoThreads,
        run: run_window_calls_2t,
    },
    Case {
        key: "ours-window-time-2t",
        label: "breaker-core, time window (10 s)",
        group: Group::TwoThreads,
        run: run_window_time_2t,
    },
    Case {
        key: "recloser-rate-2t",
        label: "recloser 1.4, rate over 20 calls",
        group: Group::TwoThreads,
        run: run_recloser_rate_2t,
    },
    Case {
        key: "failsafe-rate-2t",
        label: "failsafe 1.3, success rate over 10 s",
        group: Group::TwoThreads,
        run: run_failsafe_rate_2t,
    },
];

// ---- sizes, heap, clock reads -------------------------------------------------------------

/// The most failures [`trip_many`] feeds: a breaker still closed after them is reported
/// as "did not trip".
const MAX_FAILURES: u32 = 100_000;

/// Feeds failing calls until one is refused; how many got through ([`MAX_FAILURES`] if
/// none was refused). A window full of successes needs many failures (a time window after
/// 10,000 successes: about a thousand), so this goes further than the consecutive
/// breakers' `trip`.
fn trip_many(mut call_fail: impl FnMut() -> Result<(), bool>) -> u32 {
    for failures in 0..MAX_FAILURES {
        match call_fail() {
            Err(false) => {}
            Err(true) => return failures,
            Ok(()) => unreachable!("a failing call succeeded"),
        }
    }
    MAX_FAILURES
}

fn trip_windowed<O: Observer>(b: &SharedBreaker<O>) -> u32 {
    trip_many(|| match b.call(&StdClock, super::fail) {
        Err(breaker_core::CallError::Refused(_)) => Err(true),
        Err(breaker_core::CallError::Inner(_)) => Err(false),
        Ok(_) => Ok(()),
    })
}

fn trip_failsafe_rate(b: &FailsafeRate) -> u32 {
    trip_many(|| match b.call(super::fail) {
        Err(failsafe::Error::Rejected) => Err(true),
        Err(failsafe::Error::Inner(_)) => Err(false),
        Ok(_) => Ok(()),
    })
}

fn trip_recloser_rate(b: &recloser::Recloser) -> u32 {
    trip_many(|| match b.call(super::fail) {
        Err(recloser::Error::Rejected) => Err(true),
        Err(recloser::Error::Inner(_)) => Err(false),
        Ok(_) => Ok(()),
    })
}

/// The window rows of the size-and-heap table (the trip column: failures until refused,
/// after the 10,001 successes of the columns before).
pub fn footprints() -> Vec<Footprint> {
    vec![
        footprint(
            "breaker-core, count window",
            new_count,
            |b, n| loop_windowed(b, &StdClock, n),
            trip_windowed,
        ),
        footprint(
            "breaker-core, time window",
            new_time,
            |b, n| loop_windowed(b, &StdClock, n),
            trip_windowed,
        ),
        footprint(
            "breaker-core, count window of 1000 (CallRing)",
            new_ring,
            |b, n| loop_windowed(b, &StdClock, n),
            trip_windowed,
        ),
        footprint(
            "breaker-core, time window of 60 buckets",
            new_minute,
            |b, n| loop_windowed(b, &StdClock, n),
            trip_windowed,
        ),
        footprint(
            "recloser 1.4, rate",
            new_recloser_rate,
            super::loop_recloser,
            trip_recloser_rate,
        ),
        footprint(
            "recloser 1.4, rate over 1000",
            new_recloser_rate_1000,
            super::loop_recloser,
            trip_recloser_rate,
        ),
        footprint(
            "failsafe 1.3, rate",
            new_failsafe_rate,
            loop_failsafe_rate,
            trip_failsafe_rate,
        ),
    ]
}

/// What the window rows of the size-and-heap table need said, and the windowed breakers'
/// clock reads per closed-state call.
pub fn print_notes() {
    println!(
        "A trip column of {MAX_FAILURES} for a window row means: still closed after {MAX_FAILURES} failures in a row (failsafe's success rate is a moving average over time, which a burst of calls within a few milliseconds hardly moves).\n"
    );
    let clock = super::CountingClock(std::cell::Cell::new(0));
    let calls = super::ALLOC_CALLS;
    let count = new_count();
    assert_eq!(loop_windowed(&count, &clock, calls), (0..calls).sum::<u64>());
    let count_reads = clock.0.replace(0);
    let time = new_time();
    assert_eq!(loop_windowed(&time, &clock, calls), (0..calls).sum::<u64>());
    let time_reads = clock.0.replace(0);
    println!(
        "breaker-core windowed clock reads per closed-state success call: {:.2} (count window), {:.2} (time window); with a slow-call rule, 2 more.\n",
        count_reads as f64 / calls as f64,
        time_reads as f64 / calls as f64
    );
}

/// The window's lines of the targets section: its closed-state cost against the
/// consecutive breaker's and the peers', from the medians of this run.
pub fn print_targets(stats: &[(&'static str, bench::Stats)]) {
    let get = |key: &str| stats.iter().find(|(k, _)| *k == key).map(|(_, s)| s.median);
    if let (Some(ours), Some(r)) = (get("ours-window-rejected"), get("recloser-rate-rejected")) {
        println!(
            "- count window refusal, no slower than recloser's (rate over 20 calls): {ours:.2} ns vs {r:.2} ns (medians) -> {}",
            if ours <= r * 1.02 { "MET" } else { "MISSED" }
        );
    }
    let (Some(plain), Some(calls), Some(dirty), Some(time)) = (
        get("ours-closed"),
        get("ours-window-calls"),
        get("ours-window-dirty"),
        get("ours-window-time"),
    ) else {
        return;
    };
    println!(
        "- windowed closed call (medians): count window steady {calls:.2} ns, with a failure in it {dirty:.2} ns, time window {time:.2} ns; consecutive strikes {plain:.2} ns"
    );
    if let (Some(r), Some(f)) = (get("recloser-rate"), get("failsafe-rate")) {
        println!("- peers with a rate rule (medians): recloser {r:.2} ns, failsafe {f:.2} ns");
    }
    if let (Some(ring), Some(dirty), Some(r)) = (
        get("ours-window-ring"),
        get("ours-window-ring-dirty"),
        get("recloser-rate-1000"),
    ) {
        println!(
            "- windows of 1000 calls (medians): CallRing steady {ring:.2} ns, with a failure in it {dirty:.2} ns; recloser {r:.2} ns"
        );
    }
}
