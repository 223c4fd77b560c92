//! The top-N kernel table as Arrow batches (the Python module's `top()`); `kineto top` prints the same
//! groups. Not a Parquet table: a query over `gpu_ops` gives it (`docs/parquet.md`).

use crate::Error;
use crate::column::{Col, Ty, Val};
use crate::writer::{Batcher, Limits};
use arrow_array::RecordBatch;
use kineto_trace::analysis::KernelGroup;

/// One group of kernels, in the step it was counted over (`None`: the whole trace).
pub struct TopRow<'a> {
    /// The step's index, when grouped per step.
    pub step: Option<u32>,
    /// The group.
    pub group: &'a KernelGroup,
}

/// The columns of the top-N table. Times are integer ns as recorded; mean, median, standard deviation
/// and share are derived from them (MEASURED inputs, exact integer sums).
pub fn top_columns<'a>() -> &'a [Col<TopRow<'a>>] {
    &[
        Col {
            name: "step",
            ty: Ty::U32,
            nullable: true,
            doc: "the step's index (null: grouped over the whole trace)",
            get: |r| Val::U32(r.step),
        },
        Col {
            name: "name",
            ty: Ty::Str,
            nullable: false,
            doc: "the kernel name, family or bucket the group is keyed by",
            get: |r| Val::Str(Some(&r.group.key)),
        },
        Col {
            name: "count",
            ty: Ty::U64,
            nullable: false,
            doc: "kernels in the group",
            get: |r| Val::U64(Some(r.group.count)),
        },
        Col {
            name: "total_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "Σ dur, ns",
            get: |r| Val::I64(Some(r.group.total_ns)),
        },
        Col {
            name: "pct",
            ty: Ty::F64,
            nullable: false,
            doc: "total as a percentage of Σ dur of all kernels grouped",
            get: |r| Val::F64(Some(r.group.pct)),
        },
        Col {
            name: "mean_ns",
            ty: Ty::F64,
            nullable: false,
            doc: "Σ dur / count, ns",
            get: |r| Val::F64(Some(r.group.mean_ns)),
        },
        Col {
            name: "median_ns",
            ty: Ty::F64,
            nullable: false,
            doc: "the middle duration (mean of the two middle ones for an even count), ns",
            get: |r| Val::F64(Some(r.group.median_ns)),
        },
        Col {
            name: "min_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "shortest, ns",
            get: |r| Val::I64(Some(r.group.min_ns)),
        },
        Col {
            name: "max_ns",
            ty: Ty::I64,
            nullable: false,
            doc: "longest, ns",
            get: |r| Val::I64(Some(r.group.max_ns)),
        },
        Col {
            name: "stddev_ns",
            ty: Ty::F64,
            nullable: false,
            doc: "sample standard deviation (n − 1), ns; 0 for one kernel",
            get: |r| Val::F64(Some(r.group.stddev_ns)),
        },
        Col {
            name: "matched",
            ty: Ty::Str,
            nullable: false,
            doc: "how the group's kernels got their family: `rule`, `fallback`, `unmatched`, or `mixed`",
            get: |r| Val::Str(Some(r.group.matched.map_or("mixed", |m| m.as_str()))),
        },
    ]
}

/// The groups of each step (or of the whole trace, step `None`) as record batches, in the order given.
pub fn top_batches(tables: &[(Option<u32>, Vec<KernelGroup>)]) -> Result<Vec<RecordBatch>, Error> {
    let mut b = Batcher::new(top_columns(), Limits::default().batch_rows);
    let mut out = Vec::new();
    for (step, groups) in tables {
        for group in groups {
            out.extend(b.push(&TopRow { step: *step, group })?);
        }
    }
    out.extend(b.flush()?);
    Ok(out)
}
