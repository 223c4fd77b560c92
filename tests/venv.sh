# Sourced by the test scripts that need Python packages (tests/duckdb, tests/python, tests/spark).
# ensure_venv WHO VENV PIN... : a venv at VENV holding exactly the pinned packages. The pins installed last
# are kept in VENV/.kl1-pins, so a changed pin reinstalls and an unchanged one costs nothing.
ensure_venv() {
    local who=$1 venv=$2
    shift 2
    if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.kl1-pins" 2>/dev/null)" = "$*" ]; then
        return 0
    fi
    python3 -m venv "$venv" || { echo "$who: cannot create a Python venv in $venv (python3 -m venv)" >&2; return 1; }
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" \
        || { echo "$who: cannot pip install $* (needs PyPI)" >&2; return 1; }
    printf '%s' "$*" >"$venv/.kl1-pins"
}
