//! The outage scenario every firmware runs (`m3`, `m0` and `rtic` include this file as
//! their `scenario` module, each with an `rt` module for its runtime's timers and clock:
//! `rt_embassy.rs` for the first two): a flaky radio and a flaky I2C-style sensor, simulated with
//! scripted outage windows, each guarded by a `#[circuit_breaker]` async function of
//! its own policy; a timeline of [`TICKS`] calls, one every [`TICK_MS`] ms of the
//! runtime's time; and the figures the run must produce, checked by [`check`].
//!
//! With the firmware's `no-breakers` feature the two functions are compiled without the
//! attribute (same bodies, no breaker), which is how `firmware/size.sh` measures what
//! the breaker code adds.
//!
//! # The script (tick = 100 ms)
//!
//! | tick | 0-2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10-19 |
//! |---|---|---|---|---|---|---|---|---|---|
//! | radio  | ok | ok | NACK | NACK | NACK | NACK | NACK | NACK | ok |
//! | sensor | ok | NACK | NACK | ok | hard fault | hard fault | hard fault | bus hung | ok |
//!
//! NACKs are retryable (strikes); a hard fault is a trip verdict (the breaker opens on
//! first contact); a hung bus never answers, and the caller's 50 ms timeout drops the
//! call's future, which counts a dropped probe as a failed one.

use core::ops::Range;

#[cfg(not(feature = "no-breakers"))]
use crate::rt::breaker::{circuit_breaker, registry};
use crate::rt::breaker::{Classify, Phase, Refused, State, Verdict};
use crate::rt::{self, Brief, Instant};

/// Calls per device in the timeline.
pub const TICKS: usize = 20;
/// Time between two calls, in milliseconds.
pub const TICK_MS: u64 = 100;
/// How long the caller waits for a sensor reading before it gives up (and drops the call).
pub const SENSOR_TIMEOUT_MS: u64 = 50;

/// Ticks at which the radio NACKs every frame.
pub const RADIO_NACKS: Range<u32> = 4..10;
/// Ticks at which the sensor NACKs.
pub const SENSOR_NACKS: Range<u32> = 3..5;
/// Ticks at which the sensor reports a hardware fault.
pub const SENSOR_FAULTS: Range<u32> = 6..9;
/// Ticks at which the sensor holds the bus and never answers.
pub const SENSOR_HANGS: Range<u32> = 9..10;

/// Registry name of the radio's breaker.
pub const RADIO: &str = "radio";
/// Registry name of the sensor's breaker.
pub const SENSOR: &str = "sensor";

/// A radio transmission that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum RadioError {
    /// No acknowledgement: the link is bad right now, a retry may pass.
    Nack,
    /// The breaker refused the call: nothing was sent.
    Refused(Refused),
}

impl From<Refused> for RadioError {
    fn from(r: Refused) -> Self {
        RadioError::Refused(r)
    }
}

impl Classify for RadioError {
    fn verdict(&self) -> Verdict {
        match self {
            RadioError::Nack => Verdict::Strike,
            RadioError::Refused(_) => Verdict::Neutral,
        }
    }
}

/// A sensor reading that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum SensorError {
    /// The sensor did not acknowledge its address: busy, a retry may pass.
    Nack,
    /// The sensor reports a hardware fault: no retry helps now, trip at once.
    HardwareFault,
    /// The breaker refused the call: the bus was not touched.
    Refused(Refused),
}

impl From<Refused> for SensorError {
    fn from(r: Refused) -> Self {
        SensorError::Refused(r)
    }
}

impl Classify for SensorError {
    fn verdict(&self) -> Verdict {
        match self {
            SensorError::Nack => Verdict::Strike,
            SensorError::HardwareFault => Verdict::Trip,
            SensorError::Refused(_) => Verdict::Neutral,
        }
    }
}

/// How many calls reached each simulated device (a refused call never does). Written by
/// one task each; only loads and stores, which the Cortex-M0 has.
mod reached {
    use core::sync::atomic::{AtomicU32, Ordering};

    pub static RADIO: AtomicU32 = AtomicU32::new(0);
    pub static SENSOR: AtomicU32 = AtomicU32::new(0);

