"""Kineto (PyTorch profiler) traces as Arrow tables, parsed and analysed in Rust.

    import kineto_trace
    t = kineto_trace.read("rank0.pt.trace.json.gz")
    t.kernels().to_pandas()          # one row per kernel: family, bucket, step, exact ts/dur in ns
    t.budget()                       # step x bucket: exclusive and inclusive ns
    t.top(by="family", n=10)         # the top-N kernel table
    ranks = kineto_trace.read_ranks("traces/")   # every rank, parsed in parallel

Tables are pyarrow Tables whose columns are those of `kineto export --parquet` (docs/parquet.md,
schema version SCHEMA_VERSION); they come from Rust through the Arrow C stream interface, without a
copy of the columns. Times are integer nanoseconds on the trace's clock (MEASURED by the profiler).
Errors reading a trace raise TraceError with `.path` and `.offset` (byte of the JSON text).
"""

from __future__ import annotations

import json
import os
from typing import Iterable, List, Optional, Union

import pyarrow as pa

from . import _native
from ._native import SCHEMA_VERSION, TABLES, TraceError, __version__

# SCHEMA_VERSION: the version of the tables' schema (docs/parquet.md), kineto-parquet's own constant, so equal
# to the Parquet files' kineto.schema_version.

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "read",
    "read_ranks",
    "schema",
    "expand_paths",
    "Trace",
    "TraceError",
    "TABLES",
    "SCHEMA_VERSION",
    "__version__",
]

# TABLES: the per-trace tables (`gpu_ops`, `steps`, `budget`, `families`, `annotations`), in the order of
# kineto-tables' list; each is a method of Trace and a directory of the Parquet export.


def _table(stream) -> pa.Table:
    # pyarrow >= 15 imports any object with __arrow_c_stream__ (the Arrow PyCapsule interface).
    return pa.RecordBatchReader.from_stream(stream).read_all()


class Trace:
    """One parsed and analysed trace. Every method returns a new pyarrow Table."""

    def __init__(self, native):
        self._native = native

    def __repr__(self) -> str:
        return f"kineto_trace.Trace({self.path!r}, rank={self.rank!r})"

    @property
    def path(self) -> str:
        """The file as given."""
        return self._native.path

    @property
    def rank(self) -> Optional[int]:
        """distributedInfo.rank, or None."""
        return self._native.rank

    @property
    def world_size(self) -> Optional[int]:
        """distributedInfo.world_size, or None."""
        return self._native.world_size

    @property
    def salvaged(self) -> bool:
        """True when the file was cut short and only the complete events before the cut were kept."""
        return self._native.salvaged

    def gpu_ops(self) -> pa.Table:
        """Every kernel, copy and fill (the `gpu_ops` table; `kind` says which)."""
        return _table(self._native.table("gpu_ops"))

    def kernels(self) -> pa.Table:
        """Kernels only: the `gpu_ops` rows whose kind is `kernel`. `gpu_ops` lists kernels first, then
        copies, then fills, so this is a slice of it: no column is copied."""
        return self.gpu_ops().slice(0, self._native.kernel_count)

    def steps(self) -> pa.Table:
        """One row per step, with its budget's totals (the `steps` table)."""
        return _table(self._native.table("steps"))

    def budget(self) -> pa.Table:
        """One row per step x bucket: exclusive and inclusive time (the `budget` table)."""
        return _table(self._native.table("budget"))

    def families(self) -> pa.Table:
        """One row per step x kernel family (the `families` table)."""
        return _table(self._native.table("families"))

    def annotations(self) -> pa.Table:
        """One row per user annotation range and GPU mirror of one (the `annotations` table)."""
        return _table(self._native.table("annotations"))

    def top(self, by: str = "name", n: Optional[int] = 20, per_step: bool = False) -> pa.Table:
        """Kernels grouped by `name`, `family` or `bucket`, most total time first (`kineto top`).

        `n` keeps the first n groups (of each step with per_step=True); None keeps all."""
        return _table(self._native.top(by, per_step, n))

    def summary_dict(self) -> dict:
        """`kineto summary --json` of the trace, as a dict (counts, sums in µs, copies by direction)."""
        return json.loads(self._native.summary_json())

    def summary(self) -> pa.Table:
        """`kineto summary` as a one-row table; nested objects are struct columns."""
        # Sums are u128 in Rust and exact Python ints here; an int64 column cannot hold one of 2**63 or
        # more (copy bytes reach it), so such a value, at any depth (`memcpy.by_kind.*.bytes` too), is
        # kept as its exact decimal text, never cut or rounded.
        return pa.Table.from_pylist([_int64_or_text(self.summary_dict())])


