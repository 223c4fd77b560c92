#!/usr/bin/env python3
"""Independent counts of the native-format traces: run once, output stored beside it (counts.json).

For every file of a folder — testdata/native (the files make_native.py builds: counts.json) or the shared
corpus's native samples (../shared/traces/native, real files from other repositories, not copied here:
corpus_counts.json, keys relative to that folder) — reads the file with Python's own sqlite3 / json / csv modules — no code of the Rust
readers — and writes per file: kernels, copies and fills (count, Σ duration in ns, Σ bytes), API calls,
marker ranges, and, where kl1 step markers are present, each step's kernels, Σ kernel ns, copies and
fills. The definitions are the ones docs/native-formats.md states:
  * GPU ops: nsys kernel rows + graph-trace rows (kernels), memcpy rows, memset rows; rocprofv3, rocpd
    and RPD kernels named `__amd_rocclr_fill*` are fills and `__amd_rocclr_copy*` copies; RPD op types
    KernelExecution/Task (kernels), Copy* (copies), FillBuffer (fills); rpd2tracing ops by args.desc;
  * a GPU op's launch: the API call with its correlation id in the same process (nsys: the kernel's
    globalPid = the call's globalTid & 0xFFFFFFFFFF000000; RPD: rocpd_api_ops; rpd2tracing: the flow
    pair, whose start lies within [call start − 2 µs, call end + 1 µs]);
  * rocprofv3 JSON and CSV dispatches' registers and LDS (`kernel_resources`: how many dispatches have
    each, and their sum), the rule of docs/native-formats.md: registers the kernel symbol's
    arch_vgpr_count (JSON) or the VGPR_Count column (CSV); shared memory the dispatch's
    group_segment_size (JSON), the Group_Segment_Size column, or Lds_Block_Size in rocpd's export (a
    Guid column) — never rocprofv3's own LDS_Block_Size (its symbol's static LDS rounded to 512 bytes);
  * steps: ranges whose whole name matches the kl1 marker (else the TraceLens `execute_…` one),
    ordered by (start, longer first); an op is
    in the step of its launch's process whose range holds the launch's start (the latest-starting).

    python3 testdata/native/count_native.py testdata/native > testdata/native/counts.json
    python3 testdata/native/count_native.py ../shared/traces/native > testdata/native/corpus_counts.json
"""
import csv
import gzip
import json
import re
import sqlite3
import sys
from decimal import Decimal
from pathlib import Path

KL1 = re.compile(r"kl1\.step#(\d+) phase=(decode|prefill) rows=(\d+)(?: requests=(\d+))?")
TRACELENS = re.compile(r"execute_\d+_context_\d+\(sq\d+sk\d+sqsq\d+sqsk\d+\)_generation_\d+\(sq\d+sk\d+sqsq\d+sqsk\d+\)")
ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)


def kind_of_amd(name, default="kernel"):
    if name.startswith("__amd_rocclr_fill"):
        return "memset"
    if name.startswith("__amd_rocclr_copy"):
        return "memcpy"
    return default


def summarize(ops, launches, markers, calls):
    """ops: (kind, start, end, bytes, launch_key); launches: key -> (pid, ts) of the calls that link;
    markers: (pid, name, start, end); calls: how many API call rows the file has."""
    out = {"launches": calls, "markers": len(markers)}
    for k in ("kernel", "memcpy", "memset"):
        mine = [o for o in ops if o[0] == k]
        out[k + "s"] = len(mine)
        out[k + "_sum_ns"] = sum(o[2] - o[1] for o in mine)
        out[k + "_bytes"] = sum(o[3] or 0 for o in mine)
    # The built-in profiles in their order: the first that finds a marker gives the steps.
    steps = [m for m in markers if KL1.fullmatch(m[1])] or [m for m in markers if TRACELENS.fullmatch(m[1])]
    steps.sort(key=lambda m: (m[2], -(m[3] - m[2])))
    rows = [{"name": m[1], "kernels": 0, "kernel_sum_ns": 0, "memcpys": 0, "memsets": 0} for m in steps]
    outside = 0
    for kind, start, end, _, key in ops:
        launch = launches.get(key)
        if launch is None:
            continue
        pid, ts = launch
        best = None
        for i, (mpid, _, ms, me) in enumerate(steps):
            if mpid == pid and ms <= ts < me and (best is None or ms >= steps[best][2]):
                best = i
        if best is None:
            outside += kind == "kernel"
            continue
        r = rows[best]
        if kind == "kernel":
            r["kernels"] += 1
            r["kernel_sum_ns"] += end - start
        else:
            r[kind + "s"] += 1
    if steps:
        out["steps"] = rows
        out["kernels_outside_steps"] = outside
    return out


