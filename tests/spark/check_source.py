#!/usr/bin/env python3
"""Optional: the `kineto` Spark data source (kineto_trace.spark) in local mode, against `kineto` and the export.

Usage: check_source.py --kineto BIN --export BIN --work DIR --ranks DIR [--single TRACE]…
For the rank directory (one run's ranks) and for each single trace (a one-rank dataset) it reads every
table with spark.read.format("kineto") and checks:
  * one partition per trace file;
  * the schema equals Spark's schema of the kineto-export Parquet dataset of the same traces (names and
    types; `rank` last, where Spark puts the rank=N partition), and the rows are equal too (exceptAll both
    ways, every column);
  * the top kernels by name (count, Σ, min, max per rank and name) equal `kineto top --by name -n 0`;
  * every step's span, comm, exposed comm and every bucket's exclusive/inclusive ns equal `kineto budget`;
  * across ranks: the straggler figures (ranks, max span, slowest rank) equal `kineto ranks`;
  * a cut trace fails the read, naming its file (a rank is never dropped).
Ends with 'spark source: N passed, N failed'.
"""
import argparse
import json
import os
import subprocess
import sys

from pyspark.sql import SparkSession

import kineto_trace
from kineto_trace.spark import register

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(f"{'ok' if ok else 'FAIL'}: {what}", flush=True)


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]


def source(spark, table, paths):
    return spark.read.format("kineto").option("table", table).load(paths)


def check_dataset(spark, a, label, paths, files):
    """Every check on one dataset: `paths` as given to the source, `files` the trace files."""
    out = os.path.join(a.work, f"parquet-{label}")
    subprocess.run([a.export, "--parquet", out, "--overwrite", *files], check=True, capture_output=True)
    for t in kineto_trace.TABLES:
        df = source(spark, t, paths)
        check(df.rdd.getNumPartitions() == len(files),
              f"{label} {t}: {df.rdd.getNumPartitions()} partitions for {len(files)} trace files")
        if not os.path.isdir(os.path.join(out, t)):
            check(df.count() == 0, f"{label} {t}: no Parquet files and no rows")
            continue
        pq = spark.read.parquet(os.path.join(out, t))
        got = [(f.name, f.dataType) for f in df.schema.fields]
        want = [(f.name, f.dataType) for f in pq.schema.fields]
        check(got == want, f"{label} {t}: schema equals Spark's of the Parquet export ({len(got)} columns)")
        if got == want:
            n = df.count()
            extra = df.exceptAll(pq).count()
            missing = pq.exceptAll(df).count()
            check(extra == 0 and missing == 0 and n == pq.count(),
                  f"{label} {t}: {n} rows equal the export's ({extra} extra, {missing} missing)")
        df.createOrReplaceTempView(t)

    top = {(r["rank"], r["name"]): (r["count"], r["total_ns"], r["min_ns"], r["max_ns"])
           for r in spark.sql("SELECT rank, name, count(*) AS count, sum(dur_ns) AS total_ns, min(dur_ns) AS min_ns, "
                              "max(dur_ns) AS max_ns FROM gpu_ops WHERE kind = 'kernel' GROUP BY rank, name").collect()}
    want = {(j["rank"], j["name"]): (j["count"], j["total_ns"], j["min_ns"], j["max_ns"])
            for j in run_json([a.kineto, "top", "--by", "name", "-n", "0", "--json", *files])}
    check(top == want, f"{label} top: {len(top)} (rank, kernel) groups equal kineto top's {len(want)}")

    budget = run_json([a.kineto, "budget", "--json", *files])
    steps = {(r["rank"], r["step"]): (r["span_ns"], r["comm_ns"], r["comm_exposed_ns"])
             for r in spark.sql("SELECT rank, step, span_ns, comm_ns, comm_exposed_ns FROM steps").collect()}
    ws = {(j["rank"], j["step"]): (j["span_ns"], j["comm_ns"], j["comm_exposed_ns"]) for j in budget}
    check(steps == ws, f"{label} steps: {len(steps)} steps' span/comm/exposed equal kineto budget's {len(ws)}")
    buckets = {(r["rank"], r["step"], r["bucket"]): (r["exclusive_ns"], r["inclusive_ns"])
               for r in spark.sql("SELECT rank, step, bucket, exclusive_ns, inclusive_ns FROM budget").collect()}
    wb = {(j["rank"], j["step"], b): (v["exclusive_ns"], v["inclusive_ns"])
          for j in budget for b, v in j["buckets"].items() if "exclusive_ns" in v}
    check(buckets == wb, f"{label} budget: {len(buckets)} step x bucket cells equal kineto budget's {len(wb)}")
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kineto", required=True)
    ap.add_argument("--export", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--ranks", required=True)
    ap.add_argument("--single", action="append", default=[])
    a = ap.parse_args()
    spark = (SparkSession.builder.master("local[2]").appName("kineto-source")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    print(f"spark {spark.version}, java {spark.sparkContext._jvm.System.getProperty('java.version')}, "
          f"kineto_trace {kineto_trace.__version__}", flush=True)

    # One run's ranks, given as its directory: the driver expands it as kineto does.
    files = kineto_trace.expand_paths(a.ranks)
    check_dataset(spark, a, "ranks", a.ranks, files)
    strag = {r["step_key"]: r for r in spark.sql(
        "SELECT coalesce(CAST(step_number AS STRING), concat('#', step)) AS step_key, count(*) AS ranks, "
        "max(span_ns) AS max_span_ns, min(span_ns) AS min_span_ns, max_by(rank, span_ns) AS slowest "
        "FROM steps GROUP BY 1").collect()}
    wr = {j["step_key"]: j for j in run_json([a.kineto, "ranks", "--json", a.ranks]) if j["quantity"] == "span"}
    check(set(strag) == set(wr), f"ranks stragglers: {len(strag)} step keys equal kineto ranks' {len(wr)}")
    check(all((strag[k]["ranks"], strag[k]["max_span_ns"], strag[k]["min_span_ns"], str(strag[k]["slowest"]))
              == (wr[k]["ranks"], wr[k]["max_ns"], wr[k]["min_ns"], wr[k]["max_rank"]) for k in wr if k in strag),
          "ranks stragglers: ranks, max and min span, slowest rank equal kineto ranks")

    # Held out: single traces of other runs, each its own dataset, given as a list of one file.
    for i, f in enumerate(a.single):
        check_dataset(spark, a, f"single{i}:{os.path.basename(f)}", [f], [f])

    # A cut trace fails its task and the error names the file.
    cut = os.path.join(a.work, "cut.pt.trace.json")
    with open(cut, "wb") as w:
        text = subprocess.run(["gzip", "-dc", files[0]], capture_output=True, check=True).stdout
        w.write(text[: len(text) // 2])
    try:
        source(spark, "gpu_ops", [files[1], cut]).count()
        check(False, "cut trace: the read failed")
    except Exception as e:  # Spark wraps the executor's TraceError
        check("cut.pt.trace.json" in str(e) and "TraceError" in str(e),
              "cut trace: the read fails with TraceError naming the file")
    try:
        spark.read.format("kineto").option("table", "gpu_opz").load(a.ranks).schema
        check(False, "bad table: refused")
    except Exception as e:
        check("gpu_opz" in str(e), "bad table: refused, naming it")
    spark.stop()
    print(f"spark source: {passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
