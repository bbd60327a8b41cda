//! The attribute's compile errors that depend on a feature of breaker-core being off.
//! The `tests` crate's suite (`tests/tests/macro_ui.rs`) builds with every host feature
//! on; these cases build against breaker-core's default features, as this crate's
//! dev-dependency gives them.
//!
//! Refresh the expected output with `TRYBUILD=overwrite cargo test -p breaker-macros --test features_off`
//! and read the diff.

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
