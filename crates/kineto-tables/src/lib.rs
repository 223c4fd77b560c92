//! The tables `kineto` prints and exports, one typed column list each: the schema the CLI's table, CSV and
//! JSON, the Parquet files, the Python module's Arrow tables and the column docs are all derived from.
//!
//! What it is: for each table ([`Table`]), its row type, how one analysed trace gives its rows, and ONE
//! column list ([`Col`]: name, type, unit, nullability, one-line doc, getter), written with [`col!`] one
//! line per column. A column has one name everywhere; a duration or time is `…_ns`, and the µs
//! conveniences JSON and CSV add beside it are named by one rule ([`ColInfo::keys`]). Adding a table is a
//! row type, its column list and a [`Table`] entry.
//!
//! [`render`] writes the lists as text, CSV and JSON (a row at a time, to any `io::Write`), beside the
//! lists they render, so that the forms cannot drift apart; the `kineto` binary only picks the command and
//! the output. `kineto-parquet` turns the same lists into Arrow batches and Parquet files.
//!
//! What it is not: an Arrow or Parquet writer (this crate builds no Arrow: the core tool stays free of it),
//! nor an analysis (that is `kineto-trace`'s and `roofline`'s), nor where stdout's policy lives (the binary's).
#![deny(missing_docs)]

mod annotations;
mod budget;
mod column;
mod doctor;
mod gpu_ops;
mod ranks;
pub mod render;
mod roofline;
mod steps;
mod table;
mod top;

pub use annotations::{
    AnnotationRow, AnnotationStatsRow, annotation_columns, annotation_rows,
    annotation_stats_columns,
};
pub use budget::{
    BudgetRow, FamilyRow, bucket_rows, budget_columns, budget_rows, families_rows, family_columns,
    family_rows, unmatched_row,
};
pub use column::{Col, ColInfo, Keys, Ty, Unit, Val};
pub use doctor::{DoctorEntry, DoctorRow, doctor_columns, evidence_display, step_runs};
pub use gpu_ops::{GpuOpRow, GpuOps, KINDS, gpu_op_columns};
pub use ranks::{RankRow, rank_columns, rank_rows};
pub use roofline::{RooflineRow, roofline_columns, weight_columns};
pub use steps::{StepRow, step_columns, step_rows};
pub use table::{About, PARTITION, Table};
pub use top::{TopRow, top_columns};

use kineto_trace::Trace;
use kineto_trace::analysis::Analysis;
use kineto_trace::budget::StepBudget;
use kineto_trace::family::Rules;

/// The version of the tables' schema: the Parquet files' `kineto.schema_version`, the Python module's
/// `SCHEMA_VERSION`, and the version of the CLI's JSON and CSV keys. Raised when a column is removed,
/// renamed or changes meaning; adding a column keeps it. `docs/tables.md` lists what each version changed.
pub const SCHEMA_VERSION: u32 = 2;

/// One trace after parsing and analysis: what the per-trace tables are made from.
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

impl<'a> Analysed<'a> {
    /// A trace the session analysed, its rows naming it `file`.
    pub fn of(file: &'a str, t: &'a kineto_trace::AnalysedTrace) -> Analysed<'a> {
        Analysed {
            file,
            trace: t.trace(),
            analysis: &t.analysis,
            budgets: t.budgets(),
            rules: t.rules(),
        }
    }

    /// What the `gpu_ops` rows are made from.
    pub fn gpu_ops(&self) -> GpuOps<'a> {
        GpuOps::new(self.file, self.trace, self.analysis, self.rules)
    }
}
