#!/usr/bin/env python3
"""Builds the small native-format test files of testdata/native/ from the formats' public schema
descriptions, and writes what each file holds by construction (truth.json): counts and sums of kernels,
copies and fills, and the GPU work of each step marker.

Each file is written from the schema its producer documents, not from a real file: column names and
order, enum tables, id packing. Run once; the outputs are committed beside this script:

    python3 testdata/native/make_native.py testdata/native

* nsys_node_3.17.sqlite — Nsight Systems export schema 3.17 (EXPORT_SCHEMA_VERSION 3.17.1): columns in
  another order and added ones (graphId, greenContextId, …), absent tables (no DIAGNOSTIC_EVENT, no
  session start, no GRAPH_TRACE); two processes reusing correlation ids 1..3; NVTX push/pop ranges on
  two threads of one process (kl1 step markers on the main thread, launches on a worker); a start/end
  range and a mark; a cudaGraphLaunch whose node-mode kernels share its correlation id; a driver call.
* nsys_graph_3.16.sqlite — schema 3.16.1, CUDA-graph trace mode `Graph`: replays in
  CUPTI_ACTIVITY_KIND_GRAPH_TRACE, no kernel rows for them.
* rocpd_3.db — rocpd schema 3: suffixed tables and the unsuffixed views (kernels, memory_copies,
  regions, rocpd_info_agent, …) with the columns rocprofiler-sdk's data_views.sql gives them.
* rpd_3.rpd — RPD schema 3 (rocpd_ustring for arguments, category/domain ids): a hipGraphLaunch whose
  kernels are `Task` ops (absent from RPD's `kernel` view), a kernel named by a mangled symbol.
* rocprofv3_markers.json — rocprofv3 JSON with hip_api, marker_api (+ strings.marker_api), memory_copy,
  and rocclr fill/copy kernels.
* rocprofv3_csv_old/ — the kernel_trace.csv of early rocprofv3 (bare Agent_Id, Private_Segment_Size);
  rocprofv3_csv_new/ — two processes with the later columns (Stream_Id, "Agent N", LDS_Block_Size),
  one of them with rocpd2csv's Guid column and upper-cased names.
* chrome_array_open.json — rpd2tracing's array: string ts/dur in µs, no cat, op type in args.desc,
  flows cat api_op, no closing ']'.

Times are integer ns except in the Chrome array (µs text).
"""
import csv
import io
import json
import sqlite3
import sys
from pathlib import Path

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
truth = {}


def fresh(path):
    p = OUT / path
    if p.exists():
        p.unlink()
    return sqlite3.connect(p)


def tracelens(requests, kv):
    """A TraceLens-style serving marker of a decode step: `requests` requests of one query token, each with
    `kv` KV tokens (Σq = requests, Σkv = requests·kv, Σq² = requests, Σq·kv = requests·kv)."""
    return (f"execute_{requests}_context_0(sq0sk0sqsq0sqsk0)_generation_{requests}"
            f"(sq{requests}sk{requests * kv}sqsq{requests}sqsk{requests * kv})")


def step(name, kernels, kernel_ns, memcpys=0, memsets=0):
    return {"name": name, "kernels": kernels, "kernel_sum_ns": kernel_ns, "memcpys": memcpys, "memsets": memsets}


# ---------------------------------------------------------------- Nsight Systems
def gpid(pid):
    # NVIDIA's serialized GlobalId: bits 24..47 the process, bits 0..23 the thread (vm id in bit 48).
    return (1 << 48) | (pid << 24)


def gtid(pid, tid):
    return gpid(pid) | tid


