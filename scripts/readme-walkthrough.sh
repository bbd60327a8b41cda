#!/usr/bin/env bash
# Proves that breaker-embedded's README walk-through works as written: takes its steps
# out of the README into a scratch project outside the repository, builds it for
# thumbv7m-none-eabi, and runs it on QEMU when qemu-system-arm and defmt-print are there.
# Also checks that the functions firmware/README.md quotes are the firmware's own. (Every
# other README code block is a doctest, a command list the test command runs itself, or
# sample output.)
#
# The README marks each piece with an HTML comment on the line before its code block:
#   <!-- walkthrough: run -->          a shell block, run in the scratch folder
#   <!-- walkthrough: append FILE -->  a block appended to FILE of the project
#   <!-- walkthrough: file FILE -->    a block that is FILE of the project
# The project is the one folder the `run` blocks create. The only change made to it is a
# `[patch.crates-io]` section pointing the breaker crates at this repository (they are
# not published), and a copy of firmware/m3's Cargo.lock as a start, so that the
# versions `firmware/m3` builds with are used (offline when they are all cached).
#
#   bash scripts/readme-walkthrough.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
README="$ROOT/breaker-embedded/README.md"

# firmware/README.md quotes the firmware's guarded functions (bodies elided as `{ .. }`):
# every quoted line must be in the source, whitespace and trailing commas aside.
squash() { tr -d ' \n\t' | sed 's/,)/)/g'; }
source_text=$(cat "$ROOT"/firmware/common/*.rs | squash)
while IFS= read -r line; do
    [[ -z "$line" ]] && continue
    needle=${line% \{ .. \}}
    needle=${needle#\#\[}
    needle=$(printf '%s' "${needle%\]}" | squash)
    if [[ "$source_text" != *"$needle"* ]]; then
        echo "readme-walkthrough: firmware/README.md quotes a line the firmware does not have: $line" >&2
        exit 1
    fi
done < <(awk '/^```rust,ignore/ { f = 1; next } /^```/ { f = 0 } f' "$ROOT/firmware/README.md")
echo "--> firmware/README.md's quoted functions match the firmware's source"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
blocks="$scratch/.blocks"
mkdir -p "$blocks"

# One `NNN.what` (the directive) and `NNN.body` (the block's lines) per marked block.
awk -v dir="$blocks" '
    /^<!-- walkthrough: .* -->$/ {
        what = $0; sub(/^<!-- walkthrough: /, "", what); sub(/ -->$/, "", what)
        pending = 1; next
    }
    pending && /^```/ { pending = 0; inside = 1; n++; out = sprintf("%s/%03d", dir, n); print what > (out ".what"); printf "" > (out ".body"); next }
    inside && /^```/ { inside = 0; close(out ".body"); next }
    inside { print > (out ".body") }
' "$README"

count=$(find "$blocks" -name '*.what' | wc -l)
if ((count == 0)); then
    echo "readme-walkthrough: no marked blocks in $README" >&2
    exit 1
fi

project=""
for what_file in "$blocks"/*.what; do
    body="${what_file%.what}.body"
    read -r verb target <"$what_file"
    case "$verb" in
        run)
            echo "--> running the README's shell step"
            sed 's/^/    /' "$body"
            (cd "$scratch" && bash -euo pipefail "$body")
            project=$(find "$scratch" -mindepth 1 -maxdepth 1 -type d ! -name .blocks | head -1)
            ;;
        append | file)
            if [[ -z "$project" ]]; then
                echo "readme-walkthrough: '$verb $target' comes before the step that creates the project" >&2
                exit 1
            fi
            mkdir -p "$(dirname "$project/$target")"
            if [[ $verb == append ]]; then
                { echo; cat "$body"; } >>"$project/$target"
            else
                cp "$body" "$project/$target"
            fi
            echo "--> $verb $target ($(wc -l <"$body") lines)"
            ;;
        *)
            echo "readme-walkthrough: unknown directive '$verb'" >&2
            exit 1
            ;;
    esac
done

# The breaker crates from this repository (the README names them by version).
cat >>"$project/Cargo.toml" <<EOF

[patch.crates-io]
breaker-embedded = { path = "$ROOT/breaker-embedded" }
breaker-core = { path = "$ROOT/breaker-core" }
breaker-macros = { path = "$ROOT/breaker-macros" }
EOF
cp "$ROOT/firmware/m3/Cargo.lock" "$project/Cargo.lock"

name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$project/Cargo.toml" | head -1)
export CARGO_TARGET_DIR="$ROOT/target/readme-walkthrough"
echo "--> cargo build --release ($name, thumbv7m-none-eabi)"
cd "$project"
cargo build --release --offline --quiet 2>/dev/null || cargo build --release --quiet
elf="$CARGO_TARGET_DIR/thumbv7m-none-eabi/release/$name"
[[ -f "$elf" ]] || { echo "readme-walkthrough: no firmware at $elf" >&2; exit 1; }

if ! command -v qemu-system-arm >/dev/null || ! command -v defmt-print >/dev/null; then
    echo "--> built; not run (qemu-system-arm or defmt-print missing)"
    exit 0
fi
echo "--> running it on QEMU (lm3s6965evb)"
log="$scratch/log.txt"
status=0
timeout 60 qemu-system-arm -cpu cortex-m3 -machine lm3s6965evb -nographic \
    -semihosting-config enable=on,target=native -kernel "$elf" 2>/dev/null \
    | defmt-print -e "$elf" >"$log" 2>&1 || status=$?
sed 's/^/    /' "$log"
expected="breaker radio: closed | failures 3, skips 1, trips 1, probes 1, lease expiries 0"
if ((status != 0)) || ! grep -qF "$expected" "$log" || ! grep -qF "refused: Open" "$log"; then
    echo "readme-walkthrough: the walk-through's firmware did not run as the README says (exit $status)" >&2
    exit 1
fi
echo "--> the walk-through builds and runs as written"
