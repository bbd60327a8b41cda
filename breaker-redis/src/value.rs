//! The value a breaker's key holds in Redis: the state word, versioned and checksummed.
//!
//! 38 ASCII bytes, so that `redis-cli GET` shows something a person can read:
//!
//! ```text
//! CB1:00000000000a2011:5e5e13c4:d703b974
//! ^^^ ^^^^^^^^^^^^^^^^ ^^^^^^^^ ^^^^^^^^
//!  |   the state word   policy   CRC-32 (IEEE) of everything before the last colon
//!  magic "CB" and the format version
//! ```
//!
//! The policy fingerprint is a CRC-32 of the policy's fields: a word means something only to
//! replicas that follow the same policy (its strikes count towards the same trip, its
//! backoff step picks the same cooldown), so a replica with another policy reports the value
//! instead of obeying it.

use core::fmt;

use breaker_core::Policy;

/// The format version written.
pub const VERSION: u8 = 1;
/// The encoded length in bytes.
pub const LEN: usize = 38;
const MAGIC: &[u8] = b"CB";

/// Why a key's value was not taken as a breaker's state. The replica keeps its local breaker,
/// reports the error once, and does not overwrite the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValueError {
    /// Not a breaker value at all: another program's key, or garbage.
    Foreign,
    /// A breaker value in a format version this build does not read.
    UnsupportedVersion(u8),
    /// Starts like a breaker value but is not one (length, separators, hex digits).
    Malformed,
    /// The checksum does not match: the value is corrupt.
    Checksum,
    /// Written by replicas following another policy (the fingerprints differ).
    OtherPolicy {
        /// This replica's policy fingerprint.
        ours: u32,
        /// The value's.
        theirs: u32,
    },
    /// The checksum matches but the word holds a state the policy cannot reach.
    Invalid,
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::Foreign => f.write_str("not a breaker value (foreign key or garbage)"),
            ValueError::UnsupportedVersion(v) => write!(f, "breaker value format version {v} is not supported"),
            ValueError::Malformed => f.write_str("malformed breaker value"),
            ValueError::Checksum => f.write_str("breaker value checksum mismatch: corrupt value"),
            ValueError::OtherPolicy { ours, theirs } => write!(
                f,
                "breaker value written under another policy (fingerprint {theirs:08x}, ours {ours:08x})"
            ),
            ValueError::Invalid => f.write_str("breaker value holds a state the policy cannot reach"),
        }
    }
}

impl std::error::Error for ValueError {}

/// The fingerprint of a policy: a CRC-32 of every field that gives a word its meaning.
pub fn fingerprint(policy: &Policy) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for field in [
        policy.trip(),
        policy.cooldown().as_millis(),
        policy.max_cooldown().as_millis(),
        policy.backoff_multiplier(),
        policy.probe_lease().as_millis(),
        policy.probes_to_close(),
        u32::from(policy.patient_probation()),
    ] {
        h.update(&field.to_le_bytes());
    }
    // Only where set, so that a policy without it keeps the fingerprint it always had.
    if let Some((calls, percent)) = policy.half_open_rate() {
        h.update(&calls.to_le_bytes());
        h.update(&percent.to_le_bytes());
    }
    h.finalize()
}

/// The value for `word` written under the policy with fingerprint `policy`.
pub fn encode(word: u64, policy: u32) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    let body = format!("CB{VERSION}:{word:016x}:{policy:08x}");
    out[..29].copy_from_slice(body.as_bytes());
    let crc = crc32fast::hash(&out[..29]);
    out[29..].copy_from_slice(format!(":{crc:08x}").as_bytes());
    out
}

