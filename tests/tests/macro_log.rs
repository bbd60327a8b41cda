//! `#[circuit_breaker(log)]`: the generated breaker is a `SharedBreaker<__private::Log>`
//! named by its registry name, every transition goes through that observer, and with
//! `std` the observer is `StderrLog`, which writes one line per transition to stderr.

use std::any::TypeId;
use std::process::Command;
use std::sync::Mutex;

use breaker_core::{
    circuit_breaker, registry, Classify, Duration, Instant, ManualClock, Observer, Phase, Reason, Refused, StderrLog,
    Transition,
};

/// One clock per test that moves it, as tests run in parallel.
static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(1_000));
static STILL: ManualClock = ManualClock::new(Instant::from_millis(1_000));
static STDERR_CLOCK: ManualClock = ManualClock::new(Instant::from_millis(1_000));

#[derive(Debug, PartialEq)]
enum Error {
    Down,
    Refused,
}

impl Classify for Error {}

impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error::Refused
    }
}

/// Every transition any `Recorder` was told of, with the name it was built with.
static SEEN: Mutex<Vec<(&'static str, Transition)>> = Mutex::new(Vec::new());

/// An observer standing in for `__private::Log`: it records instead of logging.
#[derive(Debug)]
pub struct Recorder {
    name: &'static str,
}

impl Recorder {
    /// What the attribute calls: `Log::new(NAME)`.
    pub const fn new(name: &'static str) -> Recorder {
        Recorder { name }
    }
}

impl Observer for Recorder {
    fn on_transition(&self, transition: &Transition) {
        SEEN.lock().unwrap().push((self.name, *transition));
    }
}

/// A runtime crate reached with `crate = crate::rt`, whose `__private` shadows `Log` the
/// way `breaker-embedded` shadows it with `DefmtLog`.
mod rt {
    pub mod __private {
        pub use breaker_core::__private::*;

        pub use crate::Recorder as Log;
    }
    pub use breaker_core::registry;
}

/// The phases `name`'s observer saw, in order.
fn seen(name: &str) -> Vec<(Phase, Reason)> {
    let seen = SEEN.lock().unwrap();
    seen.iter()
        .filter(|(n, _)| *n == name)
        .map(|(_, t)| (t.to, t.why))
        .collect()
}

#[circuit_breaker(crate = crate::rt, name = "log::recorded", trip = 2, cooldown = "10s", clock = CLOCK, log)]
fn recorded(up: bool) -> Result<(), Error> {
    if up {
        Ok(())
    } else {
        Err(Error::Down)
    }
}

#[circuit_breaker(crate = crate::rt, trip = 1, cooldown = "1s", clock = STILL, log = true)]
fn default_named(up: bool) -> Result<(), Error> {
    if up {
        Ok(())
    } else {
        Err(Error::Down)
    }
}

#[circuit_breaker(crate = crate::rt, name = "log::silent", trip = 1, clock = STILL, log = false)]
fn silent(up: bool) -> Result<(), Error> {
    if up {
        Ok(())
    } else {
        Err(Error::Down)
    }
}

#[test]
fn every_transition_goes_through_the_observer_named_after_the_registry_entry() {
    let entry = rt::registry::get("log::recorded").unwrap();
    assert_eq!(recorded(true), Ok(()));
    assert_eq!(seen("log::recorded"), []); // the happy path tells nothing
    assert_eq!(recorded(false), Err(Error::Down));
    assert_eq!(recorded(false), Err(Error::Down));
    assert_eq!(recorded(true), Err(Error::Refused));
    assert_eq!(entry.state().phase(), Phase::Open);
    CLOCK.advance(Duration::from_secs(10));
    assert_eq!(recorded(true), Ok(()));
    assert_eq!(
        seen("log::recorded"),
        [
            (Phase::Open, Reason::Strikes),
            (Phase::HalfOpen, Reason::CooldownElapsed),
            (Phase::Closed, Reason::Recovered),
        ]
    );
    let opened = SEEN
        .lock()
        .unwrap()
        .iter()
        .find(|(n, _)| *n == "log::recorded")
        .unwrap()
        .1;
    assert_eq!(opened.cooldown, Duration::from_secs(10));

    // The registry's operations are transitions too.
    registry::force_open("log::recorded").unwrap();
    registry::reset("log::recorded").unwrap();
    assert_eq!(
        seen("log::recorded")[3..],
        [(Phase::Open, Reason::ForcedOpen), (Phase::Closed, Reason::Reset)]
    );
}

#[test]
fn the_default_name_is_the_registry_name() {
    let name = concat!(module_path!(), "::default_named");
    assert_eq!(name, "macro_log::default_named");
    assert!(registry::get(name).is_ok());
    assert_eq!(default_named(false), Err(Error::Down));
    assert_eq!(seen(name), [(Phase::Open, Reason::Strikes)]);
}

#[test]
fn log_false_is_no_observer() {
    assert_eq!(silent(false), Err(Error::Down));
    assert_eq!(silent(true), Err(Error::Refused));
    assert_eq!(registry::get("log::silent").unwrap().state().phase(), Phase::Open);
    assert_eq!(seen("log::silent"), []);
}

#[test]
fn the_registry_lists_logging_and_silent_breakers_alike() {
    let mut names: Vec<&str> = registry::iter().map(|e| e.name()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "log::recorded",
            "log::silent",
            "log::stderr",
            "macro_log::default_named"
        ]
    );
    assert!(registry::check_unique().is_ok());
}

