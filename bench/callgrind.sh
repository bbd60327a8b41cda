#!/usr/bin/env bash
# Instructions per call, counted by `valgrind --tool=callgrind`.
#
# Instruction counts are stable on noisy machines where nanoseconds are not. Each case (of
# the `peers`, `ladder`, `hal`, `compose`, `quota`, `replicas`, `shapes` and `tower` benchmarks) is run twice
# under callgrind, with N1 and N2 calls; the difference of the two runs' total instruction
# counts (Ir), divided by N2 - N1, is the cost of one call: process start-up, breaker
# construction and tripping are the same in both runs and cancel out.
#
#   bench/callgrind.sh                 # all cases, N1=100000, N2=200000 (the window's and the shape matrix's too)
#   BENCH=shapes bench/callgrind.sh    # only the payload-shape matrix (every result type, its references)
#   N1=50000 N2=150000 bench/callgrind.sh ref-a ours-closed
#   bench/callgrind.sh --asm           # also print the disassembly of the breaker-core loops
#   BENCH=hal bench/callgrind.sh       # the `hal` benchmark's cases: Guarded, the bare bus, by hand
#   BENCH=compose bench/callgrind.sh   # the `compose` benchmark's cases (chain, router, fallback)
#   BENCH=quota bench/callgrind.sh     # the `quota` benchmark's cases (the gauge's cost per sample)
#   BENCH=tower bench/callgrind.sh     # the tower layer, closed and refusing, beside the bare service
#   BENCH=metrics bench/callgrind.sh   # closed call and refusal, features `metrics` and `tracing` off and on (two builds)
#
# Installs nothing. Needs valgrind (with callgrind) and cargo; objdump only for --asm.
set -euo pipefail

cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null 2>&1; then
    echo "callgrind.sh: valgrind is not installed; this script installs nothing." >&2
    echo "Install valgrind (e.g. 'apt-get install valgrind' on Debian/Ubuntu) and run it again." >&2
    exit 1
fi

N1=${N1:-100000}
N2=${N2:-200000}
if ! [[ $N1 =~ ^[0-9]+$ && $N2 =~ ^[0-9]+$ ]] || ((N2 <= N1)); then
    echo "callgrind.sh: N1 and N2 must be integers with N2 > N1 (got N1=$N1 N2=$N2)" >&2
    exit 1
fi

ASM=0
CASES=()
for arg in "$@"; do
    case "$arg" in
        --asm) ASM=1 ;;
        -h | --help)
            sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *) CASES+=("$arg") ;;
    esac
