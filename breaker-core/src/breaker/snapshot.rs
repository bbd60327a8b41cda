//! A breaker's state, counters and failure-rate window as 88 bytes that survive a reboot.
//!
//! A monotonic clock starts again at zero on boot, so a snapshot stores the *remaining*
//! cooldown (or probe lease), never a timestamp; restoring resumes the wait where it left
//! off. A time window's buckets are stored by age for the same reason.
//!
//! # Format version 2 (written), 88 bytes
//!
//! All integers little-endian.
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..2   | magic `b"CB"` |
//! | 2      | format version: 2 ([`Snapshot::VERSION`]) |
//! | 3      | bits 0..2: phase (0 closed, 1 open, 2 half-open; 3 is invalid); bit 2: probing (half-open only); bit 3: forced (open only); bits 4..8: 0 |
//! | 4      | strikes (closed); probe failures (half-open, under a half-open failure rate) |
//! | 5      | probe streak (half-open; under a half-open failure rate the probe successes), at most 15 |
//! | 6      | backoff step, at most 15 |
//! | 7      | window kind: 0 none, 1 count window, 2 time window; not 0 only when closed |
//! | 8..12  | u32, remaining wait in ms (open: cooldown; half-open probing: lease), at most 2^30 - 1 |
//! | 12..44 | 8 x u32 counters: calls, successes, failures, neutrals, skips, trips, probes, lease expiries (the probes' outcomes and the changes of phase by kind are not stored: decoded, they are zero) |
//! | 44..84 | the window (40 bytes), by kind, below |
//! | 84..88 | u32, CRC-32 (IEEE: reflected, polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF) of bytes 0..84 |
//!
//! The window, bytes 44..84:
//!
//! - kind 0: all 40 bytes 0.
//! - kind 1 (count window, [`WindowSnapshot::Calls`]): bytes 44..52 a u64 of failures,
//!   52..60 a u64 of slow successes (bit `i`: the sample `i` calls ago), byte 60 the number
//!   of samples held `len` (at most 51); no bit at or above `len` set, no bit set in both
//!   u64; bytes 61..84 0.
//! - kind 2 (time window, [`WindowSnapshot::Time`]): ten u32 at 44 + 4k, k = 0..10, bucket
//!   `k` widths before the current one: bits 0..10 calls, 10..20 failures, 20..30 slow
//!   successes, bits 30..32 0, failures + slow at most calls.
//!
//! # Format version 1 (still read), 48 bytes
//!
//! Bytes 0..44 as in version 2, except that byte 2 is 1 and byte 7 is reserved and 0;
//! bytes 44..48 the CRC-32 of bytes 0..44. It has no window: it decodes with
//! [`WindowSnapshot::None`].
//!
//! # Decoding
//!
//! [`Snapshot::from_bytes`] checks, in this order, and answers the first failure:
//!
//! 1. the length is 48 or 88, else [`DecodeError::WrongLength`];
//! 2. the magic, else [`DecodeError::BadMagic`];
//! 3. the version is 1 or 2, else [`DecodeError::UnsupportedVersion`];
//! 4. the length is that version's, else [`DecodeError::WrongLength`];
//! 5. the CRC-32, else [`DecodeError::Checksum`];
//! 6. every field as the tables say (reserved bits and bytes 0, ranges, flags and window
//!    only in their phase), else [`DecodeError::Invalid`].
//!
//! Every byte string that passes decodes to one snapshot, and encoding that snapshot
//! gives the same bytes back (for version 2; a version-1 snapshot encodes as version 2).

use core::fmt;

use crate::layout::Core;
use crate::policy::{MAX_BACKOFF_STEP, MAX_PROBES};
use crate::window::{self, Bucket, WindowSnapshot, MAX_BUCKET_CALLS, MAX_WINDOW_CALLS, WINDOW_BUCKETS};
use crate::{Breaker, Counters, Duration, Instant, Observer, Phase, Policy, SharedBreaker};

