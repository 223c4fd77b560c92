#!/usr/bin/env bash
# Every test, as the README's second command and CI run them: the Rust tests (the shared trace corpus
# required when it is beside the clone), the provenance harness examples, the Parquet export read back by
# DuckDB, the two Python modules built as wheels and tested with pytest, every HTML report opened in
# headless Chromium, and the Spark data source in local mode. The Python, browser and Spark checks install
# what they need (pip, apt-get) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d ../shared/traces ]; then export KL1_REQUIRE_CORPUS=1; fi
# A one-off build gains nothing from incremental compilation's caches, and writing them costs time and disk;
# a developer who sets CARGO_INCREMENTAL keeps theirs.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# Includes xtask/tests/tidy.rs: every crate and module folder on ARCHITECTURE.md's map, no CLI flag text in libraries, result
# files only through tool-io, and no declared dependency left unused.
source tests/tools.sh
# The Python venvs and Chromium the later steps need are installed beside the Rust tests (downloads and
# unpacking leave the cores to the compiler much of the time); each step still checks its own install and
# redoes it, with its error shown, if this failed. The installs' output is in $t/prepare.log.
t="${CARGO_TARGET_DIR:-target}"
mkdir -p "$t"
# The closing line, `run-all: N passed, N failed, N skipped` (CI reads it), sums every step's own counts:
# cargo test's `test result:` lines (ignored = skipped: the tests that need ../shared/traces when it is
# absent), pytest's summary line, and the `NAME: N passed, N failed[, N skipped]` line each other step
# prints last. It is printed however the run ends; a step that fails without a failed count (a build error,
# a crash) counts as one failure.
passed=0 failed=0 skipped=0
trap 'rc=$?; if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
      echo "run-all: $passed passed, $failed failed, $skipped skipped"' EXIT
# count_results LOG: adds LOG's counts to the totals. A carriage return ends a line as a newline does: a
# progress bar redrawn with `\r` (Spark's, on stderr) otherwise shares the line of the count after it, and
# that count was lost (5 Spark tests left out of the total in a warm run).
count_results() {
    local p f s
    read -r p f s < <(awk 'BEGIN { RS = "[\r\n]" }
        /^test result: [A-Za-z]+\. [0-9]+ passed; [0-9]+ failed; [0-9]+ ignored/ {
            sub(/^test result: [A-Za-z]+\. /, ""); split($0, w, /[ ;]+/); p += w[1]; f += w[3]; s += w[5]; next }
        /^[a-z][a-z -]*: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$/ {
            sub(/^[^:]*: /, ""); n = split($0, w, /[ ,]+/); p += w[1]; f += w[3]; if (n >= 5) s += w[5]; next }
        /^=* *[0-9]+ (passed|failed|skipped|errors?|xfailed|xpassed|deselected|warnings?)(, [0-9]+ [a-z]+)* in [0-9.]+s/ {
            line = $0; sub(/ in [0-9.]+s.*$/, "", line); sub(/^=* */, "", line)
            n = split(line, parts, /, /)
            for (i = 1; i <= n; i++) { split(parts[i], w, " ")
                if (w[2] == "passed" || w[2] == "xpassed") p += w[1]
                else if (w[2] == "failed" || w[2] ~ /^errors?$/) f += w[1]
                else if (w[2] == "skipped" || w[2] == "xfailed") s += w[1] }
        }
        END { print p + 0, f + 0, s + 0 }' "$1")
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    LAST_FAILED=$f
}
# tally CMD...: runs a step (timed by `step`), its output shown and kept in a log, and counts its results;
# a failed step ends the run with its status.
tally() {
    local log="$t/run-all-step.log" rc=0
    step "$@" 2>&1 | tee "$log" || rc=$?
    count_results "$log"
    if [ "$rc" -ne 0 ]; then
        [ "$LAST_FAILED" -gt 0 ] || failed=$((failed + 1))
        exit "$rc"
    fi
}
(for s in duckdb python python-provenance browser spark; do bash "tests/$s/run.sh" --prepare; done) \
    >"$t/prepare.log" 2>&1 &
prepare=$!
tally cargo test --workspace
# The harness examples on a tiny benchmark: one provenance record per benchmark; then the criterion one again
# into its own CRITERION_HOME, and `provenance diff` of the two runs' results beside their records: a verdict
# row for the benchmark (only verdict rows carry a `name`; docs/verdict.md).
tally build_tools
harness_examples() {
    "$t/debug/examples/criterion_bench" --bench >/dev/null &&
        "$t/debug/examples/divan_bench" --bench >/dev/null &&
        test -f "$t/criterion/sum_1000/provenance.json" && test -f "$t/divan/sum_1000/provenance.json" &&
        CRITERION_HOME="$t/criterion-again" "$t/debug/examples/criterion_bench" --bench >/dev/null &&
        "$t/debug/provenance" diff --json "$t/criterion/sum_1000" "$t/criterion-again/sum_1000" \
            >"$t/criterion-diff.jsonl" &&
        grep -q '"name":"sum_1000"' "$t/criterion-diff.jsonl"
}
if harness_examples; then
    echo "harness examples: 3 passed, 0 failed"
    passed=$((passed + 3))
else
    echo "harness examples: 0 passed, 3 failed"
    failed=$((failed + 3))
    exit 1
fi
# The Parquet export read back by DuckDB (pip-installed into target/py-duckdb): the queries in docs/parquet.md
# against kineto top/budget/ranks/summary/annotations, on the generated traces and the shared corpus.
t0=$SECONDS
wait "$prepare" || echo "note: the installs beside the Rust tests failed ($t/prepare.log); each step retries its own"
echo "time: $(( SECONDS - t0 )) s: waiting for the installs"
tally bash tests/duckdb/run.sh
# The kineto_trace Python module: the abi3 wheel built with maturin, installed into target/py-kineto and
# tested with pytest on the generated traces and the shared corpus (python/tests).
tally bash tests/python/run.sh
# The kl1_provenance Python module: its abi3 wheel built with maturin, installed into target/py-provenance with
# pytest-benchmark, and tested with pytest (python/provenance/tests: a fake torch, gpu-monitor's fake
# nvidia-smi, records read back by the provenance binary).
tally bash tests/python-provenance/run.sh
# Every HTML report written by the tools from generated data (and the shared corpus) and opened in headless Chromium (Debian's
# package): fails on a console error, a blank page or a missing chart; screenshots in target/browser-test/.
tally bash tests/browser/run.sh
# The `kineto` Spark data source (kineto_trace.spark) in local mode, and Spark SQL over the Parquet export: one
# run's ranks (the shared corpus's dlrm ranks, else the generated demo window's) read by Spark, against `kineto`
# and `kineto-export` (pyspark and Debian's JRE installed beside the Rust tests).
tally bash tests/spark/run.sh
