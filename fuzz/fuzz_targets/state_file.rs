//! The state file reader (`SavedState::from_json`, `breaker-core/src/integrations/state_file.rs`)
//! against its documentation.
//!
//! The first byte picks the candidate: 0 the bytes as given; otherwise a JSON object the
//! target writes from fields the input draws (the format's name or another, version 1 or
//! another, each status or a bogus one, each optional field present, absent or `null`,
//! numbers in and out of range, sometimes a field the format does not have), whose
//! verdict the target decides from the module's documentation: another program's file
//! (`Foreign`), another version (`UnsupportedVersion`), contradicting fields (`Invalid`:
//! the quota's two fields apart, a cooldown past `Duration::MAX`, an open state without
//! its opening, a probe out when not half-open), or the state with exactly those fields.
//!
//! For any input: never a panic; bytes that are not JSON are `Corrupt`, and JSON never
//! is; a state read is one the format can say (an opening only when open, a probe only
//! when half-open, a cooldown within a breaker's range), and it writes back to JSON that
//! reads as itself.

#![no_main]

use std::time::{Duration as StdDuration, UNIX_EPOCH};

use breaker_core::{Duration, Quota, SavedState, SavedStatus, StateFileProblem};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

const FORMAT: &str = "breaker quota state";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        let _ = check(data);
        return;
    };
    if mode & 1 == 0 {
        let _ = check(rest);
        return;
    }
    let mut take = rest.iter().copied();
    let mut next = || take.next().unwrap_or(0);
    let number = |next: &mut dyn FnMut() -> u8| -> u64 {
        // Mostly small, sometimes at or past the edges of the fields' types.
        match next() % 8 {
            0 => u64::from(u32::MAX) + u64::from(next()),
            1 => u64::from(Duration::MAX.as_millis()) + u64::from(next() % 3),
            2 => u64::from_le_bytes([next(), next(), next(), next(), next(), next(), 0, 0]),
            _ => u64::from(next()),
        }
    };

    let flags = next();
    let format = if flags & 1 == 0 {
        FORMAT.to_string()
    } else {
        format!("other {}", next())
    };
    let version: u64 = if flags & 2 == 0 { 1 } else { number(&mut next) };
    let statuses = ["closed", "open", "half-open", "forced-open", "Open"];
    let status = statuses[usize::from(next()) % statuses.len()];
    let mut record = Map::new();
    record.insert("format".into(), json!(format));
    record.insert("version".into(), json!(version));
    record.insert("status".into(), json!(status));
    // An optional field: absent, null, or a number.
    let optional = |record: &mut Map<String, Value>, name: &str, next: &mut dyn FnMut() -> u8| -> Option<u64> {
        match next() % 3 {
            0 => None,
            1 => {
                record.insert(name.into(), Value::Null);
                None
            }
            _ => {
                let n = number(next);
                record.insert(name.into(), json!(n));
                Some(n)
            }
        }
    };
    let opened = optional(&mut record, "openedAtUnixMs", &mut next);
    let cooldown = number(&mut next);
    record.insert("cooldownMs".into(), json!(cooldown));
    let failures = number(&mut next);
    record.insert("consecutiveFailures".into(), json!(failures));
    let successes = number(&mut next);
    record.insert("consecutiveSuccesses".into(), json!(successes));
    let probing = next() & 1 == 1;
    record.insert("probing".into(), json!(probing));
    let remaining = optional(&mut record, "lastRemaining", &mut next);
    let total = optional(&mut record, "lastTotal", &mut next);
    let extra = flags & 4 != 0;
    if extra {
        record.insert("note".into(), json!("not a field of the format"));
    }
    let bytes = if flags & 8 == 0 {
        serde_json::to_vec_pretty(&Value::Object(record)).unwrap()
    } else {
        serde_json::to_vec(&Value::Object(record)).unwrap()
    };
    let got = check(&bytes);

    // The verdict, from the documentation.
    let u32_ok = |n: u64| n <= u64::from(u32::MAX);
    let status = match status {
        "closed" => Some(SavedStatus::Closed),
        "open" => Some(SavedStatus::Open),
        "half-open" => Some(SavedStatus::HalfOpen),
        "forced-open" => Some(SavedStatus::ForcedOpen),
        _ => None,
    };
    let well_typed = status.is_some()
        && !extra
        && [cooldown, failures, successes].into_iter().all(u32_ok)
        && [remaining, total].into_iter().flatten().all(u32_ok);
    match got {
        _ if format != FORMAT => assert!(matches!(got, Err(StateFileProblem::Foreign(_))), "{got:?}"),
        _ if version != 1 => match got {
            // A version that is no u32 is no version of this format: foreign.
            Err(StateFileProblem::UnsupportedVersion(v)) => assert_eq!(u64::from(v), version),
            Err(StateFileProblem::Foreign(_)) => assert!(!u32_ok(version)),
            other => panic!("version {version}: {other:?}"),
        },
        _ if !well_typed => assert!(matches!(got, Err(StateFileProblem::Foreign(_))), "{got:?}"),
        _ => {
            let status = status.unwrap_or(SavedStatus::Closed);
            let invalid = remaining.is_some() != total.is_some()
                || cooldown > u64::from(Duration::MAX.as_millis())
                || (status == SavedStatus::Open && opened.is_none())
                || (probing && status != SavedStatus::HalfOpen);
            if invalid {
                assert!(matches!(got, Err(StateFileProblem::Invalid(_))), "{got:?}");
            } else {
                let want = SavedState {
                    status,
                    opened_at: opened
                        .filter(|_| status == SavedStatus::Open)
                        .map(|ms| UNIX_EPOCH + StdDuration::from_millis(ms)),
                    cooldown: Duration::from_millis(cooldown as u32),
                    consecutive_failures: failures as u32,
                    consecutive_successes: successes as u32,
                    probing,
                    last_quota: remaining.zip(total).map(|(r, t)| Quota::new(r as u32, t as u32)),
                };
                match got {
                    Ok(state) => assert_eq!(state, want),
                    other => panic!("expected {want:?}, got {other:?}"),
                }
            }
        }
    }
});

fn check(bytes: &[u8]) -> Result<SavedState, StateFileProblem> {
    let got = SavedState::from_json(bytes);
    let is_json = serde_json::from_slice::<Value>(bytes).is_ok();
    assert_eq!(
        matches!(got, Err(StateFileProblem::Corrupt(_))),
        !is_json,
        "{:?}: {got:?}",
        String::from_utf8_lossy(bytes)
    );
    match &got {
        Ok(state) => {
            assert_eq!(
                state.opened_at.is_some(),
                state.status == SavedStatus::Open,
                "{state:?}"
            );
            assert!(!state.probing || state.status == SavedStatus::HalfOpen, "{state:?}");
            assert!(state.cooldown <= Duration::MAX);
            let again = SavedState::from_json(state.to_json().as_bytes());
            assert_eq!(again.as_ref().ok(), Some(state), "{:?} wrote back as {again:?}", state);
        }
        Err(problem) => assert!(!problem.to_string().is_empty()),
    }
    got
}
