#!/usr/bin/env python3
"""Small Perfetto protobuf traces written with a hand-written wire-format encoder (no generated code,
no protobuf library), and their counts from a hand-written wire-format walker.

    python3 testdata/native/perfetto/perfetto_counts.py testdata/native/perfetto

writes rocprofv3_layout.pftrace, gpu_stages.pftrace, rocprofv3_annotations.pftrace,
descriptors_first.pftrace, truncated.pftrace
and counts.json: per file the kernels, copies and fills with their summed ns, the runtime calls, CPU ops,
user annotations (names), GPU ops linked to a call, packets skipped for lost incremental state, the
copies' bytes and the kernels' launch shapes read from debug annotations (with the annotations not read),
and for the cut file the byte offset of the cut packet. The rules are those of docs/native-formats.md ("Perfetto"), applied here to
the raw fields:

* a TrackEvent slice (begin/end on one track) by its first category: kernel_dispatch → kernel,
  memory_copy → copy, hip_api/cuda_runtime → call, marker_api → annotation, others → CPU op (or an
  annotation when named ProfilerStep#N); names and categories by iid from the sequence's interned data,
  cleared by SEQ_INCREMENTAL_STATE_CLEARED; a packet with SEQ_NEEDS_INCREMENTAL_STATE after a loss is
  skipped;
* a GpuRenderStageEvent: a kernel when it has kernel_iid, a copy when its stage's name says Copy;
* a slice's debug annotations (TrackEvent field 4, on its begin or end, the first given kept), named
  plainly (name = 10) or by an iid of the sequence's debug_annotation_names (InternedData field 3,
  cleared with the rest): rocprofv3's copy_bytes on a copy, grid_size, workgroup_size, VGPR_Count and
  LDS_Block_Size on a kernel, read when they hold an unsigned integer (uint_value = 3, or a
  non-negative int_value = 4) that fits (64 bits for bytes, 32 for the rest); others are counted as
  not read (annotations_odd), as are annotations named by an iid not interned (annotations_unnamed);
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
                corr_submit=None, cat=None, body=b""):
    body = vfield(9, typ) + vfield(11, track) + body
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


ANNOTATION_NAMES = 3  # InternedData.debug_annotation_names


def annotation(name, value):
    """A DebugAnnotation (TrackEvent.debug_annotations = 4): `name` an int is an interned name's iid
    (name_iid = 1), a str the name itself (name = 10); `value` ("u", v) uint_value = 3, ("i", v)
    int_value = 4, ("s", v) string_value = 6 (the Perfetto SDK writes an unsigned C++ integer as
    uint_value, a signed one as int_value)."""
    body = vfield(1, name) if isinstance(name, int) else lfield(10, name)
    kind, v = value
    body += {"u": lambda: vfield(3, v), "i": lambda: vfield(4, v), "s": lambda: lfield(6, v)}[kind]()
    return lfield(4, body)


def annotated_slice(seq, begin, end, track, annotations=(), end_annotations=(), **kw):
    """A slice whose begin (and end) carry debug annotations, as rocprofv3's TRACE_EVENT_BEGIN does."""
    body = b"".join(annotation(n, v) for n, v in annotations)
    end_body = b"".join(annotation(n, v) for n, v in end_annotations)
    return track_event(seq, begin, 1, track, body=body, **kw) + track_event(seq, end, 2, track, body=end_body)


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


def descriptors_first():
    """Track descriptors in packets of their own with no sequence id, timestamp or other scalar field,
    before the first packet that has one, as the Rust `tracing-perfetto` crate writes them (a real
    file of it opens with five such packets); then one sequence's slices, named by string."""
    seq = 5
    out = b""
    for uuid, kw in [(700, {"pid": 31}), (701, {"pid": 31, "tid": 32}), (702, {"pid": 31, "tid": 33})]:
        # track_desc's packet without its trusted_packet_sequence_id (field 10).
        body = vfield(1, uuid) + (lfield(4, vfield(1, kw["pid"]) + vfield(2, kw["tid"])) if "tid" in kw
                                  else lfield(3, vfield(1, kw["pid"])))
        out += packet(lfield(60, body))
    out += slice_(seq, 1_000, 4_000, 701, name="main", flags=CLEARED)
    out += slice_(seq, 1_500, 2_500, 701, name="log event", flags=0)
    out += slice_(seq, 3_000, 3_200, 702, name="worker", flags=0)
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


