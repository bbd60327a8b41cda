//! Snapshots survive a reboot, and the decoder's decision on any bytes is the one the
//! format's layout (`breaker_core::Snapshot`'s documentation) prescribes: exactly which of
//! `Ok` and `Err`, and which `DecodeError`.

use breaker_core::{
    Breaker, Counters, DecodeError, Duration, Instant, ManualClock, Outcome, Phase, Policy, SharedBreaker, Snapshot,
    State, Verdict,
};
use proptest::prelude::*;

static POLICY: Policy = Policy::new(3, Duration::from_secs(60)).with_probe_lease(Duration::from_secs(20));

fn s(secs: u32) -> Instant {
    Instant::from_millis(secs * 1000)
}

#[test]
fn a_reboot_resumes_the_cooldown_with_the_time_that_was_left() {
    // Before the reboot: tripped at 1000 s of uptime, snapshot taken 45 s later.
    let before = SharedBreaker::new(&POLICY);
    for _ in 0..3 {
        before
            .try_acquire(&breaker_core::ManualClock::new(s(1000)))
            .unwrap()
            .failure(breaker_core::Verdict::Strike);
    }
    let flash: [u8; Snapshot::LEN] = before.snapshot(s(1045)).to_bytes();

    // After: the monotonic clock starts again at zero.
    let after = SharedBreaker::new(&POLICY);
    after.restore(&Snapshot::from_bytes(&flash).unwrap(), s(0));
    assert_eq!(
        after.state(s(0)),
        State::Open {
            remaining: Duration::from_secs(15),
            forced: false
        }
    );
    assert!(!after.would_allow(s(14)), "not forgotten");
    assert!(after.would_allow(s(15)), "not started over");
    assert_eq!(after.counters(), before.counters());
}

#[test]
fn a_probe_out_at_the_reboot_keeps_its_lease_and_lapses_backdated() {
    let mut b = Breaker::new(POLICY);
    for _ in 0..3 {
        let p = b.try_acquire(s(0)).unwrap();
        b.record(p, Outcome::STRIKE, s(0));
    }
    let _lost_in_the_reboot = b.try_acquire(s(60)).unwrap();
    let bytes = b.snapshot(s(65)).to_bytes(); // 15 s of lease left
    let mut rebooted = Breaker::new(POLICY);
    rebooted.restore(&Snapshot::from_bytes(&bytes).unwrap(), s(0));
    assert_eq!(
        rebooted.state(s(14)),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    // Lease ends at 15 s; the re-open counts from there: 60 s cooldown -> probe at 75 s.
    assert_eq!(
        rebooted.state(s(15)),
        State::Open {
            remaining: Duration::from_secs(60),
            forced: false
        }
    );
    assert!(rebooted.try_acquire(s(75)).unwrap().is_probe());
}

#[test]
fn forced_and_backoff_states_round_trip() {
    let p = Policy::new(1, Duration::from_secs(10)).with_backoff(3, Duration::from_secs(500));
    let mut b = Breaker::new(p);
    let c = b.try_acquire(s(0)).unwrap();
    b.record(c, Outcome::STRIKE, s(0));
    let probe = b.try_acquire(s(10)).unwrap();
    b.record(probe, Outcome::STRIKE, s(10)); // step 1: 30 s
    let snap = b.snapshot(s(20));
    assert_eq!(
        (snap.phase, snap.step, snap.remaining),
        (Phase::Open, 1, Duration::from_secs(20))
    );
    let mut again = Breaker::new(p);
    again.restore(&Snapshot::from_bytes(&snap.to_bytes()).unwrap(), s(0));
    assert_eq!(
        again.state(s(0)),
        State::Open {
            remaining: Duration::from_secs(20),
            forced: false
        }
    );

    b.force_open(s(30));
    let mut forced = Breaker::new(p);
    forced.restore(&Snapshot::from_bytes(&b.snapshot(s(40)).to_bytes()).unwrap(), s(0));
    assert_eq!(
        forced.state(s(1_000_000)),
        State::Open {
            remaining: Duration::ZERO,
            forced: true
        }
    );
}

#[test]
fn restoring_into_a_stricter_policy_clamps_instead_of_tripping() {
    let lenient = Policy::new(10, Duration::from_secs(1));
    let mut b = Breaker::new(lenient);
    for _ in 0..7 {
        let p = b.try_acquire(s(0)).unwrap();
        b.record(p, Outcome::STRIKE, s(0));
    }
    let mut strict = Breaker::new(Policy::new(3, Duration::from_secs(1)));
    strict.restore(&b.snapshot(s(0)), s(0));
    assert_eq!(strict.state(s(0)), State::Closed { strikes: 2 });
}

#[test]
fn each_kind_of_damage_has_its_own_error() {
    let good = SharedBreaker::new(&POLICY).snapshot(s(0)).to_bytes();
    assert_eq!(Snapshot::from_bytes(&good[..10]), Err(DecodeError::WrongLength(10)));
    let mut bytes = good;
    bytes[2] = 9;
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::UnsupportedVersion(9)));
    let mut bytes = good;
    bytes[30] ^= 0x40;
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::Checksum));
    assert_eq!(
        DecodeError::Checksum.to_string(),
        "snapshot checksum mismatch: corrupt bytes"
    );
}

