//! What the library prints on standard output itself: `registry::print_table` and the
//! quota log's `StdoutConsole`, read from a child process (this test binary run again, for
//! this test alone, with `BREAKER_PRINT_CHILD` set: a test harness captures what a test
//! prints, and only through its own printing macros).

use std::process::Command;

use breaker_core::{registry, Console, Duration, Instant, ManualClock, Policy, SharedBreaker, StdoutConsole};

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
static PRINTED: SharedBreaker = SharedBreaker::new(&POLICY);
breaker_core::register!(PRINTED, "stdout/printed", CLOCK);

const THIS_TEST: &str = "the_registry_table_and_the_quota_console_go_to_standard_output";

#[test]
fn the_registry_table_and_the_quota_console_go_to_standard_output() {
    if std::env::var_os("BREAKER_PRINT_CHILD").is_some() {
        registry::print_table();
        StdoutConsole.line(format_args!("quota line {}", 7));
        return;
    }
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", THIS_TEST, "--nocapture"])
        .env("BREAKER_PRINT_CHILD", "1")
        .output()
        .unwrap();
    assert!(child.status.success(), "{child:?}");
    let stdout = String::from_utf8(child.stdout).unwrap();
    // The child's registry is this one, at the same reading of the same clock.
    let table = registry::table().to_string();
    assert!(table.contains("stdout/printed"), "{table}");
    assert!(stdout.contains(&table), "{stdout}");
    assert!(stdout.contains("\nquota line 7\n"), "{stdout}");
}
