//! `top`: kernels grouped by name, family or bucket, most total time first (`kineto top`, the Python
//! module's `top()`). Not a Parquet table: a query over `gpu_ops` gives it (`docs/parquet.md`).

use crate::{Col, col};
use kineto_trace::analysis::KernelGroup;

/// One group of kernels, in the step it was counted over (`None`: the whole trace).
pub struct TopRow<'a> {
    /// The trace file as given.
    pub file: &'a str,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The step's index, when grouped per step.
    pub step: Option<u32>,
    /// The group.
    pub group: &'a KernelGroup,
}

/// The columns of `top`. Times are integer ns as recorded; mean, median, standard deviation and share are
/// derived from them (MEASURED inputs, exact integer sums).
#[rustfmt::skip]
pub fn top_columns<'a>() -> &'a [Col<TopRow<'a>>] {
    &[
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none)", |r| r.rank),
        col!("step", U32?, None, "the step's index (null: grouped over the whole trace)", |r| r.step),
        col!("count", U64, None, "kernels in the group", |r| r.group.count),
        col!("total_ns", I64, Ns, "Σ dur", |r| r.group.total_ns),
        col!("pct", F64, Pct, "total as a percentage of Σ dur of all kernels grouped", |r| r.group.pct),
        col!("mean_ns", F64, Ns, "Σ dur / count", |r| r.group.mean_ns),
        col!("median_ns", F64, Ns, "the middle duration (mean of the two middle ones for an even count)", |r| r.group.median_ns),
        col!("min_ns", I64, Ns, "shortest", |r| r.group.min_ns),
        col!("max_ns", I64, Ns, "longest", |r| r.group.max_ns),
        col!("stddev_ns", F64, Ns, "sample standard deviation (n − 1); 0 for one kernel", |r| r.group.stddev_ns),
        col!("matched", Str, None, "how the group's kernels got their family: `rule`, `fallback`, `unmatched`, or `mixed`", |r| r.group.matched.map_or("mixed", |m| m.as_str())),
        col!("family", Str?, None, "the family of every kernel of the group (`unmatched`: no rule matched; null: its kernels' families differ)", |r| r.group.family.as_deref()),
        col!("bucket", Str?, None, "the bucket of every kernel of the group (`unmatched` as for `family`; null: they differ)", |r| r.group.bucket.as_deref()),
        col!("name", Str, None, "the kernel name, family or bucket the group is keyed by", |r| r.group.key.as_str()),
        col!("file", Str, None, "the trace file as given", |r| r.file),
    ]
}