#[test]
fn restoring_clamps_the_backoff_step_before_resuming_the_wait() {
    // A hand-built snapshot past the last backoff step: the wait left resumes exactly, at
    // the step the breaker can hold (a cooldown still growing at step 15 here).
    let growing = Policy::new(1, Duration::from_millis(1)).with_backoff(2, Duration::MAX);
    let snap = Snapshot {
        phase: Phase::Open,
        forced: false,
        probing: false,
        strikes: 0,
        streak: 0,
        step: 200,
        remaining: Duration::from_secs(5),
        counters: Counters::ZERO,
    };
    let mut b = Breaker::new(growing);
    b.restore(&snap, s(100));
    let expected = State::Open {
        remaining: Duration::from_secs(5),
        forced: false,
    };
    assert_eq!(b.state(s(100)), expected);
    assert_eq!(b.snapshot(s(100)).step, 15);
    static GROWING: Policy = Policy::new(1, Duration::from_millis(1)).with_backoff(2, Duration::MAX);
    let shared = SharedBreaker::new(&GROWING);
    shared.restore(&snap, s(100));
    assert_eq!(shared.state(s(100)), expected);
}

#[test]
fn restore_makes_every_earlier_permit_stale() {
    // A permit from before the restore (before the reboot) must not count: its strike
    // would otherwise add to the restored strikes and trip the breaker.
    let mut b = Breaker::new(POLICY);
    let before = b.try_acquire(s(0)).unwrap();
    let p = b.try_acquire(s(0)).unwrap();
    b.record(p, Outcome::STRIKE, s(0));
    let p = b.try_acquire(s(0)).unwrap();
    b.record(p, Outcome::STRIKE, s(0));
    let snap = b.snapshot(s(0));
    b.restore(&snap, s(1));
    assert!(b.is_stale(&before, s(1)));
    b.record(before, Outcome::STRIKE, s(1));
    assert_eq!(b.state(s(1)), State::Closed { strikes: 2 });

    let shared = SharedBreaker::new(&POLICY);
    let clock = ManualClock::new(s(0));
    let before = shared.try_acquire(&clock).unwrap();
    shared.try_acquire(&clock).unwrap().failure(Verdict::Strike);
    shared.try_acquire(&clock).unwrap().failure(Verdict::Strike);
    shared.restore(&shared.snapshot(s(0)), s(0));
    assert!(before.is_stale());
    before.failure(Verdict::Strike);
    assert_eq!(shared.state(s(0)), State::Closed { strikes: 2 });

    // Restoring a half-open snapshot: the probe out before the reboot no longer decides.
    let mut b = Breaker::new(POLICY);
    for _ in 0..3 {
        let p = b.try_acquire(s(0)).unwrap();
        b.record(p, Outcome::STRIKE, s(0));
    }
    let probe = b.try_acquire(s(60)).unwrap();
    let snap = b.snapshot(s(61));
    b.restore(&snap, s(61));
    assert!(b.is_stale(&probe, s(61)));
    b.record(probe, Outcome::Success, s(62));
    assert_eq!(
        b.state(s(62)),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
}

#[test]
fn a_restored_probe_lease_is_capped_by_the_policy() {
    // Written by a breaker with a 60 s lease, 50 s of it left; restored under a 20 s lease.
    let lenient = Policy::new(3, Duration::from_secs(60)).with_probe_lease(Duration::from_secs(60));
    let mut b = Breaker::new(lenient);
    for _ in 0..3 {
        let p = b.try_acquire(s(0)).unwrap();
        b.record(p, Outcome::STRIKE, s(0));
    }
    let _probe = b.try_acquire(s(60)).unwrap();
    let snap = b.snapshot(s(70));
    assert_eq!(snap.remaining, Duration::from_secs(50));
    let mut strict = Breaker::new(POLICY);
    strict.restore(&snap, s(1000));
    assert_eq!(
        strict.state(s(1019)),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    // The lease ends 20 s after the restore, and the re-open is backdated there.
    assert_eq!(
        strict.state(s(1020)),
        State::Open {
            remaining: Duration::from_secs(60),
            forced: false
        }
    );
    let shared = SharedBreaker::new(&POLICY);
    shared.restore(&snap, s(1000));
    assert_eq!(shared.phase(s(1019)), Phase::HalfOpen);
    assert_eq!(shared.phase(s(1020)), Phase::Open);
}

// ---- the decoder's decisions, from the format's layout ------------------------------------

/// CRC-32 (IEEE 802.3, reflected), table-driven: written apart from the crate's own.
fn crc32(bytes: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        (0..256u32)
            .map(|n| (0..8).fold(n, |c, _| if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 }))
            .collect()
    });
    !bytes
        .iter()
        .fold(!0u32, |c, &b| table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8))
}

