//! The snapshot decoder against the format's documentation, and the encoder against both.
//!
//! The first byte picks how the rest becomes a candidate snapshot: bytes as given (any
//! length), or laid out as a version-1 (48 bytes) or version-2 (88 bytes) snapshot with
//! the magic, version and checksum written here, so that the fuzzer spends its time in the
//! field and window checks. Flags of the same byte keep raw magic, version or checksum,
//! mask the fields into their documented ranges (a window of a kind the format has, with
//! samples a window can hold), flip bits before sealing (an impossible field under a right
//! checksum) or after (corruption), or build a `Snapshot` value from the fields and encode
//! it. Every candidate is decoded, and the decoder's answer (which error, or which fields)
//! must be what [`snapshot_spec::decide`] says; an accepted version-2 snapshot encodes back
//! to the same bytes, an accepted version-1 snapshot to the version-2 bytes of the same
//! state, which decode to the same snapshot.

#![no_main]

use breaker_core::{Bucket, Counters, DecodeError, Duration, Phase, Snapshot, WindowSnapshot};
use breaker_fuzz::snapshot_spec::{self, Fields, Verdict, WindowFields, LEN, LEN_V1, MAGIC, VERSION, VERSION_V1};
use libfuzzer_sys::fuzz_target;

/// The two low bits: 0 bytes as given; 1 a version-1 layout; 2 or 3 a version-2 layout.
const FORM: u8 = 0b11;
/// Keep the given magic bytes instead of writing `b"CB"`.
const RAW_MAGIC: u8 = 1 << 2;
/// Keep the given version byte instead of writing the layout's.
const RAW_VERSION: u8 = 1 << 3;
/// Mask the fields into their documented ranges: a possible state, and a window of a kind
/// the format has holding samples it can hold (closed only).
const PLAUSIBLE: u8 = 1 << 4;
/// Keep the given checksum instead of sealing.
const RAW_CHECKSUM: u8 = 1 << 5;
/// XOR the bytes named by the tail of the input after sealing (multi-bit corruption);
/// without it, before sealing (impossible fields under a right checksum).
const CORRUPT: u8 = 1 << 6;
/// Also build a `Snapshot` from the fields, encode it and decode that.
const ENCODE: u8 = 1 << 7;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        check(data);
        return;
    };
    let (len, version) = match mode & FORM {
        0 => {
            check(rest);
            return;
        }
        1 => (LEN_V1, VERSION_V1),
        _ => (LEN, VERSION),
    };
    let (head, tail) = rest.split_at(rest.len().min(len));
    let mut bytes = [0u8; LEN];
    let bytes = &mut bytes[..len];
    bytes[..head.len()].copy_from_slice(head);
    if mode & RAW_MAGIC == 0 {
        bytes[..2].copy_from_slice(&MAGIC);
    }
    if mode & RAW_VERSION == 0 {
        bytes[2] = version;
    }
    if mode & PLAUSIBLE != 0 {
        plausible(bytes);
    }
    let flip = |bytes: &mut [u8]| {
        for pair in tail.chunks_exact(2) {
            bytes[usize::from(pair[0]) % len] ^= pair[1];
        }
    };
    if mode & CORRUPT == 0 {
        flip(bytes);
    }
    if mode & RAW_CHECKSUM == 0 {
        snapshot_spec::seal(bytes);
    }
    if mode & CORRUPT != 0 {
        flip(bytes);
    }
    check(bytes);
    if mode & ENCODE != 0 {
        encode_then_decode(value_of(bytes));
    }
});

