#!/usr/bin/env python3
"""Loads the same traces with HTA's TraceAnalysis and with kineto_trace; prints wall time and peak RSS.

Usage: bench_hta.py TRACE_DIR [--repeat N]

Each measurement runs in a fresh Python process that reports its own wall time and peak RSS
(getrusage ru_maxrss), so neither loader inherits the other's memory; `imports only` is the baseline of
the same process importing the libraries and loading nothing. HTA needs `pip install
HolisticTraceAnalysis`; kineto_trace needs the wheel (`pip install ./python`, a release build for
timing). Both do what a notebook does first: HTA parses every rank into DataFrames; kineto_trace parses
and analyses every rank (steps, families, budgets) and materialises every rank's gpu_ops table as a
pandas DataFrame.
"""
import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
what, d = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if what.startswith("hta"):
    import logging
    logging.disable(logging.CRITICAL)
    from hta.trace_analysis import TraceAnalysis
if what.startswith("kineto"):
    import kineto_trace
    import pandas
t1 = time.perf_counter()
n = 0
if what == "hta":
    a = TraceAnalysis(trace_dir=d)
    n = sum(len(a.t.get_trace(r)) for r in a.t.get_ranks())
elif what == "kineto":
    for t in kineto_trace.read_ranks(d):
        n += len(t.gpu_ops().to_pandas())
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "rows": n,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(what, d):
    r = subprocess.run([sys.executable, "-c", CHILD, what, d], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_hta.py: {what} failed: {r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace_dir")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"{'loader':<22} {'load s (best)':>14} {'peak RSS MiB':>13} {'rows':>10}")
    for what, label in [("hta-imports", "HTA imports only"), ("hta", "HTA TraceAnalysis"),
                        ("kineto-imports", "kineto_trace imports"), ("kineto", "kineto_trace")]:
        runs = [run(what, a.trace_dir) for _ in range(a.repeat)]
        best = min(runs, key=lambda x: x["load_s"])
        rss = max(x["peak_rss_mib"] for x in runs)
        print(f"{label:<22} {best['load_s']:>14.3f} {rss:>13.1f} {best['rows']:>10}")


if __name__ == "__main__":
    main()
