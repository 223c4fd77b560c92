#!/usr/bin/env python3
"""GPU idle time per trace, two ways, for `kineto budget --whole-trace` to be checked against.

1. HTA's own number: `BreakdownAnalysis.get_temporal_breakdown` of HolisticTraceAnalysis 0.5.0
   (`pip install HolisticTraceAnalysis`), run with HTA_DISABLE_NS_ROUNDING=1, one trace per call.
   HTA keeps times as float µs, so on absolute-epoch traces its idle carries float rounding
   (a ULP of 1.7e15 µs is 0.25 µs).
2. HTA's definition, exactly, with Python's json and Decimal times (`exact`): the GPU events are
   every complete event with an integer `args.stream` other than -1 (kernels, copies and fills, but
   also `cuda_sync` events and the odd `cpu_op` that carries a stream); `kernel_time` = last end −
   first start over them, `idle` = kernel_time − the length of their union. `hta_arithmetic_idle_us`
   redoes HTA's float64 sums on those intervals and reproduces HTA's number: the gap between HTA and
   the exact idle is float rounding of Σ end − Σ start on epoch-µs times, nothing else.
3. The same definition over kernels, copies and fills only (`gpu_work`): what `kineto budget
   --whole-trace` calls idle. It equals `exact` wherever a trace has no other events on a stream.

Run:  HTA_DISABLE_NS_ROUNDING=1 python3 testdata/reference/gpu_idle.py ../shared/traces > testdata/reference/gpu_idle.json
(HTA is optional: without it only the exact values are written.)
"""
import csv
import gzip
import json
import os
import sys
from decimal import Decimal

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        return json.loads(f.read(), parse_float=Decimal)


GPU_WORK = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}


def exact(path, only_gpu_work=False):
    d = load(path)
    iv = []
    for e in d.get("traceEvents", []):
        if e.get("ph") != "X":
            continue
        if only_gpu_work and e.get("cat") not in GPU_WORK:
            continue
        s = (e.get("args") or {}).get("stream")
        if not only_gpu_work and (not isinstance(s, int) or s == -1):
            continue
        ts = Decimal(e["ts"]) * 1000
        dur = Decimal(e.get("dur", 0)) * 1000
        iv.append((ts, ts + dur, e.get("cat")))
    if not iv:
        return None
    iv.sort(key=lambda x: (x[0], x[1]))
    lo, hi = iv[0][0], max(x[1] for x in iv)
    covered = Decimal(0)
    merged = []
    cur_s, cur_e = iv[0][0], iv[0][1]
    for s, e, _ in iv[1:]:
        if s > cur_e:
            covered += cur_e - cur_s
            merged.append((cur_s, cur_e))
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    covered += cur_e - cur_s
    merged.append((cur_s, cur_e))
    cats = sorted({c for _, _, c in iv if c is not None})
    out = {
        "span_ns": int(hi - lo),
        "idle_ns": int(hi - lo - covered),
        "events": len(iv),
        "categories": cats,
    }
    # HTA's own arithmetic on the same merged intervals: float64 µs, Σ ends − Σ starts summed
    # separately by numpy (pairwise), starts as int64 when every start is a whole µs. On epoch-µs
    # traces those sums reach 1e17-1e19, where a float64 step is 16-2048 ns: this is where HTA's
    # idle parts from the exact one.
    try:
        import numpy as np

        starts_us = [s / 1000 for s, _ in merged]
        ends = np.array([float(e / 1000) for _, e in merged], dtype=np.float64)
        if all(x == int(x) for x in starts_us):
            starts = np.array([int(x) for x in starts_us], dtype=np.int64)
        else:
            starts = np.array([float(x) for x in starts_us], dtype=np.float64)
        run = ends.sum() - starts.sum()
        out["hta_arithmetic_idle_us"] = float(float(ends.max()) - float(starts.min()) - run)
    except ImportError:
        pass
    return out


def hta(path):
    try:
        from hta.analyzers.breakdown_analysis import BreakdownAnalysis
        from hta.common.trace import Trace
    except ImportError:
        return None
    import logging

    logging.disable(logging.CRITICAL)
    t = Trace(trace_files={0: os.path.abspath(path)}, trace_dir="")
    t.parse_traces(max_ranks=1, use_multiprocessing=False)
    df = BreakdownAnalysis.get_temporal_breakdown(t, visualize=False)
    return {
        "idle_us": float(df["idle_time(us)"].iloc[0]),
        "kernel_time_us": float(df["kernel_time(us)"].iloc[0]),
    }


def main(root):
    out = []
    for inv in ["INVENTORY.csv", "serving/INVENTORY.csv"]:
        base = os.path.dirname(os.path.join(root, inv))
        with open(os.path.join(root, inv)) as f:
            for row in csv.DictReader(f):
                if int(row["kernel"]) + int(row["gpu_memcpy"]) + int(row["gpu_memset"]) == 0:
                    continue
                path = os.path.join(base, row["path"])
                rel = os.path.relpath(path, root)
                entry = {"path": rel, "exact": exact(path), "gpu_work": exact(path, True)}
                try:
                    entry["hta"] = hta(path)
                except Exception as e:  # HTA refuses some traces; say which and why
                    entry["hta"] = None
                    entry["hta_error"] = f"{type(e).__name__}: {e}"[:300]
                out.append(entry)
                print(rel, file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
