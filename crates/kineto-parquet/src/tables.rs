//! The tables: their rows, their column lists and how one analysed trace fills them.

use crate::Error;
use crate::column::{Col, Ty, Val};
use crate::writer::{Batcher, Limits, TableWriter, schema_of};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use kineto_trace::analysis::Analysis;
use kineto_trace::budget::{BucketTime, FamilyTime, MEMCPY, MEMSET, StepBudget};
use kineto_trace::family::{Label, Rules, UNMATCHED};
use kineto_trace::step::Step;
use kineto_trace::{GpuKind, GpuOp, Launch, Span, Trace};
use std::collections::HashMap;
use std::io::Write;

/// A table of the export; each is a directory `DIR/<name>/rank=N/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// One row per kernel, copy and fill.
    GpuOps,
    /// One row per step, with its budget's totals.
    Steps,
    /// One row per step × bucket: exclusive and inclusive time.
    Budget,
    /// One row per step × kernel family: count, sum and union.
    Families,
    /// One row per user annotation range (CPU) and GPU mirror of one.
    Annotations,
}

impl Table {
    /// Every table, in the order they are written and documented.
    pub const ALL: [Table; 5] = [
        Table::GpuOps,
        Table::Steps,
        Table::Budget,
        Table::Families,
        Table::Annotations,
    ];

    /// The table's directory name.
    pub fn name(self) -> &'static str {
        match self {
            Table::GpuOps => "gpu_ops",
            Table::Steps => "steps",
            Table::Budget => "budget",
            Table::Families => "families",
            Table::Annotations => "annotations",
        }
    }

    /// The Arrow schema of the table's files and batches.
    pub fn schema(self) -> SchemaRef {
        match self {
            Table::GpuOps => schema_of(gpu_op_columns()),
            Table::Steps => schema_of(step_columns()),
            Table::Budget => schema_of(budget_columns()),
            Table::Families => schema_of(family_columns()),
            Table::Annotations => schema_of(annotation_columns()),
        }
    }

    /// The table named `name` (`gpu_ops`, `steps`, …).
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.name() == name)
    }

    /// `(column, type, nullable, description)` for every column, for documentation and its check.
    pub fn columns(self) -> Vec<(&'static str, Ty, bool, &'static str)> {
        fn list<R>(c: &[Col<R>]) -> Vec<(&'static str, Ty, bool, &'static str)> {
            c.iter()
                .map(|c| (c.name, c.ty, c.nullable, c.doc))
                .collect()
        }
        match self {
            Table::GpuOps => list(gpu_op_columns()),
            Table::Steps => list(step_columns()),
            Table::Budget => list(budget_columns()),
            Table::Families => list(family_columns()),
            Table::Annotations => list(annotation_columns()),
        }
    }
}

/// One trace after parsing and analysis: what every table is made from.
pub struct Analysed<'a> {
    /// The trace file as given (the `file` column).
    pub file: &'a str,
    /// The model.
    pub trace: &'a Trace,
    /// Links, steps and kernel families.
    pub analysis: &'a Analysis,
    /// The budget of every step, in step order (`Analysis::budgets`).
    pub budgets: &'a [StepBudget],
    /// The rule table the families came from.
    pub rules: &'a Rules,
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
    let mut meta = meta.to_vec();
    meta.push(("kineto.table", table.name().to_string()));
    meta.push(("kineto.file", a.file.to_string()));
    let mut w = TableWriter::new(out, table.schema(), &meta, limits)?;
    let rows = fill_table(table, a, limits.batch_rows, &mut |b| w.write(&b))?;
    Ok((w.finish()?, rows))
}

