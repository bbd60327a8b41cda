//! The retry ladder on the emulator: `cargo test --release --test ladder`.
//!
//! A radio that NACKs is retried through the ladder in front of its breaker, sleeping on
//! embassy's timer, and every figure is checked: attempts, the time slept (loosely: QEMU's
//! timers follow the host's loaded clock), why each ladder stopped, and the breaker's
//! counters.
//!
//! 1. By hand (`RetryPolicy::ladder`, `Timer::after`): two NACKs then an ACK (3 attempts,
//!    20 + 40 ms of sleep); a radio that keeps NACKing trips the breaker on the third
//!    strike and the ladder stops there without sleeping against it; the next ladder is
//!    refused without an attempt; after the cooldown the first attempt is the probe and
//!    closes the breaker; a ladder dropped by `with_timeout` mid-sleep leaves the breaker
//!    as its attempt left it.
//! 2. Through `#[circuit_breaker(retry = ..)]` on an `async fn`, whose default sleep is
//!    embassy's `Timer` (`EmbassySleep`): full jitter within its bounds, and a budget
//!    that ends the ladder.
//!
//! Any wrong figure logs what it expected and ends the run with failure (QEMU exits 1).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use breaker_embedded::{
    circuit_breaker, embassy_duration, CallError, Classify, Clock, Duration, EmbassyClock, Phase, Policy, Refused,
    RetryPolicy, SharedBreaker, State, Stop,
};
use embassy_executor::Spawner;
use embassy_time::{with_timeout, Instant, Timer};
use firmware_m3 as fw;
use fw::scenario::figure;

/// A radio transmission that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
enum RadioError {
    /// No acknowledgement: a retry may pass.
    Nack,
    /// The breaker refused: nothing was sent.
    Refused,
}

impl From<Refused> for RadioError {
    fn from(_: Refused) -> Self {
        RadioError::Refused
    }
}

impl Classify for RadioError {} // a NACK is a strike

/// A simulated radio: NACKs while `nacks_left` is above zero, counting every frame sent.
struct Radio {
    sent: AtomicU32,
    nacks_left: AtomicU32,
}

impl Radio {
    const fn new() -> Radio {
        Radio {
            sent: AtomicU32::new(0),
            nacks_left: AtomicU32::new(0),
        }
    }

    fn script(&self, nacks: u32) {
        self.sent.store(0, Ordering::Relaxed);
        self.nacks_left.store(nacks, Ordering::Relaxed);
    }

    /// Sends one frame; 1 ms on the air.
    async fn send(&self) -> Result<u32, RadioError> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        Timer::after_millis(1).await;
        let left = self.nacks_left.load(Ordering::Relaxed);
        if left > 0 {
            self.nacks_left.store(left - 1, Ordering::Relaxed);
            Err(RadioError::Nack)
        } else {
            Ok(self.sent.load(Ordering::Relaxed))
        }
    }
}

static RADIO: Radio = Radio::new();
static POLICY: Policy = Policy::new(3, Duration::from_millis(500));
static BREAKER: SharedBreaker = SharedBreaker::new(&POLICY);
/// Up to 4 retries, 20 ms then 40, 80, 160: no jitter, so the sleeps are exact.
static RETRY: RetryPolicy = RetryPolicy::new(4, Duration::from_millis(20));

fn expect(what: &str, holds: bool) -> bool {
    if holds {
        defmt::info!("check ladder: {=str}", what);
    } else {
        defmt::error!("check ladder FAILED: {=str}", what);
    }
    holds
}

/// `elapsed` is at least `min` ms, and not far above (QEMU's loaded timers run late).
fn slept(what: &str, elapsed: u64, min: u64, slack: u64) -> bool {
    defmt::info!("{=str}: {=u64} ms (at least {=u64})", what, elapsed, min);
    expect(what, elapsed >= min && elapsed <= min + slack)
}

async fn climb() -> breaker_embedded::Retried<u32, RadioError> {
    RETRY
        .ladder(&BREAKER, &EmbassyClock)
        .sleep(|d| Timer::after(embassy_duration(d)))
        .call_async(async || RADIO.send().await)
        .await
}

