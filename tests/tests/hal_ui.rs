//! A `DeviceBreakers` table's mistakes are compile errors when it is built in a `static`:
//! an address that does not fit 7 bits, an address listed twice, and registering an
//! address the table does not list. Each case under `ui/hal_fail/` is named after the rule
//! it breaks; its reviewed `.stderr` says which.
//!
//! Refresh the expected output with `TRYBUILD=overwrite cargo test -p tests --test hal_ui`
//! and read the diff.

#[test]
fn device_table_mistakes_do_not_compile() {
    trybuild::TestCases::new().compile_fail("ui/hal_fail/*.rs");
}