/// Masks the fields of a laid-out snapshot into what the format documents: a phase with
/// only its own flags, streak and step at most 15, a remaining wait within `Duration::MAX`,
/// and (version 2) a window kind 0 to 2, not 0 only when closed, holding samples its kind
/// can hold, its unused bytes zero; version 1's reserved byte 0.
fn plausible(b: &mut [u8]) {
    let phase = (b[3] & 3) % 3;
    let kind = if b.len() == LEN { b[7] % 3 } else { 0 };
    b[3] = match (kind, phase) {
        (0, 1) => 1 | (b[3] & 8),
        (0, 2) => 2 | (b[3] & 4),
        _ => 0,
    };
    b[5] &= 0x0F;
    b[6] &= 0x0F;
    b[7] = kind;
    b[11] &= 0x3F;
    if b.len() != LEN {
        return;
    }
    let w = &mut b[44..84];
    match kind {
        0 => w.fill(0),
        1 => {
            let len = w[16] % 52;
            let held = (1u64 << len) - 1;
            let failures = u64::from_le_bytes(w[..8].try_into().unwrap()) & held;
            let slow = u64::from_le_bytes(w[8..16].try_into().unwrap()) & held & !failures;
            w.fill(0);
            w[..8].copy_from_slice(&failures.to_le_bytes());
            w[8..16].copy_from_slice(&slow.to_le_bytes());
            w[16] = len;
        }
        _ => {
            for chunk in w.chunks_exact_mut(4) {
                let word = u32::from_le_bytes(chunk.try_into().unwrap());
                let calls = word & 0x3FF;
                let failures = (word >> 10 & 0x3FF) % (calls + 1);
                let slow = (word >> 20 & 0x3FF) % (calls - failures + 1);
                chunk.copy_from_slice(&(calls | failures << 10 | slow << 20).to_le_bytes());
            }
        }
    }
}

/// Decodes `bytes` and compares with what the format says.
fn check(bytes: &[u8]) {
    let got = Snapshot::from_bytes(bytes);
    let want = snapshot_spec::decide(bytes);
    let agree = match (&got, &want) {
        (Ok(snapshot), Verdict::Valid(version, fields)) => {
            assert_eq!(
                &fields_of(snapshot),
                fields,
                "decoded fields differ from the layout for {bytes:02x?}"
            );
            assert_eq!(snapshot.check(), Ok(()), "a decoded snapshot fails its own check");
            let encoded = snapshot.to_bytes();
            if *version == VERSION {
                assert_eq!(
                    &encoded[..],
                    bytes,
                    "an accepted snapshot does not encode back to its bytes"
                );
            } else {
                assert_eq!(
                    encoded,
                    snapshot_spec::reencoded_v1(bytes),
                    "a version-1 snapshot does not encode to the version-2 bytes of its state"
                );
                assert_eq!(
                    Snapshot::from_bytes(&encoded),
                    Ok(*snapshot),
                    "a re-encoded version-1 snapshot decodes to another"
                );
            }
            true
        }
        (Err(DecodeError::WrongLength(n)), Verdict::WrongLength(m)) => n == m,
        (Err(DecodeError::BadMagic), Verdict::BadMagic) => true,
        (Err(DecodeError::UnsupportedVersion(v)), Verdict::UnsupportedVersion(w)) => v == w,
        (Err(DecodeError::Checksum), Verdict::Checksum) => true,
        (Err(DecodeError::Invalid), Verdict::Invalid) => true,
        _ => false,
    };
    assert!(
        agree,
        "decoder says {got:?}, the format says {want:?}, for {bytes:02x?}"
    );
    if let Err(e) = got {
        assert!(!e.to_string().is_empty());
    }
}

