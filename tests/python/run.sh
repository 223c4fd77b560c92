#!/usr/bin/env bash
# The kineto_trace Python module as a user gets it: installs maturin, pyarrow, pandas, polars, pytest and
# pytest-xdist (pinned) into target/py-kineto, builds the abi3 wheel from python/ with maturin, installs the
# wheel and runs python/tests with pytest (the Parquet comparison uses the kineto-export binary). Called by
# tests/run-all.sh; runnable alone from any directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
t="${CARGO_TARGET_DIR:-target}"
VENV="$t/py-kineto"
PINS=(maturin==1.16.0 pyarrow==26.0.1 pandas==3.1.1 polars==2.1.0 pytest==9.2.0 pytest-xdist==3.8.0)
source tests/venv.sh
ensure_venv tests/python "$VENV" "${PINS[@]}"
# `--prepare`: only the installs (tests/run-all.sh does them beside the Rust tests).
if [ "${1:-}" = --prepare ]; then exit 0; fi
wheels="$t/py-wheels"
rm -rf "$wheels"
# The dev profile shares the workspace's compiled dependencies with `cargo test` (the module's feature-
# unification table keeps their features the same: xtask/tests/feature_unification.rs).
"$VENV/bin/maturin" build --quiet --manifest-path python/Cargo.toml --interpreter "$VENV/bin/python" --out "$wheels"
# `python -m pip`, not bin/pip: a venv copied elsewhere (a worktree seeded from another clone) keeps bin/pip's
# `#!` line, which would install into the original venv and leave this one testing its old wheel.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/kineto_trace-*.whl
source tests/tools.sh
build_tools
# On every core (pytest-xdist): each test reads its own files and writes under its own tmp_path.
KINETO_EXPORT="$(cd "$t" && pwd)/debug/kineto-export" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
    -n auto python/tests