/// `body` (the first 44 bytes) with its checksum appended.
fn sealed(body: &[u8; 44]) -> [u8; Snapshot::LEN] {
    let mut b = [0u8; Snapshot::LEN];
    b[..44].copy_from_slice(body);
    b[44..].copy_from_slice(&crc32(body).to_le_bytes());
    b
}

fn le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// What decoding `b` must give, from the layout: the length, then the magic, the version,
/// the checksum, and only then the fields, each within its range (phase 0 to 2, no flag
/// but `probing` in half-open and `forced` in open, no unknown flag bits, streak and step
/// at most 15, the reserved byte zero, the wait at most `Duration::MAX`).
fn expected(b: &[u8]) -> Result<Snapshot, DecodeError> {
    if b.len() != 48 {
        return Err(DecodeError::WrongLength(b.len()));
    }
    if b[0] != b'C' || b[1] != b'B' {
        return Err(DecodeError::BadMagic);
    }
    if b[2] != 1 {
        return Err(DecodeError::UnsupportedVersion(b[2]));
    }
    if crc32(&b[..44]) != le(b, 44) {
        return Err(DecodeError::Checksum);
    }
    let phase = match b[3] % 4 {
        0 => Phase::Closed,
        1 => Phase::Open,
        2 => Phase::HalfOpen,
        _ => return Err(DecodeError::Invalid),
    };
    let probing = b[3] / 4 % 2 == 1;
    let forced = b[3] / 8 % 2 == 1;
    let unknown_flags = b[3] / 16 != 0;
    if unknown_flags
        || (probing && phase != Phase::HalfOpen)
        || (forced && phase != Phase::Open)
        || b[5] > 15
        || b[6] > 15
        || b[7] != 0
        || le(b, 8) > (1 << 30) - 1
    {
        return Err(DecodeError::Invalid);
    }
    Ok(Snapshot {
        phase,
        forced,
        probing,
        strikes: b[4],
        streak: b[5],
        step: b[6],
        remaining: Duration::from_millis(le(b, 8)),
        counters: Counters {
            calls: le(b, 12),
            successes: le(b, 16),
            failures: le(b, 20),
            neutrals: le(b, 24),
            skips: le(b, 28),
            trips: le(b, 32),
            probes: le(b, 36),
            lease_expiries: le(b, 40),
        },
    })
}

