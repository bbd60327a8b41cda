#!/usr/bin/env bash
# The feature matrix: each library crate's own unit tests and doctests under each feature
# that gates code, alone (`--no-default-features --features F`, with only what F implies),
# so that no test passes only because another crate of the build turned a feature on.
# `scripts/test.sh` runs it; it takes a few minutes (see docs/testing.md).
#
#   bash scripts/features.sh            # every crate
#   bash scripts/features.sh core       # breaker-core only (also: embedded, redis, macros, demos)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# breaker-core's features, each tested alone on the host. Every feature of its Cargo.toml
# must be in one of the two lists below, so a new feature cannot go untested unnoticed.
CORE_FEATURES=(std macros state-file anyhow serde tower tracing metrics embassy-time rtic-time
    embedded-hal svg portable-atomic)
# Built for the thumb targets by the test command, not tested here: `defmt` links only
# with a target's linker script and a global logger; the two ways of making
# `portable-atomic` atomic refuse (`unsafe-assume-single-core`) or lack (`critical-section`:
# the final binary provides it) an implementation on a multi-core host.
CORE_THUMB_ONLY=(defmt portable-atomic-critical-section portable-atomic-unsafe-assume-single-core)

# breaker-embedded's features; its host tests bring a critical section of their own.
EMBEDDED_FEATURES=(portable-atomic portable-atomic-critical-section embedded-hal serde)
EMBEDDED_THUMB_ONLY=(portable-atomic-unsafe-assume-single-core)

# The features a crate's Cargo.toml declares (the `[features]` table, `default` aside).
declared_features() {
    awk '/^\[features\]/ { in_features = 1; next }
         /^\[/ { in_features = 0 }
         in_features && /^[a-z0-9_-]+ *=/ { sub(/ *=.*/, ""); if ($0 != "default") print }' "$1"
}

# Fails unless every declared feature is listed as tested or as built for thumb only.
check_coverage() {
    local manifest="$1"
    shift
    local listed=" $* " f missing=""
    for f in $(declared_features "$manifest"); do
        [[ "$listed" == *" $f "* ]] || missing+=" $f"
    done
    if [ -n "$missing" ]; then
        echo "$manifest declares features scripts/features.sh does not list:$missing" >&2
        exit 1
    fi
}

# The doctests of a crate under the given features, one name a line (listing them builds
# the library, not the doctests). A library that does not build fails the script here.
doctest_names() {
    local crate="$1" features="$2" listed
    if ! listed="$(cargo test -q -p "$crate" --doc --no-default-features \
        ${features:+--features "$features"} -- --list 2>"$LOG")"; then
        cat "$LOG" >&2
        echo "$crate: the doctests with features '$features' could not be listed" >&2
        exit 1
    fi
    sed -n 's/: test$//p' <<<"$listed" | sort
}

# A crate's tests under each feature alone, and its doctests: all of them with the
# base features given (a doctest is a host program: breaker-core's need its defaults,
# `std` for a clock and `macros` for the attribute its README shows first), then, for
# each other feature, the doctests it adds, run with the base and that feature alone.
# `targets` are the test targets (`--lib`, and `--tests` where the crate's integration
# tests are few and its own).
matrix() {
    local crate="$1" doc_base="$2" targets="$3"
    shift 3
    local f
    step "$crate: tests ($targets) with no feature, then with each feature alone"
    cargo test -q -p "$crate" $targets --no-default-features
    for f in "$@"; do
        echo "-- $crate $targets --no-default-features --features $f"
        cargo test -q -p "$crate" $targets --no-default-features --features "$f"
    done

    step "$crate: doctests with ${doc_base:-no feature}, then those each feature adds"
    cargo test -q -p "$crate" --doc --no-default-features ${doc_base:+--features "$doc_base"}
    local base with added
    base="$(doctest_names "$crate" "$doc_base")"
    for f in "$@"; do
        [[ ",$doc_base," == *",$f,"* ]] && continue
        local features="${doc_base:+$doc_base,}$f"
        with="$(doctest_names "$crate" "$features")"
        added="$(comm -13 <(echo "$base") <(echo "$with"))"
        if [ -z "$added" ]; then
            echo "-- $crate --doc --features $features: no doctest of its own"
            continue
        fi
        # Run by their files: rustdoc splits test arguments at spaces, so a doctest's full
        # name ("FILE - ITEM (line N)") cannot be a filter; its file can (which may select
        # more of that file's doctests, never fewer).
        local files=()
        mapfile -t files < <(awk '{ print $1 }' <<<"$added" | sort -u)
        echo "-- $crate --doc --no-default-features --features $features: $(wc -l <<<"$added") doctests, in ${files[*]}"
        cargo test -q -p "$crate" --doc --no-default-features --features "$features" -- "${files[@]}" \
            | tee "$LOG"
        # A filter that selects nothing passes: count what ran.
        local ran
        ran="$(sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' "$LOG")"
        if [ "${ran:-0}" -lt "$(wc -l <<<"$added")" ]; then
            echo "$crate: ${ran:-0} doctests ran with $features, fewer than the feature's own" >&2
            exit 1
        fi
    done
}

LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT

which_crates="${1:-all}"
case "$which_crates" in
    all | core | embedded | redis | macros | demos) ;;
    *)
        echo "usage: bash scripts/features.sh [all|core|embedded|redis|macros|demos]" >&2
        exit 2
        ;;
esac
started=$SECONDS

if [ "$which_crates" = all ] || [ "$which_crates" = core ]; then
    check_coverage breaker-core/Cargo.toml "${CORE_FEATURES[@]}" "${CORE_THUMB_ONLY[@]}"
    matrix breaker-core std,macros --lib "${CORE_FEATURES[@]}"
fi

if [ "$which_crates" = all ] || [ "$which_crates" = embedded ]; then
    check_coverage breaker-embedded/Cargo.toml "${EMBEDDED_FEATURES[@]}" "${EMBEDDED_THUMB_ONLY[@]}"
    # No `std` feature of its own: its doctests are the host's with its defaults. Its one
    # integration test (the attribute over embassy's mock clock) is its host test suite.
    matrix breaker-embedded "" "--lib --tests" "${EMBEDDED_FEATURES[@]}"
fi

# No features of their own: their tests alone, with only the breaker-core features their
# own manifests ask for (in the workspace run, other crates turn more on).
if [ "$which_crates" = all ] || [ "$which_crates" = redis ]; then
    check_coverage breaker-redis/Cargo.toml
    step "breaker-redis alone: unit tests and doctests"
    cargo test -q -p breaker-redis --lib
    cargo test -q -p breaker-redis --doc
fi
if [ "$which_crates" = all ] || [ "$which_crates" = macros ]; then
    check_coverage breaker-macros/Cargo.toml
    step "breaker-macros alone: unit tests and doctests"
    cargo test -q -p breaker-macros --lib
    cargo test -q -p breaker-macros --doc
fi

# The demos (not published; their one feature is the quota demo's state file): their
# examples and tests alone, without the feature and with it.
if [ "$which_crates" = all ] || [ "$which_crates" = demos ]; then
    check_coverage demos/Cargo.toml state-file
    step "demos alone: examples and tests, without state-file, then with it"
    cargo test -q -p demos
    cargo test -q -p demos --features state-file
fi

step "feature matrix passed in $((SECONDS - started)) s"
