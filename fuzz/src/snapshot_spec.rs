//! The snapshot format as breaker-core's `snapshot` module documents it, decided afresh.
//!
//! Written from the layout tables and the "Decoding" list at the top of
//! `breaker-core/src/breaker/snapshot.rs` and the field docs of `Snapshot`,
//! `WindowSnapshot` and `DecodeError`, not from the decoder: its own CRC (an independent
//! crate), its own byte offsets, its own limits. What the docs say, and what follows:
//!
//! 1. 48 or 88 bytes, else `WrongLength(len)`;
//! 2. bytes 0..2 are `b"CB"`, else `BadMagic`;
//! 3. byte 2 is version 1 or 2, else `UnsupportedVersion(byte)`;
//! 4. the length is that version's (1: 48, 2: 88), else `WrongLength(len)`;
//! 5. the last four bytes are the CRC-32 (IEEE), little-endian, of all the bytes before
//!    them, else `Checksum`;
//! 6. every field as the tables say, else `Invalid` ([`structure`] and [`possible`]):
//!    - byte 3: phase in bits 0..2 is 0 closed, 1 open or 2 half-open (3 is invalid); bit 2
//!      "probing", half-open only; bit 3 "forced", open only; bits 4..8 are 0;
//!    - byte 4 (strikes) any value; bytes 5 (probe streak) and 6 (backoff step) at most 15;
//!    - byte 7: version 1, reserved and 0; version 2, the window kind, 0 none, 1 count
//!      window, 2 time window, and not 0 only when closed;
//!    - bytes 8..12, the remaining wait, at most 2^30 - 1 ms; bytes 12..44 eight counters,
//!      any values;
//!    - version 2, bytes 44..84, the window: kind 0 all zero; kind 1 a u64 of failures at
//!      44, a u64 of slow successes at 52, the samples held `len` at 60 (at most 51), no bit
//!      at or above `len` in either u64, no bit in both, bytes 61..84 zero; kind 2 ten u32
//!      buckets at 44 + 4k, each calls (bits 0..10), failures (10..20), slow (20..30),
//!      bits 30..32 zero, failures + slow at most calls.
//!
//! A version-1 snapshot has no window: it decodes with none. Encoding always writes
//! version 2, and [`reencoded_v1`] says which bytes a version-1 snapshot becomes.

/// The length of a version-2 snapshot.
pub const LEN: usize = 88;
/// The length of a version-1 snapshot.
pub const LEN_V1: usize = 48;
/// The magic number.
pub const MAGIC: [u8; 2] = *b"CB";
/// The version written.
pub const VERSION: u8 = 2;
/// The version still read.
pub const VERSION_V1: u8 = 1;
/// The largest probe streak and backoff step.
pub const MAX_STREAK_OR_STEP: u8 = 15;
/// `Duration::MAX`, in milliseconds.
pub const MAX_REMAINING_MS: u32 = (1 << 30) - 1;
/// The most samples a count window holds.
pub const MAX_WINDOW_LEN: u8 = 51;
/// The most calls a time window's bucket holds (its 10-bit field).
pub const MAX_BUCKET_CALLS: u16 = 1023;
/// Where the window section starts and ends (version 2).
pub const WINDOW: std::ops::Range<usize> = 44..84;

/// One bucket of a time window: calls, failures, slow successes.
pub type Bucket = [u16; 3];

/// A window as a snapshot holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowFields {
    None,
    /// A count window: `len` samples, a bit per sample in `failures` and `slow`.
    Calls {
        len: u8,
        failures: u64,
        slow: u64,
    },
    /// A time window's ten buckets, newest first.
    Time([Bucket; 10]),
}

/// The fields of a snapshot, as the layout table reads them.
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
    pub window: WindowFields,
}

/// What the format says of some bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    WrongLength(usize),
    BadMagic,
    UnsupportedVersion(u8),
    Checksum,
    Invalid,
    /// Valid, of this version, with these fields.
    Valid(u8, Fields),
}

/// CRC-32 (IEEE 802.3), from a crate that has nothing to do with the decoder.
pub fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Writes the checksum of all but the last four bytes into the last four.
pub fn seal(bytes: &mut [u8]) {
    let body = bytes.len() - 4;
    let sum = crc(&bytes[..body]);
    bytes[body..].copy_from_slice(&sum.to_le_bytes());
}

/// The little-endian `N`-byte unsigned number at `at`.
fn le(bytes: &[u8], at: usize, n: usize) -> u64 {
    bytes[at..at + n]
        .iter()
        .rev()
        .fold(0u64, |acc, b| acc * 256 + u64::from(*b))
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    le(bytes, at, 4) as u32
}

/// What decoding `bytes` must give.
pub fn decide(bytes: &[u8]) -> Verdict {
    let len = bytes.len();
    if len != LEN && len != LEN_V1 {
        return Verdict::WrongLength(len);
    }
    if bytes[..2] != MAGIC {
        return Verdict::BadMagic;
    }
    let version = bytes[2];
    let wanted = match version {
        VERSION_V1 => LEN_V1,
        VERSION => LEN,
        other => return Verdict::UnsupportedVersion(other),
    };
    if len != wanted {
        return Verdict::WrongLength(len);
    }
    if crc(&bytes[..len - 4]) != le32(bytes, len - 4) {
        return Verdict::Checksum;
    }
    match structure(bytes) {
        Some(fields) if possible(&fields) => Verdict::Valid(version, fields),
        _ => Verdict::Invalid,
    }
}

