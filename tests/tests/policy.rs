//! A policy's limits, at their edges: each knob's largest and smallest accepted value, the
//! first rejected one with its own error and message, and the backoff's growth to its cap.

use breaker_core::{Duration, Policy, PolicyError, MAX_BACKOFF_STEP, MAX_PROBES, MAX_TRIP};

const S30: Duration = Duration::from_secs(30);

#[test]
fn each_knob_accepts_its_whole_range() {
    for trip in [1, 2, MAX_TRIP] {
        assert_eq!(Policy::try_new(trip, S30).map(|p| p.trip()), Ok(trip));
    }
    let p = Policy::new(3, S30);
    for probes in [1, 2, MAX_PROBES] {
        assert_eq!(
            p.try_with_probes_to_close(probes).map(|p| p.probes_to_close()),
            Ok(probes)
        );
    }
    for multiplier in [1, 2, 255] {
        assert_eq!(
            p.try_with_backoff(multiplier, S30).map(|p| p.backoff_multiplier()),
            Ok(multiplier)
        );
    }
    // The cap may equal the cooldown.
    assert_eq!(p.try_with_backoff(2, S30).map(|p| p.max_cooldown()), Ok(S30));
    let one_ms = Duration::from_millis(1);
    assert_eq!(Policy::try_new(1, one_ms).map(|p| p.cooldown()), Ok(one_ms));
    assert_eq!(p.try_with_probe_lease(one_ms).map(|p| p.probe_lease()), Ok(one_ms));
    assert_eq!(
        Policy::try_new(1, Duration::MAX).map(|p| p.cooldown()),
        Ok(Duration::MAX)
    );
}

#[test]
fn each_knob_rejects_just_past_its_range_with_its_own_error() {
    let p = Policy::new(3, S30);
    assert_eq!(Policy::try_new(0, S30), Err(PolicyError::TripOutOfRange));
    assert_eq!(Policy::try_new(MAX_TRIP + 1, S30), Err(PolicyError::TripOutOfRange));
    assert_eq!(Policy::try_new(u32::MAX, S30), Err(PolicyError::TripOutOfRange));
    assert_eq!(
        p.try_with_probes_to_close(MAX_PROBES + 1),
        Err(PolicyError::ProbesOutOfRange)
    );
    assert_eq!(
        p.try_with_backoff(256, Duration::MAX),
        Err(PolicyError::MultiplierOutOfRange)
    );
    assert_eq!(
        p.try_with_backoff(2, Duration::from_millis(29_999)),
        Err(PolicyError::CapBelowCooldown)
    );
}

#[test]
fn every_error_says_what_went_wrong() {
    for (error, message) in [
        (
            PolicyError::TripOutOfRange,
            "trip must be between 1 and 255 consecutive strikes",
        ),
        (PolicyError::ZeroCooldown, "cooldown must be longer than zero"),
        (PolicyError::ZeroProbeLease, "probe lease must be longer than zero"),
        (
            PolicyError::ProbesOutOfRange,
            "probes to close must be between 1 and 15",
        ),
        (
            PolicyError::MultiplierOutOfRange,
            "backoff multiplier must be between 1 and 255",
        ),
        (
            PolicyError::CapBelowCooldown,
            "max cooldown must not be shorter than the cooldown",
        ),
    ] {
        assert_eq!(error.message(), message);
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn the_builders_set_exactly_their_knob() {
    let p = Policy::new(4, S30)
        .with_probe_lease(Duration::from_secs(5))
        .with_probes_to_close(3)
        .with_backoff(3, Duration::from_mins(9));
    assert_eq!(
        (
            p.trip(),
            p.cooldown(),
            p.probe_lease(),
            p.probes_to_close(),
            p.backoff_multiplier(),
            p.max_cooldown(),
            p.patient_probation()
        ),
        (4, S30, Duration::from_secs(5), 3, 3, Duration::from_mins(9), false)
    );
    assert!(p.with_patient_probation().patient_probation());
    // Defaults: the lease is the cooldown, one probe closes, no backoff, impatient.
    let d = Policy::new(2, S30);
    assert_eq!(
        (
            d.probe_lease(),
            d.probes_to_close(),
            d.backoff_multiplier(),
            d.max_cooldown()
        ),
        (S30, 1, 1, S30)
    );
    assert!(!d.patient_probation());
}

#[test]
fn the_backoff_multiplies_once_per_step_up_to_its_cap() {
    let p = Policy::new(1, Duration::from_secs(1)).with_backoff(3, Duration::from_secs(100));
    let steps: Vec<u32> = (0..6).map(|s| p.cooldown_at(s).as_millis()).collect();
    assert_eq!(steps, [1_000, 3_000, 9_000, 27_000, 81_000, 100_000]);
    // Reaching the cap exactly.
    let exact = Policy::new(1, Duration::from_secs(1)).with_backoff(2, Duration::from_secs(4));
    let steps: Vec<u32> = (0..4).map(|s| exact.cooldown_at(s).as_millis()).collect();
    assert_eq!(steps, [1_000, 2_000, 4_000, 4_000]);
    // A multiplier of 1 never grows; the longest span never overflows.
    assert_eq!(Policy::new(1, S30).cooldown_at(MAX_BACKOFF_STEP), S30);
    let huge = Policy::new(1, Duration::MAX).with_backoff(255, Duration::MAX);
    assert_eq!(huge.cooldown_at(MAX_BACKOFF_STEP), Duration::MAX);
}
