//! `serde` for what a health endpoint or a state file carries (feature `serde`):
//! `Serialize` for reports, states, counters, policies, transitions (and a history of them)
//! and refusals; both
//! ways for snapshots, policies, durations, instants, phases and counters.
//!
//! Durations and instants are whole milliseconds, in fields named `..._ms`; phases and
//! reasons are snake-case strings (`"half_open"`, `"probe_failed"`). Deserializing never
//! makes a value the breaker could not hold: a [`Snapshot`] goes through
//! [`Snapshot::check`], a [`Policy`] through its `try_` constructors, a [`Duration`] past
//! [`Duration::MAX`] is an error; unknown fields in a snapshot or a policy are errors too.
//!
//! ```
//! # #[cfg(feature = "std")] {
//! use breaker_core::{registry, Duration, Instant, ManualClock, Policy, SharedBreaker, Snapshot};
//!
//! static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
//! static UPLINK: SharedBreaker = SharedBreaker::new(&POLICY);
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//! breaker_core::register!(UPLINK, "uplink", CLOCK);
//!
//! let json = serde_json::to_string(&registry::get("uplink").unwrap().report()).unwrap();
//! assert!(json.starts_with(r#"{"name":"uplink","now_ms":0,"state":{"phase":"closed","strikes":0}"#));
//!
//! let saved = serde_json::to_string(&UPLINK.snapshot(Instant::ZERO)).unwrap();
//! let back: Snapshot = serde_json::from_str(&saved).unwrap();
//! assert_eq!(back, UPLINK.snapshot(Instant::ZERO));
//! // Probing while closed: no breaker is ever in that state.
//! let corrupt = saved.replace(r#""probing":false"#, r#""probing":true"#);
//! assert!(serde_json::from_str::<Snapshot>(&corrupt).is_err());
//! # }
//! ```

use serde::de::{Deserializer, Error as _};
use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::registry::{Health, HealthStatus, Report, Table};
use crate::window::{Bucket, WindowSize, WindowSnapshot, WINDOW_BUCKETS};
use crate::{
    Counters, Duration, Instant, Phase, Policy, Reason, Recent, RefusalReason, Refused, Snapshot, State, Transition,
    TransitionCounts,
};

/// Whole milliseconds.
impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.as_millis())
    }
}

/// Whole milliseconds, at most [`Duration::MAX`]; more is an error, not a clamp.
impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let millis = u32::deserialize(d)?;
        if millis > Duration::MAX.as_millis() {
            return Err(D::Error::custom(
                "duration too long for a circuit breaker: at most 1073741823 ms (about 12.4 days)",
            ));
        }
        Ok(Duration::from_millis(millis))
    }
}

/// The raw counter reading, in milliseconds.
impl Serialize for Instant {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.as_millis())
    }
}

/// The raw counter reading, in milliseconds.
impl<'de> Deserialize<'de> for Instant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Instant, D::Error> {
        u32::deserialize(d).map(Instant::from_millis)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum PhaseRepr {
    Closed,
    Open,
    HalfOpen,
}

/// [`Phase::key`]: `"closed"`, `"open"`, `"half_open"`.
impl Serialize for Phase {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

/// `"closed"`, `"open"`, `"half_open"`.
impl<'de> Deserialize<'de> for Phase {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Phase, D::Error> {
        Ok(match PhaseRepr::deserialize(d)? {
            PhaseRepr::Closed => Phase::Closed,
            PhaseRepr::Open => Phase::Open,
            PhaseRepr::HalfOpen => Phase::HalfOpen,
        })
    }
}

/// [`Reason::key`]: snake case, `"strikes"`, `"trip_verdict"`, ...
impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

/// `"open"`, `"probing"`, `"forced_open"`, `"quota_low"`.
impl Serialize for RefusalReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            RefusalReason::Open => "open",
            RefusalReason::Probing => "probing",
            RefusalReason::ForcedOpen => "forced_open",
            RefusalReason::QuotaLow => "quota_low",
        })
    }
}

/// `{"reason": "open", "retry_in_ms": 1200}` (`null` when there is no wait to tell).
impl Serialize for Refused {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Refused", 2)?;
        st.serialize_field("reason", &self.reason)?;
        st.serialize_field("retry_in_ms", &self.retry_in)?;
        st.end()
    }
}

