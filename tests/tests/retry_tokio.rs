//! The async retry ladder on tokio: its `sleep` is tokio's, its clock tokio's paused time,
//! so the delays are real timer waits that the test runs in no wall time.

use breaker_core::{Classify, Clock, Duration, Instant, Jitter, Policy, RetryPolicy, SharedBreaker, Stop};

/// The breaker's clock over tokio's (paused) time: milliseconds since the first reading.
struct TokioClock(tokio::time::Instant);

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::from_millis_u64(self.0.elapsed().as_millis() as u64)
    }
}

#[derive(Debug, PartialEq)]
struct Timeout;
impl Classify for Timeout {}

static POLICY: Policy = Policy::new(5, Duration::from_secs(30));
static RETRY: RetryPolicy = RetryPolicy::new(4, Duration::from_millis(100))
    .with_max_delay(Duration::from_millis(300))
    .with_jitter(Jitter::Equal);

#[tokio::test(start_paused = true)]
async fn retries_sleep_on_tokio_timers() {
    let breaker = SharedBreaker::new(&POLICY);
    let clock = TokioClock(tokio::time::Instant::now());
    let started = tokio::time::Instant::now();
    let mut failures_left = 3;
    let retried = RETRY
        .ladder(&breaker, &clock)
        .seed(11)
        .sleep(|d: Duration| tokio::time::sleep(d.into())) // the guide's snippet, as written there
        .call_async(async || {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await; // the call's own latency
            if failures_left > 0 {
                failures_left -= 1;
                Err(Timeout)
            } else {
                Ok("pong")
            }
        })
        .await;
    assert_eq!(
        (retried.result, retried.attempts, retried.stop),
        (Ok("pong"), 4, Stop::Succeeded)
    );
    // Four calls of 5 ms, and the three delays the seed draws (equal jitter: half to all of
    // 100, 200 and 300 ms).
    let slept: u32 = RETRY.delays(11).take(3).map(Duration::as_millis).sum();
    assert!((300..=600).contains(&slept), "{slept}");
    assert_eq!(
        started.elapsed(),
        std::time::Duration::from_millis(u64::from(slept) + 20)
    );
    assert_eq!(breaker.counters().failures, 3);
}

/// The tokio sleep the guide's ladder chapter and the `Sleep` trait's notes give is the
/// one compiled above, character for character (with `|d|` alone, `.into()` cannot tell
/// what it converts: E0282).
#[test]
fn the_documented_tokio_sleep_is_the_compiled_one() {
    const SNIPPET: &str = ".sleep(|d: Duration| tokio::time::sleep(d.into()))";
    assert!(include_str!("retry_tokio.rs").contains(&format!("        {SNIPPET} //")));
    assert!(include_str!("../../docs/ladder.md").contains(SNIPPET));
    assert!(include_str!("../../breaker-core/src/compose/ladder.rs").contains(SNIPPET));
}
