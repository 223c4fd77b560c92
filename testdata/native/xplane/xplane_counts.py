#!/usr/bin/env python3
"""Counts of XPlane protobuf files, from a hand-written protobuf wire-format walker (no generated code,
no protobuf library), and the small XPlane files the tests read, written by the same wire format.

    python3 testdata/native/xplane/xplane_counts.py testdata/native/xplane [../shared/traces/native/xplane]

writes the generated files (multi_gpu.xplane.pb, truncated.xplane.pb, copies_steps.xplane.pb) and
counts.json: per file, each plane's lines and their event counts, and what the reader's rules make of
them (docs/native-formats.md, "XPlane"), computed here from the raw fields:

* a `/device:GPU:N` plane's `Stream #S` line: an event with a `kernel_details` stat is a kernel
  (an `__amd_rocclr_fill*`/`copy*` one a fill/copy), `memcpy_details` or a `Memcpy*` name a copy,
  `memset_details` or `Memset*` a fill; its other lines are GPU annotations;
* a `/host:*` plane: an event with a `correlation_id` stat is a launch, one with `step_num` a step
  annotation, the rest CPU ops;
* times: line timestamp_ns + offset_ps // 1000; durations duration_ps // 1000.

Field numbers are those of xplane.proto (openxla/xla, xla/tsl/profiler/protobuf/xplane.proto).
"""
import json
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from protowire import fields, grouped, len_field as f_bytes, varint as enc_varint  # noqa: E402


# ---- reading -------------------------------------------------------------------------------------

def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def first(d, n, default):
    return d.get(n, [default])[0]


def stat_value(stat, stat_names):
    """An XStat's value: int for fields 3/4, float for 2, str for 5/6, the referenced name for 7."""
    d = grouped(stat)
    if 3 in d:
        return d[3][0]
    if 4 in d:
        return signed(d[4][0])
    if 2 in d:
        return struct.unpack("<d", d[2][0])[0]
    if 5 in d or 6 in d:
        return (d.get(5) or d.get(6))[0].decode("utf-8", "replace")
    if 7 in d:
        return stat_names.get(d[7][0], "")
    return None


