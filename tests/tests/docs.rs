//! The documentation's own checks: each figure lives in one place, and every relative link
//! in the Markdown files leads somewhere.
//!
//! - The front page's cost table quotes rows of `bench/README.md`, which holds every
//!   measured figure with its method: each quoted row must be there, character for
//!   character, so the two cannot drift.
//! - The guide (`docs/`), the front page outside that table and the crates' READMEs state no
//!   measured cost (a number of instructions, nanoseconds or bytes of text or RAM): they
//!   link to the file that holds it.
//! - Every relative link in a Markdown file names a file that exists and, when it names a
//!   heading (`file.md#anchor`), a heading that file has.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The project's Markdown files: the front page, the guide, and each crate's or
/// directory's README (the changelog is history: it names what was, links included).
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut guide: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    guide.sort();
    files.extend(guide);
    for dir in [
        "breaker-core",
        "breaker-macros",
        "breaker-embedded",
        "breaker-redis",
        "bench",
        "firmware",
        "fuzz",
    ] {
        let readme = root.join(dir).join("README.md");
        if readme.exists() {
            files.push(readme);
        }
    }
    files
}

/// The lines of the section under `heading` (a line of its own), up to the next heading
/// of the same or a higher level.
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "no section {heading:?}");
    lines
        .take_while(|line| {
            let hashes = line.chars().take_while(|&c| c == '#').count();
            !(hashes > 0 && hashes <= level && line[hashes..].starts_with(' '))
        })
        .collect()
}

/// A table's body rows: lines starting with `|`, neither the header's separator nor a header
/// (a row followed by a separator).
fn table_rows<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let is_separator = |line: &str| line.starts_with("|-") || line.starts_with("|:-");
    lines
        .iter()
        .enumerate()
        .filter(|(i, line)| {
            line.starts_with('|') && !is_separator(line) && !lines.get(i + 1).is_some_and(|next| is_separator(next))
        })
        .map(|(_, line)| *line)
        .collect()
}

#[test]
fn the_front_pages_cost_rows_are_quoted_from_the_bench_readme() {
    let root = root();
    let front = read(&root.join("README.md"));
    let bench = read(&root.join("bench/README.md"));
    let bench_lines: BTreeSet<&str> = bench.lines().collect();
    let rows = table_rows(&section(&front, "## What it costs"));
    assert!(rows.len() >= 6, "the cost table lost its rows: {rows:?}");
    assert!(
        rows.len() <= 12,
        "the front page's cost table has {} rows (at most 12)",
        rows.len()
    );
    let drifted: Vec<&str> = rows.iter().copied().filter(|row| !bench_lines.contains(row)).collect();
    assert!(
        drifted.is_empty(),
        "README.md's cost table has rows bench/README.md does not (change the figure there, \
         then quote it):\n{}",
        drifted.join("\n")
    );
}

/// A measured cost stated in `line`: a number followed by a unit of cost.
fn stated_cost(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(3).find_map(|w| {
        let number = w[0].trim_start_matches(['(', '*', '+', '~']).trim_end_matches('*');
        let is_number = !number.is_empty()
            && number.chars().next().is_some_and(|c| c.is_ascii_digit())
            && number.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',');
        let unit = w[1].trim_end_matches([',', '.', ';', ':', ')']).trim_end_matches('*');
        let costs = match unit {
            "instructions" | "ns" => true,
            // A format's size ("a snapshot is 88 bytes") is a fact, not a measurement.
            "bytes" | "B" => {
                matches!(w[2], "of" | "on" | "more" | "less" | "larger" | "smaller") || w[1].ends_with('*')
            }
            _ => false,
        };
        (is_number && costs).then(|| format!("{} {} {}", w[0], w[1], w[2]))
    })
}

#[test]
fn measured_costs_are_stated_in_one_place_only() {
    let root = root();
    // The files that hold the measurements, each with its method.
    let holders = ["bench/README.md", "firmware/README.md", "fuzz/README.md"].map(|f| root.join(f));
    let front = root.join("README.md");
    let mut stray = Vec::new();
    for file in markdown_files() {
        if holders.contains(&file) {
            continue;
        }
        let text = read(&file);
        let quoted: BTreeSet<&str> = if file == front {
            table_rows(&section(&text, "## What it costs")).into_iter().collect()
        } else {
            BTreeSet::new()
        };
        let mut fence = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                fence = !fence;
            }
            if fence || quoted.contains(line) {
                continue;
            }
            if let Some(cost) = stated_cost(line) {
                let name = file.strip_prefix(&root).unwrap().display().to_string();
                stray.push(format!("{name}:{}: {cost:?}", n + 1));
            }
        }
    }
    assert!(
        stray.is_empty(),
        "measured costs stated outside bench/README.md and firmware/README.md (link to them \
         instead):\n{}",
        stray.join("\n")
    );
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation other than `-`
/// and `_` dropped; repeated headings get `-1`, `-2`, ... (in order).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if fence || hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let mut anchor = slug.clone();
        let mut k = 0;
        while seen.contains(&anchor) {
            k += 1;
            anchor = format!("{slug}-{k}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The targets of the inline links `[text](target)` on a line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(&after[..end]);
        rest = &after[end..];
    }
    targets
}

#[test]
fn every_relative_link_leads_somewhere() {
    let root = root();
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        let dir = file.parent().unwrap();
        let mut fence = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                fence = !fence;
            }
            if fence {
                continue;
            }
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                // A crate README is its crate's documentation too: a bare name there is
                // a rustdoc link to an item (`circuit_breaker`), checked by rustdoc.
                if !path.is_empty() && !path.contains(['.', '/']) {
                    continue;
                }
                let linked = if path.is_empty() { file.clone() } else { dir.join(path) };
                let name = file.strip_prefix(&root).unwrap().display().to_string();
                if !linked.exists() {
                    broken.push(format!("{name}:{}: {target} (no such file)", n + 1));
                } else if !anchor.is_empty()
                    && linked.extension().is_some_and(|ext| ext == "md")
                    && !anchors(&read(&linked)).contains(anchor)
                {
                    broken.push(format!("{name}:{}: {target} (no such heading)", n + 1));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