/// Tagged by phase: `{"phase": "closed", "strikes": 2}`, `{"phase": "open",
/// "remaining_ms": 348, "forced": false}`, `{"phase": "half_open", "probing": true,
/// "streak": 0}`.
impl Serialize for State {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            State::Closed { strikes } => {
                let mut st = s.serialize_struct("State", 2)?;
                st.serialize_field("phase", &Phase::Closed)?;
                st.serialize_field("strikes", &strikes)?;
                st.end()
            }
            State::Open { remaining, forced } => {
                let mut st = s.serialize_struct("State", 3)?;
                st.serialize_field("phase", &Phase::Open)?;
                st.serialize_field("remaining_ms", &remaining)?;
                st.serialize_field("forced", &forced)?;
                st.end()
            }
            State::HalfOpen { probing, streak } => {
                let mut st = s.serialize_struct("State", 3)?;
                st.serialize_field("phase", &Phase::HalfOpen)?;
                st.serialize_field("probing", &probing)?;
                st.serialize_field("streak", &streak)?;
                st.end()
            }
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename = "Counters", deny_unknown_fields)]
struct CountersRepr {
    calls: u32,
    successes: u32,
    failures: u32,
    neutrals: u32,
    skips: u32,
    trips: u32,
    probes: u32,
    lease_expiries: u32,
    // Counted since the probes' outcomes and the changes of phase were counted apart: a
    // document written before reads them as zero.
    #[serde(default)]
    probe_successes: u32,
    #[serde(default)]
    probe_failures: u32,
    #[serde(default)]
    probe_neutrals: u32,
    #[serde(default)]
    transitions: TransitionsRepr,
}

/// [`TransitionCounts`] by field name, as `breaker_transitions_total`'s `from` and `to`
/// spell the phases.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename = "Transitions", deny_unknown_fields)]
struct TransitionsRepr {
    closed_to_open: u32,
    open_to_half_open: u32,
    half_open_to_closed: u32,
    half_open_to_open: u32,
    open_to_closed: u32,
}

impl From<TransitionCounts> for TransitionsRepr {
    fn from(t: TransitionCounts) -> TransitionsRepr {
        TransitionsRepr {
            closed_to_open: t.closed_to_open,
            open_to_half_open: t.open_to_half_open,
            half_open_to_closed: t.half_open_to_closed,
            half_open_to_open: t.half_open_to_open,
            open_to_closed: t.open_to_closed,
        }
    }
}

impl From<TransitionsRepr> for TransitionCounts {
    fn from(t: TransitionsRepr) -> TransitionCounts {
        TransitionCounts {
            closed_to_open: t.closed_to_open,
            open_to_half_open: t.open_to_half_open,
            half_open_to_closed: t.half_open_to_closed,
            half_open_to_open: t.half_open_to_open,
            open_to_closed: t.open_to_closed,
        }
    }
}

/// Every counter by its field name.
impl Serialize for Counters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = *self;
        CountersRepr {
            calls: c.calls,
            successes: c.successes,
            failures: c.failures,
            neutrals: c.neutrals,
            skips: c.skips,
            trips: c.trips,
            probes: c.probes,
            lease_expiries: c.lease_expiries,
            probe_successes: c.probe_successes,
            probe_failures: c.probe_failures,
            probe_neutrals: c.probe_neutrals,
            transitions: c.transitions.into(),
        }
        .serialize(s)
    }
}

/// The counters a [`SharedBreaker`](crate::SharedBreaker) keeps, by field name: a
/// registry [`Report`]'s (every registered breaker is shared). `calls`, `successes` and
/// `neutrals` are left out, not written as zeros it never counted, unless its policy
/// counts every call (the `bool`: [`Policy::counting_calls`]).
struct SharedCounters(Counters, bool);

