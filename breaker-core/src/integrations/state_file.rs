//! Squad's state file: a quota-guarded breaker's state as JSON on disk, written atomically, with wall-clock times so that time spent down counts.
//!
//! Feature `state-file` (it implies `std` and `serde`). It builds on [`Snapshot`], the
//! breaker's state with the *remaining* cooldown, and anchors it to the wall clock
//! ([`SystemTime`]) instead of the monotonic one, which starts again with every process: a
//! breaker that opened with 8 minutes of cooldown, saved, and restarted 3 minutes later
//! resumes with 5 minutes left.
//!
//! ```json
//! {
//!   "format": "breaker quota state",
//!   "version": 1,
//!   "status": "open",
//!   "openedAtUnixMs": 1755267825000,
//!   "cooldownMs": 480000,
//!   "consecutiveFailures": 3,
//!   "consecutiveSuccesses": 0,
//!   "probing": false,
//!   "lastRemaining": 42,
//!   "lastTotal": 5000
//! }
//! ```
//!
//! # Moving from Squad
//!
//! Squad's own file (`.squad/ralph-circuit-breaker.json`, fields `status`, `openedAt` as
//! an ISO-8601 UTC time, `cooldownMinutes`, `consecutiveFailures`, `consecutiveSuccesses`,
//! `lastRateLimitRemaining`, `lastRateLimitTotal`) is read too: [`SavedState::from_json`]
//! imports it ([`SavedState::from_squad_json`]), so an open breaker stays open with its
//! cooldown resumed, and [`StateFile::load`] writes it back at once in this format (the
//! next start reads it as its own). Its `consecutiveFailures` is the number of openings
//! since the last close, as here.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::policy::{MAX_BACKOFF_STEP, MAX_PROBES};
use crate::quota_guard::Steer;
use crate::{Counters, Duration, Instant, Phase, Policy, Quota, QuotaGuard, QuotaObserver, Snapshot};

/// What the `"format"` field of a state file says.
const FORMAT: &str = "breaker quota state";
/// The version written, and the only one read.
const VERSION: u32 = 1;

/// A breaker's status, as the state file spells it (`"closed"`, `"open"`, `"half-open"`,
/// `"forced-open"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(rename_all = "kebab-case")]
pub enum SavedStatus {
    /// Closed.
    Closed,
    /// Open, cooling down.
    Open,
    /// Half-open.
    HalfOpen,
    /// Open until reset.
    ForcedOpen,
}

/// What a state file holds: Squad's fields. Times are wall-clock times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SavedState {
    /// The status.
    pub status: SavedStatus,
    /// Open: when the cooldown started counting (the opening, or later when a trip
    /// verdict asked for a longer hold). `None` in any other status.
    pub opened_at: Option<SystemTime>,
    /// Open: the cooldown running since `opened_at`. Otherwise the cooldown the next
    /// opening would get.
    pub cooldown: Duration,
    /// Closed: consecutive strikes. Open or half-open: openings since the last close (1
    /// for the first, 2 after a re-open, and so on: the backoff step plus one).
    pub consecutive_failures: u32,
    /// Half-open: consecutive probe successes so far (under a half-open failure rate,
    /// [`Policy::with_half_open_rate`](crate::Policy::with_half_open_rate), the probe
    /// successes counted; its probe failures have no field in this format, so a breaker
    /// restored from it counts them from zero).
    pub consecutive_successes: u32,
    /// Half-open: a probe was out when the state was saved.
    pub probing: bool,
    /// The last quota the guard observed.
    pub last_quota: Option<Quota>,
}

/// Why a state file's contents were rejected.
#[derive(Debug)]
#[non_exhaustive]
pub enum StateFileProblem {
    /// Not valid JSON: a torn, truncated or corrupt file.
    Corrupt(serde_json::Error),
    /// Valid JSON, but not a breaker quota state file (another program's file).
    Foreign(String),
    /// A breaker quota state file of a version this build does not read.
    UnsupportedVersion(u32),
    /// A breaker quota state file holding values that contradict each other.
    Invalid(&'static str),
}

impl fmt::Display for StateFileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateFileProblem::Corrupt(e) => write!(f, "not valid JSON ({e})"),
            StateFileProblem::Foreign(why) => write!(f, "not a breaker quota state file ({why})"),
            StateFileProblem::UnsupportedVersion(v) => write!(
                f,
                "state file version {v} is not supported (this build reads {VERSION})"
            ),
            StateFileProblem::Invalid(why) => write!(f, "impossible state ({why})"),
        }
    }
}

impl std::error::Error for StateFileProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StateFileProblem::Corrupt(e) => Some(e),
            _ => None,
        }
    }
}

/// Why [`StateFile::load`] could not give a state. The program goes on with the breaker
/// it has (a fresh one is closed).
#[derive(Debug)]
#[non_exhaustive]
pub enum StateFileError {
    /// The file exists but could not be read (permissions, a directory in its place): it
    /// is left where it is.
    Read(io::Error),
    /// The file's contents were rejected; the file was renamed to `kept_at` (never
    /// overwritten), so the next save starts afresh and nothing is lost.
    Rejected {
        /// What was wrong with it.
        problem: StateFileProblem,
        /// Where the rejected file is now.
        kept_at: PathBuf,
    },
    /// The file's contents were rejected, and renaming it failed: it is still in place,
    /// and the next save will replace it.
    NotSetAside {
        /// What was wrong with it.
        problem: StateFileProblem,
        /// Why the rename failed.
        error: io::Error,
    },
}

impl fmt::Display for StateFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateFileError::Read(e) => write!(f, "cannot read the breaker state file: {e}"),
            StateFileError::Rejected { problem, kept_at } => {
                write!(
                    f,
                    "breaker state file rejected: {problem}; kept at {}",
                    kept_at.display()
                )
            }
            StateFileError::NotSetAside { problem, error } => {
                write!(
                    f,
                    "breaker state file rejected: {problem}; could not set it aside: {error}"
                )
            }
        }
    }
}

impl std::error::Error for StateFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StateFileError::Read(e) => Some(e),
            StateFileError::Rejected { problem, .. } | StateFileError::NotSetAside { problem, .. } => Some(problem),
        }
    }
}

/// The JSON of a state file, field for field.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Record {
    format: String,
    version: u32,
    status: SavedStatus,
    opened_at_unix_ms: Option<u64>,
    cooldown_ms: u32,
    consecutive_failures: u32,
    consecutive_successes: u32,
    probing: bool,
    last_remaining: Option<u32>,
    last_total: Option<u32>,
}

/// The fields read first, to tell a foreign file or another version from a corrupt one.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

impl Header {
    /// The header of a state file of this format (any version), if `bytes` have one.
    fn of(bytes: &[u8]) -> Option<Header> {
        Header::deserialize(&json_object(bytes).ok()?).ok()
    }
}

