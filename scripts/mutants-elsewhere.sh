#!/usr/bin/env bash
# The mutants cargo-mutants cannot judge on the host: code compiled only for loom's model
# checks (`cfg(loom)`) or only for bare metal (`target_os = "none"`). The host's runs
# (scripts/mutants.sh) build neither, so each such mutant changes nothing there and is
# reported missed. Here each one listed in scripts/mutants-elsewhere.txt is made by hand,
# one at a time, and judged where its code runs: under `--cfg loom` against every loom
# model, or on bare metal against the three firmwares' tests on QEMU. A mutant that does
# not build there is unviable; one whose tests fail is caught; else missed.
#
#   bash scripts/mutants-elsewhere.sh          # every mutant of the list (about 15 minutes)
#   bash scripts/mutants-elsewhere.sh loom     # the loom ones only (or: firmware)
#
# The verdicts are printed and written to target/mutants/elsewhere.txt. Each mutated file
# is restored after its mutant, and on any exit. Needs what the firmware tests need
# (qemu-system-arm, defmt-print, the thumb targets: scripts/test.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

only="${1:-}"
list=scripts/mutants-elsewhere.txt
out=target/mutants/elsewhere.txt
mkdir -p target/mutants
: >"$out"

LOOM_TESTS=(--test loom --test loom_window --test loom_chain --test loom_history --test loom_keyed
    --test loom_live --test loom_retry_budget --test loom_inflight)
FIRMWARES=(m3 m0 rtic)

mutated=""
# The file back as it was, with a new time stamp: cargo, which judges by time stamps,
# then builds it again (with the copy's older one, it would keep the mutant's build).
restore() {
    if [ -n "$mutated" ]; then
        mv "$mutated.orig" "$mutated"
        touch "$mutated"
        mutated=""
    fi
}
trap restore EXIT

# The loom build of every model: unviable if it does not build, caught if a model fails.
judge_loom() {
    local cargo=(cargo test -q -p breaker-core --release "${LOOM_TESTS[@]}")
    if ! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom "${cargo[@]}" --no-run >/dev/null 2>&1; then
        echo unviable
    elif RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom "${cargo[@]}" >/dev/null 2>&1; then
        echo missed
    else
        echo caught
    fi
}

# The three firmwares: unviable if one does not build, caught if a test of one fails.
judge_firmware() {
    local fw
    for fw in "${FIRMWARES[@]}"; do
        if ! (cd "firmware/$fw" && cargo test --release --no-run) >/dev/null 2>&1; then
            echo unviable
            return
        fi
    done
    for fw in "${FIRMWARES[@]}"; do
        if ! (cd "firmware/$fw" && cargo test --release) >/dev/null 2>&1; then
            echo caught
            return
        fi
    done
    echo missed
}

# The tree as it is first: a build or a test that fails without any mutant would judge
# every mutant wrongly.
for where in loom firmware; do
    [[ -n $only && $where != "$only" ]] && continue
    if [ "$(judge_"$where" </dev/null)" != missed ]; then
        echo "mutants-elsewhere: the $where tests fail without any mutant" >&2
        exit 1
    fi
done

declare -A tally=()
n=0
while IFS= read -r entry; do
    [[ -z $entry || $entry == \#* ]] && continue
    # where @@ file @@ the whole line mutated @@ its occurrence @@ old @@ new @@ name
    IFS=$'\x1f' read -r where file line nth old new name <<<"${entry// @@ /$'\x1f'}"
    if [[ $where != loom && $where != firmware ]]; then
        echo "mutants-elsewhere: '$where' is neither loom nor firmware: fix $list" >&2
        exit 2
    fi
    [[ -n $only && $where != "$only" ]] && continue
    at="$(grep -nxF -- "$line" "$file" | sed -n "${nth}p" | cut -d: -f1)"
    if [ -z "$at" ]; then
        echo "mutants-elsewhere: $file has no line '$line' (occurrence $nth): update $list" >&2
        exit 2
    fi
    cp "$file" "$file.orig"
    mutated="$file"
    if ! awk -v at="$at" -v old="$old" -v new="$new" '
        NR == at {
            i = index($0, old)
            if (i == 0) exit 3
            $0 = substr($0, 1, i - 1) new substr($0, i + length(old))
        }
        { print }' "$file.orig" >"$file"; then
        echo "mutants-elsewhere: line $at of $file has no '$old': update $list" >&2
        exit 2
    fi
    verdict="$(judge_"$where" </dev/null)"
    restore
    n=$((n + 1))
    tally[$verdict]=$((${tally[$verdict]:-0} + 1))
    printf '%-8s %-8s %s:%s: %s\n' "$verdict" "$where" "$file" "$at" "$name" | tee -a "$out"
done <"$list"

printf '\n%d mutants: %d caught, %d missed, %d unviable\n' "$n" "${tally[caught]:-0}" \
    "${tally[missed]:-0}" "${tally[unviable]:-0}" | tee -a "$out"
