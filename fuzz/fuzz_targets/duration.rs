//! The attribute's duration grammar on arbitrary text, against the grammar's documentation.
//!
//! Never a panic; a value exactly when [`duration_spec::decide`] finds one (and the same
//! value), written back in canonical form it parses to itself; otherwise the error the
//! documentation names: `Zero` and `Overflow` only for well-formed text, `Empty` for
//! `""`, `Space` for any whitespace, and the number or unit an error quotes taken from the
//! text.

#![no_main]

use breaker_fuzz::duration::{self, DurationError};
use breaker_fuzz::duration_spec::{self, Expect, MAX_MILLIS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Every input is text: invalid UTF-8 is replaced, not skipped.
    let text = String::from_utf8_lossy(data);
    check(&text);
    // And a value, formatted for an error message, reads back as itself.
    if let Some(bytes) = data.get(..4) {
        let millis = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) % (MAX_MILLIS + 1);
        if millis > 0 {
            let written = duration::format(millis);
            assert_eq!(written, duration_spec::canonical(millis), "not the canonical form");
            assert_eq!(duration::parse(&written), Ok(millis), "{written:?}");
        }
    }
});

fn check(text: &str) {
    let got = duration::parse(text);
    let want = duration_spec::decide(text);
    match (&got, want) {
        (Ok(ms), Expect::Millis(expected)) => {
            assert_eq!(*ms, expected, "{text:?}: wrong value");
            assert!(*ms > 0 && *ms <= MAX_MILLIS);
            let canonical = duration_spec::canonical(*ms);
            assert_eq!(
                duration::parse(&canonical),
                Ok(*ms),
                "{text:?}: canonical form {canonical:?}"
            );
        }
        (Err(DurationError::Zero), Expect::Zero) | (Err(DurationError::Overflow), Expect::Overflow) => {}
        (Err(e), Expect::Malformed) => {
            assert!(
                !matches!(e, DurationError::Zero | DurationError::Overflow),
                "{text:?}: malformed, yet {e:?}"
            );
            assert_eq!(matches!(e, DurationError::Empty), text.is_empty(), "{text:?}: {e:?}");
            let has_space = text.chars().any(char::is_whitespace);
            if !text.is_empty() {
                assert_eq!(matches!(e, DurationError::Space), has_space, "{text:?}: {e:?}");
            }
            match e {
                DurationError::MissingUnit {
                    text: whole, number: n, ..
                } => assert!(
                    whole == text
                        && !n.is_empty()
                        && n.bytes().all(|b| b.is_ascii_digit())
                        && text.contains(n.as_str()),
                    "{text:?}: number {n:?} in {whole:?}"
                ),
                DurationError::UnknownUnit(u) => assert!(
                    !u.is_empty()
                        && !u.bytes().any(|b| b.is_ascii_digit())
                        && !["h", "m", "s", "ms"].contains(&u.as_str())
                        && text.contains(u.as_str()),
                    "{text:?}: unit {u:?}"
                ),
                _ => {}
            }
        }
        _ => panic!("{text:?}: parsed as {got:?}, the grammar says {want:?}"),
    }
    if let Err(e) = got {
        assert!(!e.to_string().is_empty());
    }
}