/// The fields of checksummed bytes of the right length, if the bytes themselves are
/// well-formed: no phase 3, no flag bit above bit 3, version 1's reserved byte 0, a window
/// kind the format has, its unused bytes and bits 0. Whether the fields describe a state
/// a breaker can be in is [`possible`]'s question.
pub fn structure(bytes: &[u8]) -> Option<Fields> {
    let flags = bytes[3];
    let phase = flags % 4;
    if phase == 3 || flags / 16 != 0 {
        return None;
    }
    let window = if bytes[2] == VERSION_V1 {
        if bytes[7] != 0 {
            return None;
        }
        WindowFields::None
    } else {
        let w = &bytes[WINDOW];
        match bytes[7] {
            0 if w.iter().all(|b| *b == 0) => WindowFields::None,
            1 if w[17..].iter().all(|b| *b == 0) => WindowFields::Calls {
                failures: le(w, 0, 8),
                slow: le(w, 8, 8),
                len: w[16],
            },
            2 => {
                let mut buckets = [[0u16; 3]; 10];
                for (k, bucket) in buckets.iter_mut().enumerate() {
                    let word = le32(w, 4 * k);
                    if word >= 1 << 30 {
                        return None;
                    }
                    // Three 10-bit numbers: calls lowest.
                    *bucket = [0, 1, 2].map(|i| (word / 1024u32.pow(i) % 1024) as u16);
                }
                WindowFields::Time(buckets)
            }
            _ => return None,
        }
    };
    let mut counters = [0; 8];
    for (i, c) in counters.iter_mut().enumerate() {
        *c = le32(bytes, 12 + 4 * i);
    }
    Some(Fields {
        phase,
        probing: flags & 0b100 != 0,
        forced: flags & 0b1000 != 0,
        strikes: bytes[4],
        streak: bytes[5],
        step: bytes[6],
        remaining_ms: le32(bytes, 8),
        counters,
        window,
    })
}

/// Whether the fields describe a state a breaker can be in (what `Snapshot::check`
/// documents): probing only when half-open, forced only when open, a streak and a step of
/// at most 15, a remaining wait a `Duration` holds, a window only when closed and only one
/// its kind can hold.
pub fn possible(f: &Fields) -> bool {
    let window = match f.window {
        WindowFields::None => true,
        WindowFields::Calls { len, failures, slow } => {
            let above_len = |bits: u64| (0..64).any(|i| bits >> i & 1 == 1 && i >= u32::from(len));
            f.phase == 0 && len <= MAX_WINDOW_LEN && !above_len(failures) && !above_len(slow) && failures & slow == 0
        }
        WindowFields::Time(buckets) => {
            f.phase == 0
                && buckets.iter().all(|[calls, failures, slow]| {
                    *calls <= MAX_BUCKET_CALLS && u32::from(*failures) + u32::from(*slow) <= u32::from(*calls)
                })
        }
    };
    window
        && (!f.probing || f.phase == 2)
        && (!f.forced || f.phase == 1)
        && f.streak <= MAX_STREAK_OR_STEP
        && f.step <= MAX_STREAK_OR_STEP
        && f.remaining_ms <= MAX_REMAINING_MS
}

/// The version-2 bytes of [`possible`] fields, laid out afresh from the table (of other
/// fields the format says nothing: a bucket number above 10 bits does not fit its field).
pub fn encode(f: &Fields) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[..2].copy_from_slice(&MAGIC);
    b[2] = VERSION;
    b[3] = f.phase + 4 * u8::from(f.probing) + 8 * u8::from(f.forced);
    b[4] = f.strikes;
    b[5] = f.streak;
    b[6] = f.step;
    b[8..12].copy_from_slice(&f.remaining_ms.to_le_bytes());
    for (i, c) in f.counters.iter().enumerate() {
        b[12 + 4 * i..16 + 4 * i].copy_from_slice(&c.to_le_bytes());
    }
    match f.window {
        WindowFields::None => {}
        WindowFields::Calls { len, failures, slow } => {
            b[7] = 1;
            b[44..52].copy_from_slice(&failures.to_le_bytes());
            b[52..60].copy_from_slice(&slow.to_le_bytes());
            b[60] = len;
        }
        WindowFields::Time(buckets) => {
            b[7] = 2;
            for (k, [calls, failures, slow]) in buckets.iter().enumerate() {
                let word = u64::from(*calls) + u64::from(*failures) * 1024 + u64::from(*slow) * 1024 * 1024;
                b[44 + 4 * k..48 + 4 * k].copy_from_slice(&(word as u32).to_le_bytes());
            }
        }
    }
    seal(&mut b);
    b
}

/// What a valid version-1 snapshot becomes when it is encoded again: the same first 44
/// bytes with version 2 (byte 7, window kind 0, is version 1's reserved zero), an empty
/// window section and a new checksum.
pub fn reencoded_v1(v1: &[u8]) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    b[..44].copy_from_slice(&v1[..44]);
    b[2] = VERSION;
    seal(&mut b);
    b
}
