//! Squad's predictive breaker on a microcontroller: `cargo test --release --test quota`.
//!
//! A LoRa radio may spend only so much airtime per window (the 1 % duty-cycle rule; here
//! 2,000 ms of airtime per 6 s window, scaled down). A [`QuotaGuard`] steers the radio's
//! breaker with a gauge of the airtime left, sampled from the duty-cycle tracker after
//! every frame: the last 8 samples, a warning 1 s ahead, the traffic light. One frame is
//! due every 100 ms of embassy time; every 4th is an alarm (high priority), the rest is
//! telemetry (normal priority).
//!
//! | ticks | airtime per frame | what must happen |
//! |---|---|---|
//! | 0-9, 10-19 | 10 ms, 30 ms | green, the forecast far above 1 s |
//! | 20-21 | 250 ms (a burst: firmware update chunks) | still closed (~1.2 s left at tick 21) |
//! | 22 | 250 ms | exhaustion predicted in ~0.68 s: the breaker **opens**, 850 ms still left |
//! | 23-31 | | refused: cooldown 950 ms (without the breaker the budget would run out at tick 29) |
//! | 32, 33 | 30 ms | two probes pass: **closed** again |
//! | 34-45 | 30 ms | green |
//! | 46-59 | 30 ms | **amber** (20 % left): telemetry refused (`QuotaLow`), alarms still sent |
//! | 60-69 | 30 ms | the window reset at 6 s: green again |
//!
//! The decisions sit well away from QEMU's loose timing: the forecasts around the opening
//! are 18 % and 32 % away from the warning, the cooldown ends 50 ms before the probe's
//! tick and 50 ms after the last refusal, and the budget figures depend only on which
//! frames were sent. Any wrong figure logs what it expected and ends the run with failure.
#![no_std]
#![no_main]

use breaker_embedded::{
    CallError, Classify, Clock, DefmtQuotaLog, Duration, EmbassyClock, Light, Policy, Priority, Quota, QuotaGuard,
    QuotaPolicy, RefusalReason, SharedBreaker, State, Verdict,
};
use embassy_executor::Spawner;
use embassy_time::{Instant as EmbassyInstant, Timer};
use firmware_m3 as fw;
use fw::scenario::figure;

/// Airtime per window, in milliseconds.
const BUDGET_MS: u32 = 2_000;
/// The duty-cycle window.
const WINDOW_MS: u64 = 6_000;
const TICK_MS: u64 = 100;
const TICKS: u32 = 70;

/// The radio's breaker: Squad's shape, scaled down: cooldown 950 ms doubling up to 7.6 s, two
/// probes to close (the trip count is for the radio's own NACKs, which this run has none of).
static POLICY: Policy = Policy::new(3, Duration::from_millis(950))
    .with_probes_to_close(2)
    .with_backoff(2, Duration::from_millis(7_600));
static RADIO: SharedBreaker<DefmtQuotaLog> = SharedBreaker::with_observer(&POLICY, DefmtQuotaLog::new());
/// Warn 1 s before the airtime runs out; the default lights (green above 20 %, red at 5 %).
const AIRTIME: QuotaPolicy = QuotaPolicy::new().with_warning(Duration::from_secs(1));

/// The radio's duty-cycle tracker: airtime used in the current window.
struct DutyCycle {
    used: u32,
    window: u64,
}

impl DutyCycle {
    /// The airtime left now (the window resets every `WINDOW_MS`).
    fn quota(&mut self, now_ms: u64) -> Quota {
        let window = now_ms / WINDOW_MS;
        if window != self.window {
            self.window = window;
            self.used = 0;
        }
        Quota::new(BUDGET_MS.saturating_sub(self.used), BUDGET_MS)
    }
}

/// The radio refused a frame over the duty-cycle budget (the regional rules forbid it).
#[derive(Debug)]
struct DutyCycleExceeded;

impl Classify for DutyCycleExceeded {
    fn verdict(&self) -> Verdict {
        Verdict::Trip
    }
}

fn airtime(tick: u32) -> u32 {
    match tick {
        0..=9 => 10,
        10..=19 => 30,
        20..=25 => 250,
        _ => 30,
    }
}

fn priority(tick: u32) -> Priority {
    if tick.is_multiple_of(4) {
        Priority::High
    } else {
        Priority::Normal
    }
}

/// What the run did.
#[derive(Default)]
struct Run {
    sent: u32,
    airtime_sent: u32,
    refused_open: u32,
    refused_quota_low: u32,
    alarms_sent_in_amber: u32,
    opened_at: Option<u32>,
    left_at_opening: u32,
    forecast_at_opening_ms: u32,
    closed_at: Option<u32>,
    amber_from: Option<u32>,
    green_again_at: Option<u32>,
    least_left: u32,
    /// The first tick at which the frames due would have spent more than the budget had
    /// the breaker let every one of them through.
    unguarded_runs_out_at: Option<u32>,
    over_budget: u32,
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
    defmt::info!(
        "quota test: a radio with {=u32} ms of airtime per {=u64} ms window, one frame every {=u64} ms",
        BUDGET_MS,
        WINDOW_MS,
        TICK_MS
    );

