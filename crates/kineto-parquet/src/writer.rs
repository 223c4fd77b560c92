//! Streams rows into a Parquet file: a record batch every [`Limits::batch_rows`] rows, a row group every
//! [`Limits::row_group_rows`], so memory is bounded by the limits, not by the trace.

use crate::column::{Builder, Col, Ty};
use crate::{Error, SCHEMA_VERSION};
use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::io::Write;
use std::sync::Arc;

/// How many rows are held before they are handed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Rows per Arrow record batch built in memory.
    pub batch_rows: usize,
    /// Rows per Parquet row group (the unit a reader skips or reads in parallel).
    pub row_group_rows: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        // A batch of 8 Ki rows is a few hundred KiB of builders; a row group of 128 Ki rows keeps the
        // encoded pages the writer buffers at a few MiB while giving DuckDB enough row groups to
        // split a rank's file across threads.
        Limits {
            batch_rows: 8192,
            row_group_rows: 131_072,
        }
    }
}

/// Writes rows of type `R` to one Parquet file.
pub struct TableWriter<'c, R, W: Write + Send> {
    cols: &'c [Col<R>],
    builders: Vec<Builder>,
    pending: usize,
    rows: u64,
    limits: Limits,
    schema: SchemaRef,
    writer: ArrowWriter<W>,
}

impl<'c, R, W: Write + Send> TableWriter<'c, R, W> {
    /// Starts a file with the columns `cols`; `meta` goes into the file's key-value metadata beside
    /// `kineto.schema_version`.
    pub fn new(
        out: W,
        cols: &'c [Col<R>],
        meta: &[(&str, String)],
        limits: Limits,
    ) -> Result<Self, Error> {
        let schema: SchemaRef =
            Arc::new(Schema::new(cols.iter().map(Col::field).collect::<Vec<_>>()));
        let mut kv = vec![KeyValue::new(
            "kineto.schema_version".to_string(),
            SCHEMA_VERSION.to_string(),
        )];
        kv.extend(
            meta.iter()
                .map(|(k, v)| KeyValue::new((*k).to_string(), v.clone())),
        );
        // Dictionary encoding for names only: times and ids are nearly all distinct, where a
        // dictionary costs a page and a fallback.
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(limits.row_group_rows.max(1)))
            .set_dictionary_enabled(false)
            .set_key_value_metadata(Some(kv));
        for c in cols.iter().filter(|c| c.ty == Ty::Str) {
            props = props.set_column_dictionary_enabled(ColumnPath::from(c.name), true);
        }
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props.build()))?;
        let batch = limits.batch_rows.max(1);
        Ok(TableWriter {
            cols,
            builders: cols.iter().map(|c| Builder::new(c.ty, batch)).collect(),
            pending: 0,
            rows: 0,
            limits: Limits {
                batch_rows: batch,
                ..limits
            },
            schema,
            writer,
        })
    }

    /// Adds one row.
    pub fn push(&mut self, row: &R) -> Result<(), Error> {
        for (c, b) in self.cols.iter().zip(&mut self.builders) {
            let v = (c.get)(row);
            if !b.append(v) {
                return Err(Error::ColumnType {
                    column: c.name,
                    expected: c.ty.doc_name(),
                    got: v.ty().doc_name(),
                });
            }
        }
        self.pending += 1;
        self.rows += 1;
        if self.pending >= self.limits.batch_rows {
            self.flush_batch()?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<(), Error> {
        if self.pending == 0 {
            return Ok(());
        }
        let arrays = self.builders.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)?;
        self.writer.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    /// Writes what is pending and the file footer; returns the sink and the number of rows.
    pub fn finish(mut self) -> Result<(W, u64), Error> {
        self.flush_batch()?;
        let out = self.writer.into_inner()?;
        Ok((out, self.rows))
    }
}