/// Builds `table` for one trace and hands each record batch (at most `batch_rows` rows) to `emit`
/// as soon as it is full; returns the row count. The batches' schema is [`Table::schema`].
pub fn fill_table(
    table: Table,
    a: &Analysed<'_>,
    batch_rows: usize,
    emit: &mut dyn FnMut(RecordBatch) -> Result<(), Error>,
) -> Result<u64, Error> {
    match table {
        Table::GpuOps => fill_gpu_ops(a, batch_rows, emit),
        Table::Steps => {
            let mut b = Batcher::new(step_columns(), batch_rows);
            for (step, budget) in a.analysis.steps.steps.iter().zip(a.budgets) {
                let row = StepRow {
                    file: a.file,
                    step,
                    budget,
                };
                put(&mut b, &row, emit)?;
            }
            done(b, emit)
        }
        Table::Budget => {
            let mut b = Batcher::new(budget_columns(), batch_rows);
            for (step, budget) in a.analysis.steps.steps.iter().zip(a.budgets) {
                for (bucket, time) in &budget.buckets {
                    let row = BudgetRow {
                        file: a.file,
                        step,
                        bucket,
                        time,
                    };
                    put(&mut b, &row, emit)?;
                }
            }
            done(b, emit)
        }
        Table::Families => {
            let mut b = Batcher::new(family_columns(), batch_rows);
            for (step, budget) in a.analysis.steps.steps.iter().zip(a.budgets) {
                for (family, time) in &budget.families {
                    let bucket = a
                        .rules
                        .find_family(family)
                        .map_or(UNMATCHED, |f| a.rules.family(f).bucket.as_str());
                    let row = FamilyRow {
                        file: a.file,
                        step,
                        family,
                        bucket,
                        time,
                    };
                    put(&mut b, &row, emit)?;
                }
            }
            done(b, emit)
        }
        Table::Annotations => {
            let mut b = Batcher::new(annotation_columns(), batch_rows);
            let t = a.trace;
            for (kind, spans) in [
                ("cpu", &t.user_annotations),
                ("gpu", &t.gpu_user_annotations),
            ] {
                for span in spans {
                    let ids = t.track(span.track);
                    let row = AnnotationRow {
                        file: a.file,
                        kind,
                        name: t.name(span.name),
                        span,
                        pid: ids.pid.to_string(),
                        tid: ids.tid.to_string(),
                    };
                    put(&mut b, &row, emit)?;
                }
            }
            done(b, emit)
        }
    }
}

/// Pushes a row and hands on the batch it completes.
fn put<R>(
    b: &mut Batcher<'_, R>,
    row: &R,
    emit: &mut dyn FnMut(RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    match b.push(row)? {
        Some(batch) => emit(batch),
        None => Ok(()),
    }
}

/// Hands on the last, partial batch; returns the row count.
fn done<R>(
    mut b: Batcher<'_, R>,
    emit: &mut dyn FnMut(RecordBatch) -> Result<(), Error>,
) -> Result<u64, Error> {
    if let Some(batch) = b.flush()? {
        emit(batch)?;
    }
    Ok(b.rows())
}

fn fill_gpu_ops(
    a: &Analysed<'_>,
    batch_rows: usize,
    emit: &mut dyn FnMut(RecordBatch) -> Result<(), Error>,
) -> Result<u64, Error> {
    let (t, an, rules) = (a.trace, a.analysis, a.rules);
    let mut w = Batcher::new(gpu_op_columns(), batch_rows);
    // The step of each copy and fill, as `Analysis::kernel_steps` gives it for kernels.
    let mut copy_step = vec![None; t.memcpys.len()];
    let mut fill_step = vec![None; t.memsets.len()];
    for s in &an.steps.steps {
        for &i in &s.memcpys {
            if let Some(x) = copy_step.get_mut(i as usize) {
                *x = Some(s.index as u32);
            }
        }
        for &i in &s.memsets {
            if let Some(x) = fill_step.get_mut(i as usize) {
                *x = Some(s.index as u32);
            }
        }
    }
    let kernel_step = an.kernel_steps(t);
    let overlaps = kineto_trace::step::same_stream_overlaps(t);
    // `Rules::how` formats a string; a trace has few distinct labels and many kernels.
    let mut how: HashMap<Label, String> = HashMap::new();
    for (kind, steps) in [
        (GpuKind::Kernel, &kernel_step),
        (GpuKind::Memcpy, &copy_step),
        (GpuKind::Memset, &fill_step),
    ] {
        for (i, op) in t.gpu_ops(kind).iter().enumerate() {
            let launch = an.links.launch_of(kind, i);
            let (family, bucket, matched, how) = match kind {
                GpuKind::Kernel => {
                    let label = an.classes.label(i);
                    let family = label.family().map(|f| rules.family(f));
                    (
                        family.map(|f| f.name.as_str()),
                        family.map_or(UNMATCHED, |f| f.bucket.as_str()),
                        Some(label.kind().as_str()),
                        Some(how.entry(label).or_insert_with(|| rules.how(label)).clone()),
                    )
                }
                GpuKind::Memcpy => (None, MEMCPY, None, None),
                GpuKind::Memset => (None, MEMSET, None, None),
            };
            let row = GpuOpRow {
                file: a.file,
                kind,
                index: i as u32,
                op,
                name: t.name(op.name),
                step: steps.get(i).copied().flatten(),
                family,
                bucket,
                matched,
                how,
                launch: launch.and_then(|l| t.launches.get(l)),
                launch_name: launch
                    .and_then(|l| t.launches.get(l))
                    .map(|l| t.name(l.name)),
                launch_tid: launch
                    .and_then(|l| t.launches.get(l))
                    .map(|l| t.track(l.track).tid.to_string()),
                annotation: launch
                    .and_then(|l| an.links.annotations(t, l).next())
                    .map(|s| t.name(s.name)),
                cpu_op: launch
                    .and_then(|l| an.links.cpu_ops(t, l).next())
                    .map(|s| t.name(s.name)),
                overlap: match kind {
                    GpuKind::Kernel => overlaps.get(i).copied(),
                    _ => None,
                },
            };
            put(&mut w, &row, emit)?;
        }
    }
    done(w, emit)
}

/// A kernel, copy or fill with what the analysis says about it.
pub struct GpuOpRow<'a> {
    file: &'a str,
    kind: GpuKind,
    index: u32,
    op: &'a GpuOp,
    name: &'a str,
    step: Option<u32>,
    family: Option<&'a str>,
    bucket: &'a str,
    matched: Option<&'static str>,
    how: Option<String>,
    launch: Option<&'a Launch>,
    launch_name: Option<&'a str>,
    launch_tid: Option<String>,
    annotation: Option<&'a str>,
    cpu_op: Option<&'a str>,
    overlap: Option<bool>,
}