def read_plane(plane):
    d = grouped(plane)
    stat_names = {}
    for entry in d.get(5, []):
        e = grouped(entry)
        meta = grouped(first(e, 2, b""))
        stat_names[first(e, 1, 0)] = first(meta, 2, b"").decode("utf-8", "replace")
    events_meta = {}
    for entry in d.get(4, []):
        e = grouped(entry)
        meta = grouped(first(e, 2, b""))
        events_meta[first(e, 1, 0)] = meta

    def stats_of(stat_list):
        out = {}
        for s in stat_list:
            out[stat_names.get(first(grouped(s), 1, 0), "")] = stat_value(s, stat_names)
        return out

    name = first(d, 2, b"").decode("utf-8", "replace")
    lines = []
    for line in d.get(3, []):
        ld = grouped(line)
        events = []
        for ev in ld.get(4, []):
            ed = grouped(ev)
            meta = events_meta.get(signed(first(ed, 1, 0)), {})
            stats = stats_of(meta.get(5, []))
            stats.update(stats_of(ed.get(4, [])))
            ev_name = (first(meta, 2, b"") or first(meta, 4, b"")).decode("utf-8", "replace")
            start = signed(first(ld, 3, 0)) + signed(first(ed, 2, 0)) // 1000
            events.append({"name": ev_name, "ts": start, "dur": signed(first(ed, 3, 0)) // 1000, "stats": stats})
        line_name = (first(ld, 2, b"") or first(ld, 11, b"")).decode("utf-8", "replace")
        lines.append({"name": line_name, "events": events})
    return {"name": name, "lines": lines, "stats": stats_of(d.get(6, []))}


def stream_of(line_name):
    if not line_name.startswith("Stream #"):
        return None
    digits = ""
    for c in line_name[len("Stream #"):]:
        if not c.isdigit():
            break
        digits += c
    return int(digits) if digits else None


def gpu_kind(ev):
    s, name = ev["stats"], ev["name"]
    if "kernel_details" in s:
        bare = name[:-3] if name.endswith(".kd") else name
        if bare.startswith("__amd_rocclr_fill"):
            return "memset"
        if bare.startswith("__amd_rocclr_copy"):
            return "memcpy"
        return "kernel"
    if "memcpy_details" in s:
        return "memcpy"
    if "memset_details" in s:
        return "memset"
    if "memalloc_details" in s or "memfree_details" in s or name.startswith(("MemAlloc", "MemFree")):
        return "other"
    if name.startswith("Memcpy"):
        return "memcpy"
    if name.startswith("Memset"):
        return "memset"
    return "kernel"


def count(path):
    data = Path(path).read_bytes()
    planes = [read_plane(v) for _, n, v in fields(data) if n == 1]
    c = {"planes": [], "kernels": 0, "kernel_sum_ns": 0, "memcpys": 0, "memcpy_sum_ns": 0, "memsets": 0,
         "memset_sum_ns": 0, "launches": 0, "launch_sum_ns": 0, "cpu_ops": 0, "cpu_op_sum_ns": 0,
         "step_annotations": [], "gpu_annotations": 0, "kernels_by_device": {}, "devices": [],
         "kernels_with_launch": 0, "first_kernel": None}
    launch_ids = set()
    kernel_ids = []
    for p in planes:
        c["planes"].append({"name": p["name"], "lines": {l["name"]: len(l["events"]) for l in p["lines"]}})
        if p["name"].startswith("/device:GPU:"):
            gpu = int(p["name"][len("/device:GPU:"):])
            if not any(l["events"] for l in p["lines"]):
                continue
            c["devices"].append({"id": gpu, "num_sms": p["stats"].get("core_count"),
                                 "total_global_mem": p["stats"].get("memory_size")})
            for l in p["lines"]:
                if stream_of(l["name"]) is None:
                    c["gpu_annotations"] += len(l["events"])
                    continue
                for ev in l["events"]:
                    kind = gpu_kind(ev)
                    if kind == "other":
                        continue
                    c[kind + "s"] += 1
                    c[kind + "_sum_ns"] += ev["dur"]
                    if kind == "kernel":
                        c["kernels_by_device"][str(gpu)] = c["kernels_by_device"].get(str(gpu), 0) + 1
                        kernel_ids.append(ev["stats"].get("correlation_id"))
                        if c["first_kernel"] is None or ev["ts"] < c["first_kernel"]["ts"]:
                            c["first_kernel"] = {"ts": ev["ts"], "dur": ev["dur"], "stream": stream_of(l["name"])}
        elif p["name"].startswith("/host:"):
            for l in p["lines"]:
                for ev in l["events"]:
                    if "correlation_id" in ev["stats"]:
                        c["launches"] += 1
                        c["launch_sum_ns"] += ev["dur"]
                        launch_ids.add(ev["stats"]["correlation_id"])
                    elif "step_num" in ev["stats"]:
                        c["step_annotations"].append(f'{ev["name"]} step_num={ev["stats"]["step_num"]}')
                    else:
                        c["cpu_ops"] += 1
                        c["cpu_op_sum_ns"] += ev["dur"]
    c["kernels_with_launch"] = sum(1 for k in kernel_ids if k is not None and k in launch_ids)
    return c


# ---- writing -------------------------------------------------------------------------------------

def f_varint(n, v):
    return enc_varint(n << 3) + enc_varint(v) if v else b""


class PlaneWriter:
    """One XPlane: names interned into event and stat metadata, as the profiler writes them."""

    def __init__(self, plane_id, name):
        self.id, self.name = plane_id, name
        self.lines, self.events_meta, self.stats_meta, self.stats = [], {}, {}, []

    def stat_id(self, name):
        return self.stats_meta.setdefault(name, len(self.stats_meta) + 1)

    def stat(self, name, value):
        sid = self.stat_id(name)
        if isinstance(value, str):
            body = f_bytes(5, value)
        elif value < 0:
            body = f_varint(4, value)
        else:
            body = enc_varint(3 << 3) + enc_varint(value)
        return f_varint(1, sid) + body

    def event(self, name, offset_ps, dur_ps, **stats):
        mid = self.events_meta.setdefault(name, len(self.events_meta) + 1)
        body = f_varint(1, mid) + f_varint(2, offset_ps) + f_varint(3, dur_ps)
        for k, v in stats.items():
            body += f_bytes(4, self.stat(k, v))
        return body

    def line(self, line_id, name, timestamp_ns, events):
        body = f_varint(1, line_id) + f_bytes(2, name) + f_varint(3, timestamp_ns)
        for e in events:
            body += f_bytes(4, e)
        self.lines.append(body)

    def encode(self):
        body = f_varint(1, self.id) + f_bytes(2, self.name)
        for l in self.lines:
            body += f_bytes(3, l)
        for name, mid in self.events_meta.items():
            body += f_bytes(4, f_varint(1, mid) + f_bytes(2, f_varint(1, mid) + f_bytes(2, name)))
        for name, sid in self.stats_meta.items():
            body += f_bytes(5, f_varint(1, sid) + f_bytes(2, f_varint(1, sid) + f_bytes(2, name)))
        for s in self.stats:
            body += f_bytes(6, s)
        return body


def space(planes, hostname="host0"):
    return b"".join(f_bytes(1, p.encode()) for p in planes) + f_bytes(4, hostname)


def multi_gpu():
    """Two GPUs (NVIDIA CUPTI layout): kernels and a copy on each, launched from one host thread;
    a derived `XLA Ops` line; a step annotation; an event at offset 0 (left out by protobuf 3)."""
    host = PlaneWriter(1, "/host:CPU")
    gpus = [PlaneWriter(2 + g, f"/device:GPU:{g}") for g in range(2)]
    for g, gpu in enumerate(gpus):
        gpu.stats.append(gpu.stat("core_count", 132))
        gpu.stats.append(gpu.stat("memory_size", 80 * 2**30))
    launches = []
    corr = 0
    for g, gpu in enumerate(gpus):
        evs = []
        for k, (kname, off, dur) in enumerate([("loop_add_fusion", 0, 5_500), ("gemm_fusion_dot_1", 10_000, 20_000),
                                               ("input_reduce_fusion", 40_000, 3_000)]):
            corr += 1
            evs.append(gpu.event(kname, off * 1000, dur * 1000, correlation_id=corr,
                                 kernel_details=f"regs:32 static_shared:0 dynamic_shared:{1024 * g} grid:{k + 1},1,1 block:128,1,1"))
            launches.append(host.event("cuLaunchKernel", (off - 2_000 + 1000 * g) * 1000 + 500, 1_000_000, correlation_id=corr))
        corr += 1
        evs.append(gpu.event("MemcpyD2H", 50_000_000, 2_000_000, correlation_id=corr,
                             memcpy_details="kind_src:device kind_dst:pinned size:4096 dest:0 async:1"))
        launches.append(host.event("cudaMemcpyAsync", 45_000_000, 500_000, correlation_id=corr))
        gpu.line(2, "Stream #7(Compute,MemcpyD2H)", 1_000_000 + g, evs)
        gpu.line(100, "XLA Ops", 1_000_000 + g, [gpu.event("add.1", 0, 5_500_000), gpu.event("dot.2", 10_000_000, 20_000_000)])
    host.line(11, "main", 999_000, launches)
    host.line(12, "python", 990_000, [host.event("train", 0, 80_000_000, step_num=3, _r=1),
                                      host.event("$train.py:10 loss", 1_000, 70_000_000)])
    return space([host] + gpus)


def copies_steps():
    """One AMD GPU (ROCm layout): a rocclr fill kernel, a Memset event with memset_details, a kernel
    with no details stat, a MemAlloc event, and a TPU-like custom plane whose events are only counted."""
    gpu = PlaneWriter(3, "/device:GPU:0")
    evs = [gpu.event("__amd_rocclr_fillBufferAligned.kd", 1_000_000, 2_000_000, kernel_details="grid:1,1,1 block:256,1,1 group_mem:0"),
           gpu.event("Memset", 4_000_000, 1_000_000, memset_details="num_bytes:256 async:1"),
           gpu.event("Cijk_Ailk_Bljk_HHS_BH", 6_000_000, 7_000_400),
           gpu.event("MemAlloc", 20_000_000, 1_000)]
    gpu.line(1, "Stream #0", 5_000, evs)
    other = PlaneWriter(9, "/device:CUSTOM:Megascale Trace")
    other.line(1, "Region", 5_000, [other.event("ThreadpoolListener::Region", 0, 3_000_000)])
    return space([gpu, other])


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
    (out / "multi_gpu.xplane.pb").write_bytes(multi_gpu())
    whole = copies_steps()
    (out / "copies_steps.xplane.pb").write_bytes(whole)
    # Cut just after the tag and length of one event (GPU 0's second kernel): the fault the reader
    # names is that event's field, at the byte where its tag starts.
    data = multi_gpu()
    gpu0 = PlaneWriter(2, "/device:GPU:0")
    gpu0.stat("core_count", 132), gpu0.stat("memory_size", 1)
    gpu0.event("loop_add_fusion", 0, 1)  # interns the first kernel's name as the file does
    event = f_bytes(4, gpu0.event(
        "gemm_fusion_dot_1", 10_000_000, 20_000_000, correlation_id=2,
        kernel_details="regs:32 static_shared:0 dynamic_shared:0 grid:2,1,1 block:128,1,1"))
    at = data.find(event)
    assert at > 0 and data.count(event) == 1, "the event is found once"
    (out / "truncated.xplane.pb").write_bytes(data[:at + 2])
    truth_cut = {"cut_at": at + 2, "fault_offset": at}
    counts = {name: count(out / name) for name in ["multi_gpu.xplane.pb", "copies_steps.xplane.pb"]}
    for corpus in sys.argv[2:]:
        for f in sorted(Path(corpus).glob("*.xplane.pb")):
            counts["corpus/" + f.name] = count(f)
    counts["truncated.xplane.pb"] = truth_cut
    (out / "counts.json").write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
