# Sourced by the test scripts that run the tools (tests/run-all.sh, tests/duckdb, tests/python,
# tests/python-provenance, tests/browser).
# build_tools: every binary and example of the workspace, built from the package set `cargo test
# --workspace` builds. Cargo resolves dependency features per set of packages, so a `-p` subset compiled syn,
# serde, clap and a hundred more crates a second time with other features; with the same set, after the
# README's test command there is nothing left to build.
build_tools() {
    cargo build --quiet --workspace --bins --examples
}

# step CMD...: runs CMD and prints its wall time, so that where a test run's time goes is in its log; returns
# CMD's status (also where the caller tests it, e.g. `step … | tee … || rc=$?`, which turns errexit off).
step() {
    local t0=$SECONDS rc=0
    "$@" || rc=$?
    echo "time: $(( SECONDS - t0 )) s: $*"
    return "$rc"
}
