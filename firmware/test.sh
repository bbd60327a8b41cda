#!/usr/bin/env bash
# Runs the firmwares on QEMU: `cargo test --release` in m3 (Cortex-M3, embassy
# executor), m0 (Cortex-M0, no compare-and-swap) and rtic (Cortex-M3, RTIC v2), i.e.
# each package's outage test, m3's and m0's smoke tests and instruction counts
# (`icount`, checked against recorded figures) and shared-bus tests, and m3's
# retry-ladder, hal, chain and quota tests, then the size report (`size.sh`). Exits non-zero on
# any failure: a wrong figure in a firmware, a panic or fault, a firmware still
# running after $FIRMWARE_TIMEOUT seconds (default 120), formatting machinery
# pulled in by the breaker code, or the breaker code over its size budget on m3.
#
# Assumes qemu-system-arm, defmt-print and the thumb targets are installed (the
# project's scripts/test.sh installs them) and says what is missing otherwise. The
# size report also needs the `llvm-tools` component; without it, it is skipped
# with a message.
set -euo pipefail
cd "$(dirname "$0")"

missing=()
command -v qemu-system-arm >/dev/null || missing+=("qemu-system-arm (apt-get install -y qemu-system-arm)")
command -v defmt-print >/dev/null || missing+=("defmt-print (cargo install --locked defmt-print)")
installed_targets=$(rustup target list --installed 2>/dev/null || true)
for t in thumbv7m-none-eabi thumbv6m-none-eabi; do
    grep -qx "$t" <<<"$installed_targets" || missing+=("the $t target (rustup target add $t)")
done
if ((${#missing[@]})); then
    echo "firmware/test.sh: missing tools:" >&2
    printf '  - %s\n' "${missing[@]}" >&2
    exit 2
fi

for fw in m3 m0 rtic; do
    printf '\n--> firmware/%s: cargo test --release\n' "$fw"
    (cd "$fw" && cargo test --release)
done

# The size report needs llvm-size and llvm-nm from the `llvm-tools` component.
host=$(rustc -vV | sed -n 's/^host: //p')
if [[ -x "$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-size" ]]; then
    printf '\n--> firmware/size.sh\n'
    ./size.sh --strict
else
    printf '\n--> firmware/size.sh SKIPPED: llvm-tools missing (rustup component add llvm-tools)\n'
fi

printf '\n--> firmware: all passed\n'
