#!/usr/bin/env python3
"""`kineto top --by name` computed the plain way, for tests to compare against.

Python's json with Decimal times; every complete event of category `kernel` (`Kernel` before 2022)
grouped by its name: count, Σ dur, min, max, mean = Σ/count, median (middle value, or the mean of the
two middle ones), sample standard deviation (n − 1), and % of the Σ dur of all kernels. Durations
in ns (integers: µs × 1000, exact).

Run:  python3 testdata/reference/top.py > testdata/reference/top.json
(paths relative to the workspace root; the traces are the shared corpus's, ../shared/traces)
"""
import gzip
import json
import statistics
import sys
from collections import defaultdict
from decimal import Decimal

TRACES = [
    "../shared/traces/hta/trace_compare/base/base.json.gz",
    "../shared/traces/param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz",
    "../shared/traces/serving/vllm_decode_full/graph_execution.json.gz",
]


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        return json.loads(f.read(), parse_float=Decimal)


def top(path):
    groups = defaultdict(list)
    for e in load(path)["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel"):
            groups[e["name"]].append(int(Decimal(e.get("dur", 0)) * 1000))
    total = sum(sum(v) for v in groups.values())
    rows = []
    for name, d in groups.items():
        s = sum(d)
        rows.append(
            dict(
                name=name,
                count=len(d),
                total_ns=s,
                min_ns=min(d),
                max_ns=max(d),
                mean_ns=s / len(d),
                median_ns=float(statistics.median(d)),
                stddev_ns=statistics.stdev(d) if len(d) > 1 else 0.0,
                pct=100 * s / total if total else 0.0,
            )
        )
    rows.sort(key=lambda r: (-r["total_ns"], r["name"]))
    return rows


json.dump([dict(path=p, rows=top(p)) for p in TRACES], sys.stdout, indent=1)
print()
