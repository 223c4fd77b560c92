#!/usr/bin/env bash
# Every test, as the README's second command and CI run them: the Rust tests (the shared trace corpus
# required when it is beside the clone), the provenance harness examples, the Parquet export read back by
# DuckDB, the two Python modules built as wheels and tested with pytest, and every HTML report opened in
# headless Chromium. The Python and browser checks install what they need (pip, apt-get) when it is missing.
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
(for s in duckdb python python-provenance browser; do bash "tests/$s/run.sh" --prepare; done) \
    >"$t/prepare.log" 2>&1 &
prepare=$!
step cargo test --workspace
# The harness examples on a tiny benchmark: one provenance record per benchmark.
step build_tools
"$t/debug/examples/criterion_bench" --bench >/dev/null
"$t/debug/examples/divan_bench" --bench >/dev/null
test -f "$t/criterion/sum_1000/provenance.json" && test -f "$t/divan/sum_1000/provenance.json"
echo "harness examples: 2 passed, 0 failed"
# The Parquet export read back by DuckDB (pip-installed into target/py-duckdb): the queries in docs/parquet.md
# against kineto top/budget/ranks/summary/annotations, on the bundled and the shared traces.
t0=$SECONDS
wait "$prepare" || echo "run-all: the installs beside the Rust tests failed ($t/prepare.log); each step retries its own"
echo "time: $(( SECONDS - t0 )) s: waiting for the installs"
step bash tests/duckdb/run.sh
# The kineto_trace Python module: the abi3 wheel built with maturin, installed into target/py-kineto and
# tested with pytest on the bundled and shared traces (python/tests).
step bash tests/python/run.sh
# The kl1_provenance Python module: its abi3 wheel built with maturin, installed into target/py-provenance with
# pytest-benchmark, and tested with pytest (python/provenance/tests: a fake torch, gpu-monitor's fake
# nvidia-smi, records read back by the provenance binary).
step bash tests/python-provenance/run.sh
# Every HTML report written by the tools from bundled data and opened in headless Chromium (Debian's
# package): fails on a console error, a blank page or a missing chart; screenshots in target/browser-test/.
step bash tests/browser/run.sh