    let run = run().await;
    let mut ok = true;
    let at = |t: Option<u32>| t.unwrap_or(u32::MAX);
    ok &= figure("radio", "tick the prediction opened the breaker", 22, at(run.opened_at));
    ok &= figure("radio", "airtime left when it opened (ms)", 850, run.left_at_opening);
    let forecast_ok = (600..=760).contains(&run.forecast_at_opening_ms);
    defmt::info!(
        "check radio forecast at the opening: {=u32} ms to exhaustion ({=str}, expected ~683 ms)",
        run.forecast_at_opening_ms,
        if forecast_ok { "as expected" } else { "WRONG" }
    );
    ok &= forecast_ok;
    ok &= figure(
        "radio",
        "tick the budget ran out without the breaker",
        29,
        at(run.unguarded_runs_out_at),
    );
    ok &= figure("radio", "frames refused while open", 9, run.refused_open);
    ok &= figure("radio", "tick it closed again (two probes)", 33, at(run.closed_at));
    ok &= figure("radio", "tick the light turned amber", 46, at(run.amber_from));
    ok &= figure("radio", "telemetry frames refused in amber", 10, run.refused_quota_low);
    ok &= figure("radio", "alarm frames sent in amber", 4, run.alarms_sent_in_amber);
    ok &= figure("radio", "tick the light was green again", 60, at(run.green_again_at));
    ok &= figure("radio", "frames sent", 51, run.sent);
    ok &= figure("radio", "airtime sent (ms)", 1_990, run.airtime_sent);
    ok &= figure("radio", "least airtime left (ms)", 310, run.least_left);
    ok &= figure("radio", "frames over the budget", 0, run.over_budget);
    let c = RADIO.counters();
    ok &= figure("radio", "breaker trips", 1, c.trips);
    ok &= figure("radio", "breaker probes", 2, c.probes);
    ok &= figure("radio", "breaker skips", 9, c.skips);
    ok &= figure("radio", "breaker failures", 0, c.failures);
    let closed = RADIO.state(EmbassyClock.now()) == State::Closed { strikes: 0 };
    ok &= figure("radio", "closed at the end", 1, u32::from(closed));

    if ok {
        defmt::info!("quota test passed: every figure as expected");
    } else {
        defmt::error!("quota test FAILED: see the figures above");
    }
    fw::exit(ok)
}

async fn run() -> Run {
    let mut guard = QuotaGuard::<_, 8>::new(&RADIO, AIRTIME);
    let mut duty = DutyCycle { used: 0, window: 0 };
    let mut r = Run {
        least_left: BUDGET_MS,
        ..Run::default()
    };
    let mut wanted = 0u32;
    let start = EmbassyInstant::now();
    for tick in 0..TICKS {
        Timer::at(start + embassy_time::Duration::from_millis(u64::from(tick) * TICK_MS)).await;
        let now = EmbassyClock.now();
        let now_ms = start.elapsed().as_millis();
        let cost = airtime(tick);
        if now_ms < WINDOW_MS {
            wanted += cost;
            if wanted > BUDGET_MS && r.unguarded_runs_out_at.is_none() {
                r.unguarded_runs_out_at = Some(tick);
            }
        }
        let light_before = guard.gauge().light();
        let sent = guard.call(&EmbassyClock, priority(tick), || {
            let q = duty.quota(now_ms);
            if cost > q.remaining {
                return (Err(DutyCycleExceeded), Some(q));
            }
            duty.used += cost;
            (Ok(()), Some(duty.quota(now_ms)))
        });
        match sent {
            Ok(()) => {
                r.sent += 1;
                r.airtime_sent += cost;
                if light_before == Some(Light::Amber) && priority(tick) == Priority::High {
                    r.alarms_sent_in_amber += 1;
                }
            }
            Err(CallError::Inner(DutyCycleExceeded)) => r.over_budget += 1,
            Err(CallError::Refused(refused)) if refused.reason == RefusalReason::QuotaLow => {
                r.refused_quota_low += 1;
                // Telemetry waits; the duty-cycle tracker is local, so sampling it is free.
                guard.observe(duty.quota(now_ms), now);
            }
            Err(CallError::Refused(refused)) => {
                r.refused_open += 1;
                if let Some(left) = refused.retry_in {
                    RADIO.observer().cooling_down(left);
                }
            }
        }
        let reading = guard.gauge().reading();
        let left = reading.quota.map_or(BUDGET_MS, |q| q.remaining);
        r.least_left = r.least_left.min(left);
        let state = guard.state(EmbassyClock.now());
        if r.opened_at.is_none() && matches!(state, State::Open { .. }) {
            r.opened_at = Some(tick);
            r.left_at_opening = left;
            r.forecast_at_opening_ms = reading.forecast.map_or(u32::MAX, |f| f.exhausted_in.as_millis());
        }
        if r.opened_at.is_some() && r.closed_at.is_none() && matches!(state, State::Closed { .. }) {
            r.closed_at = Some(tick);
        }
        match reading.light {
            Some(Light::Amber) if r.amber_from.is_none() => r.amber_from = Some(tick),
            Some(Light::Green) if r.amber_from.is_some() && r.green_again_at.is_none() => r.green_again_at = Some(tick),
            _ => {}
        }
        defmt::info!(
            "t={=u32:02} frame of {=u32:03} ms, {=u32:04} ms of airtime left ({=str}) -> {}",
            tick,
            cost,
            left,
            reading.light.map_or("-", Light::name),
            breaker_embedded::Brief(state)
        );
    }
    r
}
