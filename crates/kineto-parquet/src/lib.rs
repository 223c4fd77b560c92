//! Columnar export of an analysed Kineto trace: Parquet tables for DuckDB, Spark, pandas and polars.
//!
//! What it is: the tables `gpu_ops` (one row per kernel, copy and fill), `steps`, `budget` (step ×
//! bucket), `families` (step × kernel family) and `annotations`, each defined by ONE column list
//! ([`Table::columns`]) that drives the Arrow schema, the Parquet encodings and the values, written
//! with the Arrow project's `parquet` crate: zstd pages, names dictionary-encoded, rows streamed in
//! record batches of [`Limits::batch_rows`] and row groups of [`Limits::row_group_rows`], so memory
//! is bounded by the limits and not by the number of kernels. Every file carries
//! `kineto.schema_version` ([`SCHEMA_VERSION`]) in its key-value metadata; `docs/parquet.md`
//! documents the schema and the queries.
//!
//! The same column lists build the in-memory Arrow tables of the Python module (`kineto_trace`,
//! `python/`), through [`fill_table`] and [`Batcher`]: a table has one schema wherever it is read.
//!
//! What it is not: a parser or an analysis (those are `kineto-trace`'s: this crate takes an
//! [`Analysed`] trace and only writes it), nor a file policy — it writes to any `Write + Send` sink;
//! where the files go (`DIR/<table>/rank=N/…`), claims and overwrites belong to the `kineto-export`
//! binary. It lives in its own crate so the core `kineto` tool does not build Arrow.
#![deny(missing_docs)]

mod column;
mod tables;
mod top;
mod writer;

pub use column::{Col, Ty, Val};
pub use tables::{
    Analysed, AnnotationRow, BudgetRow, FamilyRow, GpuOpRow, StepRow, Table, annotation_columns,
    budget_columns, family_columns, fill_table, gpu_op_columns, step_columns, write_table,
};
pub use top::{TopRow, top_batches, top_columns};
pub use writer::{Batcher, Limits, TableWriter, schema_of};

/// The version of the tables' schema, written into every file as `kineto.schema_version`. Raised
/// when a column is removed, renamed or changes meaning; adding a column keeps it.
pub const SCHEMA_VERSION: u32 = 1;

/// Why a table could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Parquet writer failed (an I/O error of the sink surfaces here).
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Arrow refused a batch.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// A column's getter returned a value of another type than the column's (a bug in a column list).
    #[error("column {column}: expected a {expected} value, got {got}")]
    ColumnType {
        /// The column.
        column: &'static str,
        /// Its declared type.
        expected: &'static str,
        /// The value's type.
        got: &'static str,
    },
}
