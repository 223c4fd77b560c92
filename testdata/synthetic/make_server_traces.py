#!/usr/bin/env python3
"""Small Kineto traces shaped as stock serving engines write them, with the steps, kernels per step and
tokens per step each one must give, worked out here independently of kineto-trace.

    python3 testdata/synthetic/make_server_traces.py testdata/synthetic/server_traces

writes one trace per case and `expected.json` beside them; `crates/kineto-trace/tests/server_traces.rs`
compares kineto's steps with it. Standard library only.

Each case is built from what the server's source does once per engine step (docs/steps-and-budgets.md
§2 names the versions read):

* vllm_v1_stack   — vLLM V1, its own profiler (`with_stack`, `record_shapes`), eager: python_function events
                    `vllm/v1/worker/gpu_worker.py(N): execute_model` around
                    `vllm/v1/worker/gpu_model_runner.py(N): execute_model`, and since the split of sampling
                    a `sample_tokens` after them; GEMM cpu_ops with `Input Dims`; a dummy run before the
                    first step (its kernels outside every step).
* vllm_v0_stack   — vLLM V0 under a site-packages prefix: `vllm/worker/worker_base.py(N): execute_model`
                    around `vllm/worker/model_runner.py(N): execute_model`.
* vllm_annotated  — recent vLLM: `execute_context_R(T)_generation_R(T)` annotations around the runner's
                    `execute_model` (the python_function events are there too; the annotation wins).
* sglang_spans    — SGLang's `step[MODE bs=N …]` spans, plain and with detailed counts, and a draft
                    model's `draft step[…]` (not a step: its kernels are outside).
* sglang_stack    — SGLang without spans (older releases): `ModelRunner.forward` on the overlap scheduler's
                    forward thread, launches on that thread.
* trtllm_modules  — TensorRT-LLM's PyTorch backend (its profiler: `record_shapes`, `with_modules`, no
                    stack): `nn.Module: LlamaForCausalLM_0` per eager (context) step, CUDA-graph replays
                    for the decode steps, outside any module call.
* trtllm_nvtx     — the same server's NVTX ranges as annotation spans (a native capture):
                    `[Executor] _forward_step N: C ctx reqs, G gen reqs`.
* vllm_v1_graphs  — stock vLLM V1 (`with_stack`, `record_shapes`) with its default CUDA graphs: a first
                    step of a 1,000-token prompt run eagerly (beyond the captured sizes), then decode steps
                    whose model is one full-graph replay and whose LM head and sampler run eagerly after
                    it (the issue 43 trace: no marker states a phase).
* train_forward   — a training loop without `ProfilerStep` (its profiler driven by hand): a `train_step N`
                    annotation around each iteration, the model's `nn.Module: LlamaForCausalLM_0` forward
                    inside it, then the backward and the optimizer's kernels: the step is the enclosing
                    annotation, not the forward (issue 43: a forward-only step left backward and optimizer
                    out).
* graph_only      — no marker at all: each cudaGraphLaunch is a step; the replays' sizes from a vLLM
                    graph-capture trace beside it (`capture_traces/`), matched by their op counts.

The expected values are computed from the events by brute force: each kernel's launch by correlation id,
the markers of the launch's process containing the launch's start (the innermost), GEMM rows as the most
frequent activation rows of the step's GEMMs, a replay's size from the capture with as many launches, and
each step's phase: the marker's where it states one, else `decode` for a step with graph-launched kernels
and no attention kernel launched eagerly (the servers replay full graphs for decode batches only), else
unknown (`phase_of_step`).
"""

import json
import os
import sys
from collections import Counter

PID = 4242
MAIN = 4242
FWD = 4300  # SGLang's forward thread
GPU_PID, STREAM = 0, 7


