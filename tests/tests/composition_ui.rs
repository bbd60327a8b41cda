//! The cells of the composition matrix (`docs/composition.md`) that do not compile, each
//! with the error that says why and what to write instead: a registry entry given to the
//! tower layer, to `Guarded` or to the quota guard, a Redis-shared breaker given to the
//! quota guard, and a single-owner `Breaker` given to the tower layer or as a router tool. Each case under `ui/composition_fail/` is named after the cell.
//!
//! Refresh the expected output with `TRYBUILD=overwrite cargo test -p tests --test composition_ui`
//! and read the diff.

#[test]
fn combinations_that_would_count_twice_or_cannot_steer_do_not_compile() {
    trybuild::TestCases::new().compile_fail("ui/composition_fail/*.rs");
}
