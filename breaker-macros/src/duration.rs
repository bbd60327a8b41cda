//! The duration grammar: `"250ms"`, `"30s"`, `"2m"`, `"1h"`, `"1m30s"`.
//!
//! One or more `<digits><unit>` groups with no spaces, units `h`, `m`, `s`, `ms`, each
//! used at most once and from the largest to the smallest. The total is in whole
//! milliseconds, above zero and at most `breaker_core::Duration::MAX` (2^30 - 1 ms,
//! about 12.4 days).

use std::fmt;

/// `breaker_core::Duration::MAX`, in milliseconds.
pub const MAX_MILLIS: u32 = (1 << 30) - 1;

/// Why a duration string was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// `""`.
    Empty,
    /// A group without its number, such as `"ms"` or `"1m s"`.
    MissingNumber,
    /// A number without a unit at the end, such as `"30"` or `"1m30"`.
    MissingUnit {
        /// The whole string as written.
        text: String,
        /// The number that lacks its unit.
        number: String,
        /// The unit before it, if any (`"m"` in `"1m30"`).
        after: Option<&'static str>,
    },
    /// A unit outside `ms`, `s`, `m`, `h`.
    UnknownUnit(String),
    /// Whitespace, such as `"5 s"`.
    Space,
    /// A unit used twice or after a smaller one, such as `"30s1m"`.
    UnitOrder,
    /// The total is zero.
    Zero,
    /// The total exceeds [`MAX_MILLIS`].
    Overflow,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: &str = "use `ms`, `s`, `m` or `h`, as in \"250ms\", \"30s\", \"2m\", \"1h\" or \"1m30s\"";
        match self {
            DurationError::Empty => write!(f, "empty duration; write one such as \"30s\" ({UNITS})"),
            DurationError::MissingNumber => {
                write!(f, "a duration unit needs a number before it ({UNITS})")
            }
            DurationError::MissingUnit { text, number, after } => match after {
                None => write!(
                    f,
                    "duration `{number}` has no unit; write \"{text}s\" for seconds or \"{text}ms\" for milliseconds"
                ),
                Some(unit) => match next_unit(unit) {
                    Some((next, word)) => write!(
                        f,
                        "the `{number}` at the end of \"{text}\" has no unit; write \"{text}{next}\" for {number} {word}"
                    ),
                    None => write!(
                        f,
                        "the `{number}` at the end of \"{text}\" has no unit, and none can follow `ms`, the smallest; write \"{}\"",
                        text.strip_suffix(number.as_str()).unwrap_or(text)
                    ),
                },
            },
            // A decimal point or comma: "1.5s", "0,5s".
            DurationError::UnknownUnit(u) if u.starts_with(['.', ',']) => write!(
                f,
                "fractions are not supported in durations; write whole units of a smaller one, as in \"1500ms\" for 1.5 s or \"1m30s\" for 1.5 min"
            ),
            DurationError::UnknownUnit(u) => write!(f, "unknown duration unit `{u}`; {UNITS}"),
            DurationError::Space => write!(f, "durations are written without spaces, as in \"5s\" or \"1m30s\""),
            DurationError::UnitOrder => write!(
                f,
                "duration units must each appear once, from the largest to the smallest; write \"1m30s\", not \"30s1m\""
            ),
            DurationError::Zero => write!(f, "duration must be longer than zero; write at least \"1ms\""),
            DurationError::Overflow => write!(
                f,
                "duration too long: at most 2^30 - 1 ms (`Duration::MAX`, about 12.4 days, e.g. \"298h\")"
            ),
        }
    }
}

/// The unit that may follow `unit` (the next smaller one), and its name in words.
fn next_unit(unit: &str) -> Option<(&'static str, &'static str)> {
    match unit {
        "h" => Some(("m", "minutes")),
        "m" => Some(("s", "seconds")),
        "s" => Some(("ms", "milliseconds")),
        _ => None,
    }
}