impl Serialize for SharedCounters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (c, counting) = (self.0, self.1);
        let mut st = s.serialize_struct("Counters", if counting { 12 } else { 9 })?;
        if counting {
            st.serialize_field("calls", &c.calls)?;
            st.serialize_field("successes", &c.successes)?;
            st.serialize_field("neutrals", &c.neutrals)?;
        }
        st.serialize_field("failures", &c.failures)?;
        st.serialize_field("skips", &c.skips)?;
        st.serialize_field("trips", &c.trips)?;
        st.serialize_field("probes", &c.probes)?;
        st.serialize_field("lease_expiries", &c.lease_expiries)?;
        st.serialize_field("probe_successes", &c.probe_successes)?;
        st.serialize_field("probe_failures", &c.probe_failures)?;
        st.serialize_field("probe_neutrals", &c.probe_neutrals)?;
        st.serialize_field("transitions", &TransitionsRepr::from(c.transitions))?;
        st.end()
    }
}

/// Every counter by its field name, all required.
impl<'de> Deserialize<'de> for Counters {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Counters, D::Error> {
        let c = CountersRepr::deserialize(d)?;
        Ok(Counters {
            calls: c.calls,
            successes: c.successes,
            failures: c.failures,
            neutrals: c.neutrals,
            skips: c.skips,
            trips: c.trips,
            probes: c.probes,
            lease_expiries: c.lease_expiries,
            probe_successes: c.probe_successes,
            probe_failures: c.probe_failures,
            probe_neutrals: c.probe_neutrals,
            transitions: c.transitions.into(),
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename = "Policy", deny_unknown_fields)]
struct PolicyRepr {
    trip: u32,
    cooldown_ms: Duration,
    probe_lease_ms: Duration,
    probes_to_close: u32,
    backoff_multiplier: u32,
    max_cooldown_ms: Duration,
    #[serde(default)]
    patient_probation: bool,
    /// [`Policy::counting_calls`]: written only when true.
    #[serde(default, skip_serializing_if = "is_false")]
    count_calls: bool,
    /// A failure-rate window instead of `trip` (which is then 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window: Option<WindowRuleRepr>,
    /// [`Policy::with_half_open_rate`] instead of consecutive probe successes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    half_open: Option<HalfOpenRepr>,
}

/// A half-open failure-rate rule: `{"calls": 10, "failure_rate": 50}`.
#[derive(Serialize, Deserialize)]
#[serde(rename = "HalfOpen", deny_unknown_fields)]
struct HalfOpenRepr {
    calls: u32,
    failure_rate: u32,
}

/// A windowed policy's rule: `calls` or `time_ms` (one of the two), `failure_rate`,
/// `min_calls`, and the slow-call rule if any (`slow_failures`, written only when true, may
/// be left out: false).
#[derive(Serialize, Deserialize)]
#[serde(rename = "Window", deny_unknown_fields)]
struct WindowRuleRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    calls: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    time_ms: Option<Duration>,
    failure_rate: u32,
    min_calls: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slow_call_ms: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slow_rate: Option<u32>,
    #[serde(default, skip_serializing_if = "is_false")]
    slow_failures: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `{"trip": 3, "cooldown_ms": 30000, "probe_lease_ms": 30000, "probes_to_close": 1,
/// "backoff_multiplier": 1, "max_cooldown_ms": 30000, "patient_probation": false}`, with
/// `"count_calls": true` ([`Policy::counting_calls`]), a `window` and a `half_open` rule
/// (`{"calls": 10, "failure_rate": 50}`, [`Policy::with_half_open_rate`]) only where set.
impl Serialize for Policy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PolicyRepr {
            trip: self.trip(),
            cooldown_ms: self.cooldown(),
            probe_lease_ms: self.probe_lease(),
            probes_to_close: self.probes_to_close(),
            backoff_multiplier: self.backoff_multiplier(),
            max_cooldown_ms: self.max_cooldown(),
            patient_probation: self.patient_probation(),
            count_calls: self.counts_calls(),
            window: self.window().map(|w| {
                let (calls, time_ms) = match w.size() {
                    WindowSize::Calls(n) => (Some(n), None),
                    WindowSize::Time(span) => (None, Some(span)),
                };
                WindowRuleRepr {
                    calls,
                    time_ms,
                    failure_rate: w.failure_rate(),
                    min_calls: w.min_calls(),
                    slow_call_ms: w.slow_calls().map(|(d, _)| d),
                    slow_rate: w.slow_calls().map(|(_, r)| r),
                    slow_failures: w.slow_failures(),
                }
            }),
            half_open: self
                .half_open_rate()
                .map(|(calls, failure_rate)| HalfOpenRepr { calls, failure_rate }),
        }
        .serialize(s)
    }
}

