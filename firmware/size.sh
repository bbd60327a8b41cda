#!/usr/bin/env bash
# What the breaker code adds to a firmware: builds the release firmware of m3
# (thumbv7m) and m0 (thumbv6m) twice, with the two `#[circuit_breaker]`
# functions and with the feature `no-breakers` (same functions, no attribute, no
# registry dump), and prints text/data/bss of both, the difference, where the
# difference goes (by symbol), and whether the breaker build pulls in
# `core::fmt` formatting machinery (exit 1 if it does), and whether any capability the
# firmware does not use (quota gauge, fallback chain, router, retry ladder, failure-rate
# window) put a symbol in it (exit 1 if one did). Then, as a report that never
# fails, the embedded-hal adapter's cost: m3's `hal` test built through `Guarded`, with
# the same breakers wrapped by hand, and unguarded; the quota gauge's cost; and a guarded
# transaction over a shared bus (the `icount` tests' transaction functions, m3 and m0).
#
# Usage: firmware/size.sh [--strict]
#   --strict  also exit 1 if, on m3, the core, the registry and the two wrapped
#             functions add more than the budget (3 KiB of text); without it the
#             budget is reported, and only added formatting machinery fails.
#
# Needs the `llvm-tools` rustup component (llvm-size, llvm-nm).
set -euo pipefail
cd "$(dirname "$0")"

STRICT=0
[[ "${1:-}" == "--strict" ]] && STRICT=1
BUDGET=3072

HOST=$(rustc -vV | sed -n 's/^host: //p')
LLVM_BIN="$(rustc --print sysroot)/lib/rustlib/$HOST/bin"
if [[ ! -x "$LLVM_BIN/llvm-size" || ! -x "$LLVM_BIN/llvm-nm" ]]; then
    echo "size.sh: llvm-size/llvm-nm not found; install them with: rustup component add llvm-tools" >&2
    exit 2
fi
SIZE="$LLVM_BIN/llvm-size"
NM="$LLVM_BIN/llvm-nm"

# Formatting machinery: the bytes of every `core::fmt` symbol. Inlining moves code
# between symbols (`Formatter::pad` may be folded into its only caller), so the check
# compares byte totals, not names: a formatted panic (`core::fmt::write`, integer
# `Display`, `Formatter::pad_integral`, a `Debug` impl) costs hundreds of bytes; a
# `Display` shim for an argument whose formatter is already there costs about 20.
FMT_SLACK=64
FMT_RE='core::fmt|core\.\.fmt|Formatter'
fmt_bytes() { awk -v re="$FMT_RE" '$3 ~ /^[tTrR]$/ && $0 ~ re { s += $2 } END { print s + 0 }' "$1"; }
fmt_names() { awk -v re="$FMT_RE" '$3 ~ /^[tTrR]$/ && $0 ~ re { print substr($0, index($0, $4)) }' "$1" | sed -E 's/::h[0-9a-f]{16}//' | sort -u; }

# Symbols of the capabilities the measured firmware does not use.
UNUSED_RE='breaker_core::compose::|QuotaGauge|QuotaGuard|QuotaLog|FallbackChain|HealthRouter|RetryPolicy|Ladder|Climb|WindowStore|CountWindow|TimeWindow|Windowed|breaker_embedded::(quota_log|sleep)'

status=0

