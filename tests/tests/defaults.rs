//! Every documented default, each with a test of its own: a default that changes must
//! change its documentation with it, and this file says which sentence to read.

use breaker_core::chain::DEFAULT_BUDGET;
use breaker_core::{
    Backup, Duration, Jitter, Policy, QuotaPolicy, RetryBudget, RetryPolicy, Share, WindowSize, DEFAULT_CHAIN_POLICY,
};

/// `Policy::new`: "The probe lease defaults to the cooldown, one probe success closes, and
/// the cooldown is constant."
#[test]
fn a_policy_leases_its_probe_for_the_cooldown_closes_on_one_success_and_keeps_its_cooldown() {
    let p = Policy::new(3, Duration::from_secs(30));
    assert_eq!(p.probe_lease(), Duration::from_secs(30));
    assert_eq!(p.probes_to_close(), 1);
    assert_eq!(p.backoff_multiplier(), 1);
    assert_eq!(p.cooldown_at(5), Duration::from_secs(30));
    assert!(!p.patient_probation());
    assert_eq!(p.window(), None);
}

/// `Policy::failure_rate`: "judged once it holds `Window::min_calls` samples: all of a count
/// window's by default, 10 of a time window's", and the rest as for `Policy::new`.
#[test]
fn a_window_is_judged_when_full_by_count_or_from_ten_samples_by_time() {
    let count = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(60));
    assert_eq!(count.window().map(|w| w.min_calls()), Some(20));
    assert_eq!(count.trip(), 0);
    let time = Policy::failure_rate(50, WindowSize::Time(Duration::from_secs(10)), Duration::from_secs(60));
    assert_eq!(time.window().map(|w| w.min_calls()), Some(10));
    for p in [count, time] {
        assert_eq!(p.window().and_then(|w| w.slow_calls()), None, "no slow-call rule");
        assert_eq!(p.probe_lease(), Duration::from_secs(60));
        assert_eq!(p.probes_to_close(), 1);
        assert_eq!(p.backoff_multiplier(), 1);
    }
}

/// `RetryPolicy::new`: "the first after `delay`, then twice as long each time, uncapped,
/// no jitter, no budget."
#[test]
fn a_retry_policy_doubles_uncapped_without_jitter_or_budget() {
    let r = RetryPolicy::new(4, Duration::from_millis(10));
    assert_eq!(r.retries(), 4);
    assert_eq!(r.delay(), Duration::from_millis(10));
    assert_eq!(r.multiplier(), 2);
    assert_eq!(r.max_delay(), Duration::MAX);
    assert_eq!(r.jitter(), Jitter::None);
    assert_eq!(r.budget(), None);
}

/// `QuotaPolicy::new`: "Squad's defaults: warning threshold 120 s, green above 20 %, red at
/// 5 % or below."
#[test]
fn a_quota_policy_warns_two_minutes_ahead_green_above_20_red_at_5_percent() {
    let q = QuotaPolicy::new();
    assert_eq!(q.warning(), Duration::from_secs(120));
    assert_eq!(q.green_above(), Share::percent(20));
    assert_eq!(q.red_at_or_below(), Share::percent(5));
}

/// `DEFAULT_CHAIN_POLICY`: "trip after 3 consecutive failed turns, cooldown 60 s, 2 probe
/// successes in a row to recover, patient probation. The probe lease is the cooldown."
#[test]
fn the_chain_policy_is_loopctls_model_breaker() {
    let p = DEFAULT_CHAIN_POLICY;
    assert_eq!(p.trip(), 3);
    assert_eq!(p.cooldown(), Duration::from_secs(60));
    assert_eq!(p.probes_to_close(), 2);
    assert!(p.patient_probation());
    assert_eq!(p.probe_lease(), Duration::from_secs(60));
}

/// `Backup::new`: "with the default budget of `DEFAULT_BUDGET` failed turns" (2).
#[test]
fn a_backup_may_fail_two_turns() {
    assert_eq!(DEFAULT_BUDGET, 2);
    assert_eq!(Backup::new("nb-iot").budget(), DEFAULT_BUDGET);
}

/// `RetryBudget`: Finagle's default is 20 % plus 10 retries a second over 10 s, which the
/// docs spell `RetryBudget::new(20, 10, Duration::from_secs(10))`.
#[test]
fn finagles_retry_budget_as_documented() {
    let b = RetryBudget::new(20, 10, Duration::from_secs(10));
    assert_eq!(
        (b.percent(), b.min_per_sec(), b.window()),
        (20, 10, Duration::from_secs(10))
    );
    assert_eq!(RetryBudget::BUCKETS, 10);
}

/// `breaker_redis::Config::new` (and its `Default`): "The defaults: 100 ms timeout, 100 ms
/// refresh, 1 s between reconnection attempts, log lines on stderr, Redis's `TIME` followed
/// through `StdClock`"; `docs/redis.md` and the crate's README: a trip reaches the other
/// replicas within `Config::trip_bound()`, "300 ms by default". (The log's destination is
/// not observable from here: the settings are, through `Debug`.)
#[test]
fn a_redis_link_waits_100_ms_reads_every_100_ms_retries_every_second_on_redis_time() {
    use breaker_redis::Config;
    for config in [Config::new(), Config::default()] {
        assert_eq!(
            format!("{config:?}"),
            r#"Config { timeout: 100ms, refresh: 100ms, retry: 1s, time: "redis TIME", .. }"#
        );
        assert_eq!(config.trip_bound(), std::time::Duration::from_millis(300));
    }
}