fn kind_name(k: GpuKind) -> &'static str {
    match k {
        GpuKind::Kernel => "kernel",
        GpuKind::Memcpy => "memcpy",
        GpuKind::Memset => "memset",
    }
}

/// Launch dimensions are 0 in the model when the trace has none (copies, fills, old traces).
fn dim(d: u32) -> Option<u32> {
    (d != 0).then_some(d)
}

/// The columns of `gpu_ops`.
pub fn gpu_op_columns<'a>() -> &'a [Col<GpuOpRow<'a>>] {
    &[
        Col {
            name: "file",
            ty: Ty::Str,
            nullable: false,
            doc: "the trace file as given to the exporter",
            get: |r| Val::Str(Some(r.file)),
        },
        Col {
            name: "kind",
            ty: Ty::Str,
            nullable: false,
            doc: "`kernel`, `memcpy` or `memset`",
            get: |r| Val::Str(Some(kind_name(r.kind))),
        },
        Col {
            name: "index",
            ty: Ty::U32,
            nullable: false,
            doc: "position among the trace's ops of this kind, in file order (`kineto kernels`' `kernel`)",
            get: |r| Val::U32(Some(r.index)),
        },
        Col {
            name: "step",
            ty: Ty::U32,
            nullable: true,
            doc: "index of the op's step in `steps` (null: in no step)",
            get: |r| Val::U32(r.step),
        },
        Col {
            name: "name",
            ty: Ty::Str,
            nullable: false,
            doc: "kernel name, or the copy/fill event name",
            get: |r| Val::Str(Some(r.name)),
        },
        Col {
            name: "family",
            ty: Ty::Str,
            nullable: true,
            doc: "kernel family (null: unmatched kernel, copy, fill)",
            get: |r| Val::Str(r.family),
        },
        Col {
            name: "bucket",
            ty: Ty::Str,
            nullable: false,
            doc: "budget bucket: the family's, `unmatched`, `memcpy` or `memset`",
            get: |r| Val::Str(Some(r.bucket)),
        },
        Col {
            name: "matched",
            ty: Ty::Str,
            nullable: true,
            doc: "how the family was found: `rule`, `fallback`, `unmatched` (null for copies and fills)",
            get: |r| Val::Str(r.matched),
        },
        Col {
            name: "how",
            ty: Ty::Str,
            nullable: true,
            doc: "which rule or fallback word (`rule 12 (line 80)`), `unmatched`; null for copies and fills",
            get: |r| Val::Str(r.how.as_deref()),
        },
        Col {
            name: "ts_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "start, integer ns on the trace's clock (MEASURED)",
            get: |r| Val::I64(Some(r.op.ts_ns)),
        },
        Col {
            name: "dur_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "duration, integer ns (MEASURED)",
            get: |r| Val::I64(Some(r.op.dur_ns)),
        },
        Col {
            name: "device",
            ty: Ty::I64,
            nullable: true,
            doc: "`args.device`",
            get: |r| Val::I64(r.op.device),
        },
        Col {
            name: "stream",
            ty: Ty::I64,
            nullable: true,
            doc: "`args.stream`",
            get: |r| Val::I64(r.op.stream),
        },
        Col {
            name: "correlation",
            ty: Ty::U64,
            nullable: true,
            doc: "`args.correlation` (the CPU launch's id)",
            get: |r| Val::U64(r.op.correlation.map(|c| c.get())),
        },
        Col {
            name: "launch",
            ty: Ty::Str,
            nullable: true,
            doc: "the launching runtime/driver API (`cudaLaunchKernel`, …); null: no launch found",
            get: |r| Val::Str(r.launch_name),
        },
        Col {
            name: "launch_ts_ns",
            ty: Ty::I64,
            nullable: true,
            doc: "the launch's start, ns (queueing delay = ts_ns − launch_ts_ns)",
            get: |r| Val::I64(r.launch.map(|l| l.ts_ns)),
        },
        Col {
            name: "launch_tid",
            ty: Ty::Str,
            nullable: true,
            doc: "the launching thread's tid as the trace wrote it",
            get: |r| Val::Str(r.launch_tid.as_deref()),
        },
        Col {
            name: "annotation",
            ty: Ty::Str,
            nullable: true,
            doc: "innermost `user_annotation` around the launch",
            get: |r| Val::Str(r.annotation),
        },
        Col {
            name: "cpu_op",
            ty: Ty::Str,
            nullable: true,
            doc: "innermost `cpu_op` around the launch",
            get: |r| Val::Str(r.cpu_op),
        },
        Col {
            name: "grid_x",
            ty: Ty::U32,
            nullable: true,
            doc: "grid x (null when the trace has no grid)",
            get: |r| Val::U32(dim(r.op.grid[0])),
        },
        Col {
            name: "grid_y",
            ty: Ty::U32,
            nullable: true,
            doc: "grid y",
            get: |r| Val::U32(dim(r.op.grid[1])),
        },
        Col {
            name: "grid_z",
            ty: Ty::U32,
            nullable: true,
            doc: "grid z",
            get: |r| Val::U32(dim(r.op.grid[2])),
        },
        Col {
            name: "block_x",
            ty: Ty::U32,
            nullable: true,
            doc: "block x (null when the trace has no block)",
            get: |r| Val::U32(dim(r.op.block[0])),
        },
        Col {
            name: "block_y",
            ty: Ty::U32,
            nullable: true,
            doc: "block y",
            get: |r| Val::U32(dim(r.op.block[1])),
        },
        Col {
            name: "block_z",
            ty: Ty::U32,
            nullable: true,
            doc: "block z",
            get: |r| Val::U32(dim(r.op.block[2])),
        },
        Col {
            name: "bytes",
            ty: Ty::U64,
            nullable: true,
            doc: "`args.bytes` of a copy or fill (MEASURED by the profiler)",
            get: |r| Val::U64(r.op.bytes),
        },
        Col {
            name: "same_stream_overlap",
            ty: Ty::Bool,
            nullable: true,
            doc: "kernel started before an earlier kernel on its stream ended (null for copies and fills)",
            get: |r| Val::Bool(r.overlap),
        },
    ]
}

