//! The `per_host` demo: a breaker per host in a tower stack, one host down. Its script
//! comes out exactly as below, and as `docs/demos.md` shows it, and the refused requests
//! never reached the dead host.

#[allow(dead_code)] // its `main` is the example's
#[path = "../examples/per_host.rs"]
mod per_host;

use breaker_core::{Instant, ManualClock};

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[tokio::test(flavor = "current_thread")]
async fn a_dead_host_is_refused_while_the_two_others_are_served_and_one_probe_brings_it_back() {
    let lines = per_host::run(&CLOCK).await;
    let expected = [
        "time    host             answer                             its breaker",
        "    0s  eu.api.example   200 from eu.api.example            closed",
        "    0s  us.api.example   error: timed out                   closed",
        "    0s  ap.api.example   200 from ap.api.example            closed",
        "    0s  eu.api.example   200 from eu.api.example            closed",
        "    0s  us.api.example   error: timed out                   closed",
        "    0s  ap.api.example   200 from ap.api.example            closed",
        "    0s  eu.api.example   200 from eu.api.example            closed",
        "    0s  us.api.example   error: timed out                   open",
        "    0s  ap.api.example   200 from ap.api.example            closed",
        "    0s  eu.api.example   200 from eu.api.example            closed",
        "    0s  us.api.example   refused, retry in 10000 ms         open",
        "    0s  ap.api.example   200 from ap.api.example            closed",
        "    2s  eu.api.example   200 from eu.api.example            closed",
        "    2s  us.api.example   refused, retry in 8000 ms          open",
        "    2s  ap.api.example   200 from ap.api.example            closed",
        "        (us.api.example is back)",
        "   10s  eu.api.example   200 from eu.api.example            closed",
        "   10s  us.api.example   200 from us.api.example            closed",
        "   10s  ap.api.example   200 from ap.api.example            closed",
        "",
        "host             failures  refused  trips  reached the host",
        "eu.api.example          0        0      0                 6",
        "us.api.example          3        2      1                 4",
        "ap.api.example          0        0      0                 6",
        "breakers in the table: 3 of at most 64",
    ];
    assert_eq!(lines, expected);
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/demos.md")).unwrap();
    assert!(guide.contains(&lines.join("\n")), "docs/demos.md shows another run");
    // Of the dead host's six requests, the two refused never reached it: four did (three
    // failures and the probe); each live host was reached by each of its six.
    let counts = |host: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(host))
            .map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .map(|n| n.parse::<u32>().unwrap())
                    .collect::<Vec<_>>()
            })
            .unwrap()
    };
    assert_eq!(counts(per_host::DEAD), [3, 2, 1, 4]);
    for host in ["eu.api.example", "ap.api.example"] {
        assert_eq!(counts(host), [0, 0, 0, 6]);
    }
}
