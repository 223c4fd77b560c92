#!/usr/bin/env python3
"""The top kernel names of every trace of a corpus: the names that together hold >= 90 % of its kernel time.

For every trace listed in the INVENTORY.csv files of the corpus directory given (default ../shared/traces;
the top-level inventory and each sub-directory's, e.g. serving/INVENTORY.csv, whose paths are relative to
that sub-directory), sums kernel durations by name and writes the names in decreasing time, stopping once
the running total reaches 90 % of the trace's kernel time (ties of time broken by name). One row per
name: trace path (relative to the corpus root), rank in the trace, kernel name, count, sum_ns, the
cumulative share in per mille of the trace's kernel time.

Independent of the Rust parser: Python's json module reads the file; a kernel is an event with
ph == "X" and cat "kernel" (or "Kernel", the 2021 spelling); durations are read as Decimal and
converted to ns with the fourth decimal rounded half up, as kernel_times.py does.

The family and bucket of each name are NOT computed here: they are assigned by hand in
top_kernel_labels.csv (one row per distinct name), from what the name says, without running the rules.

    python3 testdata/reference/top_kernels.py ../shared/traces > testdata/reference/top_kernels.csv
"""
import csv
import gzip
import json
import sys
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

SHARE = Decimal("0.90")


def ns(v) -> int:
    return int((Decimal(v) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def kernels_by_name(path: Path):
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    by = defaultdict(lambda: [0, 0])
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel"):
            s = by[e.get("name", "")]
            s[0] += 1
            s[1] += ns(e.get("dur", 0))
    return by


def inventories(root: Path):
    """(prefix, inventory path) for the top inventory and each sub-directory's."""
    for inv in sorted(root.rglob("INVENTORY.csv")):
        rel = inv.parent.relative_to(root)
        yield ("" if str(rel) == "." else f"{rel}/"), inv


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/traces")
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["path", "rank", "name", "count", "sum_ns", "cum_permille"])
    for prefix, inv in inventories(root):
        for r in csv.DictReader(open(inv)):
            if int(r["kernel"] or 0) == 0:
                continue
            path = prefix + r["path"]
            by = kernels_by_name(root / path)
            total = sum(v[1] for v in by.values())
            if total <= 0:
                continue
            cum = 0
            for i, (name, (n, t)) in enumerate(
                sorted(by.items(), key=lambda kv: (-kv[1][1], kv[0]))
            ):
                cum += t
                out.writerow([path, i + 1, name, n, t, cum * 1000 // total])
                if Decimal(cum) >= SHARE * total:
                    break


if __name__ == "__main__":
    main()
