#!/usr/bin/env python3
"""Optional: Spark SQL in local mode over an export, compared with `kineto`'s JSON (the 1,000-rank path).

Usage: check_spark.py --kineto BIN --export BIN --work DIR TRACE…
Runs docs/parquet.md's Spark recipe (spark.read.parquet per table; rank from the rank=N partition) and
checks the top kernels across ranks and the exposed communication per step against `kineto top` and
`kineto budget`. Ends with 'N passed, N failed'.
"""
import argparse
import json
import subprocess
import sys

from pyspark.sql import SparkSession

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}", flush=True)


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kineto", required=True)
    ap.add_argument("--export", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    out = f"{a.work}/parquet"
    subprocess.run([a.export, "--parquet", out, "--overwrite", *a.traces], check=True)
    spark = (SparkSession.builder.master("local[2]").appName("kineto")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for t in ["gpu_ops", "steps", "budget", "families", "annotations"]:
        spark.read.parquet(f"{out}/{t}").createOrReplaceTempView(t)

    top = spark.sql("SELECT name, count(DISTINCT rank) AS ranks, count(*) AS count, sum(dur_ns) AS total_ns "
                    "FROM gpu_ops WHERE kind = 'kernel' GROUP BY name ORDER BY total_ns DESC, name LIMIT 20").collect()
    want = {}
    for j in run_json([a.kineto, "top", "--by", "name", "-n", "0", "--json", *a.traces]):
        m = want.setdefault(j["name"], [set(), 0, 0])
        m[0].add(j["rank"])
        m[1] += j["count"]
        m[2] += j["total_ns"]
    order = sorted(want, key=lambda n: (-want[n][2], n))[:20]
    check([r["name"] for r in top] == order, "spark top_kernels: same 20 names in the same order")
    check(all((r["ranks"], r["count"], r["total_ns"]) == (len(want[r["name"]][0]), want[r["name"]][1], want[r["name"]][2])
              for r in top), "spark top_kernels: ranks/count/total equal kineto top summed over ranks")

    comm = {(r["rank"], r["step"]): (r["comm_ns"], r["comm_exposed_ns"])
            for r in spark.sql("SELECT rank, step, comm_ns, comm_exposed_ns FROM steps").collect()}
    wc = {(j["rank"], j["step"]): (j["comm_ns"], j["comm_exposed_ns"])
          for j in run_json([a.kineto, "budget", "--json", *a.traces])}
    check(comm == wc, f"spark exposed_comm: {len(comm)} steps equal kineto budget's {len(wc)}")

    strag = spark.sql("SELECT coalesce(CAST(step_number AS STRING), concat('#', step)) AS step_key, "
                      "count(*) AS ranks, max(span_ns) AS max_span_ns, max_by(rank, span_ns) AS slowest_rank, "
                      "percentile_approx(span_ns, 0.5) AS approx_median_ns FROM steps GROUP BY 1").collect()
    wr = {j["step_key"]: j for j in run_json([a.kineto, "ranks", "--json", *a.traces]) if j["quantity"] == "span"}
    check({r["step_key"] for r in strag} == set(wr), "spark stragglers: same step keys")
    check(all(r["max_span_ns"] == wr[r["step_key"]]["max_ns"] and r["ranks"] == wr[r["step_key"]]["ranks"]
              for r in strag if r["step_key"] in wr), "spark stragglers: ranks and max span equal kineto ranks")
    spark.stop()
    print(f"spark: {passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
