"""The kineto_trace module on real traces: counts against the corpus's independent inventory, exact
kernel durations against the JSON text read with Python's own json module, the top-N table against a
pandas group-by of the kernels, every table against the Parquet file `kineto-export` writes, errors
with file and byte offset.

The real traces are the shared corpus's (../shared/traces beside the clone): its tests are skipped, saying
so, without it, and fail when KL1_REQUIRE_CORPUS=1. The generated traces (testdata/synthetic, the demo
window, testdata/native) always run.
"""
import collections
import csv
import gzip
import json
import os
import signal
import subprocess
import threading
import time
from decimal import Decimal
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kineto_trace

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "traces"
# A rank of the generated demo window (`cargo xtask gen-window`): for what any trace shows.
DEMO = ROOT / "testdata" / "windows" / "demo" / "prof-short-b1.decode.rank0.pt.trace.json.gz"
REQUIRE = os.environ.get("KL1_REQUIRE_CORPUS") == "1"
DLRM = "param/dlrm_kineto"


def shared_or_skip():
    """The shared corpus (real traces from other repositories, never copied here), or a skip that says so;
    with KL1_REQUIRE_CORPUS=1 its absence fails."""
    if not SHARED.is_dir():
        if REQUIRE:
            pytest.fail(f"KL1_REQUIRE_CORPUS=1 but {SHARED} is missing")
        pytest.skip("needs ../shared/traces (the shared corpus)")
    return SHARED


def inventory():
    """(path, row) for every trace of the shared corpus's inventories (written by another tool)."""
    rows = []
    for inv in [SHARED / "INVENTORY.csv", SHARED / "serving" / "INVENTORY.csv"]:
        if inv.exists():
            with open(inv, newline="") as f:
                rows += [(inv.parent / r["path"], r) for r in csv.DictReader(f)]
    return rows


INVENTORY = inventory()


