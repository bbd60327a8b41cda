//! A breaker's state and counters as 48 bytes that survive a reboot.
//!
//! A monotonic clock starts again at zero on boot, so a snapshot stores the *remaining*
//! cooldown (or probe lease), never a timestamp; restoring resumes the wait where it left
//! off. Layout (little-endian):
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..2   | magic `b"CB"` |
//! | 2      | format version, [`Snapshot::VERSION`] |
//! | 3      | phase (0 closed, 1 open, 2 half-open) + flags: bit 2 probing, bit 3 forced |
//! | 4, 5, 6| strikes, probe streak, backoff step |
//! | 7      | reserved, 0 |
//! | 8..12  | remaining wait in ms (open: cooldown; half-open probing: lease) |
//! | 12..44 | counters: calls, successes, failures, neutrals, skips, trips, probes, lease expiries |
//! | 44..48 | CRC-32 (IEEE) of bytes 0..44 |

use core::fmt;

use crate::machine::Core;
use crate::policy::{MAX_BACKOFF_STEP, MAX_PROBES};
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
    /// Consecutive strikes (closed).
    pub strikes: u8,
    /// Consecutive probe successes (half-open), at most 15.
    pub streak: u8,
    /// Backoff step: re-opens since the last close, at most 15.
    pub step: u8,
    /// Open: the wait left before a probe. Half-open with a probe out: the lease left.
    pub remaining: Duration,
    /// The counters.
    pub counters: Counters,
}

/// Why bytes could not be decoded as a [`Snapshot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer than [`Snapshot::LEN`] bytes (or more).
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
            DecodeError::WrongLength(n) => write!(f, "snapshot must be {} bytes, got {n}", Snapshot::LEN),
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

impl Snapshot {
    /// The encoded length in bytes.
    pub const LEN: usize = 48;
    /// The format version written.
    pub const VERSION: u8 = 1;

    /// Encodes into [`Snapshot::LEN`] bytes.
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
        let crc = crc32(&b[..44]);
        b[44..48].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes bytes written by [`Snapshot::to_bytes`]. Truncated, corrupt or foreign
    /// bytes give a [`DecodeError`], never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
        let b: &[u8; Snapshot::LEN] = bytes.try_into().map_err(|_| DecodeError::WrongLength(bytes.len()))?;
        if b[0..2] != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        if b[2] != Self::VERSION {
            return Err(DecodeError::UnsupportedVersion(b[2]));
        }
        let (body, tail) = b.split_at(44);
        if crc32(body) != u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) {
            return Err(DecodeError::Checksum);
        }
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let phase = match b[3] & 3 {
            0 => Phase::Closed,
            1 => Phase::Open,
            2 => Phase::HalfOpen,
            _ => return Err(DecodeError::Invalid),
        };
        let probing = b[3] & 4 != 0;
        let forced = b[3] & 8 != 0;
        let remaining = word(8);
        let valid = b[3] & 0xF0 == 0
            && b[7] == 0
            && (!probing || phase == Phase::HalfOpen)
            && (!forced || phase == Phase::Open)
            && u32::from(b[5]) <= MAX_PROBES
            && b[6] <= MAX_BACKOFF_STEP
            && remaining <= Duration::MAX.as_millis();
        if !valid {
            return Err(DecodeError::Invalid);
        }
        Ok(Snapshot {
            phase,
            forced,
            probing,
            strikes: b[4],
            streak: b[5],
            step: b[6],
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
            },
        })
    }

    pub(crate) fn capture(core: Core, policy: &Policy, counters: Counters, now: Instant) -> Snapshot {
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
        }
    }

    /// The state this snapshot describes, as of `now`, for a breaker following `policy`.
    /// Values the policy cannot hold (more strikes than its trip count) are clamped below
    /// the threshold; generation `gen` makes every permit granted before it stale.
    pub(crate) fn resume(&self, policy: &Policy, gen: u16, now: Instant) -> Core {
        let below = |v: u8, limit: u32| u32::from(v).min(limit.saturating_sub(1)) as u8;
        let step = self.step.min(MAX_BACKOFF_STEP);
        let anchor = match self.phase {
            Phase::Open if !self.forced => now.wrapping_add(self.remaining).wrapping_sub(policy.cooldown_at(step)),
            Phase::HalfOpen if self.probing => now
                .wrapping_add(self.remaining.min(policy.probe_lease()))
                .wrapping_sub(policy.probe_lease()),
            _ => now,
        };
        Core::from_fields(
            self.phase,
            self.probing && self.phase == Phase::HalfOpen,
            self.forced && self.phase == Phase::Open,
            if self.phase == Phase::Closed {
                below(self.strikes, policy.trip())
            } else {
                0
            },
            if self.phase == Phase::HalfOpen {
                below(self.streak, policy.probes_to_close())
            } else {
                0
            },
            step,
            gen.wrapping_add(1),
            anchor,
        )
    }
}

impl<O: Observer> Breaker<O> {
    /// The state and counters as of `now`, to store across a reboot.
    pub fn snapshot(&self, now: Instant) -> Snapshot {
        Snapshot::capture(self.core.settled(&self.policy, now), &self.policy, self.counters, now)
    }

    /// Takes the state and counters of `snapshot` as of `now`: an open breaker's cooldown
    /// resumes with the time that was left. Permits granted before become stale.
    pub fn restore(&mut self, snapshot: &Snapshot, now: Instant) {
        self.core = snapshot.resume(&self.policy, self.core.gen(), now);
        self.counters = snapshot.counters;
    }
}

impl<O: ?Sized + Observer> SharedBreaker<O> {
    /// The state and counters as of `now`, to store across a reboot.
    pub fn snapshot(&self, now: Instant) -> Snapshot {
        let core = self.load_core().settled(self.policy(), now);
        Snapshot::capture(core, self.policy(), self.counters(), now)
    }

    /// Takes the state and counters of `snapshot` as of `now`: an open breaker's cooldown
    /// resumes with the time that was left. Meant for start-up, before the breaker is in use;
    /// permits granted before become stale.
    pub fn restore(&self, snapshot: &Snapshot, now: Instant) {
        let core = snapshot.resume(self.policy(), self.load_core().gen(), now);
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
            },
        };
        assert_eq!(Snapshot::from_bytes(&s.to_bytes()), Ok(s));
    }

    #[test]
    fn rejects_bad_bytes_with_the_right_error() {
        let good = Snapshot::capture(
            Core::INITIAL,
            &Policy::new(3, Duration::from_secs(1)),
            Counters::ZERO,
            Instant::ZERO,
        )
        .to_bytes();
        assert_eq!(Snapshot::from_bytes(&good[..47]), Err(DecodeError::WrongLength(47)));
        assert_eq!(Snapshot::from_bytes(&[]), Err(DecodeError::WrongLength(0)));
        let mut b = good;
        b[0] = b'X';
        assert_eq!(Snapshot::from_bytes(&b), Err(DecodeError::BadMagic));
        let mut b = good;
        b[2] = 2;
        assert_eq!(Snapshot::from_bytes(&b), Err(DecodeError::UnsupportedVersion(2)));
        let mut b = good;
        b[20] ^= 1;
        assert_eq!(Snapshot::from_bytes(&b), Err(DecodeError::Checksum));
        let mut b = good;
        b[3] = 3;
        let crc = crc32(&b[..44]);
        b[44..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(Snapshot::from_bytes(&b), Err(DecodeError::Invalid));
    }
}
