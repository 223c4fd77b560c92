#!/usr/bin/env python3
"""Small Perfetto protobuf traces written with a hand-written wire-format encoder (no generated code,
no protobuf library), and their counts from a hand-written wire-format walker.

    python3 testdata/native/perfetto/perfetto_counts.py testdata/native/perfetto

writes rocprofv3_layout.pftrace, gpu_stages.pftrace, truncated.pftrace and counts.json: per file the
kernels, copies and fills with their summed ns, the runtime calls, CPU ops, user annotations (names),
GPU ops linked to a call, packets skipped for lost incremental state, and for the cut file the byte
offset of the cut packet. The rules are those of docs/native-formats.md ("Perfetto"), applied here to
the raw fields:

* a TrackEvent slice (begin/end on one track) by its first category: kernel_dispatch → kernel,
  memory_copy → copy, hip_api/cuda_runtime → call, marker_api → annotation, others → CPU op (or an
  annotation when named ProfilerStep#N); names and categories by iid from the sequence's interned data,
  cleared by SEQ_INCREMENTAL_STATE_CLEARED; a packet with SEQ_NEEDS_INCREMENTAL_STATE after a loss is
  skipped;
* a GpuRenderStageEvent: a kernel when it has kernel_iid, a copy when its stage's name says Copy;
* times: a packet's clock (its own, else its sequence defaults', else BOOTTIME) moved onto BOOTTIME
  through the clock snapshot: t_boot = snap_boot + (t - snap_clock).

Field numbers are those of google/perfetto's protos/perfetto/trace/ (Apache-2.0): trace_packet.proto,
track_event/*.proto, interned_data/interned_data.proto, clock_snapshot.proto,
gpu/gpu_render_stage_event.proto, gpu/gpu_interned_data.proto, gpu/gpu_track_event.proto.
"""
import json
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from protowire import fields, grouped, len_field as lfield, read_varint, varint  # noqa: E402


# ---- writing ---------------------------------------------------------------------------------------

def vfield(n, v):
    return varint(n << 3) + varint(v)


def fixed64(n, v):
    return varint(n << 3 | 1) + v.to_bytes(8, "little")


def packet(*fields):
    return lfield(1, b"".join(fields))


BOOTTIME, MONOTONIC = 6, 3
CLEARED, NEEDS = 1, 2


def clock_snapshot(seq, boot, mono):
    clocks = lfield(1, vfield(1, BOOTTIME) + vfield(2, boot)) + lfield(1, vfield(1, MONOTONIC) + vfield(2, mono))
    return packet(vfield(10, seq), lfield(6, clocks))


def interned(kind, iid, name):
    return lfield(kind, vfield(1, iid) + lfield(2, name))


NAMES, CATEGORIES = 2, 1


def track_desc(uuid, name=None, parent=None, pid=None, tid=None):
    body = vfield(1, uuid)
    if name is not None:
        body += lfield(2, name)
    if parent is not None:
        body += vfield(5, parent)
    if tid is not None:
        body += lfield(4, vfield(1, pid) + vfield(2, tid))
    elif pid is not None:
        body += lfield(3, vfield(1, pid))
    return packet(vfield(10, 1), lfield(60, body))


def track_event(seq, ts, typ, track, name_iid=None, name=None, cat_iid=None, flow=None, flags=NEEDS, extra=b"",
                corr_submit=None, cat=None):
    body = vfield(9, typ) + vfield(11, track)
    if cat is not None:
        body += lfield(22, cat)
    if name_iid is not None:
        body += vfield(10, name_iid)
    if name is not None:
        body += lfield(23, name)
    if cat_iid is not None:
        body += vfield(3, cat_iid)
    if flow is not None:
        body += fixed64(47, flow)
    if corr_submit is not None:
        body += lfield(3000, vfield(1, corr_submit))
    return packet(vfield(8, ts), vfield(10, seq), vfield(13, flags), lfield(11, body), extra)


def slice_(seq, begin, end, track, **kw):
    return track_event(seq, begin, 1, track, **kw) + track_event(seq, end, 2, track)


