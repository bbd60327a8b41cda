#!/usr/bin/env bash
# Cargo runner for the firmware packages (see `.cargo/config.toml` in each).
#
# Usage: qemu-run.sh <firmware.elf> [ignored args]
#
# Boots the ELF on QEMU with semihosting, in virtual time that follows the
# instructions executed (see ICOUNT below), and decodes its defmt log with
# defmt-print. Exit status: the firmware's semihosting exit status (0 or 1),
# 124 if it was still running after $FIRMWARE_TIMEOUT seconds (default 120),
# or whatever else failed (QEMU, defmt-print).
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: $0 <firmware.elf>" >&2
    exit 2
fi
ELF=$1
TIMEOUT=${FIRMWARE_TIMEOUT:-120}

# Pick the QEMU machine from the target triple in the ELF's path
# (target/<triple>/<profile>/...).
case "$ELF" in
    *thumbv6m-none-eabi*) MACHINE=(-machine microbit) ;;        # Cortex-M0 (nRF51)
    *) MACHINE=(-cpu cortex-m3 -machine lm3s6965evb) ;;         # Cortex-M3 (LM3S6965)
esac

# Virtual time is the firmware's own: QEMU's virtual clock (which SysTick counts)
# advances one nanosecond per instruction executed (shift=0) and, while the core is
# halted in WFI, jumps straight to the next timer deadline (sleep=off). A run reads
# the same times however loaded the host is; a loaded host only makes it take longer.
# The `icount` tests count instructions with the same clock.
ICOUNT=(-icount shift=0,align=off,sleep=off)

# pipefail makes QEMU's failure (or timeout's 124) the pipeline's status even
# though defmt-print, which just sees its input end, exits 0.
status=0
timeout "$TIMEOUT" qemu-system-arm "${MACHINE[@]}" "${ICOUNT[@]}" -nographic \
    -semihosting-config enable=on,target=native -kernel "$ELF" \
    | defmt-print -e "$ELF" || status=$?

if [[ $status -eq 124 ]]; then
    echo "qemu-run: firmware still running after ${TIMEOUT}s, killed" >&2
elif [[ $status -ne 0 ]]; then
    echo "qemu-run: failed with exit status $status" >&2
fi
exit "$status"