/// One breaker's state and counters, ready to be stored and restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Snapshot {
    /// The phase.
    pub phase: Phase,
    /// Open and forced (stays open until reset).
    pub forced: bool,
    /// Half-open with a probe out.
    pub probing: bool,
    /// Consecutive strikes (closed). Half-open under a half-open failure rate
    /// ([`Policy::with_half_open_rate`]): the probe failures counted.
    pub strikes: u8,
    /// Consecutive probe successes (half-open), at most 15. Under a half-open failure
    /// rate: the probe successes counted.
    pub streak: u8,
    /// Backoff step: re-opens since the last close, at most 15.
    pub step: u8,
    /// Open: the wait left before a probe. Half-open with a probe out: the lease left.
    pub remaining: Duration,
    /// The counters.
    pub counters: Counters,
    /// A windowed breaker's window (closed only: the window is cleared on every transition).
    pub window: WindowSnapshot,
}

/// Why bytes could not be decoded as a [`Snapshot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DecodeError {
    /// Not [`Snapshot::LEN`] bytes (nor [`Snapshot::LEN_V1`] of a version-1 snapshot).
    WrongLength(usize),
    /// The bytes do not start with the snapshot magic.
    BadMagic,
    /// A format version this build does not read.
    UnsupportedVersion(u8),
    /// The checksum does not match: the bytes are corrupt.
    Checksum,
    /// The checksum matches but a field holds an impossible value.
    Invalid,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::WrongLength(n) => write!(
                f,
                "snapshot must be {} bytes ({} for format version 1), got {n}",
                Snapshot::LEN,
                Snapshot::LEN_V1
            ),
            DecodeError::BadMagic => f.write_str("not a breaker snapshot"),
            DecodeError::UnsupportedVersion(v) => write!(f, "snapshot format version {v} is not supported"),
            DecodeError::Checksum => f.write_str("snapshot checksum mismatch: corrupt bytes"),
            DecodeError::Invalid => f.write_str("snapshot holds an impossible value"),
        }
    }
}

impl core::error::Error for DecodeError {}

const MAGIC: [u8; 2] = *b"CB";

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit: small and table-free.
const fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    let mut i = 0;
    while i < bytes.len() {
        crc ^= bytes[i] as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
            bit += 1;
        }
        i += 1;
    }
    !crc
}

