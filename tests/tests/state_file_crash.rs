//! Crash safety of the state file (`breaker-core/src/integrations/state_file.rs`),
//! attacked rather than asserted: a file cut at every byte, a byte flipped at every
//! offset, and a writer process killed with `SIGKILL` mid-save, many times.
//!
//! What the documentation promises: a save leaves the old file or the new one, never a
//! torn one; a file whose contents are rejected is a clear error, is renamed aside
//! (`NAME.rejected`) and the program goes on closed; never a panic.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration as StdDuration;

use breaker_core::{
    Breaker, Duration, Instant, Policy, Quota, QuotaGuard, QuotaPolicy, SavedState, SavedStatus, State, StateFile,
    StateFileError,
};
use tests::state_file::{index_of, nth, wall};

/// A fresh directory of one test's own, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("breaker-state-crash-{}-{name}", std::process::id()));
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

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn policy() -> Policy {
    Policy::new(3, Duration::from_mins(2))
        .with_probes_to_close(2)
        .with_backoff(2, Duration::from_mins(30))
}

/// A state of every status, with and without a quota.
fn states() -> Vec<SavedState> {
    let base = SavedState {
        status: SavedStatus::Closed,
        opened_at: None,
        cooldown: Duration::from_mins(2),
        consecutive_failures: 2,
        consecutive_successes: 0,
        probing: false,
        last_quota: None,
    };
    vec![
        base,
        SavedState {
            status: SavedStatus::Open,
            opened_at: Some(wall(0)),
            cooldown: Duration::from_mins(8),
            consecutive_failures: 3,
            last_quota: Some(Quota::new(42, 5_000)),
            ..base
        },
        SavedState {
            status: SavedStatus::HalfOpen,
            consecutive_failures: 1,
            consecutive_successes: 1,
            probing: true,
            last_quota: Some(Quota::new(4_000, 5_000)),
            ..base
        },
        SavedState {
            status: SavedStatus::ForcedOpen,
            consecutive_failures: 0,
            ..base
        },
    ]
}

/// What a guard resuming from a file holding `bytes` does: the state it read (and the
/// guard's state after it), or the rejection, checked against the documentation (the
/// file renamed aside byte for byte, the guard closed, the next start a fresh one).
fn resume_from(dir: &Path, bytes: &[u8]) -> Result<(SavedState, State), String> {
    let path = dir.join("b.json");
    fs::write(&path, bytes).unwrap();
    let file = StateFile::new(&path);
    let now = Instant::from_millis(1_000);
    let mut guard = QuotaGuard::<_>::new(Breaker::new(policy()), QuotaPolicy::new());
    let outcome = match guard.resume(&file, now, wall(60)) {
        Ok(Some(state)) => Ok((state, guard.state(now))),
        Ok(None) => panic!("a file that is there read as no file"),
        Err(StateFileError::Rejected { problem, kept_at }) => {
            assert_eq!(kept_at, dir.join("b.json.rejected"));
            assert_eq!(fs::read(&kept_at).unwrap(), bytes, "kept aside byte for byte");
            assert!(!path.exists(), "the rejected file is not left in place");
            assert_eq!(
                guard.state(now),
                State::Closed { strikes: 0 },
                "the program goes on closed"
            );
            assert_eq!(file.load().unwrap(), None, "the next start is a fresh breaker");
            let message = problem.to_string();
            assert!(!message.is_empty());
            fs::remove_file(&kept_at).unwrap();
            Err(message)
        }
        Err(other) => panic!("a readable file gave {other:?}"),
    };
    let _ = fs::remove_file(&path);
    outcome
}

#[test]
fn a_file_cut_at_any_byte_is_rejected_or_whole() {
    let dir = TempDir::new("cut");
    for state in states() {
        let whole = state.to_json();
        let whole = whole.as_bytes();
        let (_, expected) = resume_from(&dir.0, whole).expect("a whole file is read");
        let mut read_whole = 0;
        for n in 0..=whole.len() {
            match resume_from(&dir.0, &whole[..n]) {
                Ok((read, guard_state)) => {
                    // Only the whole object reads (with or without its final newline),
                    // and then as exactly the state saved.
                    assert!(n >= whole.len() - 1, "{n} of {} bytes read as {read:?}", whole.len());
                    assert_eq!(read, state);
                    assert_eq!(guard_state, expected);
                    read_whole += 1;
                }
                Err(message) => assert!(n < whole.len() - 1, "the whole file rejected: {message}"),
            }
        }
        assert_eq!(read_whole, 2);
    }
    assert!(names_in(&dir.0).is_empty(), "{:?}", names_in(&dir.0));
}