def rocprofv3_annotations():
    """rocprofv3's debug annotations (rocprofiler-sdk source/lib/output/generatePerfetto.cpp): on a
    memory copy begin_ns, end_ns, delta_ns, kind, operation, src_agent, dst_agent (strings), copy_bytes,
    corr_id, tid, stream_ID; on a kernel dispatch also agent, queue, kernel_id, Scratch_Size,
    LDS_Block_Size, VGPR_Count, Accum_VGPR_Count, SGPR_Count, workgroup_size and grid_size (x*y*z
    products), all unsigned but the strings and the enum `kind`. The Perfetto SDK interns a static name
    (name_iid, debug_annotation_names); here also plain names, an end's annotations, values of another
    type or too large, a name iid never interned, and a clear that gives iids other names. BOOTTIME."""
    seq = 9
    out = track_desc(100, pid=5151)
    out += track_desc(101, pid=5151, tid=5152)
    out += track_desc(200, "COMPUTE AGENT [0] STREAM [1] (GPU)", parent=100)
    out += track_desc(201, "COPY to AGENT [0] THREAD [0] (GPU)", parent=100)
    names = ["begin_ns", "end_ns", "copy_bytes", "corr_id", "grid_size", "workgroup_size", "LDS_Block_Size",
             "VGPR_Count", "SGPR_Count", "Accum_VGPR_Count", "Scratch_Size", "src_agent", "kind"]
    iid = {n: k + 1 for k, n in enumerate(names)}
    first = b"".join([
        interned(CATEGORIES, 1, "hip_api"), interned(CATEGORIES, 2, "kernel_dispatch"),
        interned(CATEGORIES, 3, "memory_copy"),
        interned(NAMES, 1, "hipMemcpyAsync"), interned(NAMES, 2, "_Z4axpyPfS_"),
        interned(NAMES, 3, "MEMORY_COPY_HOST_TO_DEVICE"), interned(NAMES, 4, "hipLaunchKernel"),
    ] + [interned(ANNOTATION_NAMES, i, n) for n, i in iid.items()])
    call = [(iid["begin_ns"], ("u", 3_000_000)), (iid["corr_id"], ("u", 21)), (iid["kind"], ("i", 1))]
    # The first packet clears the state and interns; its call's annotations are none of the read ones.
    out += annotated_slice(seq, 3_000_000, 3_000_300, 101, call, name_iid=1, cat_iid=1, flow=21,
                           flags=CLEARED | NEEDS, extra=lfield(12, first))
    # A copy of 1 MiB, names interned, beside annotations not read (a string among them).
    copy = [(iid["begin_ns"], ("u", 3_000_400)), (iid["src_agent"], ("s", "CPU 0")),
            (iid["copy_bytes"], ("u", 1 << 20)), (iid["corr_id"], ("u", 21))]
    out += annotated_slice(seq, 3_000_400, 3_010_400, 201, copy, name_iid=3, cat_iid=3, flow=21)
    out += slice_(seq, 3_010_500, 3_010_700, 101, name_iid=4, cat_iid=1, flow=22)
    # A kernel of grid 256 x 256 x 1 work-items in workgroups of 16 x 16 x 1, names interned.
    kernel = [(iid["Scratch_Size"], ("u", 0)), (iid["LDS_Block_Size"], ("u", 4096)),
              (iid["VGPR_Count"], ("u", 64)), (iid["Accum_VGPR_Count"], ("u", 4)), (iid["SGPR_Count"], ("u", 32)),
              (iid["workgroup_size"], ("u", 16 * 16 * 1)), (iid["grid_size"], ("u", 256 * 256 * 1))]
    out += annotated_slice(seq, 3_010_800, 3_030_800, 200, kernel, name_iid=2, cat_iid=2, flow=22)
    # Plain names; copy_bytes as a (non-negative) int_value; a kernel whose LDS size is on its end
    # (and its VGPR count on both: the begin's kept).
    out += annotated_slice(seq, 3_031_000, 3_032_000, 201, [("copy_bytes", ("i", 4096))], name_iid=3, cat_iid=3)
    out += annotated_slice(seq, 3_032_100, 3_033_100, 200,
                           [("grid_size", ("u", 1024)), ("workgroup_size", ("u", 64)), ("VGPR_Count", ("u", 24))],
                           end_annotations=[("LDS_Block_Size", ("u", 512)), ("VGPR_Count", ("u", 99))],
                           name="_Z5scalePf", cat="kernel_dispatch", flags=0)
    # Not read: copy_bytes as a string; a negative int; a name iid never interned (40).
    out += annotated_slice(seq, 3_034_000, 3_034_500, 201, [(iid["copy_bytes"], ("s", "lots"))],
                           name_iid=3, cat_iid=3)
    out += annotated_slice(seq, 3_034_600, 3_034_700, 201, [("copy_bytes", ("i", -5))], name_iid=3, cat_iid=3)
    out += annotated_slice(seq, 3_034_800, 3_034_900, 201, [(40, ("u", 8))], name_iid=3, cat_iid=3)
    # The state cleared: iid 3 now names corr_id and iid 14 copy_bytes; a grid of 2^32 work-items does
    # not fit the model's 32 bits (not read), its workgroup does.
    again = b"".join([
        interned(CATEGORIES, 2, "kernel_dispatch"), interned(CATEGORIES, 3, "memory_copy"),
        interned(NAMES, 3, "MEMORY_COPY_DEVICE_TO_HOST"), interned(NAMES, 5, "_Z4fillPf"),
        interned(ANNOTATION_NAMES, 3, "corr_id"), interned(ANNOTATION_NAMES, 14, "copy_bytes"),
        interned(ANNOTATION_NAMES, 15, "grid_size"), interned(ANNOTATION_NAMES, 16, "workgroup_size"),
    ])
    out += annotated_slice(seq, 3_040_000, 3_042_000, 201, [(3, ("u", 777)), (14, ("u", 2048))],
                           name_iid=3, cat_iid=3, flags=CLEARED | NEEDS, extra=lfield(12, again))
    out += annotated_slice(seq, 3_042_100, 3_043_100, 200, [(15, ("u", 1 << 32)), (16, ("u", 128))],
                           name_iid=5, cat_iid=2)
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
    c["memcpy_bytes"] = []
    c["kernel_launches"] = []
    c["annotations_odd"] = 0
    c["annotations_unnamed"] = 0
    c["kernel_names"] = []
    c["gpu_op_processes"] = []
    seqs = {}
    open_slices = {}
    calls, gpu = set(), []
    for d in packets:
        seq_id = one(d, 10, 0)
        s = seqs.setdefault(seq_id, {"valid": False, "names": {}, "cats": {}, "stages": {}, "kernels": {},
                                     "contexts": {}, "clock": None, "anns": {}})
        flags = one(d, 13, 0)
        if one(d, 42, 0):
            s["valid"] = False
        if flags & CLEARED:
            s.update(valid=True, names={}, cats={}, stages={}, kernels={}, contexts={}, clock=None, anns={})
        if flags & NEEDS and not s["valid"]:
            c["skipped_packets"] += 1
            continue
        if 59 in d:
            s["clock"] = one(grouped(d[59][0]), 58)
        for idata in d.get(12, []):
            g = grouped(idata)
            for field, table in ((2, "names"), (1, "cats"), (24, "stages"), (1000, "kernels"), (3, "anns")):
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
                open_slices.setdefault(track, []).append((name, cat, ts, corr, annotations(e, s, {}, c)))
            elif typ == 2:
                name, cat, begin, corr, ann = open_slices[track].pop()
                ann = annotations(e, s, ann, c)
                dur = ts - begin
                if cat == "kernel_dispatch":
                    c["kernels"] += 1
                    c["kernel_sum_ns"] += dur
                    c["kernel_names"].append(name)
                    c["kernel_launches"].append([ann.get(k) for k in
                                                 ("grid_size", "workgroup_size", "VGPR_Count", "LDS_Block_Size")])
                    gpu.append(corr)
                    c["gpu_op_processes"].append(track_pid(track))
                elif cat == "memory_copy":
                    c["memcpys"] += 1
                    c["memcpy_sum_ns"] += dur
                    c["memcpy_bytes"].append(ann.get("copy_bytes"))
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