def sql(path):
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
    return c, tables


def nsys(path):
    c, t = sql(path)
    s = dict(c.execute("SELECT id, value FROM StringIds"))
    ops, launches, markers = [], {}, []
    mask = 0xFFFFFFFFFF000000
    for table, kind in [("CUPTI_ACTIVITY_KIND_KERNEL", "kernel"), ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "kernel"),
                        ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")]:
        if table not in t:
            continue
        cols = {r[1] for r in c.execute(f"PRAGMA table_info({table})")}
        b = "bytes" if "bytes" in cols else "NULL"
        for start, end, pid, corr, nbytes in c.execute(
                f'SELECT start, "end", globalPid, correlationId, {b} FROM {table}'):
            ops.append((kind, start, end, nbytes, (pid & mask, corr)))
    calls = 0
    for table in ("CUPTI_ACTIVITY_KIND_RUNTIME",):
        for start, tid, corr in c.execute(f"SELECT start, globalTid, correlationId FROM {table}"):
            launches[(tid & mask, corr)] = ((tid >> 24) & 0xFFFFFF, start)
            calls += 1
    if "NVTX_EVENTS" in t:
        ranges = {r[0] for r in c.execute(
            "SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE name IN ('NvtxPushPopRange', 'NvtxStartEndRange')")} \
            if "ENUM_NSYS_EVENT_TYPE" in t else {59, 60}
        for start, end, et, text, tid, gt in c.execute(
                'SELECT start, "end", eventType, text, textId, globalTid FROM NVTX_EVENTS'):
            if et in ranges and end is not None:
                markers.append(((gt >> 24) & 0xFFFFFF, text if text is not None else s.get(tid, ""), start, end))
    return summarize(ops, launches, markers, calls)


def rocpd(path):
    # The link is rocpd_event.stack_id: generateRocpd.cpp writes the internal correlation id there and the
    # external one (0 unless a tool sets it) in correlation_id, the views' corr_id.
    c, t = sql(path)
    ops, launches, markers, calls = [], {}, [], 0
    for name, start, end, guid, pid, corr in c.execute(
            'SELECT name, start, "end", guid, pid, stack_id FROM kernels'):
        ops.append((kind_of_amd(name), start, end, None, (guid, pid, corr)))
    for start, end, guid, pid, corr, size in c.execute(
            'SELECT start, "end", guid, pid, stack_id, size FROM memory_copies'):
        ops.append(("memcpy", start, end, size, (guid, pid, corr)))
    for cat, name, start, end, guid, pid, corr, ext in c.execute(
            'SELECT category, name, start, "end", guid, pid, stack_id, extdata FROM regions'):
        if cat.startswith("MARKER"):
            if end > start:
                markers.append((pid, json.loads(ext or "{}").get("message", name), start, end))
        elif cat.startswith("HIP") or cat.startswith("HSA"):
            launches[(guid, pid, corr)] = (pid, start)
            calls += 1
    return summarize(ops, launches, markers, calls)


