//! Snapshots survive a reboot, and the decoder's decision on any bytes is the one the
//! format's layout (`breaker_core::Snapshot`'s documentation) prescribes: exactly which of
//! `Ok` and `Err`, and which `DecodeError`.

use breaker_core::{
    Breaker, Bucket, Counters, DecodeError, Duration, Instant, ManualClock, Outcome, Phase, Policy, SharedBreaker,
    Snapshot, State, Verdict, WindowSnapshot,
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
    // The counters the format keeps; the changes of phase start again from zero.
    let kept = breaker_core::Counters {
        transitions: breaker_core::TransitionCounts::ZERO,
        ..before.counters()
    };
    assert_eq!(before.counters().transitions.closed_to_open, 1);
    assert_eq!(after.counters(), kept);
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
        window: WindowSnapshot::None,
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

/// The format decided from its documentation (shared with the snapshot fuzz target): its
/// own CRC, offsets and limits, for both versions.
#[allow(dead_code)]
#[path = "../../fuzz/src/snapshot_spec.rs"]
mod snapshot_spec;

use snapshot_spec::{Verdict as Layout, WindowFields, LEN_V1};

/// What decoding `b` must give, from the layout: the length, then the magic, the version,
/// the checksum, and only then the fields, each within its range.
fn expected(b: &[u8]) -> Result<Snapshot, DecodeError> {
    let f = match snapshot_spec::decide(b) {
        Layout::WrongLength(n) => return Err(DecodeError::WrongLength(n)),
        Layout::BadMagic => return Err(DecodeError::BadMagic),
        Layout::UnsupportedVersion(v) => return Err(DecodeError::UnsupportedVersion(v)),
        Layout::Checksum => return Err(DecodeError::Checksum),
        Layout::Invalid => return Err(DecodeError::Invalid),
        Layout::Valid(_, fields) => fields,
    };
    let [calls, successes, failures, neutrals, skips, trips, probes, lease_expiries] = f.counters;
    Ok(Snapshot {
        phase: [Phase::Closed, Phase::Open, Phase::HalfOpen][usize::from(f.phase)],
        forced: f.forced,
        probing: f.probing,
        strikes: f.strikes,
        streak: f.streak,
        step: f.step,
        remaining: Duration::from_millis(f.remaining_ms),
        counters: Counters {
            calls,
            successes,
            failures,
            neutrals,
            skips,
            trips,
            probes,
            lease_expiries,
            // The format keeps no more: the probes' outcomes and the changes of phase
            // restart at zero.
            ..Counters::ZERO
        },
        window: match f.window {
            WindowFields::None => WindowSnapshot::None,
            WindowFields::Calls { len, failures, slow } => WindowSnapshot::Calls { len, failures, slow },
            WindowFields::Time(buckets) => WindowSnapshot::Time {
                buckets: buckets.map(|[calls, failures, slow]| Bucket { calls, failures, slow }),
            },
        },
    })
}

/// The first 84 bytes of a valid version-2 snapshot: "CB", version 2, closed, everything
/// zero, no window.
fn zero_body() -> [u8; 84] {
    let mut body = [0u8; 84];
    body[..3].copy_from_slice(b"CB\x02");
    body
}

/// `body` with its checksum appended.
fn sealed(body: &[u8; 84]) -> [u8; Snapshot::LEN] {
    let mut b = [0u8; Snapshot::LEN];
    b[..84].copy_from_slice(body);
    snapshot_spec::seal(&mut b);
    b
}

/// A sealed version-1 snapshot (48 bytes) of the first 44 bytes of `body`.
fn sealed_v1(body: &[u8; 84]) -> [u8; LEN_V1] {
    let mut b = [0u8; LEN_V1];
    b[..44].copy_from_slice(&body[..44]);
    b[2] = 1;
    snapshot_spec::seal(&mut b);
    b
}

fn le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[test]
fn the_checksum_is_crc32_ieee() {
    assert_eq!(snapshot_spec::crc(b"123456789"), 0xCBF4_3926);
    let snap = Breaker::new(POLICY).snapshot(s(0)).to_bytes();
    assert_eq!(le(&snap, 84), snapshot_spec::crc(&snap[..84]));
}

#[test]
fn all_zero_bytes_are_not_a_snapshot() {
    for len in [LEN_V1, Snapshot::LEN] {
        assert_eq!(Snapshot::from_bytes(&vec![0u8; len]), Err(DecodeError::BadMagic));
        assert_eq!(Snapshot::from_bytes(&vec![0xFFu8; len]), Err(DecodeError::BadMagic));
    }
    assert_eq!(Snapshot::from_bytes(&[0u8; 0]), Err(DecodeError::WrongLength(0)));
    assert_eq!(Snapshot::from_bytes(&[0u8; 49]), Err(DecodeError::WrongLength(49)));
    assert_eq!(Snapshot::from_bytes(&[0u8; 89]), Err(DecodeError::WrongLength(89)));
    // The magic and version, then zeros: the checksum of that is not zero.
    let mut bytes = [0u8; Snapshot::LEN];
    bytes[..84].copy_from_slice(&zero_body());
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::Checksum));
    // Sealed, all-zero fields are a fresh closed breaker, in either version.
    let fresh = Ok(Breaker::new(POLICY).snapshot(s(0)));
    assert_eq!(Snapshot::from_bytes(&sealed(&zero_body())), fresh);
    assert_eq!(Snapshot::from_bytes(&sealed_v1(&zero_body())), fresh);
}