/// A step and its budget.
pub struct StepRow<'a> {
    file: &'a str,
    step: &'a Step,
    budget: &'a StepBudget,
}

/// The columns of `steps`.
pub fn step_columns<'a>() -> &'a [Col<StepRow<'a>>] {
    &[
        Col {
            name: "file",
            ty: Ty::Str,
            nullable: false,
            doc: "the trace file",
            get: |r| Val::Str(Some(r.file)),
        },
        Col {
            name: "step",
            ty: Ty::U32,
            nullable: false,
            doc: "the step's index in the trace (0, 1, …)",
            get: |r| Val::U32(Some(r.step.index as u32)),
        },
        Col {
            name: "step_number",
            ty: Ty::U64,
            nullable: true,
            doc: "the marker's step number (`ProfilerStep#N`'s N)",
            get: |r| Val::U64(r.step.number),
        },
        Col {
            name: "name",
            ty: Ty::Str,
            nullable: false,
            doc: "the step marker's name",
            get: |r| Val::Str(Some(&r.step.name)),
        },
        Col {
            name: "phase",
            ty: Ty::Str,
            nullable: true,
            doc: "`prefill`, `decode`, `mixed`, … when the marker says",
            get: |r| Val::Str(r.step.phase.as_deref()),
        },
        Col {
            name: "rows",
            ty: Ty::U64,
            nullable: true,
            doc: "rows (tokens) the marker states",
            get: |r| Val::U64(r.step.rows),
        },
        Col {
            name: "requests",
            ty: Ty::U64,
            nullable: true,
            doc: "requests the marker states",
            get: |r| Val::U64(r.step.requests),
        },
        Col {
            name: "cpu_lo_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "marker start on the CPU, ns",
            get: |r| Val::I64(Some(r.step.cpu_lo_ns)),
        },
        Col {
            name: "cpu_hi_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "marker end on the CPU, ns",
            get: |r| Val::I64(Some(r.step.cpu_hi_ns)),
        },
        Col {
            name: "lo_ns",
            ty: Ty::I64,
            nullable: true,
            doc: "first start of the step's kernels, ns",
            get: |r| Val::I64(r.step.lo_ns),
        },
        Col {
            name: "hi_ns",
            ty: Ty::I64,
            nullable: true,
            doc: "last end of the step's kernels, ns",
            get: |r| Val::I64(r.step.hi_ns),
        },
        Col {
            name: "period_ns",
            ty: Ty::I64,
            nullable: true,
            doc: "start of the next step's kernels minus this one's, ns",
            get: |r| Val::I64(r.step.period_ns),
        },
        Col {
            name: "kernels",
            ty: Ty::U64,
            nullable: false,
            doc: "kernels in the step",
            get: |r| Val::U64(Some(r.step.kernels.len() as u64)),
        },
        Col {
            name: "memcpys",
            ty: Ty::U64,
            nullable: false,
            doc: "copies in the step",
            get: |r| Val::U64(Some(r.step.memcpys.len() as u64)),
        },
        Col {
            name: "memsets",
            ty: Ty::U64,
            nullable: false,
            doc: "fills in the step",
            get: |r| Val::U64(Some(r.step.memsets.len() as u64)),
        },
        Col {
            name: "kernel_sum_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "Σ kernel durations, ns",
            get: |r| Val::I64(Some(r.step.kernel_sum_ns)),
        },
        Col {
            name: "kernel_union_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "union of the kernels' intervals, ns",
            get: |r| Val::I64(Some(r.step.kernel_union_ns)),
        },
        Col {
            name: "span_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "budget window: first start to last end of the step's kernels, copies and fills, ns",
            get: |r| Val::I64(Some(r.budget.span_ns)),
        },
        Col {
            name: "idle_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "time in the window with nothing of the step running, ns",
            get: |r| Val::I64(Some(r.budget.idle_ns)),
        },
        Col {
            name: "comm_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "union of the `comm` bucket's kernels, ns",
            get: |r| Val::I64(Some(r.budget.comm.comm_ns)),
        },
        Col {
            name: "comm_overlapped_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "part of comm_ns under other kernels, ns",
            get: |r| Val::I64(Some(r.budget.comm.overlapped_ns)),
        },
        Col {
            name: "comm_exposed_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "comm_ns − comm_overlapped_ns: communication nothing hides, ns",
            get: |r| Val::I64(Some(r.budget.comm.exposed_ns)),
        },
        Col {
            name: "unmatched_kernels",
            ty: Ty::U64,
            nullable: false,
            doc: "kernels no rule matched",
            get: |r| Val::U64(Some(r.budget.unmatched.count)),
        },
        Col {
            name: "unmatched_sum_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "their Σ dur, ns",
            get: |r| Val::I64(Some(r.budget.unmatched.sum_ns)),
        },
        Col {
            name: "same_stream_overlaps",
            ty: Ty::U64,
            nullable: false,
            doc: "kernels that started before an earlier one on their stream ended",
            get: |r| Val::U64(Some(r.budget.same_stream_overlaps)),
        },
    ]
}

