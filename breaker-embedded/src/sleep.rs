//! The retry ladder's sleep on embassy-time.

use breaker_core::{BlockingSleep, Duration, Sleep};

use crate::embassy_duration;

/// Sleeps a [retry ladder](breaker_core::Ladder) on embassy-time: awaits a
/// [`Timer`](embassy_time::Timer) in `async` ladders, busy-waits with
/// [`block_for`](embassy_time::block_for) in blocking ones.
///
/// It is the default `retry_sleep` of `#[circuit_breaker(retry = ..)]` functions through
/// this crate, and fits a hand-built ladder too:
///
/// ```no_run
/// use breaker_embedded::{Classify, Duration, EmbassyClock, EmbassySleep, Policy, RetryPolicy, SharedBreaker};
///
/// #[derive(Debug)]
/// struct Nack;
/// impl Classify for Nack {}
///
/// static RADIO: SharedBreaker = SharedBreaker::new(&Policy::new(3, Duration::from_secs(1)));
/// static RETRY: RetryPolicy = RetryPolicy::new(3, Duration::from_millis(20));
///
/// async fn send() -> Result<(), Nack> { Ok(()) }
///
/// async fn send_with_retries() {
///     let sent = RETRY.ladder(&RADIO, &EmbassyClock).sleep(EmbassySleep).call_async(send).await;
///     defmt::info!("sent after {=u32} attempts", sent.attempts);
/// }
/// ```
///
/// The ladder's delays are whole milliseconds; the timer rounds them to its tick rate
/// (never shorter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, defmt::Format)]
pub struct EmbassySleep;

impl Sleep for EmbassySleep {
    type Future = embassy_time::Timer;

    #[inline]
    fn sleep(&mut self, delay: Duration) -> embassy_time::Timer {
        embassy_time::Timer::after(embassy_duration(delay))
    }
}

impl BlockingSleep for EmbassySleep {
    #[inline]
    fn sleep(&mut self, delay: Duration) {
        embassy_time::block_for(embassy_duration(delay))
    }
}