def rpd(path):
    c, t = sql(path)
    s = dict(c.execute("SELECT id, string FROM rocpd_string"))
    us = dict(c.execute("SELECT id, string FROM rocpd_ustring")) if "rocpd_ustring" in t else s
    api_of = {}
    for api, op in c.execute("SELECT api_id, op_id FROM rocpd_api_ops ORDER BY id"):
        api_of.setdefault(op, api)
    # A size the tracer bound as '' is no size.
    size = {a: (n if n != "" else None) for a, n in c.execute("SELECT api_ptr_id, size FROM rocpd_copyapi")} \
        if "rocpd_copyapi" in t else {}
    ops, launches, markers = [], {}, []
    for oid, start, end, desc, op_type in c.execute(
            'SELECT id, start, "end", description_id, opType_id FROM rocpd_op'):
        op_type, desc = s[op_type], s[desc]
        if op_type in ("KernelExecution", "Task"):
            kind = kind_of_amd(desc)
        elif op_type.startswith("Copy"):
            kind = "memcpy"
        elif op_type == "FillBuffer":
            kind = "memset"
        else:
            continue
        api = api_of.get(oid)
        ops.append((kind, start, end, size.get(api) if kind == "memcpy" else None, api))
    cols = {r[1] for r in c.execute("PRAGMA table_info(rocpd_api)")}
    domain = "domain_id" if "domain_id" in cols else "NULL"
    for aid, pid, start, end, name, args, dom in c.execute(
            f'SELECT id, pid, start, "end", apiName_id, args_id, {domain} FROM rocpd_api'):
        # The tracer's own overhead records are not API calls: domain rpd_tracer (schema 3), or, with no
        # domain (schema 2), named after its C++ methods or activity callbacks, its flush (rpdflush), or a
        # full table's wait for its writer (BLOCKING): rocmProfileData's createOverheadRecord calls.
        if (s.get(dom) == "rpd_tracer") if dom is not None else (
                "::" in s[name] or s[name].endswith("_activity_callback")
                or s[name] in ("rpdflush", "BLOCKING")):
            continue
        if s[name] == "UserMarker":
            if end > start:
                markers.append((pid, us.get(args, s.get(args, "")), start, end))
        else:
            launches[aid] = (pid, start)
    return summarize(ops, launches, markers, len(launches))


def resources(pairs):
    """(registers, shared memory) of each dispatch, None where absent: the counts and sums."""
    regs = [r for r, _ in pairs if r is not None]
    lds = [s for _, s in pairs if s is not None]
    return {"registers": len(regs), "registers_sum": sum(regs), "shared_memory": len(lds),
            "shared_memory_sum": sum(lds)}