def _int64_or_text(v):
    """`v` with every int outside int64 replaced by its decimal text, at any depth."""
    if isinstance(v, dict):
        return {k: _int64_or_text(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_int64_or_text(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
        return str(v)
    return v


def schema(table: str) -> pa.Schema:
    """The pyarrow schema of one of TABLES, as Trace's method of that name returns it (the Parquet
    files' columns; the rank is not a column of one trace's table)."""
    return pa.RecordBatchReader.from_stream(_native.schema(table)).schema


def expand_paths(paths: Union[PathLike, Iterable[PathLike]]) -> List[Union[str, bytes]]:
    """The trace files `paths` name, as read_ranks and `kineto` expand them: a directory gives its
    rank files (sorted by name), a file itself. A directory with no trace, or traces of mixed
    formats, raises TraceError.

    Names are returned exactly, as the os module returns them: str (a name that is not UTF-8 keeps its
    bytes as surrogates, os.fsdecode's form, which os.fsencode and open() turn back into the same bytes),
    or bytes when every path given is bytes, as os.listdir does."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    given = [os.fspath(p) for p in paths]
    found = _native.expand_paths([os.fsdecode(p) for p in given])
    if given and all(isinstance(p, bytes) for p in given):
        return [os.fsencode(p) for p in found]
    return found


def read(
    path: PathLike,
    salvage: bool = False,
    rules: Optional[PathLike] = None,
    step_pattern: Optional[str] = None,
    whole_trace: bool = False,
) -> Trace:
    """Parses and analyses one trace (.json or .json.gz), as `kineto budget` does.

    salvage: keep the complete events of a truncated file instead of raising TraceError.
    rules: a kernel rule table (TOML) instead of the built-in one.
    step_pattern: a regex matched against whole annotation names marking steps.
    whole_trace: ignore step markers; the trace is one step."""
    return Trace(
        _native.read(
            os.fsdecode(path),
            salvage=salvage,
            rules=None if rules is None else os.fsdecode(rules),
            step_pattern=step_pattern,
            whole_trace=whole_trace,
        )
    )


def read_ranks(
    paths: Union[PathLike, Iterable[PathLike]],
    salvage: bool = False,
    rules: Optional[PathLike] = None,
    step_pattern: Optional[str] = None,
    whole_trace: bool = False,
) -> List[Trace]:
    """Parses every trace under `paths` (a directory of per-rank traces, files, or a list of either)
    in parallel, with the GIL released. Returns them sorted by rank (traces without one last, in
    file order). One unreadable trace raises TraceError: a rank is never dropped silently. Two traces
    claiming one rank raise TraceError naming both (never counted as two ranks); a rank past its world
    size, or world sizes that differ, warn (RuntimeWarning: the traces may be from different runs).
    Ctrl-C raises KeyboardInterrupt at once, between files and inside a parse."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    natives = _native.read_ranks(
        [os.fsdecode(p) for p in paths],
        salvage=salvage,
        rules=None if rules is None else os.fsdecode(rules),
        step_pattern=step_pattern,
        whole_trace=whole_trace,
    )
    order = sorted(
        range(len(natives)),
        key=lambda i: (natives[i].rank is None, natives[i].rank or 0, i),
    )
    return [Trace(natives[i]) for i in order]