ENUM_MEMCPY = [(0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"), (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
               (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"), (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
               (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer")]
ENUM_MEMKIND = [(0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"), (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
                (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device")]
ENUM_EVENT_TYPE = [(34, "NvtxMark", "NvtxMark"), (59, "NvtxPushPopRange", "NvtxPushPopRange"),
                   (60, "NvtxStartEndRange", "NvtxStartEndRange"), (75, "NvtxDomainCreate", "NvtxDomainCreate")]
ENUM_EVENT_CLASS = [(0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
                    (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver")]


def nsys_common(c, schema, product, mode):
    c.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    c.execute("CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT)")
    major, minor, micro = schema.split(".")
    for k, v in [("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"), ("EXPORT_PRODUCT_VERSION", product),
                 ("EXPORT_SCHEMA_VERSION", schema), ("EXPORT_SCHEMA_VERSION_MAJOR", major),
                 ("EXPORT_SCHEMA_VERSION_MINOR", minor), ("EXPORT_SCHEMA_VERSION_MICRO", micro)]:
        c.execute("INSERT INTO META_DATA_EXPORT VALUES (?, ?)", (k, v))
    c.execute("CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT)")
    c.execute("INSERT INTO META_DATA_CAPTURE VALUES ('PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE', ?)", (mode,))
    c.execute("INSERT INTO META_DATA_CAPTURE VALUES ('CAPTURE_EVENT_TYPE', 'Cuda')")
    for table, rows in [("ENUM_CUDA_MEMCPY_OPER", ENUM_MEMCPY), ("ENUM_CUDA_MEM_KIND", ENUM_MEMKIND),
                        ("ENUM_NSYS_EVENT_TYPE", ENUM_EVENT_TYPE), ("ENUM_NSYS_EVENT_CLASS", ENUM_EVENT_CLASS)]:
        c.execute(f"CREATE TABLE {table} (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT)")
        c.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)


class Strings:
    def __init__(self, c):
        self.c, self.ids = c, {}

    def __call__(self, s):
        if s not in self.ids:
            self.ids[s] = len(self.ids) + 1
            self.c.execute("INSERT INTO StringIds VALUES (?, ?)", (self.ids[s], s))
        return self.ids[s]


def nsys_node():
    c = fresh("nsys_node_3.17.sqlite")
    nsys_common(c, "3.17.1", "2025.1.1.131", "Node")
    s = Strings(c)
    # 3.17: columns added and in another order than 3.16 (readers select by name).
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (globalPid INTEGER, correlationId INTEGER,
        start INTEGER NOT NULL, "end" INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
        greenContextId INTEGER, streamId INTEGER NOT NULL, graphId INTEGER, graphNodeId INTEGER,
        shortName INTEGER NOT NULL, demangledName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
        gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
        blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, registersPerThread INTEGER NOT NULL,
        staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, gridId INTEGER NOT NULL,
        isSharedMemoryCarveoutRequested INTEGER)""")
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (eventClass INTEGER NOT NULL, start INTEGER NOT NULL,
        "end" INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
        returnValue INTEGER NOT NULL, callchainId INTEGER)""")
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
        correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
        deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER,
        dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER,
        virtualAddress INTEGER)""")
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
        correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
        graphNodeId INTEGER, memKind INTEGER)""")
    c.execute("""CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL,
        rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
        textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,
        uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT,
        binaryData TEXT)""")
    c.execute("""CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
        busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER,
        clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT,
        cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER)""")
    for dev in (0, 1):
        c.execute("INSERT INTO TARGET_INFO_GPU (vmId, id, name, totalMemory, memoryBandwidth, smCount, chipName, "
                  "computeMajor, computeMinor) VALUES (?, ?, 'NVIDIA H100 80GB HBM3', 85520809984, 3352320000000, "
                  "132, 'GH100', 9, 0)", (1 << 48, dev))

    def call(pid, tid, name, t0, t1, corr, driver=False):
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (eventClass, start, \"end\", globalTid, correlationId, "
                  "nameId, returnValue) VALUES (?, ?, ?, ?, ?, ?, 0)",
                  (1 if driver else 0, t0, t1, gtid(pid, tid), corr, s(name)))

    def kernel(pid, dev, stream, name, t0, t1, corr, node=None, graph=None):
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (globalPid, correlationId, start, \"end\", deviceId, "
                  "contextId, streamId, graphId, graphNodeId, shortName, demangledName, gridX, gridY, gridZ, "
                  "blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, gridId) "
                  "VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, 132, 1, 1, 256, 1, 1, 64, 0, 49152, ?)",
                  (gpid(pid), corr, t0, t1, dev, stream, graph, node, s(name.split("(")[0].split("<")[0]),
                   s(name), corr))

    def nvtx(pid, tid, text, t0, t1, kind=59):
        c.execute("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
                  "VALUES (?, ?, ?, ?, ?, 0)", (t0, t1, kind, text, gtid(pid, tid)))

    A, AW, B = 4101, 4102, 4201
    # Before any step: one kernel (outside every step).
    call(A, A, "cudaLaunchKernel_v7000", 1000, 1500, 1)
    kernel(A, 0, 7, "warmup_kernel(int)", 2000, 3000, 1)
    # Process A, step 0 (prefill): a copy from the main thread, two kernels from the worker thread, one
    # of them by a driver call.
    nvtx(A, A, "kl1.step#0 phase=prefill rows=64", 5000, 20000)
    nvtx(A, AW, "forward", 5500, 19000)
    nvtx(A, A, "request 17", 5000, 39000, kind=60)
    call(A, A, "cudaMemcpyAsync_v3020", 5100, 5200, 2)
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, \"end\", deviceId, contextId, streamId, "
              "correlationId, globalPid, bytes, copyKind, srcKind, dstKind) VALUES (5300, 6300, 0, 1, 7, 2, ?, "
              "4096, 1, 0, 2)", (gpid(A),))
    call(A, AW, "cudaLaunchKernel_v7000", 6000, 6100, 3)
    kernel(A, 0, 7, "ampere_sgemm_128x64_nn", 7000, 9000, 3)
    call(A, AW, "cuLaunchKernel", 6200, 6300, 4, driver=True)
    kernel(A, 0, 7, "triton_poi_fused_add_0", 9000, 9500, 4)
    # A mark between the steps (an instant, not a range).
    c.execute("INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid) VALUES (20500, 34, 'checkpoint', ?)",
              (gtid(A, A),))
    # Process A, step 1 (decode): a graph launch (node mode: three kernels carrying its correlation id) and an
    # all-reduce on a second stream.
    nvtx(A, A, "kl1.step#1 phase=decode rows=4 requests=4", 21000, 40000)
    call(A, A, "cudaGraphLaunch_v10000", 21100, 21300, 5)
    kernel(A, 0, 7, "flash_fwd_kernel", 22000, 25000, 5, node=11, graph=7)
    kernel(A, 0, 7, "ampere_sgemm_64x32_nn", 25000, 26500, 5, node=12, graph=7)
    kernel(A, 0, 7, "rmsnorm_kernel", 26500, 27000, 5, node=13, graph=7)
    call(A, A, "cudaLaunchKernel_v7000", 30000, 30100, 6)
    kernel(A, 0, 14, "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
           30500, 34000, 6)
    # Process B reuses correlation ids 1..3: only a join on the process links them right.
    nvtx(B, B, "kl1.step#0 phase=decode rows=2 requests=2", 10000, 30000)
    call(B, B, "cudaLaunchKernel_v7000", 10100, 10200, 1)
    kernel(B, 1, 7, "ampere_sgemm_64x32_nn", 11000, 13000, 1)
    call(B, B, "cudaLaunchKernel_v7000", 11000, 11100, 2)
    kernel(B, 1, 7, "rmsnorm_kernel", 13000, 13400, 2)
    call(B, B, "cudaMemsetAsync_v3020", 12000, 12050, 3)
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, \"end\", deviceId, contextId, streamId, "
              "correlationId, globalPid, value, bytes, memKind) VALUES (13500, 13600, 1, 1, 7, 3, ?, 0, 1024, 2)",
              (gpid(B),))
    c.commit()
    truth["nsys_node_3.17.sqlite"] = {
        "format": "nsys_sqlite", "format_version": "3.17.1", "kernels": 9,
        "kernel_sum_ns": 1000 + 2000 + 500 + 3000 + 1500 + 500 + 3500 + 2000 + 400,
        "memcpys": 1, "memcpy_bytes": 4096, "memsets": 1, "memset_bytes": 1024, "launches": 9, "driver": 1,
        "user_annotations": 5, "graph_trace_mode": "Node", "graph_replays": 0, "kernels_complete": True,
        "kernels_outside_steps": 1,
        "steps": [step("kl1.step#0 phase=prefill rows=64", 2, 2000 + 500, memcpys=1),
                  step("kl1.step#0 phase=decode rows=2 requests=2", 2, 2000 + 400, memsets=1),
                  step("kl1.step#1 phase=decode rows=4 requests=4", 4, 3000 + 1500 + 500 + 3500)],
    }


def nsys_graph():
    c = fresh("nsys_graph_3.16.sqlite")
    nsys_common(c, "3.16.1", "2024.6.2.25", "Graph")
    s = Strings(c)
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
        correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
        mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
        gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
        blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
        dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
        localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,
        graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER)""")
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
        eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
        returnValue INTEGER NOT NULL, callchainId INTEGER)""")
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
        correlationId INTEGER, globalPid INTEGER, graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL)""")
    c.execute("""CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL,
        rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
        textId INTEGER, domainId INTEGER)""")
    c.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)")
    c.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1733877925987393218, '', '')")
    P = 5101

    def call(name, t0, t1, corr):
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                  (t0, t1, gtid(P, P), corr, s(name)))

    def nvtx(text, t0, t1):
        # Registered strings: the name is in StringIds (textId), text NULL.
        c.execute("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, textId, globalTid) VALUES (?, ?, 59, ?, ?)",
                  (t0, t1, s(text), gtid(P, P)))

    def replay(t0, t1, corr, graph):
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?, ?, 0, 1, NULL, 7, ?, ?, ?, ?)",
                  (t0, t1, corr, gpid(P), graph, graph * 100))

    c.execute("""CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
        busLocation TEXT, totalMemory INTEGER, memoryBandwidth INTEGER, smCount INTEGER, chipName TEXT)""")
    c.execute("INSERT INTO TARGET_INFO_GPU VALUES (?, 0, 'NVIDIA H100 80GB HBM3', '0000:45:00.0', 85520809984, "
              "3352320000000, 132, 'GH100')", (1 << 48,))
    nvtx(tracelens(8, 1024), 1000, 10000)
    call("cudaGraphLaunch_v10000", 1100, 1200, 1)
    replay(2000, 8000, 1, 3)
    call("cudaLaunchKernel_v7000", 1300, 1350, 2)
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, \"end\", deviceId, contextId, streamId, "
              "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, "
              "blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, "
              "gridId) VALUES (8000, 8500, 0, 1, 7, 2, ?, ?, ?, 32, 64, 1, 1, 128, 1, 1, 0, 0, 0, 0, 1)",
              (gpid(P), s("rmsnorm_kernel(float*, float const*, int)"), s("rmsnorm_kernel")))
    nvtx(tracelens(8, 1025), 11000, 20000)
    call("cudaGraphLaunch_v10000", 11100, 11200, 3)
    replay(12000, 18500, 3, 3)
    c.commit()
    truth["nsys_graph_3.16.sqlite"] = {
        "format": "nsys_sqlite", "format_version": "3.16.1", "kernels": 3, "kernel_rows": 1,
        "kernel_sum_ns": 6000 + 500 + 6500, "memcpys": 0, "memsets": 0, "launches": 3, "driver": 0,
        "user_annotations": 2, "graph_trace_mode": "Graph", "graph_replays": 2, "graph_replays_ns": 12500,
        "kernels_complete": False, "kernels_outside_steps": 0,
        "steps": [step(tracelens(8, 1024), 2, 6500), step(tracelens(8, 1025), 1, 6500)],
    }


# ---------------------------------------------------------------- rocpd
def rocpd():
    c = fresh("rocpd_3.db")
    u = "_0f3c9a1e_52d1_4c4e_9a1e_6b1d2c3a4f50"
    g = "0f3c9a1e-52d1-4c4e-9a1e-6b1d2c3a4f50"
    ddl = {
        "rocpd_metadata": "id INTEGER PRIMARY KEY, tag TEXT NOT NULL, value TEXT NOT NULL",
        "rocpd_string": "id INTEGER PRIMARY KEY, guid TEXT, string TEXT NOT NULL UNIQUE",
        "rocpd_info_process": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, ppid INTEGER, pid INTEGER NOT NULL, "
                              "command TEXT",
        "rocpd_info_thread": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, ppid INTEGER, pid INTEGER, "
                             "tid INTEGER NOT NULL, name TEXT",
        "rocpd_info_agent": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, type TEXT, "
                            "absolute_index INTEGER, logical_index INTEGER, type_index INTEGER, uuid INTEGER, "
                            "name TEXT, model_name TEXT, vendor_name TEXT, product_name TEXT, user_name TEXT, "
                            "extdata JSONB DEFAULT '{}'",
        "rocpd_info_queue": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, name TEXT",
        "rocpd_info_stream": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, name TEXT",
        "rocpd_info_kernel_symbol": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, "
                                    "code_object_id INTEGER, kernel_name TEXT, display_name TEXT, "
                                    "arch_vgpr_count INTEGER, accum_vgpr_count INTEGER, sgpr_count INTEGER, "
                                    "group_segment_size INTEGER, private_segment_size INTEGER",
        "rocpd_event": "id INTEGER PRIMARY KEY, guid TEXT, category_id INTEGER, stack_id INTEGER, "
                       "parent_stack_id INTEGER, correlation_id INTEGER, call_stack JSONB DEFAULT '{}', "
                       "line_info JSONB DEFAULT '{}', extdata JSONB DEFAULT '{}'",
        "rocpd_region": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, start BIGINT, "
                        "\"end\" BIGINT, name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT '{}'",
        "rocpd_kernel_dispatch": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, "
                                 "agent_id INTEGER, kernel_id INTEGER, dispatch_id INTEGER, queue_id INTEGER, "
                                 "stream_id INTEGER, start BIGINT, \"end\" BIGINT, private_segment_size INTEGER, "
                                 "group_segment_size INTEGER, workgroup_size_x INTEGER, workgroup_size_y INTEGER, "
                                 "workgroup_size_z INTEGER, grid_size_x INTEGER, grid_size_y INTEGER, "
                                 "grid_size_z INTEGER, region_name_id INTEGER, event_id INTEGER, "
                                 "extdata JSONB DEFAULT '{}'",
        "rocpd_memory_copy": "id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, "
                             "start BIGINT, \"end\" BIGINT, name_id INTEGER, dst_agent_id INTEGER, "
                             "dst_address INTEGER, src_agent_id INTEGER, src_address INTEGER, size INTEGER, "
                             "queue_id INTEGER, stream_id INTEGER, region_name_id INTEGER, event_id INTEGER, "
                             "extdata JSONB DEFAULT '{}'",
    }
    for t, cols in ddl.items():
        c.execute(f"CREATE TABLE `{t}{u}` ({cols})")
        c.execute(f"CREATE VIEW `{t}` AS SELECT * FROM `{t}{u}`")
    ins = lambda t, **kw: c.execute(  # noqa: E731
        f"INSERT INTO `{t}{u}` ({', '.join(kw)}) VALUES ({', '.join('?' * len(kw))})", tuple(kw.values())
    ).lastrowid
    ins("rocpd_metadata", tag="schema_version", value="3")
    ins("rocpd_metadata", tag="uuid", value=u)
    strings = {}

    def s(text):
        if text not in strings:
            strings[text] = ins("rocpd_string", guid=g, string=text)
        return strings[text]

    ins("rocpd_info_process", id=1, guid=g, nid=1, ppid=1, pid=5001, command="python serve.py")
    ins("rocpd_info_thread", id=1, guid=g, nid=1, pid=1, tid=5001, name="python")
    ins("rocpd_info_thread", id=2, guid=g, nid=1, pid=1, tid=5002, name="worker")
    ins("rocpd_info_agent", id=1, guid=g, nid=1, pid=1, type="CPU", absolute_index=0, logical_index=0,
        type_index=0, name="AMD EPYC 9654", product_name="AMD EPYC 9654", extdata='{"cu_count": 96}')
    for i in (0, 1):
        ins("rocpd_info_agent", id=2 + i, guid=g, nid=1, pid=1, type="GPU", absolute_index=1 + i,
            logical_index=1 + i, type_index=i, name="gfx942", product_name="AMD Instinct MI300X",
            extdata='{"cu_count": 304, "num_xcc": 8}')
    for q in (1, 2):
        ins("rocpd_info_queue", id=q, guid=g, nid=1, pid=1, name=f"queue {q}")
        ins("rocpd_info_stream", id=q, guid=g, nid=1, pid=1, name=f"stream {q}")
    cat_hip, cat_hsa, cat_marker = s("HIP_RUNTIME_API"), s("HSA_CORE_API"), s("MARKER_CORE_RANGE_API")
    cat_kernel, cat_copy = s("KERNEL_DISPATCH"), s("MEMORY_COPY")
    syms = {}

    def sym(name):
        if name not in syms:
            syms[name] = ins("rocpd_info_kernel_symbol", guid=g, nid=1, pid=1, code_object_id=1,
                             kernel_name=name + ".kd", display_name=name, arch_vgpr_count=64, accum_vgpr_count=0,
                             sgpr_count=32, group_segment_size=0, private_segment_size=0)
        return syms[name]

    def region(cat, name, tid, t0, t1, corr, message=None):
        ext = json.dumps({"message": message}) if message else "{}"
        # rocprofiler-sdk's generateRocpd writes the internal correlation id as stack_id and the external
        # one (0 unless a tool sets it) as correlation_id, for the call and for what it launched.
        ev = ins("rocpd_event", guid=g, category_id=cat, stack_id=corr, parent_stack_id=0, correlation_id=0,
                 extdata=ext)
        ins("rocpd_region", guid=g, nid=1, pid=1, tid=tid, start=t0, end=t1, name_id=s(name), event_id=ev,
            extdata=ext)

    def dispatch(name, agent, queue, t0, t1, corr, api="hipLaunchKernel"):
        ev = ins("rocpd_event", guid=g, category_id=cat_kernel, stack_id=corr, parent_stack_id=corr, correlation_id=0)
        ins("rocpd_kernel_dispatch", guid=g, nid=1, pid=1, tid=1, agent_id=agent, kernel_id=sym(name),
            dispatch_id=corr, queue_id=queue, stream_id=queue, start=t0, end=t1, workgroup_size_x=256,
            workgroup_size_y=1, workgroup_size_z=1, grid_size_x=304 * 256, grid_size_y=1, grid_size_z=1,
            region_name_id=s(api), event_id=ev)

    region(cat_hsa, "hsa_queue_create", 1, 100, 200, 1)
    region(cat_marker, "roctxThreadRangeA", 1, 500, 9000, 2, message=tracelens(8, 2048))
    region(cat_hip, "hipLaunchKernel", 1, 1000, 1100, 11)
    dispatch("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", 2, 1, 2000, 5000, 11)
    region(cat_hip, "hipMemsetAsync", 1, 1200, 1300, 12)
    # The fill runs as the runtime's kernel, 200 ns before the GEMM on its queue ends (an overrun).
    dispatch("__amd_rocclr_fillBufferAligned", 2, 1, 4800, 5200, 12, api="hipMemsetAsync")
    region(cat_hip, "hipMemcpyAsync", 2, 1400, 1500, 13)
    ev = ins("rocpd_event", guid=g, category_id=cat_copy, stack_id=13, parent_stack_id=13, correlation_id=0)
    ins("rocpd_memory_copy", guid=g, nid=1, pid=1, tid=2, start=2000, end=2800,
        name_id=s("MEMORY_COPY_HOST_TO_DEVICE"), dst_agent_id=2, src_agent_id=1, size=1 << 20, queue_id=1,
        stream_id=1, region_name_id=s("hipMemcpyAsync"), event_id=ev)
    ev = ins("rocpd_event", guid=g, category_id=cat_marker, stack_id=3, parent_stack_id=0, correlation_id=0,
             extdata='{"message": "tick"}')
    ins("rocpd_region", guid=g, nid=1, pid=1, tid=1, start=9500, end=9500, name_id=s("roctxMarkA"), event_id=ev,
        extdata='{"message": "tick"}')
    region(cat_marker, "roctxThreadRangeA", 1, 10000, 20000, 4, message=tracelens(8, 2049))
    region(cat_hip, "hipLaunchKernel", 1, 10100, 10200, 14)
    dispatch("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", 3, 2, 11000, 15000, 14)
    # The views of rocprofiler-sdk's data_views.sql, with the columns it gives them.
    c.execute("""CREATE VIEW kernels AS SELECT K.id, K.guid, T.tid,
        (SELECT string FROM rocpd_string RS WHERE RS.id = E.category_id AND RS.guid = E.guid) AS category,
        R.string AS region, S.display_name AS name, K.nid, P.pid, A.absolute_index AS agent_abs_index,
        A.logical_index AS agent_log_index, A.type_index AS agent_type_index, A.type AS agent_type,
        S.code_object_id, K.kernel_id, K.dispatch_id, K.stream_id, K.queue_id, Q.name AS queue, ST.name AS stream,
        K.start, K."end", (K."end" - K.start) AS duration, K.grid_size_x AS grid_x, K.grid_size_y AS grid_y,
        K.grid_size_z AS grid_z, K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y,
        K.workgroup_size_z AS workgroup_z, K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
        S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count, E.stack_id, E.parent_stack_id,
        E.correlation_id AS corr_id
        FROM rocpd_kernel_dispatch K
        INNER JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
        INNER JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
        INNER JOIN rocpd_string R ON R.id = K.region_name_id AND R.guid = K.guid
        INNER JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
        LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid
        LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
        INNER JOIN rocpd_info_process P ON P.id = Q.pid AND P.guid = Q.guid
        INNER JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid""")
    c.execute("""CREATE VIEW regions AS SELECT R.id, R.guid,
        (SELECT string FROM rocpd_string RS WHERE RS.id = E.category_id AND RS.guid = E.guid) AS category,
        S.string AS name, R.nid, P.pid, T.tid, R.start, R."end", (R."end" - R.start) AS duration, R.event_id,
        E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
        FROM rocpd_region R
        INNER JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
        INNER JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid
        INNER JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid
        INNER JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid""")
    c.execute("""CREATE VIEW memory_copies AS SELECT M.id, M.guid,
        (SELECT string FROM rocpd_string RS WHERE RS.id = E.category_id AND RS.guid = E.guid) AS category,
        M.nid, P.pid, T.tid, M.start, M."end", (M."end" - M.start) AS duration, S.string AS name,
        R.string AS region_name, M.stream_id, M.queue_id, M.size, dst_agent.name AS dst_device,
        dst_agent.absolute_index AS dst_agent_abs_index, dst_agent.logical_index AS dst_agent_log_index,
        dst_agent.type_index AS dst_agent_type_index, dst_agent.type AS dst_agent_type, M.dst_address,
        src_agent.name AS src_device, src_agent.absolute_index AS src_agent_abs_index,
        src_agent.logical_index AS src_agent_log_index, src_agent.type_index AS src_agent_type_index,
        src_agent.type AS src_agent_type, M.src_address, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
        FROM rocpd_memory_copy M
        INNER JOIN rocpd_string S ON S.id = M.name_id AND S.guid = M.guid
        LEFT JOIN rocpd_string R ON R.id = M.region_name_id AND R.guid = M.guid
        INNER JOIN rocpd_info_agent dst_agent ON dst_agent.id = M.dst_agent_id AND dst_agent.guid = M.guid
        INNER JOIN rocpd_info_agent src_agent ON src_agent.id = M.src_agent_id AND src_agent.guid = M.guid
        INNER JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
        INNER JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
        INNER JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid""")
    c.commit()
    truth["rocpd_3.db"] = {
        "format": "rocpd_sqlite", "format_version": "3", "kernels": 2, "kernel_sum_ns": 3000 + 4000,
        "memcpys": 1, "memcpy_bytes": 1 << 20, "memsets": 1, "launches": 5, "driver": 1, "user_annotations": 2,
        "overruns": {"count": 1, "max_ns": 200}, "kernels_outside_steps": 0,
        "steps": [step(tracelens(8, 2048), 1, 3000, memcpys=1, memsets=1), step(tracelens(8, 2049), 1, 4000)],
    }


# ---------------------------------------------------------------- RPD
def rpd():
    c = fresh("rpd_3.rpd")
    # RPD schema 3 (rocmProfileData rpd_tracer's table schema).
    for t in [
        'rocpd_metadata ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "tag" varchar(4096) NOT NULL, '
        '"value" varchar(4096) NOT NULL)',
        'rocpd_string ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "string" varchar(4096) NOT NULL)',
        'rocpd_ustring ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "string" varchar(4096) NOT NULL)',
        'rocpd_api ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "pid" integer NOT NULL, "tid" integer NOT NULL, '
        '"start" integer NOT NULL, "end" integer NOT NULL, "apiName_id" bigint NOT NULL, "category_id" bigint NOT NULL, '
        '"domain_id" bigint NOT NULL, "args_id" bigint NOT NULL)',
        'rocpd_copyapi ("api_ptr_id" bigint NOT NULL PRIMARY KEY, "stream" varchar(18) NOT NULL, "size" integer NOT NULL, '
        '"width" integer NOT NULL, "height" integer NOT NULL, "kind" integer NOT NULL, "dst" varchar(18) NOT NULL, '
        '"src" varchar(18) NOT NULL, "dstDevice" integer NOT NULL, "srcDevice" integer NOT NULL, "sync" bool NOT NULL, '
        '"pinned" bool NOT NULL)',
        'rocpd_kernelapi ("api_ptr_id" bigint NOT NULL PRIMARY KEY, "stream" varchar(18) NOT NULL, "gridX" integer NOT NULL, '
        '"gridY" integer NOT NULL, "gridZ" integer NOT NULL, "workgroupX" integer NOT NULL, "workgroupY" integer NOT NULL, '
        '"workgroupZ" integer NOT NULL, "groupSegmentSize" integer NOT NULL, "privateSegmentSize" integer NOT NULL, '
        '"kernelName_id" bigint NOT NULL)',
        'rocpd_op ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "gpuId" integer NOT NULL, "queueId" integer NOT NULL, '
        '"sequenceId" integer NOT NULL, "start" integer NOT NULL, "end" integer NOT NULL, "description_id" bigint NOT NULL, '
        '"opType_id" bigint NOT NULL)',
        'rocpd_api_ops ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "api_id" bigint NOT NULL, "op_id" bigint NOT NULL)',
    ]:
        c.execute("CREATE TABLE " + t)
    c.executemany("INSERT INTO rocpd_metadata (tag, value) VALUES (?, ?)",
                  [("gpu_stride", "1000"), ("pid_stride", "10000000"), ("schema_version", "3")])
    c.execute("""CREATE VIEW kernel AS SELECT B.id, gpuId, queueId, sequenceId, start, end, (end-start) AS duration,
        stream, gridX, gridY, gridz, workgroupX, workgroupY, workgroupZ, groupSegmentSize, privateSegmentSize,
        D.string AS kernelName FROM rocpd_api_ops A JOIN rocpd_op B on B.id = A.op_id
        JOIN rocpd_kernelapi C ON C.api_ptr_id = A.api_id JOIN rocpd_string D on D.id = kernelName_id""")
    # Ids are large offsets, as the tracer writes them (2^32 per session).
    base = 1 << 32
    strings, ustrings = {}, {}

    def s(text, table="rocpd_string", memo=strings):
        if text not in memo:
            memo[text] = base + len(memo) + 1
            c.execute(f"INSERT INTO {table} (id, string) VALUES (?, ?)", (memo[text], text))
        return memo[text]

    us = lambda text: s(text, "rocpd_ustring", ustrings)  # noqa: E731
    s("")
    us("")
    counter = {"api": base + 100, "op": base + 1000}

    def api(name, tid, t0, t1, args="", domain=None, category=""):
        counter["api"] += 1
        domain = domain or ("HIP" if name != "UserMarker" else "UserMarker")
        c.execute("INSERT INTO rocpd_api VALUES (?, 6001, ?, ?, ?, ?, ?, ?, ?)",
                  (counter["api"], tid, t0, t1, s(name), s(category), s(domain), us(args)))
        return counter["api"]

    def op(api_id, kind, desc, t0, t1, queue=0):
        counter["op"] += 1
        # Row ids are not in start order: ops are inserted with descending ids below the counter's base.
        c.execute("INSERT INTO rocpd_op VALUES (?, 2, ?, 0, ?, ?, ?, ?)",
                  (counter["op"], queue, t0, t1, s(desc), s(kind)))
        c.execute("INSERT INTO rocpd_api_ops (api_id, op_id) VALUES (?, ?)", (api_id, counter["op"]))

    api("UserMarker", 6001, 1000, 10000, tracelens(4, 512))
    a = api("hipLaunchKernel", 6001, 1100, 1200, "stream=0x0 | kernel=addition_kernel")
    c.execute("INSERT INTO rocpd_kernelapi VALUES (?, '0x0', 1024, 1, 1, 64, 1, 1, 0, 0, ?)",
              (a, s("_Z15addition_kernelIfEvPT_PKS0_S3_ii")))
    op(a, "KernelExecution", "_Z15addition_kernelIfEvPT_PKS0_S3_ii", 2000, 2600)
    a = api("hipMemcpyAsync", 6002, 1300, 1400, "dst=0x7f00 | src=0x7e00 | size=0x10000")
    c.execute("INSERT INTO rocpd_copyapi VALUES (?, '0x0', 65536, 0, 0, 1, '0x7f00', '0x7e00', 0, 0, 0, 1)", (a,))
    op(a, "CopyHostToDevice", "", 3000, 3900, queue=1)
    a = api("hipMemsetAsync", 6002, 1500, 1550, "dst=0x7f00 | size=0x100")
    op(a, "FillBuffer", "", 4000, 4100)
    # A copy call whose size the tracer bound as '' (seen in a real rocmProfileData example file):
    # SQLite keeps the text in the integer column.
    a = api("hipMemcpyWithStream", 6002, 1600, 1700, "")
    c.execute("INSERT INTO rocpd_copyapi VALUES (?, '0x0', '', '', '', 2, '0x7d00', '0x7f00', 0, 0, 1, 0)", (a,))
    op(a, "CopyDeviceToHost", "", 4200, 4300, queue=1)
    # The tracer's own overhead record (Logger::createOverheadRecord: domain rpd_tracer, category overhead).
    api("OpTable::writeRows", 6001, 9000, 9400, "", domain="rpd_tracer", category="overhead")
    api("UserMarker", 6001, 10500, 10500, "tick")
    api("hipGetDeviceCount", 6001, 10600, 10650)
    api("UserMarker", 6001, 11000, 30000, tracelens(4, 513))
    a = api("hipGraphLaunch", 6001, 11100, 11300, "graphExec = 0x55 | stream = 0x0")
    # The graph's kernels: Task ops, no rocpd_kernelapi row; the second starts 100 ns before the first ends.
    op(a, "Task", "Cijk_Ailk_Bljk_SB_MT64x64x16_MI32x32x2x1", 12000, 15000)
    op(a, "Task", "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)", 14900, 16000)
    op(a, "Task", "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", 16000, 20000)
    c.commit()
    truth["rpd_3.rpd"] = {
        "format": "rpd_sqlite", "format_version": "3", "kernels": 4, "kernel_sum_ns": 600 + 3000 + 1100 + 4000,
        "memcpys": 2, "memcpy_bytes": 65536, "memsets": 1, "launches": 6, "driver": 0, "user_annotations": 2,
        "task_kernels": 3, "overruns": {"count": 1, "max_ns": 100}, "kernels_outside_steps": 0,
        "demangled": "void addition_kernel<float>(float*, float const*, float const*, int, int)",
        "steps": [step(tracelens(4, 512), 1, 600, memcpys=2, memsets=1),
                  step(tracelens(4, 513), 3, 3000 + 1100 + 4000)],
    }


# ---------------------------------------------------------------- rocprofv3 JSON
def rocprofv3_json():
    kinds = ["NONE", "HSA_CORE_API", "HSA_AMD_EXT_API", "HSA_IMAGE_EXT_API", "HSA_FINALIZE_EXT_API",
             "HIP_RUNTIME_API", "HIP_COMPILER_API", "MARKER_CORE_API", "MARKER_CONTROL_API", "MARKER_NAME_API",
             "MEMORY_COPY", "KERNEL_DISPATCH"]
    ops = {"HIP_RUNTIME_API": ["hipNone", "hipLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync"],
           "MARKER_CORE_API": ["roctxNone", "roctxMarkA", "roctxRangePushA", "roctxRangePop"],
           "MEMORY_COPY": ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST", "MEMORY_COPY_HOST_TO_DEVICE",
                           "MEMORY_COPY_DEVICE_TO_HOST", "MEMORY_COPY_DEVICE_TO_DEVICE"],
           "KERNEL_DISPATCH": ["KERNEL_DISPATCH_NONE", "KERNEL_DISPATCH_ENQUEUE", "KERNEL_DISPATCH_COMPLETE"]}
    K = {k: i for i, k in enumerate(kinds)}
    HIP = lambda name: ops["HIP_RUNTIME_API"].index(name)  # noqa: E731
    pid = 7001
    agents = [{"size": 312, "id": {"handle": 100}, "type": 1, "cu_count": 96, "name": "AMD EPYC 9654",
               "product_name": "AMD EPYC 9654", "node_id": 0, "logical_node_id": 0, "logical_node_type_id": 0,
               "mem_banks": []}]
    for i in (0, 1):
        agents.append({"size": 312, "id": {"handle": 101 + i}, "type": 2, "cu_count": 304, "name": "gfx942",
                       "product_name": "AMD Instinct MI300X", "node_id": 1 + i, "logical_node_id": 1 + i,
                       "logical_node_type_id": i, "gpu_index": i,
                       "mem_banks": [{"heap_type": 1, "size_in_bytes": 206158430208}]})
    symbols = []
    # Each symbol's code-object resources (static LDS, scratch, SGPRs, arch and accum VGPRs); the copy
    # kernel's symbol has none, as a release before the symbols carried them writes it.
    resources = {1: (2048, 0, 24, 40, 0), 2: (0, 0, 16, 8, 0), 4: (16384, 0, 96, 128, 64)}
    for kid, (mangled, demangled) in enumerate([
        ("_ZN2at6native13reduce_kernelILi512ELi1EEEvi.kd", "void at::native::reduce_kernel<512, 1>(int) [clone .kd]"),
        ("__amd_rocclr_fillBufferAligned.kd", "__amd_rocclr_fillBufferAligned.kd"),
        ("__amd_rocclr_copyBuffer.kd", "__amd_rocclr_copyBuffer.kd"),
        ("Cijk_Ailk_Bljk_BBS_BH_MT64x32x256_MI16x16x1.kd", "Cijk_Ailk_Bljk_BBS_BH_MT64x32x256_MI16x16x1.kd"),
    ], start=1):
        symbols.append({"size": 0, "kernel_id": kid, "code_object_id": 1, "kernel_name": mangled,
                        "formatted_kernel_name": demangled.replace(" [clone .kd]", "").removesuffix(".kd"),
                        "demangled_kernel_name": demangled,
                        "truncated_kernel_name": demangled.split("(")[0].split("<")[0].split("::")[-1]})
        if kid in resources:
            lds, scratch, sgprs, vgprs, agprs = resources[kid]
            symbols[-1].update({"group_segment_size": lds, "private_segment_size": scratch, "sgpr_count": sgprs,
                                "arch_vgpr_count": vgprs, "accum_vgpr_count": agprs})

    def api(kind, op, tid, t0, t1, corr):
        return {"size": 48, "kind": K[kind], "operation": op, "correlation_id": {"internal": corr, "external": 0},
                "start_timestamp": t0, "end_timestamp": t1, "thread_id": tid}

    # The dispatch's group segment: the symbol's static LDS and what the launch added (the reduce kernel's
    # 2,048 static + 4,096 dynamic bytes).
    group_segment = {1: 6144, 2: 0, 3: 0, 4: 16384}

    def dispatch(kid, agent, queue, t0, t1, corr, stream):
        return {"size": 184, "kind": K["KERNEL_DISPATCH"], "operation": 2, "thread_id": 7002,
                "correlation_id": {"internal": corr, "external": 0}, "start_timestamp": t0, "end_timestamp": t1,
                "dispatch_info": {"size": 72, "agent_id": {"handle": agent}, "queue_id": {"handle": queue},
                                  "kernel_id": kid, "dispatch_id": corr, "private_segment_size": 0,
                                  "group_segment_size": group_segment[kid],
                                  "workgroup_size": {"x": 256, "y": 1, "z": 1},
                                  "grid_size": {"x": 77824, "y": 1, "z": 1}},
                "stream_id": {"handle": stream}}

    hip = [api("HIP_RUNTIME_API", HIP("hipLaunchKernel"), 7002, 1100, 1200, 1),
           api("HIP_RUNTIME_API", HIP("hipMemsetAsync"), 7002, 1300, 1350, 2),
           api("HIP_RUNTIME_API", HIP("hipMemcpyAsync"), 7002, 1400, 1500, 3),
           api("HIP_RUNTIME_API", HIP("hipLaunchKernel"), 7002, 11100, 11200, 4),
           api("HIP_RUNTIME_API", HIP("hipMemcpyAsync"), 7002, 11300, 11400, 5)]
    # List order is not time order: the step-1 records first.
    dispatches = [dispatch(1, 102, 6, 12000, 14000, 4, 4), dispatch(3, 102, 6, 14000, 14500, 5, 4),
                  dispatch(4, 101, 5, 2000, 6000, 1, 3), dispatch(2, 101, 5, 5700, 6200, 2, 3)]
    copies = [{"size": 64, "kind": K["MEMORY_COPY"], "operation": 2, "thread_id": 7002,
               "correlation_id": {"internal": 3, "external": 0}, "start_timestamp": 3000, "end_timestamp": 4000,
               "dst_agent_id": {"handle": 101}, "src_agent_id": {"handle": 100}, "bytes": 1 << 20}]
    markers = [api("MARKER_CORE_API", 2, 7001, 1000, 10000, 10), api("MARKER_CORE_API", 2, 7001, 11000, 20000, 11),
               api("MARKER_CORE_API", 1, 7001, 10500, 10500, 12)]
    messages = [{"key": 10, "value": tracelens(8, 4096)}, {"key": 11, "value": tracelens(8, 4097)},
                {"key": 12, "value": "tick"}]
    doc = {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": pid, "init_time": 0, "fini_time": 30000, "command": ["python3", "serve.py"]},
        "agents": agents, "counters": [],
        "strings": {"callback_records": [], "marker_api": messages, "correlation_id": {"external": []},
                    "buffer_records": [{"kind": k, "operations": ops.get(k, [])} for k in kinds]},
        "code_objects": [], "kernel_symbols": symbols, "host_functions": [], "summary": [],
        "callback_records": {"counter_collection": []},
        "buffer_records": {"kernel_dispatch": dispatches, "hip_api": hip, "hsa_api": [], "marker_api": markers,
                           "rccl_api": [], "memory_copy": copies, "scratch_memory": []},
    }]}
    (OUT / "rocprofv3_markers.json").write_text(json.dumps(doc, indent=4) + "\n")
    truth["rocprofv3_markers.json"] = {
        "format": "rocprofv3_json", "kernels": 2, "kernel_sum_ns": 4000 + 2000, "memcpys": 2,
        "memcpy_bytes": 1 << 20, "memsets": 1, "launches": 5, "driver": 0, "user_annotations": 2,
        "overruns": {"count": 1, "max_ns": 300}, "kernels_outside_steps": 0,
        "demangled": "void at::native::reduce_kernel<512, 1>(int)",
        "steps": [step(tracelens(8, 4096), 1, 4000, memcpys=1, memsets=1),
                  step(tracelens(8, 4097), 1, 2000, memcpys=1)],
    }


# ---------------------------------------------------------------- rocprofv3 CSV
def write_csv(path, header, rows, quote_all=True):
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC if quote_all else csv.QUOTE_MINIMAL, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    path.write_text(buf.getvalue())


def rocprofv3_csv():
    d = OUT / "rocprofv3_csv_old"
    for f in d.glob("*.csv") if d.exists() else []:
        f.unlink()
    # Early rocprofv3 (ROCm 6.2): bare agent numbers (node ids), Private/Group_Segment_Size, no Stream_Id.
    write_csv(d / "7101_agent_info.csv", ["Node_Id", "Logical_Node_Id", "Agent_Type", "Cpu_Cores_Count", "Cu_Count",
                                          "Name", "Vendor_Name", "Product_Name"],
              [[0, 0, "CPU", 96, 0, "AMD EPYC 9654", "CPU", "AMD EPYC 9654"],
               [1, 1, "GPU", 0, 304, "gfx942", "AMD", "AMD Instinct MI300X"],
               [2, 2, "GPU", 0, 304, "gfx942", "AMD", "AMD Instinct MI300X"]])
    head = ["Kind", "Agent_Id", "Queue_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id",
            "Start_Timestamp", "End_Timestamp", "Private_Segment_Size", "Group_Segment_Size", "Workgroup_Size_X",
            "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
    write_csv(d / "7101_kernel_trace.csv", head, [
        ["KERNEL_DISPATCH", 2, 2, 7101, 3, 19, "subtract_kernel(float*, float const*, float const*, int, int)", 7,
         12000, 13000, 0, 4096, 64, 1, 1, 1024, 1024, 1],
        ["KERNEL_DISPATCH", 1, 1, 7101, 1, 16, "void addition_kernel<float>(float*, float const*, float const*, int, int)",
         5, 2000, 3000, 0, 0, 64, 1, 1, 1024, 1024, 1],
        ["KERNEL_DISPATCH", 1, 1, 7101, 2, 2, "__amd_rocclr_fillBufferAligned", 6, 3000, 3200, 0, 0, 256, 1, 1, 4096,
         1, 1]])
    api = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
    write_csv(d / "7101_hip_api_trace.csv", api, [
        ["HIP_RUNTIME_API", "hipLaunchKernel", 7101, 7101, 5, 1100, 1200],
        ["HIP_RUNTIME_API", "hipMemsetAsync", 7101, 7101, 6, 1300, 1350],
        ["HIP_RUNTIME_API", "hipMemcpy", 7101, 7101, 8, 1400, 1500],
        ["HIP_RUNTIME_API", "hipLaunchKernel", 7101, 7101, 7, 11100, 11200]])
    write_csv(d / "7101_marker_api_trace.csv", api, [
        ["MARKER_CORE_API", "kl1.step#0 phase=decode rows=1 requests=1", 7101, 7101, 1, 1000, 10000],
        ["MARKER_CORE_API", "kl1.step#1 phase=decode rows=1 requests=1", 7101, 7101, 2, 11000, 20000],
        ["MARKER_CORE_API", "tick", 7101, 7101, 3, 10500, 10500]])
    write_csv(d / "7101_memory_copy_trace.csv",
              ["Kind", "Direction", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id", "Start_Timestamp",
               "End_Timestamp"], [["MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE", 0, 1, 8, 4000, 5000]])
    truth["rocprofv3_csv_old/7101_kernel_trace.csv"] = {
        "format": "rocprofv3_csv", "kernels": 2, "kernel_sum_ns": 2000, "memcpys": 1, "memsets": 1, "launches": 4,
        "driver": 0, "user_annotations": 2, "kernels_outside_steps": 0,
        "devices": {"5": 0, "7": 1},
        "steps": [step("kl1.step#0 phase=decode rows=1 requests=1", 1, 1000, memcpys=1, memsets=1),
                  step("kl1.step#1 phase=decode rows=1 requests=1", 1, 1000)],
    }

    d = OUT / "rocprofv3_csv_new"
    for f in d.glob("*.csv") if d.exists() else []:
        f.unlink()
    # Later rocprofv3 (ROCm 7): "Agent N" (logical node index), Stream_Id, LDS_Block_Size and the VGPR counts.
    agents = ["Node_Id", "Logical_Node_Id", "Agent_Type", "Cu_Count", "Name", "Product_Name", "Gpu_Id"]
    head = ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
            "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
            "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
            "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
    api = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
    copy = ["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id",
            "Start_Timestamp", "End_Timestamp"]
    # The GEMM's LDS: rocprofv3's own CSV writes its symbol's 16,640 static bytes rounded up to 512 (16,896);
    # rocpd's export (the GUID form) the dispatch's group segment, 16,640.
    for pid, upper, lds_of_gemm in [(7201, False, 16896), (7202, True, 16640)]:
        hd = lambda h: (["GUID"] + [x.upper() for x in h]) if upper else h  # noqa: E731
        g = lambda row: (["0f3c9a1e"] + row) if upper else row  # noqa: E731
        write_csv(d / f"{pid}_agent_info.csv", hd(agents),
                  [g([0, 0, "CPU", 0, "AMD EPYC 9654", "AMD EPYC 9654", 0]),
                   g([1, 1, "GPU", 304, "gfx942", "AMD Instinct MI300X", 1234]),
                   g([2, 2, "GPU", 304, "gfx942", "AMD Instinct MI300X", 5678])])
        write_csv(d / f"{pid}_kernel_trace.csv", hd(head), [
            g(["KERNEL_DISPATCH", "Agent 1", 1, 1, pid, 1, 4,
               "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)", 3,
               2000, 2500, 0, 0, 16, 0, 16, 256, 1, 1, 65536, 1, 1]),
            g(["KERNEL_DISPATCH", "Agent 2", 2, 2, pid, 2, 5, "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", 4, 2600, 3000,
               lds_of_gemm, 0, 128, 0, 32, 256, 1, 1, 77824, 1, 1])])
        write_csv(d / f"{pid}_hip_api_trace.csv", hd(api), [
            g(["HIP_RUNTIME_API_EXT", "hipLaunchKernel", pid, pid, 3, 1100, 1200]),
            g(["HIP_RUNTIME_API_EXT", "hipLaunchKernel", pid, pid, 4, 1300, 1400]),
            g(["HIP_RUNTIME_API_EXT", "hipMemcpyAsync", pid, pid, 6, 1500, 1600])])
        write_csv(d / f"{pid}_marker_api_trace.csv", hd(api), [
            g(["MARKER_CORE_RANGE_API", tracelens(2, 300), pid, pid, 5, 1000, 9000])])
        write_csv(d / f"{pid}_memory_copy_trace.csv", hd(copy), [
            g(["MEMORY_COPY", "MEMORY_COPY_DEVICE_TO_HOST", 1, "Agent 1", "Agent 0", 6, 3000, 3500])])
        truth[f"rocprofv3_csv_new/{pid}_kernel_trace.csv"] = {
            "format": "rocprofv3_csv", "kernels": 2, "kernel_sum_ns": 500 + 400, "memcpys": 1, "memsets": 0,
            "launches": 3, "driver": 0, "user_annotations": 1, "kernels_outside_steps": 0,
            "devices": {"3": 0, "4": 1},
            "steps": [step(tracelens(2, 300), 2, 900, memcpys=1)],
        }


# ---------------------------------------------------------------- Chrome-trace array (rpd2tracing)
def chrome_array():
    ev = ['{"name": "process_name", "ph": "M", "pid":"0","args":{"name":"GPU0"}}',
          '{"name":"thread_name","ph":"M","pid":"8001","tid":"8001","args":{"name":"Hip 8001"}}']
    flows = []

    def x(pid, tid, name, ts, dur, desc):
        ev.append('{"pid":"%s","tid":"%s","name":"%s","ts":"%s","dur":"%s","ph":"X","args":{"desc":"%s"}}'
                  % (pid, tid, name, ts, dur, desc))

    def linked(api, t0, d0, op_name, op_desc, t1, d1):
        x(8001, 8001, api, t0, d0, "stream=0x0")
        x(0, 1, op_name, t1, d1, op_desc)
        n = len(flows) + 1
        # rpd2tracing: the start 2 µs before the call's end, or at the op's start if that is earlier.
        start = min(float(t0) + float(d0) - 2, float(t1))
        flows.append('{"pid":"8001","tid":"8001","cat":"api_op","name":"api_op","ts":"%s","id":"%d","ph":"s"}'
                     % (f"{start:.3f}", n))
        flows.append('{"pid":"0","tid":"1","cat":"api_op","name":"api_op","ts":"%s","id":"%d","ph":"f", "bp":"e"}'
                     % (t1, n))

    m0 = "kl1.step#0 phase=decode rows=2 requests=2"
    m1 = "kl1.step#1 phase=decode rows=2 requests=2"
    x(8001, 8001, m0, "1000.000", "9000.000", m0)
    linked("hipLaunchKernel", "1100.000", "100.000", "Cijk_Ailk_Bljk_SB_MT64x64x16", "KernelExecution",
           "2000.000", "600.500")
    # A call shorter than 2 µs: the flow starts before the call does.
    linked("hipMemcpyAsync", "1300.000", "1.500", "CopyHostToDevice", "CopyHostToDevice", "3000.250", "900.000")
    linked("hipMemsetAsync", "1400.000", "10.000", "FillBuffer", "FillBuffer", "4000.000", "10.125")
    x(8001, 8001, m1, "11000.000", "9000.000", m1)
    linked("hipLaunchKernel", "11100.000", "50.000", "void at::native::reduce_kernel<512, 1>(int)", "KernelExecution",
           "12000.000", "1000.000")
    x(0, 1, m1, "11999.000", "1001.000", "UserMarker frame: 1 ops")
    ev += flows
    ev.append('{"pid":"0","name":"QueueDepth","ph":"C","ts":12000.0,"args":{"depth":1}}')
    # rpd2tracing's layout: "[ {}" then one ",{...}" per line; this one stops without the closing ']'.
    (OUT / "chrome_array_open.json").write_text("[ {}\n" + "".join("," + e + "\n" for e in ev))
    truth["chrome_array_open.json"] = {
        "format": "chrome_array", "kernels": 2, "kernel_sum_ns": 600500 + 1000000, "memcpys": 1, "memsets": 1,
        "launches": 4, "driver": 0, "user_annotations": 2, "kernels_outside_steps": 0,
        "steps": [step(m0, 1, 600500, memcpys=1, memsets=1), step(m1, 1, 1000000)],
    }


nsys_node()
nsys_graph()
rocpd()
rpd()
rocprofv3_json()
rocprofv3_csv()
chrome_array()
(OUT / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