class Trace:
    def __init__(self):
        self.events = []
        self.corr = 0
        self.gpu_t = 1_000_000.0  # µs; GPU work runs behind the CPU
        self.pyid = 0

    def x(self, cat, name, ts, dur, tid=MAIN, pid=PID, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3),
             "dur": round(dur, 3)}
        if args is not None:
            e["args"] = args
        self.events.append(e)
        return e

    def py(self, name, ts, dur, tid=MAIN):
        self.pyid += 1
        return self.x("python_function", name, ts, dur, tid,
                      args={"Python parent id": self.pyid - 1, "Python id": self.pyid, "Ev Idx": self.pyid})

    def kernel(self, name, corr, dur=3.0):  # noqa: D401
        self.x("kernel", name, self.gpu_t, dur, tid=STREAM, pid=GPU_PID,
               args={"device": 0, "stream": STREAM, "correlation": corr, "grid": [1, 1, 1],
                     "block": [128, 1, 1]})
        self.gpu_t += dur + 1.0

    def launch(self, name, ts, tid=MAIN, dur=3.0):
        self.corr += 1
        self.x("cuda_runtime", "cudaLaunchKernel", ts, 1.0, tid, args={"correlation": self.corr, "cbid": 211})
        self.kernel(name, self.corr, dur)
        return self.corr

    def graph(self, ts, names, tid=MAIN, api="cudaGraphLaunch"):
        self.corr += 1
        self.x("cuda_runtime", api, ts, 5.0, tid, args={"correlation": self.corr, "cbid": 311})
        for n in names:
            self.kernel(n, self.corr)
        return self.corr

    def gemm(self, ts, rows, hidden=64, out=64, tid=MAIN, dur=3.0):
        """aten::linear over aten::addmm (the shapes record_shapes writes), one GEMM kernel."""
        self.x("cpu_op", "aten::linear", ts, 4.0, tid,
               args={"Input Dims": [[rows, hidden], [out, hidden], [out]], "External id": 1})
        self.x("cpu_op", "aten::addmm", ts + 0.5, 3.0, tid,
               args={"Input Dims": [[out], [rows, hidden], [hidden, out], [], []], "External id": 2})
        return self.launch("sm90_xmma_gemm_bf16bf16_bf16f32", ts + 1.0, tid, dur)

    def dump(self, path, extra=None):
        doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
                                                          "totalGlobalMem": 85899345920, "numSms": 132}],
               "traceEvents": self.events, "displayTimeUnit": "ms"}
        if extra:
            doc.update(extra)
        with open(path, "w") as f:
            json.dump(doc, f, indent=None, separators=(",", ":"))


def forward(t, ts, rows, layers=2, tid=MAIN, lm_head_rows=None):
    """One eager model forward: per layer a qkv and an o projection (GEMMs of `rows` rows) and an
    attention kernel; the LM head over the logit rows. Returns the end time."""
    for _ in range(layers):
        t.gemm(ts, rows, tid=tid)
        t.launch("flash_fwd_kernel", ts + 6, tid)
        t.gemm(ts + 8, rows, tid=tid)
        ts += 14
    t.gemm(ts, lm_head_rows if lm_head_rows is not None else rows, tid=tid)
    return ts + 6


# ---- cases -------------------------------------------------------------------------------------------

def vllm_v1_stack():
    t = Trace()
    root = t.py("vllm/v1/engine/core.py(400): run_busy_loop", 0, 10_000)
    # A dummy run before profiling's first step (not a step function): outside every step.
    t.py("vllm/v1/worker/gpu_model_runner.py(2000): _dummy_run", 10, 40)
    t.launch("fill_dummy_kernel", 12)
    t.launch("fill_dummy_kernel", 14)
    steps = []  # (rows, has sample_tokens tail)
    ts = 100.0
    for rows, tail in [(300, False), (41, True), (8, True)]:
        t.py("vllm/v1/worker/gpu_worker.py(450): execute_model", ts, 200)
        t.py("vllm/v1/worker/gpu_model_runner.py(2300): execute_model", ts + 2, 190)
        forward(t, ts + 10, rows, lm_head_rows=min(rows, 8))
        if tail:
            # sample_tokens after execute_model: the sampler's kernel belongs to the step.
            t.py("vllm/v1/worker/gpu_worker.py(470): sample_tokens", ts + 210, 30)
            t.py("vllm/v1/worker/gpu_model_runner.py(2500): sample_tokens", ts + 211, 28)
            t.launch("sampling_kernel", ts + 215)
        steps.append(rows)
        ts += 400
    return t, {}