/// A valid body: "CB", version 1, closed, everything zero.
fn zero_body() -> [u8; 44] {
    let mut body = [0u8; 44];
    body[0] = b'C';
    body[1] = b'B';
    body[2] = 1;
    body
}

#[test]
fn the_checksum_is_crc32_ieee() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    let snap = Breaker::new(POLICY).snapshot(s(0)).to_bytes();
    assert_eq!(le(&snap, 44), crc32(&snap[..44]));
}

#[test]
fn all_zero_bytes_are_not_a_snapshot() {
    assert_eq!(Snapshot::from_bytes(&[0u8; 48]), Err(DecodeError::BadMagic));
    assert_eq!(Snapshot::from_bytes(&[0xFFu8; 48]), Err(DecodeError::BadMagic));
    assert_eq!(Snapshot::from_bytes(&[0u8; 0]), Err(DecodeError::WrongLength(0)));
    assert_eq!(Snapshot::from_bytes(&[0u8; 49]), Err(DecodeError::WrongLength(49)));
    // The magic and version, then zeros: the checksum of that is not zero.
    let mut bytes = [0u8; 48];
    bytes[..44].copy_from_slice(&zero_body());
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::Checksum));
    // Sealed, all-zero fields are a fresh closed breaker.
    assert_eq!(
        Snapshot::from_bytes(&sealed(&zero_body())),
        Ok(Breaker::new(POLICY).snapshot(s(0)))
    );
}

#[test]
fn checks_run_in_the_layouts_order() {
    let mut body = zero_body();
    body[6] = 99; // an invalid field...
    let mut bytes = sealed(&body);
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::Invalid));
    bytes[44] ^= 1; // ...behind a bad checksum...
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::Checksum));
    bytes[2] = 7; // ...behind a foreign version...
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::UnsupportedVersion(7)));
    bytes[1] = b'X'; // ...behind a bad magic...
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::BadMagic));
    assert_eq!(Snapshot::from_bytes(&bytes[..47]), Err(DecodeError::WrongLength(47)));
}

#[test]
fn every_phase_and_flag_byte_is_decided() {
    // All 256 values of byte 3, sealed: exactly closed, open, half-open, probing
    // half-open, and forced open are valid.
    let mut valid = Vec::new();
    for v in 0..=255u8 {
        let mut body = zero_body();
        body[3] = v;
        let bytes = sealed(&body);
        let got = Snapshot::from_bytes(&bytes);
        assert_eq!(got, expected(&bytes), "byte 3 = {v:#04x}");
        if let Ok(snap) = got {
            valid.push((v, snap.phase, snap.probing, snap.forced));
        }
    }
    assert_eq!(
        valid,
        [
            (0, Phase::Closed, false, false),
            (1, Phase::Open, false, false),
            (2, Phase::HalfOpen, false, false),
            (6, Phase::HalfOpen, true, false),
            (9, Phase::Open, false, true),
        ]
    );
}

#[test]
fn every_field_is_rejected_just_past_its_range() {
    // (byte, value, valid)
    let cases: &[(usize, &[u8], bool)] = &[
        (4, &[255], true), // strikes: any count (trip is at most 255)
        (5, &[15], true),  // streak
        (5, &[16], false),
        (5, &[255], false),
        (6, &[15], true), // backoff step
        (6, &[16], false),
        (6, &[255], false),
        (7, &[0], true), // reserved
        (7, &[1], false),
        (7, &[0x80], false),
        (8, &((1u32 << 30) - 1).to_le_bytes(), true), // the wait: at most Duration::MAX
        (8, &(1u32 << 30).to_le_bytes(), false),
        (8, &u32::MAX.to_le_bytes(), false),
        (12, &u32::MAX.to_le_bytes(), true), // counters: any value
        (40, &u32::MAX.to_le_bytes(), true),
    ];
    for &(at, value, valid) in cases {
        for phase_byte in [0u8, 1, 2, 6, 9] {
            let mut body = zero_body();
            body[3] = phase_byte;
            body[at..at + value.len()].copy_from_slice(value);
            let bytes = sealed(&body);
            let got = Snapshot::from_bytes(&bytes);
            assert_eq!(got.is_ok(), valid, "byte {at} = {value:?} (phase byte {phase_byte})");
            assert_eq!(got, expected(&bytes), "byte {at} = {value:?}");
            if !valid {
                assert_eq!(got, Err(DecodeError::Invalid));
            }
        }
    }
}

