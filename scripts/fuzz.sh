#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer executables (Fuzz/Package.swift, with -sanitize=fuzzer,address)
# and runs each target for FUZZ_SECONDS (default 60). Inputs that add coverage are merged, minimised,
# into Fuzz/corpus/<target>/; an input that crashes a target is copied to Fuzz/regressions/<target>/
# and the script fails. `make test` replays Fuzz/seeds, Fuzz/corpus and Fuzz/regressions.
#   FUZZ_SECONDS=600 make fuzz               ten minutes per target
#   FUZZ_TARGETS="http payload" make fuzz    only these targets
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-http relay-headers simulator payload client-token cloudkit-response client-token-keys rate-limit client-tags webhook-url}

echo "== building the fuzz targets"
start=$SECONDS
swift build --package-path Fuzz --scratch-path .build/fuzz -Xswiftc -sanitize=fuzzer,address 2>&1 \
    | grep -v "ld.gold: warning: Cannot export local symbol"
echo "built in $((SECONDS - start)) s"
bin=.build/fuzz/debug

failed=""
for target in $targets; do
    seeds=Fuzz/seeds/$target corpus=Fuzz/corpus/$target regressions=Fuzz/regressions/$target
    work=.build/fuzz/work/$target/$$
    mkdir -p "$corpus" "$regressions" "$work/new" "$work/artifacts" "$work/merged"
    echo "== fuzzing $target for $seconds s"
    # New inputs go to a scratch directory first; the repository's corpus only gets the minimised
    # merge below. Leak checks are off: Swift's runtime caches allocate once and keep it.
    status=0
    "$bin/fuzz-$target" -max_total_time="$seconds" -timeout=10 -detect_leaks=0 -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/" "$work/new" "$corpus" "$seeds" "$regressions" >"$work/log" 2>&1 \
        || status=$?
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log")
    echo "$target: exit $status, ${executions:-?} executions (${rate:-?}/s); log $work/log"
    for artifact in "$work"/artifacts/*; do
        [ -e "$artifact" ] || continue
        cp "$artifact" "$regressions/"
        echo "$target: FOUND $(basename "$artifact") -> $regressions/" >&2
        grep -m1 -E "ERROR|Fatal error|fatal error" "$work/log" >&2 || true
        failed="$failed $target"
    done
    [ "$status" = 0 ] || [[ "$failed" == *"$target"* ]] || failed="$failed $target"
    # Minimise: keep only the inputs that add coverage, under their content hashes.
    "$bin/fuzz-$target" -merge=1 -timeout=10 -detect_leaks=0 "$work/merged" "$corpus" "$work/new" \
        >"$work/merge.log" 2>&1
    rm -f "$corpus"/*
    cp "$work"/merged/* "$corpus"/ 2>/dev/null || true
    echo "$target: corpus $(find "$corpus" -type f | wc -l) files"
done
[ -z "$failed" ] || { echo "fuzzing found crashes in:$failed (inputs in Fuzz/regressions/)" >&2; exit 1; }
