#!/usr/bin/env bash
# The Parquet export checked through DuckDB: builds `kineto` and `kineto-export`, installs the pinned
# duckdb wheel into target/py-duckdb, runs docs/parquet.md's queries on exported traces and compares them
# with `kineto`'s JSON (tests/duckdb/check.py). Called by .ci/run; runnable alone from any directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUCKDB_VERSION=2.0.1
VENV=target/py-duckdb
source tests/venv.sh
ensure_venv tests/duckdb "$VENV" "duckdb==$DUCKDB_VERSION"
# `--prepare`: only the installs (tests/run-all.sh does them beside the Rust tests).
if [ "${1:-}" = --prepare ]; then exit 0; fi
source tests/tools.sh
build_tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
require=()
if [ "${KL1_REQUIRE_CORPUS:-}" = 1 ]; then require=(--require-shared); fi
"$VENV/bin/python" tests/duckdb/check.py --kineto target/debug/kineto --export target/debug/kineto-export \
    --work "$work" "${require[@]}"
