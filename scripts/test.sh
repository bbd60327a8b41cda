#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, docs, host tests (unit, integration,
# property, trybuild, doctests, the Redis and Prometheus tests on real servers, the status
# page in a headless Chromium), loom model checks, bounded coverage-guided fuzzing, the
# no_std thumb builds and the firmware on QEMU.
# Installs what a fresh machine with only Rust lacks.
#
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# Disk: one run builds the workspace under a dozen feature sets, so what each build leaves
# in the target directory counts. Incremental caches serve only a rebuild after an edit
# (in one run they were the largest part of the directory), and line tables keep a failing
# test's backtrace readable at a fraction of full debug info's size.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only CARGO_PROFILE_TEST_DEBUG=line-tables-only

# ---- what a fresh machine lacks ---------------------------------------------------------
THUMB_TARGETS=(thumbv6m-none-eabi thumbv7m-none-eabi thumbv7em-none-eabihf)
step "toolchain: thumb targets, rustfmt, clippy, llvm-tools (for the firmware size report)"
installed_targets="$(rustup target list --installed)"
for t in "${THUMB_TARGETS[@]}"; do
    grep -qx "$t" <<<"$installed_targets" || rustup target add "$t"
done
for c in rustfmt clippy llvm-tools; do
    rustup component list --installed | grep -q "^$c" || rustup component add "$c"
done

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v qemu-system-arm >/dev/null; then
    step "installing qemu-system-arm"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-system-arm >/dev/null
fi
if ! command -v redis-server >/dev/null; then
    step "installing redis-server (the Redis tests and the replicas demo)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
if ! command -v chromium >/dev/null; then
    step "installing chromium (the status page test loads the page in it, headless)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! command -v prometheus >/dev/null; then
    step "installing prometheus (the example service's /metrics, scraped by a real server)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
fi
if ! command -v defmt-print >/dev/null; then
    step "installing defmt-print"
    cargo install --locked defmt-print
fi

# ---- style ------------------------------------------------------------------------------
step "cargo fmt --check"
cargo fmt --all --check
for fw in firmware/m3 firmware/m0 firmware/rtic fuzz; do (cd "$fw" && cargo fmt --check); done

step "cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --features demos/state-file -- -D warnings

step "cargo doc -D warnings"
RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps

# ---- the first demo, cold -----------------------------------------------------------------
# What a fresh clone compiles for the main demo: breaker-core and its few dependencies, and
# nothing else. The README's first lines state the count; this keeps it true.
step "the main demo from an empty target directory: the crates it compiles (at most 20)"
cold_target="$(mktemp -d)"
CARGO_TARGET_DIR="$cold_target" cargo build -p demos --example outage 2>"$cold_target/build.log" \
    || { cat "$cold_target/build.log" >&2; exit 1; }
cold_crates="$(grep -c '^ *Compiling ' "$cold_target/build.log")"
rm -rf "$cold_target"
echo "$cold_crates crates"
if [ "$cold_crates" -gt 20 ] || ! grep -q "cold: $cold_crates crates" README.md; then
    echo "the main demo compiles $cold_crates crates cold: README.md's first lines must say so, and at most 20" >&2
    exit 1
fi

# ---- host tests -------------------------------------------------------------------------
# The Redis tests need a real server: one of our own on a loopback port (never the default
# 6379), in a temporary directory, with no persistence, stopped on exit whatever happens.
# Tests that kill and restart a server start private ones from BREAKER_REDIS_SERVER.
step "a private redis-server on loopback for the Redis tests"
REDIS_DIR="$(mktemp -d)"
REDIS_PID=""
stop_redis() {
    # Wait for it to exit before removing its directory: a server still shutting down can
    # write there while `rm` runs, and the failed `rm` would fail a run whose tests passed.
    if [ -n "$REDIS_PID" ]; then
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
    fi
    rm -rf "$REDIS_DIR" || true
}
trap stop_redis EXIT
for _ in 1 2 3 4 5; do
    REDIS_PORT=$((20000 + RANDOM % 20000))
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no --dir "$REDIS_DIR" \
        --logfile "$REDIS_DIR/redis.log" </dev/null &
    REDIS_PID=$!
    # Ours only if our process is still alive (a port someone else holds makes it exit).
    for _ in $(seq 50); do
        kill -0 "$REDIS_PID" 2>/dev/null || break
        redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && break
        sleep 0.1
    done
    if kill -0 "$REDIS_PID" 2>/dev/null && redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
        break
    fi
    kill "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=""
done
[ -n "$REDIS_PID" ] || { echo "redis-server did not start" >&2; exit 1; }
export BREAKER_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/"
export BREAKER_REDIS_SERVER="$(command -v redis-server)"
# Here a Redis test that cannot reach its server fails rather than passing as skipped, and
# so does the status page test without a Chromium.
export BREAKER_REDIS_REQUIRED=1
export BREAKER_CHROMIUM_REQUIRED=1
echo "redis-server on 127.0.0.1:$REDIS_PORT"
# The Prometheus test (`examples/tests/prometheus.rs`) starts its own server on loopback;
# here a missing binary fails it rather than letting it pass as skipped.
export BREAKER_PROMETHEUS="$(command -v prometheus)"
export BREAKER_PROMETHEUS_REQUIRED=1