    pub fn bump(counter: &AtomicU32) {
        counter.store(counter.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU32) -> u32 {
        counter.load(Ordering::Relaxed)
    }
}

/// Sends one frame over the simulated radio: 2 ms of airtime, then an acknowledgement,
/// or a NACK during [`RADIO_NACKS`].
///
/// Three NACKs in a row open its breaker for 350 ms; one good probe closes it. Its
/// transitions are logged through defmt (`log`: `DefmtLog`), as
/// `circuit breaker opened breaker=radio from=closed to=open reason=strikes next_probe_in_ms=350`
/// and so on.
#[cfg_attr(
    not(feature = "no-breakers"),
    circuit_breaker(name = "radio", trip = 3, cooldown = "350ms", clock = crate::rt::CLOCK, log)
)]
pub async fn radio_send(tick: u32, frame: &[u8]) -> Result<usize, RadioError> {
    reached::bump(&reached::RADIO);
    rt::delay_ms(2).await;
    if RADIO_NACKS.contains(&tick) {
        return Err(RadioError::Nack);
    }
    Ok(frame.len())
}

/// Reads the simulated I2C sensor: 1 ms of bus traffic, then a reading, a NACK during
/// [`SENSOR_NACKS`], a hardware fault during [`SENSOR_FAULTS`], or nothing at all
/// (the bus hangs) during [`SENSOR_HANGS`].
///
/// Three NACKs in a row, or one hardware fault, open its breaker for 250 ms; each re-open
/// without a close doubles that (up to 2 s); two good probes in a row close it. Logged
/// like the radio (both log, so the breaker code is compiled once, for `DefmtLog`).
#[cfg_attr(
    not(feature = "no-breakers"),
    circuit_breaker(
        name = "sensor",
        trip = 3,
        cooldown = "250ms",
        backoff = 2,
        max_cooldown = "2s",
        probes = 2,
        clock = crate::rt::CLOCK,
        log
    )
)]
pub async fn read_sensor(tick: u32) -> Result<u16, SensorError> {
    reached::bump(&reached::SENSOR);
    rt::delay_ms(1).await;
    if SENSOR_HANGS.contains(&tick) {
        // The sensor stretches the clock for ever: this future never completes.
        core::future::pending::<()>().await;
    }
    if SENSOR_NACKS.contains(&tick) {
        return Err(SensorError::Nack);
    }
    if SENSOR_FAULTS.contains(&tick) {
        return Err(SensorError::HardwareFault);
    }
    Ok(2048 + tick as u16)
}

/// What a caller saw at one tick, as one character of [`Run::seen`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// `.`: the call went through and worked.
    Worked,
    /// `x`: the call went through and failed (or timed out): it felt the outage.
    Failed,
    /// `-`: the breaker refused; the device was not touched.
    Refused,
}

impl Seen {
    const fn symbol(self) -> u8 {
        match self {
            Seen::Worked => b'.',
            Seen::Failed => b'x',
            Seen::Refused => b'-',
        }
    }
}

/// One device's timeline, as its caller and its breaker saw it.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// Which device (its breaker's registry name).
    pub name: &'static str,
    /// What the caller saw at each tick: `.` worked, `x` failed, `-` refused.
    pub seen: [u8; TICKS],
    /// The breaker's phase right after each tick's call.
    pub phases: [Phase; TICKS],
    /// Calls that reached the device.
    pub reached: u32,
}

impl Run {
    const fn new(name: &'static str) -> Run {
        Run {
            name,
            seen: [b' '; TICKS],
            phases: [Phase::Closed; TICKS],
            reached: 0,
        }
    }

    fn record(&mut self, tick: u32, seen: Seen) {
        let state = state_of(self.name);
        if let Some(slot) = self.seen.get_mut(tick as usize) {
            *slot = seen.symbol();
        }
        if let Some(slot) = self.phases.get_mut(tick as usize) {
            *slot = state.phase();
        }
        let what = match seen {
            Seen::Worked => "worked",
            Seen::Failed => "FAILED",
            Seen::Refused => "refused",
        };
        defmt::info!("t={=u32:02} {=str}: {=str} -> {}", tick, self.name, what, Brief(state));
    }