#[test]
fn with_std_the_observer_is_the_stderr_logger() {
    assert_eq!(TypeId::of::<breaker_core::__private::Log>(), TypeId::of::<StderrLog>());
    // What the attribute writes: a `const` constructor taking the name, and `Sync`.
    static LOG: breaker_core::__private::Log = breaker_core::__private::Log::new("radio");
    fn sync<T: Sync>(_: &T) {}
    sync(&LOG);
    assert_eq!(LOG.name(), "radio");
}

fn line(to: Phase, why: Reason, cooldown: Duration) -> String {
    let transition = Transition {
        from: Phase::Closed,
        to,
        why,
        at: Instant::from_millis(5),
        cooldown,
    };
    let mut line = String::new();
    StderrLog::new("radio").write_line(&transition, &mut line).unwrap();
    line
}

/// The words of `breaker-embedded`'s `DefmtLog`, with durations as the attribute writes them.
#[test]
fn lines_say_what_happened_in_defmt_logs_words() {
    let secs = Duration::from_secs;
    assert_eq!(
        line(Phase::Open, Reason::Strikes, secs(30)),
        "breaker radio: opened (strikes), cooling down 30s"
    );
    assert_eq!(
        line(Phase::Open, Reason::TripVerdict, Duration::from_millis(350)),
        "breaker radio: opened (trip verdict), cooling down 350ms"
    );
    assert_eq!(
        line(Phase::Open, Reason::ProbeFailed, secs(90)),
        "breaker radio: opened (probe failed), cooling down 90s"
    );
    assert_eq!(
        line(Phase::Open, Reason::LeaseExpired, secs(120)),
        "breaker radio: opened (probe lease expired), cooling down 2m"
    );
    assert_eq!(
        line(Phase::Open, Reason::ForcedOpen, Duration::ZERO),
        "breaker radio: opened (forced), until reset"
    );
    assert_eq!(
        line(Phase::HalfOpen, Reason::CooldownElapsed, Duration::ZERO),
        "breaker radio: half-open: probing"
    );
    assert_eq!(
        line(Phase::Closed, Reason::Recovered, Duration::ZERO),
        "breaker radio: closed (recovered)"
    );
    assert_eq!(
        line(Phase::Closed, Reason::Reset, Duration::ZERO),
        "breaker radio: closed (reset)"
    );
}

/// Set in the child process of [`lines_reach_stderr`].
const CHILD: &str = "BREAKER_MACRO_LOG_CHILD";

#[circuit_breaker(name = "log::stderr", trip = 2, cooldown = "30s", clock = STDERR_CLOCK, log)]
fn logged(up: bool) -> Result<(), Error> {
    if up {
        Ok(())
    } else {
        Err(Error::Down)
    }
}

/// Drives `logged` through open, half-open and closed; only in the child process, whose
/// stderr [`lines_reach_stderr`] reads (it does nothing in the test run itself).
#[test]
fn child_drives_the_stderr_breaker() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    assert_eq!(logged(false), Err(Error::Down));
    assert_eq!(logged(false), Err(Error::Down));
    assert_eq!(logged(true), Err(Error::Refused));
    STDERR_CLOCK.advance(Duration::from_secs(30));
    assert_eq!(logged(true), Ok(()));
}

/// The real logger, end to end: this test binary runs [`child_drives_the_stderr_breaker`]
/// again in a child process, without output capture, and reads its stderr.
#[test]
fn lines_reach_stderr() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_drives_the_stderr_breaker",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "child failed: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("breaker ")).collect();
    assert_eq!(
        lines,
        [
            "breaker log::stderr: opened (strikes), cooling down 30s",
            "breaker log::stderr: half-open: probing",
            "breaker log::stderr: closed (recovered)",
        ],
        "stderr: {stderr}"
    );
}
