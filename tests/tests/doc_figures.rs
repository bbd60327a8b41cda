//! The sizes the docs state, checked against the code: a figure written in two places
//! cannot drift apart unnoticed, because each place is checked against the one truth.
//!
//! Each rule names a phrase the docs use for a size and the value it must carry; every
//! Markdown file of the workspace is searched for it.

use std::path::{Path, PathBuf};

#[cfg(target_arch = "x86_64")]
use breaker_core::window::{CallWindow, TimeWindow, Windowed};
#[cfg(target_arch = "x86_64")]
use breaker_core::SharedBreaker;
use breaker_core::Snapshot;

/// The workspace's Markdown files, the changelog left out (it records what was true then).
fn markdown_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "corpus" && name != "artifacts" {
                    dirs.push(path);
                }
            } else if name.ends_with(".md") && name != "CHANGELOG.md" {
                found.push(path);
            }
        }
    }
    found.sort();
    assert!(found.len() > 5, "found only {found:?}");
    found
}

/// The number written just before `at` in `text` (digits and `,`), if any.
fn number_before(text: &str, at: usize) -> Option<usize> {
    let head = text[..at].trim_end();
    let digits: String = head
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Every place where `phrase` follows a number, with that number.
fn figures_before(phrase: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        // One logical line: Markdown wraps sentences.
        let text = text.replace('\n', " ");
        for (at, _) in text.match_indices(phrase) {
            if let Some(n) = number_before(&text, at) {
                out.push((file.display().to_string(), n));
            }
        }
    }
    out
}

fn check(phrase: &str, want: usize, allowed_other: &[usize]) {
    for (file, n) in figures_before(phrase) {
        assert!(
            n == want || allowed_other.contains(&n),
            "{file}: \"{n}{phrase}\" but the code says {want}"
        );
    }
}

#[test]
fn the_snapshot_size_is_the_same_everywhere() {
    let len = Snapshot::LEN;
    // "88 checksummed bytes", "its 88-byte snapshot", "a snapshot is 88 bytes"; the
    // version-1 figure is named as such ("the 48-byte version 1").
    check(" checksummed bytes", len, &[]);
    check("-byte snapshot", len, &[]);
    for (file, n) in figures_before("-byte version 1") {
        assert_eq!(n, Snapshot::LEN_V1, "{file}");
    }
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap().replace('\n', " ");
        for (at, _) in text.match_indices("snapshot is ") {
            let rest = &text[at + "snapshot is ".len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let (Ok(n), true) = (digits.parse::<usize>(), rest[digits.len()..].starts_with(" bytes")) {
                assert_eq!(n, len, "{}: a snapshot is {n} bytes", file.display());
            }
        }
    }
}

/// The docs state x86-64's sizes (the cache-line padding differs elsewhere).
#[cfg(target_arch = "x86_64")]
#[test]
fn the_shared_breaker_sizes_are_the_same_everywhere() {
    let plain = std::mem::size_of::<SharedBreaker>();
    let counted = std::mem::size_of::<SharedBreaker<Windowed<CallWindow>>>();
    let timed = std::mem::size_of::<SharedBreaker<Windowed<TimeWindow>>>();
    for (phrase, want) in [
        ("`SharedBreaker` | ", plain),
        ("`SharedBreaker<Windowed>` (count window) is ", counted),
        ("`SharedBreaker<Windowed<TimeWindow>>` ", timed),
    ] {
        for file in markdown_files() {
            let text = std::fs::read_to_string(&file).unwrap().replace('\n', " ");
            for (at, _) in text.match_indices(phrase) {
                let rest = &text[at + phrase.len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let (Ok(n), true) = (digits.parse::<usize>(), rest[digits.len()..].starts_with(" B")) {
                    assert_eq!(n, want, "{}: {phrase}{n} B", file.display());
                }
            }
        }
    }
}