    /// Ticks whose call failed at the device: the calls that felt the outage.
    pub fn felt_outage(&self) -> u32 {
        self.count(Seen::Failed)
    }

    /// Ticks whose call the breaker refused.
    pub fn refused(&self) -> u32 {
        self.count(Seen::Refused)
    }

    fn count(&self, seen: Seen) -> u32 {
        self.seen.iter().filter(|&&c| c == seen.symbol()).count() as u32
    }

    /// The first tick at which the breaker was closed again after having opened.
    pub fn closed_again_at(&self) -> Option<u32> {
        let opened = self.phases.iter().position(|&p| p != Phase::Closed)?;
        let closed = self.phases.iter().skip(opened).position(|&p| p == Phase::Closed)?;
        Some((opened + closed) as u32)
    }
}

/// The breaker state of the function registered as `name`, read through the registry.
#[cfg(not(feature = "no-breakers"))]
fn state_of(name: &str) -> State {
    match registry::get(name) {
        Ok(entry) => entry.state(),
        // Unreachable with the attribute in place; a made-up state makes `check` fail.
        Err(_) => State::Open {
            remaining: rt::breaker::Duration::MAX,
            forced: true,
        },
    }
}

/// Without breakers every call goes through: closed for ever.
#[cfg(feature = "no-breakers")]
fn state_of(_name: &str) -> State {
    State::Closed { strikes: 0 }
}

/// The time of tick `tick` of a timeline that starts at `epoch`.
fn at_tick(epoch: Instant, tick: u32) -> Instant {
    rt::after(epoch, TICK_MS * u64::from(tick))
}

/// Runs the radio's timeline from `epoch`: one frame per tick.
pub async fn run_radio(epoch: Instant) -> Run {
    let mut run = Run::new(RADIO);
    for tick in 0..TICKS as u32 {
        rt::delay_until(at_tick(epoch, tick)).await;
        let seen = match radio_send(tick, b"telemetry").await {
            Ok(_) => Seen::Worked,
            Err(RadioError::Refused(_)) => Seen::Refused,
            Err(RadioError::Nack) => Seen::Failed,
        };
        run.record(tick, seen);
    }
    run.reached = reached::get(&reached::RADIO);
    run
}

/// Runs the sensor's timeline from `epoch`: one reading per tick, each given
/// [`SENSOR_TIMEOUT_MS`] to answer.
pub async fn run_sensor(epoch: Instant) -> Run {
    let mut run = Run::new(SENSOR);
    for tick in 0..TICKS as u32 {
        rt::delay_until(at_tick(epoch, tick)).await;
        let seen = match rt::timeout_ms(SENSOR_TIMEOUT_MS, read_sensor(tick)).await {
            Ok(Ok(_)) => Seen::Worked,
            Ok(Err(SensorError::Refused(_))) => Seen::Refused,
            // A NACK, a fault, or no answer in time (the call's future was dropped).
            Ok(Err(_)) | Err(_) => Seen::Failed,
        };
        run.record(tick, seen);
    }
    run.reached = reached::get(&reached::SENSOR);
    run
}

/// The figures a device's timeline must produce.
#[derive(Debug, Clone, Copy)]
pub struct Expected {
    /// The registry name of its breaker.
    pub name: &'static str,
    /// What the caller sees at each tick: `.` worked, `x` failed, `-` refused.
    pub seen: &'static [u8; TICKS],
    /// Calls that reached the device and failed.
    pub felt_outage: u32,
    /// Calls the breaker refused.
    pub skips: u32,
    /// Times the breaker opened.
    pub trips: u32,
    /// Probe slots granted.
    pub probes: u32,
    /// The tick at which the breaker is closed again.
    pub closed_again_at: u32,
}

/// The radio: NACKs from tick 4 to 9. Three calls feel the outage (ticks 4, 5, 6: the
/// third trips the breaker), three are refused (7, 8, 9: 100, 200, 300 ms into the 350 ms
/// cooldown), and the probe at tick 10 finds the link back and closes the breaker.
pub const EXPECTED_RADIO: Expected = Expected {
    name: RADIO,
    seen: b"....xxx---..........",
    felt_outage: 3,
    skips: 3,
    trips: 1,
    probes: 1,
    closed_again_at: 10,
};