READ_ANNOTATIONS = {"copy_bytes": 64, "grid_size": 32, "workgroup_size": 32, "VGPR_Count": 32,
                    "LDS_Block_Size": 32}


def annotations(e, s, into, c):
    """`into` (name → value) with the read annotations of track event `e` it lacks; the others
    counted in `c`."""
    for raw in e.get(4, []):
        a = grouped(raw)
        if 10 in a:
            name = one(a, 10).decode()
        elif one(a, 1) in s["anns"]:
            name = s["anns"][one(a, 1)]
        elif 1 in a:
            c["annotations_unnamed"] += 1
            continue
        else:
            continue
        if name not in READ_ANNOTATIONS:
            continue
        value = one(a, 3)
        if value is None and 4 in a:
            signed = one(a, 4)
            value = signed if signed < 1 << 63 else None  # a varint int64 below 0 is its complement
        if value is None or value >= 1 << READ_ANNOTATIONS[name]:
            c["annotations_odd"] += 1
            continue
        into.setdefault(name, value)
    return into


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
    files = {"rocprofv3_layout.pftrace": rocprofv3_layout(), "gpu_stages.pftrace": gpu_stages(),
             "rocprofv3_annotations.pftrace": rocprofv3_annotations(),
             "descriptors_first.pftrace": descriptors_first()}
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
