//! One analysed trace's exported tables as record batches (the Parquet files and the Python module's
//! tables), and the top-N table's: each from its `kineto-tables` column list and rows.

use crate::Error;
use crate::writer::{Batcher, Limits, TableWriter, schema_of};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use kineto_tables::{
    Analysed, Col, Table, TopRow, annotation_columns, annotation_rows, budget_columns, budget_rows,
    families_rows, family_columns, gpu_op_columns, step_columns, step_rows, top_columns,
};
use kineto_trace::analysis::KernelGroup;
use std::io::Write;

/// The Arrow schema of `table`'s files and batches; `None` for a table that is not made per trace
/// ([`Table::EXPORTED`] are).
pub fn table_schema(table: Table) -> Option<SchemaRef> {
    Some(match table {
        Table::GpuOps => schema_of(gpu_op_columns()),
        Table::Steps => schema_of(step_columns()),
        Table::Budget => schema_of(budget_columns()),
        Table::Families => schema_of(family_columns()),
        Table::Annotations => schema_of(annotation_columns()),
        _ => return None,
    })
}

/// Writes `table` for one trace to `out` as one Parquet file; returns the sink and the row count.
/// `meta` goes into the file's key-value metadata (the tool adds the rank, rules and step pattern).
pub fn write_table<W: Write + Send>(
    table: Table,
    a: &Analysed<'_>,
    out: W,
    meta: &[(&str, String)],
    limits: Limits,
) -> Result<(W, u64), Error> {
    let schema = table_schema(table).ok_or(Error::NotExported(table.name()))?;
    let mut meta = meta.to_vec();
    meta.push(("kineto.table", table.name().to_string()));
    meta.push(("kineto.file", a.file.to_string()));
    let mut w = TableWriter::new(out, schema, &meta, limits)?;
    let rows = fill_table(table, a, limits.batch_rows, &mut |b| w.write(&b))?;
    Ok((w.finish()?, rows))
}

/// Builds `table` for one trace and hands each record batch (at most `batch_rows` rows) to `emit`
/// as soon as it is full; returns the row count. The batches' schema is [`table_schema`].
pub fn fill_table(
    table: Table,
    a: &Analysed<'_>,
    batch_rows: usize,
    emit: &mut dyn FnMut(RecordBatch) -> Result<(), Error>,
) -> Result<u64, Error> {
    match table {
        Table::GpuOps => fill(gpu_op_columns(), a.gpu_ops().all(), batch_rows, emit),
        Table::Steps => fill(step_columns(), step_rows(a), batch_rows, emit),
        Table::Budget => fill(budget_columns(), budget_rows(a), batch_rows, emit),
        Table::Families => fill(family_columns(), families_rows(a), batch_rows, emit),
        Table::Annotations => fill(
            annotation_columns(),
            annotation_rows(a.file, a.trace),
            batch_rows,
            emit,
        ),
        _ => Err(Error::NotExported(table.name())),
    }
}

/// Pushes every row, handing on each batch as it fills; returns the row count.
fn fill<R>(
    cols: &[Col<R>],
    rows: impl Iterator<Item = R>,
    batch_rows: usize,
    emit: &mut dyn FnMut(RecordBatch) -> Result<(), Error>,
) -> Result<u64, Error> {
    let mut b = Batcher::new(cols, batch_rows);
    for row in rows {
        if let Some(batch) = b.push(&row)? {
            emit(batch)?;
        }
    }
    if let Some(batch) = b.flush()? {
        emit(batch)?;
    }
    Ok(b.rows())
}

/// The groups of each step (or of the whole trace, step `None`) of one trace as record batches of the
/// `top` table, in the order given.
pub fn top_batches(
    file: &str,
    rank: Option<u64>,
    tables: &[(Option<u32>, Vec<KernelGroup>)],
) -> Result<Vec<RecordBatch>, Error> {
    let rows = tables.iter().flat_map(|(step, groups)| {
        groups.iter().map(move |group| TopRow {
            file,
            rank,
            step: *step,
            group,
        })
    });
    let mut out = Vec::new();
    fill(
        top_columns(),
        rows,
        Limits::default().batch_rows,
        &mut |b| {
            out.push(b);
            Ok(())
        },
    )?;
    Ok(out)
}