# The bounded soak (`tests/tests/redis_soak.rs`: replica processes behind random faults)
# runs this long, from a seed it prints (`BREAKER_SOAK_SEED` replays one).
export BREAKER_SOAK_SECONDS="${BREAKER_SOAK_SECONDS:-60}"

step "cargo test --workspace (unit, integration, property, trybuild, doctests; Redis and Prometheus tests on real servers, the bounded soak of replicas behind random faults ($BREAKER_SOAK_SECONDS s); the status page in headless Chromium)"
cargo test --workspace --features demos/state-file

# The line above builds every crate with the features any crate of the workspace turns
# on. Each feature set on purpose: every library crate's own tests and doctests under each
# feature alone (scripts/features.sh, a few minutes), and each host feature of
# breaker-core built alone, outside a test build. (`defmt` and the `portable-atomic` ones
# build for the thumb targets below.)
step "the feature matrix: each crate's own tests under each feature alone"
bash scripts/features.sh

step "breaker-core: each host feature alone"
for f in "" std macros state-file anyhow serde tower tracing metrics embassy-time rtic-time embedded-hal svg; do
    cargo check -p breaker-core --lib --no-default-features ${f:+--features "$f"}
done

step "loom model checks: the shared breaker, its failure-rate window, its in-flight slots, the fallback chain's one probe, the transition history, the keyed table, the live policy, the retry budget"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p breaker-core --release \
    --test loom --test loom_window --test loom_chain --test loom_history --test loom_keyed --test loom_live \
    --test loom_retry_budget --test loom_inflight

# ---- fuzzing ----------------------------------------------------------------------------
# Seven targets at 35 s each: about four minutes of fuzzing in all.
step "coverage-guided fuzzing: snapshot decoder, duration grammar, attribute arguments, state machine against the model, Redis value, state file, serde forms (FUZZ_SECONDS each, 35 s here)"
FUZZ_SECONDS="${FUZZ_SECONDS:-35}" bash scripts/fuzz.sh

# ---- no_std -----------------------------------------------------------------------------
step "no_std builds for thumb targets"
for t in thumbv6m-none-eabi thumbv7em-none-eabihf; do
    cargo build -p breaker-core --no-default-features --features portable-atomic-critical-section --target "$t"
    cargo build -p breaker-core --no-default-features --features portable-atomic-critical-section,defmt --target "$t"
    cargo build -p breaker-core --no-default-features --features portable-atomic-unsafe-assume-single-core --target "$t"
    cargo build -p breaker-core --no-default-features --features portable-atomic-critical-section,macros --target "$t"
    cargo build -p breaker-core --no-default-features --features portable-atomic-critical-section,embedded-hal,defmt --target "$t"
    cargo build -p breaker-core --no-default-features --features portable-atomic-critical-section,serde,embassy-time --target "$t"
    cargo build -p breaker-embedded --features portable-atomic-critical-section --target "$t"
    cargo build -p breaker-embedded --features portable-atomic-critical-section,embedded-hal --target "$t"
done

# ---- the setup docs, as written ------------------------------------------------------------
step "docs/getting-started.md's six worlds and breaker-embedded's README walk-through: extracted, built outside the workspace (the walk-through run on QEMU)"
bash scripts/readme-walkthrough.sh

# ---- ready to publish ---------------------------------------------------------------------
# Every publishable crate, packaged and verified together: Cargo builds each tarball
# against the others through a local registry, so none needs `--no-verify` although
# breaker-core, breaker-embedded and breaker-redis depend on unpublished crates of this
# workspace. `--allow-dirty`: the test command runs on a working tree too.
step "cargo package: breaker-macros, breaker-core, breaker-embedded, breaker-redis"
PUBLISHED=(breaker-macros breaker-core breaker-embedded breaker-redis)
# A second run on the same machine would verify against the first run's packages: Cargo
# unpacks the local registry's tarballs under CARGO_HOME once per name and version, and
# takes a registry package's build in the target directory as final. Both go first (the
# unpacked copies are those of registries without a host, `-<hash>`; the builds are this
# workspace's crates', which the next build of the workspace redoes anyway).
for crate in "${PUBLISHED[@]}"; do
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$crate"-[0-9]* \
        "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/-*/"$crate"-[0-9]*.crate \
        target/debug/.fingerprint/"$crate"-* target/debug/build/"$crate"-* \
        target/debug/deps/lib"${crate//-/_}"-* target/debug/deps/"${crate//-/_}"-*
done
package_args=()
for crate in "${PUBLISHED[@]}"; do package_args+=(-p "$crate"); done
cargo package --allow-dirty --quiet "${package_args[@]}"
for crate in "${PUBLISHED[@]}"; do
    files="$(cargo package --allow-dirty --list -p "$crate")"
    for f in README.md LICENSE-MIT LICENSE-APACHE; do
        grep -qx "$f" <<<"$files" || { echo "cargo package: $crate's package lacks $f" >&2; exit 1; }
    done
done

# ---- firmware on QEMU -------------------------------------------------------------------
step "firmware on QEMU (Cortex-M3 and Cortex-M0)"
bash firmware/test.sh

step "all tests passed"
# What the run left on disk, for a machine whose disk is small.
du -sh target fuzz/target firmware/*/target 2>/dev/null || true
