#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, through cargo-fuzz) of the snapshot decoder, the
# attribute's duration grammar and its argument parser, the state machine against the
# reference model, the Redis link's value decoder, the state file reader and the serde
# forms of policies and snapshots, on the stable toolchain. Installs
# cargo-fuzz when missing, builds every target once, then runs each for a bounded time
# from its committed corpus. A crash (a panic, or a disagreement with a target's oracle)
# fails the run; the input that caused it is kept under fuzz/artifacts/<target>/ and its
# path printed. See fuzz/README.md.
#
#   bash scripts/fuzz.sh                      # every target, 60 s each
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh duration
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

SECONDS_EACH="${FUZZ_SECONDS:-60}"
ALL_TARGETS=(snapshot_decode duration attribute_args state_machine redis_value state_file serde_forms)
TARGETS=("${@:-${ALL_TARGETS[@]}}")

# `--sanitizer none` is what lets cargo-fuzz build on stable: it then passes only stable
# `-C` flags (the sancov coverage pass and its LLVM options), no `-Z`. Debug assertions
# and overflow checks stay on. `--no-cfg-fuzzing`: proc-macro2 drops its span positions
# under `cfg(fuzzing)`, and `attribute_args` checks where each error points.
FLAGS=(--sanitizer none --debug-assertions --no-cfg-fuzzing)

# libfuzzer-sys compiles libFuzzer (C++) with the system compiler.
if ! command -v c++ >/dev/null; then
    echo "installing a C++ compiler (g++)"
    as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install --locked cargo-fuzz
fi

cargo fuzz build "${FLAGS[@]}"

failed=()
for target in "${TARGETS[@]}"; do
    printf '\n--> fuzzing %s for %s s\n' "$target" "$SECONDS_EACH"
    # New inputs go to the uncommitted work/ corpus; the committed seeds are read only.
    mkdir -p "work/$target" "artifacts/$target"
    options=(-max_total_time="$SECONDS_EACH" -timeout=10 -print_final_stats=1)
    if [ -f "dict/$target.dict" ]; then
        options+=(-dict="dict/$target.dict")
    fi
    marker="$(mktemp)"
    log="$(mktemp)"
    if cargo fuzz run "${FLAGS[@]}" "$target" "work/$target" "corpus/$target" -- "${options[@]}" >"$log" 2>&1; then
        grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$log" || true
    else
        tail -n 60 "$log"
        failed+=("$target")
        while IFS= read -r crash; do
            printf '\nCRASH in %s: fuzz/%s\n' "$target" "$crash"
            printf '  reproduce: cargo fuzz run %s %s fuzz/%s\n' "${FLAGS[*]}" "$target" "$crash"
            printf '  minimise:  cargo fuzz tmin %s %s fuzz/%s\n' "${FLAGS[*]}" "$target" "$crash"
        done < <(find "artifacts/$target" -type f -newer "$marker")
    fi
    rm -f "$marker" "$log"
done

if [ "${#failed[@]}" -ne 0 ]; then
    printf '\nfuzzing found crashes in: %s\n' "${failed[*]}" >&2
    exit 1
fi
printf '\nfuzzing: %s target(s), %s s each, no crash\n' "${#TARGETS[@]}" "$SECONDS_EACH"