def rocprofv3_layout():
    """rocprofv3's pftrace layout (rocprofiler-sdk source/lib/output/generatePerfetto.cpp): thread
    tracks for the API calls, `COMPUTE AGENT [n] STREAM [s] (GPU)` and `COPY to AGENT …` tracks for
    dispatches and copies, one flow id per correlation id; here with MONOTONIC packet times (the
    sequence's defaults) moved onto BOOTTIME by the snapshot (BOOTTIME = MONOTONIC + 600,000)."""
    seq = 7
    out = clock_snapshot(1, 1_000_000, 400_000)
    out += track_desc(100, pid=4242)
    out += track_desc(101, pid=4242, tid=4243)
    out += track_desc(200, "COMPUTE AGENT [1] STREAM [0] (GPU)", parent=100)
    out += track_desc(201, "COPY to AGENT [1] STREAM [0] (GPU)", parent=100)
    defaults = lfield(59, vfield(58, MONOTONIC))
    first = b"".join([
        interned(CATEGORIES, 1, "marker_api"), interned(CATEGORIES, 2, "hip_api"),
        interned(CATEGORIES, 3, "kernel_dispatch"), interned(CATEGORIES, 4, "memory_copy"),
        interned(NAMES, 1, "ProfilerStep#0"), interned(NAMES, 2, "hipLaunchKernel"),
    ])
    # The first packet clears the state, sets the defaults and interns; the names of later ones come
    # from it and from what later packets intern (interned names across packets).
    out += track_event(seq, 500_000, 1, 101, name_iid=1, cat_iid=1, flags=CLEARED | NEEDS,
                       extra=defaults + lfield(12, first))
    out += slice_(seq, 500_100, 500_400, 101, name_iid=2, cat_iid=2, flow=11)
    more = interned(NAMES, 3, "_Z6gemm_kPf") + interned(NAMES, 4, "MEMORY_COPY_HOST_TO_DEVICE") + \
        interned(NAMES, 5, "hipMemcpyAsync")
    out += track_event(seq, 500_600, 1, 200, name_iid=3, cat_iid=3, flow=11, extra=lfield(12, more))
    out += track_event(seq, 502_600, 2, 200)
    out += slice_(seq, 502_700, 502_800, 101, name_iid=5, cat_iid=2, flow=12)
    out += slice_(seq, 502_900, 503_900, 201, name_iid=4, cat_iid=4, flow=12)
    out += slice_(seq, 504_000, 504_050, 101, name="forward", flags=0)   # no category: CPU op
    out += track_event(seq, 504_100, 3, 101, name="mark", flags=0)       # an instant
    out += track_event(seq, 505_000, 2, 101)                             # ends ProfilerStep#0
    # A loss: this packet needs the state, which is unknown now: skipped (a slice of 1,000 ns lost).
    out += packet(vfield(8, 506_000), vfield(10, seq), vfield(13, NEEDS), vfield(42, 1),
                  lfield(11, vfield(9, 1) + vfield(11, 101) + vfield(10, 2)))
    # The state cleared again: iid 1 now names ProfilerStep#1, iid 2 a kernel of another name.
    again = b"".join([
        interned(CATEGORIES, 1, "marker_api"), interned(CATEGORIES, 3, "kernel_dispatch"),
        interned(NAMES, 1, "ProfilerStep#1"), interned(NAMES, 2, "fusion_add_kernel"),
    ])
    out += track_event(seq, 510_000, 1, 101, name_iid=1, cat_iid=1, flags=CLEARED | NEEDS,
                       extra=defaults + lfield(12, again))
    out += slice_(seq, 510_100, 510_600, 200, name_iid=2, cat_iid=3)
    out += track_event(seq, 511_000, 2, 101)
    return out


