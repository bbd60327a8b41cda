//! The delays of `#[circuit_breaker(retry = ..)]`: the attribute's backoff settings
//! (`retry_delay`, `retry_backoff`, `retry_max_delay`, `retry_jitter`, `retry_budget`)
//! and their defaults reach the ladder, as `breaker-core/src/attribute.md` and the retry
//! policy's formulas say. Each function sleeps through a recorder of its own, so the
//! tests see every delay asked for; no test sleeps.

use std::sync::Mutex;

use breaker_core::{circuit_breaker, Classify, Clock, Duration, Instant, ManualClock, Refused};

#[derive(Debug, PartialEq)]
enum Error {
    Timeout,
    Refused,
}

impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}

impl Classify for Error {}

/// A `retry_sleep` that records each delay it is given, and the delays recorded so far.
macro_rules! recorder {
    ($sleep:ident, $taken:ident) => {
        fn $sleep(d: Duration) {
            $taken.lock().unwrap().push(d);
        }
        static $taken: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
    };
}

fn ms(list: &[u32]) -> Vec<Duration> {
    list.iter().map(|&m| Duration::from_millis(m)).collect()
}

/// Takes the delays recorded so far.
fn take(taken: &Mutex<Vec<Duration>>) -> Vec<Duration> {
    std::mem::take(&mut *taken.lock().unwrap())
}

recorder!(sleep_defaults, DEFAULTS);

/// No delay settings: 100 ms, doubling, no cap, no jitter.
#[circuit_breaker(trip = 20, retry = 4, retry_sleep = sleep_defaults)]
fn defaults() -> Result<(), Error> {
    Err(Error::Timeout)
}

#[test]
fn without_delay_settings_the_delays_start_at_100ms_and_double() {
    assert_eq!(defaults(), Err(Error::Timeout));
    assert_eq!(take(&DEFAULTS), ms(&[100, 200, 400, 800]));
}

recorder!(sleep_tripled, TRIPLED);

#[circuit_breaker(trip = 20, retry = 5, retry_delay = "30ms", retry_backoff = 3, retry_max_delay = "500ms", retry_sleep = sleep_tripled)]
fn tripled() -> Result<(), Error> {
    Err(Error::Timeout)
}

#[test]
fn delay_backoff_and_cap_give_the_capped_exponential_delays() {
    assert_eq!(tripled(), Err(Error::Timeout));
    assert_eq!(take(&TRIPLED), ms(&[30, 90, 270, 500, 500]));
}

recorder!(sleep_steady, STEADY);

#[circuit_breaker(trip = 20, retry = 3, retry_delay = "1s250ms", retry_backoff = 1, retry_sleep = sleep_steady)]
fn steady(tries: &mut u32) -> Result<u32, Error> {
    *tries += 1;
    if *tries < 3 {
        Err(Error::Timeout)
    } else {
        Ok(*tries)
    }
}

#[test]
fn a_backoff_of_1_keeps_the_delay_and_a_success_ends_the_retries() {
    let mut tries = 0;
    assert_eq!(steady(&mut tries), Ok(3));
    assert_eq!(take(&STEADY), ms(&[1250, 1250]));
}

static BUDGET_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// Sleeps on the budget's clock: the manual clock moves by the delay.
fn sleep_on_the_clock(d: Duration) {
    BUDGET_DELAYS.lock().unwrap().push(d);
    BUDGET_CLOCK.advance(d);
}
static BUDGET_DELAYS: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

#[circuit_breaker(trip = 20, retry = 6, retry_budget = "250ms", clock = BUDGET_CLOCK, retry_sleep = sleep_on_the_clock)]
fn budgeted(attempts: &mut u32) -> Result<(), Error> {
    *attempts += 1;
    Err(Error::Timeout)
}

#[test]
fn the_budget_cuts_the_last_delay_short_and_stops_the_retries() {
    let start = BUDGET_CLOCK.now();
    let mut attempts = 0;
    assert_eq!(budgeted(&mut attempts), Err(Error::Timeout));
    // 100 ms, then 200 ms cut to the 150 ms left; at 250 ms no retry starts after this one.
    assert_eq!(take(&BUDGET_DELAYS), ms(&[100, 150]));
    assert_eq!(attempts, 3);
    assert_eq!(BUDGET_CLOCK.now().since(start), Duration::from_millis(250));
}

recorder!(sleep_full, FULL);
recorder!(sleep_equal, EQUAL);
recorder!(sleep_decorrelated, DECORRELATED);
recorder!(sleep_none, NONE);

#[circuit_breaker(trip = 255, retry = 6, retry_delay = "64ms", retry_max_delay = "1s", retry_jitter = "full", retry_sleep = sleep_full)]
fn full() -> Result<(), Error> {
    Err(Error::Timeout)
}