/// `bytes` as a JSON object: not JSON is [`StateFileProblem::Corrupt`], JSON of another
/// shape (an array, a number) is [`StateFileProblem::Foreign`].
fn json_object(bytes: &[u8]) -> Result<serde_json::Value, StateFileProblem> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(StateFileProblem::Corrupt)?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(StateFileProblem::Foreign("it is JSON, but not an object".into()))
    }
}

/// Squad's own state file, field for field (other fields are ignored).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SquadRecord {
    status: String,
    opened_at: Option<String>,
    cooldown_minutes: u32,
    consecutive_failures: u32,
    #[serde(default)]
    consecutive_successes: u32,
    last_rate_limit_remaining: Option<u32>,
    last_rate_limit_total: Option<u32>,
}

/// Milliseconds since 1970 of an ISO-8601 time as JavaScript's `toISOString` writes it:
/// `YYYY-MM-DDTHH:MM:SS`, optional fraction, then `Z` or an offset `±HH:MM`. `None` for
/// anything else, or a time before 1970.
fn iso8601_unix_ms(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let num = |range: core::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        digits
            .iter()
            .try_fold(0i64, |n, d| n.checked_mul(10)?.checked_add(i64::from(d - b'0')))
    };
    let sep = |at: usize, c: u8| b.get(at) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && (sep(10, b'T') || sep(10, b't')) && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut at = 19;
    let mut millis = 0i64;
    if sep(at, b'.') {
        let start = at + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == start {
            return None;
        }
        // Milliseconds: the first three digits, padded.
        for i in 0..3 {
            millis = millis * 10
                + b.get(start + i)
                    .filter(|_| start + i < end)
                    .map_or(0, |d| i64::from(d - b'0'));
        }
        at = end;
    }
    let offset_minutes = match b.get(at..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), ..] if b.len() == at + 6 && sep(at + 3, b':') => {
            let minutes = num(at + 1..at + 3)? * 60 + num(at + 4..at + 6)?;
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    // Days from 1970-01-01 to the date (the proleptic Gregorian calendar).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(seconds.checked_mul(1_000)?.checked_add(millis)?).ok()
}

fn to_std(d: Duration) -> std::time::Duration {
    std::time::Duration::from_millis(u64::from(d.as_millis()))
}