def vllm_v0_stack():
    t = Trace()
    pre = "/usr/local/lib/python3.10/site-packages/"
    ts = 100.0
    for rows in [17, 4]:
        t.py(pre + "vllm/worker/worker_base.py(300): execute_model", ts, 150)
        t.py(pre + "vllm/worker/model_runner.py(1600): execute_model", ts + 3, 140)
        forward(t, ts + 10, rows, layers=3, lm_head_rows=4)
        ts += 300
    # A launch between steps (the engine's own bookkeeping): outside.
    t.launch("index_put_kernel", ts - 50)
    return t, {}


def vllm_annotated():
    t = Trace()
    ts = 100.0
    for (cr, ct, gr, gt) in [(2, 512, 30, 30), (0, 0, 32, 32)]:
        t.x("user_annotation", f"execute_context_{cr}({ct})_generation_{gr}({gt})", ts, 180,
            args={"External id": 9})
        t.py("vllm/v1/worker/gpu_model_runner.py(2300): execute_model", ts + 1, 175)
        forward(t, ts + 10, ct + gt)
        ts += 300
    return t, {}


def sglang_spans():
    t = Trace()
    ts = 100.0
    for name, rows in [("step[EXTEND bs=2 toks=300]", 300), ("step[DECODE bs=16]", 16),
                       ("step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 "
                        "g_sqsq=1 g_sqsk=12]", 6)]:
        t.x("user_annotation", name, ts, 150, tid=FWD)
        forward(t, ts + 5, rows, tid=FWD)
        ts += 200
        # The EAGLE drafter's forward after the target's: named, not a step of the served model.
        t.x("user_annotation", "draft step[DECODE bs=2]", ts - 40, 30, tid=FWD)
        t.launch("draft_kernel", ts - 35, tid=FWD)
    return t, {}


def sglang_stack():
    t = Trace()
    # The scheduler thread runs its loop; the forward thread runs ModelRunner.forward.
    t.py("sglang/srt/managers/scheduler.py(900): event_loop_overlap", 0, 2000, tid=MAIN)
    ts = 100.0
    for rows in [128, 9]:
        t.py("python3.12/site-packages/sglang/srt/managers/tp_worker.py(200): forward_batch_generation",
             ts, 160, tid=FWD)
        t.py("python3.12/site-packages/sglang/srt/model_executor/model_runner.py(1505): forward",
             ts + 2, 150, tid=FWD)
        t.py("python3.12/site-packages/sglang/srt/model_executor/model_runner.py(1600): forward_extend",
             ts + 3, 140, tid=FWD)
        forward(t, ts + 10, rows, tid=FWD, lm_head_rows=2)
        ts += 250
    return t, {}


def trtllm_modules():
    t = Trace()
    ts = 100.0
    # Context step: the model module runs eagerly.
    t.x("python_function", "nn.Module: LlamaForCausalLM_0", ts, 120, args={"Python module id": 0})
    forward(t, ts + 5, 200, lm_head_rows=2)
    ts += 200
    # Decode steps: CUDA-graph replays (the module is not called).
    for _ in range(3):
        t.graph(ts, ["gemm_a", "attn_decode", "gemm_b", "lm_head_gemm"])
        ts += 50
    # Another context step.
    t.x("python_function", "nn.Module: LlamaForCausalLM_0", ts, 120, args={"Python module id": 0})
    forward(t, ts + 5, 64, lm_head_rows=1)
    return t, {"record_shapes": 1}


def trtllm_nvtx():
    t = Trace()
    ts = 100.0
    for it, (c, g, rows) in enumerate([(1, 3, 131), (0, 4, 4)]):
        t.x("user_annotation", f"[Executor] _forward_step {it + 10}: {c} ctx reqs, {g} gen reqs", ts, 150)
        forward(t, ts + 5, rows)
        ts += 200
    return t, {}


