//! `#[circuit_breaker(window = ..)]`: annotated functions trip on a failure rate or a
//! slow-call rate over their window, sync and async, and say so in the registry.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use breaker_core::{
    circuit_breaker, registry, Classify, Clock, Duration, Instant, ManualClock, Phase, Refused, Verdict, WindowStats,
};

#[derive(Debug, PartialEq)]
enum Error {
    Timeout,
    BadRequest,
    Refused,
}

impl Classify for Error {
    fn verdict(&self) -> Verdict {
        match self {
            Error::BadRequest => Verdict::Neutral,
            _ => Verdict::Strike,
        }
    }
}

impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

static RATE_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// 50 % of the last 10 calls, from 4 calls on.
#[circuit_breaker(window = 10, failure_rate = 50, min_calls = 4, cooldown = "10s", clock = RATE_CLOCK, name = "macro_window::rate")]
fn rate(outcome: Result<(), Error>) -> Result<(), Error> {
    outcome
}

#[test]
fn an_annotated_function_trips_on_its_failure_rate_not_on_strikes() {
    let stats = || {
        registry::get("macro_window::rate")
            .unwrap()
            .breaker()
            .window_stats(RATE_CLOCK.now())
    };
    assert_eq!(rate(Err(Error::Timeout)), Err(Error::Timeout));
    assert_eq!(rate(Err(Error::BadRequest)), Err(Error::BadRequest)); // neutral: not counted
    assert_eq!(rate(Ok(())), Ok(()));
    assert_eq!(rate(Ok(())), Ok(()));
    assert_eq!(
        stats(),
        Some(WindowStats {
            calls: 3,
            failures: 1,
            slow: 0
        })
    );
    assert_eq!(rate(Err(Error::Timeout)), Err(Error::Timeout)); // 2 of 4: 50 %
    assert_eq!(rate(Ok(())), Err(Error::Refused));
    let entry = registry::get("macro_window::rate").unwrap();
    assert_eq!(entry.state().phase(), Phase::Open);
    assert_eq!(entry.policy().trip(), 0);
    RATE_CLOCK.advance(Duration::from_secs(10));
    assert_eq!(rate(Ok(())), Ok(())); // the probe closes it, with an empty window
    assert_eq!(stats(), Some(WindowStats::default()));
}

static LARGE_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// A count window larger than the small one's 51 calls (a ring of 100 instead).
#[circuit_breaker(window = 100, failure_rate = 50, cooldown = "10s", clock = LARGE_CLOCK, name = "macro_window::large")]
fn large(outcome: Result<(), Error>) -> Result<(), Error> {
    outcome
}

#[test]
fn a_count_window_above_51_calls_holds_every_call_it_names() {
    for _ in 0..60 {
        assert_eq!(large(Ok(())), Ok(()));
    }
    // 40 of the last 100 failed: 40 %, closed. A window cut to 51 calls would hold 40 of
    // 51 (and trip at the 26th).
    for _ in 0..40 {
        assert_eq!(large(Err(Error::Timeout)), Err(Error::Timeout));
    }
    let entry = registry::get("macro_window::large").unwrap();
    assert_eq!(entry.state().phase(), Phase::Closed);
    assert_eq!(
        entry.breaker().window_stats(LARGE_CLOCK.now()),
        Some(WindowStats {
            calls: 100,
            failures: 40,
            slow: 0
        })
    );
}

static SLOW_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// Trips when 3 of the last 4 calls took longer than 1 s.
#[circuit_breaker(window = 4, slow_call = "1s", slow_rate = 75, clock = SLOW_CLOCK, name = "macro_window::modem")]
fn modem(takes_ms: u32) -> Result<u32, Error> {
    SLOW_CLOCK.advance(Duration::from_millis(takes_ms));
    Ok(takes_ms)
}

#[test]
fn a_modem_that_answers_too_late_trips_on_slow_calls() {
    assert_eq!(modem(1500), Ok(1500));
    assert_eq!(modem(100), Ok(100));
    assert_eq!(modem(1000), Ok(1000)); // exactly the duration: not slower
    assert_eq!(modem(2000), Ok(2000)); // 2 of 4 slow: 50 %
    assert_eq!(
        registry::get("macro_window::modem").unwrap().state().phase(),
        Phase::Closed
    );
    assert_eq!(modem(3000), Ok(3000)); // the last 4: 100, 1000, 2000, 3000: 2 slow
    assert_eq!(modem(1001), Ok(1001)); // 1000, 2000, 3000, 1001: 3 of 4
    assert_eq!(modem(1), Err(Error::Refused));
}

