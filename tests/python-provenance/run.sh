#!/usr/bin/env bash
# The kl1_provenance Python module as a user gets it: installs maturin, pytest and pytest-benchmark (pinned)
# into target/py-provenance, builds the abi3 wheel from python/provenance with maturin, installs the wheel
# (its pytest plugin with it) and runs python/provenance/tests with pytest, against the `provenance` binary
# for `show` and `diff`. Called by tests/run-all.sh; runnable alone from any directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
t="${CARGO_TARGET_DIR:-target}"
VENV="$t/py-provenance"
PINS=(maturin==1.16.0 pytest==9.2.0 pytest-benchmark==5.3.1)
source tests/venv.sh
ensure_venv tests/python-provenance "$VENV" "${PINS[@]}"
# `--prepare`: only the installs (tests/run-all.sh does them beside the Rust tests).
if [ "${1:-}" = --prepare ]; then exit 0; fi
wheels="$t/py-provenance-wheels"
rm -rf "$wheels"
# The dev profile shares the workspace's compiled dependencies with `cargo test` (the module's feature-
# unification table keeps their features the same: xtask/tests/feature_unification.rs).
"$VENV/bin/maturin" build --quiet --manifest-path python/provenance/Cargo.toml --interpreter "$VENV/bin/python" --out "$wheels"
# `python -m pip`, not bin/pip: a venv copied elsewhere (a worktree seeded from another clone) keeps bin/pip's
# `#!` line, which would install into the original venv and leave this one testing its old wheel.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/kl1_provenance-*.whl
source tests/tools.sh
build_tools
PROVENANCE_BIN="$(cd "$t" && pwd)/debug/provenance" "$VENV/bin/python" -m pytest -q -p no:cacheprovider python/provenance/tests