def vllm_v1_graphs():
    t = Trace()
    t.py("vllm/v1/engine/core.py(400): run_busy_loop", 0, 10_000)
    ts = 100.0
    # The prompt: 1,000 tokens, eager (more tokens than the largest captured graph), long kernels.
    t.py("vllm/v1/worker/gpu_worker.py(450): execute_model", ts, 300)
    t.py("vllm/v1/worker/gpu_model_runner.py(2300): execute_model", ts + 2, 290)
    for layer in range(2):
        at = ts + 10 + 20 * layer
        t.gemm(at, 1000, dur=60.0)
        t.launch("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>(long const*)", at + 6, dur=5.0)
        t.launch("flash_fwd_splitkv_kernel", at + 8, dur=80.0)
        t.gemm(at + 10, 1000, dur=60.0)
    t.gemm(ts + 60, 1, dur=4.0)  # the LM head over the one logit row
    t.launch("sampling_kernel", ts + 70)
    ts += 400
    # Five decode steps of 8 requests: one full-graph replay, then the LM head and sampler eagerly.
    for _ in range(5):
        t.py("vllm/v1/worker/gpu_worker.py(450): execute_model", ts, 100)
        t.py("vllm/v1/worker/gpu_model_runner.py(2300): execute_model", ts + 2, 90)
        t.graph(ts + 10, ["sm90_xmma_gemm_bf16bf16_bf16f32", "reshape_and_cache_flash_kernel",
                          "flash_fwd_splitkv_kernel", "sm90_xmma_gemm_bf16bf16_bf16f32"] * 2)
        t.gemm(ts + 20, 8)
        t.launch("sampling_kernel", ts + 30)
        ts += 200
    return t, {"record_shapes": 1}


def train_forward():
    t = Trace()
    ts = 100.0
    for it in range(3):
        t.x("user_annotation", f"train_step {it}", ts, 300)
        t.x("python_function", "nn.Module: LlamaForCausalLM_0", ts + 5, 100, args={"Python module id": 0})
        forward(t, ts + 10, 16, lm_head_rows=16)
        for k in range(3):  # the backward, on the autograd thread
            t.launch("void at::native::elementwise_kernel_backward", ts + 150 + k, tid=MAIN + 1)
        t.launch("multi_tensor_apply_kernel", ts + 250)  # the optimizer
        ts += 400
    return t, {}


def enclosing(events, forward_pred):
    """Per model forward, the innermost user annotation of its thread containing it and longer."""
    out = []
    for f in events:
        if f["cat"] != "python_function" or not forward_pred(f["name"]):
            continue
        around = [a for a in events if a["cat"] == "user_annotation" and a["tid"] == f["tid"]
                  and a["ts"] <= f["ts"] and a["ts"] + a["dur"] >= f["ts"] + f["dur"] and a["dur"] > f["dur"]]
        a = max(around, key=lambda a: (a["ts"], -a["dur"]))
        out.append((a["name"], a["ts"], a["ts"] + a["dur"], a["tid"]))
    return out


def graph_only(out_dir):
    t = Trace()
    ts = 100.0
    # Three replays of the 8-token graph (4 kernels), one of the 16-token graph (5: a split-k reduce),
    # one of a 3-kernel graph no capture has; an eager copy kernel between replays: outside.
    shape = {8: ["qkv", "attn", "o", "mlp"], 16: ["qkv", "attn", "o", "mlp", "splitk_reduce"],
             None: ["a", "b", "c"]}
    order = [8, 8, 16, 8, None]
    for size in order:
        t.graph(ts, shape[size], api="hipGraphLaunch")
        t.launch("copy_kernel", ts + 10)
        ts += 60
    # The capture trace: capture_N_FULL around a stream capture of as many launch calls.
    c = Trace()
    cts = 10.0
    for size in [8, 16]:
        c.x("user_annotation", f"capture_{size}_FULL", cts, 100)
        c.x("cuda_runtime", "hipStreamBeginCapture", cts + 5, 1)
        for i, _ in enumerate(shape[size]):
            c.corr += 1
            c.x("cuda_runtime", "hipLaunchKernel", cts + 10 + i, 0.5, args={"correlation": c.corr})
        c.x("cuda_runtime", "hipStreamEndCapture", cts + 50, 1)
        cts += 200
    cap_dir = os.path.join(out_dir, "graph_only", "capture_traces")
    os.makedirs(cap_dir, exist_ok=True)
    c.dump(os.path.join(cap_dir, "graph_capture_rank_0.1700000000000000000.pt.trace.json"))
    return t, {}


# ---- the expected values, by brute force over the events -------------------------------------------