/// Parses a duration string into milliseconds.
pub fn parse(text: &str) -> Result<u32, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text.chars().any(char::is_whitespace) {
        return Err(DurationError::Space);
    }
    let mut rest = text;
    let mut total: u64 = 0;
    // Rank of the last unit seen (h = 4 ... ms = 1); the next must be strictly smaller.
    let mut last_rank = u8::MAX;
    let mut last_unit = None;
    while !rest.is_empty() {
        let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (digits, after) = rest.split_at(digits_len);
        let unit_len = after.bytes().take_while(|b| !b.is_ascii_digit()).count();
        let (unit, next) = after.split_at(unit_len);
        if digits.is_empty() {
            // Something that is not a number where one belongs: a stray unit, a sign, a
            // space or a dot.
            return Err(match unit {
                "h" | "m" | "s" | "ms" => DurationError::MissingNumber,
                other => DurationError::UnknownUnit(other.to_owned()),
            });
        }
        let (rank, millis_per_unit) = match unit {
            "h" => (4, 3_600_000),
            "m" => (3, 60_000),
            "s" => (2, 1_000),
            "ms" => (1, 1),
            "" => {
                return Err(DurationError::MissingUnit {
                    text: text.to_owned(),
                    number: digits.to_owned(),
                    after: last_unit,
                })
            }
            other => return Err(DurationError::UnknownUnit(other.to_owned())),
        };
        if rank >= last_rank {
            return Err(DurationError::UnitOrder);
        }
        last_rank = rank;
        last_unit = Some(match rank {
            4 => "h",
            3 => "m",
            2 => "s",
            _ => "ms",
        });
        // Any number with more than 10 digits overflows anyway; parse saturating.
        let value: u64 = digits.parse().unwrap_or(u64::MAX);
        total = value.saturating_mul(millis_per_unit).saturating_add(total);
        rest = next;
    }
    if total == 0 {
        return Err(DurationError::Zero);
    }
    match u32::try_from(total) {
        Ok(ms) if ms <= MAX_MILLIS => Ok(ms),
        _ => Err(DurationError::Overflow),
    }
}

