#!/usr/bin/env bash
# Every output of `kineto` and `kineto-export` over the project's generated traces (testdata/synthetic, the
# demo window) and, when it is beside the clone, the shared corpus of real traces: each listing as a table, --csv and --json; top by name, family, bucket and per step; ranks
# over each rank directory; summary; roofline and --weights with every bundled model config; report and
# diff pages; the Parquet export of each trace. Written under OUT, one directory per input, with each
# command's stderr and exit status beside its stdout, so that two builds' outputs compare with `diff -r`
# (tests/schema-compat/compare.py allows exactly the documented renames).
#
#   tests/schema-compat/outputs.sh BIN_DIR OUT     (BIN_DIR holds release `kineto` and `kineto-export`)
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
cd "$(dirname "$0")/../.."
root=$(pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
echo "$out" >"$out/.root"
traces=()
while IFS= read -r f; do traces+=("$f"); done < <(
    { find testdata/synthetic testdata/windows/demo -name '*.json' -o -name '*.json.gz'
      [ -d ../shared/traces ] && find ../shared/traces -name '*.json' -o -name '*.json.gz'; } | LC_ALL=C sort)
# One command: stdout to NAME, stderr to NAME.err, exit status to NAME.rc. Paths in the output are as given.
run() {
    local name=$1
    shift
    "$@" >"$name" 2>"$name.err"
    echo $? >"$name.rc"
}
slug() { echo "$1" | sed 's|^\.\./||; s|[/ ]|_|g'; }
for t in "${traces[@]}"; do
    d="$out/trace/$(slug "$t")"
    mkdir -p "$d"
    run "$d/summary.txt" "$bin/kineto" summary "$t"
    run "$d/summary.json" "$bin/kineto" summary --json "$t"
    for l in steps kernels budget annotations ranks; do
        run "$d/$l.txt" "$bin/kineto" "$l" "$t"
        run "$d/$l.csv" "$bin/kineto" "$l" --csv "$t"
        run "$d/$l.json" "$bin/kineto" "$l" --json "$t"
    done
    for by in name family bucket; do
        run "$d/top-$by.txt" "$bin/kineto" top --by "$by" -n 0 "$t"
        run "$d/top-$by.csv" "$bin/kineto" top --by "$by" -n 0 --csv "$t"
        run "$d/top-$by.json" "$bin/kineto" top --by "$by" -n 0 --json "$t"
    done
    run "$d/top-per-step.txt" "$bin/kineto" top --per-step "$t"
    run "$d/top-per-step.json" "$bin/kineto" top --per-step --json "$t"
    run "$d/top-per-step.csv" "$bin/kineto" top --per-step --csv "$t"
    run "$d/steps-whole.json" "$bin/kineto" steps --whole-trace --json "$t"
    run "$d/budget-whole.csv" "$bin/kineto" budget --whole-trace --csv "$t"
    run "$d/report.out" "$bin/kineto" report --html "$d/report.html" "$t"
    run "$d/export.out" "$bin/kineto-export" --parquet "$d/parquet" "$t"
done
# Rank directories: ranks, report and diff across the directory, the export of every rank.
dirs=()
[ -d ../shared/traces/param/dlrm_kineto ] && dirs+=(../shared/traces/param/dlrm_kineto)
for r in "${dirs[@]}"; do
    d="$out/dir/$(slug "$r")"
    mkdir -p "$d"
    for f in "" --csv --json; do
        run "$d/ranks$f.out" "$bin/kineto" ranks $f "$r"
        run "$d/budget$f.out" "$bin/kineto" budget $f "$r"
    done
    run "$d/report.out" "$bin/kineto" report --html "$d/report.html" "$r"
    run "$d/export.out" "$bin/kineto-export" --parquet "$d/parquet" "$r"
    files=("$r"/*.json.gz)
    run "$d/diff.out" "$bin/kineto" diff --html "$d/diff.html" "${files[0]}" "${files[1]}"
    "$bin/kineto" budget --json "${files[0]}" >"$d/old.json" 2>/dev/null
    "$bin/kineto" budget --json "${files[1]}" >"$d/new.json" 2>/dev/null
    run "$d/diff-json.out" "$bin/kineto" diff --fail-above 1 "$d/old.json" "$d/new.json"
done
# The roofline: every bundled model over the vLLM decode traces (the shared corpus's); each model's weights
# table.
vllm=()
while IFS= read -r f; do vllm+=("$f"); done < <(
    [ -d ../shared/traces/serving ] && find ../shared/traces/serving -name '*.json.gz' | LC_ALL=C sort)
for m in testdata/models/*.json; do
    d="$out/model/$(basename "$m" .json)"
    mkdir -p "$d"
    for f in "" --csv --json; do
        run "$d/weights$f.out" "$bin/kineto" roofline --model "$m" --weights $f
        [ ${#vllm[@]} -gt 0 ] && run "$d/roofline$f.out" "$bin/kineto" roofline --model "$m" $f "${vllm[@]}"
    done
    [ ${#vllm[@]} -gt 0 ] || continue
    run "$d/roofline-html.out" "$bin/kineto" roofline --model "$m" --html "$d/roofline.html" "${vllm[0]}"
    run "$d/report.out" "$bin/kineto" report --model "$m" --html "$d/report.html" "${vllm[0]}"
done