GEMMS = {"aten::mm": 0, "aten::addmm": 1, "aten::linear": 0, "aten::_scaled_mm": 0}


def rows_of(dims, i):
    d = dims[i]
    r = 1
    for x in d[:-1]:
        r *= x
    return r


ATTENTION = ("attn", "attention", "fmha", "flash_fwd", "mha_")


def phase_of_step(s, kernels, launches, inside, i, phase_of):
    """(phase, how) of step i: the marker's phase (phase_of(name)), else decode when some kernel came
    from a graph launch and no attention kernel was launched eagerly, else unknown (None, None)."""
    if phase_of is not None and phase_of(s["name"]) is not None:
        return phase_of(s["name"]), "marker"
    graph = attention_eager = 0
    for k in kernels:
        c = k["args"]["correlation"]
        launch = launches[c]
        if s["graph"] is not None:
            mine = c == s["graph"]
        else:
            mine = inside(launch["ts"]) == i and not launch["name"].endswith("GraphLaunch") or (
                launch["name"].endswith("GraphLaunch") and inside(launch["ts"]) == i)
        if not mine:
            continue
        if launch["name"].endswith("GraphLaunch"):
            graph += 1
        elif any(w in k["name"].lower() for w in ATTENTION):
            attention_eager += 1
    if graph > 0 and attention_eager == 0:
        return "decode", "graph_replay"
    return None, None


def expect(events, markers, replay_steps=False, captures=None, tokens_of=None, phase_of=None):
    """markers: list of (name, ts, end, tid) CPU ranges (already the profile's outermost); replay_steps:
    graph launches outside every marker are steps of their own. tokens_of(marker name) → marker tokens;
    phase_of(marker name) → the phase the marker states (None: it states none)."""
    launches = {e["args"]["correlation"]: e for e in events if e["cat"] == "cuda_runtime"}
    kernels = [e for e in events if e["cat"] == "kernel"]
    graphs = [e for e in events if e["cat"] == "cuda_runtime" and "GraphLaunch" in e["name"]]

    def inside(t):
        best = None
        for i, (_, a, b, _tid) in enumerate(markers):
            if a <= t < b and (best is None or markers[best][1] <= a):
                best = i
        return best

    steps = [{"name": m[0], "ts": m[1], "kernels": [], "gemm_rows": [], "graph": None} for m in markers]
    graph_step = {}
    if replay_steps:
        for g in graphs:
            if inside(g["ts"]) is None:
                graph_step[g["args"]["correlation"]] = len(steps)
                steps.append({"name": g["name"], "ts": g["ts"], "kernels": [], "gemm_rows": [],
                              "graph": g["args"]["correlation"]})
    order = sorted(range(len(steps)), key=lambda i: steps[i]["ts"])
    outside = Counter()
    for k in kernels:
        c = k["args"]["correlation"]
        s = graph_step.get(c)
        if s is None:
            s = inside(launches[c]["ts"])
        if s is None:
            outside[k["name"]] += 1
        else:
            steps[s]["kernels"].append(k["name"])
    for e in events:
        if e["cat"] == "cpu_op" and e["name"] in GEMMS:
            s = inside(e["ts"])
            if s is not None:
                steps[s]["gemm_rows"].append(rows_of(e["args"]["Input Dims"], GEMMS[e["name"]]))
    out = []
    for i in order:
        s = steps[i]
        marker = tokens_of(s["name"]) if tokens_of else None
        query = marker.get("query_tokens") if marker else None
        src = ["marker"] if marker else []
        has_graph = s["graph"] is not None or any(
            launches[k["args"]["correlation"]]["name"].endswith("GraphLaunch")
            for k in kernels if inside(launches[k["args"]["correlation"]]["ts"]) == i)
        if query is None and s["gemm_rows"] and not has_graph:
            query = Counter(s["gemm_rows"]).most_common(1)[0][0]
            src.append("gemm_rows")
        if query is None and s["graph"] is not None and captures is not None:
            ops = sum(1 for k in kernels if k["args"]["correlation"] == s["graph"])
            sizes = {size for size, n in captures if n == ops}
            if len(sizes) == 1:
                query = sizes.pop()
                src.append("graph_capture")
        phase, phase_from = phase_of_step(s, kernels, launches, inside, i, phase_of)
        row = {"name": s["name"], "kernels": len(s["kernels"]), "kernel_names": sorted(set(s["kernels"])),
               "query_tokens": query, "tokens_from": src, "phase": phase, "phase_from": phase_from}
        if marker:
            row.update({k: v for k, v in marker.items() if k != "query_tokens"})
        out.append(row)
    return out, sum(outside.values()), dict(outside)


