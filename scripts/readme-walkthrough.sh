#!/usr/bin/env bash
# Proves that the setup docs work as written, from crates outside this repository:
#
# 1. docs/getting-started.md: each world's `[dependencies]` block and first source file,
#    taken out of the page unchanged into a crate of its own (`cargo new`, its empty
#    `[dependencies]` replaced by the page's block), beside a `circuit-breaker` folder
#    that is this repository (the layout the page describes), and built: the host worlds
#    for the host, the firmware worlds for the target their marker names.
# 2. breaker-embedded's README walk-through: its steps out of the README into a scratch
#    project beside the same `circuit-breaker` folder, built for thumbv7m-none-eabi and run
#    on QEMU when qemu-system-arm and defmt-print are there.
#
# Also checks that the functions firmware/README.md quotes are the firmware's own. (Every
# other README code block is a doctest, a command list the test command runs itself, or
# sample output.)
#
# getting-started.md marks each block with an HTML comment on the line before it:
#   <!-- getting-started: WORLD Cargo.toml [TARGET] -->  the world's `[dependencies]`
#   <!-- getting-started: WORLD FILE -->                 a source file of the world's crate
# A world with a `src/lib.rs` is a library crate (`cargo new --lib`).
#
# The README marks each piece with an HTML comment on the line before its code block:
#   <!-- walkthrough: run -->          a shell block, run in the scratch folder
#   <!-- walkthrough: append FILE -->  a block appended to FILE of the project
#   <!-- walkthrough: file FILE -->    a block that is FILE of the project
# The project is the one folder the `run` blocks create.
#
# Nothing is added to the blocks: no `[patch]`, no extra dependency. The one addition is
# a Cargo.lock to start from (the workspace's for the host worlds, firmware/m3's,
# firmware/rtic's or firmware/m0's for the firmware ones), so that the versions this repository is tested
# with are used, offline when they are all cached; Cargo adds what the lock lacks.
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

scratch_root="$(mktemp -d)"
trap 'rm -rf "$scratch_root"' EXIT

# `cargo build`, offline first (everything cached), then with the network.
build() { cargo build --offline --quiet "$@" 2>/dev/null || cargo build --quiet "$@"; }

# ---- docs/getting-started.md: one crate per world -----------------------------------------
GUIDE="$ROOT/docs/getting-started.md"
worlds="$scratch_root/worlds"
mkdir -p "$worlds/.blocks"
ln -s "$ROOT" "$worlds/circuit-breaker"
# One `NNN.what` ("WORLD FILE [TARGET]") and `NNN.body` per marked block.
awk -v dir="$worlds/.blocks" '
    /^<!-- getting-started: .* -->$/ {
        what = $0; sub(/^<!-- getting-started: /, "", what); sub(/ -->$/, "", what)
        pending = 1; next
    }
    pending && /^```/ { pending = 0; inside = 1; n++; out = sprintf("%s/%03d", dir, n); print what > (out ".what"); printf "" > (out ".body"); next }
    inside && /^```/ { inside = 0; close(out ".body"); next }
    inside { print > (out ".body") }
' "$GUIDE"
world_names=()
declare -A world_target=()
for what_file in "$worlds"/.blocks/*.what; do
    read -r world file target <"$what_file" || true
    [[ $file == Cargo.toml ]] || continue
    world_names+=("$world")
    world_target[$world]="${target:-}"
done
if ((${#world_names[@]} < 6)); then
    echo "readme-walkthrough: expected six worlds in $GUIDE, found ${#world_names[@]}" >&2
    exit 1
fi
# One target directory for every world: what they share is built once.
export CARGO_TARGET_DIR="$ROOT/target/getting-started"
for world in "${world_names[@]}"; do
    crate="$worlds/$world"
    kind=--bin
    if grep -qx "$world src/lib.rs" "$worlds"/.blocks/*.what; then kind=--lib; fi
    cargo new --quiet --vcs none "$kind" --name "my-$world" "$crate"
    # `cargo new` ends its Cargo.toml with an empty `[dependencies]`: the page's block
    # (which starts with that header) takes its place.
    if ! grep -qx '\[dependencies\]' "$crate/Cargo.toml"; then
        echo "readme-walkthrough: cargo new wrote no [dependencies] section" >&2
        exit 1
    fi
    sed -i '/^\[dependencies\]$/,$d' "$crate/Cargo.toml"
    for what_file in "$worlds"/.blocks/*.what; do
        read -r w file _ <"$what_file" || true
        [[ $w == "$world" ]] || continue
        if [[ $file == Cargo.toml ]]; then
            cat "${what_file%.what}.body" >>"$crate/Cargo.toml"
        else
            mkdir -p "$(dirname "$crate/$file")"
            cp "${what_file%.what}.body" "$crate/$file"
        fi
    done
    target="${world_target[$world]}"
    case "$target" in
        thumbv7m-none-eabi) [[ $world == rtic ]] && lock=rtic || lock=m3; cp "$ROOT/firmware/$lock/Cargo.lock" "$crate/Cargo.lock" ;;
        thumbv6m-none-eabi) cp "$ROOT/firmware/m0/Cargo.lock" "$crate/Cargo.lock" ;;
        "") cp "$ROOT/Cargo.lock" "$crate/Cargo.lock" ;;
        *)
            echo "readme-walkthrough: world $world: unknown target $target" >&2
            exit 1
            ;;
    esac
    echo "--> getting started, $world: cargo build${target:+ --target $target}"
    sed -n '/^\[dependencies\]$/,$p' "$crate/Cargo.toml" | sed 's/^/    /'
    (cd "$crate" && build ${target:+--target "$target"})
done
echo "--> docs/getting-started.md: every world builds as written"

# ---- breaker-embedded/README.md: the walk-through ------------------------------------------
scratch="$scratch_root/walk"
blocks="$scratch/.blocks"
mkdir -p "$blocks"
ln -s "$ROOT" "$scratch/circuit-breaker"

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

cp "$ROOT/firmware/m3/Cargo.lock" "$project/Cargo.lock"

name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$project/Cargo.toml" | head -1)
export CARGO_TARGET_DIR="$ROOT/target/readme-walkthrough"
echo "--> cargo build --release ($name, thumbv7m-none-eabi)"
cd "$project"
build --release
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
