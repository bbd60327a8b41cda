//! The snapshot decoder against the format's documentation, and the encoder against both.
//!
//! The first byte picks how the rest becomes a candidate snapshot. Most candidates are
//! well-formed up to the fields (the magic, version and checksum written here), so the
//! fuzzer spends its time in the field checks; some keep bytes as given, some are
//! corrupted after sealing, some come from a `Snapshot` built field by field and encoded.
//! Every candidate is decoded, and the decoder's answer (which error, or which fields)
//! must be what [`snapshot_spec::decide`] says; an accepted snapshot must encode back to
//! the same bytes.

#![no_main]

use breaker_core::{Counters, DecodeError, Duration, Phase, Snapshot};
use breaker_fuzz::snapshot_spec::{self, Fields, Verdict, BODY, LEN, MAGIC, VERSION};
use libfuzzer_sys::fuzz_target;

/// Keep the given magic bytes instead of writing `b"CB"`.
const RAW_MAGIC: u8 = 1 << 2;
/// Keep the given version byte instead of writing 1.
const RAW_VERSION: u8 = 1 << 3;
/// Mask the fields into their documented ranges (most such snapshots decode).
const PLAUSIBLE: u8 = 1 << 4;
/// Keep the given checksum instead of sealing.
const RAW_CHECKSUM: u8 = 1 << 5;
/// After sealing, XOR the bytes named by the tail of the input (multi-bit corruption).
const CORRUPT: u8 = 1 << 6;
/// Also build a `Snapshot` from the fields, encode it and decode that.
const ENCODE: u8 = 1 << 7;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        check(data);
        return;
    };
    if mode & 3 == 0 {
        // Bytes exactly as given: every length, every magic.
        check(rest);
        return;
    }
    let (head, tail) = rest.split_at(rest.len().min(LEN));
    let mut bytes = [0u8; LEN];
    bytes[..head.len()].copy_from_slice(head);
    if mode & RAW_MAGIC == 0 {
        bytes[..2].copy_from_slice(&MAGIC);
    }
    if mode & RAW_VERSION == 0 {
        bytes[2] = VERSION;
    }
    if mode & PLAUSIBLE != 0 {
        bytes[3] &= 0x0F;
        bytes[5] &= 0x0F;
        bytes[6] &= 0x0F;
        bytes[7] = 0;
        bytes[11] &= 0x3F;
    }
    if mode & RAW_CHECKSUM == 0 {
        snapshot_spec::seal(&mut bytes);
    }
    if mode & CORRUPT != 0 {
        for flip in tail.chunks_exact(2) {
            bytes[usize::from(flip[0]) % LEN] ^= flip[1];
        }
    }
    check(&bytes);
    if mode & ENCODE != 0 {
        encode_then_decode(&bytes);
    }
});

/// Decodes `bytes` and compares with what the format says.
fn check(bytes: &[u8]) {
    let got = Snapshot::from_bytes(bytes);
    let want = snapshot_spec::decide(bytes);
    let agree = match (&got, &want) {
        (Ok(snapshot), Verdict::Valid(fields)) => {
            assert_eq!(
                &fields_of(snapshot),
                fields,
                "decoded fields differ from the layout for {bytes:02x?}"
            );
            assert_eq!(
                &snapshot.to_bytes()[..],
                bytes,
                "an accepted snapshot does not encode back to its bytes"
            );
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

/// A `Snapshot` with the fields of `bytes` (whatever their values), encoded: the encoding
/// is decided like any bytes, and if the format accepts it, it decodes to the same value.
fn encode_then_decode(bytes: &[u8; LEN]) {
    let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let snapshot = Snapshot {
        phase: [Phase::Closed, Phase::Open, Phase::HalfOpen][usize::from(bytes[3] % 3)],
        probing: bytes[3] & 4 != 0,
        forced: bytes[3] & 8 != 0,
        strikes: bytes[4],
        streak: bytes[5],
        step: bytes[6],
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
        },
    };
    let encoded = snapshot.to_bytes();
    assert_eq!(&encoded[..2], &MAGIC, "encoded without the magic");
    assert_eq!(encoded[2], VERSION, "encoded with another version");
    assert_eq!(encoded[7], 0, "encoded with the reserved byte set");
    assert_eq!(
        snapshot_spec::crc(&encoded[..BODY]).to_le_bytes(),
        encoded[BODY..],
        "encoded with a wrong checksum"
    );
    check(&encoded);
    match snapshot_spec::decide(&encoded) {
        Verdict::Valid(fields) => {
            assert_eq!(fields, fields_of(&snapshot), "encoding moved a field");
            assert_eq!(Snapshot::from_bytes(&encoded), Ok(snapshot));
        }
        // Only a combination the format cannot hold is refused: a flag in the wrong phase
        // or a streak or step above 15.
        Verdict::Invalid => assert!(
            (snapshot.probing && snapshot.phase != Phase::HalfOpen)
                || (snapshot.forced && snapshot.phase != Phase::Open)
                || snapshot.streak > 15
                || snapshot.step > 15,
            "a possible snapshot {snapshot:?} encodes to bytes the format refuses"
        ),
        other => panic!("an encoded snapshot is {other:?}"),
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
    }
}
