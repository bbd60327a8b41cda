//! Metrics through the [`metrics`](https://docs.rs/metrics) facade (feature `metrics`):
//! every registered breaker's state and counters, published when scraped, at no cost per
//! call.
//!
//! A breaker already keeps its counters (for the [registry](crate::registry)'s table and
//! JSON); nothing here adds to the call path. [`publish`] reads every breaker of the
//! registry (those never called, and those listed with [`register!`](crate::register),
//! included) and hands the values to the installed recorder: call it in the handler that
//! renders the scrape, just before rendering, or on a timer. A breaker counts its changes of
//! phase and its probes' outcomes as they happen (off the call path: in the step that
//! makes them), so those too are read at the scrape, for every breaker.
//!
//! # Series
//!
//! The breaker's registry name is the `breaker` label of every series; the only other
//! labels are the ones listed. Names follow Prometheus's conventions (snake case,
//! `_total` counters, seconds, ratios from 0 to 1).
//!
//! | series | type | labels | value | published |
//! |---|---|---|---|---|
//! | `breaker_state` | gauge | `breaker`, `state` (`closed`, `open`, `half_open`) | a state set: 1 for the breaker's state, 0 for the two others | every registered breaker |
//! | `breaker_open_remaining_seconds` | gauge | `breaker` | open: the time left before a call may become the probe (0 once it has passed); forced open: `+Inf` (no probe until a reset); 0 when closed or half-open | every registered breaker |
//! | `breaker_shadow` | gauge | `breaker` | 1 in [shadow mode](crate::SharedBreaker#shadow-mode) (the refusals but a forced opening's are only counted), 0 otherwise | every registered breaker |
//! | `breaker_calls_total` | counter | `breaker`, `outcome` (`failure`, `rejected`, `success`, `neutral`) | `failure`: outcomes reported as a strike or a trip verdict; `rejected`: calls refused by the breaker, or in shadow mode that it would have refused (see [`SharedBreaker::counters`](crate::SharedBreaker::counters) for how exact); `success` and `neutral`: outcomes reported as such | `failure` and `rejected`: every registered breaker; `success` and `neutral`: breakers that count every call ([`Policy::counting_calls`](crate::Policy::counting_calls)) |
//! | `breaker_trips_total` | counter | `breaker` | times the breaker opened by strikes, a trip verdict, a rate, a prediction or a failed or lapsed probe (not [`force_open`](crate::SharedBreaker::force_open)) | every registered breaker |
//! | `breaker_probes_total` | counter | `breaker`, `outcome` (`success`, `failure`, `neutral`, `lapsed`) | probes by how they ended: `success` (each, whether it closed the breaker or counted toward [`Policy::probes_to_close`](crate::Policy::probes_to_close)), `failure` (a strike or trip verdict, or a probe's permit dropped unanswered), `neutral` (the probe slot freed, nothing learned), `lapsed` (its lease ran out unanswered); a probe overtaken by `force_open` or `reset` is in none | every registered breaker |
//! | `breaker_window_calls` | gauge | `breaker` | samples in the failure-rate window now (0 unless closed: the window lives while closed) | windowed breakers ([`Policy::failure_rate`](crate::Policy::failure_rate)) |
//! | `breaker_failure_ratio` | gauge | `breaker` | failures / samples in the window | windowed breakers, while the window holds at least the policy's minimum number of calls; absent below it |
//! | `breaker_slow_call_ratio` | gauge | `breaker` | slow calls / samples in the window (slow successes, and slow failures with [`Policy::with_slow_failures`](crate::Policy::with_slow_failures)) | windowed breakers with a slow-call rule, as `breaker_failure_ratio` |
//! | `breaker_transitions_total` | counter | `breaker`, `from`, `to` ([`Phase::key`](crate::Phase::key)) | changes of phase, forced ones included ([`TransitionCounts`](crate::TransitionCounts)): five series, `closed` to `open`, `open` to `half_open`, `half_open` to `closed`, `half_open` to `open`, `open` to `closed` | every registered breaker |
//! | `breaker_quota_remaining` | gauge | `breaker` | quota units left at the last sample | [`publish_quota`], after a first sample |
//! | `breaker_quota_share_ratio` | gauge | `breaker` | the share of the quota left | [`publish_quota`], after a first sample |
//! | `breaker_quota_exhausted_in_seconds` | gauge | `breaker` | when the quota runs out at the window's rate ([`Forecast::exhausted_in`](crate::Forecast::exhausted_in)) | [`publish_quota`], while there is a forecast; absent without one |
//! | `breaker_quota_light` | gauge | `breaker`, `light` (`green`, `amber`, `red`) | a state set, as `breaker_state` | [`publish_quota`], after a first sample |
//!
//! What each kind of breaker keeps decides what is published, never a zero it did not
//! count:
//!
//! - Every registered breaker is a [`SharedBreaker`](crate::SharedBreaker), whose
//!   closed-state happy path writes nothing: by default it counts no successes or
//!   neutral outcomes, and `breaker_calls_total` has `outcome="failure"` and
//!   `outcome="rejected"` and no `success` or `neutral` series (a zero there would say
//!   "no traffic"). A policy built with
//!   [`Policy::counting_calls`](crate::Policy::counting_calls)
//!   (`#[circuit_breaker(.., count_calls)]`) counts them, at the price of two
//!   atomic adds per call (`bench/README.md` has the figure), and its breaker gets
//!   the `success` and `neutral` series too. Without it, the request count of the
//!   service beside it (an HTTP layer's) gives the traffic.
//! - A breaker that is not registered (a single-owner [`Breaker`](crate::Breaker), a
//!   shared one built at run time from a configuration) is published by
//!   [`publish_breaker`], called beside [`publish`] (which reads the registry only), with
//!   the same series but the window's.
//! - Two breakers registered under one name are not published at all (their series would
//!   overwrite each other): [`registry::check_unique`](crate::registry::check_unique)
//!   names them.
//! - The probes' outcomes and the changes of phase are not kept in a
//!   [`Snapshot`](crate::Snapshot)'s bytes: after a reboot that restores one they start
//!   again from zero, as a restarted process's counters do (Prometheus's `rate` and
//!   `increase` read a counter that went back to zero as a reset).
//!
//! A series marked "absent" disappears only if the exporter forgets a series that is not
//! published again: the facade cannot remove one. With `metrics-exporter-prometheus`, give
//! gauges an idle timeout longer than the time between two [`publish`] calls
//! (`PrometheusBuilder::idle_timeout(MetricKindMask::GAUGE, ..)`); without one a gauge
//! keeps its last value. Counters are published with
//! [`Counter::absolute`](https://docs.rs/metrics/0.24/metrics/struct.Counter.html#method.absolute),
//! so they never go backwards.
//!
//! # Use
//!
//! ```
//! use breaker_core::{registry, Duration, Instant, ManualClock, Policy, SharedBreaker};
//!
//! static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
//! static UPSTREAM: SharedBreaker = SharedBreaker::new(&POLICY);
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//! breaker_core::register!(UPSTREAM, "doc-metrics/upstream", CLOCK);
//!
//! // In the `/metrics` handler, before the exporter renders (here no recorder is
//! // installed, so the values go nowhere):
//! breaker_core::metrics::publish();
//! ```
//!
//! With `metrics-exporter-prometheus`, a scrape then reads (among the rest):
//!
//! ```text
//! breaker_state{breaker="doc-metrics/upstream",state="closed"} 1
//! breaker_state{breaker="doc-metrics/upstream",state="open"} 0
//! breaker_state{breaker="doc-metrics/upstream",state="half_open"} 0
//! breaker_open_remaining_seconds{breaker="doc-metrics/upstream"} 0
//! breaker_calls_total{breaker="doc-metrics/upstream",outcome="failure"} 0
//! breaker_calls_total{breaker="doc-metrics/upstream",outcome="rejected"} 0
//! ```
//!
//! The example service (`examples/examples/service.rs`) serves `/metrics` this way, and a
//! test scrapes it with a real Prometheus server.

