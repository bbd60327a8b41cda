#!/usr/bin/env bash
# Mutation testing with cargo-mutants: each mutant is a small change to the code (a
# condition negated, an operator swapped, a function body replaced by a default value);
# the tests must fail for it ("caught"). Survivors are listed in target/mutants/*/mutants.out
# and explained in docs/testing.md. Too slow for every run (hours on two cores), so it is
# not part of scripts/test.sh.
#
#   bash scripts/mutants.sh            # breaker-core, then the macro crate
#   bash scripts/mutants.sh core       # breaker-core only
#   bash scripts/mutants.sh macros     # breaker-macros only
#   bash scripts/mutants.sh macros-quick  # all of breaker-macros, without the trybuild
#                                      # suites (not part of `all`: messages go unchecked)
#   bash scripts/mutants.sh compose    # breaker-core/src/compose/ (not part of `all`)
#   bash scripts/mutants.sh integrations  # breaker-core/src/integrations/ (not part of `all`)
#   bash scripts/mutants.sh redis      # breaker-redis, against a running server (not part of
#                                      # `all`): BREAKER_REDIS_URL and BREAKER_REDIS_SERVER set
#   bash scripts/mutants.sh compose --shard 0/12 --sharding round-robin  # a deterministic
#       twelfth of compose/'s mutants, every 12th of its list (shards 0/12 to 11/12 make all)
#   bash scripts/mutants.sh core -F 'machine.rs'   # extra arguments go to cargo-mutants
#   bash scripts/mutants.sh diff main             # only the code changed since a git revision,
#   bash scripts/mutants.sh diff main window chain  # ...tested by these test targets of the
#                                                 # `tests` crate (with the changed crates' own
#                                                 # unit tests); all of them if none are named
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
# core, by the core's unit tests and the tests crate's, without the three trybuild suites
# (each would rebuild breaker-core for every mutant; the hal suite's address checks are
# const-evaluated, so a survivor in integrations/hal/ is checked against `hal_ui` by hand)
# and without the bounded soak (20 to 60 s of replica processes for every mutant).
# Unlike the core, `|` turned into `^` is kept: these files have few `|`, and not all of
# them join disjoint bits. The integrations are built with feature `svg` too, so that the
# timeline's own tests run; `defmt` and `rtic-time` stay off (their code is tested on the
# firmware and by the feature matrix), and their mutants survive uncompiled. Full runs are
# long (about 1,800 mutants in compose/, 900 in integrations/: docs/testing.md), hence
# `--shard K/N` for a deterministic part.
module() {
    local name="$1"
    shift
    local skip=(ui combinations_that_would_count_twice_or_cannot_steer_do_not_compile
        device_table_mistakes_do_not_compile
        replicas_behind_random_faults_keep_every_promise_for_a_bounded_soak)
    local features=()
    [ "$name" = integrations ] && features=(--features breaker-core/svg)
    mkdir -p "target/mutants/$name"
    cargo mutants "${common[@]}" --output "target/mutants/$name" --minimum-test-timeout 120 \
        --package breaker-core "${features[@]}" \
        -f "breaker-core/src/$name/**" \
        --test-package breaker-core --test-package tests \
        "$@" -- -- "${skip[@]/#/--skip=}" --exact
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
    local skip=(ui combinations_that_would_count_twice_or_cannot_steer_do_not_compile
        device_table_mistakes_do_not_compile
        replicas_behind_random_faults_keep_every_promise_for_a_bounded_soak)
    mkdir -p target/mutants/redis
    cargo mutants "${common[@]}" --output target/mutants/redis --minimum-test-timeout 120 \
        --package breaker-redis \
        --test-package breaker-redis --test-package tests \
        "$@" -- -- "${skip[@]/#/--skip=}" --exact
}

macros() {
    mkdir -p target/mutants/macros
    # The macro crate's unit tests and the tests crate's, trybuild's compile-error suite
    # included (it rebuilds every case for a mutant: minutes on a loaded machine).
    cargo mutants "${common[@]}" --output target/mutants/macros --minimum-test-timeout 900 \
        --package breaker-macros \
        -f breaker-macros/src/args.rs -f breaker-macros/src/duration.rs -f breaker-macros/src/validate.rs \
        --test-package breaker-macros --test-package tests \
        "$@"
}

# The whole macro crate (every file of breaker-macros/src/, not only the three above), without
# the trybuild suites and the soak (as compose/'s): seconds a mutant instead of minutes, for
# a sample. A mutant that only changes an error's message or span is caught by trybuild
# alone, so it survives here: check such a survivor against `macro_ui` by hand.
macros_quick() {
    local skip=(ui combinations_that_would_count_twice_or_cannot_steer_do_not_compile
        device_table_mistakes_do_not_compile
        replicas_behind_random_faults_keep_every_promise_for_a_bounded_soak)
    mkdir -p target/mutants/macros-quick
    cargo mutants "${common[@]}" --output target/mutants/macros-quick --minimum-test-timeout 120 \
        --package breaker-macros \
        --test-package breaker-macros --test-package tests \
        "$@" -- -- "${skip[@]/#/--skip=}" --exact
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
        tests=(--cargo-test-arg=--tests)
    else
        for t in "$@"; do
            # A name cargo does not know would fail every mutant's test run: each would
            # count as caught.
            if [ ! -f "tests/tests/$t.rs" ]; then
                echo "mutants.sh: the tests crate has no test target '$t' (tests/tests/$t.rs)" >&2
                exit 2
            fi
            tests+=("--cargo-test-arg=--test=$t")
        done
    fi
    cargo mutants --profile mutants --jobs "$jobs" --output target/mutants/diff \
        --in-diff "$patch" --baseline=skip --timeout "${MUTANTS_TIMEOUT:-300}" \
        --exclude-re 'replace \| with \^' \
        "${packages[@]}" --test-package tests --cargo-test-arg=--lib "${tests[@]}"
}

case "$which" in
    core) core "$@" ;;
    diff) diff_run "$@" ;;
    macros) macros "$@" ;;
    macros-quick) macros_quick "$@" ;;
    compose | integrations) module "$which" "$@" ;;
    redis) redis "$@" ;;
    all)
        status=0
        core "$@" || status=$?
        macros "$@" || status=$?
        exit "$status"
        ;;
    *)
        echo "usage: $0 [core|macros|macros-quick|compose|integrations|redis|all] [cargo-mutants arguments] | $0 diff <git revision> [test target...]" >&2
        exit 2
        ;;
esac
