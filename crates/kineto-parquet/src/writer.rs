//! Rows into Arrow record batches ([`Batcher`]), and batches into a Parquet file ([`TableWriter`]):
//! a record batch every [`Limits::batch_rows`] rows, a row group every [`Limits::row_group_rows`], so
//! memory is bounded by the limits, not by the trace.

use crate::arrow::{Builder, arrow_type, field};
use crate::{Error, SCHEMA_VERSION};
use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use kineto_tables::{Col, PARTITION, Ty};
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

/// The columns of a list that one trace's Arrow table holds: all but the partition column (`rank`, the
/// Hive partition of the export; every row of one trace has the same).
pub fn stored<R>(cols: &[Col<R>]) -> Vec<&Col<R>> {
    cols.iter().filter(|c| c.name != PARTITION).collect()
}

/// The Arrow schema of a column list (its [`stored`] columns).
pub fn schema_of<R>(cols: &[Col<R>]) -> SchemaRef {
    Arc::new(Schema::new(
        stored(cols).into_iter().map(field).collect::<Vec<_>>(),
    ))
}

/// Builds rows of type `R` into record batches of at most `batch_rows` rows: the one place a row
/// becomes Arrow columns, for the Parquet files and the Python module's tables alike.
pub struct Batcher<'c, R> {
    cols: Vec<&'c Col<R>>,
    builders: Vec<Builder>,
    pending: usize,
    rows: u64,
    batch_rows: usize,
    schema: SchemaRef,
}

impl<'c, R> Batcher<'c, R> {
    /// A batcher for the columns `cols` (the [`stored`] ones).
    pub fn new(cols: &'c [Col<R>], batch_rows: usize) -> Self {
        let batch_rows = batch_rows.max(1);
        let kept = stored(cols);
        Batcher {
            builders: kept
                .iter()
                .map(|c| Builder::new(c.ty, batch_rows))
                .collect(),
            cols: kept,
            pending: 0,
            rows: 0,
            batch_rows,
            schema: schema_of(cols),
        }
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds one row; returns a full batch when this row completed one.
    pub fn push(&mut self, row: &R) -> Result<Option<RecordBatch>, Error> {
        for (c, b) in self.cols.iter().zip(&mut self.builders) {
            let v = (c.get)(row);
            if !b.append(&v) {
                return Err(Error::ColumnType {
                    column: c.name,
                    expected: c.ty.doc_name(),
                    got: v.ty().doc_name(),
                });
            }
        }
        self.pending += 1;
        self.rows += 1;
        if self.pending >= self.batch_rows {
            return self.flush();
        }
        Ok(None)
    }

    /// The rows pushed since the last batch, as a batch (`None` when there are none).
    pub fn flush(&mut self) -> Result<Option<RecordBatch>, Error> {
        if self.pending == 0 {
            return Ok(None);
        }
        let arrays = self.builders.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)?;
        self.pending = 0;
        Ok(Some(batch))
    }
}

/// Writes record batches of one schema to one Parquet file.
pub struct TableWriter<W: Write + Send> {
    writer: ArrowWriter<W>,
}

impl<W: Write + Send> TableWriter<W> {
    /// Starts a file with `schema`; `meta` goes into the file's key-value metadata beside
    /// `kineto.schema_version`.
    pub fn new(
        out: W,
        schema: SchemaRef,
        meta: &[(&str, String)],
        limits: Limits,
    ) -> Result<Self, Error> {
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
        for f in schema
            .fields()
            .iter()
            .filter(|f| *f.data_type() == arrow_type(Ty::Str))
        {
            props = props.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), true);
        }
        let writer = ArrowWriter::try_new(out, schema, Some(props.build()))?;
        Ok(TableWriter { writer })
    }

    /// Writes one batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        self.writer.write(batch)?;
        Ok(())
    }

    /// Writes what is buffered and the file footer; returns the sink.
    pub fn finish(self) -> Result<W, Error> {
        Ok(self.writer.into_inner()?)
    }
}