#[test]
fn a_length_must_be_its_versions() {
    // A version-1 header on 88 bytes and a version-2 header on 48, each sealed.
    let mut v1_long = sealed(&zero_body());
    v1_long[2] = 1;
    snapshot_spec::seal(&mut v1_long);
    assert_eq!(Snapshot::from_bytes(&v1_long), Err(DecodeError::WrongLength(88)));
    let mut v2_short = sealed_v1(&zero_body());
    v2_short[2] = 2;
    snapshot_spec::seal(&mut v2_short);
    assert_eq!(Snapshot::from_bytes(&v2_short), Err(DecodeError::WrongLength(48)));
}

#[test]
fn checks_run_in_the_layouts_order() {
    let mut body = zero_body();
    body[6] = 99; // an invalid field...
    let mut bytes = sealed(&body);
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::Invalid));
    bytes[84] ^= 1; // ...behind a bad checksum...
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::Checksum));
    bytes[2] = 7; // ...behind a foreign version...
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::UnsupportedVersion(7)));
    bytes[1] = b'X'; // ...behind a bad magic...
    assert_eq!(Snapshot::from_bytes(&bytes), Err(DecodeError::BadMagic));
    assert_eq!(Snapshot::from_bytes(&bytes[..87]), Err(DecodeError::WrongLength(87)));
}

#[test]
fn every_phase_and_flag_byte_is_decided() {
    // All 256 values of byte 3, sealed, in both versions: exactly closed, open, half-open,
    // probing half-open, and forced open are valid.
    for version in [1, 2] {
        let mut valid = Vec::new();
        for v in 0..=255u8 {
            let mut body = zero_body();
            body[3] = v;
            let got = if version == 1 {
                let bytes = sealed_v1(&body);
                let got = Snapshot::from_bytes(&bytes);
                assert_eq!(got, expected(&bytes), "version 1, byte 3 = {v:#04x}");
                got
            } else {
                let bytes = sealed(&body);
                let got = Snapshot::from_bytes(&bytes);
                assert_eq!(got, expected(&bytes), "byte 3 = {v:#04x}");
                got
            };
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
            ],
            "version {version}"
        );
    }
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
        (7, &[0], true), // the window kind (version 1: reserved)
        (7, &[3], false),
        (7, &[0x80], false),
        (8, &((1u32 << 30) - 1).to_le_bytes(), true), // the wait: at most Duration::MAX
        (8, &(1u32 << 30).to_le_bytes(), false),
        (8, &u32::MAX.to_le_bytes(), false),
        (12, &u32::MAX.to_le_bytes(), true), // counters: any value
        (40, &u32::MAX.to_le_bytes(), true),
        (44, &[1], false), // no window, yet window bytes
        (83, &[1], false),
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
            if at < 44 {
                let bytes = sealed_v1(&body);
                let got = Snapshot::from_bytes(&bytes);
                assert_eq!(
                    got.is_ok(),
                    valid,
                    "version 1: byte {at} = {value:?} (phase byte {phase_byte})"
                );
                assert_eq!(got, expected(&bytes), "version 1: byte {at} = {value:?}");
            }
        }
    }
}

