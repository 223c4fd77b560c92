#!/usr/bin/env python3
"""Independent reference for kernel time in Kineto traces: run once, results stored beside it.

For every trace listed in INVENTORY.csv of the corpus directory given (default ../shared/traces), writes
one row: path, kernel count, the sum of kernel durations and the union of kernel intervals over all
devices and streams, both in integer nanoseconds.

Independent of the Rust parser: Python's json module reads the file; numbers are read as Decimal (never
float) and converted to ns with three decimals kept and the fourth rounded half up, the rule the
parser documents. Union = sort by start, merge overlapping or touching intervals, add lengths.

    python3 testdata/reference/kernel_times.py ../shared/traces > testdata/reference/kernel_times.csv
"""
import csv
import gzip
import json
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path


def ns(v) -> int:
    return int((Decimal(v) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def kernel_times(path: Path):
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)
    spans = [
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel")
    ]
    total = sum(b - a for a, b in spans)
    union = 0
    cur = None
    for a, b in sorted(spans):
        if cur is not None and a <= cur[1]:
            cur[1] = max(cur[1], b)
        else:
            if cur is not None:
                union += cur[1] - cur[0]
            cur = [a, b]
    if cur is not None:
        union += cur[1] - cur[0]
    return len(spans), total, union


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/traces")
    rows = list(csv.DictReader(open(root / "INVENTORY.csv")))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["path", "kernels", "sum_ns", "union_ns"])
    for r in rows:
        n, total, union = kernel_times(root / r["path"])
        out.writerow([r["path"], n, total, union])


if __name__ == "__main__":
    main()