fn unix_ms(t: SystemTime) -> u64 {
    // Before 1970 reads as 1970: a defined answer for a clock set far back.
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl SavedState {
    /// The state to save for a breaker whose [`Snapshot`] at this moment is `snapshot`,
    /// following `policy`, with `last` the last quota observed and `wall_now` the wall
    /// clock's reading at the same moment.
    pub fn capture(snapshot: &Snapshot, policy: &Policy, last: Option<Quota>, wall_now: SystemTime) -> SavedState {
        let cooldown = policy.cooldown_at(snapshot.step);
        let openings = u32::from(snapshot.step) + 1;
        let base = SavedState {
            status: SavedStatus::Closed,
            opened_at: None,
            cooldown,
            consecutive_failures: openings,
            consecutive_successes: 0,
            probing: false,
            last_quota: last,
        };
        match snapshot.phase {
            Phase::Closed => SavedState {
                consecutive_failures: u32::from(snapshot.strikes),
                ..base
            },
            Phase::Open if snapshot.forced => SavedState {
                status: SavedStatus::ForcedOpen,
                ..base
            },
            Phase::Open => {
                // A trip verdict's hold can leave more than the cooldown: then the hold is
                // the cooldown running, and it started now.
                let cooldown = cooldown.max(snapshot.remaining);
                let spent = to_std(cooldown.saturating_sub(snapshot.remaining));
                SavedState {
                    status: SavedStatus::Open,
                    opened_at: Some(wall_now.checked_sub(spent).unwrap_or(wall_now)),
                    cooldown,
                    ..base
                }
            }
            Phase::HalfOpen => SavedState {
                status: SavedStatus::HalfOpen,
                consecutive_successes: u32::from(snapshot.streak),
                probing: snapshot.probing,
                ..base
            },
        }
    }

    /// Reads Squad's own state file (`.squad/ralph-circuit-breaker.json`; its fields are
    /// `status`, `openedAt` as an ISO-8601 UTC time, `cooldownMinutes`,
    /// `consecutiveFailures`, `consecutiveSuccesses`, `lastRateLimitRemaining` and
    /// `lastRateLimitTotal`; `consecutiveFailures` counts the openings since the last close,
    /// as here): `status` `"closed"`, `"open"` or `"half-open"` (any case, `_` for `-`), `openedAt`
    /// required when open. Anything else is a [`StateFileProblem`].
    ///
    /// ```
    /// use breaker_core::{Duration, SavedState, SavedStatus};
    ///
    /// let squad = br#"{"status": "open", "openedAt": "2025-08-15T14:23:45.000Z", "cooldownMinutes": 8,
    ///     "consecutiveFailures": 3, "consecutiveSuccesses": 0, "lastRateLimitRemaining": 42, "lastRateLimitTotal": 5000}"#;
    /// let state = SavedState::from_squad_json(squad).unwrap();
    /// assert_eq!(state.status, SavedStatus::Open);
    /// assert_eq!(state.cooldown, Duration::from_mins(8));
    /// let opened = state.opened_at.unwrap().duration_since(std::time::UNIX_EPOCH).unwrap();
    /// assert_eq!(opened.as_millis(), 1_755_267_825_000);
    /// ```
    pub fn from_squad_json(bytes: &[u8]) -> Result<SavedState, StateFileProblem> {
        let value = json_object(bytes)?;
        let squad = SquadRecord::deserialize(&value).map_err(|e| StateFileProblem::Foreign(e.to_string()))?;
        SavedState::from_squad(squad)
    }

    fn from_squad(r: SquadRecord) -> Result<SavedState, StateFileProblem> {
        let status = match r.status.to_ascii_lowercase().replace('_', "-").as_str() {
            "closed" => SavedStatus::Closed,
            "open" => SavedStatus::Open,
            "half-open" | "halfopen" => SavedStatus::HalfOpen,
            _ => return Err(StateFileProblem::Invalid("Squad's status is closed, open or half-open")),
        };
        let cooldown_ms = r
            .cooldown_minutes
            .checked_mul(60_000)
            .filter(|ms| *ms <= Duration::MAX.as_millis())
            .ok_or(StateFileProblem::Invalid(
                "cooldownMinutes is longer than a breaker's longest cooldown",
            ))?;
        let opened_at = match (status, r.opened_at) {
            (SavedStatus::Open, None) => {
                return Err(StateFileProblem::Invalid("an open breaker's state needs openedAt"))
            }
            (SavedStatus::Open, Some(at)) => Some(
                iso8601_unix_ms(&at)
                    .map(|ms| UNIX_EPOCH + std::time::Duration::from_millis(ms))
                    .ok_or(StateFileProblem::Invalid("openedAt is not an ISO-8601 time"))?,
            ),
            _ => None,
        };
        let last_quota = match (r.last_rate_limit_remaining, r.last_rate_limit_total) {
            (Some(remaining), Some(total)) => Some(Quota::new(remaining, total)),
            (None, None) => None,
            _ => {
                return Err(StateFileProblem::Invalid(
                    "lastRateLimitRemaining and lastRateLimitTotal go together",
                ))
            }
        };
        Ok(SavedState {
            status,
            opened_at,
            cooldown: Duration::from_millis(cooldown_ms),
            consecutive_failures: r.consecutive_failures,
            consecutive_successes: r.consecutive_successes,
            probing: false,
            last_quota,
        })
    }

    /// The [`Snapshot`] this state describes at wall-clock time `wall_now`, carrying
    /// `counters` (the file keeps none). Open: the cooldown left is the cooldown minus the
    /// wall-clock time since `opened_at` (none, if the wall clock now reads earlier: a
    /// clock set back does not shorten the wait), so time spent down counts. Half-open with
    /// a probe out: that probe died with the process that saved the state, so its lease has
    /// run out and the next call re-opens the breaker with the next cooldown, as for any
    /// vanished probe. Values beyond what a breaker holds are cut to the most it holds.
    pub fn to_snapshot(&self, counters: Counters, wall_now: SystemTime) -> Snapshot {
        let step = self
            .consecutive_failures
            .saturating_sub(1)
            .min(u32::from(MAX_BACKOFF_STEP)) as u8;
        let mut s = Snapshot {
            phase: Phase::Closed,
            forced: false,
            probing: false,
            strikes: 0,
            streak: 0,
            step,
            remaining: Duration::ZERO,
            counters,
            // Squad's file keeps no failure-rate window: a restored breaker starts with an
            // empty one.
            window: crate::window::WindowSnapshot::None,
        };
        match self.status {
            SavedStatus::Closed => {
                s.step = 0;
                s.strikes = self.consecutive_failures.min(u32::from(u8::MAX)) as u8;
            }
            SavedStatus::Open => {
                s.phase = Phase::Open;
                let spent = self
                    .opened_at
                    .and_then(|at| wall_now.duration_since(at).ok())
                    .unwrap_or_default();
                let spent = Duration::from_millis(u32::try_from(spent.as_millis()).unwrap_or(u32::MAX));
                s.remaining = self.cooldown.saturating_sub(spent);
            }
            SavedStatus::ForcedOpen => {
                s.phase = Phase::Open;
                s.forced = true;
            }
            SavedStatus::HalfOpen => {
                s.phase = Phase::HalfOpen;
                s.probing = self.probing;
                s.streak = self.consecutive_successes.min(MAX_PROBES) as u8;
            }
        }
        s
    }

    /// The state as the JSON a state file holds (pretty-printed, ending in a newline).
    pub fn to_json(&self) -> String {
        let record = Record {
            format: FORMAT.to_string(),
            version: VERSION,
            status: self.status,
            opened_at_unix_ms: self.opened_at.map(unix_ms),
            cooldown_ms: self.cooldown.as_millis(),
            consecutive_failures: self.consecutive_failures,
            consecutive_successes: self.consecutive_successes,
            probing: self.probing,
            last_remaining: self.last_quota.map(|q| q.remaining),
            last_total: self.last_quota.map(|q| q.total),
        };
        // A struct of plain fields and strings: serialising it cannot fail.
        let mut json = serde_json::to_string_pretty(&record).unwrap_or_default();
        json.push('\n');
        json
    }

    /// Reads the JSON a state file holds, this format's or Squad's
    /// ([`SavedState::from_squad_json`]). Truncated or corrupt bytes, another program's
    /// JSON, another version, or contradicting fields give a [`StateFileProblem`], never a panic.
    pub fn from_json(bytes: &[u8]) -> Result<SavedState, StateFileProblem> {
        // JSON at all first: a field of the wrong type can come before a syntax error (or
        // a string that is not UTF-8) further on, and only JSON is another program's file.
        // Every later step reads that parsed value, so none of them can call valid JSON
        // corrupt (a struct read straight from an array with more elements than it has
        // fields is a syntax error to serde_json).
        let value = json_object(bytes)?;
        let header: Header = match Header::deserialize(&value) {
            Ok(header) => header,
            Err(e) => {
                // No `format`: Squad's own file, or another program's.
                return match SquadRecord::deserialize(&value) {
                    Ok(squad) => SavedState::from_squad(squad),
                    Err(_) => Err(StateFileProblem::Foreign(e.to_string())),
                };
            }
        };
        if header.format != FORMAT {
            return Err(StateFileProblem::Foreign(std::format!(
                "its format is {:?}",
                header.format
            )));
        }
        if header.version != VERSION {
            return Err(StateFileProblem::UnsupportedVersion(header.version));
        }
        let r = Record::deserialize(&value).map_err(|e| StateFileProblem::Foreign(e.to_string()))?;
        let last_quota = match (r.last_remaining, r.last_total) {
            (Some(remaining), Some(total)) => Some(Quota::new(remaining, total)),
            (None, None) => None,
            _ => return Err(StateFileProblem::Invalid("lastRemaining and lastTotal go together")),
        };
        if r.cooldown_ms > Duration::MAX.as_millis() {
            return Err(StateFileProblem::Invalid(
                "cooldownMs is longer than a breaker's longest cooldown",
            ));
        }
        if r.status == SavedStatus::Open && r.opened_at_unix_ms.is_none() {
            return Err(StateFileProblem::Invalid(
                "an open breaker's state needs openedAtUnixMs",
            ));
        }
        if r.probing && r.status != SavedStatus::HalfOpen {
            return Err(StateFileProblem::Invalid("only a half-open breaker has a probe out"));
        }
        Ok(SavedState {
            status: r.status,
            opened_at: match r.status {
                SavedStatus::Open => r
                    .opened_at_unix_ms
                    .map(|ms| UNIX_EPOCH + std::time::Duration::from_millis(ms)),
                _ => None,
            },
            cooldown: Duration::from_millis(r.cooldown_ms),
            consecutive_failures: r.consecutive_failures,
            consecutive_successes: r.consecutive_successes,
            probing: r.probing,
            last_quota,
        })
    }
}

/// A state file on disk.
///
/// - [`StateFile::save`] writes atomically: the JSON goes to a temporary file in the same
///   directory, which is flushed and synced to disk, then renamed over the state file
///   (and the directory synced, on Unix). A crash at any point leaves either the old file
///   or the new one, never a torn one.
/// - [`StateFile::load`]: a missing file is `Ok(None)` (start a fresh, closed breaker); a
///   corrupt or foreign file is a [`StateFileError`] and is renamed aside
///   (`NAME.rejected`, or `NAME.rejected.1`, ... if taken): never overwritten, never a
///   panic, and the program goes on closed.
///
/// [`QuotaGuard::save_state`] and [`QuotaGuard::resume`] do it for a guarded breaker.
///
/// ```
/// use std::time::{Duration as StdDuration, SystemTime};
///
/// use breaker_core::{Breaker, Duration, Instant, Phase, Policy, Quota, QuotaGuard, QuotaPolicy, StateFile};
///
/// let dir = std::env::temp_dir().join(format!("breaker-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let file = StateFile::new(dir.join("breaker.json"));
/// let policy = Policy::new(3, Duration::from_mins(8));
/// let wall = SystemTime::UNIX_EPOCH + StdDuration::from_secs(1_755_267_825);
///
/// // First run: the quota runs out, the breaker opens for 8 minutes; 3 minutes later it is saved.
/// let mut guard = QuotaGuard::<_>::new(Breaker::new(policy), QuotaPolicy::new());
/// guard.observe(Quota::new(42, 5_000), Instant::ZERO); // red
/// let three_min = Instant::from_millis(180_000);
/// guard.save_state(&file, three_min, wall + StdDuration::from_secs(180)).unwrap();
///
/// // The process dies; a new one starts 1 minute later, its monotonic clock back at zero.
/// let mut guard = QuotaGuard::<_>::new(Breaker::new(policy), QuotaPolicy::new());
/// assert!(guard.resume(&file, Instant::ZERO, wall + StdDuration::from_secs(240)).unwrap().is_some());
/// let left = Duration::from_mins(4);
/// assert_eq!(guard.state(Instant::ZERO), breaker_core::State::Open { remaining: left, forced: false });
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StateFile {
    path: PathBuf,
}

impl StateFile {
    /// The state file at `path` (Squad's is `.squad/ralph-circuit-breaker.json`).
    pub fn new(path: impl Into<PathBuf>) -> StateFile {
        StateFile { path: path.into() }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the state: `Ok(None)` if there is no file. A file whose contents are rejected
    /// is renamed aside (see [`StateFileError::Rejected`]).
    pub fn load(&self) -> Result<Option<SavedState>, StateFileError> {
        let bytes = match fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StateFileError::Read(e)),
        };
        match SavedState::from_json(&bytes) {
            Ok(state) => {
                if Header::of(&bytes).is_none() {
                    // Squad's file: written back in this format, so that the next start
                    // reads its own. If that fails the file stays as it was, and is
                    // imported again next time.
                    let _ = self.save(&state);
                }
                Ok(Some(state))
            }
            Err(problem) => match self.set_aside() {
                Ok(kept_at) => Err(StateFileError::Rejected { problem, kept_at }),
                Err(error) => Err(StateFileError::NotSetAside { problem, error }),
            },
        }
    }

    /// Writes `state` atomically (see the type's documentation).
    pub fn save(&self, state: &SavedState) -> io::Result<()> {
        write_atomically(&self.path, state.to_json().as_bytes(), |_| Ok(()))
    }

    /// Renames the file to the first free `NAME.rejected`, `NAME.rejected.1`, ...
    fn set_aside(&self) -> io::Result<PathBuf> {
        let mut name = self.path.clone().into_os_string();
        name.push(".rejected");
        let first = PathBuf::from(name);
        for i in 0u32..1000 {
            let candidate = if i == 0 {
                first.clone()
            } else {
                let mut n = first.clone().into_os_string();
                n.push(std::format!(".{i}"));
                PathBuf::from(n)
            };
            // `symlink_metadata`: a dangling link is taken too, and is not overwritten.
            if fs::symlink_metadata(&candidate).is_ok() {
                continue;
            }
            fs::rename(&self.path, &candidate)?;
            return Ok(candidate);
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "a thousand rejected state files are already set aside",
        ))
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory: written,
/// flushed, synced, then renamed over `path`. `before_rename` runs between the sync and the
/// rename (tests make it fail, as a crash would stop the write there). On failure the
/// temporary file is removed and `path` is untouched.
fn write_atomically(path: &Path, bytes: &[u8], before_rename: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a state file path must end in a file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(std::format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.flush()?;
        f.sync_all()?;
        drop(f);
        before_rename(&tmp)?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename itself reaches the disk when the directory does. Best effort: not every
    // platform can open a directory.
    #[cfg(unix)]
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

impl<B: Steer, const N: usize> QuotaGuard<B, N> {
    /// The state to save now: the breaker's at monotonic instant `now`, anchored to the
    /// wall clock's reading `wall_now` taken at the same moment, with the gauge's last
    /// quota.
    pub fn saved_state(&self, now: Instant, wall_now: SystemTime) -> SavedState {
        let snapshot = self.breaker().take_snapshot(now);
        let last = self.gauge().last().map(|s| s.quota());
        SavedState::capture(&snapshot, &self.breaker().policy(), last, wall_now)
    }

    /// Writes [`QuotaGuard::saved_state`] to `file`, atomically.
    pub fn save_state(&self, file: &StateFile, now: Instant, wall_now: SystemTime) -> io::Result<()> {
        file.save(&self.saved_state(now, wall_now))
    }

    /// Takes `state` as of monotonic instant `now` and wall-clock time `wall_now`: the
    /// breaker resumes its wait with the wall-clock time since `opened_at` counted
    /// ([`SavedState::to_snapshot`]); its counters are kept; permits granted before
    /// become stale. The observer hears of the last quota; the gauge starts empty, since its
    /// samples' instants were read from the previous process's clock.
    pub fn restore_state(&mut self, state: &SavedState, now: Instant, wall_now: SystemTime) {
        let counters = self.breaker().take_snapshot(now).counters;
        let snapshot = state.to_snapshot(counters, wall_now);
        self.breaker_mut().restore_snapshot(&snapshot, now);
        self.gauge_mut().clear();
        if let Some(q) = state.last_quota {
            self.breaker().quota_observer().on_quota(&q);
        }
    }

    /// Loads `file` and takes its state ([`QuotaGuard::restore_state`]): `Ok(Some(state))`
    /// when restored, `Ok(None)` when there is no file (the breaker is left as it is: a
    /// fresh one is closed). On an error the breaker is left as it is too, and a rejected
    /// file has been renamed aside.
    pub fn resume(
        &mut self,
        file: &StateFile,
        now: Instant,
        wall_now: SystemTime,
    ) -> Result<Option<SavedState>, StateFileError> {
        let state = file.load()?;
        if let Some(s) = &state {
            self.restore_state(s, now, wall_now);
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration as StdDuration;
    use std::vec::Vec;

    use super::*;
    use crate::{Breaker, QuotaPolicy, Reason, State};

    /// The names of the files in `dir`, sorted.
    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A fresh directory under the system's temporary one, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir().join(std::format!("breaker-state-file-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn each_state_file_error_gives_what_went_wrong_as_its_source() {
        use std::error::Error as _;
        use std::string::ToString;
        let source = |e: &StateFileError| e.source().map(ToString::to_string);
        let read = StateFileError::Read(io::Error::new(io::ErrorKind::PermissionDenied, "denied"));
        assert_eq!(source(&read).as_deref(), Some("denied"));
        let rejected = StateFileError::Rejected {
            problem: StateFileProblem::Invalid("open without an opening time"),
            kept_at: PathBuf::from("quota.json.rejected"),
        };
        assert_eq!(
            source(&rejected).as_deref(),
            Some("impossible state (open without an opening time)")
        );
        let not_set_aside = StateFileError::NotSetAside {
            problem: StateFileProblem::UnsupportedVersion(9),
            error: io::Error::new(io::ErrorKind::PermissionDenied, "read-only"),
        };
        assert_eq!(
            source(&not_set_aside),
            Some(std::format!(
                "state file version 9 is not supported (this build reads {VERSION})"
            ))
        );
        // A problem's own source: the JSON error of a corrupt file, nothing for the others.
        let corrupt = StateFileProblem::Corrupt(serde_json::from_str::<u8>("{").unwrap_err());
        assert_eq!(
            corrupt.source().map(ToString::to_string),
            Some(serde_json::from_str::<u8>("{").unwrap_err().to_string())
        );
        assert!(StateFileProblem::Invalid("x").source().is_none());
    }

    fn squad() -> Policy {
        Policy::new(3, Duration::from_mins(2))
            .with_probes_to_close(2)
            .with_backoff(2, Duration::from_mins(30))
    }

    fn wall(secs: u64) -> SystemTime {
        UNIX_EPOCH + StdDuration::from_secs(1_755_267_825 + secs)
    }

    fn s(secs: u32) -> Instant {
        Instant::from_millis(secs * 1000)
    }

    fn open_state() -> SavedState {
        SavedState {
            status: SavedStatus::Open,
            opened_at: Some(wall(0)),
            cooldown: Duration::from_mins(8),
            consecutive_failures: 3,
            consecutive_successes: 0,
            probing: false,
            last_quota: Some(Quota::new(42, 5_000)),
        }
    }

    #[test]
    fn squads_example_round_trips_through_json() {
        let state = open_state();
        let json = state.to_json();
        assert_eq!(
            json,
            "{\n  \"format\": \"breaker quota state\",\n  \"version\": 1,\n  \"status\": \"open\",\n  \
             \"openedAtUnixMs\": 1755267825000,\n  \"cooldownMs\": 480000,\n  \"consecutiveFailures\": 3,\n  \
             \"consecutiveSuccesses\": 0,\n  \"probing\": false,\n  \"lastRemaining\": 42,\n  \"lastTotal\": 5000\n}\n"
        );
        assert_eq!(SavedState::from_json(json.as_bytes()).unwrap(), state);
    }

    #[test]
    fn consecutive_failures_give_squads_backoff_step() {
        // Squad's example: 3 consecutive failures, cooldown 8 minutes = 2 m doubled twice.
        let snap = open_state().to_snapshot(Counters::ZERO, wall(0));
        assert_eq!(
            (snap.phase, snap.step, snap.remaining),
            (Phase::Open, 2, Duration::from_mins(8))
        );
        assert_eq!(squad().cooldown_at(snap.step), Duration::from_mins(8));
    }

    #[test]
    fn time_spent_down_counts_toward_the_cooldown() {
        let snap = open_state().to_snapshot(Counters::ZERO, wall(300));
        assert_eq!(snap.remaining, Duration::from_mins(3));
        let over = open_state().to_snapshot(Counters::ZERO, wall(3_600));
        assert_eq!(
            over.remaining,
            Duration::ZERO,
            "down longer than the cooldown: nothing left"
        );
    }

    #[test]
    fn a_wall_clock_set_back_does_not_shorten_the_wait() {
        let mut state = open_state();
        state.opened_at = Some(wall(100));
        let snap = state.to_snapshot(Counters::ZERO, wall(40));
        assert_eq!(snap.remaining, Duration::from_mins(8));
    }

    #[test]
    fn capture_anchors_the_opening_to_the_wall_clock() {
        let mut b = Breaker::new(squad());
        b.trip(Reason::Predicted, s(0));
        let snapshot = b.snapshot(s(45));
        let state = SavedState::capture(&snapshot, &squad(), Some(Quota::new(2_100, 5_000)), wall(45));
        assert_eq!(state.status, SavedStatus::Open);
        assert_eq!(state.opened_at, Some(wall(0)));
        assert_eq!(
            (state.cooldown, state.consecutive_failures),
            (Duration::from_mins(2), 1)
        );
        let back = state.to_snapshot(Counters::ZERO, wall(45));
        assert_eq!(back.remaining, Duration::from_secs(75));
    }

    #[test]
    fn capture_keeps_a_forced_opening_and_a_hold_longer_than_the_cooldown() {
        let open = |forced: bool, remaining: Duration| Snapshot {
            phase: Phase::Open,
            forced,
            probing: false,
            strikes: 0,
            streak: 0,
            step: 0,
            remaining,
            counters: Counters::ZERO,
            window: crate::window::WindowSnapshot::None,
        };
        let forced = SavedState::capture(&open(true, Duration::ZERO), &squad(), None, wall(0));
        assert_eq!((forced.status, forced.opened_at), (SavedStatus::ForcedOpen, None));
        // A trip verdict's hold of 5 minutes with a 2-minute cooldown: the hold is the
        // cooldown running, started now.
        let held = SavedState::capture(&open(false, Duration::from_mins(5)), &squad(), None, wall(30));
        assert_eq!(
            (held.status, held.opened_at, held.cooldown),
            (SavedStatus::Open, Some(wall(30)), Duration::from_mins(5))
        );
    }

    #[test]
    fn closed_and_half_open_states_keep_their_counts() {
        let closed = SavedState::capture(
            &Snapshot {
                phase: Phase::Closed,
                forced: false,
                probing: false,
                strikes: 2,
                streak: 0,
                step: 0,
                remaining: Duration::ZERO,
                counters: Counters::ZERO,
                window: crate::window::WindowSnapshot::None,
            },
            &squad(),
            None,
            wall(0),
        );
        assert_eq!(
            (closed.status, closed.consecutive_failures, closed.opened_at),
            (SavedStatus::Closed, 2, None)
        );
        assert_eq!(closed.to_snapshot(Counters::ZERO, wall(9)).strikes, 2);
        let half = SavedState::capture(
            &Snapshot {
                phase: Phase::HalfOpen,
                forced: false,
                probing: true,
                strikes: 0,
                streak: 1,
                step: 1,
                remaining: Duration::from_secs(10),
                counters: Counters::ZERO,
                window: crate::window::WindowSnapshot::None,
            },
            &squad(),
            None,
            wall(0),
        );
        assert_eq!(
            (
                half.status,
                half.consecutive_failures,
                half.consecutive_successes,
                half.probing
            ),
            (SavedStatus::HalfOpen, 2, 1, true)
        );
        let back = half.to_snapshot(Counters::ZERO, wall(1));
        assert_eq!(
            (back.phase, back.probing, back.streak, back.step, back.remaining),
            (Phase::HalfOpen, true, 1, 1, Duration::ZERO)
        );
    }

    #[test]
    fn a_guard_over_a_borrowed_breaker_saves_and_restores_it_in_place() {
        let dir = TempDir::new("borrowed");
        let file = StateFile::new(dir.0.join("b.json"));
        let mut before = Breaker::new(squad());
        before.trip(Reason::Predicted, s(0));
        let guard = QuotaGuard::<_>::new(&mut before, QuotaPolicy::new());
        guard.save_state(&file, s(60), wall(60)).unwrap();

        let mut after = Breaker::new(squad());
        let mut guard = QuotaGuard::<_>::new(&mut after, QuotaPolicy::new());
        guard.resume(&file, s(0), wall(90)).unwrap().unwrap();
        // Opened at wall-clock 0 with a 2 m cooldown, resumed at 90 s: 30 s left.
        let open = State::Open {
            remaining: Duration::from_secs(30),
            forced: false,
        };
        assert_eq!(after.state(s(0)), open);
    }

    #[test]
    fn a_probe_out_when_saved_counts_as_vanished_after_a_restart() {
        let dir = TempDir::new("probe");
        let file = StateFile::new(dir.0.join("b.json"));
        let mut guard = QuotaGuard::<_>::new(Breaker::new(squad()), QuotaPolicy::new());
        guard.breaker_mut().trip(Reason::Predicted, s(0));
        let _probe = guard.breaker_mut().try_acquire(s(120)).unwrap();
        guard.save_state(&file, s(121), wall(121)).unwrap();

        let mut guard = QuotaGuard::<_>::new(Breaker::new(squad()), QuotaPolicy::new());
        guard.resume(&file, s(0), wall(130)).unwrap().unwrap();
        // The next look notices the lapsed lease: re-open, backoff advanced (4 m).
        assert_eq!(
            guard.state(s(0)),
            State::Open {
                remaining: Duration::from_mins(4),
                forced: false
            }
        );
    }

    #[test]
    fn a_missing_file_is_a_fresh_closed_breaker() {
        let dir = TempDir::new("missing");
        let file = StateFile::new(dir.0.join("nothing-here.json"));
        assert!(matches!(file.load(), Ok(None)));
        let mut guard = QuotaGuard::<_>::new(Breaker::new(squad()), QuotaPolicy::new());
        assert!(matches!(guard.resume(&file, s(0), wall(0)), Ok(None)));
        assert_eq!(guard.state(s(0)), State::Closed { strikes: 0 });
    }

    #[test]
    fn save_then_load_gives_the_same_state() {
        let dir = TempDir::new("round-trip");
        let file = StateFile::new(dir.0.join("b.json"));
        file.save(&open_state()).unwrap();
        assert_eq!(file.load().unwrap(), Some(open_state()));
        assert_eq!(names_in(&dir.0), ["b.json"], "no temporary file left behind");
    }

    #[test]
    fn a_write_that_dies_before_the_rename_leaves_the_old_file_whole() {
        let dir = TempDir::new("torn");
        let path = dir.0.join("b.json");
        let file = StateFile::new(&path);
        file.save(&open_state()).unwrap();
        let before = fs::read(&path).unwrap();
        let mut closed = open_state();
        closed.status = SavedStatus::Closed;
        closed.opened_at = None;
        let died = write_atomically(&path, closed.to_json().as_bytes(), |tmp| {
            // The new contents are complete on disk, in the temporary file only.
            assert_eq!(fs::read(tmp).unwrap(), closed.to_json().as_bytes());
            Err(io::Error::other("killed before the rename"))
        });
        assert!(died.is_err());
        assert_eq!(fs::read(&path).unwrap(), before);
        assert_eq!(file.load().unwrap(), Some(open_state()));
        assert_eq!(names_in(&dir.0), ["b.json"]);
    }

    #[test]
    fn a_stale_temporary_file_from_a_crash_changes_nothing() {
        let dir = TempDir::new("stale-tmp");
        let path = dir.0.join("b.json");
        let file = StateFile::new(&path);
        file.save(&open_state()).unwrap();
        let stale = dir.0.join(std::format!(".b.json.{}.tmp", std::process::id()));
        fs::write(&stale, b"{\"format\": \"breaker qu").unwrap();
        assert_eq!(file.load().unwrap(), Some(open_state()));
        file.save(&open_state()).unwrap();
        assert_eq!(names_in(&dir.0), ["b.json"], "the next save reuses and renames it");
    }

    fn rejected(bytes: &[u8]) -> (StateFileProblem, Vec<String>, Vec<u8>) {
        // Tests run in parallel: each rejection gets its own directory.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = TempDir::new(&std::format!("rejected-{n}"));
        let path = dir.0.join("b.json");
        fs::write(&path, bytes).unwrap();
        let file = StateFile::new(&path);
        let mut guard = QuotaGuard::<_>::new(Breaker::new(squad()), QuotaPolicy::new());
        let err = guard.resume(&file, s(0), wall(0)).unwrap_err();
        assert_eq!(
            guard.state(s(0)),
            State::Closed { strikes: 0 },
            "the program goes on closed"
        );
        let StateFileError::Rejected { problem, kept_at } = err else {
            panic!("expected a rejection, got {err:?}");
        };
        assert_eq!(kept_at, dir.0.join("b.json.rejected"));
        let kept = fs::read(&kept_at).unwrap();
        (problem, names_in(&dir.0), kept)
    }

    #[test]
    fn a_torn_file_is_corrupt_and_kept_aside() {
        let whole = open_state().to_json();
        let torn = &whole.as_bytes()[..whole.len() / 2];
        let (problem, names, kept) = rejected(torn);
        assert!(matches!(problem, StateFileProblem::Corrupt(_)), "{problem:?}");
        assert_eq!(names, ["b.json.rejected"]);
        assert_eq!(kept, torn, "kept byte for byte");
    }

    #[test]
    fn a_file_that_is_not_json_is_corrupt_whatever_comes_first() {
        // A wrong type early (a version that is a string), broken JSON later, or a string
        // that is not UTF-8: corrupt, not another program's file (the fuzz target
        // `state_file` found both reported so).
        let bytes = br#"{"format": "breaker quota state", "version": "one", "status": closed}"#;
        let (problem, _, _) = rejected(bytes);
        assert!(matches!(problem, StateFileProblem::Corrupt(_)), "{problem:?}");
        let (problem, _, _) = rejected(b"{\"status\": \"open\", \"note\": \"\xff\"}");
        assert!(matches!(problem, StateFileProblem::Corrupt(_)), "{problem:?}");
        // The same with valid JSON is foreign.
        let bytes = br#"{"format": "breaker quota state", "version": "one", "status": "closed"}"#;
        let (problem, _, _) = rejected(bytes);
        assert!(matches!(problem, StateFileProblem::Foreign(_)), "{problem:?}");
    }

    #[test]
    fn garbage_bytes_are_corrupt() {
        let (problem, _, _) = rejected(&[0xFF, 0x00, 0x13, b'{']);
        assert!(matches!(problem, StateFileProblem::Corrupt(_)), "{problem:?}");
        let (problem, _, _) = rejected(b"");
        assert!(matches!(problem, StateFileProblem::Corrupt(_)), "{problem:?}");
    }

    #[test]
    fn another_programs_json_is_foreign() {
        let (problem, _, _) = rejected(b"{\"name\": \"my-app\", \"version\": \"1.0.0\"}");
        assert!(matches!(problem, StateFileProblem::Foreign(_)), "{problem:?}");
        // Squad-like, but not Squad's: no cooldownMinutes.
        let (problem, _, _) = rejected(br#"{"status": "open", "openedAt": "2025-08-15T14:23:45.000Z"}"#);
        assert!(matches!(problem, StateFileProblem::Foreign(_)), "{problem:?}");
        let (problem, _, _) = rejected(b"[1, 2, 3]");
        assert!(matches!(problem, StateFileProblem::Foreign(_)), "{problem:?}");
        // An array longer than the header is valid JSON all the same (found by fuzzing:
        // read as a struct straight from the bytes, it was a syntax error, so corrupt).
        let (problem, _, _) = rejected(br#"[ "",  2,""]"#);
        assert!(matches!(problem, StateFileProblem::Foreign(_)), "{problem:?}");
        for not_an_object in [
            &b"7"[..],
            b"\"breaker quota state\"",
            b"null",
            br#"["breaker quota state", 1]"#,
        ] {
            let (problem, _, _) = rejected(not_an_object);
            assert!(matches!(problem, StateFileProblem::Foreign(_)), "{problem:?}");
            let squad = SavedState::from_squad_json(not_an_object).unwrap_err();
            assert!(matches!(squad, StateFileProblem::Foreign(_)), "{squad:?}");
        }
        let other_format = open_state().to_json().replace("breaker quota state", "something else");
        let (problem, _, _) = rejected(other_format.as_bytes());
        assert!(
            matches!(problem, StateFileProblem::Foreign(ref why) if why.contains("something else")),
            "{problem:?}"
        );
        let extra = open_state()
            .to_json()
            .replace("\"probing\"", "\"surprise\": 1, \"probing\"");
        let (problem, _, _) = rejected(extra.as_bytes());
        assert!(matches!(problem, StateFileProblem::Foreign(_)), "{problem:?}");
    }

    #[test]
    fn another_version_is_rejected_as_such() {
        let v2 = open_state().to_json().replace("\"version\": 1", "\"version\": 2");
        let (problem, _, _) = rejected(v2.as_bytes());
        assert!(
            matches!(problem, StateFileProblem::UnsupportedVersion(2)),
            "{problem:?}"
        );
    }

    #[test]
    fn contradicting_fields_are_invalid() {
        let no_time = open_state().to_json().replace("1755267825000", "null");
        let (problem, _, _) = rejected(no_time.as_bytes());
        assert!(matches!(problem, StateFileProblem::Invalid(_)), "{problem:?}");
        let half_quota = open_state()
            .to_json()
            .replace("\"lastTotal\": 5000", "\"lastTotal\": null");
        let (problem, _, _) = rejected(half_quota.as_bytes());
        assert!(matches!(problem, StateFileProblem::Invalid(_)), "{problem:?}");
        let probing_open = open_state()
            .to_json()
            .replace("\"probing\": false", "\"probing\": true");
        let (problem, _, _) = rejected(probing_open.as_bytes());
        assert!(matches!(problem, StateFileProblem::Invalid(_)), "{problem:?}");
        let huge = open_state().to_json().replace("480000", "4294967295");
        let (problem, _, _) = rejected(huge.as_bytes());
        assert!(matches!(problem, StateFileProblem::Invalid(_)), "{problem:?}");
        // The longest cooldown a breaker holds is read; a millisecond more is not.
        let longest = Duration::MAX.as_millis();
        let at_most = open_state().to_json().replace("480000", &longest.to_string());
        assert!(SavedState::from_json(at_most.as_bytes()).is_ok());
        let one_more = open_state().to_json().replace("480000", &(longest + 1).to_string());
        let (problem, _, _) = rejected(one_more.as_bytes());
        assert!(matches!(problem, StateFileProblem::Invalid(_)), "{problem:?}");
    }

    #[test]
    fn a_rejected_file_never_overwrites_an_earlier_one() {
        let dir = TempDir::new("aside");
        let path = dir.0.join("b.json");
        let file = StateFile::new(&path);
        fs::write(&path, b"first").unwrap();
        assert!(file.load().is_err());
        fs::write(&path, b"second").unwrap();
        let Err(StateFileError::Rejected { kept_at, .. }) = file.load() else {
            panic!("expected a rejection");
        };
        assert_eq!(kept_at, dir.0.join("b.json.rejected.1"));
        assert_eq!(names_in(&dir.0), ["b.json.rejected", "b.json.rejected.1"]);
        assert_eq!(fs::read(dir.0.join("b.json.rejected")).unwrap(), b"first");
        assert_eq!(fs::read(kept_at).unwrap(), b"second");
        // And the next save starts afresh beside them.
        file.save(&open_state()).unwrap();
        assert_eq!(file.load().unwrap(), Some(open_state()));
    }

    #[test]
    fn an_unreadable_path_is_a_read_error_and_left_in_place() {
        let dir = TempDir::new("unreadable");
        let path = dir.0.join("b.json");
        fs::create_dir(&path).unwrap(); // a directory where the file should be
        let file = StateFile::new(&path);
        assert!(matches!(file.load(), Err(StateFileError::Read(_))));
        assert!(path.is_dir());
    }

    #[test]
    fn errors_say_what_happened() {
        let e = StateFileError::Rejected {
            problem: StateFileProblem::UnsupportedVersion(7),
            kept_at: PathBuf::from("/x/b.json.rejected"),
        };
        assert_eq!(
            e.to_string(),
            "breaker state file rejected: state file version 7 is not supported (this build reads 1); kept at /x/b.json.rejected"
        );
    }

    const SQUAD_FILE: &[u8] = br#"{
  "status": "open",
  "openedAt": "2025-08-15T14:23:45.000Z",
  "cooldownMinutes": 8,
  "consecutiveFailures": 3,
  "consecutiveSuccesses": 0,
  "lastRateLimitRemaining": 42,
  "lastRateLimitTotal": 5000
}"#;

    #[test]
    fn squads_own_file_is_imported_with_its_cooldown_resumed_and_written_back_in_this_format() {
        let dir = TempDir::new("squad-import");
        let path = dir.0.join("ralph-circuit-breaker.json");
        fs::write(&path, SQUAD_FILE).unwrap();
        let file = StateFile::new(&path);
        let mut guard = QuotaGuard::<_>::new(Breaker::new(squad()), QuotaPolicy::new());
        // Three minutes after Squad's breaker opened for 8 minutes.
        let saved = guard.resume(&file, s(0), wall(180)).unwrap().unwrap();
        assert_eq!(saved.status, SavedStatus::Open);
        assert_eq!(saved.consecutive_failures, 3);
        assert_eq!(saved.last_quota, Some(Quota::new(42, 5_000)));
        assert_eq!(
            guard.state(s(0)),
            State::Open {
                remaining: Duration::from_mins(5),
                forced: false
            }
        );
        // Written back in this format; nothing set aside.
        assert_eq!(names_in(&dir.0), ["ralph-circuit-breaker.json"]);
        let back = SavedState::from_json(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(back, saved);
        assert!(Header::of(&fs::read(&path).unwrap()).is_some());
        // The next start reads its own file: the same five minutes, less the time since.
        let mut again = QuotaGuard::<_>::new(Breaker::new(squad()), QuotaPolicy::new());
        again.resume(&file, s(0), wall(240)).unwrap().unwrap();
        assert_eq!(
            again.state(s(0)),
            State::Open {
                remaining: Duration::from_mins(4),
                forced: false
            }
        );
    }

    #[test]
    fn squads_statuses_and_bad_squad_files() {
        let closed = br#"{"status": "CLOSED", "openedAt": null, "cooldownMinutes": 2, "consecutiveFailures": 0, "consecutiveSuccesses": 0}"#;
        let state = SavedState::from_json(closed).unwrap();
        assert_eq!(
            (state.status, state.opened_at, state.last_quota),
            (SavedStatus::Closed, None, None)
        );
        let half =
            br#"{"status": "half_open", "cooldownMinutes": 4, "consecutiveFailures": 2, "consecutiveSuccesses": 1}"#;
        let state = SavedState::from_json(half).unwrap();
        assert_eq!(
            (state.status, state.consecutive_successes, state.probing),
            (SavedStatus::HalfOpen, 1, false)
        );
        for (bad, why) in [
            (&br#"{"status": "tripped", "cooldownMinutes": 2, "consecutiveFailures": 1}"#[..], "status"),
            (br#"{"status": "open", "cooldownMinutes": 2, "consecutiveFailures": 1}"#, "openedAt"),
            (br#"{"status": "open", "openedAt": "yesterday", "cooldownMinutes": 2, "consecutiveFailures": 1}"#, "ISO-8601"),
            (br#"{"status": "open", "openedAt": "2025-02-30T00:00:00Z", "cooldownMinutes": 2, "consecutiveFailures": 1}"#, "ISO-8601"),
            (br#"{"status": "closed", "cooldownMinutes": 4000000, "consecutiveFailures": 0}"#, "longest"),
            (br#"{"status": "closed", "cooldownMinutes": 2, "consecutiveFailures": 0, "lastRateLimitTotal": 5000}"#, "together"),
        ] {
            match SavedState::from_json(bad) {
                Err(StateFileProblem::Invalid(text)) => assert!(text.contains(why), "{text}"),
                other => panic!("{}: {other:?}", String::from_utf8_lossy(bad)),
            }
        }
        // Cut short: corrupt, as any torn file.
        for cut in 1..SQUAD_FILE.len() {
            assert!(SavedState::from_json(&SQUAD_FILE[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn iso8601_times_as_javascript_writes_them() {
        assert_eq!(iso8601_unix_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso8601_unix_ms("1970-01-01T00:00:00.001Z"), Some(1));
        assert_eq!(iso8601_unix_ms("2025-08-15T14:23:45.000Z"), Some(1_755_267_825_000));
        assert_eq!(iso8601_unix_ms("2025-08-15T14:23:45Z"), Some(1_755_267_825_000));
        assert_eq!(iso8601_unix_ms("2025-08-15T14:23:45.5Z"), Some(1_755_267_825_500));
        assert_eq!(
            iso8601_unix_ms("2025-08-15T16:23:45.000+02:00"),
            Some(1_755_267_825_000)
        );
        assert_eq!(iso8601_unix_ms("2025-08-15T13:23:45-01:00"), Some(1_755_267_825_000));
        assert_eq!(iso8601_unix_ms("2025-08-15T19:53:45+05:30"), Some(1_755_267_825_000));
        assert_eq!(iso8601_unix_ms("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        assert_eq!(iso8601_unix_ms("2024-12-31T23:59:59.999Z"), Some(1_735_689_599_999));
        for bad in [
            "",
            "2025-08-15",
            "2025-08-15T14:23:45",
            "2025-13-01T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2025-08-15T24:00:00Z",
            "2025-08-15T14:23:45.Z",
            "2025-08-15T14:23:45+0200",
            "1969-12-31T23:59:59Z",
            "2025-08-15T14:23:45Zjunk",
            "+2025-08-15T14:23:45Z",
        ] {
            assert_eq!(iso8601_unix_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn iso8601_times_need_every_separator_digits_only_and_february_29th_in_leap_years_only() {
        for bad in [
            // Every separator, each where it belongs.
            "2025-08-15 14:23:45Z",
            "2025/08/15T14:23:45Z",
            "2025-08-15T14-23:45Z",
            // Digits only: a letter would pass for a number ('a' as 49).
            "2025-08-15T14:0a:45Z",
            // February 29th in leap years only: not 2025, not 2100 (a century not a
            // multiple of 400).
            "2025-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z",
        ] {
            assert_eq!(iso8601_unix_ms(bad), None, "{bad:?}");
        }
        assert_eq!(iso8601_unix_ms("2024-02-29T00:00:00Z"), Some(1_709_164_800_000));
    }

    #[test]
    fn iso8601_months_have_their_own_lengths_and_an_offset_is_hh_colon_mm_to_the_end() {
        // The last day of a month of 31, of 30 and of a February outside leap years...
        assert_eq!(iso8601_unix_ms("2025-01-31T00:00:00Z"), Some(1_738_281_600_000));
        assert_eq!(iso8601_unix_ms("2025-04-30T00:00:00Z"), Some(1_745_971_200_000));
        assert_eq!(iso8601_unix_ms("2025-02-28T00:00:00Z"), Some(1_740_700_800_000));
        assert_eq!(iso8601_unix_ms("2016-12-31T23:59:60Z"), Some(1_483_228_800_000));
        // ...and the day after it, which none has.
        for bad in [
            "2025-01-32T00:00:00Z",
            "2025-04-31T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2025-04-00T00:00:00Z",
            // A minute has 60 seconds and one more for a leap second, not two.
            "2025-08-15T14:60:00Z",
            "2025-08-15T14:23:61Z",
            // An offset is `±HH:MM`, with its colon, and ends the time.
            "2025-08-15T16:23:45+02-00",
            "2025-08-15T16:23:45+02:00:00",
        ] {
            assert_eq!(iso8601_unix_ms(bad), None, "{bad:?}");
        }
    }
}
