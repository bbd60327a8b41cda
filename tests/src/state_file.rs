//! The sequence of states the state-file writer process (`src/bin/state_file_writer.rs`)
//! saves, and tells each apart: state `i` holds `i` in every field that can hold it, so a
//! file that mixes two states (a torn write) is not a state of the sequence.

use std::time::{Duration as StdDuration, SystemTime, UNIX_EPOCH};

use breaker_core::{Duration, Quota, SavedState, SavedStatus};

/// State `i` of the sequence: open, opened `i` seconds after a fixed instant, with a
/// cooldown of `i` ms, `i` openings, and a last quota of `i` of `i + 1`.
pub fn nth(i: u32) -> SavedState {
    SavedState {
        status: SavedStatus::Open,
        opened_at: Some(UNIX_EPOCH + StdDuration::from_secs(1_755_267_825 + u64::from(i))),
        cooldown: Duration::from_millis(i % (Duration::MAX.as_millis() + 1)),
        consecutive_failures: i,
        consecutive_successes: 0,
        probing: false,
        last_quota: Some(Quota::new(i, i.saturating_add(1))),
    }
}

/// Which state of the sequence `state` is, if it is one.
pub fn index_of(state: &SavedState) -> Option<u32> {
    let i = state.consecutive_failures;
    (*state == nth(i)).then_some(i)
}

/// The wall-clock reading `secs` after the sequence's fixed instant.
pub fn wall(secs: u64) -> SystemTime {
    UNIX_EPOCH + StdDuration::from_secs(1_755_267_825 + secs)
}
