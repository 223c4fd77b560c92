"""One front door: every table is the same whichever way a user reads it.

For every trace of the shared corpus (when it is beside the clone), of the generated native samples and of
the server-shaped synthetic traces (the graph_only case, whose steps take their tokens from the capture
traces beside it, included), the rows of `kineto steps|kernels|budget --json` (the CLI), of the Parquet
files `kineto-export` writes and of the Python module's tables are compared cell by cell. The three go
through one `kineto_trace::Session`; before it, Parquet and Python analysed without the capture traces and
gave `query_tokens` null where the CLI gave 8/8/16/8.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import kineto_trace

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "traces"
REQUIRE = os.environ.get("KL1_REQUIRE_CORPUS") == "1"
SYNTHETIC = ROOT / "testdata" / "synthetic" / "server_traces"
NATIVE = ROOT / "testdata" / "native"

TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".db", ".rpd")


def trace_files(root: Path) -> list[Path]:
    """Every file under `root` a user would hand to kineto: JSON traces, SQLite exports, one rocprofv3
    CSV set per kernel-trace file (its companions are read beside it)."""
    out = []
    for p in sorted(root.rglob("*")):
        name = p.name.lower()
        # A capture directory's execution_details.json is read beside its trace, never as one (it is refused).
        skip = ("expected.json", "execution_details.json")
        if not p.is_file() or name in skip or name.endswith(("truth.json", "counts.json")):
            continue
        if name.endswith(TRACE_SUFFIXES) or name.endswith("kernel_trace.csv"):
            out.append(p)
    return out


def corpus() -> list[Path]:
    if not SHARED.is_dir():
        if REQUIRE:
            # Collected at import: fail the run loudly rather than test nothing.
            raise RuntimeError(f"KL1_REQUIRE_CORPUS=1 but {SHARED} is missing")
        return []
    return trace_files(SHARED)


TRACES = trace_files(SYNTHETIC) + trace_files(NATIVE) + corpus()


def tools() -> tuple[Path, Path]:
    exe = os.environ.get("KINETO_EXPORT")
    if not exe:
        pytest.skip("KINETO_EXPORT (the kineto-export binary, with kineto beside it) is not set")
    return Path(exe).with_name("kineto"), Path(exe)


def cli_rows(kineto: Path, listing: str, trace: Path) -> list[dict]:
    r = subprocess.run([str(kineto), listing, "--json", str(trace)], capture_output=True, text=True)
    assert r.returncode == 0, f"kineto {listing} {trace}: {r.stderr}"
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def columns_only(row: dict) -> dict:
    """A CLI JSON row without the µs conveniences JSON adds beside each `X_ns` (docs/tables.md) and
    without `rank` (a partition in Parquet, not a column of one trace's tables)."""
    out = {}
    for k, v in row.items():
        base = k[: -len("_rel_us")] if k.endswith("_rel_us") else k[: -len("_us")] if k.endswith("_us") else None
        if k == "rank" or (base is not None and f"{base}_ns" in row):
            continue
        out[k] = v
    return out


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def assert_rows_equal(what: str, cli: list[dict], table: list[dict]):
    assert len(cli) == len(table), f"{what}: {len(cli)} CLI rows, {len(table)} table rows"
    for i, (c, t) in enumerate(zip(cli, table)):
        for k, v in c.items():
            assert k in t, f"{what} row {i}: CLI column {k} is not a table column"
            assert same(v, t[k]), f"{what} row {i} column {k}: CLI {v!r}, table {t[k]!r}"


def nested_rows(steps: list[dict], key: str, name: str, table_cols: list[str]) -> list[dict]:
    """The `budget` or `families` rows that `kineto budget --json` nests in each step (keyed by bucket
    or family), each with the step's cells that the table has."""
    out = []
    for s in steps:
        for k, cells in (s.get(key) or {}).items():
            row = {c: s[c] for c in table_cols if c in s and c not in cells}
            row[name] = k
            row.update(cells)
            out.append(columns_only(row))
    return out


def export(exporter: Path, trace: Path, out: Path) -> Path:
    r = subprocess.run(
        [str(exporter), "--parquet", str(out), "--rank", "0", str(trace)], capture_output=True, text=True
    )
    if r.returncode != 0 and "--rank" in r.stderr:
        # A trace that names its own rank keeps it.
        r = subprocess.run([str(exporter), "--parquet", str(out), str(trace)], capture_output=True, text=True)
    assert r.returncode == 0, f"kineto-export {trace}: {r.stderr}"
    return out


def parquet_rows(out: Path, table: str, ranks: int) -> list[dict]:
    """The rows of a table's Parquet files, one file per rank (a file of several processes or GPUs is one
    rank each), in rank order."""
    files = sorted((out / table).rglob("*.parquet"), key=lambda f: int(f.parent.name.split("=")[1]))
    assert len(files) == ranks, f"{out / table}: {files}"
    return [r for f in files for r in pq.read_table(f).drop_columns(["file"]).to_pylist()]


def one_trace(trace: Path, tmp: Path) -> list[str]:
    """Compares the three readings of one trace; returns what was compared."""
    kineto, exporter = tools()
    # One trace per rank the file holds (several for a file of several processes or GPUs), in the order
    # the CLI prints them and kineto-export numbers them (the file's, none naming its rank).
    ranks = kineto_trace.read_ranks([trace])
    out = export(exporter, trace, tmp)
    done = []

    def rows(name: str) -> list[dict]:
        return [r for t in ranks for r in getattr(t, name)().drop_columns(["file"]).to_pylist()]

    for table in kineto_trace.TABLES:
        mine = rows(table)
        from_file = parquet_rows(out, table, len(ranks))
        assert mine == from_file, f"{trace}: Python's {table} differs from the Parquet file's"
        done.append(f"python=parquet {table} ({len(from_file)} rows)")
    py = {name: rows(name) for name in kineto_trace.TABLES}
    steps = [columns_only(r) for r in cli_rows(kineto, "steps", trace)]
    for r in steps:
        r.pop("file", None)
    assert_rows_equal(f"{trace}: steps", steps, py["steps"])
    kernels = [columns_only(r) for r in cli_rows(kineto, "kernels", trace)]
    for r in kernels:
        r.pop("file", None)
    assert_rows_equal(f"{trace}: kernels", kernels, [r for r in py["gpu_ops"] if r["kind"] == "kernel"])
    budget = cli_rows(kineto, "budget", trace)
    for r in budget:
        r.pop("file", None)
    budget_cols = kineto_trace.schema("budget").names
    family_cols = kineto_trace.schema("families").names
    assert_rows_equal(f"{trace}: budget", nested_rows(budget, "buckets", "bucket", budget_cols), py["budget"])
    assert_rows_equal(
        f"{trace}: families", nested_rows(budget, "families", "family", family_cols), py["families"]
    )
    done.append("cli=python steps, kernels, budget, families")
    return done


@pytest.mark.parametrize("trace", TRACES, ids=[str(p) for p in TRACES])
def test_cli_parquet_and_python_give_the_same_rows(trace, tmp_path):
    assert one_trace(trace, tmp_path / "pq")


def test_graph_only_steps_take_their_tokens_from_the_capture_traces_beside_the_trace_in_every_reader():
    # testdata/synthetic/make_server_traces.py writes replays of graphs captured at 8, 8, 16 and 8 tokens.
    want = json.loads((SYNTHETIC / "expected.json").read_text())["graph_only"]
    t = kineto_trace.read(SYNTHETIC / "graph_only" / "graph_only.json")
    tokens = t.steps().column("query_tokens").to_pylist()
    assert tokens == [s["query_tokens"] for s in want["steps"]]
    # The four graph replays' sizes, as the issue saw `kineto steps` give them (the fifth step has none).
    assert tokens[:4] == [8, 8, 16, 8]


def test_the_traces_compared_include_every_format_and_the_synthetic_servers():
    names = {p.name for p in TRACES}
    assert "graph_only.json" in names
    assert any(n.endswith(".sqlite") for n in names)
    if SHARED.is_dir():
        assert len([p for p in TRACES if SHARED in p.parents]) >= 50
