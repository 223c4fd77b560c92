#!/usr/bin/env bash
# Optional (not in .ci/run): Spark SQL in local mode over the 8-rank dlrm export. Needs Java 17+ and
# `pip install pyspark` (into target/py-spark). See docs/parquet.md, "Beyond one machine".
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=target/py-spark
PYSPARK_VERSION=4.3.0
# Local mode only: the driver binds to loopback, never to a network interface.
export SPARK_LOCAL_IP=127.0.0.1
source tests/venv.sh
ensure_venv tests/spark "$VENV" "pyspark==$PYSPARK_VERSION"
command -v java >/dev/null || { echo "tests/spark: Spark needs java on PATH" >&2; exit 1; }
cargo build --quiet -p kineto-cli -p kineto-export-cli
traces=${1:-../shared/traces/param/dlrm_kineto}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$VENV/bin/python" tests/spark/check_spark.py --kineto target/debug/kineto --export target/debug/kineto-export \
    --work "$work" "$traces"/*.json.gz
