//! The attribute's duration grammar as `breaker-macros/src/duration.rs` documents it,
//! decided afresh with a regular expression.
//!
//! "One or more `<digits><unit>` groups with no spaces, units `h`, `m`, `s`, `ms`, each
//! used at most once and from the largest to the smallest. The total is in whole
//! milliseconds, above zero and at most `Duration::MAX` (2^30 - 1 ms)."

use std::sync::LazyLock;

use regex::Regex;

/// `Duration::MAX`, in milliseconds.
pub const MAX_MILLIS: u32 = (1 << 30) - 1;

/// Each unit once, largest first; ASCII digits only.
static GRAMMAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?$").expect("the grammar is a valid regex")
});

/// Milliseconds per unit, in the order of the groups of [`GRAMMAR`].
const UNIT_MILLIS: [u128; 4] = [3_600_000, 60_000, 1_000, 1];

/// What the grammar says of a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A valid duration of this many milliseconds.
    Millis(u32),
    /// Well-formed, but zero in total.
    Zero,
    /// Well-formed, but longer than [`MAX_MILLIS`].
    Overflow,
    /// Not of the grammar (empty, spaces, stray characters, units missing or out of order).
    Malformed,
}

/// The value of a run of ASCII digits, saturating far above any valid total.
fn number(digits: &str) -> u128 {
    let significant = digits.trim_start_matches('0');
    if significant.len() > 30 {
        return u128::MAX / 4;
    }
    significant.bytes().fold(0u128, |n, d| n * 10 + u128::from(d - b'0'))
}

/// What parsing `text` must give.
pub fn decide(text: &str) -> Expect {
    if text.is_empty() {
        return Expect::Malformed;
    }
    let Some(groups) = GRAMMAR.captures(text) else {
        return Expect::Malformed;
    };
    let total = (1..=4).fold(0u128, |total, i| {
        groups.get(i).map_or(total, |g| {
            total.saturating_add(number(g.as_str()).saturating_mul(UNIT_MILLIS[i - 1]))
        })
    });
    match total {
        0 => Expect::Zero,
        t if t > u128::from(MAX_MILLIS) => Expect::Overflow,
        t => Expect::Millis(t as u32),
    }
}

/// The shortest way to write `millis`: `"1h2m3s4ms"` with the zero groups left out.
pub fn canonical(millis: u32) -> String {
    let (h, rest) = (millis / 3_600_000, millis % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let (s, ms) = (rest / 1_000, rest % 1_000);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s"), (ms, "ms")] {
        if n != 0 {
            out += &format!("{n}{unit}");
        }
    }
    out
}