static ASYNC_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[circuit_breaker(window = 2, slow_call = "250ms", slow_rate = 100, clock = ASYNC_CLOCK, name = "macro_window::fetch")]
async fn fetch(takes_ms: u32) -> Result<(), Error> {
    ASYNC_CLOCK.advance(Duration::from_millis(takes_ms));
    Ok(())
}

#[test]
fn an_async_function_is_timed_across_its_await() {
    assert_eq!(block_on(fetch(300)), Ok(()));
    assert_eq!(block_on(fetch(10)), Ok(()));
    let stats = registry::get("macro_window::fetch")
        .unwrap()
        .breaker()
        .window_stats(ASYNC_CLOCK.now());
    assert_eq!(stats.map(|s| s.slow), Some(1));
    assert_eq!(block_on(fetch(400)), Ok(()));
    assert_eq!(block_on(fetch(251)), Ok(())); // 2 of 2 slow
    assert_eq!(block_on(fetch(0)), Err(Error::Refused));
}

static TIME_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// 50 % over the last 10 seconds, from 4 calls on.
#[circuit_breaker(window = "10s", min_calls = 4, clock = TIME_CLOCK, log, name = "macro_window::sensor")]
fn sensor(ok: bool) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(Error::Timeout)
    }
}

#[test]
fn a_time_window_forgets_failures_older_than_its_span() {
    assert_eq!(sensor(false), Err(Error::Timeout));
    assert_eq!(sensor(false), Err(Error::Timeout));
    TIME_CLOCK.advance(Duration::from_secs(11)); // both failures leave the window
    for _ in 0..3 {
        assert_eq!(sensor(true), Ok(()));
    }
    assert_eq!(sensor(false), Err(Error::Timeout)); // 1 of 4
    assert_eq!(
        registry::get("macro_window::sensor").unwrap().state().phase(),
        Phase::Closed
    );
    assert_eq!(sensor(false), Err(Error::Timeout)); // 2 of 5
    assert_eq!(sensor(false), Err(Error::Timeout)); // 3 of 6: 50 %
    assert_eq!(sensor(true), Err(Error::Refused));
}

static COMBO_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

fn no_sleep(_: Duration) {}

/// A window with retries in front: every attempt is a sample.
#[circuit_breaker(window = 4, min_calls = 4, retry = 1, retry_delay = "10ms", retry_sleep = no_sleep, clock = COMBO_CLOCK, name = "macro_window::retried")]
fn retried(fail: bool) -> Result<(), Error> {
    if fail {
        Err(Error::Timeout)
    } else {
        Ok(())
    }
}

#[test]
fn retried_attempts_are_samples_of_the_window() {
    assert_eq!(retried(false), Ok(()));
    let samples = || {
        registry::get("macro_window::retried")
            .unwrap()
            .breaker()
            .window_stats(COMBO_CLOCK.now())
            .map(|s| s.calls)
    };
    assert_eq!(samples(), Some(1), "a first-attempt success is a sample");
    assert_eq!(retried(true), Err(Error::Timeout)); // two attempts, two failures
    assert_eq!(samples(), Some(3));
    assert_eq!(retried(true), Err(Error::Timeout)); // the 4th sample: 3 of 4 failed, tripped
    assert_eq!(retried(false), Err(Error::Refused));
}

static FALLBACK_CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

fn cached(_fail: bool) -> Result<u32, Error> {
    Ok(0)
}

/// A window with a fallback: the admitted calls are samples, a refusal answers from the cache.
#[circuit_breaker(window = 2, min_calls = 2, fallback = cached, clock = FALLBACK_CLOCK, name = "macro_window::fresh")]
fn fresh(fail: bool) -> Result<u32, Error> {
    if fail {
        Err(Error::Timeout)
    } else {
        Ok(1)
    }
}

#[test]
fn a_windowed_function_falls_back_when_its_window_trips() {
    assert_eq!(fresh(false), Ok(1));
    assert_eq!(fresh(true), Err(Error::Timeout)); // 1 of 2 failed: 50 %, tripped
    assert_eq!(fresh(false), Ok(0), "refused: the fallback answers");
}
