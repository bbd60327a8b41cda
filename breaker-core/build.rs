//! Ships `breaker.x`, the linker fragment that puts the registry's table in flash on
//! Cortex-M (the way `defmt` ships `defmt.x`). A library's `rustc-link-arg` does not reach
//! the final binary, so the binary adds `-Tbreaker.x` itself; this script only writes the
//! file to `OUT_DIR` and puts that folder on the linker's search path. Harmless on hosts.

use std::env;
use std::fs;
use std::path::PathBuf;

/// `linkme` names a distributed slice's ELF sections after the slice's static:
/// `linkme_<NAME>` for the elements and `linkm2_<NAME>` for its duplicate-declaration
/// check. Both are `#[used]` constant data and belong in flash, after `.rodata`. The
/// symbol tells breaker-core the fragment is linked in: reading the registry refers to it,
/// so a firmware without the fragment fails to link instead of reading a table in RAM
/// that the start-up code never initialised.
const FRAGMENT: &str = "\
/* breaker-core: the #[circuit_breaker] registry, in flash. Link with -Tbreaker.x next to -Tlink.x. */
\"__breaker_core_registry_needs_-Tbreaker.x\" = 1;
SECTIONS
{
  linkme_BREAKERS : ALIGN(4)
  {
    KEEP(*(linkme_BREAKERS))
  } > FLASH
  linkm2_BREAKERS : ALIGN(4)
  {
    KEEP(*(linkm2_BREAKERS))
  } > FLASH
}
INSERT AFTER .rodata;
";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts"));
    fs::write(out.join("breaker.x"), FRAGMENT).expect("OUT_DIR is writable");
    println!("cargo:rustc-link-search={}", out.display());
}
