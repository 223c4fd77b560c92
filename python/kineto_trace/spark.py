"""Kineto traces as a Spark data source (the Python Data Source API of Spark 4): no conversion step.

    from kineto_trace.spark import register
    register(spark)                                   # spark.dataSource.register(KinetoDataSource)
    df = (spark.read.format("kineto").option("table", "gpu_ops")
          .load(["/traces/job42/"]))                  # a directory of rank files, files, or a list

The driver expands the paths as `kineto` does (a directory → its rank files) and plans one partition per
trace file; each executor parses its file with the Rust reader (`kineto_trace.read`: the same parse and
analysis as `kineto budget`) and yields the table's Arrow batches. The columns are the Parquet export's
(`kineto_trace.schema(table)`, from kineto-tables' one list) followed by `rank`, as Spark reads the
export's `rank=N` partitions: `distributedInfo.rank`, or the file's position among the expanded paths for
a trace without one (what `kineto-export` does). `rank` is an int, the type Spark infers for the export's
`rank=N` directories (every rank below 2³¹; a larger one fails the read, naming the file). Unsigned columns take the types Spark gives the same
Parquet columns: uint32 → bigint, uint64 → decimal(20,0); so a query reads the export and this source
alike.

Options: `table` (one of kineto_trace.TABLES; default gpu_ops), `salvage`, `whole_trace` ("true"/
"false"), `rules` (a rule file, readable by every executor), `step_pattern` (a regex). An unknown option
is an error. A trace that cannot be read fails its task with the TraceError (file, byte offset): a rank is
never dropped. The paths must be readable at the same names by the driver and every executor (a local
or shared file system); each task holds one parsed trace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterator, List

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

import kineto_trace

__all__ = ["KinetoDataSource", "register", "spark_schema"]

OPTIONS = {"table", "salvage", "whole_trace", "rules", "step_pattern", "path", "paths"}


def _spark_type(t: pa.DataType) -> DataType:
    # The types kineto-parquet writes (arrow.rs: arrow_type) and the Spark type each is read as from
    # a Parquet file (Spark has no unsigned integers).
    if pa.types.is_string(t):
        return StringType()
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return LongType()
    if pa.types.is_uint64(t):
        return DecimalType(20, 0)
    if pa.types.is_float64(t):
        return DoubleType()
    raise TypeError(f"kineto_trace.spark: no Spark type for Arrow {t}")


def spark_schema(table: str) -> StructType:
    """The Spark schema of `table` as this source yields it: the module's columns, then `rank`."""
    fields = [
        StructField(f.name, _spark_type(f.type), nullable=f.nullable)
        for f in kineto_trace.schema(table)
    ]
    # Spark infers the export's `rank=N` partition column as int while every N fits one.
    return StructType(fields + [StructField("rank", IntegerType(), nullable=False)])


@dataclass
class TraceFile(InputPartition):
    """One partition: one trace file and its position among the expanded paths."""

    path: str
    position: int


def _flag(options, name: str) -> bool:
    v = str(options.get(name, "false")).lower()
    if v not in ("true", "false"):
        raise ValueError(f"kineto: option {name} must be true or false, not {v!r}")
    return v == "true"


class KinetoDataSource(DataSource):
    """`spark.read.format("kineto")`: see the module's docstring."""

    @classmethod
    def name(cls) -> str:
        return "kineto"

    def __init__(self, options):
        # Spark's option names are case-insensitive.
        super().__init__({k.lower(): v for k, v in options.items()})
        unknown = sorted(k for k in self.options if k not in OPTIONS)
        if unknown:
            raise ValueError(f"kineto: unknown option(s) {unknown}; known: {sorted(OPTIONS - {'path', 'paths'})}")
        self.table = self.options.get("table", "gpu_ops")
        if self.table not in kineto_trace.TABLES:
            raise ValueError(f"kineto: no table {self.table!r}; tables: {', '.join(kineto_trace.TABLES)}")

    def schema(self) -> StructType:
        return spark_schema(self.table)

    def reader(self, schema: StructType) -> "KinetoReader":
        return KinetoReader(self.options, self.table, schema)


def _paths(options) -> List[str]:
    # DataFrameReader.load(path) sets `path`; load([p, q, …]) sets `paths` to a JSON array.
    out = []
    if options.get("path"):
        out.append(options["path"])
    if options.get("paths"):
        out.extend(json.loads(options["paths"]))
    if not out:
        raise ValueError("kineto: no path given (spark.read.format('kineto').load(PATHS))")
    return out


class KinetoReader(DataSourceReader):
    def __init__(self, options, table: str, schema: StructType):
        self.table = table
        self.paths = _paths(options)
        self.salvage = _flag(options, "salvage")
        self.whole_trace = _flag(options, "whole_trace")
        self.rules = options.get("rules")
        self.step_pattern = options.get("step_pattern")
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def partitions(self) -> List[TraceFile]:
        return [TraceFile(p, i) for i, p in enumerate(kineto_trace.expand_paths(self.paths))]

    def read(self, partition: TraceFile) -> Iterator[pa.RecordBatch]:
        t = kineto_trace.read(
            partition.path,
            salvage=self.salvage,
            rules=self.rules,
            step_pattern=self.step_pattern,
            whole_trace=self.whole_trace,
        )
        rank = t.rank if t.rank is not None else partition.position
        if rank >= 2**31:
            raise ValueError(f"kineto: {partition.path}: rank {rank} does not fit the int `rank` column")
        target = self.arrow_schema
        for batch in getattr(t, self.table)().to_batches():
            cols = [batch.column(i).cast(target.field(i).type) for i in range(batch.num_columns)]
            cols.append(pa.array([rank] * batch.num_rows, pa.int32()))
            yield pa.RecordBatch.from_arrays(cols, schema=target)


def register(spark) -> None:
    """Makes `spark.read.format("kineto")` available in this session."""
    spark.dataSource.register(KinetoDataSource)