/// The serialized form, through [`Policy::try_new`] (or [`Policy::try_failure_rate`] for
/// a `window`) and the other `try_` builders: a policy they reject (trip 0, a cap below the
/// cooldown, ...) is an error naming the problem. `patient_probation`, `count_calls`,
/// `window` and `half_open` may be left out (false, false, none, none).
impl<'de> Deserialize<'de> for Policy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        let p = PolicyRepr::deserialize(d)?;
        let base = match &p.window {
            None => Policy::try_new(p.trip, p.cooldown_ms),
            Some(w) => {
                let size = match (w.calls, w.time_ms) {
                    (Some(n), None) => WindowSize::Calls(n),
                    (None, Some(span)) => WindowSize::Time(span),
                    _ => return Err(D::Error::custom("a window has either `calls` or `time_ms`")),
                };
                if p.trip != 0 {
                    return Err(D::Error::custom("a windowed policy has `trip` 0: the window trips it"));
                }
                let slow = match (w.slow_call_ms, w.slow_rate) {
                    (None, None) => None,
                    (Some(d), Some(r)) => Some((d, r)),
                    _ => return Err(D::Error::custom("`slow_call_ms` and `slow_rate` go together")),
                };
                Policy::try_failure_rate(w.failure_rate, size, p.cooldown_ms)
                    .and_then(|q| q.try_with_min_calls(w.min_calls))
                    .and_then(|q| match slow {
                        Some((d, r)) => q.try_with_slow_calls(d, r),
                        None => Ok(q),
                    })
                    .and_then(|q| {
                        if w.slow_failures {
                            q.try_with_slow_failures(true)
                        } else {
                            Ok(q)
                        }
                    })
            }
        };
        let policy = base
            .and_then(|q| q.try_with_probe_lease(p.probe_lease_ms))
            .and_then(|q| q.try_with_probes_to_close(p.probes_to_close))
            .and_then(|q| q.try_with_backoff(p.backoff_multiplier, p.max_cooldown_ms))
            .and_then(|q| match &p.half_open {
                Some(h) => q.try_with_half_open_rate(h.calls, h.failure_rate),
                None => Ok(q),
            })
            .map_err(|e| D::Error::custom(e.message()))?;
        let policy = if p.patient_probation {
            policy.with_patient_probation()
        } else {
            policy
        };
        Ok(if p.count_calls { policy.counting_calls() } else { policy })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename = "Snapshot", deny_unknown_fields)]
struct SnapshotRepr {
    phase: Phase,
    forced: bool,
    probing: bool,
    strikes: u8,
    streak: u8,
    step: u8,
    remaining_ms: Duration,
    counters: Counters,
    /// A windowed breaker's window (may be left out: none).
    #[serde(default)]
    window: WindowSnapshotRepr,
}

/// [`WindowSnapshot`] by name: `"none"`, `{"calls": {"len": .., "failures": .., "slow": ..}}`
/// or `{"time": [{"calls": .., "failures": .., "slow": ..}, ..]}` (ten buckets, newest first).
#[derive(Default, Serialize, Deserialize)]
#[serde(rename = "WindowSnapshot", rename_all = "snake_case", deny_unknown_fields)]
enum WindowSnapshotRepr {
    #[default]
    None,
    Calls {
        len: u8,
        failures: u64,
        slow: u64,
    },
    Time([BucketRepr; WINDOW_BUCKETS as usize]),
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename = "Bucket", deny_unknown_fields)]
struct BucketRepr {
    calls: u16,
    failures: u16,
    slow: u16,
}

impl From<WindowSnapshot> for WindowSnapshotRepr {
    fn from(w: WindowSnapshot) -> WindowSnapshotRepr {
        match w {
            WindowSnapshot::None => WindowSnapshotRepr::None,
            WindowSnapshot::Calls { len, failures, slow } => WindowSnapshotRepr::Calls { len, failures, slow },
            WindowSnapshot::Time { buckets } => WindowSnapshotRepr::Time(buckets.map(|b| BucketRepr {
                calls: b.calls,
                failures: b.failures,
                slow: b.slow,
            })),
        }
    }
}