/// Formats milliseconds the way users write them (for error messages): `"1m30s"`.
pub fn format(millis: u32) -> String {
    if millis == 0 {
        return "0ms".to_owned();
    }
    let mut out = String::new();
    let mut rest = millis;
    for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)] {
        let n = rest / size;
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
            rest %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_units() {
        assert_eq!(parse("250ms"), Ok(250));
        assert_eq!(parse("30s"), Ok(30_000));
        assert_eq!(parse("2m"), Ok(120_000));
        assert_eq!(parse("1h"), Ok(3_600_000));
        assert_eq!(parse("0030s"), Ok(30_000));
    }

    #[test]
    fn compound_forms() {
        assert_eq!(parse("1m30s"), Ok(90_000));
        assert_eq!(parse("1h2m3s4ms"), Ok(3_723_004));
        assert_eq!(parse("1s500ms"), Ok(1_500));
        assert_eq!(parse("1h0m"), Ok(3_600_000));
    }

    #[test]
    fn units_go_once_and_downwards() {
        assert_eq!(parse("30s1m"), Err(DurationError::UnitOrder));
        assert_eq!(parse("1s1s"), Err(DurationError::UnitOrder));
        assert_eq!(parse("1ms1s"), Err(DurationError::UnitOrder));
    }

    #[test]
    fn malformed() {
        assert_eq!(parse(""), Err(DurationError::Empty));
        let missing = |text: &str, number: &str, after| DurationError::MissingUnit {
            text: text.into(),
            number: number.into(),
            after,
        };
        assert_eq!(parse("30"), Err(missing("30", "30", None)));
        assert_eq!(parse("1m30"), Err(missing("1m30", "30", Some("m"))));
        assert_eq!(parse("1ms5"), Err(missing("1ms5", "5", Some("ms"))));
        assert_eq!(parse("30x"), Err(DurationError::UnknownUnit("x".into())));
        assert_eq!(parse("30sec"), Err(DurationError::UnknownUnit("sec".into())));
        assert_eq!(parse("30 s"), Err(DurationError::Space));
        assert_eq!(parse(" 30s"), Err(DurationError::Space));
        assert_eq!(parse("s"), Err(DurationError::MissingNumber));
        assert_eq!(parse("-5s"), Err(DurationError::UnknownUnit("-".into())));
        assert_eq!(parse("1.5s"), Err(DurationError::UnknownUnit(".".into())));
        for fraction in ["1.5s", "0,5s", ".5s"] {
            let text = parse(fraction).unwrap_err().to_string();
            assert!(
                text.starts_with("fractions are not supported") && text.contains("\"1500ms\""),
                "{text}"
            );
        }
        assert_eq!(parse("5µs"), Err(DurationError::UnknownUnit("µs".into())));
    }

    #[test]
    fn zero_is_rejected() {
        assert_eq!(parse("0s"), Err(DurationError::Zero));
        assert_eq!(parse("0h0m0s0ms"), Err(DurationError::Zero));
    }

    #[test]
    fn the_limit_is_duration_max() {
        assert_eq!(parse("1073741823ms"), Ok(MAX_MILLIS));
        assert_eq!(parse("1073741824ms"), Err(DurationError::Overflow));
        assert_eq!(parse("298h"), Ok(298 * 3_600_000));
        assert_eq!(parse("299h"), Err(DurationError::Overflow));
        assert_eq!(parse("99999999999999999999999h"), Err(DurationError::Overflow));
        assert_eq!(parse(&format!("{}h", u64::MAX)), Err(DurationError::Overflow));
    }

    #[test]
    fn odd_input_gets_its_own_error() {
        use DurationError::*;
        let unknown = |u: &str| UnknownUnit(u.to_owned());
        for (text, expected) in [
            ("ms", MissingNumber),
            ("h", MissingNumber),
            ("mm", unknown("mm")),
            ("hms", unknown("hms")),
            (
                "1",
                MissingUnit {
                    text: "1".into(),
                    number: "1".into(),
                    after: None,
                },
            ),
            (
                "1h1",
                MissingUnit {
                    text: "1h1".into(),
                    number: "1".into(),
                    after: Some("h"),
                },
            ),
            ("٣s", unknown("٣s")), // not an ASCII digit
            ("1\u{0}s", unknown("\u{0}s")),
            ("  ", Space),
            ("\t1s", Space),
            ("1s\n", Space),
            ("1hh", unknown("hh")),
            ("1m1m", UnitOrder),
            ("1h1h", UnitOrder),
            ("1ms1ms", UnitOrder),
            ("1m1h", UnitOrder),
            ("1s1m", UnitOrder),
            ("0ms", Zero),
            ("00h00m", Zero),
            ("+1s", unknown("+")),
            ("1_000ms", unknown("_")),
            ("1e3ms", unknown("e")),
            ("4294967296ms", Overflow),
            ("18446744073709551616h", Overflow),
        ] {
            assert_eq!(parse(text), Err(expected), "{text:?}");
        }
        // Units multiply and add exactly, up to the limit.
        assert_eq!(parse("1h1m1s1ms"), Ok(3_661_001));
        assert_eq!(parse("297h59m59s999ms"), Ok(298 * 3_600_000 - 1));
        assert_eq!(parse("298h15m41s823ms"), Ok(MAX_MILLIS));
        assert_eq!(parse("298h15m41s824ms"), Err(Overflow));
        assert_eq!(parse("298h16m"), Err(Overflow));
        assert_eq!(parse("1073741s823ms"), Ok(MAX_MILLIS));
        assert_eq!(parse("1073741s824ms"), Err(Overflow));
    }

    #[test]
    fn a_missing_unit_suggests_the_whole_duration() {
        let says = |text: &str| parse(text).unwrap_err().to_string();
        assert_eq!(
            says("30"),
            "duration `30` has no unit; write \"30s\" for seconds or \"30ms\" for milliseconds"
        );
        assert_eq!(
            says("1m30"),
            "the `30` at the end of \"1m30\" has no unit; write \"1m30s\" for 30 seconds"
        );
        assert_eq!(
            says("1h30"),
            "the `30` at the end of \"1h30\" has no unit; write \"1h30m\" for 30 minutes"
        );
        assert_eq!(
            says("2s500"),
            "the `500` at the end of \"2s500\" has no unit; write \"2s500ms\" for 500 milliseconds"
        );
        assert!(says("1ms5").ends_with("write \"1ms\""));
        // Every suggestion parses.
        for text in ["30", "1m30", "1h30", "2s500"] {
            let said = says(text);
            let suggested = said.split('"').nth(3).unwrap();
            assert!(parse(suggested).is_ok(), "{suggested}");
        }
    }

    #[test]
    fn formats_like_it_parses() {
        for ms in [1, 250, 1_000, 30_000, 90_000, 3_723_004, MAX_MILLIS] {
            assert_eq!(parse(&format(ms)), Ok(ms));
        }
        assert_eq!(format(90_000), "1m30s");
    }
}