#[test]
fn a_flipped_byte_is_rejected_unless_it_changes_a_number() {
    // The format has no checksum: a digit flipped into another digit, or into a blank that
    // cuts the number short, is another valid number, and reads as the state it now says.
    // Every other single flip must be rejected (or be a blank turned into another blank,
    // which changes nothing).
    let dir = TempDir::new("flip");
    let (mut tried, mut rejected, mut numbers) = (0, 0, 0);
    for state in states() {
        let whole = state.to_json().into_bytes();
        for at in 0..whole.len() {
            for mask in [0x01u8, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80] {
                let mut bad = whole.clone();
                bad[at] ^= mask;
                tried += 1;
                match resume_from(&dir.0, &bad) {
                    Err(_) => rejected += 1,
                    Ok((read, _)) => {
                        let (was, is) = (whole[at], bad[at]);
                        let blank = |b: u8| matches!(b, b' ' | b'\n' | b'\t' | b'\r');
                        if was.is_ascii_digit() && (is.is_ascii_digit() || blank(is)) {
                            numbers += 1;
                        } else {
                            assert!(
                                blank(was) && blank(is),
                                "byte {at} {:?} -> {:?} read as {read:?}",
                                was as char,
                                is as char
                            );
                            assert_eq!(read, state);
                        }
                    }
                }
            }
        }
    }
    eprintln!("{tried} single-bit flips: {rejected} rejected, {numbers} read as another number");
    assert!(names_in(&dir.0).is_empty(), "{:?}", names_in(&dir.0));
}

/// Rounds of the kill test; each kills one writer at a different moment of its loop.
const ROUNDS: u32 = 40;
/// The states a round's writer saves before the kill, at most (it is killed after
/// `round % SPREAD` ms).
const SPREAD: u32 = 25;

#[test]
fn a_writer_killed_mid_save_leaves_the_old_state_or_the_new_one() {
    let dir = TempDir::new("kill");
    let path = dir.0.join("b.json");
    let file = StateFile::new(&path);
    let mut last = None;
    for round in 0..ROUNDS {
        // Each round's writer starts a million states past the last one's, so a file
        // from an earlier round (a save that did not land) shows.
        let first = round * 1_000_000;
        let mut writer = Command::new(env!("CARGO_BIN_EXE_state_file_writer"))
            .arg(&path)
            .arg(first.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the writer starts");
        let mut line = String::new();
        BufReader::new(writer.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), format!("saved {first}"), "the writer's first save");
        // Killed anywhere in its loop: while writing the temporary file, syncing it,
        // renaming it, or between saves.
        std::thread::sleep(StdDuration::from_millis(u64::from(round % SPREAD)));
        writer.kill().expect("SIGKILL");
        let status = writer.wait().unwrap();
        assert!(!status.success(), "the writer was killed, it did not exit: {status}");

        let state = file
            .load()
            .unwrap_or_else(|e| panic!("round {round}: the file after the kill: {e}"))
            .unwrap_or_else(|| panic!("round {round}: the file is gone"));
        let i = index_of(&state).unwrap_or_else(|| panic!("round {round}: not a state the writer saved: {state:?}"));
        assert!(
            i >= first,
            "round {round}: state {i} is older than the round's first save"
        );
        assert_eq!(state, nth(i));
        last = Some(i);
        // Whatever a kill left behind (a temporary file) is never taken for the state, and
        // nothing was rejected.
        for name in names_in(&dir.0) {
            assert!(
                name == "b.json" || (name.starts_with(".b.json.") && name.ends_with(".tmp")),
                "round {round}: {name}"
            );
        }
    }
    let last = last.expect("at least one round");
    eprintln!(
        "{ROUNDS} writers killed mid-loop; the last left state {last} ({} saves into its round)",
        last % 1_000_000
    );
}
