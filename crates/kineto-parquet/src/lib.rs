//! Columnar export of an analysed Kineto trace: Parquet tables for DuckDB, Spark, pandas and polars, and
//! the same tables as Arrow record batches for the Python module.
//!
//! What it is: the Arrow side of `kineto-tables`' schema. Each exported table (`gpu_ops`, `steps`,
//! `budget`, `families`, `annotations`: [`Table::EXPORTED`]) and the top-N table is ONE column list in
//! `kineto-tables`; this crate turns a list into the Arrow schema ([`schema_of`]) and its rows into record
//! batches ([`Batcher`], [`fill_table`]), and writes them with the Arrow project's `parquet` crate: zstd
//! pages, names dictionary-encoded, rows streamed in record batches of [`Limits::batch_rows`] and row
//! groups of [`Limits::row_group_rows`], so memory is bounded by the limits and not by the number of
//! kernels. Every file carries `kineto.schema_version` ([`SCHEMA_VERSION`]) in its key-value metadata;
//! `docs/parquet.md` documents the files and the queries, `docs/tables.md` every column.
//!
//! What it is not: a parser, an analysis or a column list (those are `kineto-trace`'s and
//! `kineto-tables`'), nor a file policy — it writes to any `Write + Send` sink; where the files go
//! (`DIR/<table>/rank=N/…`), claims and overwrites belong to the `kineto-export` binary. It lives in its own
//! crate so the core `kineto` tool does not build Arrow.
#![deny(missing_docs)]

mod arrow;
mod tables;
mod writer;

pub use arrow::{arrow_type, field};
pub use kineto_tables::{Analysed, SCHEMA_VERSION, Table};
pub use tables::{fill_table, table_schema, top_batches, write_table};
pub use writer::{Batcher, Limits, TableWriter, schema_of, stored};

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
    /// The table is not one of the per-trace tables the export writes.
    #[error("table {0} is not exported per trace")]
    NotExported(&'static str),
}
