//! A two-link radio behind a `FallbackChain`, checked on the emulator:
//! `cargo test --release --test chain`.
//!
//! LoRa is the primary, NB-IoT the backup (budget 2 failed turns). The chain follows
//! loopctl's model breaker with short times: 3 failed turns trip it, cooldown 450 ms, 2
//! probe successes recover it. One turn every 100 ms of embassy time, 20 turns:
//!
//! | tick | 0-1 | 2-4 | 5 | 6-7 | 8 | 9-10 | 11 | 12 | 13-16 | 17-18 | 19 |
//! |---|---|---|---|---|---|---|---|---|---|---|---|
//! | LoRa answers | ok | NACK | | | | ok | ok | fault | | ok | ok |
//! | NB-IoT answers | | | ok | NACK | | | | | ok | | |
//! | route | L | L (trips at 4) | N | N (spent at 7) | exhausted | probes | L | L (trips) | N | probes | L |
//!
//! The first trip's cooldown runs out at 850 ms (tick 8 at 800 ms is FallbackExhausted,
//! tick 9 at 900 ms the probe); the second, from the fault at 1200 ms, at 1650 ms (tick 16
//! still NB-IoT, tick 17 the probe): every decision is 50 ms away from a tick. The
//! recovery at tick 10 clears NB-IoT's spent budget, so it carries the second outage.
//! Every figure is checked; a wrong one logs what was expected and fails the run.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use breaker_embedded::{
    log_registry, registry, Backup, BackupSpent, ChainObserver, ChainPhase, Clock, Duration, EmbassyClock,
    FallbackChain, FallbackEvent, Outcome, Policy, Route, Transition, Verdict,
};
use embassy_executor::Spawner;
use embassy_time::{Instant, Timer};
use firmware_m3 as fw;
use fw::scenario::figure;

const TICKS: usize = 20;
const TICK_MS: u64 = 100;

/// loopctl's model breaker on a radio's time scale.
static POLICY: Policy = Policy::new(3, Duration::from_millis(450))
    .with_probes_to_close(2)
    .with_patient_probation();

/// Logs what the chain does and counts its events.
struct Log {
    fallbacks: AtomicU32,
    spent: AtomicU32,
}

impl ChainObserver for Log {
    fn on_transition(&self, t: &Transition) {
        defmt::info!("chain: primary {} -> {} ({=str})", t.from, t.to, t.why.words());
    }

    fn on_fallback(&self, e: &FallbackEvent) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        defmt::warn!("chain: fallback {=str} -> {}", e.from, e.to);
    }

    fn on_backup_spent(&self, e: &BackupSpent) {
        self.spent.fetch_add(1, Ordering::Relaxed);
        defmt::warn!("chain: backup {=str} spent", e.name);
    }
}

static RADIO: FallbackChain<1, Log> = FallbackChain::with_observer(
    &POLICY,
    "lora",
    [Backup::new("nb-iot")],
    Log {
        fallbacks: AtomicU32::new(0),
        spent: AtomicU32::new(0),
    },
);
breaker_embedded::register!(RADIO, "radio-chain", EmbassyClock);

/// What LoRa answers at `tick` (if asked).
fn lora(tick: usize) -> Outcome {
    match tick {
        2..=4 => Outcome::STRIKE,
        12 => Outcome::Error(Verdict::Trip),
        _ => Outcome::Success,
    }
}

/// What NB-IoT answers at `tick` (if asked).
fn nb_iot(tick: usize) -> Outcome {
    match tick {
        6 | 7 => Outcome::STRIKE,
        _ => Outcome::Success,
    }
}