done
# BENCH names the benchmark whose cases run when none are named: `peers` (with the
# ladder's cases), or every case another benchmark lists (`hal`, `compose`, `quota`).
BENCH=${BENCH:-peers}
if ((${#CASES[@]} == 0)) && [[ $BENCH == peers ]]; then
    CASES=(
        closure
        ref-a
        ours-closed
        macro-closed
        failsafe-closed
        recloser-closed
        ref-r
        ref-b
        ref-b2
        ref-b0
        ours-rejected
        ours-rejected-spread
        ours-closed-lean
        ours-rejected-lean
        keyed-lookup
        keyed-closed
        keyed-rejected
        keyed-churned
        ours-forced
        outline-plain
        outline-macro
        outline-by-hand
        outline-floor
        outline-refused
        failsafe-rejected
        recloser-rejected
        ladder-closure
        ladder-breaker
        ladder-first-ok
        ladder-first-ok-budget
        ladder-first-ok-retry-budget
        ladder-one-retry
        ladder-one-retry-budget
        backon-first-ok
        backon-breaker-first-ok
        ours-window-calls
        ours-window-dirty
        ours-window-time
        recloser-rate
        failsafe-rate
        ours-window-rejected
        recloser-rate-rejected
        ours-window-ring
        ours-window-ring-dirty
        recloser-rate-1000
        ours-window-time60
        ours-window-slow
        ours-window-inflight
        replicas-local
        replicas-redis
        shapes
    )
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/breaker-callgrind.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

BENCHES=(peers ladder hal compose quota replicas shapes metrics tower)
DEFAULT_CASES=$((${#CASES[@]} == 0))
echo "building the ${BENCHES[*]} benchmarks (release, bench profile)..." >&2
cargo bench -p bench $(printf -- '--bench %s ' "${BENCHES[@]}") --no-run --message-format=json >"$WORK/build.json"
executable() { # the built benchmark named $1 (in the build messages $2, or the main build's)
    grep -o '"executable":"[^"]*"' "${2:-$WORK/build.json}" | sed 's/^"executable":"//; s/"$//' | grep "/$1-" | tail -n 1
}
declare -A EXE_OF # case -> the benchmark binary that runs it (each lists its cases)
for b in "${BENCHES[@]}"; do
    exe=$(executable "$b")
    if [[ -z $exe || ! -x $exe ]]; then
        echo "callgrind.sh: could not find the built $b benchmark executable" >&2
        exit 1
    fi
    [[ $b == peers ]] && EXE=$exe
    [[ $b == replicas ]] && REPLICAS_EXE=$exe
    [[ $b == shapes ]] && SHAPES_EXE=$exe
    while read -r c _; do EXE_OF[$c]=$exe; done < <("$exe" --list)
    if ((${#CASES[@]} == 0)) && [[ $b == "$BENCH" ]]; then
        mapfile -t CASES < <("$exe" --list | cut -f1)
    fi
done
# `shapes` among the cases stands for every case of the payload-shape matrix.
EXPANDED=()
for c in "${CASES[@]}"; do
    if [[ $c == shapes ]]; then
        mapfile -t -O "${#EXPANDED[@]}" EXPANDED < <("$SHAPES_EXE" --list | cut -f1)
    else
        EXPANDED+=("$c")
    fi
done
CASES=("${EXPANDED[@]}")
# The `metrics` benchmark once more with the feature on (cases `metrics-on-*`), when asked for.
METRICS_ON_EXE=""
if [[ $BENCH == metrics ]] || printf '%s\n' "${CASES[@]}" | grep -q '^metrics-on-'; then
    echo "building the metrics benchmark with the metrics feature on..." >&2
    cargo bench -p bench --bench metrics --features metrics --no-run --message-format=json >"$WORK/build-on.json"
    METRICS_ON_EXE=$(executable metrics "$WORK/build-on.json")
    [[ -x $METRICS_ON_EXE ]] || { echo "callgrind.sh: could not find the metrics benchmark built with the feature" >&2; exit 1; }
    while read -r c _; do EXE_OF[$c]=$METRICS_ON_EXE; done < <("$METRICS_ON_EXE" --list)
    if ((DEFAULT_CASES)) && [[ $BENCH == metrics ]]; then
        mapfile -t -O "${#CASES[@]}" CASES < <("$METRICS_ON_EXE" --list | cut -f1)
    fi
fi
if ((${#CASES[@]} == 0)); then
    echo "callgrind.sh: BENCH must be one of ${BENCHES[*]} (got $BENCH)" >&2
    exit 1
fi

# Total instructions of one run: the `summary:` line of the callgrind out file.
instructions() {
    local case=$1 n=$2 out="$WORK/$1.$2.out"
    # The replicas cases run a link thread beside the loop, whose start-up varies from run to
    # run, and the metrics cases a recorder whose clock calibrates itself for a while: only
    # their measured loop (`loop_*`, inclusive) is counted.
    local only=()
    case ${EXE_OF[$case]:-} in
        "$REPLICAS_EXE" | "${EXE_OF[metrics-off-closed]:-}" | "$METRICS_ON_EXE") only=(--toggle-collect='*loop_*') ;;
    esac
    if ! valgrind --tool=callgrind "${only[@]}" --callgrind-out-file="$out" "${EXE_OF[$case]:?unknown case $case}" --icount "$case" "$n" \
        >"$WORK/$case.$n.log" 2>&1; then
        echo "callgrind.sh: case '$case' with $n calls failed under valgrind:" >&2
        tail -n 20 "$WORK/$case.$n.log" >&2
        exit 1
    fi
    local total
    total=$(awk '/^summary:/ { print $2; exit }' "$out")
    [[ -n $total ]] || total=$(awk '/^totals:/ { print $2; exit }' "$out")
    [[ -n $total ]] || { echo "callgrind.sh: no summary/totals line in $out" >&2; exit 1; }
    echo "$total"
}

declare -A PER_CALL
echo
echo "### Instructions per call ($BENCH; callgrind, (Ir($N2 calls) - Ir($N1 calls)) / $((N2 - N1)))"
echo
echo "| case | Ir, $N1 calls | Ir, $N2 calls | instructions/call |"
echo "|---|---:|---:|---:|"
for c in "${CASES[@]}"; do
    i1=$(instructions "$c" "$N1")
    i2=$(instructions "$c" "$N2")
    per=$(awk -v a="$i1" -v b="$i2" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.2f", (b - a) / (n2 - n1) }')
    PER_CALL[$c]=$per
    echo "| $c | $i1 | $i2 | $per |"
done
echo

# The issue's instruction targets, for whichever of their cases were run.
check() { # label, case, reference case, allowed extra instructions
    local label=$1 c=$2 ref=$3 budget=$4
    [[ -n ${PER_CALL[$c]:-} && -n ${PER_CALL[$ref]:-} ]] || return 0
    awk -v l="$label" -v c="$c" -v r="$ref" -v x="${PER_CALL[$c]}" -v y="${PER_CALL[$ref]}" -v b="$budget" 'BEGIN {
        d = x - y
        printf "- %s: %s %.2f - %s %.2f = %+.2f instructions (budget %d) -> %s\n",
            l, c, x, r, y, d, b, (d <= b + 0.05 ? "MET" : "MISSED")
    }'
}
# The targets are the peers benchmark's, and the metrics benchmark's.
[[ $BENCH == peers || $BENCH == metrics || $BENCH == tower ]] && echo "### Instruction targets (those whose two cases were run)" && echo
check "closed success vs reference A" ours-closed ref-a 5
check "rejected vs reference B (StdClock)" ours-rejected ref-b 5
check "rejected vs reference B2 (reference B + a skip counted beside the word: the floor)" ours-rejected ref-b2 5
check "count window refusal vs recloser's (rate over 20 calls)" ours-window-rejected recloser-rate-rejected 0
check "closed call through a keyed table of 1,024 slots (512 keys, each in turn) vs a lone breaker" keyed-closed ours-closed 25
check "refusal through a keyed table of 1,024 slots (512 keys, each in turn) vs a lone breaker" keyed-rejected ours-rejected 25
check "closed call through the keyed table vs a lone breaker of its storage (Lean)" keyed-closed ours-closed-lean 25
check "refusal through the keyed table vs a lone breaker of its storage (Lean)" keyed-rejected ours-rejected-lean 25
if [[ -n ${PER_CALL[keyed-lookup]:-} && -n ${PER_CALL[keyed-closed]:-} ]]; then
    awk -v x="${PER_CALL[keyed-closed]}" -v y="${PER_CALL[keyed-lookup]}" 'BEGIN {
        printf "- reference K (the table'"'"'s lookup alone + the closure) vs the closed call through it: %+.2f instructions, the breaker'"'"'s part; the lookup itself is the rest of the gap to a lone breaker\n", x - y
    }'
fi
check "rejected, counters kept Spread (opt-in) vs the default storage" ours-rejected-spread ours-rejected 0
check "macro-wrapped (inlined into its one caller's loop) vs SharedBreaker::call by hand" macro-closed ours-closed 2
check "#[circuit_breaker] fn out of line (can fail, two call sites) vs the same fn unguarded" outline-macro outline-plain 5
check "#[circuit_breaker] fn out of line vs reference F (the fn with two checks of a bare word)" outline-macro outline-floor 0
if [[ -n ${PER_CALL[outline-floor]:-} && -n ${PER_CALL[outline-plain]:-} ]]; then
    awk -v x="${PER_CALL[outline-floor]}" -v y="${PER_CALL[outline-plain]}" 'BEGIN {
        printf "- reference F vs the same fn unguarded: %+.2f instructions, the least any shared breaker adds there (two loads, tests and branches)%s\n",
            x - y, (x - y > 5.05 ? ": the budget of 5 above is below that floor with this compiler, which folds no atomic load into a compare" : "")
    }'
fi
check "force_open refusal vs an ordinary refusal" ours-forced ours-rejected 0
check "closed call, features metrics and tracing on (registry published) vs off" metrics-on-closed metrics-off-closed 0
check "refusal, features metrics and tracing on (registry published) vs off" metrics-on-rejected metrics-off-rejected 0
if [[ -n $METRICS_ON_EXE ]]; then
    # Heap allocations inside each case's loop of 100 000 calls (outside callgrind).
    while read -r c n; do
        echo "- allocations in $c's loop of 100000 calls: $n -> $([[ $n == 0 ]] && echo MET || echo MISSED)"
    done < <("${EXE_OF[metrics-off-closed]}" --allocs; "$METRICS_ON_EXE" --allocs)
fi
if [[ -n ${PER_CALL[tower-layer-closed]:-} && -n ${PER_CALL[tower-bare-ok]:-} ]]; then
    awk -v x="${PER_CALL[tower-layer-closed]}" -v y="${PER_CALL[tower-bare-ok]}" \
        'BEGIN { printf "- tower layer, closed: %.2f instructions, %+.2f over the bare service answering Ok\n", x, x - y }'
fi
check "tower layer refusal vs the bare service answering an error" tower-layer-refused tower-bare-err 10
check "tower layer refusal vs its floor (a bare service refusing as a layer must)" tower-layer-refused tower-bare-refuse 10
if [[ $BENCH == tower ]]; then
    while read -r c n; do
        echo "- allocations in $c's loop of 100000 calls: $n -> $([[ $n == 0 ]] && echo MET || echo MISSED)"
    done < <("${EXE_OF[tower-bare-ok]}" --allocs)
fi
check "ladder, first-attempt success, vs SharedBreaker::call alone" ladder-first-ok ladder-breaker 3
check "RedisBreaker::call closed vs SharedBreaker::call (the local figure)" replicas-redis replicas-local 0
for c in backon-first-ok backon-breaker-first-ok ladder-first-ok-budget; do
    [[ -n ${PER_CALL[$c]:-} && -n ${PER_CALL[ladder-first-ok]:-} ]] || continue
    awk -v c="$c" -v x="${PER_CALL[ladder-first-ok]}" -v y="${PER_CALL[$c]}" \
        'BEGIN { printf "- first-attempt success: breaker-core ladder + breaker %.2f vs %s %.2f instructions\n", x, c, y }'
done
# What a retry budget adds (no target: figures for bench/README.md).
for pair in "ladder-first-ok-retry-budget ladder-first-ok" "ladder-one-retry-budget ladder-one-retry"; do
    read -r c ref <<<"$pair"
    [[ -n ${PER_CALL[$c]:-} && -n ${PER_CALL[$ref]:-} ]] || continue
    awk -v c="$c" -v r="$ref" -v x="${PER_CALL[$c]}" -v y="${PER_CALL[$ref]}" \
        'BEGIN { printf "- retry budget: %s %.2f - %s %.2f = %+.2f instructions\n", c, x, r, y, x - y }'
done
for ref in failsafe recloser; do
    for path in closed rejected; do
        [[ -n ${PER_CALL[ours-$path]:-} && -n ${PER_CALL[$ref-$path]:-} ]] || continue
        awk -v p="$path" -v r="$ref" -v x="${PER_CALL[ours-$path]}" -v y="${PER_CALL[$ref-$path]}" \
            'BEGIN { printf "- %s, %s: breaker-core %.2f vs %.2f instructions\n", p, r, x, y }'
    done
done

# What the embedded-hal adapter adds (no target: figures for the docs).
if [[ -n ${PER_CALL[hal-guarded]:-} ]]; then
    echo
    echo "### What the embedded-hal adapter adds (instructions per transaction)"
    echo
fi
more() { # label, case, reference case
    [[ -n ${PER_CALL[$2]:-} && -n ${PER_CALL[$3]:-} ]] || return 0
    awk -v l="$1" -v c="$2" -v r="$3" -v x="${PER_CALL[$2]}" -v y="${PER_CALL[$3]}" \
        'BEGIN { printf "- %s: %s %.2f - %s %.2f = %+.2f instructions\n", l, c, x, r, y, x - y }'
}
more "a breaker by hand around the bus" hal-by-hand hal-bare
more "Guarded over the bare bus" hal-guarded hal-bare
more "Guarded over the breaker by hand" hal-guarded hal-by-hand
more "a DeviceBreakers<4> lookup (4th address)" hal-table hal-guarded
# The failure-rate window: what recording each call costs over the consecutive breaker.
for c in ours-window-calls ours-window-dirty ours-window-time ours-window-ring ours-window-ring-dirty ours-window-time60 ours-window-slow ours-window-inflight; do
    [[ -n ${PER_CALL[$c]:-} && -n ${PER_CALL[ours-closed]:-} ]] || continue
    awk -v c="$c" -v x="${PER_CALL[$c]}" -v y="${PER_CALL[ours-closed]}" \
        'BEGIN { printf "- window, %s: %.2f instructions, %+.2f over ours-closed\n", c, x, x - y }'
done
for peer in recloser-rate failsafe-rate recloser-rate-1000; do
    [[ -n ${PER_CALL[$peer]:-} ]] || continue
    awk -v p="$peer" -v x="${PER_CALL[$peer]}" 'BEGIN { printf "- window peer, %s: %.2f instructions\n", p, x }'
done

# The payload-shape matrix, one table with its verdicts, for whichever of its cases were run.
SHAPES_FIGURES="$WORK/shapes.figures"
: >"$SHAPES_FIGURES"
for c in "${CASES[@]}"; do
    [[ ${EXE_OF[$c]:-} == "$SHAPES_EXE" ]] && echo "$c ${PER_CALL[$c]}" >>"$SHAPES_FIGURES"
done
if [[ -s $SHAPES_FIGURES ]]; then
    echo
    "$SHAPES_EXE" --icount-table "$SHAPES_FIGURES"
fi

if ((ASM)); then
    if ! command -v objdump >/dev/null 2>&1; then
        echo "callgrind.sh: --asm needs objdump (binutils), which is not installed" >&2
        exit 1
    fi
    echo
    echo "### Disassembly: the breaker-core loops (peers::loop_ours) and the shared breaker's out-of-line paths"
    objdump -d --no-show-raw-insn -C "$EXE" |
        awk '/^[0-9a-f]+ <.*(peers::loop_ours|ladder::loop_ladder|SharedBreaker.*call_slow|SharedBreaker.*try_acquire|SharedBreaker.*update|Core::acquire).*>:$/ { p = 1 }
             p && /^$/ { p = 0; print "" }
             p'
fi