/// The word a value holds, if it is a breaker value of this version, intact, written under
/// the policy with fingerprint `policy`. (Whether the word is reachable under that policy is
/// the breaker's to say: `SharedBreaker::admits_word`.)
pub fn decode(value: &[u8], policy: u32) -> Result<u64, ValueError> {
    if !value.starts_with(MAGIC) {
        return Err(ValueError::Foreign);
    }
    let version = match value.get(2) {
        Some(d @ b'0'..=b'9') => d - b'0',
        _ => return Err(ValueError::Malformed),
    };
    if version != VERSION {
        return Err(ValueError::UnsupportedVersion(version));
    }
    if value.len() != LEN || value[3] != b':' || value[20] != b':' || value[29] != b':' {
        return Err(ValueError::Malformed);
    }
    let hex = |range: core::ops::Range<usize>| -> Result<u64, ValueError> {
        let digits = &value[range];
        if !digits.iter().all(|d| matches!(d, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(ValueError::Malformed);
        }
        // All lowercase hex digits, at most 16: the parse cannot fail.
        let text = core::str::from_utf8(digits).map_err(|_| ValueError::Malformed)?;
        u64::from_str_radix(text, 16).map_err(|_| ValueError::Malformed)
    };
    let word = hex(4..20)?;
    let theirs = hex(21..29)? as u32;
    let crc = hex(30..38)? as u32;
    if crc32fast::hash(&value[..29]) != crc {
        return Err(ValueError::Checksum);
    }
    if theirs != policy {
        return Err(ValueError::OtherPolicy { ours: policy, theirs });
    }
    Ok(word)
}

#[cfg(test)]
mod tests {
    use breaker_core::Duration;

    use super::*;

    const POLICY: u32 = 0x5e5e_13c4;

    #[test]
    fn the_documented_example_is_a_real_value() {
        assert_eq!(&encode(0xa2011, 0x5e5e_13c4), b"CB1:00000000000a2011:5e5e13c4:d703b974");
    }

    #[test]
    fn a_value_round_trips_and_reads_as_text() {
        for word in [0, 1, 0x0000_1234_000a_2011, u64::MAX] {
            let v = encode(word, POLICY);
            assert_eq!(decode(&v, POLICY), Ok(word));
        }
        let v = encode(0xa2011, POLICY);
        assert!(std::str::from_utf8(&v)
            .unwrap()
            .starts_with("CB1:00000000000a2011:5e5e13c4:"));
    }

    #[test]
    fn every_kind_of_bad_value_has_its_error() {
        let good = encode(42, POLICY);
        assert_eq!(decode(b"", POLICY), Err(ValueError::Foreign));
        assert_eq!(decode(b"{\"state\":\"open\"}", POLICY), Err(ValueError::Foreign));
        assert_eq!(decode(b"CB", POLICY), Err(ValueError::Malformed));
        let mut v2 = good;
        v2[2] = b'2';
        assert_eq!(decode(&v2, POLICY), Err(ValueError::UnsupportedVersion(2)));
        assert_eq!(decode(&good[..37], POLICY), Err(ValueError::Malformed));
        let mut upper = good;
        upper[19] = b'A';
        assert_eq!(decode(&upper, POLICY), Err(ValueError::Malformed));
        let mut flipped = good;
        flipped[19] = b'b';
        assert_eq!(decode(&flipped, POLICY), Err(ValueError::Checksum));
        // Each separator in its place, or the value is malformed (not a checksum mismatch).
        for at in [3, 20, 29] {
            let mut moved = good;
            moved[at] = b'-';
            assert_eq!(decode(&moved, POLICY), Err(ValueError::Malformed), "separator {at}");
        }
        assert_eq!(
            decode(&good, 7),
            Err(ValueError::OtherPolicy {
                ours: 7,
                theirs: POLICY
            })
        );
    }

    #[test]
    fn every_error_says_what_is_wrong() {
        let said = |e: ValueError| std::string::ToString::to_string(&e);
        assert_eq!(
            said(ValueError::Foreign),
            "not a breaker value (foreign key or garbage)"
        );
        assert_eq!(
            said(ValueError::UnsupportedVersion(2)),
            "breaker value format version 2 is not supported"
        );
        assert_eq!(said(ValueError::Malformed), "malformed breaker value");
        assert_eq!(
            said(ValueError::Checksum),
            "breaker value checksum mismatch: corrupt value"
        );
        assert_eq!(
            said(ValueError::OtherPolicy { ours: 7, theirs: 0xabc }),
            "breaker value written under another policy (fingerprint 00000abc, ours 00000007)"
        );
        assert_eq!(
            said(ValueError::Invalid),
            "breaker value holds a state the policy cannot reach"
        );
    }

    #[test]
    fn no_single_byte_change_is_obeyed() {
        let good = encode(0x0000_1234_000a_2011, POLICY);
        for i in 0..LEN {
            for b in 0..=255u8 {
                if b == good[i] {
                    continue;
                }
                let mut v = good;
                v[i] = b;
                assert!(decode(&v, POLICY).is_err(), "byte {i} set to {b:#x} was obeyed");
            }
        }
    }

    #[test]
    fn policies_that_give_a_word_another_meaning_have_other_fingerprints() {
        let base = Policy::new(3, Duration::from_secs(30));
        let others = [
            Policy::new(4, Duration::from_secs(30)),
            Policy::new(3, Duration::from_secs(31)),
            base.with_probe_lease(Duration::from_secs(5)),
            base.with_probes_to_close(2),
            base.with_backoff(2, Duration::from_mins(5)),
            base.with_patient_probation(),
            base.with_half_open_rate(10, 50),
            base.with_half_open_rate(10, 60),
            base.with_half_open_rate(9, 50),
        ];
        for (i, other) in others.iter().enumerate() {
            for later in &others[i + 1..] {
                assert_ne!(fingerprint(other), fingerprint(later), "{other:?} {later:?}");
            }
        }
        for other in others {
            assert_ne!(fingerprint(&base), fingerprint(&other), "{other:?}");
        }
        assert_eq!(
            fingerprint(&base),
            fingerprint(&Policy::new(3, Duration::from_secs(30)))
        );
    }
}
