#!/usr/bin/env bash
# Optional (not in .ci/run): Spark in local mode, two ways. check_spark.py: Spark SQL over the kineto-export
# Parquet dataset of the 8 dlrm ranks; check_source.py: the `kineto` data source (kineto_trace.spark, the
# Python Data Source API of Spark 4) reading the traces themselves, against `kineto` and the export. Needs
# Java 17+ on PATH; installs pyspark, pyarrow, pandas and maturin (pinned) into $CARGO_TARGET_DIR/py-spark
# and the kineto_trace wheel built from python/. See docs/python.md ("Spark") and docs/parquet.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
t="${CARGO_TARGET_DIR:-target}"
VENV="$t/py-spark"
PINS=(pyspark==4.3.0 pyarrow==26.0.1 pandas==3.1.1 maturin==1.16.0)
# Local mode only: the driver binds to loopback, never to a network interface.
export SPARK_LOCAL_IP=127.0.0.1
source tests/venv.sh
command -v java >/dev/null || { echo "tests/spark: Spark needs java (17 or later) on PATH" >&2; exit 1; }
ensure_venv tests/spark "$VENV" "${PINS[@]}"
wheels="$t/py-spark-wheels"
rm -rf "$wheels"
"$VENV/bin/maturin" build --quiet --manifest-path python/Cargo.toml --interpreter "$VENV/bin/python" --out "$wheels"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/kineto_trace-*.whl
# The binaries from the test run's package set (tests/tools.sh): `-p` of two packages alone would build
# their dependencies again with other features.
source tests/tools.sh
build_tools
# Spark starts its Python workers with PYSPARK_PYTHON (else `python3` on PATH): the venv's, which has the wheel.
export PYSPARK_PYTHON="$VENV/bin/python"
shared=../shared/traces
ranks=${1:-$shared/param/dlrm_kineto}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