use std::sync::Mutex;

use ::metrics::{counter, describe_counter, describe_gauge, gauge, SharedString, Unit};

use crate::registry::{self, Entry};
use crate::window::{Window, WindowStats};
use crate::{CircuitBreaker, Clock, Counters, Duration, Light, Phase, Reading, State};

const STATE: &str = "breaker_state";
const OPEN_REMAINING: &str = "breaker_open_remaining_seconds";
const SHADOW: &str = "breaker_shadow";
const CALLS: &str = "breaker_calls_total";
const TRIPS: &str = "breaker_trips_total";
const PROBES: &str = "breaker_probes_total";
const WINDOW_CALLS: &str = "breaker_window_calls";
const FAILURE_RATIO: &str = "breaker_failure_ratio";
const SLOW_RATIO: &str = "breaker_slow_call_ratio";
const TRANSITIONS: &str = "breaker_transitions_total";
const QUOTA_REMAINING: &str = "breaker_quota_remaining";
const QUOTA_SHARE: &str = "breaker_quota_share_ratio";
const QUOTA_EXHAUSTED_IN: &str = "breaker_quota_exhausted_in_seconds";
const QUOTA_LIGHT: &str = "breaker_quota_light";

const PHASES: [Phase; 3] = [Phase::Closed, Phase::Open, Phase::HalfOpen];
const LIGHTS: [Light; 3] = [Light::Green, Light::Amber, Light::Red];