/// A `Snapshot` with the fields of laid-out bytes, whatever their values: the phase is
/// byte 3 modulo 3 with both flags as given, the window of kind byte 7 modulo 3 read from
/// bytes 44..84 (none in a version-1 layout), a time bucket's bits 30 and 31 adding 1024
/// to its calls and its failures (numbers the format cannot hold).
fn value_of(b: &[u8]) -> Snapshot {
    let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let window = match (b.len(), b[7] % 3) {
        (LEN, 1) => WindowSnapshot::Calls {
            len: b[60],
            failures: u64::from_le_bytes(b[44..52].try_into().unwrap()),
            slow: u64::from_le_bytes(b[52..60].try_into().unwrap()),
        },
        (LEN, 2) => {
            let mut buckets = [Bucket::default(); 10];
            for (k, bucket) in buckets.iter_mut().enumerate() {
                let w = word(44 + 4 * k);
                *bucket = Bucket {
                    calls: (w & 0x3FF) as u16 + if w & 1 << 30 != 0 { 1024 } else { 0 },
                    failures: (w >> 10 & 0x3FF) as u16 + if w & 1 << 31 != 0 { 1024 } else { 0 },
                    slow: (w >> 20 & 0x3FF) as u16,
                };
            }
            WindowSnapshot::Time { buckets }
        }
        _ => WindowSnapshot::None,
    };
    Snapshot {
        phase: [Phase::Closed, Phase::Open, Phase::HalfOpen][usize::from(b[3] % 3)],
        probing: b[3] & 4 != 0,
        forced: b[3] & 8 != 0,
        strikes: b[4],
        streak: b[5],
        step: b[6],
        // `from_millis` clamps to `Duration::MAX`.
        remaining: Duration::from_millis(word(8)),
        counters: Counters {
            calls: word(12),
            successes: word(16),
            failures: word(20),
            neutrals: word(24),
            skips: word(28),
            trips: word(32),
            probes: word(36),
            lease_expiries: word(40),
            // Not in the format: zero after a decode.
            ..Counters::ZERO
        },
        window,
    }
}

/// `Snapshot::check` accepts exactly the values the format calls possible; every value
/// encodes to version-2 bytes with the magic and a right checksum; a possible one to the
/// bytes the layout gives its fields, which decode to it; an impossible one to bytes the
/// decoder refuses, unless a time bucket holds a number its 10-bit field cannot.
fn encode_then_decode(snapshot: Snapshot) {
    let fields = fields_of(&snapshot);
    let possible = snapshot_spec::possible(&fields);
    assert_eq!(
        snapshot.check().is_ok(),
        possible,
        "`check` disagrees with the format on {snapshot:?}"
    );
    let encoded = snapshot.to_bytes();
    assert_eq!(&encoded[..2], &MAGIC, "encoded without the magic");
    assert_eq!(encoded[2], VERSION, "encoded with another version");
    assert_eq!(
        snapshot_spec::crc(&encoded[..LEN - 4]).to_le_bytes(),
        encoded[LEN - 4..],
        "encoded with a wrong checksum"
    );
    check(&encoded);
    if possible {
        assert_eq!(
            encoded,
            snapshot_spec::encode(&fields),
            "{snapshot:?} is not encoded as the layout says"
        );
        assert_eq!(Snapshot::from_bytes(&encoded), Ok(snapshot));
        return;
    }
    let too_big = match fields.window {
        WindowFields::Time(buckets) => buckets.iter().flatten().any(|n| *n > 1023),
        _ => false,
    };
    if !too_big {
        assert_eq!(
            snapshot_spec::decide(&encoded),
            Verdict::Invalid,
            "an impossible snapshot {snapshot:?} encodes to bytes the format accepts"
        );
    }
}

fn fields_of(s: &Snapshot) -> Fields {
    let c = &s.counters;
    Fields {
        phase: match s.phase {
            Phase::Closed => 0,
            Phase::Open => 1,
            Phase::HalfOpen => 2,
        },
        probing: s.probing,
        forced: s.forced,
        strikes: s.strikes,
        streak: s.streak,
        step: s.step,
        remaining_ms: s.remaining.as_millis(),
        counters: [
            c.calls,
            c.successes,
            c.failures,
            c.neutrals,
            c.skips,
            c.trips,
            c.probes,
            c.lease_expiries,
        ],
        window: match s.window {
            WindowSnapshot::None => WindowFields::None,
            WindowSnapshot::Calls { len, failures, slow } => WindowFields::Calls { len, failures, slow },
            WindowSnapshot::Time { buckets } => WindowFields::Time(buckets.map(|b| [b.calls, b.failures, b.slow])),
        },
    }
}
