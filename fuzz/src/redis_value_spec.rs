//! The Redis value format (`CB1:`), from the documentation of `breaker-redis/src/value.rs`,
//! without its code: 38 ASCII bytes, `CB`, the version digit, `:`, the state word in 16
//! lowercase hex digits, `:`, the policy fingerprint in 8, `:`, and the CRC-32 (IEEE) of
//! everything before the last colon in 8. The CRC is computed here bit by bit, apart from
//! the crate the decoder uses.

/// The encoded length.
pub const LEN: usize = 38;

/// What decoding a value under a policy fingerprint must give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Not starting with `CB`.
    Foreign,
    /// `CB` and a version digit other than 1.
    UnsupportedVersion(u8),
    /// Starts like a breaker value but is not one: no version digit, the wrong length,
    /// a separator missing, a field not in lowercase hex.
    Malformed,
    /// Well-formed, but the CRC does not match.
    Checksum,
    /// Intact, written under another fingerprint.
    OtherPolicy { ours: u32, theirs: u32 },
    /// Intact, under this fingerprint: the word.
    Word(u64),
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn hex(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |acc, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        Some(acc * 16 + u64::from(v))
    })
}

/// What the format says of `value` for a replica whose policy has fingerprint `ours`.
pub fn decide(value: &[u8], ours: u32) -> Expect {
    if !value.starts_with(b"CB") {
        return Expect::Foreign;
    }
    let version = match value.get(2) {
        Some(d) if d.is_ascii_digit() => d - b'0',
        _ => return Expect::Malformed,
    };
    if version != 1 {
        return Expect::UnsupportedVersion(version);
    }
    if value.len() != LEN || value[3] != b':' || value[20] != b':' || value[29] != b':' {
        return Expect::Malformed;
    }
    let (Some(word), Some(theirs), Some(crc)) = (hex(&value[4..20]), hex(&value[21..29]), hex(&value[30..38])) else {
        return Expect::Malformed;
    };
    if u64::from(crc32(&value[..29])) != crc {
        return Expect::Checksum;
    }
    let theirs = theirs as u32;
    if theirs != ours {
        return Expect::OtherPolicy { ours, theirs };
    }
    Expect::Word(word)
}

/// The value of `word` under fingerprint `policy`, as the format lays it out.
pub fn encode(word: u64, policy: u32) -> Vec<u8> {
    let body = format!("CB1:{word:016x}:{policy:08x}");
    let crc = crc32(body.as_bytes());
    format!("{body}:{crc:08x}").into_bytes()
}