#[test]
fn a_window_is_valid_only_when_closed_and_only_with_samples_its_kind_holds() {
    // (kind, window bytes, valid when closed)
    let count = |len: u8, failures: u64, slow: u64| {
        let mut w = [0u8; 40];
        w[..8].copy_from_slice(&failures.to_le_bytes());
        w[8..16].copy_from_slice(&slow.to_le_bytes());
        w[16] = len;
        w
    };
    let time = |bucket: u32| {
        let mut w = [0u8; 40];
        w[36..].copy_from_slice(&bucket.to_le_bytes());
        w
    };
    let cases = [
        (1, count(0, 0, 0), true),
        (1, count(51, (1 << 51) - 1, 0), true),
        (1, count(52, 0, 0), false),        // more samples than a count window holds
        (1, count(3, 0b1000, 0), false),    // a failure past the samples held
        (1, count(3, 0b001, 0b001), false), // a sample both failed and slow
        (1, count(3, 0b001, 0b110), true),
        (2, time(0), true),
        (2, time(3 | 2 << 10 | 1 << 20), true),  // 3 calls: 2 failures, 1 slow
        (2, time(3 | 2 << 10 | 2 << 20), false), // more failures and slow than calls
        (2, time(1 | 2 << 10), false),           // more failures than calls, none slow
        (2, time(1 << 30), false),               // bits above the three fields
    ];
    for (kind, window, closed_valid) in cases {
        for phase_byte in [0u8, 1, 2, 6, 9] {
            let mut body = zero_body();
            body[3] = phase_byte;
            body[7] = kind;
            body[44..].copy_from_slice(&window);
            let bytes = sealed(&body);
            let got = Snapshot::from_bytes(&bytes);
            assert_eq!(
                got.is_ok(),
                closed_valid && phase_byte == 0,
                "kind {kind} {window:02x?} phase byte {phase_byte}"
            );
            assert_eq!(got, expected(&bytes));
            if let Ok(snap) = got {
                assert_eq!(snap.to_bytes(), bytes, "a valid window encodes back to its bytes");
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

    /// 100,000 arbitrary byte strings, most of either version's length: decided as the
    /// layout says (almost all of them bad magic), never a panic.
    #[test]
    fn random_bytes_are_decided_by_the_layout(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..100),
            prop::collection::vec(any::<u8>(), 48..=48),
            prop::collection::vec(any::<u8>(), 88..=88),
        ]
    ) {
        prop_assert_eq!(Snapshot::from_bytes(&bytes), expected(&bytes));
    }

    /// 100,000 sealed bodies of arbitrary field bytes (past the magic, version and
    /// checksum, into the field checks), in either version: decoded exactly when every
    /// field is in range, `Invalid` otherwise; a decoded version-2 snapshot encodes back
    /// to the same bytes, a version-1 snapshot to version 2 of the same state.
    #[test]
    fn arbitrary_fields_are_decided_exactly(
        v1 in any::<bool>(),
        flags in prop_oneof![0u8..16, any::<u8>()],
        small in prop::array::uniform4(prop_oneof![0u8..17, any::<u8>()]),
        wait in prop_oneof![0u32..100_000, ((1u32 << 30) - 2)..((1u32 << 30) + 1), any::<u32>()],
        counters in prop::array::uniform32(any::<u8>()),
        window in prop_oneof![Just([0u8; 40]), prop::array::uniform32(any::<u8>()).prop_map(|w| {
            let mut full = [0u8; 40];
            full[..32].copy_from_slice(&w);
            full
        })],
    ) {
        let mut body = zero_body();
        body[3] = flags;
        body[4..8].copy_from_slice(&small);
        body[8..12].copy_from_slice(&wait.to_le_bytes());
        body[12..44].copy_from_slice(&counters);
        body[44..].copy_from_slice(&window);
        let bytes = if v1 { sealed_v1(&body).to_vec() } else { sealed(&body).to_vec() };
        let got = Snapshot::from_bytes(&bytes);
        prop_assert_eq!(got, expected(&bytes));
        if let Ok(snap) = got {
            if v1 {
                prop_assert_eq!(snap.to_bytes(), snapshot_spec::reencoded_v1(&bytes));
            } else {
                prop_assert_eq!(&snap.to_bytes()[..], &bytes[..]);
            }
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