/// One publication at a time: two scrapes publishing at once could otherwise interleave
/// their writes of a state set and show a breaker in no state, or in two.
static PUBLISHING: Mutex<()> = Mutex::new(());

/// Publishes every registered breaker's series (see [the table](self#series)) through the
/// installed recorder, and describes them (help text and unit) to it. Reads each breaker
/// once, at its own clock's "now"; writes nothing to any breaker.
///
/// It allocates (the recorder's keys), so call it when scraped or on a timer, not per
/// call. Without a recorder it does nothing visible.
pub fn publish() {
    let _one_at_a_time = PUBLISHING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    describe();
    for entry in registry::iter() {
        if registry::get(entry.name()).is_ok() {
            publish_entry(entry);
        }
    }
}

fn describe() {
    describe_gauge!(
        STATE,
        "Circuit breaker state: 1 for the current one of closed, open, half_open; 0 for the others."
    );
    describe_gauge!(
        OPEN_REMAINING,
        Unit::Seconds,
        "Time left before an open circuit breaker lets a probe through (0 when not open, +Inf when forced open)."
    );
    describe_gauge!(
        SHADOW,
        "Circuit breaker in shadow mode: 1 when its refusals (but a forced opening's) are only counted, 0 otherwise."
    );
    describe_counter!(
        CALLS,
        "Circuit breaker calls by outcome: failure (reported as a strike or trip verdict), rejected (refused); success and neutral where the breaker counts every call."
    );
    describe_counter!(TRIPS, "Times the circuit breaker opened (not counting force_open).");
    describe_counter!(
        PROBES,
        "Circuit breaker probes by outcome: success, failure, neutral, lapsed (lease expired unanswered)."
    );
    describe_gauge!(WINDOW_CALLS, "Samples in the circuit breaker's failure-rate window.");
    describe_gauge!(
        FAILURE_RATIO,
        "Failures / samples in the failure-rate window, 0 to 1 (absent below the minimum number of calls)."
    );
    describe_gauge!(
        SLOW_RATIO,
        "Slow calls / samples in the failure-rate window, 0 to 1 (absent below the minimum number of calls)."
    );
    describe_counter!(TRANSITIONS, "Circuit breaker changes of phase.");
    describe_gauge!(QUOTA_REMAINING, "Quota units left at the last sample.");
    describe_gauge!(QUOTA_SHARE, "Share of the quota left, 0 to 1.");
    describe_gauge!(
        QUOTA_EXHAUSTED_IN,
        Unit::Seconds,
        "When the quota runs out at the current rate (absent without a forecast)."
    );
    describe_gauge!(
        QUOTA_LIGHT,
        "Quota light: 1 for the current one of green, amber, red; 0 for the others."
    );
}

/// The series of one registered breaker.
fn publish_entry(entry: &Entry) {
    let breaker = entry.breaker();
    let now = entry.now();
    let window = breaker.window_stats(now).zip(breaker.policy().window());
    publish_series(
        &SharedString::const_str(entry.name()),
        &breaker.state(now),
        breaker.is_shadow(),
        &breaker.counters(),
        breaker.policy().counts_calls(),
        window,
    );
}

/// Publishes the series of a breaker that is not in the registry (one built at run time
/// from a configuration, a `Breaker`, a `RedisBreaker`, an entry of a table per key) under
/// the name `name`, as [`publish`] does a registered one's (see [the table](self#series)):
/// call it beside `publish`, for each such breaker the program holds. The failure-rate
/// window's rows are published for the kinds that keep one where `publish` reads them
/// (registered breakers); here they are left out.
///
/// A breaker published this way appears at its first publication; once the program drops
/// it and stops publishing it, its series go as any series not published again does (with
/// `metrics-exporter-prometheus`, after the idle timeout given for them). Give it a name of
/// its own: one the registry also lists would have both breakers write the same series.
/// Allocates (the label's text and the recorder's keys), as `publish` does: at a scrape,
/// never per call.
///
/// ```
/// use std::sync::Arc;
/// use breaker_core::{Duration, Policy, SharedBreaker, StdClock};
///
/// let search = Arc::new(SharedBreaker::with_policy(Policy::new(3, Duration::from_secs(30))));
/// // In the `/metrics` handler, beside `publish()`:
/// breaker_core::metrics::publish_breaker("search", &*search, &StdClock);
/// ```
pub fn publish_breaker<B: CircuitBreaker + ?Sized, C: Clock>(name: &str, breaker: &B, clock: &C) {
    let _one_at_a_time = PUBLISHING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    describe();
    let name = SharedString::from(std::string::String::from(name));
    publish_series(
        &name,
        &breaker.state(clock),
        breaker.is_shadow(),
        &breaker.counters(),
        breaker.counts_calls(),
        None,
    );
}

