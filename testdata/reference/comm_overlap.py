#!/usr/bin/env python3
"""Communication/computation overlap per trace, HTA's `get_comm_comp_overlap` definition, for
`kineto budget --whole-trace` to be checked against.

HTA (HolisticTraceAnalysis 0.5.0, `CommunicationAnalysis.get_comm_comp_overlap`) per rank: the
events on a GPU stream (`args.stream` ≠ -1) are typed by name — communication `^nccl.*Kernel`,
computation everything that is not `^nccl.*Kernel`, `…Memcpy…`/`Memset` or `…Sync` — each kind's
intervals are merged, and overlap % = |comm ∩ compute| / |comm|.

`exact` is that definition with Python's json and Decimal times over kernels (the only events
kineto types by rules); `hta` is HTA's own number (float µs, HTA_DISABLE_NS_ROUNDING=1).

Run:  HTA_DISABLE_NS_ROUNDING=1 python3 testdata/reference/comm_overlap.py ../shared/traces > testdata/reference/comm_overlap.json
"""
import gzip
import json
import os
import re
import sys
from decimal import Decimal

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
COMM = re.compile(r"^nccl.*Kernel")
NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
TRACES = [f"param/dlrm_kineto/worker{i}" for i in range(8)] + ["hta/nccl_parser_config/nccl_data.json.gz"]


def merged(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def exact(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        ev = json.loads(f.read(), parse_float=Decimal)["traceEvents"]
    comm, comp = [], []
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "Kernel"):
            continue
        a = int(Decimal(e["ts"]) * 1000)
        b = a + int(Decimal(e.get("dur", 0)) * 1000)
        if COMM.match(e["name"]):
            comm.append((a, b))
        elif not NOT_COMPUTE.match(e["name"]):
            comp.append((a, b))
    comm, comp = merged(comm), merged(comp)
    total = sum(b - a for a, b in comm)
    over = 0
    for a, b in comm:  # brute force against every compute interval
        for c, d in comp:
            over += max(0, min(b, d) - max(a, c))
    return {"comm_ns": total, "overlapped_ns": over}


def hta(path):
    try:
        import logging

        from hta.analyzers.communication_analysis import CommunicationAnalysis
        from hta.common.trace import Trace
    except ImportError:
        return None
    logging.disable(logging.CRITICAL)
    t = Trace(trace_files={0: os.path.abspath(path)}, trace_dir="")
    t.parse_traces(max_ranks=1, use_multiprocessing=False)
    df = CommunicationAnalysis.get_comm_comp_overlap(t, visualize=False)
    return float(df["comp_comm_overlap_pctg"].iloc[0])


def main(root):
    out = []
    for rel in TRACES:
        path = os.path.join(root, rel)
        files = [path] if os.path.isfile(path) else []
        if not files:
            d = os.path.dirname(path)
            files = [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.startswith(os.path.basename(path))]
        for f in files:
            out.append({"path": os.path.relpath(f, root), "exact": exact(f), "hta_pct": hta(f)})
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
