//! The Redis link's value decoder (`breaker-redis/src/value.rs`) against the format's
//! documentation ([`redis_value_spec`]), and its encoder against both.
//!
//! The first byte picks how the rest becomes a candidate: 0 the bytes as given; otherwise
//! a value laid out by the spec from a word and a fingerprint in the input (ours, or
//! another), then, by the byte's flags, bytes of it replaced by bytes the input names
//! before the checksum is written (a malformed or impossible field under a right CRC) or
//! after (corruption), or its length cut. The decoder's answer must be the spec's, and
//! every word encodes to the spec's layout, which decodes to the word.

#![no_main]

use breaker_fuzz::redis_value::{self, ValueError};
use breaker_fuzz::redis_value_spec::{self, Expect, LEN};
use libfuzzer_sys::fuzz_target;

/// The fingerprint the target decodes under.
const OURS: u32 = 0x5e5e_13c4;

/// Replace bytes before sealing (without it, after).
const BEFORE_SEAL: u8 = 1 << 1;
/// Decode under another fingerprint than the value's.
const OTHER_POLICY: u8 = 1 << 2;
/// Cut the value to the length the input names.
const CUT: u8 = 1 << 3;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        check(data);
        return;
    };
    if mode & 1 == 0 {
        check(rest);
        return;
    }
    let mut take = rest.iter().copied();
    let mut next = || take.next().unwrap_or(0);
    let word = u64::from_le_bytes([next(), next(), next(), next(), next(), next(), next(), next()]);
    let fp = if mode & OTHER_POLICY != 0 {
        u32::from_le_bytes([next(), next(), next(), next()])
    } else {
        OURS
    };

    // The encoder writes the spec's layout, which decodes to the word.
    let encoded = redis_value::encode(word, fp);
    assert_eq!(
        &encoded[..],
        &redis_value_spec::encode(word, fp)[..],
        "encode({word:#x}, {fp:#x})"
    );
    assert!(encoded.iter().all(u8::is_ascii_graphic), "a value reads as text");

    let mut value = encoded.to_vec();
    let edits = usize::from(next() % 4);
    let edit = |value: &mut Vec<u8>, next: &mut dyn FnMut() -> u8| {
        for _ in 0..edits {
            let at = usize::from(next()) % LEN;
            value[at] = next();
        }
    };
    if mode & BEFORE_SEAL != 0 {
        edit(&mut value, &mut next);
        // Written again over what the edits left before the last colon.
        let crc = redis_value_spec::crc32(&value[..29]);
        value[29..].copy_from_slice(format!(":{crc:08x}").as_bytes());
    } else {
        edit(&mut value, &mut next);
    }
    if mode & CUT != 0 {
        value.truncate(usize::from(next()) % (LEN + 1));
    }
    check(&value);
});

fn check(value: &[u8]) {
    let got = redis_value::decode(value, OURS);
    let want = redis_value_spec::decide(value, OURS);
    let agrees = match (got, want) {
        (Ok(w), Expect::Word(e)) => w == e,
        (Err(ValueError::Foreign), Expect::Foreign) => true,
        (Err(ValueError::UnsupportedVersion(v)), Expect::UnsupportedVersion(e)) => v == e,
        (Err(ValueError::Malformed), Expect::Malformed) => true,
        (Err(ValueError::Checksum), Expect::Checksum) => true,
        (Err(ValueError::OtherPolicy { ours, theirs }), Expect::OtherPolicy { ours: o, theirs: t }) => {
            ours == o && theirs == t
        }
        _ => false,
    };
    assert!(
        agrees,
        "{:?}: decoded {got:?}, the format says {want:?}",
        String::from_utf8_lossy(value)
    );
    if let Err(e) = got {
        assert!(!e.to_string().is_empty());
    }
}