def outermost(spans):
    """Per thread, spans no other span of the set contains, by start (longest first on ties)."""
    spans = sorted(spans, key=lambda s: (s["tid"], s["ts"], -s["dur"]))
    out, open_ = [], None
    for s in spans:
        if open_ and open_[0] == s["tid"] and s["ts"] < open_[1]:
            continue
        open_ = (s["tid"], s["ts"] + s["dur"])
        out.append(s)
    return out


def py_markers(events, steps_fns, tail_fns):
    def ident(name):
        left, func = name.rsplit("): ", 1)
        return left.rsplit("(", 1)[0], func

    def is_fn(name, fns):
        try:
            path, func = ident(name)
        except ValueError:
            return False
        return any(func == f and (path == p or path.endswith("/" + p)) for p, f in fns)

    calls = outermost([e for e in events if e["cat"] == "python_function"
                       and (is_fn(e["name"], steps_fns) or is_fn(e["name"], tail_fns))])
    calls.sort(key=lambda e: e["ts"])
    markers = []
    for e in calls:
        if is_fn(e["name"], steps_fns):
            markers.append([e["name"], e["ts"], e["ts"] + e["dur"], e["tid"]])
        elif markers and markers[-1][3] == e["tid"]:
            markers[-1][2] = max(markers[-1][2], e["ts"] + e["dur"])
    return [tuple(m) for m in markers]


# Every Python function a step profile names (docs/steps-and-budgets.md §2): the parser keeps these
# python_function events, and the whole-model forwards, and drops the rest.
ALL_FUNCTIONS = [
    ("vllm/v1/worker/gpu_worker.py", "execute_model"), ("vllm/v1/worker/gpu_worker.py", "sample_tokens"),
    ("vllm/v1/worker/gpu_model_runner.py", "execute_model"),
    ("vllm/v1/worker/gpu_model_runner.py", "sample_tokens"),
    ("vllm/v1/worker/gpu/model_runner.py", "execute_model"),
    ("vllm/v1/worker/gpu/model_runner.py", "sample_tokens"),
    ("vllm/worker/worker_base.py", "execute_model"), ("vllm/worker/model_runner.py", "execute_model"),
    ("sglang/srt/model_executor/model_runner.py", "forward"),
    ("sglang/srt/managers/controller/model_runner.py", "forward"),
    ("tensorrt_llm/_torch/pyexecutor/py_executor.py", "_forward_step"),
]