/// The series of one breaker: its state, counters and (where it keeps one) its window.
fn publish_series(
    name: &SharedString,
    state: &State,
    shadow: bool,
    counters: &Counters,
    counting: bool,
    window: Option<(WindowStats, Window)>,
) {
    let label = || name.clone();
    for phase in PHASES {
        let on = state.phase() == phase;
        gauge!(STATE, "breaker" => label(), "state" => phase.key()).set(if on { 1.0 } else { 0.0 });
    }
    gauge!(OPEN_REMAINING, "breaker" => label()).set(open_remaining_seconds(state));
    gauge!(SHADOW, "breaker" => label()).set(if shadow { 1.0 } else { 0.0 });

    counter!(CALLS, "breaker" => label(), "outcome" => "failure").absolute(counters.failures.into());
    counter!(CALLS, "breaker" => label(), "outcome" => "rejected").absolute(counters.skips.into());
    if counting {
        counter!(CALLS, "breaker" => label(), "outcome" => "success").absolute(counters.successes.into());
        counter!(CALLS, "breaker" => label(), "outcome" => "neutral").absolute(counters.neutrals.into());
    }
    counter!(TRIPS, "breaker" => label()).absolute(counters.trips.into());
    for (outcome, n) in [
        ("success", counters.probe_successes),
        ("failure", counters.probe_failures),
        ("neutral", counters.probe_neutrals),
        ("lapsed", counters.lease_expiries),
    ] {
        counter!(PROBES, "breaker" => label(), "outcome" => outcome).absolute(n.into());
    }
    for (from, to, n) in counters.transitions.all() {
        counter!(TRANSITIONS, "breaker" => label(), "from" => from.key(), "to" => to.key()).absolute(n.into());
    }

    let Some((stats, window)) = window else {
        return;
    };
    gauge!(WINDOW_CALLS, "breaker" => label()).set(stats.calls);
    if stats.calls == 0 || stats.calls < window.min_calls() {
        return;
    }
    let calls = f64::from(stats.calls);
    gauge!(FAILURE_RATIO, "breaker" => label()).set(f64::from(stats.failures) / calls);
    if window.slow_calls().is_some() {
        gauge!(SLOW_RATIO, "breaker" => label()).set(f64::from(stats.slow) / calls);
    }
}

/// `breaker_open_remaining_seconds` for a state.
fn open_remaining_seconds(state: &State) -> f64 {
    match *state {
        State::Open { forced: true, .. } => f64::INFINITY,
        State::Open { remaining, .. } => seconds(remaining),
        State::Closed { .. } | State::HalfOpen { .. } => 0.0,
    }
}

fn seconds(d: Duration) -> f64 {
    f64::from(d.as_millis()) / 1000.0
}

/// Publishes a quota guard's reading under the breaker name `name` (the `breaker_quota_*`
/// rows of [the table](self#series)): call it with
/// [`QuotaGuard::gauge`](crate::QuotaGuard::gauge)`().reading()` where [`publish`] is
/// called. Before the first sample it publishes nothing; without a forecast,
/// `breaker_quota_exhausted_in_seconds` is left out.
///
/// ```
/// use breaker_core::{Instant, QuotaGauge, QuotaPolicy, Sample};
///
/// let mut gauge = QuotaGauge::<10>::new(QuotaPolicy::new());
/// gauge.observe(Sample::new(Instant::ZERO, 4_900, 5_000));
/// breaker_core::metrics::publish_quota("github", &gauge.reading());
/// ```
pub fn publish_quota(name: &'static str, reading: &Reading) {
    let (Some(quota), Some(light)) = (reading.quota, reading.light) else {
        return;
    };
    gauge!(QUOTA_REMAINING, "breaker" => name).set(quota.remaining);
    gauge!(QUOTA_SHARE, "breaker" => name).set(f64::from(quota.share().as_basis_points()) / 10_000.0);
    if let Some(forecast) = reading.forecast {
        gauge!(QUOTA_EXHAUSTED_IN, "breaker" => name).set(seconds(forecast.exhausted_in));
    }
    for l in LIGHTS {
        gauge!(QUOTA_LIGHT, "breaker" => name, "light" => l.name()).set(if l == light { 1.0 } else { 0.0 });
    }
}
