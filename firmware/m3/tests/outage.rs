//! The outage scenario, checked on the emulator: `cargo test --release --test outage`.
//!
//! 1. Two embassy tasks run the scenario's timeline (`firmware/common/scenario.rs`): a radio and
//!    an I2C sensor, each behind a `#[circuit_breaker]` async function, one call every
//!    100 ms for 2 s, with scripted outages (NACKs, a hardware fault, a hung bus).
//! 2. The registry of breakers is dumped (mid-run and at the end), and every figure is
//!    checked: what the callers saw at each tick, how many calls reached each device,
//!    each breaker's failures, skips, trips, probes and the tick it closed again.
//! 3. Reboot survival: a third breaker's snapshot is written to a buffer standing in for
//!    flash, embassy time restarts at zero, the snapshot is restored, and the cooldown
//!    resumes with the time that was left.
//! 4. A breaker naming the hosted storage of counters (`Packed`) counts its refusals.
//!
//! Any wrong figure logs what it expected and ends the run with failure (QEMU exits 1).
#![no_std]
#![no_main]

use embassy_executor::Spawner;
use firmware_m3 as fw;
use fw::scenario::{self, EXPECTED_RADIO, EXPECTED_SENSOR};

#[cortex_m_rt::entry]
fn entry() -> ! {
    fw::executor::run(|spawner| spawner.must_spawn(main(spawner)))
}

#[embassy_executor::task]
async fn main(spawner: Spawner) {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fw::exit_failure()
    };
    fw::time_driver::init(peripherals.SYST);

    let mut ok = scenario::check_registry();
    let (radio, sensor) = fw::timeline::run(spawner).await;
    defmt::info!("registry at the end:");
    breaker_embedded::log_registry();
    ok &= scenario::check(&radio, &EXPECTED_RADIO);
    ok &= scenario::check(&sensor, &EXPECTED_SENSOR);
    ok &= reboot::cooldown_survives().await;
    ok &= packed::counts_its_refusals();

    if ok {
        defmt::info!("outage test passed: every figure as expected");
    } else {
        defmt::error!("outage test FAILED: see the figures above");
    }
    fw::exit(ok)
}

/// A breaker naming the hosted targets' storage of counters (`Packed`) instead of bare
/// metal's default (`Lean`): it counts its refusals as skips too, on its own path.
mod packed {
    use breaker_embedded::counts::Packed;
    use breaker_embedded::{CallError, Classify, Duration, EmbassyClock, Policy, SharedBreaker};
    use firmware_m3::scenario::figure;

    /// One strike opens it for a minute.
    static POLICY: Policy = Policy::new(1, Duration::from_secs(60));
    static BREAKER: SharedBreaker<(), &'static Policy, Packed> = SharedBreaker::with_counts(&POLICY, ());

    #[derive(Debug)]
    struct Nack;
    impl Classify for Nack {}

    pub fn counts_its_refusals() -> bool {
        let _ = BREAKER.call(&EmbassyClock, || Err::<(), _>(Nack));
        let mut refused = 0;
        for _ in 0..3 {
            if let Err(CallError::Refused(_)) = BREAKER.call(&EmbassyClock, || Ok::<_, Nack>(())) {
                refused += 1;
            }
        }
        let c = BREAKER.counters();
        let mut ok = figure("packed", "calls refused", 3, refused);
        ok &= figure("packed", "breaker trips", 1, c.trips);
        ok &= figure("packed", "breaker skips", 3, c.skips);
        ok
    }
}

mod reboot {
    use breaker_embedded::{
        Brief, CallError, Classify, Clock, DecodeError, DefmtLog, Duration, EmbassyClock, Phase, Policy, SharedBreaker,
        Snapshot, State,
    };
    use embassy_time::{Instant, Timer};
    use firmware_m3 as fw;
    use fw::scenario::figure;

    /// Two strikes open it for 300 ms; each re-open without a close triples that.
    static POLICY: Policy = Policy::new(2, Duration::from_millis(300)).with_backoff(3, Duration::from_millis(2700));
    /// The uplink modem's breaker, written by hand (a `SharedBreaker` in a `static`), with
    /// its transitions logged through defmt.
    static UPLINK: SharedBreaker<DefmtLog> = SharedBreaker::with_observer(&POLICY, DefmtLog::new("uplink"));
    /// The same breaker as a firmware booted without a snapshot has it.
    static FRESH: SharedBreaker = SharedBreaker::new(&POLICY);

    #[derive(Debug)]
    struct LinkDown;
    impl Classify for LinkDown {}

    fn expect(what: &str, holds: bool) -> bool {
        if holds {
            defmt::info!("check reboot: {=str}", what);
        } else {
            defmt::error!("check reboot FAILED: {=str}", what);
        }
        holds
    }