# measure <package dir> <target triple> <binary>
measure() {
    local dir=$1 triple=$2 bin=$3
    local out="$dir/target/size"
    mkdir -p "$out"
    for variant in breakers no-breakers; do
        local features=()
        [[ $variant == no-breakers ]] && features=(--features no-breakers)
        (cd "$dir" && cargo build --release --quiet --bin "$bin" "${features[@]}")
        cp "$dir/target/$triple/release/$bin" "$out/$variant.elf"
        "$NM" -C -S --size-sort --radix=d "$out/$variant.elf" >"$out/$variant.nm"
    done

    read -r with_text with_data with_bss _ < <("$SIZE" "$out/breakers.elf" | tail -1)
    read -r base_text base_data base_bss _ < <("$SIZE" "$out/no-breakers.elf" | tail -1)
    local diff=$((with_text - base_text))

    echo "== $dir ($triple, release, opt-level s, LTO)"
    printf '%-28s %8s %8s %8s\n' "" text data bss
    printf '%-28s %8d %8d %8d\n' "with the two breakers" "$with_text" "$with_data" "$with_bss"
    printf '%-28s %8d %8d %8d\n' "without (no-breakers)" "$base_text" "$base_data" "$base_bss"
    printf '%-28s %+8d %+8d %+8d\n' "breaker code adds" "$diff" $((with_data - base_data)) $((with_bss - base_bss))

    echo "-- where the added text goes (symbol sizes, breakers minus no-breakers)"
    local buckets
    buckets=$(awk -v base="$out/no-breakers.nm" '
        function bucket(name) {
            if (name ~ /__BREAKER_CORE_/) return "wrapped: per-function statics (policy, registry entry)"
            if (name ~ /EmbassyClock/) return "wrapped: the embassy-time clock"
            if (name ~ /breaker_embedded/) return "dump: breaker-embedded (registry dump, Brief, DefmtLog)"
            if (name ~ /registry|linkme|BREAKERS/) return "registry: table, lookups, linkme"
            if (name ~ /breaker_core/) return "core: state machine, SharedBreaker, permit"
            if (name ~ /portable_atomic/) return "core: portable-atomic"
            if (name ~ /defmt/) return "dump: defmt glue"
            return "wrapped: firmware code (guarded functions inlined, scenario)"
        }
        # Text and read-only data only.
        function keep(type) { return type ~ /^[tTrR]$/ }
        function norm(name) { gsub(/::h[0-9a-f]{16}/, "", name); gsub(/\.Lanon\.[0-9a-f]+\.[0-9]+/, ".Lanon", name); gsub(/17h[0-9a-f]{16}E/, "E", name); return name }
        BEGIN {
            while ((getline line < base) > 0) {
                n = split(line, f, " ")
                if (n < 4 || !keep(f[3])) continue
                name = substr(line, index(line, f[4])); before[norm(name)] += f[2] + 0
            }
        }
        {
            if (NF < 4 || !keep($3)) next
            name = substr($0, index($0, $4)); after[norm(name)] += $2 + 0
        }
        END {
            for (k in after) { d = after[k] - before[k]; if (d != 0) sum[bucket(k)] += d }
            for (k in before) if (!(k in after)) sum[bucket(k)] -= before[k]
            for (b in sum) printf "%d|%s\n", sum[b], b
        }' "$out/breakers.nm" | sort -t'|' -k1,1nr)
    awk -F'|' '{ printf "   %+7d  %s\n", $1, $2 }' <<<"$buckets"
    # The budget covers the core, the registry and the wrapped functions; the firmware's
    # own registry dump and transition log lines (breaker-embedded's) are reported but not counted.
    local dump subject
    dump=$(awk -F'|' '$2 ~ /^dump:/ { s += $1 } END { print s + 0 }' <<<"$buckets")
    subject=$((diff - dump))
    printf '   core + registry + two wrapped functions: %+d B (the added text minus the dump'"'"'s %d B)\n' \
        "$subject" "$dump"

    echo "-- formatting machinery (core::fmt symbols, breakers minus no-breakers)"
    local fmt_with fmt_base fmt_added names
    fmt_with=$(fmt_bytes "$out/breakers.nm")
    fmt_base=$(fmt_bytes "$out/no-breakers.nm")
    fmt_added=$((fmt_with - fmt_base))
    names=$(comm -13 <(fmt_names "$out/no-breakers.nm") <(fmt_names "$out/breakers.nm") || true)
    printf '   %d B in the baseline, %d B with the breakers: %+d B\n' "$fmt_base" "$fmt_with" "$fmt_added"
    [[ -n "$names" ]] && sed 's/^/     new symbol: /' <<<"$names"
    if ((fmt_added > FMT_SLACK)); then
        echo "   FAIL: the breaker code pulls in formatting machinery (more than $FMT_SLACK B)"
        status=1
    else
        echo "   ok: no formatting machinery added (at most a shim of $FMT_SLACK B)"
    fi
    # The capabilities this firmware does not use (quota gauge and guard, fallback chain,
    # health router, retry ladder, failure-rate window) must add none of their code to it.
    echo "-- capabilities not used here (quota gauge, fallback chain, router, retry ladder, window)"
    local unused
    unused=$(awk -v re="$UNUSED_RE" '$3 ~ /^[tTrRdDbB]$/ && $0 ~ re { printf "%6d B  %s\n", $2, substr($0, index($0, $4)) }' \
        "$out/breakers.nm" | sed -E 's/::h[0-9a-f]{16}//')
    if [[ -n $unused ]]; then
        echo "   FAIL: their code is in the firmware:"
        sed 's/^/     /' <<<"$unused"
        status=1
    else
        echo "   ok: none of their symbols in the firmware"
    fi
    # The one hook the window keeps in the core: `Observer::window`, a default method
    # (returns `None`) in the vtable of every observer the registry holds.
    awk '$3 ~ /^[tT]$/ && $0 ~ /Observer::window/ { s += $2 } END { if (s) printf "   (the observer vtable'"'"'s window hook, `Observer::window`: %d B, counted in the core above)\n", s }' \
        "$out/breakers.nm"
    if [[ $triple == thumbv7m-none-eabi ]]; then
        if ((subject <= BUDGET)); then
            echo "-- budget: core + registry + two wrapped functions, +$subject B <= $BUDGET B: met"
        else
            echo "-- budget: core + registry + two wrapped functions, +$subject B > $BUDGET B: OVER BUDGET"
            ((STRICT)) && status=1
        fi
    fi
    echo
}

# hal_elf <features...>: builds m3's `hal` test (release) and prints the path of its ELF
# (cargo also builds, and reports, the package's binary for its integration tests).
hal_elf() {
    (cd m3 && cargo test --release --test hal --no-run --message-format=json "$@" 2>/dev/null) |
        grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//' | grep '/deps/hal-' | tail -n 1
}

# The embedded-hal adapter's cost, reported, never failing: m3's `hal` test (two tmp1x2
# drivers on one simulated I2C bus) built three ways: through `Guarded` with a
# `DeviceBreakers` table (as tested), with the same breakers wrapped around each driver
# call by hand (feature `by-hand`), and over the bare bus (feature `unguarded`). Not part
# of the budget: the firmware binary above does not use the adapter.
adapter_cost() {
    local out=m3/target/size variant elf
    mkdir -p "$out"
    for variant in guarded by-hand unguarded; do
        local features=()
        [[ $variant != guarded ]] && features=(--features "$variant")
        elf=$(hal_elf "${features[@]}")
        if [[ -z $elf || ! -f $elf ]]; then
            echo "== m3 hal test: the embedded-hal adapter's cost: SKIPPED (the $variant build failed)"
            return 0
        fi
        cp "$elf" "$out/hal-$variant.elf"
        "$NM" -C -S --size-sort --radix=d "$out/hal-$variant.elf" >"$out/hal-$variant.nm"
    done
    local g h u
    read -r g _ < <("$SIZE" "$out/hal-guarded.elf" | tail -1)
    read -r h _ < <("$SIZE" "$out/hal-by-hand.elf" | tail -1)
    read -r u _ < <("$SIZE" "$out/hal-unguarded.elf" | tail -1)

    echo "== m3 hal test (thumbv7m, release): the embedded-hal adapter's cost, reported, not budgeted"
    printf '%-58s %8s\n' "" text
    printf '%-58s %8d\n' "tmp1x2 x2 through Guarded + DeviceBreakers<2> (tested)" "$g"
    printf '%-58s %8d\n' "the same breakers around each driver call, by hand" "$h"
    printf '%-58s %8d\n' "the drivers over the bare bus (unguarded)" "$u"
    printf '%-58s %+8d\n' "guarding both drivers adds (breaker code included)" $((g - u))
    printf '%-58s %+8d\n' "the adapter itself (Guarded minus by hand)" $((g - h))
    echo "-- where guarded minus unguarded goes (symbol sizes; inlining moves code between them)"
    awk -v base="$out/hal-unguarded.nm" '
        function bucket(name) {
            if (name ~ /breaker_core::(integrations::)?hal::/) return "adapter: Guarded, DeviceBreakers (out of line)"
            if (name ~ /registry|linkme|BREAKERS|__BREAKER_CORE_/) return "registry: entries, lookups, linkme"
            if (name ~ /breaker_embedded/ || name ~ /defmt/) return "logs: DefmtLog, registry dump, defmt glue"
            if (name ~ /breaker_core|portable_atomic/) return "breaker core: state machine, SharedBreaker, permit"
            if (name ~ /tmp1x2|embedded_hal_bus/) return "the drivers over the guarded bus (adapter inlined)"
            return "the test: timeline and checks"
        }
        function keep(type) { return type ~ /^[tTrR]$/ }
        function norm(name) { gsub(/::h[0-9a-f]{16}/, "", name); gsub(/\.Lanon\.[0-9a-f]+\.[0-9]+/, ".Lanon", name); gsub(/17h[0-9a-f]{16}E/, "E", name); return name }
        BEGIN {
            while ((getline line < base) > 0) {
                n = split(line, f, " ")
                if (n < 4 || !keep(f[3])) continue
                name = substr(line, index(line, f[4])); before[norm(name)] += f[2] + 0
            }
        }
        {
            if (NF < 4 || !keep($3)) next
            name = substr($0, index($0, $4)); after[norm(name)] += $2 + 0
        }
        END {
            for (k in after) { d = after[k] - before[k]; if (d != 0) sum[bucket(k)] += d }
            for (k in before) if (!(k in after)) sum[bucket(k)] -= before[k]
            for (b in sum) printf "%d|%s\n", sum[b], b
        }' "$out/hal-guarded.nm" | sort -t'|' -k1,1nr | awk -F'|' '{ printf "   %+7d  %s\n", $1, $2 }'
    echo
}

# The quota gauge's own cost, as m3's `tests/quota.rs` links it (the main firmware above
# does not use it, and its figures do not move). Symbol sizes; what the compiler inlined
# into the test's own code is not counted. Reported only: it never fails the run.
quota_report() {
    local exe
    exe=$(cd m3 && cargo test --release --quiet --test quota --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//' | grep '/deps/quota-' | tail -n 1) || true
    echo "== the quota gauge (m3 tests/quota.rs: QuotaGauge<8>, QuotaGuard, DefmtQuotaLog), not in the firmware above"
    if [[ -z $exe || ! -x $exe ]]; then
        echo "   not reported: tests/quota.rs did not build"
        return 0
    fi
    "$NM" -C -S --size-sort --radix=d "$exe" | awk '
        $3 !~ /^[tTrR]$/ { next }
        /breaker_core(::|\.\.)(compose(::|\.\.))?quota(::|\.\.)|heapless(::|\.\.)history_buf/ { gauge += $2; next }
        /breaker_core(::|\.\.)(compose(::|\.\.))?quota_guard/ { guard += $2; next }
        /breaker_embedded(::|\.\.)quota_log/ { lines += $2; next }
        END {
            printf "   %6d B  gauge: observe, reading, light, the ring (heapless)\n", gauge
            printf "   %6d B  guard: observe-and-trip (its call is inlined into the caller)\n", guard
            printf "   %6d B  DefmtQuotaLog: the console lines (defmt literals, interned on the host)\n", lines
            printf "   %6d B  in all, text\n", gauge + guard + lines
        }' || echo "   not reported: llvm-nm failed"
    echo
}

# A guarded transaction over a shared bus, in flash: the `icount` tests' transaction
# functions (`common/icount_bus.rs`, m3's async and keyed-table ones in `m3/tests/icount.rs`), one per
# device type, out of line, each a driver's `write_read`, bare and through `Guarded`.
# Symbol sizes: what each function holds with the breaker's gate inlined; the callees out
# of line (the bus's transaction, the breaker's slow paths, shared by every call site) are
# not counted. Reported only: it never fails the run.
bus_report() {
    local fw exe
    echo "== a transaction over a shared bus (icount tests' transact_* functions), text, reported, not budgeted"
    for fw in m3 m0; do
        exe=$(cd "$fw" && cargo test --release --quiet --test icount --no-run --message-format=json 2>/dev/null |
            grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//' | grep '/deps/icount-' | tail -n 1) || true
        if [[ -z $exe || ! -x $exe ]]; then
            echo "   $fw: not reported: tests/icount.rs did not build"
            continue
        fi
        "$NM" -C -S --radix=d "$exe" | awk -v fw="$fw" '
            $3 !~ /^[tT]$/ || $4 !~ /transact_/ { next }
            { name = $4; sub(/::h[0-9a-f]+$/, "", name); sub(/.*::/, "", name); size[name] = $2 + 0 }
            function row(what, bare, guarded) {
                if ((bare in size) && (guarded in size))
                    printf "   %s  %-44s %5d B bare, %5d B guarded: %+d B\n", fw, what, size[bare], size[guarded], size[guarded] - size[bare]
            }
            END {
                row("RefCellDevice, Guarded", "transact_refcell", "transact_refcell_guarded")
                row("RefCellDevice, Guarded with recover_with", "transact_refcell", "transact_refcell_recover")
                row("CriticalSectionDevice, Guarded", "transact_cs", "transact_cs_guarded")
                row("I2cDevice (async), Guarded", "transact_async", "transact_async_guarded")
                row("RefCellDevice, a Guarded bus, KeyedBreakers", "transact_refcell", "transact_keyed")
            }'
    done
    echo
}

measure m3 thumbv7m-none-eabi breaker-firmware-m3
measure m0 thumbv6m-none-eabi breaker-firmware-m0
adapter_cost
quota_report
bus_report
exit "$status"
