//! `#[circuit_breaker]`'s compile errors are part of its API: each restriction in its
//! documentation has a case under `ui/fail/` (named after the rule it breaks) whose
//! reviewed `.stderr` points at the offending token and says what to write instead; every
//! supported form compiles and runs under `ui/pass/`.
//!
//! Refresh the expected output with `TRYBUILD=overwrite cargo test -p tests --test macro_ui`
//! and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/fail/*.rs");
}
