#!/usr/bin/env python3
"""Independent reference for steps, links and budgets in Kineto traces: run once, output stored beside it.

For every trace of the corpus directory given (default ../shared/traces) that has ProfilerStep markers, plus
the cases in EXTRA (a trace with a custom step pattern), writes the expected links, steps and per-step budgets
as JSON (testdata/reference/steps.json). The Rust tests in crates/kineto-trace/tests/steps_reference.rs
compare against it.

Independent of the Rust code: Python's json module reads the file, numbers are read as Decimal and converted
to integer ns (three decimals kept, the fourth rounded half up, as the parser documents). The definitions
implemented are the ones docs/steps-and-budgets.md states:
  * a GPU op links to the cuda_runtime / cuda_driver call with its correlation id (runtime calls first);
  * step markers: user_annotation / cpu_op (Operator) X events whose whole name matches the pattern,
    deduplicated on (name, pid, tid, ts, dur), ordered by (ts, longer first);
  * a GPU op is in a step when its launch is on the marker's pid with marker.ts <= launch.ts < marker.end
    (the latest-starting such marker);
  * lo/hi = first kernel start / last kernel end; period = next step (same pid) lo - lo;
  * same-stream overlap: a kernel starting before the latest end of earlier-starting kernels on its
    (device, stream);
  * families: the first [[rule]] of the rule file whose pattern re.search-es the name;
  * budget over the step's GPU window (first start to last end of its kernels, copies and fills): per
    bucket (the kernel's family bucket; `memcpy` for copies, `memset` for fills) the union (inclusive)
    and the exact rational share of each elementary segment (exclusive, written as a fraction), idle =
    time with no kernel, copy or fill of the step running.
Brute force where the Rust code sweeps: segments are visited one by one and buckets tested one by one.

    python3 testdata/reference/steps.py ../shared/traces > testdata/reference/steps.json
"""
import csv
import gzip
import json
import re
import sys
import tomllib
from bisect import bisect_right
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
RULES = HERE.parent.parent / "crates/kineto-trace/rules/default.toml"
PROFILER_STEP = r"ProfilerStep#(?P<step>\d+)"
EXTRA = [
    ("hta/_historical/with_gpu_user_annotation/step_based_trace_2543932.json.gz", r"Optimizer\.step#SGD\.step"),
    ("hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", r"## (?P<phase>[a-z]+) ##"),
]