impl From<WindowSnapshotRepr> for WindowSnapshot {
    fn from(w: WindowSnapshotRepr) -> WindowSnapshot {
        match w {
            WindowSnapshotRepr::None => WindowSnapshot::None,
            WindowSnapshotRepr::Calls { len, failures, slow } => WindowSnapshot::Calls { len, failures, slow },
            WindowSnapshotRepr::Time(buckets) => WindowSnapshot::Time {
                buckets: buckets.map(|b| Bucket {
                    calls: b.calls,
                    failures: b.failures,
                    slow: b.slow,
                }),
            },
        }
    }
}

/// Every field by name (`remaining_ms` for the wait left).
impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SnapshotRepr {
            phase: self.phase,
            forced: self.forced,
            probing: self.probing,
            strikes: self.strikes,
            streak: self.streak,
            step: self.step,
            remaining_ms: self.remaining,
            counters: self.counters,
            window: self.window.into(),
        }
        .serialize(s)
    }
}

/// The serialized form, checked by [`Snapshot::check`]: a state no breaker can be in
/// (probing while closed, a streak above 15) is an error, never a wrong state.
impl<'de> Deserialize<'de> for Snapshot {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Snapshot, D::Error> {
        let r = SnapshotRepr::deserialize(d)?;
        let snapshot = Snapshot {
            phase: r.phase,
            forced: r.forced,
            probing: r.probing,
            strikes: r.strikes,
            streak: r.streak,
            step: r.step,
            remaining: r.remaining_ms,
            counters: r.counters,
            window: r.window.into(),
        };
        snapshot
            .check()
            .map_err(|_| D::Error::custom("snapshot holds an impossible state"))?;
        Ok(snapshot)
    }
}

/// `{"from": "closed", "to": "open", "why": "strikes", "at_ms": 1200, "cooldown_ms": 30000}`.
impl Serialize for Transition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Transition", 5)?;
        st.serialize_field("from", &self.from)?;
        st.serialize_field("to", &self.to)?;
        st.serialize_field("why", &self.why)?;
        st.serialize_field("at_ms", &self.at)?;
        st.serialize_field("cooldown_ms", &self.cooldown)?;
        st.end()
    }
}

/// The transitions, oldest first, as a sequence of [`Transition`]s.
impl Serialize for Recent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// `{"name": .., "now_ms": .., "state": {..}, "counters": {..}, "would_allow": ..,
/// "shadow": .., "policy": {..}, "history": [..]}`: `shadow` is `true` in
/// [shadow mode](crate::SharedBreaker#shadow-mode); `history` lists the recent transitions
/// oldest first (each as [`Transition`] serializes), and is `null` for a breaker that keeps
/// none.
impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Report", 8)?;
        st.serialize_field("name", self.name)?;
        st.serialize_field("now_ms", &self.now)?;
        st.serialize_field("state", &self.state)?;
        st.serialize_field("counters", &SharedCounters(self.counters, self.policy.counts_calls()))?;
        st.serialize_field("would_allow", &self.would_allow)?;
        st.serialize_field("shadow", &self.shadow)?;
        st.serialize_field("policy", &self.policy)?;
        st.serialize_field("history", &self.history)?;
        st.end()
    }
}

/// `{"status": "degraded", "breakers": [..]}`: the overall status
/// ([`HealthStatus::key`]) and each breaker's [`Report`], as [`Table`] serializes them.
impl Serialize for Health<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Health", 2)?;
        st.serialize_field("status", self.status().key())?;
        st.serialize_field("breakers", &self.table())?;
        st.end()
    }
}

/// `"up"`, `"degraded"`, `"down"`.
impl Serialize for HealthStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

/// A sequence of its entries' [`Report`]s: `serde_json::to_string(&registry::table())`
/// is the whole registry as JSON.
impl Serialize for Table<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entries = self.entries();
        let mut seq = s.serialize_seq(Some(entries.len()))?;
        for entry in entries {
            seq.serialize_element(&entry.report())?;
        }
        seq.end()
    }
}
