//! Deserialization of `Policy` and `Snapshot` from JSON (`breaker-core/src/integrations/serde.rs`,
//! feature `serde`) against the documentation: "deserializing never makes a value the
//! breaker could not hold".
//!
//! The first byte picks the candidate: 0 the bytes as given, read as a policy and as a
//! snapshot; 1 a snapshot the binary format calls possible ([`snapshot_spec`]: bytes laid
//! out as version 2 and sealed, kept when the spec says they are valid), written as JSON,
//! which must read back as itself, then one of its fields set to a value the input draws;
//! 2 or 3 a policy built through the `try_` constructors from numbers the input draws,
//! written as JSON, which must read back as itself, then one field changed likewise.
//!
//! For any input: never a panic; a snapshot read is one the binary format's spec calls
//! possible (its bytes decide as valid) and writes back to JSON that reads as itself; a
//! policy read writes back to JSON that reads as itself, and its `try_` constructors
//! accept it.

#![no_main]

use breaker_core::{Duration, Policy, Snapshot};
use breaker_fuzz::snapshot_spec::{self, Verdict, LEN, MAGIC, VERSION};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        read_policy(data);
        read_snapshot(data);
        return;
    };
    match mode % 4 {
        0 => {
            read_policy(rest);
            read_snapshot(rest);
        }
        1 => snapshot_fields(rest),
        _ => policy_fields(rest),
    }
});

/// A value the input draws for a changed field: a number (small, or at an edge), a
/// boolean, a string, `null`, or the field left out.
fn drawn(next: &mut dyn FnMut() -> u8) -> Option<Value> {
    Some(match next() % 8 {
        0 => return None,
        1 => json!(next() & 1 == 1),
        2 => Value::Null,
        3 => json!(["open", "closed", "half_open", "x"][usize::from(next() % 4)]),
        4 => json!(u64::from(u32::MAX) + u64::from(next())),
        5 => json!(Duration::MAX.as_millis() + u32::from(next() % 3)),
        6 => json!(-i64::from(next())),
        _ => json!(next()),
    })
}

/// Sets (or removes) the field of `object` that the input names.
fn change(value: &mut Value, next: &mut dyn FnMut() -> u8) {
    let Value::Object(object) = value else { return };
    let keys: Vec<String> = object.keys().cloned().collect();
    let pick = usize::from(next());
    if pick == 255 {
        object.insert("not_a_field".into(), json!(1));
        return;
    }
    let key = &keys[pick % keys.len()];
    match drawn(next) {
        Some(v) => {
            object.insert(key.clone(), v);
        }
        None => {
            object.remove(key);
        }
    }
}

fn snapshot_fields(rest: &[u8]) {
    let (head, tail) = rest.split_at(rest.len().min(LEN - 7));
    let mut bytes = [0u8; LEN];
    bytes[..2].copy_from_slice(&MAGIC);
    bytes[2] = VERSION;
    bytes[3..3 + head.len()].copy_from_slice(head);
    snapshot_spec::seal(&mut bytes);
    let Verdict::Valid(..) = snapshot_spec::decide(&bytes) else {
        return;
    };
    let snapshot = Snapshot::from_bytes(&bytes).expect("the spec calls these bytes a snapshot");
    let json = serde_json::to_value(snapshot).unwrap();
    let back: Snapshot = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("a possible snapshot {json} does not read back: {e}"));
    assert_eq!(back, snapshot);
    let mut take = tail.iter().copied();
    let mut next = || take.next().unwrap_or(0);
    let mut changed = json;
    for _ in 0..1 + next() % 2 {
        change(&mut changed, &mut next);
    }
    read_snapshot(&serde_json::to_vec(&changed).unwrap());
}

fn policy_fields(rest: &[u8]) {
    let mut take = rest.iter().copied();
    let mut next = || take.next().unwrap_or(0);
    let ms = |next: &mut dyn FnMut() -> u8| {
        Duration::from_millis(
            u32::from_le_bytes([next(), next(), next(), next() % 64]) % (Duration::MAX.as_millis() + 1),
        )
    };
    let trip = u32::from(next() % 8);
    let cooldown = ms(&mut next);
    let Ok(base) = Policy::try_new(trip, cooldown) else {
        read_policy(rest);
        return;
    };
    let lease = ms(&mut next);
    let probes = u32::from(next() % 20);
    let multiplier = u32::from(next());
    let max = ms(&mut next);
    let patient = next() & 1 == 1;
    // Now and then a half-open failure rate (calls and rate past their ranges too).
    let half_open = (next() & 1 == 1).then(|| (u32::from(next() % 18), u32::from(next() % 110)));
    let policy = base
        .try_with_probe_lease(lease)
        .and_then(|p| p.try_with_probes_to_close(probes))
        .and_then(|p| p.try_with_backoff(multiplier, max))
        .and_then(|p| match half_open {
            Some((calls, rate)) => p.try_with_half_open_rate(calls, rate),
            None => Ok(p),
        });
    let Ok(policy) = policy else {
        read_policy(rest);
        return;
    };
    let policy = if patient {
        policy.with_patient_probation()
    } else {
        policy
    };
    let json = serde_json::to_value(policy).unwrap();
    let back: Policy = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("a policy the constructors made, {json}, does not read back: {e}"));
    assert_eq!(back, policy);
    let mut changed = json;
    change(&mut changed, &mut next);
    read_policy(&serde_json::to_vec(&changed).unwrap());
}

fn read_snapshot(bytes: &[u8]) {
    let Ok(snapshot) = serde_json::from_slice::<Snapshot>(bytes) else {
        return;
    };
    let encoded = snapshot.to_bytes();
    assert!(
        matches!(snapshot_spec::decide(&encoded), Verdict::Valid(..)),
        "read as an impossible snapshot: {snapshot:?} from {:?}",
        String::from_utf8_lossy(bytes)
    );
    assert_eq!(snapshot.check(), Ok(()));
    let again: Snapshot = serde_json::from_str(&serde_json::to_string(&snapshot).unwrap()).unwrap();
    assert_eq!(again, snapshot);
}

fn read_policy(bytes: &[u8]) {
    let Ok(policy) = serde_json::from_slice::<Policy>(bytes) else {
        return;
    };
    let again: Policy = serde_json::from_str(&serde_json::to_string(&policy).unwrap()).unwrap_or_else(|e| {
        panic!(
            "{policy:?} read from {:?} does not read back: {e}",
            String::from_utf8_lossy(bytes)
        )
    });
    assert_eq!(again, policy);
    if policy.window().is_none() {
        let rebuilt = Policy::try_new(policy.trip(), policy.cooldown())
            .and_then(|p| p.try_with_probe_lease(policy.probe_lease()))
            .and_then(|p| p.try_with_probes_to_close(policy.probes_to_close()))
            .and_then(|p| p.try_with_backoff(policy.backoff_multiplier(), policy.max_cooldown()))
            .and_then(|p| match policy.half_open_rate() {
                Some((calls, rate)) => p.try_with_half_open_rate(calls, rate),
                None => Ok(p),
            });
        assert!(rebuilt.is_ok(), "{policy:?}: the constructors refuse it: {rebuilt:?}");
    }
}