/// The window section of a version-2 snapshot: `kind` (byte 7) and bytes 44..84.
fn decode_window(kind: u8, w: &[u8]) -> Result<WindowSnapshot, DecodeError> {
    let u64_at = |i: usize| match w.get(i..i + 8) {
        Some(&[a, b, c, d, e, f, g, h]) => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => 0,
    };
    let zero_from = |i: usize| w.get(i..).is_some_and(|rest| rest.iter().all(|b| *b == 0));
    match kind {
        0 if zero_from(0) => Ok(WindowSnapshot::None),
        1 => {
            let (failures, slow) = (u64_at(0), u64_at(8));
            let len = w.get(16).copied().unwrap_or(u8::MAX);
            if !zero_from(17) {
                return Err(DecodeError::Invalid);
            }
            // The samples themselves are checked with the other fields (`Snapshot::check`).
            Ok(WindowSnapshot::Calls { len, failures, slow })
        }
        2 => {
            let mut buckets = [Bucket::default(); WINDOW_BUCKETS as usize];
            for (bucket, chunk) in buckets.iter_mut().zip(w.chunks_exact(4)) {
                let word = match chunk {
                    &[a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
                    _ => return Err(DecodeError::Invalid),
                };
                let (calls, failures, slow) = (word & 0x3FF, word >> 10 & 0x3FF, word >> 20 & 0x3FF);
                if word >> 30 != 0 {
                    return Err(DecodeError::Invalid);
                }
                *bucket = Bucket {
                    calls: calls as u16,
                    failures: failures as u16,
                    slow: slow as u16,
                };
            }
            Ok(WindowSnapshot::Time { buckets })
        }
        _ => Err(DecodeError::Invalid),
    }
}

impl Snapshot {
    /// The encoded length in bytes (format version 2).
    pub const LEN: usize = 88;
    /// The length of a format-version-1 snapshot, which [`Snapshot::from_bytes`] still reads.
    pub const LEN_V1: usize = 48;
    /// The format version written.
    pub const VERSION: u8 = 2;

    /// Encodes into [`Snapshot::LEN`] bytes, format version 2 (its byte layout is
    /// documented at the top of `snapshot.rs`).
    pub fn to_bytes(&self) -> [u8; Snapshot::LEN] {
        let mut b = [0u8; Snapshot::LEN];
        b[0..2].copy_from_slice(&MAGIC);
        b[2] = Self::VERSION;
        let phase = match self.phase {
            Phase::Closed => 0,
            Phase::Open => 1,
            Phase::HalfOpen => 2,
        };
        b[3] = phase | u8::from(self.probing) << 2 | u8::from(self.forced) << 3;
        b[4] = self.strikes;
        b[5] = self.streak;
        b[6] = self.step;
        b[8..12].copy_from_slice(&self.remaining.as_millis().to_le_bytes());
        let c = &self.counters;
        let counters = [
            c.calls,
            c.successes,
            c.failures,
            c.neutrals,
            c.skips,
            c.trips,
            c.probes,
            c.lease_expiries,
        ];
        for (chunk, value) in b[12..44].chunks_exact_mut(4).zip(counters) {
            chunk.copy_from_slice(&value.to_le_bytes());
        }
        match self.window {
            WindowSnapshot::None => {}
            WindowSnapshot::Calls { len, failures, slow } => {
                b[7] = 1;
                b[44..52].copy_from_slice(&failures.to_le_bytes());
                b[52..60].copy_from_slice(&slow.to_le_bytes());
                b[60] = len;
            }
            WindowSnapshot::Time { buckets } => {
                b[7] = 2;
                for (chunk, bucket) in b[44..84].chunks_exact_mut(4).zip(buckets) {
                    let word = u32::from(bucket.calls) & 0x3FF
                        | (u32::from(bucket.failures) & 0x3FF) << 10
                        | (u32::from(bucket.slow) & 0x3FF) << 20;
                    chunk.copy_from_slice(&word.to_le_bytes());
                }
            }
        }
        let crc = crc32(&b[..84]);
        b[84..88].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes bytes written by [`Snapshot::to_bytes`], or by a build that wrote format
    /// version 1. Truncated, corrupt or foreign bytes give a [`DecodeError`], never a panic;
    /// the checks and their order are documented with the layout, at the top of
    /// `snapshot.rs`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
        let len = bytes.len();
        if len != Snapshot::LEN && len != Snapshot::LEN_V1 {
            return Err(DecodeError::WrongLength(len));
        }
        if bytes.get(0..2) != Some(&MAGIC[..]) {
            return Err(DecodeError::BadMagic);
        }
        let version = bytes.get(2).copied().unwrap_or(0);
        let body_len = match version {
            1 => Snapshot::LEN_V1 - 4,
            2 => Snapshot::LEN - 4,
            v => return Err(DecodeError::UnsupportedVersion(v)),
        };
        if len != body_len + 4 {
            return Err(DecodeError::WrongLength(len));
        }
        let (body, tail) = bytes.split_at(body_len);
        let word = |i: usize| match body.get(i..i + 4) {
            Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
            _ => 0,
        };
        let crc = match tail {
            &[a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
            _ => return Err(DecodeError::WrongLength(len)),
        };
        if crc32(body) != crc {
            return Err(DecodeError::Checksum);
        }
        let byte = |i: usize| body.get(i).copied().unwrap_or(0);
        let flags = byte(3);
        let phase = match flags & 3 {
            0 => Phase::Closed,
            1 => Phase::Open,
            2 => Phase::HalfOpen,
            _ => return Err(DecodeError::Invalid),
        };
        let probing = flags & 4 != 0;
        let forced = flags & 8 != 0;
        let remaining = word(8);
        if flags & 0xF0 != 0 || remaining > Duration::MAX.as_millis() {
            return Err(DecodeError::Invalid);
        }
        let window = match (version, byte(7)) {
            (1, 0) => WindowSnapshot::None,
            (2, kind) => decode_window(kind, body.get(44..84).unwrap_or(&[]))?,
            _ => return Err(DecodeError::Invalid),
        };
        let snapshot = Snapshot {
            phase,
            forced,
            probing,
            strikes: byte(4),
            streak: byte(5),
            step: byte(6),
            remaining: Duration::from_millis(remaining),
            counters: Counters {
                calls: word(12),
                successes: word(16),
                failures: word(20),
                neutrals: word(24),
                skips: word(28),
                trips: word(32),
                probes: word(36),
                lease_expiries: word(40),
                // Not kept across a reboot: they restart at zero, as a process's metrics do.
                ..Counters::ZERO
            },
            window,
        };
        snapshot.check().map(|()| snapshot)
    }

    /// `Ok` if the fields describe a state a breaker can be in: probing only when
    /// half-open, forced only when open, a streak of at most 15 probes and a backoff step
    /// of at most 15, a window only when closed and only one a window can hold (see the
    /// layout at the top of `snapshot.rs`). [`Snapshot::from_bytes`] and deserialization
    /// (feature `serde`) accept only snapshots that pass; a hand-made one that does not is
    /// [`DecodeError::Invalid`].
    pub fn check(&self) -> Result<(), DecodeError> {
        let window_valid = match self.window {
            WindowSnapshot::None => true,
            WindowSnapshot::Calls { len, failures, slow } => {
                let held = (1u64 << u32::from(len).min(63)) - 1;
                self.phase == Phase::Closed
                    && u32::from(len) <= MAX_WINDOW_CALLS
                    && failures & !held == 0
                    && slow & !held == 0
                    && failures & slow == 0
            }
            WindowSnapshot::Time { buckets } => {
                self.phase == Phase::Closed
                    && buckets.iter().all(|b| {
                        u32::from(b.calls) <= MAX_BUCKET_CALLS
                            && u32::from(b.failures) + u32::from(b.slow) <= u32::from(b.calls)
                    })
            }
        };
        let valid = window_valid
            && (!self.probing || self.phase == Phase::HalfOpen)
            && (!self.forced || self.phase == Phase::Open)
            && u32::from(self.streak) <= MAX_PROBES
            && self.step <= MAX_BACKOFF_STEP;
        if valid {
            Ok(())
        } else {
            Err(DecodeError::Invalid)
        }
    }

    pub(crate) fn capture(
        core: Core,
        policy: &Policy,
        counters: Counters,
        window: WindowSnapshot,
        now: Instant,
    ) -> Snapshot {
        let remaining = match core.phase() {
            Phase::Open if !core.forced() => core.remaining(policy, now),
            Phase::HalfOpen if core.probe_out() => core
                .anchor
                .wrapping_add(policy.probe_lease())
                .since(now)
                .min(policy.probe_lease()),
            _ => Duration::ZERO,
        };
        Snapshot {
            phase: core.phase(),
            forced: core.forced(),
            probing: core.probe_out(),
            strikes: core.strikes(),
            streak: core.streak(),
            step: core.step(),
            remaining,
            counters,
            window,
        }
    }

    /// The state this snapshot describes, as of `now`, for a breaker following `policy`.
    /// Values the policy cannot hold (more strikes than its trip count, more probe
    /// failures or successes than its half-open rule counts before deciding) are clamped
    /// below the threshold; the next generation after `current`'s makes every permit granted
    /// before it stale. `current`'s shadow mode is kept: a mode, not a state the snapshot
    /// holds.
    pub(crate) fn resume(&self, policy: &Policy, current: Core, now: Instant) -> Core {
        let gen = current.gen();
        let below = |v: u8, limit: u32| u32::from(v).min(limit.saturating_sub(1)) as u8;
        let step = self.step.min(MAX_BACKOFF_STEP);
        let anchor = match self.phase {
            Phase::Open if !self.forced => now.wrapping_add(self.remaining).wrapping_sub(policy.cooldown_at(step)),
            Phase::HalfOpen if self.probing => now
                .wrapping_add(self.remaining.min(policy.probe_lease()))
                .wrapping_sub(policy.probe_lease()),
            _ => now,
        };
        let mut core = Core::from_fields(
            self.phase,
            self.probing && self.phase == Phase::HalfOpen,
            self.forced && self.phase == Phase::Open,
            match self.phase {
                Phase::Closed => below(self.strikes, policy.trip()),
                Phase::HalfOpen => below(self.strikes, policy.probe_failures_to_open()),
                Phase::Open => 0,
            },
            if self.phase == Phase::HalfOpen {
                below(self.streak, policy.probe_successes_to_close())
            } else {
                0
            },
            step,
            gen.wrapping_add(1),
            anchor,
        );
        core.set_shadow(current.shadow());
        core
    }
}

impl<O: Observer> Breaker<O> {
    /// The state, counters and window as of `now`, to store across a reboot.
    pub fn snapshot(&self, now: Instant) -> Snapshot {
        let core = self.core.settled(&self.policy, now);
        let window = window::save(self.observer(), &self.policy, core, now);
        Snapshot::capture(core, &self.policy, self.counters(), window, now)
    }

    /// Takes the state, counters and window of `snapshot` as of `now`: an open breaker's
    /// cooldown resumes with the time that was left, a closed one's window with its samples
    /// (none if the snapshot's window is of another kind than the policy's), a half-open
    /// one's probe successes and failures where it left off. Permits granted
    /// before become stale.
    pub fn restore(&mut self, snapshot: &Snapshot, now: Instant) {
        self.core = snapshot.resume(&self.policy, self.core, now);
        self.set_counters(snapshot.counters);
        window::load(self.observer(), &self.policy, self.core, &snapshot.window, now);
    }
}

impl<O: ?Sized + Observer, P: crate::PolicyStore, S: crate::counts::CountStore> SharedBreaker<O, P, S> {
    /// The state, counters and window as of `now`, to store across a reboot.
    pub fn snapshot(&self, now: Instant) -> Snapshot {
        let policy = self.policy();
        let core = self.load_core().settled(&policy, now);
        let window = window::save(self.observer(), &policy, core, now);
        Snapshot::capture(core, &policy, self.counters(), window, now)
    }

    /// Takes the state, counters and window of `snapshot` as of `now`: an open breaker's
    /// cooldown resumes with the time that was left, a closed one's window with its samples
    /// (none if the snapshot's window is of another kind than the policy's), a half-open
    /// one's probe successes and failures where it left off. Meant for
    /// start-up, before the breaker is in use; permits granted before become stale.
    pub fn restore(&self, snapshot: &Snapshot, now: Instant) {
        let policy = self.policy();
        let core = snapshot.resume(&policy, self.load_core(), now);
        // The window first: a call let through by the new state finds it in place.
        window::load(self.observer(), &policy, core, &snapshot.window, now);
        self.store_core(core, &snapshot.counters);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn round_trips() {
        let s = Snapshot {
            phase: Phase::Open,
            forced: false,
            probing: false,
            strikes: 0,
            streak: 0,
            step: 3,
            remaining: Duration::from_secs(17),
            counters: Counters {
                calls: 1,
                successes: 2,
                failures: 3,
                neutrals: 4,
                skips: 5,
                trips: 6,
                probes: 7,
                lease_expiries: u32::MAX,
                ..Counters::ZERO
            },
            window: WindowSnapshot::None,
        };
        assert_eq!(Snapshot::from_bytes(&s.to_bytes()), Ok(s));
        let closed = Snapshot {
            phase: Phase::Closed,
            step: 0,
            remaining: Duration::ZERO,
            window: WindowSnapshot::Calls {
                len: 51,
                failures: 1 << 50 | 1,
                slow: 0b110,
            },
            ..s
        };
        assert_eq!(Snapshot::from_bytes(&closed.to_bytes()), Ok(closed));
        let mut buckets = [Bucket::default(); WINDOW_BUCKETS as usize];
        buckets[0] = Bucket {
            calls: 1023,
            failures: 1000,
            slow: 23,
        };
        buckets[9].calls = 1;
        let timed = Snapshot {
            window: WindowSnapshot::Time { buckets },
            ..closed
        };
        assert_eq!(Snapshot::from_bytes(&timed.to_bytes()), Ok(timed));
    }

    #[test]
    fn rejects_bad_bytes_with_the_right_error() {
        let good = Snapshot::capture(
            Core::INITIAL,
            &Policy::new(3, Duration::from_secs(1)),
            Counters::ZERO,
            WindowSnapshot::None,
            Instant::ZERO,
        )
        .to_bytes();
        assert_eq!(Snapshot::from_bytes(&good[..87]), Err(DecodeError::WrongLength(87)));
        assert_eq!(Snapshot::from_bytes(&good[..47]), Err(DecodeError::WrongLength(47)));
        assert_eq!(Snapshot::from_bytes(&[]), Err(DecodeError::WrongLength(0)));
        // A version-2 header on version-1 length (and the reverse).
        assert_eq!(Snapshot::from_bytes(&good[..48]), Err(DecodeError::WrongLength(48)));
        let mut b = good;
        b[0] = b'X';
        assert_eq!(Snapshot::from_bytes(&b), Err(DecodeError::BadMagic));
        let mut b = good;
        b[2] = 3;
        assert_eq!(Snapshot::from_bytes(&b), Err(DecodeError::UnsupportedVersion(3)));
        let mut b = good;
        b[2] = 1;
        assert_eq!(Snapshot::from_bytes(&b), Err(DecodeError::WrongLength(88)));
        let mut b = good;
        b[20] ^= 1;
        assert_eq!(Snapshot::from_bytes(&b), Err(DecodeError::Checksum));
        let resealed = |mut b: [u8; Snapshot::LEN]| {
            let crc = crc32(&b[..84]);
            b[84..].copy_from_slice(&crc.to_le_bytes());
            Snapshot::from_bytes(&b)
        };
        let mut b = good;
        b[3] = 3;
        assert_eq!(resealed(b), Err(DecodeError::Invalid));
        // A window kind that does not exist, a window outside the closed phase, a count
        // window's bit above its length, a failure that is also slow, a time bucket with
        // more failures than calls.
        for (at, value) in [(7, 3u8), (60, 52), (61, 1)] {
            let mut b = good;
            b[7] = 1;
            b[at] = value;
            assert_eq!(resealed(b), Err(DecodeError::Invalid), "byte {at} = {value}");
        }
        let mut b = good;
        b[7] = 1;
        b[60] = 2;
        b[44] = 0b100;
        assert_eq!(resealed(b), Err(DecodeError::Invalid));
        b[44] = 0b01;
        b[52] = 0b01;
        assert_eq!(resealed(b), Err(DecodeError::Invalid));
        b[52] = 0b10;
        assert!(resealed(b).is_ok());
        b[3] = 1; // open, with a window
        assert_eq!(resealed(b), Err(DecodeError::Invalid));
        let mut b = good;
        b[7] = 2;
        b[44..48].copy_from_slice(&(2u32 | 3 << 10).to_le_bytes());
        assert_eq!(resealed(b), Err(DecodeError::Invalid));
        b[44..48].copy_from_slice(&(3u32 | 2 << 10 | 1 << 20).to_le_bytes());
        assert!(resealed(b).is_ok());
        b[47] |= 0x40; // bit 30
        assert_eq!(resealed(b), Err(DecodeError::Invalid));
    }

    /// A version-1 snapshot, byte for byte as the version-1 encoder (the release before
    /// windows) wrote it for an open breaker at backoff step 2 with 12 s left and some
    /// counters: still read, with no window.
    const V1: [u8; 48] = [
        0x43, 0x42, 0x01, 0x01, 0x00, 0x00, 0x02, 0x00, 0xe0, 0x2e, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x07, 0x00,
        0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb1, 0xc8, 0xd0, 0xbc,
    ];

    #[test]
    fn version_one_is_still_read() {
        let mut v1 = V1;
        let crc = crc32(&v1[..44]);
        assert_eq!(v1[44..], crc.to_le_bytes(), "the committed bytes carry their CRC");
        let s = Snapshot::from_bytes(&v1).unwrap();
        assert_eq!(
            s,
            Snapshot {
                phase: Phase::Open,
                forced: false,
                probing: false,
                strikes: 0,
                streak: 0,
                step: 2,
                remaining: Duration::from_secs(12),
                counters: Counters {
                    calls: 10,
                    successes: 7,
                    failures: 3,
                    neutrals: 0,
                    skips: 5,
                    trips: 2,
                    probes: 1,
                    lease_expiries: 0,
                    ..Counters::ZERO
                },
                window: WindowSnapshot::None,
            }
        );
        // Re-encoded, it is a version-2 snapshot of the same state.
        assert_eq!(Snapshot::from_bytes(&s.to_bytes()), Ok(s));
        // Version 1 has no window byte: a 1 there is invalid, not a window.
        v1[7] = 1;
        let crc = crc32(&v1[..44]);
        v1[44..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Snapshot::from_bytes(&v1), Err(DecodeError::Invalid));
    }
}