def gpu_stages():
    """GpuRenderStageEvents with the 2026 compute-kernel fields (kernel_iid, launch with typed args),
    a copy stage, the CUDA call that submitted the kernel (gpu_correlation), in BOOTTIME; the stage
    packets deflated into one compressed_packets packet."""
    seq = 3
    specs = lfield(24, vfield(1, 1) + lfield(2, "compute queue")) + \
        lfield(24, vfield(1, 2) + lfield(2, "dispatch") + vfield(4, 2)) + \
        lfield(24, vfield(1, 3) + lfield(2, "Copy"))
    kernel = lfield(1000, vfield(1, 5) + lfield(2, "_Z4axpyPfS_") + lfield(3, "axpy(float*, float*)"))
    argname = lfield(1001, vfield(1, 1) + lfield(2, "registers_per_thread"))
    context = lfield(23, vfield(1, 77) + vfield(2, 999))
    out = track_desc(300, pid=999, tid=1000)
    out += packet(vfield(8, 2_000_000), vfield(10, seq), vfield(13, CLEARED),
                  lfield(12, specs + kernel + argname + context))
    launch = lfield(1, vfield(1, 4) + vfield(2, 1) + vfield(3, 1)) + \
        lfield(2, vfield(1, 256) + vfield(2, 1) + vfield(3, 1)) + \
        lfield(3, vfield(1, 1) + vfield(4, 32)) + \
        lfield(3, lfield(2, "shared_mem_static") + vfield(4, 1024)) + \
        lfield(3, lfield(2, "shared_mem_dynamic") + vfield(3, 512))
    stage_k = vfield(1, 9001) + vfield(2, 3_000) + vfield(13, 1) + vfield(14, 2) + vfield(11, 0) + \
        vfield(5, 77) + vfield(19, 5) + lfield(21, launch)
    stage_c = vfield(1, 9002) + vfield(2, 700) + vfield(13, 1) + vfield(14, 3) + vfield(11, 0) + vfield(5, 77)
    inner = packet(vfield(8, 2_001_000), vfield(10, seq), vfield(13, NEEDS), lfield(53, stage_k)) + \
        packet(vfield(8, 2_005_000), vfield(10, seq), vfield(13, NEEDS), lfield(53, stage_c))
    # The call that submitted the kernel: a string category (categories = 22), not interned.
    out += slice_(seq, 2_000_500, 2_000_900, 300, name="cudaLaunchKernel", cat="cuda_runtime", flags=0,
                  corr_submit=9001)
    out += packet(vfield(10, seq), lfield(50, zlib.compress(inner)))
    return out


# ---- reading (independent of the writer above: a generic wire walker and the rules) -------------

def one(d, n, default=None):
    return d.get(n, [default])[0]


def top_packets(data):
    """Packets in order, compressed ones opened."""
    out = []
    for _, n, v in fields(data):
        if n != 1:
            continue
        d = grouped(v)
        if 50 in d:
            out.extend(top_packets(zlib.decompress(d[50][0])))
        out.append(d)
    return out


