#!/usr/bin/env bash
# Spark in local mode, two ways (a step of tests/run-all.sh, the README's test command). check_spark.py:
# Spark SQL over the kineto-export Parquet dataset of one run's ranks; check_source.py: the `kineto` data
# source (kineto_trace.spark, the Python Data Source API of Spark 4) reading the traces themselves through
# the module's Session, against `kineto` and the export. The ranks are the 8 dlrm ranks of the shared corpus
# when it is beside the clone, else the two decode ranks of the generated demo window. Needs Java 17+:
# installs Debian's JRE when missing (as root, apt-get), pyspark, pyarrow, pandas and maturin (pinned) into
# $CARGO_TARGET_DIR/py-spark and the kineto_trace wheel built from python/. See docs/python.md ("Spark").
set -euo pipefail
cd "$(dirname "$0")/../.."
t="${CARGO_TARGET_DIR:-target}"
VENV="$t/py-spark"
PINS=(pyspark==4.3.0 pyarrow==26.0.1 pandas==3.1.1 maturin==1.16.0)
# Local mode only: the driver binds to loopback, never to a network interface.
export SPARK_LOCAL_IP=127.0.0.1
source tests/venv.sh
if ! command -v java >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "tests/spark: installing Debian's JRE (apt-get) ..."
    mkdir -p "$t"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; } \
        >"$t/spark-apt.log" 2>&1 || echo "tests/spark: apt-get failed, see $t/spark-apt.log"
fi
command -v java >/dev/null || { echo "tests/spark: Spark needs java (17 or later) on PATH" >&2; exit 1; }
ensure_venv tests/spark "$VENV" "${PINS[@]}"
# `--prepare`: only the installs (tests/run-all.sh does them beside the Rust tests).
if [ "${1:-}" = --prepare ]; then exit 0; fi
wheels="$t/py-spark-wheels"
rm -rf "$wheels"
"$VENV/bin/maturin" build --quiet --manifest-path python/Cargo.toml --interpreter "$VENV/bin/python" --out "$wheels"
# `python -m pip`, not bin/pip: a venv copied elsewhere (a worktree seeded from another clone) keeps bin/pip's
# `#!` line, which would install into the original venv and leave this one testing its old wheel.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/kineto_trace-*.whl
# The binaries from the test run's package set (tests/tools.sh): `-p` of two packages alone would build
# their dependencies again with other features.
source tests/tools.sh
build_tools
# Spark starts its Python workers with PYSPARK_PYTHON (else `python3` on PATH): the venv's, which has the wheel.
export PYSPARK_PYTHON="$VENV/bin/python"
shared=../shared/traces
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${1:-}" ]; then
    ranks=$1
elif [ -d "$shared/param/dlrm_kineto" ]; then
    ranks=$shared/param/dlrm_kineto
else
    # Without the corpus: one run's two ranks of the generated demo window (its prefill captures are other
    # runs of the same ranks, so they are left out: the rank rule would refuse them side by side).
    ranks=$work/demo-ranks
    mkdir -p "$ranks"
    for r in 0 1; do
        ln -s "$(pwd)/testdata/windows/demo/prof-32k-b1.decode.rank$r.pt.trace.json.gz" "$ranks/"
    done
fi
bin="$t/debug"
"$VENV/bin/python" tests/spark/check_spark.py --kineto "$bin/kineto" --export "$bin/kineto-export" \
    --work "$work" "$ranks"/*.json.gz
# Held out: single traces of other runs (each with its distributedInfo.rank), when the shared corpus is here.
single=()
for f in hta/df_index_resolver/df_index_resolver.json.gz hta/trace_diff/control/control.json.gz \
         hta/negative_queue_length_values_check/rank0.json.gz; do
    [ -f "$shared/$f" ] && single+=(--single "$shared/$f")
done
"$VENV/bin/python" tests/spark/check_source.py --kineto "$bin/kineto" --export "$bin/kineto-export" \
    --work "$work" --ranks "$ranks" "${single[@]}"