/// A snapshot a breaker really writes, in some state.
fn written(state: u8, secs: u32) -> [u8; Snapshot::LEN] {
    let mut b = Breaker::new(POLICY.with_backoff(2, Duration::from_mins(10)));
    let fail = |b: &mut Breaker, at| {
        let p = b.try_acquire(s(at)).unwrap();
        b.record(p, Outcome::STRIKE, s(at));
    };
    for _ in 0..state.min(3) {
        fail(&mut b, 0);
    }
    if state >= 4 {
        let _probe = b.try_acquire(s(60)).unwrap();
    }
    if state >= 5 {
        b.force_open(s(61));
    }
    b.snapshot(s(secs)).to_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(tests::cases(100_000)))]

    /// 100,000 arbitrary byte strings, most of the right length: decided as the layout
    /// says (almost all of them bad magic), never a panic.
    #[test]
    fn random_bytes_are_decided_by_the_layout(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            prop::collection::vec(any::<u8>(), 48..=48),
        ]
    ) {
        prop_assert_eq!(Snapshot::from_bytes(&bytes), expected(&bytes));
    }

    /// 100,000 sealed bodies of arbitrary field bytes (past the magic, version and
    /// checksum, into the field checks): decoded exactly when every field is in range,
    /// `Invalid` otherwise; a decoded snapshot encodes back to the same bytes.
    #[test]
    fn arbitrary_fields_are_decided_exactly(
        flags in prop_oneof![0u8..16, any::<u8>()],
        small in prop::array::uniform4(prop_oneof![0u8..17, any::<u8>()]),
        wait in prop_oneof![0u32..100_000, ((1u32 << 30) - 2)..((1u32 << 30) + 1), any::<u32>()],
        counters in prop::array::uniform32(any::<u8>()),
    ) {
        let mut body = zero_body();
        body[3] = flags;
        body[4..8].copy_from_slice(&small);
        body[8..12].copy_from_slice(&wait.to_le_bytes());
        body[12..44].copy_from_slice(&counters);
        let bytes = sealed(&body);
        let got = Snapshot::from_bytes(&bytes);
        prop_assert_eq!(got, expected(&bytes));
        if let Ok(snap) = got {
            prop_assert_eq!(snap.to_bytes(), bytes);
        }
    }

    /// 100,000 real snapshots damaged in 1 to 4 bits anywhere (the magic and checksum
    /// included): always an error, the one the layout gives (CRC-32 catches every error of
    /// up to 4 bits at this length); and in 5 to 12 bits, or in a burst of up to 32 bits:
    /// decided as the layout says.
    #[test]
    fn multi_bit_corruption_is_caught(
        state in 0u8..6,
        secs in 0u32..200,
        bits in prop::collection::btree_set(0usize..(Snapshot::LEN * 8), 1..=12),
        burst_at in 0usize..(Snapshot::LEN * 8 - 32),
        burst in any::<u32>(),
    ) {
        let good = written(state, secs);
        let mut bytes = good;
        for &bit in &bits {
            bytes[bit / 8] ^= 1 << (bit % 8);
        }
        let got = Snapshot::from_bytes(&bytes);
        prop_assert_eq!(got, expected(&bytes));
        if bits.len() <= 4 {
            prop_assert!(got.is_err(), "{} flipped bits passed", bits.len());
        }
        // A burst: its first and last bits flipped, anything between.
        let pattern = burst | 1 | 1 << 31;
        let mut bytes = good;
        for i in 0..32 {
            if pattern >> i & 1 == 1 {
                let bit = burst_at + i;
                bytes[bit / 8] ^= 1 << (bit % 8);
            }
        }
        let got = Snapshot::from_bytes(&bytes);
        prop_assert!(got.is_err(), "a burst passed");
        prop_assert_eq!(got, expected(&bytes));
    }
}