def kept(events):
    def is_kept(name):
        if name.startswith("nn.Module: "):
            cls = name[len("nn.Module: "):].rsplit("_", 1)[0]
            return any(cls.endswith(e) and len(cls) > len(e)
                       for e in ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel"))
        if "): " not in name:
            return False
        left, func = name.rsplit("): ", 1)
        path = left.rsplit("(", 1)[0]
        return any(func == f and (path == p or path.endswith("/" + p)) for p, f in ALL_FUNCTIONS)

    return sum(1 for e in events if e["cat"] == "python_function" and is_kept(e["name"]))


def ann_markers(events, pred):
    return [(e["name"], e["ts"], e["ts"] + e["dur"], e["tid"]) for e in events
            if e["cat"] in ("user_annotation", "cpu_op") and pred(e["name"])]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "server_traces")
    os.makedirs(out_dir, exist_ok=True)
    expected = {}

    vllm_steps = [("vllm/v1/worker/gpu_worker.py", "execute_model"),
                  ("vllm/v1/worker/gpu_model_runner.py", "execute_model"),
                  ("vllm/worker/worker_base.py", "execute_model"),
                  ("vllm/worker/model_runner.py", "execute_model")]
    vllm_tails = [("vllm/v1/worker/gpu_worker.py", "sample_tokens"),
                  ("vllm/v1/worker/gpu_model_runner.py", "sample_tokens")]

    def save(name, t, extra, profile, markers, **kw):
        path = os.path.join(out_dir, name, f"{name}.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        t.dump(path, extra)
        steps, n_out, out_names = expect(t.events, markers, **kw)
        expected[name] = {"file": os.path.relpath(path, out_dir), "profile": profile, "steps": steps,
                          "kernels_outside": n_out, "outside": out_names,
                          "python_events": sum(1 for e in t.events if e["cat"] == "python_function"),
                          "python_kept": kept(t.events)}

    t, x = vllm_v1_stack()
    save("vllm_v1_stack", t, x, "vllm-python", py_markers(t.events, vllm_steps, vllm_tails))
    t, x = vllm_v0_stack()
    save("vllm_v0_stack", t, x, "vllm-python", py_markers(t.events, vllm_steps, vllm_tails))

    t, x = vllm_annotated()

    def vllm_tokens(n):
        import re
        m = re.fullmatch(r"execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)", n)
        cr, ct, gr, gt = map(int, m.groups())
        return {"query_tokens": ct + gt, "prefill_requests": cr, "decode_requests": gr, "requests": cr + gr}

    def requests_phase(c, g):
        return {(True, True): "mixed", (True, False): "prefill", (False, True): "decode"}.get((c > 0, g > 0))

    save("vllm_annotated", t, x, "vllm",
         ann_markers(t.events, lambda n: n.startswith("execute_context_")), tokens_of=vllm_tokens,
         phase_of=lambda n: requests_phase(vllm_tokens(n)["prefill_requests"], vllm_tokens(n)["decode_requests"]))

    t, x = sglang_spans()

    def sglang_tokens(n):
        import re
        m = re.fullmatch(r"step\[([A-Z_]+) bs=(\d+)(?: toks=(\d+))?(.*)\]", n)
        mode, bs, toks, rest = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        kv = dict(p.split("=") for p in rest.split())
        if mode == "MIXED":
            return {"query_tokens": int(kv["c_sq"]) + int(kv["g_sq"]), "requests": bs,
                    "prefill_requests": int(kv["c"]), "decode_requests": int(kv["g"])}
        if mode == "DECODE":  # one token per request in SGLang's DECODE mode
            return {"query_tokens": bs, "requests": bs, "decode_requests": bs}
        return {"query_tokens": int(toks), "requests": bs, "prefill_requests": bs}

    save("sglang_spans", t, x, "sglang",
         ann_markers(t.events, lambda n: n.startswith("step[")), tokens_of=sglang_tokens,
         phase_of=lambda n: n[len("step["):].split()[0])

    t, x = sglang_stack()
    save("sglang_stack", t, x, "sglang-python",
         py_markers(t.events, [("sglang/srt/model_executor/model_runner.py", "forward")], []))

    t, x = trtllm_modules()
    mods = [e for e in t.events if e["name"].startswith("nn.Module: ")]
    save("trtllm_modules", t, x, "model_forward",
         [(e["name"], e["ts"], e["ts"] + e["dur"], e["tid"]) for e in mods], replay_steps=True)

    t, x = trtllm_nvtx()

    def trt_tokens(n):
        import re
        m = re.fullmatch(r"\[Executor\] _forward_step \d+: (\d+) ctx reqs, (\d+) gen reqs", n)
        c, g = map(int, m.groups())
        return {"query_tokens": None, "prefill_requests": c, "decode_requests": g, "requests": c + g}

    save("trtllm_nvtx", t, x, "trtllm", ann_markers(t.events, lambda n: "_forward_step" in n),
         tokens_of=trt_tokens,
         phase_of=lambda n: requests_phase(trt_tokens(n)["prefill_requests"], trt_tokens(n)["decode_requests"]))

    t, x = vllm_v1_graphs()
    save("vllm_v1_graphs", t, x, "vllm-python", py_markers(t.events, vllm_steps, vllm_tails))

    t, x = train_forward()
    save("train_forward", t, x, "model_forward",
         enclosing(t.events, lambda n: n.startswith("nn.Module: ")))

    t, x = graph_only(out_dir)
    save("graph_only", t, x, "graph_replays", [], replay_steps=True, captures=[(8, 4), (16, 5)])

    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