const EXPECTED_ROUTES: &[u8; TICKS] = b"LLLLLNNNXPPLLNNNNPPL";

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

    let epoch = Instant::now();
    let mut routes = [b'?'; TICKS];
    let mut phases = [ChainPhase::Primary; TICKS];
    let mut attempts_after = [0u32; TICKS];
    for (tick, route_seen) in routes.iter_mut().enumerate() {
        Timer::at(epoch + embassy_time::Duration::from_millis(tick as u64 * TICK_MS)).await;
        let turn = RADIO.route(&EmbassyClock);
        let route = turn.route();
        let (seen, outcome) = match route {
            Route::Primary { probe: false } => (b'L', Some(lora(tick))),
            Route::Primary { probe: true } => (b'P', Some(lora(tick))),
            Route::Backup { .. } => (b'N', Some(nb_iot(tick))),
            Route::Exhausted { .. } => (b'X', None),
            Route::Probing => (b'?', None),
        };
        if let Some(outcome) = outcome {
            turn.record(outcome);
        }
        *route_seen = seen;
        let now = EmbassyClock.now();
        phases[tick] = RADIO.phase(now);
        attempts_after[tick] = RADIO.backup(0).map_or(u32::MAX, |b| b.attempts);
        defmt::info!(
            "t={=usize:02} radio chain: {=str} -> {}, {}",
            tick,
            match seen {
                b'L' => "lora",
                b'P' => "lora (probe)",
                b'N' => "nb-iot",
                b'X' => "FallbackExhausted",
                _ => "nowhere",
            },
            outcome,
            phases[tick]
        );
    }

    defmt::info!("registry at the end:");
    log_registry();
    let ok = check(&routes, &phases, &attempts_after);
    if ok {
        defmt::info!("chain test passed: every figure as expected");
    } else {
        defmt::error!("chain test FAILED: see the figures above");
    }
    fw::exit(ok)
}

fn check(routes: &[u8; TICKS], phases: &[ChainPhase; TICKS], attempts: &[u32; TICKS]) -> bool {
    let mut ok = true;
    if routes == EXPECTED_ROUTES {
        defmt::info!("check chain routes: {=[u8]:a} (as expected)", &routes[..]);
    } else {
        defmt::error!(
            "check chain routes: got {=[u8]:a}, expected {=[u8]:a}",
            &routes[..],
            &EXPECTED_ROUTES[..]
        );
        ok = false;
    }
    let count = |b: u8| routes.iter().filter(|&&r| r == b).count() as u32;
    ok &= figure("chain", "turns to lora", 8, count(b'L'));
    ok &= figure("chain", "probes to lora", 4, count(b'P'));
    ok &= figure("chain", "turns to nb-iot", 7, count(b'N'));
    ok &= figure("chain", "FallbackExhausted turns", 1, count(b'X'));

    // The phases at the turns where they change.
    for (tick, expected) in [
        (4, ChainPhase::Fallback),
        (8, ChainPhase::Fallback),
        (9, ChainPhase::Recovering),
        (10, ChainPhase::Primary),
        (12, ChainPhase::Fallback),
        (17, ChainPhase::Recovering),
        (18, ChainPhase::Primary),
    ] {
        if phases[tick] != expected {
            defmt::error!(
                "check chain phase after tick {=usize}: got {}, expected {}",
                tick,
                phases[tick],
                expected
            );
            ok = false;
        }
    }
    // NB-IoT's budget: spent at tick 7, cleared by the recovery at tick 10.
    ok &= figure("chain", "nb-iot attempts after tick 7", 2, attempts[7]);
    ok &= figure("chain", "nb-iot attempts after the recovery (tick 10)", 0, attempts[10]);

    let report = RADIO.report(EmbassyClock.now());
    ok &= figure("chain", "fallback_activated", 1, u32::from(report.fallback_activated));
    ok &= figure("chain", "exhausted (counted)", 1, report.exhausted);
    ok &= figure("chain", "nb-iot turns (counted)", 7, report.backups[0].turns);
    ok &= figure("chain", "nb-iot attempts at the end", 0, report.backups[0].attempts);
    ok &= figure("chain", "primary trips", 2, report.counters.trips);
    ok &= figure("chain", "primary probes", 4, report.counters.probes);
    ok &= figure("chain", "primary failures", 4, report.counters.failures);
    ok &= figure("chain", "turns the primary refused", 8, report.counters.skips);
    let log = RADIO.observer();
    ok &= figure("chain", "fallback events", 2, log.fallbacks.load(Ordering::Relaxed));
    ok &= figure("chain", "backups spent", 1, log.spent.load(Ordering::Relaxed));
    ok &= figure(
        "chain",
        "ends in primary",
        1,
        u32::from(report.phase == ChainPhase::Primary),
    );

    // The registry lists the chain's primary breaker next to the firmware's two functions.
    match registry::get("radio-chain") {
        Ok(entry) => ok &= figure("chain", "registry: primary trips", 2, entry.counters().trips),
        Err(_) => {
            defmt::error!("check chain: radio-chain is not in the registry exactly once");
            ok = false;
        }
    }
    ok
}