def load_json(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        # Decimal keeps the text's digits: µs with a fraction become exact ns.
        return json.load(f, parse_float=Decimal)


def kernel_durations_ns(doc):
    """Every kernel's dur in integer ns, from the JSON text (an X event of category kernel)."""
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    out = []
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel":
            out.append(int(Decimal(e["dur"]) * 1000))
    return out


@pytest.mark.parametrize(
    "path,row", INVENTORY, ids=[str(p.relative_to(SHARED)) for p, _ in INVENTORY] or None
)
def test_counts_equal_the_inventory(path, row):
    t = kineto_trace.read(path)
    ops = t.gpu_ops()
    kinds = pd.Series(ops["kind"].to_pylist(), dtype="object").value_counts()
    assert int(kinds.get("kernel", 0)) == int(row["kernel"])
    assert int(kinds.get("memcpy", 0)) == int(row["gpu_memcpy"])
    assert int(kinds.get("memset", 0)) == int(row["gpu_memset"])
    k = t.kernels()
    assert k.num_rows == int(row["kernel"])
    # kernels() is the leading slice of gpu_ops: every kernel row first, no kernel after it.
    assert set(k["kind"].to_pylist()) <= {"kernel"}
    assert "kernel" not in ops.slice(k.num_rows)["kind"].to_pylist()
    assert t.rank == (int(row["rank"]) if row["rank"] else None)
    s = t.summary_dict()
    assert s["events"] == int(row["events"])
    assert s["kernels"]["count"] == int(row["kernel"])


def test_inventory_is_present_when_required():
    shared_or_skip()
    assert len(INVENTORY) >= 40, f"{len(INVENTORY)} traces in the inventories"


def small_traces():
    # The generated traces (testdata/synthetic, the demo rank), and the corpus's small ones when it is there.
    synthetic = ROOT / "testdata" / "synthetic"
    out = [DEMO, synthetic / "sglang_steps.json"] + sorted((synthetic / "server_traces").glob("*/*.json"))
    if SHARED.is_dir():
        out += [p for p, _ in INVENTORY if p.stat().st_size < 8 << 20]
    return out


@pytest.mark.parametrize("path", small_traces(), ids=lambda p: p.name)
def test_kernel_durations_are_exact_ns(path):
    # Every generated and inventoried trace parses: a refusal here is a regression, not a skip.
    t = kineto_trace.read(path)
    k = t.kernels()
    expected = kernel_durations_ns(load_json(path))
    assert k.num_rows == len(expected)
    assert sorted(k["dur_ns"].to_pylist()) == sorted(expected)


def test_top_equals_a_pandas_group_by_of_the_kernels():
    shared_or_skip()
    t = kineto_trace.read(SHARED / DLRM / "worker0_step_12.1694128201545.pt.trace.json.gz")
    k = t.kernels().to_pandas()
    g = k.groupby("name")["dur_ns"]
    want = pd.DataFrame(
        {"count": g.size(), "total_ns": g.sum(), "min_ns": g.min(), "max_ns": g.max(), "median_ns": g.median()}
    ).reset_index()
    top = t.top(by="name", n=None).to_pandas()
    assert len(top) == len(want)
    merged = top.merge(want, on="name", suffixes=("", "_pd"))
    assert len(merged) == len(want)
    for c in ["count", "total_ns", "min_ns", "max_ns"]:
        assert (merged[c].astype("int64") == merged[c + "_pd"].astype("int64")).all(), c
    assert (merged["median_ns"] == merged["median_ns_pd"]).all()
    assert abs(top["pct"].sum() - 100.0) < 1e-9
    # Most total time first, then name.
    assert list(top["total_ns"]) == sorted(top["total_ns"], reverse=True)
    assert t.top(by="name", n=5).num_rows == 5
    fam = t.top(by="family", n=None).to_pandas()
    assert fam["count"].sum() == len(k)
    assert fam["total_ns"].sum() == k["dur_ns"].sum()


def test_top_per_step_keeps_the_first_n_of_each_step():
    t = kineto_trace.read(DEMO)
    every = t.top(by="bucket", n=None, per_step=True).to_pandas()
    per = t.top(by="bucket", n=2, per_step=True).to_pandas()
    assert len(every) > 0 and every["step"].notna().all()
    # Each step keeps its own first two groups (most total time first), in step order.
    want = every.groupby("step", sort=False).head(2).reset_index(drop=True)
    assert len(per) < len(every)
    pd.testing.assert_frame_equal(per, want)


def export(tmp_path, traces):
    exe = os.environ.get("KINETO_EXPORT")
    if not exe:
        pytest.skip("KINETO_EXPORT (the kineto-export binary) is not set")
    out = tmp_path / "pq"
    r = subprocess.run([exe, "--parquet", str(out), *map(str, traces)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("table", ["gpu_ops", "steps", "budget", "families", "annotations"])
def test_every_table_equals_the_parquet_export(tmp_path, table):
    shared_or_skip()
    out = export(tmp_path, [SHARED / DLRM])
    ranks = kineto_trace.read_ranks(SHARED / DLRM)
    assert [t.rank for t in ranks] == list(range(8))
    for t in ranks:
        files = list((out / table / f"rank={t.rank}").glob("*.parquet"))
        assert len(files) == 1
        from_file = pq.read_table(files[0])
        mine = getattr(t, "gpu_ops" if table == "gpu_ops" else table)()
        # The file carries the table's path as given to the exporter; the module the path as given to it.
        assert mine.schema.remove_metadata() == from_file.schema.remove_metadata()
        meta = pq.read_metadata(files[0]).metadata
        assert int(meta[b"kineto.schema_version"]) == kineto_trace.SCHEMA_VERSION
        assert mine.drop_columns(["file"]).equals(from_file.drop_columns(["file"]))


def test_schema_is_the_exported_tables_schema_and_tables_lists_the_export_directories(tmp_path):
    shared_or_skip()
    out = export(tmp_path, [SHARED / DLRM])
    # TABLES names the export's directories, each holding the table of that name.
    assert sorted(kineto_trace.TABLES) == sorted(p.name for p in out.iterdir() if p.is_dir())
    for table in kineto_trace.TABLES:
        f = next((out / table / "rank=0").glob("*.parquet"))
        assert kineto_trace.schema(table).remove_metadata() == pq.read_schema(f).remove_metadata()
    with pytest.raises(ValueError, match="gpu_opz"):
        kineto_trace.schema("gpu_opz")


def test_expand_paths_gives_a_directorys_rank_files_sorted_and_refuses_an_empty_one(tmp_path):
    shared_or_skip()
    d = SHARED / DLRM
    want = sorted(str(p) for p in d.iterdir() if p.name.endswith(".json.gz"))
    assert kineto_trace.expand_paths(d) == want
    assert kineto_trace.expand_paths([want[1], want[0]]) == [want[1], want[0]]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(kineto_trace.TraceError, match="empty"):
        kineto_trace.expand_paths(empty)


def cli_keys(row):
    """The keys of a `kineto … --json` row that are columns: without the µs conveniences JSON adds beside
    each `X_ns` (docs/tables.md, the naming rule) and without `rank` (in Python, as in Parquet, not a
    column of one trace's tables)."""
    keys = []
    for k in row:
        base = k[: -len("_rel_us")] if k.endswith("_rel_us") else k[: -len("_us")] if k.endswith("_us") else None
        if k == "rank" or (base is not None and f"{base}_ns" in row):
            continue
        keys.append(k)
    return keys


@pytest.mark.parametrize(
    "listing,method",
    [(["kernels"], "kernels"), (["steps"], "steps"), (["top", "--by", "family"], "top")],
)
def test_the_cli_json_has_the_python_tables_columns(listing, method):
    # One schema per table: `kineto kernels --json` has the columns of `kernels()`, in order, and so on.
    exe = os.environ.get("KINETO_EXPORT")
    if not exe:
        pytest.skip("KINETO_EXPORT (beside it, the kineto binary) is not set")
    kineto = Path(exe).with_name("kineto")
    trace = DEMO
    r = subprocess.run([str(kineto), *listing, "--json", str(trace)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    first = json.loads(r.stdout.splitlines()[0])
    table = getattr(kineto_trace.read(trace), method)()
    assert cli_keys(first) == table.column_names


def test_read_ranks_reads_every_rank_in_parallel_and_sorts_by_rank():
    shared_or_skip()
    ranks = kineto_trace.read_ranks(str(SHARED / DLRM))
    assert [t.rank for t in ranks] == list(range(8))
    assert all(t.world_size == 8 for t in ranks)
    one = kineto_trace.read(SHARED / DLRM / "worker3_step_12.1694128201557.pt.trace.json.gz")
    assert ranks[3].kernels().equals(one.kernels())


def test_read_ranks_releases_the_gil():
    shared_or_skip()
    stamps = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    th = threading.Thread(target=tick)
    th.start()
    calls = []
    try:
        for _ in range(3):
            t0 = time.perf_counter()
            kineto_trace._native.read_ranks([os.fspath(SHARED / DLRM)])
            calls.append((t0, time.perf_counter()))
    finally:
        stop.set()
        th.join()
    # A call holding the GIL while it parses would stop the ticker for most of the call; released, the
    # ticker keeps running and its longest pause is a small part of the call.
    ratios = []
    for t0, t1 in calls:
        inside = [s for s in stamps if t0 <= s <= t1]
        gaps = [b - a for a, b in zip([t0] + inside, inside + [t1])]
        ratios.append(max(gaps) / (t1 - t0))
    assert min(ratios) < 0.5, ratios


def test_a_truncated_trace_raises_with_file_and_offset_and_salvage_keeps_the_rest(tmp_path):
    src = DEMO
    text = gzip.open(src, "rb").read()
    cut = len(text) * 2 // 3
    p = tmp_path / "cut.json"
    p.write_bytes(text[:cut])
    with pytest.raises(kineto_trace.TraceError) as e:
        kineto_trace.read(p)
    assert e.value.path == str(p)
    assert e.value.offset is not None and 0 < e.value.offset <= cut
    assert str(p) in str(e.value) and "truncated" in str(e.value)
    t = kineto_trace.read(p, salvage=True)
    assert t.salvaged
    full = kineto_trace.read(src)
    assert 0 < t.gpu_ops().num_rows <= full.gpu_ops().num_rows


def test_bad_json_names_the_byte(tmp_path):
    p = tmp_path / "bad.json"
    body = b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2,}]}'
    p.write_bytes(body)
    with pytest.raises(kineto_trace.TraceError) as e:
        kineto_trace.read(p)
    assert e.value.path == str(p)
    assert e.value.offset == body.index(b",}") + 1  # the '}' where a key must follow the comma
    missing = tmp_path / "nope.json"
    with pytest.raises(kineto_trace.TraceError) as e:
        kineto_trace.read(missing)
    assert e.value.path == str(missing) and e.value.offset is None


def test_read_ranks_fails_whole_when_one_rank_is_unreadable(tmp_path):
    d = tmp_path / "ranks"
    d.mkdir()
    src = DEMO
    (d / "rank0.json.gz").write_bytes(src.read_bytes())
    (d / "rank1.json").write_bytes(b'{"traceEvents": [')
    with pytest.raises(kineto_trace.TraceError) as e:
        kineto_trace.read_ranks(d)
    assert e.value.path == str(d / "rank1.json")


def test_arguments_are_checked():
    t = kineto_trace.read(DEMO)
    with pytest.raises(ValueError, match="by"):
        t.top(by="colour")
    with pytest.raises(ValueError, match="step pattern"):
        kineto_trace.read(DEMO,
                          step_pattern="(")
    with pytest.raises(ValueError, match="no table"):
        t._native.table("kernels_and_more")


def test_tables_go_to_pandas_and_polars_as_they_are():
    t = kineto_trace.read(DEMO)
    k = t.kernels()
    df = k.to_pandas()
    assert len(df) == k.num_rows and list(df.columns) == k.column_names
    p = pl.from_arrow(k)
    assert p.height == k.num_rows and p["dur_ns"].sum() == df["dur_ns"].sum()
    # polars also takes the native stream itself, through the Arrow PyCapsule interface.
    s = pl.DataFrame(t._native.table("steps"))
    assert s.height == t.steps().num_rows


def test_a_stream_is_consumed_once():
    t = kineto_trace.read(DEMO)
    s = t._native.table("budget")
    first = pa.RecordBatchReader.from_stream(s).read_all()
    assert first.num_rows > 0
    with pytest.raises(ValueError, match="already consumed"):
        pa.RecordBatchReader.from_stream(s)


def test_summary_is_one_row_with_the_kineto_summary():
    t = kineto_trace.read(DEMO)
    s = t.summary()
    assert s.num_rows == 1
    d = t.summary_dict()
    assert s["kernels"][0].as_py()["count"] == d["kernels"]["count"] == t.kernels().num_rows


def _kernel_trace(path, kernels, rank=None, world_size=None):
    """A trace of `kernels` back-to-back kernels of 1 µs (JSON text written here)."""
    info = {}
    if rank is not None:
        info["rank"] = rank
    if world_size is not None:
        info["world_size"] = world_size
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, ')
        if info:
            f.write(f'"distributedInfo": {json.dumps(info)}, ')
        f.write('"traceEvents": [\n')
        for i in range(kernels):
            f.write(f'{{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, '
                    f'"ts": {i}, "dur": 1, "args": {{"device": 0, "stream": 7, "correlation": {i}}}}},\n')
        f.write('{"ph": "i", "name": "end", "ts": 0, "pid": 0, "tid": 0}]}\n')
    return path


def test_ctrl_c_stops_read_ranks_at_once(tmp_path):
    import _thread
    big = _kernel_trace(tmp_path / "big.json", 200_000)
    t0 = time.perf_counter()
    kineto_trace.read(big)
    one = time.perf_counter() - t0
    # 200 traces take at least 200 · one / cores to read; Ctrl-C after about one trace's time must stop
    # the call within a trace's time (what is left of the parses in flight ends at their next read).
    fired = []

    def interrupt():
        fired.append(time.perf_counter())
        _thread.interrupt_main()

    # interrupt_main does nothing while SIGINT is not Python's own (a test run started from a script's
    # background job inherits it ignored), so the test installs Python's handler for its duration.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(one, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            kineto_trace.read_ranks([big] * 200)
        raised = time.perf_counter()
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, before)
    assert fired, "the interrupt fired"
    lag = raised - fired[0]
    assert lag < one + 1.0, f"KeyboardInterrupt {lag:.2f} s after Ctrl-C; one trace takes {one:.2f} s"


def test_summary_keeps_copy_bytes_past_int64_exactly(tmp_path):
    # Two copies of 2**62 bytes: Σ = 2**63, past int64 (and the per-direction sum too).
    events = [
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7,
         "ts": i, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": i, "bytes": 2**62}}
        for i in range(2)
    ]
    p = tmp_path / "copies.json"
    p.write_text(json.dumps({"traceEvents": events}))
    t = kineto_trace.read(p)
    assert t.summary_dict()["memcpy"]["bytes"] == 2**63
    row = t.summary().to_pylist()[0]
    assert row["memcpy"]["bytes"] == str(2**63)
    assert row["memcpy"]["by_kind"]["HtoD"]["bytes"] == str(2**63)
    assert row["memcpy"]["count"] == 2


def test_two_traces_of_one_rank_are_refused_and_other_runs_warned_about(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    _kernel_trace(d / "a.json", 3, rank=0, world_size=2)
    _kernel_trace(d / "b.json", 3, rank=0, world_size=2)
    with pytest.raises(kineto_trace.TraceError) as e:
        kineto_trace.read_ranks(d)
    assert "a.json" in str(e.value) and "b.json" in str(e.value) and "rank 0" in str(e.value)
    assert e.value.path == str(d / "b.json")
    w = tmp_path / "mixed"
    w.mkdir()
    _kernel_trace(w / "a.json", 3, rank=0, world_size=2)
    _kernel_trace(w / "b.json", 3, rank=5, world_size=8)
    with pytest.warns(RuntimeWarning, match="different world sizes"):
        ranks = kineto_trace.read_ranks(w)
    assert [t.rank for t in ranks] == [0, 5]


NATIVE = ROOT / "testdata" / "native"
NATIVE_COUNTS = json.loads((NATIVE / "counts.json").read_text())
# The corpus's real samples (../shared/traces/native), counted by the same script into corpus_counts.json.
CORPUS_NATIVE_COUNTS = json.loads((NATIVE / "corpus_counts.json").read_text())
NATIVE_CASES = [("built", r) for r in sorted(NATIVE_COUNTS)] + [("corpus", r) for r in sorted(CORPUS_NATIVE_COUNTS)]


def assert_gpu_ops_as_counted(ranks, formats, want):
    """The GPU ops of a file's ranks (each op in exactly one rank), each rank of one of `formats`, are what a
    counting script counted in the file: kernels, copies, fills, and the kernels' total ns."""
    kinds, durs = [], []
    for t in ranks:
        assert t.summary_dict()["format"] in formats
        ops = t.gpu_ops()
        k = ops["kind"].to_pylist()
        kinds += k
        durs += [d for kind, d in zip(k, ops["dur_ns"].to_pylist()) if kind == "kernel"]
    assert kinds.count("kernel") == want["kernels"]
    assert kinds.count("memcpy") == want["memcpys"]
    assert kinds.count("memset") == want["memsets"]
    assert sum(durs) == want["kernel_sum_ns"]


@pytest.mark.parametrize("where,rel", NATIVE_CASES, ids=lambda r: r.replace("/", "-"))
def test_native_formats_read_as_python_counts_them(where, rel):
    # Nsight Systems, rocpd and RPD SQLite, rocprofv3 JSON and CSV, Chrome-trace arrays: counted by
    # testdata/native/count_native.py with Python's own sqlite3 / json / csv.
    if where == "built":
        want, path = NATIVE_COUNTS[rel], NATIVE / rel
    else:
        want, path = CORPUS_NATIVE_COUNTS[rel], shared_or_skip() / "native" / rel
    # A file of several processes or GPUs is one trace per rank (`read` refuses it): the file's GPU ops
    # are the union of its ranks', each op in exactly one rank.
    ranks = kineto_trace.read_ranks(path)
    formats = ("nsys_sqlite", "rocpd_sqlite", "rpd_sqlite", "rocprofv3_json", "rocprofv3_csv", "chrome_array")
    assert_gpu_ops_as_counted(ranks, formats, want)
    if "steps" in want and len(ranks) == 1:
        steps = ranks[0].steps()
        assert steps["name"].to_pylist() == [s["name"] for s in want["steps"]]


XPLANE = NATIVE / "xplane"
XPLANE_COUNTS = json.loads((XPLANE / "counts.json").read_text())


@pytest.mark.parametrize("name", ["multi_gpu.xplane.pb", "copies_steps.xplane.pb", "corpus/jax_te_fused_attn_934987a2fc2f.xplane.pb"])
def test_xplane_reads_as_its_wire_walker_counts_it(name):
    # JAX/TensorFlow XPlane protobuf: counted by testdata/native/xplane/xplane_counts.py, a hand-written
    # protobuf wire-format walker.
    if name.startswith("corpus/"):
        path = shared_or_skip() / "native" / "xplane" / name.removeprefix("corpus/")
    else:
        path = XPLANE / name
    want = XPLANE_COUNTS[name]
    # One rank per GPU plane (multi_gpu.xplane.pb has two); their ops add up to the file's.
    ranks = kineto_trace.read_ranks(path)
    assert len(ranks) == len(want["devices"])
    assert_gpu_ops_as_counted(ranks, ("xplane",), want)


PERFETTO = NATIVE / "perfetto"
PERFETTO_COUNTS = json.loads((PERFETTO / "counts.json").read_text())


@pytest.mark.parametrize(
    "name", ["rocprofv3_layout.pftrace", "gpu_stages.pftrace", "rocprofv3_annotations.pftrace"]
)
def test_perfetto_reads_as_its_wire_walker_counts_it(name):
    # Perfetto protobuf: counted by testdata/native/perfetto/perfetto_counts.py, a hand-written
    # protobuf wire-format walker.
    want = PERFETTO_COUNTS[name]
    t = kineto_trace.read(PERFETTO / name)
    assert t.summary_dict()["format"] == "perfetto"
    ops = t.gpu_ops()
    kinds = ops["kind"].to_pylist()
    assert kinds.count("kernel") == want["kernels"]
    assert kinds.count("memcpy") == want["memcpys"]
    durs = [d for k, d in zip(kinds, ops["dur_ns"].to_pylist()) if k == "kernel"]
    assert sum(durs) == want["kernel_sum_ns"]
    # A copy's bytes are rocprofv3's `copy_bytes` debug annotation where the walker finds one (None
    # where the file has none); the walker lists the track-event copies (not render stages) in the
    # file's order, the reader every copy in time order.
    copy_bytes = [b for k, b in zip(kinds, ops["bytes"].to_pylist()) if k == "memcpy"]
    if len(want["memcpy_bytes"]) == want["memcpys"]:
        assert sorted(copy_bytes, key=str) == sorted(want["memcpy_bytes"], key=str)


def test_read_ranks_of_a_rocprofv3_csv_directory():
    ranks = kineto_trace.read_ranks(str(NATIVE / "rocprofv3_csv_new"))
    assert len(ranks) == 2
    assert all(r.summary_dict()["format"] == "rocprofv3_csv" for r in ranks)


def test_read_of_a_file_of_two_ranks_refuses_naming_them_and_read_ranks_gives_each():
    # nsys_node_3.17.sqlite: processes 4101 (GPU 0, 7 kernels) and 4201 (GPU 1, 2 kernels), as
    # testdata/native/make_native.py writes it; one trace of both would sum two GPUs into one budget.
    path = str(NATIVE / "nsys_node_3.17.sqlite")
    with pytest.raises(kineto_trace.TraceError, match="holds 2 ranks") as e:
        kineto_trace.read(path)
    assert "#pid 4101 gpu 0" in str(e.value) and "#pid 4201 gpu 1" in str(e.value)
    ranks = kineto_trace.read_ranks(path)
    assert [r.summary_dict()["kernels"]["count"] for r in ranks] == [7, 2]


def test_a_rocprofv3_kernels_registers_and_lds_are_gpu_ops_columns():
    # testdata/native/make_native.py writes rocprofv3_markers.json: the reduce kernel's symbol has
    # arch_vgpr_count 40 and its dispatch a group segment of 2,048 static + 4,096 dynamic = 6,144 bytes;
    # the GEMM's symbol 128 VGPRs, its dispatch 16,384 bytes (static only). The fill kernel's symbol
    # carries 8 VGPRs but it is read as a fill (a copy or fill row carries neither value).
    t = kineto_trace.read(NATIVE / "rocprofv3_markers.json")
    ops = t.gpu_ops()
    rows = {
        name.split("(")[0].split("<")[0]: (regs, lds)
        for kind, name, regs, lds in zip(
            ops["kind"].to_pylist(),
            ops["name"].to_pylist(),
            ops["registers"].to_pylist(),
            ops["shared_memory"].to_pylist(),
        )
        if kind == "kernel"
    }
    assert rows == {
        "void at::native::reduce_kernel": (40, 2048 + 4096),
        "Cijk_Ailk_Bljk_BBS_BH_MT64x32x256_MI16x16x1": (128, 16384),
    }


def test_kineto_kernels_registers_and_shared_memory_are_the_files_args():
    # Independent of the reader: the trace read with the json module, each kernel event's
    # `args["registers per thread"]` and `args["shared memory"]` counted as pairs.
    shared_or_skip()
    path = SHARED / "param" / "linear_kineto.json.gz"
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    want = collections.Counter(
        (e["args"].get("registers per thread"), e["args"].get("shared memory"))
        for e in events
        if e.get("ph") == "X" and e.get("cat") == "kernel"
    )
    ops = kineto_trace.read(path).kernels()
    got = collections.Counter(zip(ops["registers"].to_pylist(), ops["shared_memory"].to_pylist()))
    assert sum(want.values()) == 8716
    assert got == want