def rocprofv3_json(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    ops, launches, markers, calls, res = [], {}, [], 0, []
    for n, p in enumerate(doc["rocprofiler-sdk-tool"]):
        pid = p["metadata"].get("pid", n)
        names = {k["kernel_id"]: k["demangled_kernel_name"] or k["formatted_kernel_name"] or k["kernel_name"]
                 for k in p["kernel_symbols"]}
        vgprs = {k["kernel_id"]: k.get("arch_vgpr_count") for k in p["kernel_symbols"]}
        kinds = p["strings"]["buffer_records"]
        msgs = {kv["key"]: kv["value"] for kv in p["strings"].get("marker_api", [])}
        br = p["buffer_records"]
        for d in br.get("kernel_dispatch", []):
            name = names.get(d["dispatch_info"]["kernel_id"], "")
            ops.append((kind_of_amd(name), d["start_timestamp"], d["end_timestamp"], None,
                        (n, d["correlation_id"]["internal"])))
            res.append((vgprs.get(d["dispatch_info"]["kernel_id"]), d["dispatch_info"].get("group_segment_size")))
        for m in br.get("memory_copy", []):
            ops.append(("memcpy", m["start_timestamp"], m["end_timestamp"], m.get("bytes"),
                        (n, m["correlation_id"]["internal"])))
        for a in br.get("hip_api", []) + br.get("hsa_api", []):
            launches[(n, a["correlation_id"]["internal"])] = (pid, a["start_timestamp"])
            calls += 1
        for m in br.get("marker_api", []):
            if m["end_timestamp"] > m["start_timestamp"]:
                op = kinds[m["kind"]]["operations"][m["operation"]]
                markers.append((pid, msgs.get(m["correlation_id"]["internal"], op), m["start_timestamp"],
                                m["end_timestamp"]))
    return {**summarize(ops, launches, markers, calls), "kernel_resources": resources(res)}


def rows(path):
    with open(path, newline="") as f:
        r = csv.reader(f)
        head = [re.sub(r"[^a-z0-9]", "", h.lower()) for h in next(r)]
        return [dict(zip(head, row)) for row in r if row]


def rocprofv3_csv(kernel_file):
    prefix = kernel_file.name[: -len("kernel_trace.csv")]
    ops, launches, markers, calls, res = [], {}, [], 0, []
    cell = lambda r, c: int(r[c]) if r.get(c, "") != "" else None  # noqa: E731
    for r in rows(kernel_file):
        ops.append((kind_of_amd(r["kernelname"]), int(r["starttimestamp"]), int(r["endtimestamp"]), None,
                    int(r["correlationid"])))
        lds = cell(r, "groupsegmentsize") if "groupsegmentsize" in r else \
            cell(r, "ldsblocksize") if "guid" in r else None
        res.append((cell(r, "vgprcount"), lds))
    for f in sorted(kernel_file.parent.glob(prefix + "*.csv")):
        if f == kernel_file:
            continue
        for r in rows(f):
            if "direction" in r:
                ops.append(("memcpy", int(r["starttimestamp"]), int(r["endtimestamp"]), None,
                            int(r["correlationid"])))
            elif "domain" in r:
                start, end, pid = int(r["starttimestamp"]), int(r["endtimestamp"]), int(r["processid"])
                if r["domain"].startswith("MARKER"):
                    if end > start:
                        markers.append((pid, r["function"], start, end))
                elif not r["domain"].startswith("RCCL"):
                    launches[int(r["correlationid"])] = (pid, start)
                    calls += 1
    return {**summarize(ops, launches, markers, calls), "kernel_resources": resources(res)}


def us_to_ns(text):
    return int((Decimal(str(text)) * 1000).to_integral_value())


def chrome_array(path):
    text = path.read_text().rstrip()
    if not text.endswith("]"):
        text = text.rstrip(",") + "]"
    events = [e for e in json.loads(text) if e]
    gpu_pids = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
                and e["args"]["name"].upper().startswith("GPU")}
    ops, calls, markers, starts, finishes = [], [], [], {}, {}
    kinds = {"KernelExecution": "kernel", "Task": "kernel", "FillBuffer": "memset"}
    for e in events:
        ph = e.get("ph")
        if ph in ("s", "f"):
            (starts if ph == "s" else finishes)[e["id"]] = (e["pid"], e["tid"], us_to_ns(e["ts"]))
        if ph != "X":
            continue
        ts, end = us_to_ns(e["ts"]), us_to_ns(e["ts"]) + us_to_ns(e["dur"])
        desc = (e.get("args") or {}).get("desc", "")
        kind = kinds.get(desc, "memcpy" if desc.startswith("Copy") else None)
        if kind:
            ops.append([kind, ts, end, None, None, e["pid"], e["tid"]])
        elif e["pid"] in gpu_pids:
            continue
        elif re.fullmatch(r"(hip|hsa_|cuda|cu|nccl|rccl)\w+", e["name"]):
            calls.append((e["pid"], e["tid"], ts, end))
        else:
            markers.append((int(e["pid"]), e["name"], ts, end))
    launches = {}
    for fid, (pid, tid, ts) in starts.items():
        if fid not in finishes:
            continue
        fpid, ftid, fts = finishes[fid]
        op = next((o for o in ops if o[4] is None and (o[5], o[6], o[1]) == (fpid, ftid, fts)), None)
        cands = [c for c in calls if (c[0], c[1]) == (pid, tid) and c[2] <= ts + 2000 and c[3] >= ts - 1000]
        if op is None or not cands:
            continue
        call = max(cands, key=lambda c: c[2])
        op[4] = call
        launches[call] = (int(call[0]), call[2])
    return summarize([tuple(o[:5]) for o in ops], launches, markers, len(calls))


def sniff(path):
    head = path.read_bytes()[:64] if path.suffix != ".gz" else gzip.open(path).read(64)
    if head.startswith(b"SQLite format 3\0"):
        c, t = sql(path)
        if "rocpd_op" in t:
            return rpd
        if "rocpd_info_agent" in t:
            return rocpd
        return nsys
    if head.lstrip().startswith(b"["):
        return chrome_array
    if b"rocprofiler-sdk-tool" in head:
        return rocprofv3_json
    return None


out = {}
for p in sorted(ROOT.rglob("*")):
    rel = p.relative_to(ROOT).as_posix()
    if p.is_dir() or p.name in ("truth.json", "counts.json", "corpus_counts.json") or p.suffix == ".py" or "LICENSE" in p.name:
        continue
    if p.name.endswith("kernel_trace.csv"):
        out[rel] = rocprofv3_csv(p)
        continue
    if p.suffix == ".csv":
        continue
    reader = sniff(p)
    if reader:
        out[rel] = reader(p)
print(json.dumps(out, indent=1, sort_keys=True))
