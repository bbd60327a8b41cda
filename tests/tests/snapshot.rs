//! Snapshots survive a reboot and bad bytes never panic.

use breaker_core::{Breaker, DecodeError, Duration, Instant, Outcome, Phase, Policy, SharedBreaker, Snapshot, State};
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100_000))]

    /// 100,000 arbitrary byte strings: an `Err` or a valid snapshot, never a panic.
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..100)) {
        if let Ok(snap) = Snapshot::from_bytes(&bytes) {
            // (A version-1 snapshot re-encodes as version 2.)
            prop_assert_eq!(Snapshot::from_bytes(&snap.to_bytes()), Ok(snap));
        }
    }

    /// 100,000 well-formed encodings of arbitrary field values (past the checksum, into the
    /// field checks): decoded back exactly, or rejected as `Invalid`.
    #[test]
    fn arbitrary_fields_decode_or_are_invalid(
        phase in prop_oneof![Just(Phase::Closed), Just(Phase::Open), Just(Phase::HalfOpen)],
        forced in any::<bool>(), probing in any::<bool>(),
        strikes in any::<u8>(), streak in any::<u8>(), step in any::<u8>(), ms in any::<u32>(),
        counters in prop::array::uniform8(any::<u32>()),
    ) {
        let [calls, successes, failures, neutrals, skips, trips, probes, lease_expiries] = counters;
        let snap = Snapshot {
            phase, forced, probing, strikes, streak, step,
            remaining: Duration::from_millis(ms),
            counters: breaker_core::Counters { calls, successes, failures, neutrals, skips, trips, probes, lease_expiries },
            window: breaker_core::WindowSnapshot::None,
        };
        match Snapshot::from_bytes(&snap.to_bytes()) {
            Ok(back) => prop_assert_eq!(back, snap),
            Err(e) => prop_assert_eq!(e, DecodeError::Invalid),
        }
    }

    /// 100,000 damaged valid snapshots (the magic, version and checksum intact-looking):
    /// every single-bit flip is caught.
    #[test]
    fn every_bit_flip_is_caught(secs in 0u32..200, strikes in 0u8..3, bit in 0usize..(Snapshot::LEN * 8)) {
        let mut b = Breaker::new(POLICY);
        for _ in 0..strikes {
            let p = b.try_acquire(s(0)).unwrap();
            b.record(p, Outcome::STRIKE, s(0));
        }
        let mut bytes = b.snapshot(s(secs)).to_bytes();
        bytes[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(Snapshot::from_bytes(&bytes).is_err());
    }
}