    fn uplink_call(works: bool) -> Result<(), CallError<LinkDown>> {
        UPLINK.call(&EmbassyClock, || if works { Ok(()) } else { Err(LinkDown) })
    }

    fn refused_for(result: Result<(), CallError<LinkDown>>) -> Option<Duration> {
        match result {
            Err(CallError::Refused(refused)) => refused.retry_in,
            _ => None,
        }
    }

    pub async fn cooldown_survives() -> bool {
        defmt::info!("reboot survival: the uplink breaker");
        // Erased flash reads all ones and holds no snapshot.
        let mut flash = [0xFF_u8; Snapshot::LEN];
        let mut ok = expect(
            "erased flash holds no snapshot",
            Snapshot::from_bytes(&flash) == Err(DecodeError::BadMagic),
        );

        // Two strikes open it (300 ms); the probe 350 ms later fails: re-open for 900 ms.
        for _ in 0..2 {
            let _ = uplink_call(false);
        }
        Timer::after_millis(350).await;
        let _ = uplink_call(false);
        Timer::after_millis(300).await;

        // About 600 ms of the 900 are left: save the snapshot to "flash".
        let saved = UPLINK.snapshot(EmbassyClock.now());
        flash = saved.to_bytes();
        let left = saved.remaining.as_millis();
        defmt::info!(
            "saved to flash: {}, {=u32} ms left, backoff step {=u8}",
            saved.phase,
            left,
            saved.step
        );
        ok &= expect(
            "saved while open, backoff step 1",
            saved.phase == Phase::Open && saved.step == 1,
        );
        ok &= expect("about 600 ms of the 900 ms cooldown left", (550..=600).contains(&left));

        // Reboot: the clock starts again at zero.
        ok &= expect("embassy time restarts at zero", fw::time_driver::restart_from_zero());
        let boot = EmbassyClock.now();
        defmt::info!("rebooted: clock back at {=u32} ms", boot.as_millis());
        ok &= expect("clock reads near zero after the reboot", boot.as_millis() < 5);

        // Without the snapshot the cooldown would be forgotten (a fresh breaker is closed),
        // or, were RAM to survive without a restore, start over: the stale state's opening
        // lies in the future of the restarted clock, so at least the whole 900 ms remain.
        let fresh = FRESH.state(boot);
        defmt::info!("without a snapshot: fresh breaker {}", Brief(fresh));
        ok &= expect(
            "a fresh breaker would have forgotten the outage",
            fresh == State::Closed { strikes: 0 },
        );
        let stale = UPLINK.state(boot);
        defmt::info!("without restoring: stale state {}", Brief(stale));
        ok &= expect(
            "the stale state would wait the whole 900 ms again, or longer",
            matches!(stale, State::Open { remaining, forced: false } if remaining.as_millis() >= 900),
        );

        // Restore from "flash": the cooldown resumes with the time that was left.
        let Ok(snapshot) = Snapshot::from_bytes(&flash) else {
            return expect("the snapshot decodes from flash", false);
        };
        UPLINK.restore(&snapshot, boot);
        let restored = UPLINK.state(boot);
        defmt::info!("restored: {}", Brief(restored));
        ok &= expect(
            "restored with the time that was left",
            restored
                == State::Open {
                    remaining: saved.remaining,
                    forced: false,
                },
        );
        ok &= expect("counters survive the reboot", UPLINK.counters() == saved.counters);

        // A call right away is refused, told to come back when the saved time runs out.
        let retry_in = refused_for(uplink_call(true)).map_or(u32::MAX, Duration::as_millis);
        defmt::info!("right after the reboot: refused, retry in {=u32} ms", retry_in);
        // Each defmt line is a semihosting call, and QEMU's clock follows the host's: on a
        // loaded host the few lines since the restore can take several milliseconds.
        ok &= expect(
            "refused right after the reboot, retry in the time left",
            retry_in <= left && retry_in + 50 >= left,
        );

        // 50 ms before the time left runs out: still refused.
        Timer::at(Instant::from_millis(u64::from(left).saturating_sub(50))).await;
        ok &= expect(
            "still refused 50 ms before the time left runs out",
            refused_for(uplink_call(true)).is_some(),
        );

        // 50 ms after: this call is the probe; it works and closes the breaker.
        Timer::at(Instant::from_millis(u64::from(left) + 50)).await;
        ok &= expect("the probe after the time left works", uplink_call(true).is_ok());
        ok &= expect(
            "closed again",
            UPLINK.state(EmbassyClock.now()) == State::Closed { strikes: 0 },
        );

        let c = UPLINK.counters();
        ok &= figure("uplink", "breaker failures", 3, c.failures);
        ok &= figure("uplink", "breaker skips", 2, c.skips);
        ok &= figure("uplink", "breaker trips", 2, c.trips);
        ok &= figure("uplink", "breaker probes", 2, c.probes);
        ok
    }
}