def ns(v) -> int:
    return int((Decimal(v) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def load(path: Path):
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def as_int(v):
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v.rsplit(" ", 1)[-1])
        except ValueError:
            return None
    return None


def union(iv):
    total, cur = 0, None
    for a, b in sorted(iv):
        if a >= b:
            continue
        if cur is not None and a <= cur[1]:
            cur[1] = max(cur[1], b)
        else:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [a, b]
    if cur is not None:
        total += cur[1] - cur[0]
    return total


def merged(iv):
    out = []
    for a, b in sorted(iv):
        if a >= b:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(m, t):
    """Whether merged intervals m cover the instant t (half-open)."""
    i = bisect_right([a for a, _ in m], t) - 1
    return i >= 0 and m[i][0] <= t < m[i][1]


def rules():
    doc = tomllib.loads(RULES.read_text())
    return [(re.compile(r["pattern"]), r["family"]) for r in doc["rule"]], doc["families"]


RULE_LIST, FAMILIES = rules()


def family(name, cache={}):
    if name not in cache:
        cache[name] = next((f for rx, f in RULE_LIST if rx.search(name)), None)
    return cache[name]


def analyse(path: Path, pattern: str):
    ev = [e for e in load(path) if isinstance(e, dict) and e.get("ph") == "X"]
    cat = lambda e, *c: e.get("cat") in c
    gpu = {"kernel": [], "memcpy": [], "memset": []}
    for e in ev:
        for kind, cats in (("kernel", ("kernel", "Kernel")), ("memcpy", ("gpu_memcpy", "Memcpy")), ("memset", ("gpu_memset", "Memset"))):
            if cat(e, *cats):
                a = e.get("args") or {}
                dev = a.get("device", e["pid"] if isinstance(e["pid"], int) else None)
                stream = a.get("stream", as_int(e["tid"]))
                gpu[kind].append(dict(name=e["name"], ts=ns(e["ts"]), end=ns(e["ts"]) + ns(e.get("dur", 0)),
                                      corr=a.get("correlation") or None, dev=dev, stream=stream,
                                      pidtid=(e["pid"], e["tid"])))
    launches = [e for e in ev if cat(e, "cuda_runtime", "Runtime", "cuda_driver")]
    by_corr = {}
    dup = 0
    for want in (("cuda_runtime", "Runtime"), ("cuda_driver",)):
        for i, l in enumerate(launches):
            if l["cat"] not in want:
                continue
            c = (l.get("args") or {}).get("correlation")
            if not c:
                continue
            if c in by_corr:
                dup += 1
            else:
                by_corr[c] = i
    links = {}
    used = [0] * len(launches)
    for kind, ops in gpu.items():
        missing = [o for o in ops if o["corr"] not in by_corr]
        for o in ops:
            o["launch"] = by_corr.get(o["corr"])
            if o["launch"] is not None:
                used[o["launch"]] += 1
        links[f"{kind}s_without_launch"] = {"count": len(missing), "sum_ns": sum(o["end"] - o["ts"] for o in missing)}
    graph = [i for i, l in enumerate(launches) if "GraphLaunch" in l["name"]]
    links["graph_launches"] = len(graph)
    gs = set(graph)
    links["graph_kernels"] = sum(1 for k in gpu["kernel"] if k["launch"] in gs)
    nogpu = defaultdict(int)
    for i, l in enumerate(launches):
        if used[i] == 0 and any(w in l["name"] for w in ("Launch", "Memcpy", "Memset")):
            nogpu[l["name"]] += 1
    links["launches_without_gpu_op"] = dict(sorted(nogpu.items()))
    links["duplicate_correlations"] = dup

    # Markers.
    rx = re.compile(pattern)
    seen = set()
    markers = []
    for e in ev:
        if cat(e, "user_annotation", "cpu_op", "Operator") and rx.fullmatch(e["name"]):
            key = (e["name"], e["pid"], e["tid"], ns(e["ts"]), ns(e.get("dur", 0)))
            if key not in seen:
                seen.add(key)
                markers.append(e)
    # Annotations first, then ops, each in file order: the order the Rust code dedups and sorts in.
    markers.sort(key=lambda e: 0 if e["cat"] == "user_annotation" else 1)
    markers = sorted(markers, key=lambda e: (ns(e["ts"]), -ns(e.get("dur", 0))))
    steps = []
    for i, m in enumerate(markers):
        g = rx.fullmatch(m["name"]).groupdict()
        toint = lambda x: int(x) if x is not None and x.isdigit() else None
        steps.append(dict(index=i, name=m["name"], number=toint(g.get("step")), phase=g.get("phase"),
                          rows=toint(g.get("rows")), requests=toint(g.get("requests")),
                          pid=m["pid"], cpu_lo=ns(m["ts"]), cpu_hi=ns(m["ts"]) + ns(m.get("dur", 0)),
                          kernels=[], memcpys=[], memsets=[]))

    def step_of(li):
        l = launches[li]
        t = ns(l["ts"])
        best = None
        for s in steps:  # brute force: every marker tested
            if s["pid"] == l["pid"] and s["cpu_lo"] <= t < s["cpu_hi"]:
                if best is None or (s["cpu_lo"], -(s["cpu_hi"] - s["cpu_lo"]), s["index"]) > \
                        (best["cpu_lo"], -(best["cpu_hi"] - best["cpu_lo"]), best["index"]):
                    best = s
        return best

    launch_step = {}
    outside = unlinked = 0
    for kind, ops in gpu.items():
        for o in ops:
            if o["launch"] is None:
                unlinked += kind == "kernel"
                continue
            if o["launch"] not in launch_step:
                launch_step[o["launch"]] = step_of(o["launch"])
            s = launch_step[o["launch"]]
            if s is None:
                outside += kind == "kernel"
            else:
                s[kind + "s"].append(o)

    # Same-stream overlaps over the whole trace.
    streams = defaultdict(list)
    for i, k in enumerate(gpu["kernel"]):
        key = ("ids", k["dev"], k["stream"]) if k["dev"] is not None and k["stream"] is not None else ("track",) + k["pidtid"]
        streams[key].append((k["ts"], k["end"], i))
    overlap = set()
    for v in streams.values():
        latest = None
        for ts, end, i in sorted(v):
            if latest is not None and ts < latest:
                overlap.add(i)
            latest = end if latest is None else max(latest, end)
    ov_id = {id(k) for i, k in enumerate(gpu["kernel"]) if i in overlap}

    out_steps = []
    for s in steps:
        ks = s["kernels"]
        lo = min((k["ts"] for k in ks), default=None)
        hi = max((k["end"] for k in ks), default=None)
        row = dict(index=s["index"], name=s["name"], number=s["number"], phase=s["phase"], rows=s["rows"],
                   requests=s["requests"], cpu_lo_ns=s["cpu_lo"], cpu_hi_ns=s["cpu_hi"], lo_ns=lo, hi_ns=hi,
                   kernels=len(ks), memcpys=len(s["memcpys"]), memsets=len(s["memsets"]),
                   kernel_sum_ns=sum(k["end"] - k["ts"] for k in ks),
                   kernel_union_ns=union([(k["ts"], k["end"]) for k in ks]),
                   same_stream_overlaps=sum(1 for k in ks if id(k) in ov_id))
        row["budget"] = budget(ks, s["memcpys"], s["memsets"])
        out_steps.append(row)
    for i, s in enumerate(out_steps):
        nxt = next((t for t in out_steps[i + 1:] if steps[t["index"]]["pid"] == steps[i]["pid"]), None)
        s["period_ns"] = nxt["lo_ns"] - s["lo_ns"] if nxt and nxt["lo_ns"] is not None and s["lo_ns"] is not None else None
    return dict(links=links, kernels_outside=outside, kernels_unlinked=unlinked,
                same_stream_overlaps=len(overlap), steps=out_steps)


def budget(ks, copies, fills):
    # The window is the step's GPU work: kernels, copies and fills.
    every = ks + copies + fills
    if not every:
        return None
    lo = min(o["ts"] for o in every)
    hi = max(o["end"] for o in every)
    fams = defaultdict(list)
    for k in ks:
        fams[family(k["name"])].append(k)
    families = {f: {"count": len(v), "sum_ns": sum(k["end"] - k["ts"] for k in v),
                    "union_ns": union([(k["ts"], k["end"]) for k in v])} for f, v in fams.items() if f is not None}
    un = fams.get(None, [])
    bucket_iv = defaultdict(list)
    for k in ks:
        f = family(k["name"])
        bucket_iv[FAMILIES[f] if f else "unmatched"].append((k["ts"], k["end"]))
    for bk, ops in (("memcpy", copies), ("memset", fills)):
        for o in ops:
            bucket_iv[bk].append((o["ts"], o["end"]))
    m = {b: merged(v) for b, v in bucket_iv.items()}
    # Cut at every kernel start and end (not only at the ends of the merged unions), the same elementary
    # segments the sweep rounds in, so that `rounded_segments` bounds the rounding exactly.
    points = sorted({lo, hi} | {x for k in every for x in (k["ts"], k["end"])})
    excl = defaultdict(Fraction)
    shared = defaultdict(int)
    idle = 0
    for a, b in zip(points, points[1:]):
        active = [bk for bk, v in m.items() if covered(v, a)]
        if not active:
            idle += b - a
            continue
        for bk in active:
            excl[bk] += Fraction(b - a, len(active))
            if len(active) > 1 and (b - a) % len(active):
                shared[bk] += 1
    buckets = {bk: {"inclusive_ns": union(v), "exclusive": f"{excl[bk].numerator}/{excl[bk].denominator}",
                    "rounded_segments": shared[bk]} for bk, v in m.items()}
    return dict(span_ns=hi - lo, idle_ns=idle, buckets=buckets, families=families,
                unmatched={"count": len(un), "sum_ns": sum(k["end"] - k["ts"] for k in un)})


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/traces")
    rows = list(csv.DictReader(open(root / "INVENTORY.csv")))
    cases = [(r["path"], PROFILER_STEP) for r in rows if int(r["profiler_steps"]) > 0] + EXTRA
    out = []
    for rel, pattern in cases:
        res = analyse(root / rel, pattern)
        out.append(dict(path=rel, pattern=pattern, **res))
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