async fn by_hand() -> bool {
    // Two NACKs, then an ACK: 3 attempts, 20 + 40 ms of sleep (and 3 ms on the air).
    RADIO.script(2);
    let start = Instant::now();
    let r = climb().await;
    let elapsed = start.elapsed().as_millis();
    defmt::info!("two NACKs: {}, {=u32} attempts, {}", r.result, r.attempts, r.stop);
    let mut ok = figure("radio", "attempts", 3, r.attempts);
    ok &= figure("radio", "frames sent", 3, RADIO.sent.load(Ordering::Relaxed));
    ok &= expect(
        "the third attempt went through",
        r.result == Ok(3) && r.stop == Stop::Succeeded,
    );
    ok &= slept("two NACKs, slept", elapsed, 63, 60);
    ok &= expect(
        "the success cleared the strikes",
        BREAKER.state(EmbassyClock.now()) == State::Closed { strikes: 0 },
    );

    // NACKs for ever: the third strike trips the breaker, which stays open 500 ms, longer
    // than the next delay (80 ms): the ladder stops there, after 20 + 40 ms of sleep.
    RADIO.script(u32::MAX);
    let start = Instant::now();
    let r = climb().await;
    let elapsed = start.elapsed().as_millis();
    defmt::info!("NACKs for ever: {}, {=u32} attempts, {}", r.result, r.attempts, r.stop);
    ok &= figure("radio", "attempts before the trip", 3, r.attempts);
    ok &= expect(
        "the last NACK is returned",
        r.result == Err(CallError::Inner(RadioError::Nack)),
    );
    ok &= expect(
        "stopped by the open breaker, 500 ms to wait",
        matches!(r.stop, Stop::Opened { retry_in: Some(d) } if (450..=500).contains(&d.as_millis())),
    );
    ok &= slept("NACKs for ever, slept", elapsed, 63, 60);

    // The next ladder is refused at the gate: nothing sent, nothing slept.
    RADIO.script(0);
    let start = Instant::now();
    let r = climb().await;
    defmt::info!(
        "while open: {=u32} attempts, {}, retry in {}",
        r.attempts,
        r.stop,
        r.retry_in()
    );
    ok &= figure("radio", "attempts while open", 0, r.attempts);
    ok &= figure("radio", "frames sent while open", 0, RADIO.sent.load(Ordering::Relaxed));
    ok &= expect(
        "refused",
        matches!(r.result, Err(CallError::Refused(_))) && r.stop == Stop::Refused,
    );
    ok &= expect("no sleeping against the open breaker", start.elapsed().as_millis() < 5);

    // After the cooldown the first attempt is the probe: it works and closes the breaker.
    Timer::after_millis(500).await;
    let r = climb().await;
    defmt::info!("after the cooldown: {}, {=u32} attempts", r.result, r.attempts);
    ok &= figure("radio", "attempts of the probe's ladder", 1, r.attempts);
    ok &= expect("closed again", BREAKER.phase(EmbassyClock.now()) == Phase::Closed);

    // Dropped mid-sleep: the ladder holds nothing while asleep, the breaker keeps the strike.
    RADIO.script(u32::MAX);
    let cut = with_timeout(embassy_time::Duration::from_millis(10), climb()).await;
    ok &= expect("the ladder was cut off mid-sleep", cut.is_err());
    ok &= expect(
        "one strike, nothing held",
        BREAKER.state(EmbassyClock.now()) == State::Closed { strikes: 1 },
    );

    let c = BREAKER.counters();
    ok &= figure("radio", "breaker failures", 6, c.failures);
    ok &= figure("radio", "breaker skips", 1, c.skips);
    ok &= figure("radio", "breaker trips", 1, c.trips);
    ok &= figure("radio", "breaker probes", 1, c.probes);
    ok
}

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

/// Up to 3 retries, 20 ms x2 with full jitter, on embassy's timer (the default sleep).
#[circuit_breaker(
    name = "ladder-radio",
    trip = 5,
    cooldown = "500ms",
    retry = 3,
    retry_delay = "20ms",
    retry_jitter = "full"
)]
async fn send_jittered(nacks: u32) -> Result<u32, RadioError> {
    ATTEMPTS.fetch_add(1, Ordering::Relaxed);
    Timer::after_millis(1).await;
    if ATTEMPTS.load(Ordering::Relaxed) <= nacks {
        return Err(RadioError::Nack);
    }
    Ok(ATTEMPTS.load(Ordering::Relaxed))
}

/// Up to 10 retries every 20 ms, but never more than 70 ms in all.
#[circuit_breaker(
    name = "ladder-budget",
    trip = 50,
    retry = 10,
    retry_delay = "20ms",
    retry_backoff = 1,
    retry_budget = "70ms"
)]
async fn send_budgeted() -> Result<u32, RadioError> {
    ATTEMPTS.fetch_add(1, Ordering::Relaxed);
    Timer::after_millis(1).await;
    Err(RadioError::Nack)
}

async fn through_the_attribute() -> bool {
    ATTEMPTS.store(0, Ordering::Relaxed);
    let start = Instant::now();
    let r = send_jittered(2).await;
    let elapsed = start.elapsed().as_millis();
    defmt::info!("attribute, two NACKs: {}", r);
    let mut ok = expect("three attempts, the last one works", r == Ok(3));
    // Full jitter: each sleep between 0 and its ceiling (20, then 40 ms).
    ok &= slept("attribute, full jitter, slept", elapsed, 3, 60 + 40);

    ATTEMPTS.store(0, Ordering::Relaxed);
    let start = Instant::now();
    let r = send_budgeted().await;
    let elapsed = start.elapsed().as_millis();
    let attempts = ATTEMPTS.load(Ordering::Relaxed);
    defmt::info!(
        "budget of 70 ms: {}, {=u32} attempts in {=u64} ms",
        r,
        attempts,
        elapsed
    );
    ok &= expect("the last NACK is returned", r == Err(RadioError::Nack));
    // 1 ms on the air, 20 ms asleep: attempts start at about 0, 21, 42, 63, and the
    // sleep after the fourth is cut to the 70 ms budget's end, where the fifth starts.
    ok &= expect("the budget allows 4 or 5 attempts, not 11", (4..=5).contains(&attempts));
    ok &= expect(
        "the ladder ends within the budget (plus the last attempt)",
        elapsed <= 70 + 1 + 30,
    );
    ok
}

#[cortex_m_rt::entry]
fn entry() -> ! {
    fw::executor::run(|spawner| spawner.must_spawn(main(spawner)))
}

#[embassy_executor::task]
async fn main(_spawner: Spawner) {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    fw::time_driver::init(peripherals.SYST);

    let mut ok = by_hand().await;
    ok &= through_the_attribute().await;
    if ok {
        defmt::info!("ladder test passed: every figure as expected");
    } else {
        defmt::error!("ladder test FAILED: see the figures above");
    }
    fw::exit(ok)
}