#[circuit_breaker(trip = 255, retry = 6, retry_delay = "64ms", retry_max_delay = "1s", retry_jitter = "equal", retry_sleep = sleep_equal)]
fn equal() -> Result<(), Error> {
    Err(Error::Timeout)
}

#[circuit_breaker(trip = 255, retry = 6, retry_delay = "64ms", retry_backoff = 3, retry_max_delay = "1s", retry_jitter = "decorrelated", retry_sleep = sleep_decorrelated)]
fn decorrelated() -> Result<(), Error> {
    Err(Error::Timeout)
}

#[circuit_breaker(trip = 255, retry = 6, retry_delay = "64ms", retry_max_delay = "1s", retry_jitter = "none", retry_sleep = sleep_none)]
fn none() -> Result<(), Error> {
    Err(Error::Timeout)
}

/// The ceilings of `retry_delay = "64ms"`, doubling, capped at 1 s.
const CEILINGS: [u32; 6] = [64, 128, 256, 512, 1000, 1000];
/// Calls per jitter: enough that a jitter applied by the wrong formula, or not at all,
/// shows (a right one meets each bound below always, and each spread check fails by
/// chance with odds below 2^-100), and
/// few enough that their 7 failed attempts each stay below the breaker's `trip = 255`.
const CALLS: usize = 30;

#[test]
fn each_jitter_keeps_its_delays_within_its_formula() {
    let mut full_delays = Vec::new();
    for _ in 0..CALLS {
        assert_eq!(full(), Err(Error::Timeout));
        let delays = take(&FULL);
        assert_eq!(delays.len(), 6, "six retries");
        for (d, c) in delays.iter().zip(CEILINGS) {
            assert!(*d <= Duration::from_millis(c), "full: {d:?} above its ceiling {c} ms");
        }
        full_delays.extend(delays);
    }
    // A uniform draw in 0..=ceiling: 180 draws all at the ceiling, or none below half of
    // it, would mean there is no jitter.
    assert!(full_delays
        .iter()
        .zip(CEILINGS.iter().cycle())
        .any(|(d, &c)| *d < Duration::from_millis(c / 2)));

    let mut equal_delays = Vec::new();
    for _ in 0..CALLS {
        assert_eq!(equal(), Err(Error::Timeout));
        let delays = take(&EQUAL);
        assert_eq!(delays.len(), 6);
        for (d, c) in delays.iter().zip(CEILINGS) {
            let (low, high) = (Duration::from_millis(c / 2), Duration::from_millis(c));
            assert!(low <= *d && *d <= high, "equal: {d:?} outside {low:?}..={high:?}");
        }
        equal_delays.extend(delays);
    }
    assert!(equal_delays
        .iter()
        .zip(CEILINGS.iter().cycle())
        .any(|(d, &c)| *d < Duration::from_millis(c)));

    let mut spread = false;
    for _ in 0..CALLS {
        assert_eq!(decorrelated(), Err(Error::Timeout));
        let delays = take(&DECORRELATED);
        assert_eq!(delays.len(), 6);
        // Uniform in delay..=previous * 3, at most 1 s; the first "previous" is the delay.
        let mut previous = Duration::from_millis(64);
        for d in &delays {
            let high = Duration::from_millis((previous.as_millis() * 3).min(1000));
            assert!(
                Duration::from_millis(64) <= *d && *d <= high,
                "decorrelated: {d:?} outside 64ms..={high:?}"
            );
            spread |= *d != high;
            previous = *d;
        }
    }
    assert!(spread, "decorrelated delays are drawn, not the bound");

    assert_eq!(none(), Err(Error::Timeout));
    assert_eq!(take(&NONE), ms(&CEILINGS));
}

static ASYNC_DELAYS: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

async fn sleep_async(d: Duration) {
    ASYNC_DELAYS.lock().unwrap().push(d);
}

#[circuit_breaker(trip = 20, retry = 3, retry_delay = "40ms", retry_backoff = 5, retry_max_delay = "700ms", retry_sleep = sleep_async)]
async fn fetch_async(tries: &mut u32) -> Result<u32, Error> {
    *tries += 1;
    if *tries <= 3 {
        Err(Error::Timeout)
    } else {
        Ok(*tries)
    }
}

#[test]
fn an_async_fn_sleeps_the_same_delays() {
    let mut tries = 0;
    let result = block_on(fetch_async(&mut tries));
    assert_eq!(result, Ok(4));
    assert_eq!(take(&ASYNC_DELAYS), ms(&[40, 200, 700]));
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
    }
}
