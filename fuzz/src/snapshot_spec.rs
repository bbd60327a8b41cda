//! The snapshot format as breaker-core's `snapshot` module documents it, decided afresh.
//!
//! Written from the layout table and the field docs of `Snapshot` and `DecodeError`, not
//! from the decoder: its own CRC (an independent crate), its own byte offsets, its own
//! limits. What the docs say, and what follows from it:
//!
//! - exactly 48 bytes, else `WrongLength(len)`;
//! - bytes 0..2 are `b"CB"`, else `BadMagic` (foreign bytes have no version to report);
//! - byte 2 is version 1, else `UnsupportedVersion(byte)` (checked before the checksum: a
//!   later version may lay its checksum out differently);
//! - bytes 44..48 are the CRC-32 (IEEE) of bytes 0..44, little-endian, else `Checksum`;
//! - with the checksum right ("a field holds an impossible value" is `Invalid`):
//!   - byte 3: phase in bits 0..2 is 0 closed, 1 open or 2 half-open (3 is none); bit 2 is
//!     "probing", which only a half-open breaker can be ("half-open with a probe out");
//!     bit 3 is "forced", which only an open breaker can be ("open and forced"); bits 4..8
//!     are not part of the format and must be 0;
//!   - byte 5, the probe streak, and byte 6, the backoff step, are "at most 15";
//!   - byte 7 is reserved, 0;
//!   - bytes 8..12, the remaining wait, fit a `Duration` (at most 2^30 - 1 ms);
//!   - byte 4 (strikes) and the eight counters take any value.

/// The encoded length.
pub const LEN: usize = 48;
/// The magic number.
pub const MAGIC: [u8; 2] = *b"CB";
/// The one format version.
pub const VERSION: u8 = 1;
/// Where the checksummed body ends and the checksum starts.
pub const BODY: usize = 44;
/// The largest probe streak and backoff step.
pub const MAX_STREAK_OR_STEP: u8 = 15;
/// `Duration::MAX`, in milliseconds.
pub const MAX_REMAINING_MS: u32 = (1 << 30) - 1;

/// The fields of a valid snapshot, as the layout table reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// 0 closed, 1 open, 2 half-open.
    pub phase: u8,
    pub probing: bool,
    pub forced: bool,
    pub strikes: u8,
    pub streak: u8,
    pub step: u8,
    pub remaining_ms: u32,
    /// calls, successes, failures, neutrals, skips, trips, probes, lease expiries.
    pub counters: [u32; 8],
}

/// What the format says of some bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    WrongLength(usize),
    BadMagic,
    UnsupportedVersion(u8),
    Checksum,
    Invalid,
    Valid(Fields),
}

/// CRC-32 (IEEE 802.3), from a crate that has nothing to do with the decoder.
pub fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Writes the checksum of `bytes[..44]` into `bytes[44..48]`.
pub fn seal(bytes: &mut [u8; LEN]) {
    let sum = crc(&bytes[..BODY]);
    bytes[BODY..].copy_from_slice(&sum.to_le_bytes());
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from(bytes[at])
        | u32::from(bytes[at + 1]) << 8
        | u32::from(bytes[at + 2]) << 16
        | u32::from(bytes[at + 3]) << 24
}

/// What decoding `bytes` must give.
pub fn decide(bytes: &[u8]) -> Verdict {
    if bytes.len() != LEN {
        return Verdict::WrongLength(bytes.len());
    }
    if bytes[0] != MAGIC[0] || bytes[1] != MAGIC[1] {
        return Verdict::BadMagic;
    }
    if bytes[2] != VERSION {
        return Verdict::UnsupportedVersion(bytes[2]);
    }
    if crc(&bytes[..BODY]) != le32(bytes, BODY) {
        return Verdict::Checksum;
    }
    let flags = bytes[3];
    let phase = flags % 4;
    let probing = (flags >> 2) % 2 == 1;
    let forced = (flags >> 3) % 2 == 1;
    let undefined_bits = flags >> 4;
    let (strikes, streak, step, reserved) = (bytes[4], bytes[5], bytes[6], bytes[7]);
    let remaining_ms = le32(bytes, 8);
    let possible = phase <= 2
        && (!probing || phase == 2)
        && (!forced || phase == 1)
        && undefined_bits == 0
        && streak <= MAX_STREAK_OR_STEP
        && step <= MAX_STREAK_OR_STEP
        && reserved == 0
        && remaining_ms <= MAX_REMAINING_MS;
    if !possible {
        return Verdict::Invalid;
    }
    let mut counters = [0; 8];
    for (i, c) in counters.iter_mut().enumerate() {
        *c = le32(bytes, 12 + 4 * i);
    }
    Verdict::Valid(Fields {
        phase,
        probing,
        forced,
        strikes,
        streak,
        step,
        remaining_ms,
        counters,
    })
}