/// The sensor: two NACKs at ticks 3 and 4 (strikes, below the trip count; tick 5 works
/// and clears them), a hardware fault at tick 6 trips it at once (250 ms cooldown, so
/// ticks 7 and 8 are refused); the probe at tick 9 hangs and is dropped after 50 ms: a
/// failed probe, re-open with the cooldown doubled to 500 ms (ticks 10 to 14 refused);
/// the probes at ticks 15 and 16 work, and two good probes close it.
pub const EXPECTED_SENSOR: Expected = Expected {
    name: SENSOR,
    seen: b"...xx.x--x-----.....",
    felt_outage: 4,
    skips: 7,
    trips: 2,
    probes: 3,
    closed_again_at: 16,
};

/// Compares one figure, logs it, and says whether it matched.
pub fn figure(device: &str, what: &str, expected: u32, got: u32) -> bool {
    if expected == got {
        defmt::info!("check {=str} {=str}: {=u32} (as expected)", device, what, got);
    } else {
        defmt::error!(
            "check {=str} {=str}: got {=u32}, expected {=u32}",
            device,
            what,
            got,
            expected
        );
    }
    expected == got
}

/// Checks every figure of `run` against `expected`, from three points of view: the
/// caller's (what it saw at each tick), the device's (how many calls reached it), and the
/// breaker's (its counters and state, read through the registry). Logs each figure;
/// `true` if all match.
#[cfg(not(feature = "no-breakers"))]
pub fn check(run: &Run, expected: &Expected) -> bool {
    let name = expected.name;
    let mut ok = true;
    if run.seen == *expected.seen {
        defmt::info!("check {=str} timeline: {=[u8]:a} (as expected)", name, run.seen);
    } else {
        defmt::error!(
            "check {=str} timeline: got {=[u8]:a}, expected {=[u8]:a}",
            name,
            run.seen,
            *expected.seen
        );
        ok = false;
    }
    ok &= figure(
        name,
        "calls that felt the outage",
        expected.felt_outage,
        run.felt_outage(),
    );
    ok &= figure(name, "skips seen by the caller", expected.skips, run.refused());
    ok &= figure(
        name,
        "calls that reached the device",
        (TICKS as u32).saturating_sub(expected.skips),
        run.reached,
    );
    let closed_again = run.closed_again_at().unwrap_or(u32::MAX);
    ok &= figure(name, "closed again at tick", expected.closed_again_at, closed_again);

    let Ok(entry) = registry::get(name) else {
        defmt::error!("check {=str}: not in the registry", name);
        return false;
    };
    let c = entry.counters();
    ok &= figure(name, "breaker failures", expected.felt_outage, c.failures);
    ok &= figure(name, "breaker skips", expected.skips, c.skips);
    ok &= figure(name, "breaker trips", expected.trips, c.trips);
    ok &= figure(name, "breaker probes", expected.probes, c.probes);
    ok &= figure(name, "breaker lease expiries", 0, c.lease_expiries);
    let state = entry.state();
    if state != (State::Closed { strikes: 0 }) {
        defmt::error!(
            "check {=str}: ends {}, expected closed with no strikes",
            name,
            Brief(state)
        );
        ok = false;
    }
    ok
}

/// Checks that the registry lists exactly the two guarded functions.
#[cfg(not(feature = "no-breakers"))]
pub fn check_registry() -> bool {
    let mut ok = figure("registry", "breakers listed", 2, registry::entries().len() as u32);
    for name in [RADIO, SENSOR] {
        if registry::get(name).is_err() {
            defmt::error!("check registry: {=str} is not listed exactly once", name);
            ok = false;
        }
    }
    ok
}

/// Built without breakers there is nothing to check: fails.
#[cfg(feature = "no-breakers")]
pub fn check(_run: &Run, expected: &Expected) -> bool {
    defmt::error!(
        "check {=str}: built with `no-breakers`, nothing to check",
        expected.name
    );
    false
}

/// Built without breakers the registry is empty: fails.
#[cfg(feature = "no-breakers")]
pub fn check_registry() -> bool {
    defmt::error!("check registry: built with `no-breakers`, nothing to check");
    false
}
