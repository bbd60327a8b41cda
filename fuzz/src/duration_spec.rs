//! The attribute's duration grammar as `breaker-macros/src/duration.rs` documents it,
//! decided afresh.
//!
//! "One or more `<digits><unit>` groups with no spaces, units `h`, `m`, `s`, `ms`, each
//! used at most once and from the largest to the smallest. The total is in whole
//! milliseconds, above zero and at most `Duration::MAX` (2^30 - 1 ms)."
//!
//! That is the regular language `(D+h)?(D+m)?(D+s)?(D+ms)?`, not empty, where `D` is an
//! ASCII digit. [`decide`] matches it group by group, in the order of the units, each
//! group optional: a group is there when the text goes on with digits, its unit, and then
//! the end or the next group's digits.

/// `Duration::MAX`, in milliseconds.
pub const MAX_MILLIS: u32 = (1 << 30) - 1;

/// The units in the only order they may appear, with their size in milliseconds.
const UNITS: [(&str, u128); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];

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
fn number(digits: &[u8]) -> u128 {
    let significant = match digits.iter().position(|&d| d != b'0') {
        Some(first) => &digits[first..],
        None => return 0,
    };
    if significant.len() > 30 {
        return u128::MAX / 4;
    }
    significant.iter().fold(0u128, |n, d| n * 10 + u128::from(d - b'0'))
}

/// What parsing `text` must give.
pub fn decide(text: &str) -> Expect {
    let mut rest = text.as_bytes();
    let mut groups = 0;
    let mut total: u128 = 0;
    for (unit, millis) in UNITS {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(after) = rest[digits..].strip_prefix(unit.as_bytes()) else {
            continue;
        };
        let group_ends = after.first().is_none_or(u8::is_ascii_digit);
        if digits == 0 || !group_ends {
            continue;
        }
        total = total.saturating_add(number(&rest[..digits]).saturating_mul(millis));
        groups += 1;
        rest = after;
    }
    if groups == 0 || !rest.is_empty() {
        return Expect::Malformed;
    }
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
