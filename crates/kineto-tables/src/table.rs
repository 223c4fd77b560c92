//! The tables, by name: what each is, where it appears, its columns without their getters (for docs and
//! checks).

use crate::column::{Col, ColInfo};

/// A table of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// One row per kernel, copy and fill.
    GpuOps,
    /// One row per step, with its budget's totals.
    Steps,
    /// One row per step × bucket.
    Budget,
    /// One row per step × kernel family.
    Families,
    /// One row per user annotation range and GPU mirror of one.
    Annotations,
    /// One row per annotation name.
    AnnotationStats,
    /// One row per group of kernels (name, family or bucket).
    Top,
    /// One row per step × quantity across the ranks of a run.
    Ranks,
    /// One row per step and rank: bytes, FLOPs, time, rates against the GPU's peaks.
    Roofline,
    /// One row per tensor group of a model.
    Weights,
    /// One row per finding of `kineto doctor` (most time at stake first), then per trust warning.
    Doctor,
}

/// Where a table appears and what its rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct About {
    /// The table's name (the Parquet directory, `docs/tables.md`'s section).
    pub name: &'static str,
    /// What one row is.
    pub rows: &'static str,
    /// Whether `kineto-export` writes it (`DIR/<name>/rank=N/<trace>.parquet`) and the Python module builds
    /// it per trace.
    pub exported: bool,
    /// The Python module's methods that return it, if any.
    pub python: &'static str,
}

/// The column that is the Hive partition of the Parquet export (`rank=N`): it is not stored in the files
/// nor in one trace's Arrow tables (the Python module's), where every row has the same rank.
pub const PARTITION: &str = "rank";

fn infos<R>(cols: &[Col<R>]) -> Vec<ColInfo> {
    cols.iter().map(Col::info).collect()
}

impl Table {
    /// Every table, in the order they are documented.
    pub const ALL: [Table; 11] = [
        Table::GpuOps,
        Table::Steps,
        Table::Budget,
        Table::Families,
        Table::Annotations,
        Table::AnnotationStats,
        Table::Top,
        Table::Ranks,
        Table::Roofline,
        Table::Weights,
        Table::Doctor,
    ];

    /// The tables `kineto-export` writes and the Python module builds per trace, in the order written.
    pub const EXPORTED: [Table; 5] = [
        Table::GpuOps,
        Table::Steps,
        Table::Budget,
        Table::Families,
        Table::Annotations,
    ];

    /// What the table is and where it appears.
    pub fn about(self) -> About {
        let (name, rows, exported, python) = match self {
            Table::GpuOps => (
                "gpu_ops",
                "one row per kernel, copy and fill: kernels in file order, then copies, then fills",
                true,
                "`gpu_ops()`, `kernels()` (the kernel rows)",
            ),
            Table::Steps => (
                "steps",
                "one row per step, with its budget's totals",
                true,
                "`steps()`",
            ),
            Table::Budget => ("budget", "one row per step × bucket", true, "`budget()`"),
            Table::Families => (
                "families",
                "one row per step × kernel family",
                true,
                "`families()`",
            ),
            Table::Annotations => (
                "annotations",
                "one row per user annotation range (CPU) and GPU mirror of one",
                true,
                "`annotations()`",
            ),
            Table::AnnotationStats => (
                "annotation_stats",
                "one row per annotation name, most CPU time first",
                false,
                "",
            ),
            Table::Top => (
                "top",
                "one row per group of kernels (by name, family or bucket), most total time first",
                false,
                "`top()`",
            ),
            Table::Ranks => (
                "ranks",
                "one row per step × quantity (`span`, `idle`, each bucket) across the ranks of a run",
                false,
                "",
            ),
            Table::Roofline => ("roofline", "one row per step and rank", false, ""),
            Table::Weights => (
                "weights",
                "one row per tensor group of the model, per rank for tp/ep",
                false,
                "",
            ),
            Table::Doctor => (
                "doctor",
                "one row per finding and rank, most time at stake first, then one per trust warning",
                false,
                "",
            ),
        };
        About {
            name,
            rows,
            exported,
            python,
        }
    }

    /// The table's name.
    pub fn name(self) -> &'static str {
        self.about().name
    }

    /// The table named `name`.
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Its columns, without their getters.
    pub fn columns(self) -> Vec<ColInfo> {
        match self {
            Table::GpuOps => infos(crate::gpu_op_columns()),
            Table::Steps => infos(crate::step_columns()),
            Table::Budget => infos(crate::budget_columns()),
            Table::Families => infos(crate::family_columns()),
            Table::Annotations => infos(crate::annotation_columns()),
            Table::AnnotationStats => infos(crate::annotation_stats_columns()),
            Table::Top => infos(crate::top_columns()),
            Table::Ranks => infos(crate::rank_columns()),
            Table::Roofline => infos(crate::roofline_columns()),
            Table::Weights => infos(crate::weight_columns()),
            Table::Doctor => infos(crate::doctor_columns()),
        }
    }
}