def count(data):
    packets = top_packets(data)
    tracks = {}
    snapshot = None
    for d in packets:
        if 60 in d:
            t = grouped(d[60][0])
            tracks[one(t, 1)] = t
        if 6 in d and snapshot is None:
            snapshot = {one(grouped(c), 1): one(grouped(c), 2) for c in grouped(d[6][0]).get(1, [])}

    def boot(ts, clock):
        return ts if clock == BOOTTIME else snapshot[BOOTTIME] + ts - snapshot[clock]

    def track_pid(uuid):
        t = tracks.get(uuid)
        while t is not None:
            for f in (3, 4):
                if f in t:
                    return one(grouped(t[f][0]), 1)
            t = tracks.get(one(t, 5))
        return None

    c = {k: 0 for k in ["kernels", "kernel_sum_ns", "memcpys", "memcpy_sum_ns", "memsets", "memset_sum_ns",
                        "launches", "launch_sum_ns", "cpu_ops", "cpu_op_sum_ns", "skipped_packets",
                        "linked_gpu_ops", "instants"]}
    c["user_annotations"] = []
    c["kernel_names"] = []
    c["gpu_op_processes"] = []
    seqs = {}
    open_slices = {}
    calls, gpu = set(), []
    for d in packets:
        seq_id = one(d, 10, 0)
        s = seqs.setdefault(seq_id, {"valid": False, "names": {}, "cats": {}, "stages": {}, "kernels": {},
                                     "contexts": {}, "clock": None})
        flags = one(d, 13, 0)
        if one(d, 42, 0):
            s["valid"] = False
        if flags & CLEARED:
            s.update(valid=True, names={}, cats={}, stages={}, kernels={}, contexts={}, clock=None)
        if flags & NEEDS and not s["valid"]:
            c["skipped_packets"] += 1
            continue
        if 59 in d:
            s["clock"] = one(grouped(d[59][0]), 58)
        for idata in d.get(12, []):
            g = grouped(idata)
            for field, table in ((2, "names"), (1, "cats"), (24, "stages"), (1000, "kernels")):
                for e in g.get(field, []):
                    e = grouped(e)
                    name = (one(e, 3) or one(e, 2)).decode() if field == 1000 else one(e, 2).decode()
                    s[table][one(e, 1)] = name
            for e in g.get(23, []):
                e = grouped(e)
                s["contexts"][one(e, 1)] = one(e, 2)
        if 8 not in d:
            continue
        ts = boot(one(d, 8), one(d, 58) or s["clock"] or BOOTTIME)
        if 11 in d:
            e = grouped(d[11][0])
            typ, track = one(e, 9), one(e, 11)
            if typ == 1:
                name = one(e, 23).decode() if 23 in e else s["names"][one(e, 10)]
                cat = one(e, 22).decode() if 22 in e else s["cats"].get(one(e, 3), "")
                corr = ("stage", grouped(e[3000][0])[1][0]) if 3000 in e else ("flow", one(e, 47))
                open_slices.setdefault(track, []).append((name, cat, ts, corr))
            elif typ == 2:
                name, cat, begin, corr = open_slices[track].pop()
                dur = ts - begin
                if cat == "kernel_dispatch":
                    c["kernels"] += 1
                    c["kernel_sum_ns"] += dur
                    c["kernel_names"].append(name)
                    gpu.append(corr)
                    c["gpu_op_processes"].append(track_pid(track))
                elif cat == "memory_copy":
                    c["memcpys"] += 1
                    c["memcpy_sum_ns"] += dur
                    gpu.append(corr)
                    c["gpu_op_processes"].append(track_pid(track))
                elif cat in ("hip_api", "cuda_runtime"):
                    c["launches"] += 1
                    c["launch_sum_ns"] += dur
                    calls.add(corr)
                elif cat == "marker_api" or name.startswith("ProfilerStep#"):
                    c["user_annotations"].append(name)
                else:
                    c["cpu_ops"] += 1
                    c["cpu_op_sum_ns"] += dur
            elif typ == 3:
                c["instants"] += 1
        if 53 in d:
            e = grouped(d[53][0])
            dur = one(e, 2, 0)
            if 19 in e:
                c["kernels"] += 1
                c["kernel_sum_ns"] += dur
                c["kernel_names"].append(s["kernels"][one(e, 19)])
            elif "Copy" in s["stages"][one(e, 14)]:
                c["memcpys"] += 1
                c["memcpy_sum_ns"] += dur
            gpu.append(("stage", one(e, 1)))
            c["gpu_op_processes"].append(s["contexts"].get(one(e, 5)))
    c["linked_gpu_ops"] = sum(1 for g in gpu if g[1] is not None and g in calls)
    return c


def cut_offset(data):
    """The byte where the first packet that runs past the end starts."""
    i = 0
    while i < len(data):
        start = i
        _, i = read_varint(data, i)
        n, i = read_varint(data, i)
        if i + n > len(data):
            return start
        i += n
    return None


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
    files = {"rocprofv3_layout.pftrace": rocprofv3_layout(), "gpu_stages.pftrace": gpu_stages()}
    whole = files["rocprofv3_layout.pftrace"]
    # Cut 5 bytes into the fourth packet's body (a track descriptor).
    starts = [s for s, n, _ in fields(whole)]
    files["truncated.pftrace"] = whole[:starts[3] + 5]
    counts = {}
    for name, data in files.items():
        (out / name).write_bytes(data)
        counts[name] = {"fault_offset": cut_offset(data)} if name.startswith("truncated") else count(data)
    (out / "counts.json").write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