/// A bucket's time in a step.
pub struct BudgetRow<'a> {
    file: &'a str,
    step: &'a Step,
    bucket: &'a str,
    time: &'a BucketTime,
}

/// The columns of `budget`.
pub fn budget_columns<'a>() -> &'a [Col<BudgetRow<'a>>] {
    &[
        Col {
            name: "file",
            ty: Ty::Str,
            nullable: false,
            doc: "the trace file",
            get: |r| Val::Str(Some(r.file)),
        },
        Col {
            name: "step",
            ty: Ty::U32,
            nullable: false,
            doc: "the step's index (joins `steps.step`)",
            get: |r| Val::U32(Some(r.step.index as u32)),
        },
        Col {
            name: "step_number",
            ty: Ty::U64,
            nullable: true,
            doc: "the marker's step number",
            get: |r| Val::U64(r.step.number),
        },
        Col {
            name: "bucket",
            ty: Ty::Str,
            nullable: false,
            doc: "bucket name (`gemm`, `comm`, …, `unmatched`, `memcpy`, `memset`)",
            get: |r| Val::Str(Some(r.bucket)),
        },
        Col {
            name: "exclusive_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "the bucket's share of the window (instant-by-instant equal split), ns",
            get: |r| Val::I64(Some(r.time.exclusive_ns)),
        },
        Col {
            name: "inclusive_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "union of the bucket's ops, ns",
            get: |r| Val::I64(Some(r.time.inclusive_ns)),
        },
    ]
}

