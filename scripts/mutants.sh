#!/usr/bin/env bash
# Mutation testing with cargo-mutants: each mutant is a small change to the code (a
# condition negated, an operator swapped, a function body replaced by a default value);
# the tests must fail for it ("caught"). Survivors are listed in target/mutants/*/mutants.out
# and explained in docs/testing.md. Too slow for every run (hours on two cores), so it is
# not part of scripts/test.sh.
#
#   bash scripts/mutants.sh            # breaker-core, then the macro crate
#   bash scripts/mutants.sh core       # breaker-core only
#   bash scripts/mutants.sh macros     # breaker-macros only: without trybuild, then its
#                                      # survivors with trybuild (MUTANTS_STAGE=2: the second
#                                      # stage again, over the survivors only)
#   bash scripts/mutants.sh macros-quick  # the first of those two stages alone (not part of
#                                      # `all`: messages go unchecked)
#   bash scripts/mutants.sh compose    # breaker-core/src/compose/ (not part of `all`)
#   bash scripts/mutants.sh integrations  # breaker-core/src/integrations/ (not part of `all`)
#   bash scripts/mutants.sh redis      # breaker-redis, against a running server (not part of
#                                      # `all`): BREAKER_REDIS_URL and BREAKER_REDIS_SERVER set
#   bash scripts/mutants.sh compose --shard 0/12 --sharding round-robin  # a deterministic
#       twelfth of compose/'s mutants, every 12th of its list (shards 0/12 to 11/12 make all)
#   bash scripts/mutants.sh staged integrations  # all of integrations/ (or compose/, or
#       breaker/: the single breaker's whole directory) in two stages: each file's mutants
#       against the test targets that exercise it, then those still alive against every
#       test, as `integrations` would (hours quicker; see below);
#       MUTANTS_STAGE=2 runs the second stage again, over the survivors only
#   bash scripts/mutants.sh core -F 'machine.rs'   # extra arguments go to cargo-mutants
#   bash scripts/mutants.sh diff main             # only the code changed since a git revision,
#   bash scripts/mutants.sh diff main window chain  # ...tested by these test targets of the
#                                                 # `tests` crate (with the changed crates' own
#                                                 # unit tests); all of them if none are named
#
# Code compiled only under loom or only for bare metal is not built by these runs, so its
# mutants read as missed: scripts/mutants-elsewhere.sh judges them where that code runs.
#
# A run that stops early (cargo-mutants 27 can fail a worker with "File exists" when two
# jobs write the logs of two mutants of one place at once) goes on where it stopped with
# the same command and `--iterate`, which skips the mutants already caught.
#
# MUTANTS_JOBS (default 2) builds and tests that many mutants at once; PROPTEST_CASES
# (default 10000) caps each property test's cases; MUTANTS_TIMEOUT (default 300 s) is a
# `diff` run's timeout per mutant. The Redis tests are real only with BREAKER_REDIS_URL
# naming a running server and BREAKER_REDIS_SERVER a redis-server binary (scripts/test.sh
# starts one and sets both; BREAKER_REDIS_REQUIRED=1 fails a test that finds neither).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants

# Each job builds in its own copy of the tree, with its own target directory. A
# CARGO_TARGET_DIR shared by the copies lets cargo call a mutated crate fresh without
# building it (the tests then run the crate of another mutant, or none): every such mutant
# would be reported missed, or caught, wrongly.
unset CARGO_TARGET_DIR

