//! The scenario the replica processes of `tests/redis_processes.rs` run
//! (`src/bin/redis_replica.rs`): one policy, one upstream that fails in fixed windows of the
//! shared time, and the line format they report in.

use breaker_core::{Duration, Policy};

/// Trip after 3 strikes, cool down 200 ms, one probe success closes.
pub static POLICY: Policy = Policy::new(3, Duration::from_millis(200)).with_probe_lease(Duration::from_secs(2));

/// The upstream is down in these windows of the run (milliseconds of shared time after
/// the start, end excluded).
pub const OUTAGES: [(i64, i64); 3] = [(600, 1600), (2400, 3600), (4400, 5200)];

/// The run lasts this long.
pub const RUN_MS: i64 = 6000;

/// A probe call takes this long (long enough for a second probe to overlap it).
pub const PROBE_MS: u64 = 20;

/// In this window only replica 0 calls (the others only watch), so that the trip of the
/// third outage is one replica's and the others learn it from Redis alone.
pub const QUIET: (i64, i64) = (4300, 5300);

/// Whether replica `index` calls at `t` ms into the run.
pub fn calls(index: usize, t: i64) -> bool {
    index == 0 || !(QUIET.0..QUIET.1).contains(&t)
}

/// Whether the upstream is down at `t` ms into the run.
pub fn down(t: i64) -> bool {
    OUTAGES.iter().any(|&(from, to)| (from..to).contains(&t))
}