/// A family's kernels in a step.
pub struct FamilyRow<'a> {
    file: &'a str,
    step: &'a Step,
    family: &'a str,
    bucket: &'a str,
    time: &'a FamilyTime,
}

/// The columns of `families`.
pub fn family_columns<'a>() -> &'a [Col<FamilyRow<'a>>] {
    &[
        Col {
            name: "file",
            ty: Ty::Str,
            nullable: false,
            doc: "the trace file",
            get: |r| Val::Str(Some(r.file)),
        },
        Col {
            name: "step",
            ty: Ty::U32,
            nullable: false,
            doc: "the step's index (joins `steps.step`)",
            get: |r| Val::U32(Some(r.step.index as u32)),
        },
        Col {
            name: "step_number",
            ty: Ty::U64,
            nullable: true,
            doc: "the marker's step number",
            get: |r| Val::U64(r.step.number),
        },
        Col {
            name: "family",
            ty: Ty::Str,
            nullable: false,
            doc: "kernel family (matched kernels only; unmatched ones are in `steps`)",
            get: |r| Val::Str(Some(r.family)),
        },
        Col {
            name: "bucket",
            ty: Ty::Str,
            nullable: false,
            doc: "the family's bucket",
            get: |r| Val::Str(Some(r.bucket)),
        },
        Col {
            name: "count",
            ty: Ty::U64,
            nullable: false,
            doc: "kernels",
            get: |r| Val::U64(Some(r.time.count)),
        },
        Col {
            name: "sum_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "Σ dur, ns",
            get: |r| Val::I64(Some(r.time.sum_ns)),
        },
        Col {
            name: "union_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "union of the family's kernels, ns",
            get: |r| Val::I64(Some(r.time.union_ns)),
        },
    ]
}

/// A user annotation range or its GPU mirror.
pub struct AnnotationRow<'a> {
    file: &'a str,
    kind: &'static str,
    name: &'a str,
    span: &'a Span,
    pid: String,
    tid: String,
}

/// The columns of `annotations`.
pub fn annotation_columns<'a>() -> &'a [Col<AnnotationRow<'a>>] {
    &[
        Col {
            name: "file",
            ty: Ty::Str,
            nullable: false,
            doc: "the trace file",
            get: |r| Val::Str(Some(r.file)),
        },
        Col {
            name: "kind",
            ty: Ty::Str,
            nullable: false,
            doc: "`cpu` (`user_annotation`) or `gpu` (`gpu_user_annotation`)",
            get: |r| Val::Str(Some(r.kind)),
        },
        Col {
            name: "name",
            ty: Ty::Str,
            nullable: false,
            doc: "the annotation",
            get: |r| Val::Str(Some(r.name)),
        },
        Col {
            name: "ts_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "start, ns",
            get: |r| Val::I64(Some(r.span.ts_ns)),
        },
        Col {
            name: "dur_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "duration, ns",
            get: |r| Val::I64(Some(r.span.dur_ns)),
        },
        Col {
            name: "pid",
            ty: Ty::Str,
            nullable: false,
            doc: "pid as the trace wrote it (the device for `gpu`)",
            get: |r| Val::Str(Some(&r.pid)),
        },
        Col {
            name: "tid",
            ty: Ty::Str,
            nullable: false,
            doc: "tid as the trace wrote it (the stream for `gpu`)",
            get: |r| Val::Str(Some(&r.tid)),
        },
    ]
}