which="${1:-all}"
[ $# -gt 0 ] && shift
jobs="${MUTANTS_JOBS:-2}"
# The property tests' cases (100,000 for the differential and snapshot tests otherwise):
# every mutant the full counts catch is caught within this many (docs/testing.md).
export PROPTEST_CASES="${PROPTEST_CASES:-10000}"

common=(--profile mutants --jobs "$jobs" --cargo-test-arg=--lib --cargo-test-arg=--tests)
# The tests every run but the core's and the macro crate's second stage leaves out: the
# three trybuild suites (each rebuilds breaker-core for every mutant) and the bounded
# soak (20 to 60 s of replica processes for every mutant).
skip_slow=(--skip=ui --skip=combinations_that_would_count_twice_or_cannot_steer_do_not_compile
    --skip=device_table_mistakes_do_not_compile
    --skip=replicas_behind_random_faults_keep_every_promise_for_a_bounded_soak)

# Files of unit tests only (a module's `tests.rs`): their helpers are not the library's code.
test_files='**/tests.rs'

# The features a run over `$1` builds `breaker-core` with, into the array `features`:
# `svg` for integrations/, so that the timeline's own tests run.
features_for() {
    features=()
    if [ "$1" = integrations ]; then features=(--features breaker-core/svg); fi
}

# Stops the run unless the tests crate has the test target `$1`: a name cargo does not
# know would fail every mutant's test run, and each would count as caught.
need_target() {
    if [ ! -f "tests/tests/$1.rs" ]; then
        echo "mutants.sh: the tests crate has no test target '$1' (tests/tests/$1.rs)" >&2
        exit 2
    fi
}

core() {
    mkdir -p target/mutants/core
    # The core's unit tests and the tests crate's integration tests; not the trybuild
    # suite (`ui`), which tests the macro's messages and would rebuild for every mutant.
    # A loaded machine runs the tests slowly: a floor of 120 s keeps that from counting as
    # a timeout. `|` turned into `^` is left out: in these files every `|` joins disjoint
    # bit fields (the state word's flags, the snapshot's flag byte), where the two are the
    # same operation (docs/testing.md lists the 18 mutants).
    cargo mutants "${common[@]}" --output target/mutants/core --minimum-test-timeout 120 \
        --exclude-re 'replace \| with \^' \
        --package breaker-core \
        -f breaker-core/src/breaker/machine.rs -f breaker-core/src/breaker/layout.rs -f breaker-core/src/breaker/shared.rs \
        -f breaker-core/src/breaker/single.rs -f breaker-core/src/breaker/word.rs \
        -f breaker-core/src/breaker/snapshot.rs -f breaker-core/src/breaker/policy.rs -f breaker-core/src/breaker/time.rs \
        --test-package breaker-core --test-package tests \
        "$@" -- -- --skip ui --exact
}

# breaker-core's composites (compose/) and integrations (integrations/): each tested like the
# core, by the core's unit tests and the tests crate's, without `skip_slow` (the hal
# suite's address checks are const-evaluated, so a survivor in integrations/hal/ is checked
# against `hal_ui` by hand).
# Unlike the core, `|` turned into `^` is kept: these files have few `|`, and not all of
# them join disjoint bits. The integrations are built with feature `svg` too, so that the
# timeline's own tests run; `defmt` and `rtic-time` stay off (their code is tested on the
# firmware and by the feature matrix), and their mutants survive uncompiled. Full runs are
# long (about 1,800 mutants in compose/, 900 in integrations/: docs/testing.md), hence
# `--shard K/N` for a deterministic part.
module() {
    local name="$1"
    shift
    local features
    features_for "$name"
    mkdir -p "target/mutants/$name"
    cargo mutants "${common[@]}" --output "target/mutants/$name" --minimum-test-timeout 120 \
        --package breaker-core "${features[@]}" \
        -f "breaker-core/src/$name/**" -e "$test_files" \
        --test-package breaker-core --test-package tests \
        "$@" -- -- "${skip_slow[@]}" --exact
}

# A first stage's exit: 0, or 2 and 3 (mutants missed or timed out, for the second stage);
# anything else (the tree does not build, a bad argument) stops the run.
stage_ended() {
    if [ "$2" -ne 0 ] && [ "$2" -ne 2 ] && [ "$2" -ne 3 ]; then
        echo "mutants.sh: $1 failed (cargo-mutants exit $2)" >&2
        exit "$2"
    fi
}

# A whole area in two stages, for the same verdicts as `module` in a fraction of the time
# (most of a mutant's time there is the rebuild of the `tests` crate's sixty test binaries).
# Stage 1: each group of files below, against `breaker-core`'s unit tests and the few test
# targets that exercise those files. A mutant caught there is caught by the whole suite too.
# Stage 2: every mutant stage 1 did not catch (missed, timed out, or in a file no group
# names), against every test `module` runs, with `--iterate` over stage 1's lists. So a
# group that names too few targets costs time, never a verdict. Both stages test in place
# (one job, in this tree: the rebuilds stay incremental from one group to the next), so run
# it in a tree of its own (`git worktree add`), not in the one you are editing.
staged_groups() {
    case "$1" in
        compose)
            cat <<'GROUPS'
chain.rs               : chain chain_properties composition load
router.rs              : router composition load
keyed.rs               : registry_table tower_keyed hal_shared_bus shared
history.rs             : macro_history serde
ladder.rs retry.rs rng.rs : retry_ladder retry_tokio retry_budget macro_retry composition defaults
retry_budget.rs        : retry_budget defaults
quota.rs quota_guard.rs : quota quota_properties composition state_file_crash defaults
window.rs window/*     : window window_differential slow_in_flight half_open_rate doc_figures macro_window defaults
GROUPS
            ;;
        breaker)
            cat <<'GROUPS'
machine.rs layout.rs single.rs : transitions external_trip half_open_rate differential properties counting shadow defaults
shared.rs shared/* word.rs padded.rs counts.rs live.rs refusal.rs : shared external_trip half_open_rate differential properties load counting shadow slow_in_flight errors defaults
snapshot.rs            : snapshot serde window reload state_file_crash
policy.rs time.rs      : policy time transitions errors serde defaults
circuit.rs outcome.rs call_async.rs : errors foreign_errors composition counting chain macro_async
GROUPS
            ;;
        integrations)
            cat <<'GROUPS'
tower.rs               : tower tower_keyed composition
serde.rs               : serde snapshot reload
metrics.rs             : metrics
tracing_log.rs         : tracing
registry.rs table.rs display.rs health.rs linker.rs timeline.rs : registry registry_table router serde composition tower_keyed macro_sync load shadow chain stdout
state_file.rs          : state_file_crash serde reload macro_log
stderr_log.rs quota_log.rs : macro_log registry defaults quota stdout
global_clock.rs        : macro_global_clock
io_error.rs anyhow_error.rs convert.rs : foreign_errors errors counting tower
hal.rs hal/*           : hal_async hal_i2c hal_not_ready hal_recover hal_shared_bus hal_spi_serial composition
GROUPS
            ;;
        *)
            echo "mutants.sh: staged runs cover breaker, compose or integrations, not '$1'" >&2
            exit 2
            ;;
    esac
}

staged() {
    local area="${1:?usage: $0 staged breaker|compose|integrations}"
    shift
    local out="target/mutants/$area-staged" features group=0
    features_for "$area"
    if [ "${MUTANTS_STAGE:-1}" = 2 ]; then
        staged_rest "$area" "$out" "$@"
        return
    fi
    rm -rf "$out"
    mkdir -p "$out/mutants.out"
    staged_groups "$area" >"$out/groups.txt"
    # The groups on descriptor 3: nothing cargo runs can read them from standard input.
    while IFS=: read -r files targets <&3; do
        local filters=() tests=() rc=0
        for f in $files; do filters+=(-f "breaker-core/src/$area/$f"); done
        for t in $targets; do
            need_target "$t"
            tests+=("--cargo-arg=--test=$t")
        done
        group=$((group + 1))
        echo "== stage 1, group $group: $files against $targets"
        # The targets go to every cargo command (`--cargo-arg`), so that only they are
        # built, not only run. No baseline: cargo-mutants would run it on `breaker-core`'s
        # tests alone, which have none of these targets (stage 2 runs one); a fixed timeout
        # stands in for the one it measures.
        cargo mutants --profile mutants --in-place --output "$out/stage1-$group" \
            --baseline=skip --timeout 120 --package breaker-core "${features[@]}" "${filters[@]}" \
            --test-package breaker-core --test-package tests --cargo-arg=--lib "${tests[@]}" \
            "$@" || rc=$?
        stage_ended "stage 1, group $group," "$rc"
        # A stage-1 timeout hangs the whole suite too (these targets are part of it):
        # detected, not tested again.
        for list in caught unviable timeout; do
            distinct "$out/stage1-$group/mutants.out/$list.txt" >>"$out/mutants.out/$list.txt"
        done
    done 3<"$out/groups.txt"
    staged_rest "$area" "$out" "$@"
}

# Stage 2 of `staged`: every mutant not caught so far, against every test. Run again
# alone (`MUTANTS_STAGE=2`) after tests are added for its survivors, it tests only those.
staged_rest() {
    local area="$1" out="$2" features
    shift 2
    features_for "$area"
    second_stage "$out"
    echo "== stage 2: the rest against every test"
    local status=0
    cargo mutants --profile mutants --in-place --output "$out" --iterate \
        --minimum-test-timeout 120 --package breaker-core "${features[@]}" \
        -f "breaker-core/src/$area/**" -e "$test_files" \
        --test-package breaker-core --test-package tests \
        --cargo-test-arg=--lib --cargo-test-arg=--tests \
        "$@" -- -- "${skip_slow[@]}" --exact || status=$?
    staged_score "$out"
    return "$status"
}

# Before a second stage in `$1` (or a run of it again): cargo-mutants' `--iterate` carries
# the caught mutants over (previously_caught.txt), not the unviable ones nor the timeouts;
# every earlier one is kept, for the score, and listed for `--iterate` to skip (a timeout
# among the caught ones: testing it again would only wait out the timeout again).
second_stage() {
    local o="$1/mutants.out"
    if [ ! -f "$o/caught.txt" ]; then
        echo "mutants.sh: no earlier stage's results in $1" >&2
        exit 2
    fi
    distinct "$o/unviable.txt" >>"$1/unviable-before.txt"
    distinct "$o/timeout.txt" >>"$1/timeout-before.txt"
    sort -u "$1/unviable-before.txt" >"$o/unviable.txt"
    cat "$1/timeout-before.txt" >>"$o/caught.txt"
}

# The distinct lines of those of the files "$@" that exist.
distinct() { cat "$@" 2>/dev/null | sort -u || true; }

# The two stages' verdicts together: every mutant counted once.
staged_score() {
    local o="$1/mutants.out" caught unviable timeout missed viable
    timeout=$(distinct "$1/timeout-before.txt" "$o/timeout.txt" | wc -l)
    # cargo-mutants lists the unviable mutants it skipped among the "previously caught".
    caught=$(distinct "$o/previously_caught.txt" "$o/caught.txt" |
        { grep -vxFf <(distinct "$1/timeout-before.txt" "$1/unviable-before.txt") || true; } | wc -l)
    unviable=$(distinct "$1/unviable-before.txt" "$o/unviable.txt" | wc -l)
    missed=$(distinct "$o/missed.txt" | wc -l)
    viable=$((caught + timeout + missed))
    echo "both stages: $((viable + unviable)) mutants, $unviable unviable, $viable viable:" \
        "$caught caught, $timeout timeouts, $missed missed;" \
        "$(awk -v d=$((caught + timeout)) -v v=$viable 'BEGIN { printf "%.1f", v ? 100 * d / v : 100 }') % detected"
}

# breaker-redis: its own unit tests and the tests crate's (where its integration tests are),
# without the trybuild suites and the bounded soak, as for compose/. Its tests need a real
# server: this mode does not start one, it requires BREAKER_REDIS_URL and
# BREAKER_REDIS_SERVER (set as scripts/test.sh does) and sets BREAKER_REDIS_REQUIRED=1, so
# that a test which cannot reach the server fails rather than passing as skipped (the
# mutants it should catch would then survive).
redis() {
    if [ -z "${BREAKER_REDIS_URL:-}" ] || [ -z "${BREAKER_REDIS_SERVER:-}" ]; then
        echo "mutants.sh: redis needs BREAKER_REDIS_URL (a running server) and BREAKER_REDIS_SERVER (a redis-server binary)" >&2
        exit 2
    fi
    export BREAKER_REDIS_REQUIRED=1
    mkdir -p target/mutants/redis
    cargo mutants "${common[@]}" --output target/mutants/redis --minimum-test-timeout 120 \
        --package breaker-redis \
        --test-package breaker-redis --test-package tests \
        "$@" -- -- "${skip_slow[@]}" --exact
}

# The whole macro crate in two stages. Stage 1 (`macros-quick` alone) without trybuild:
# seconds a mutant, but a mutant that only changes an error's message or span, or breaks
# only a trybuild pass case, survives it. Stage 2: the survivors again (`--iterate` over
# stage 1's lists), with trybuild, which rebuilds every case for a mutant (a minute or
# two each on a loaded machine).
macros() {
    local out=target/mutants/macros rc=0 status=0
    if [ "${MUTANTS_STAGE:-1}" != 2 ]; then
        rm -rf "$out"
        macros_quick_into "$out" "$@" || rc=$?
        stage_ended "stage 1 of macros" "$rc"
    fi
    second_stage "$out"
    # Stage 1's survivors passed every other test already: stage 2 builds and runs the
    # trybuild suites that hold the attribute's messages (`macro_ui`, and
    # `composition_ui`, some of whose cases are annotated functions), with the macro
    # tests (`macro_*`, the unit tests, `breaker-embedded`'s) for tests added since.
    # Not `hal_ui`: none of its cases uses the attribute. No baseline (cargo-mutants
    # would run it on the macro crate alone, which has none of these targets).
    local targets=(--cargo-arg=--lib --cargo-arg=--test=macro_ui --cargo-arg=--test=composition_ui
        --cargo-arg=--test=attribute)
    for t in tests/tests/macro_*.rs; do
        [ "$t" = tests/tests/macro_ui.rs ] || targets+=("--cargo-arg=--test=$(basename "$t" .rs)")
    done
    cargo mutants --profile mutants --jobs "$jobs" --output "$out" --iterate \
        --baseline=skip --timeout 900 --package breaker-macros \
        --test-package breaker-macros --test-package breaker-embedded --test-package tests \
        "${targets[@]}" "$@" || status=$?
    staged_score "$out"
    return "$status"
}

macros_quick() {
    macros_quick_into target/mutants/macros-quick "$@"
}

# Stage 1 of `macros`: the whole macro crate's mutants against its unit tests, the tests
# crate's and `breaker-embedded`'s (the attribute it re-exports), without the trybuild
# suites and the soak (as compose/'s).
macros_quick_into() {
    local out="$1"
    shift
    mkdir -p "$out"
    cargo mutants "${common[@]}" --output "$out" --minimum-test-timeout 120 \
        --package breaker-macros \
        --test-package breaker-macros --test-package breaker-embedded --test-package tests \
        "$@" -- -- "${skip_slow[@]}" --exact
}

# The code changed since a git revision: the mutants of its changed lines only, tested by the
# named integration tests (quicker than a whole crate's run, for a change under review). The
# baseline run is skipped (cargo-mutants would run it on the mutated crate's tests alone),
# so a fixed timeout stands in for the one it measures.
diff_run() {
    local base="${1:?usage: $0 diff <git revision> [test target...]}"
    shift
    local patch=target/mutants/diff.patch tests=() packages=()
    mkdir -p target/mutants/diff
    git diff "$base" -- breaker-core/src breaker-macros/src breaker-redis/src >"$patch"
    if [ ! -s "$patch" ]; then
        echo "mutants.sh: no change to breaker-core, breaker-macros or breaker-redis since $base" >&2
        exit 0
    fi
    for crate in breaker-core breaker-macros breaker-redis; do
        if grep -q "^+++ b/$crate/" "$patch"; then packages+=(--test-package "$crate"); fi
    done
    if [ $# -eq 0 ]; then
        tests=(--cargo-arg=--tests)
    else
        for t in "$@"; do
            need_target "$t"
            tests+=("--cargo-arg=--test=$t")
        done
    fi
    cargo mutants --profile mutants --jobs "$jobs" --output target/mutants/diff \
        --in-diff "$patch" --baseline=skip --timeout "${MUTANTS_TIMEOUT:-300}" \
        --exclude-re 'replace \| with \^' \
        "${packages[@]}" --test-package tests --cargo-arg=--lib "${tests[@]}"
}

case "$which" in
    core) core "$@" ;;
    diff) diff_run "$@" ;;
    macros) macros "$@" ;;
    macros-quick) macros_quick "$@" ;;
    compose | integrations) module "$which" "$@" ;;
    staged) staged "$@" ;;
    redis) redis "$@" ;;
    all)
        status=0
        core "$@" || status=$?
        macros "$@" || status=$?
        exit "$status"
        ;;
    *)
        echo "usage: $0 [core|macros|macros-quick|compose|integrations|redis|all] [cargo-mutants arguments] | $0 staged compose|integrations | $0 diff <git revision> [test target...]" >&2
        exit 2
        ;;
esac
