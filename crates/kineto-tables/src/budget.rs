//! `budget` (one row per step × bucket) and `families` (one row per step × kernel family). `kineto budget`
//! nests both in its step rows (`buckets`, `families`, `unmatched`): the columns of these rows that the step
//! row does not have.

use crate::{Analysed, Col, col};
use kineto_trace::budget::{BucketTime, FamilyTime, StepBudget};
use kineto_trace::family::{Rules, UNMATCHED};
use kineto_trace::step::Step;

/// A bucket's time in a step.
pub struct BudgetRow<'a> {
    file: &'a str,
    rank: Option<u64>,
    step: &'a Step,
    bucket: &'a str,
    time: &'a BucketTime,
}

/// A family's kernels in a step (or the step's unmatched kernels: family and bucket `unmatched`).
pub struct FamilyRow<'a> {
    file: &'a str,
    rank: Option<u64>,
    step: &'a Step,
    family: &'a str,
    bucket: &'a str,
    time: &'a FamilyTime,
}

impl BudgetRow<'_> {
    /// The bucket: what the row is keyed by within its step.
    pub fn key(&self) -> &str {
        self.bucket
    }
}

impl FamilyRow<'_> {
    /// The family: what the row is keyed by within its step.
    pub fn key(&self) -> &str {
        self.family
    }
}

/// One step's bucket rows, by bucket name.
pub fn bucket_rows<'a>(
    file: &'a str,
    rank: Option<u64>,
    step: &'a Step,
    budget: &'a StepBudget,
) -> impl Iterator<Item = BudgetRow<'a>> + 'a {
    budget.buckets.iter().map(move |(bucket, time)| BudgetRow {
        file,
        rank,
        step,
        bucket,
        time,
    })
}

/// One step's family rows, by family name (matched kernels only).
pub fn family_rows<'a>(
    file: &'a str,
    rank: Option<u64>,
    step: &'a Step,
    budget: &'a StepBudget,
    rules: &'a Rules,
) -> impl Iterator<Item = FamilyRow<'a>> + 'a {
    budget.families.iter().map(move |(family, time)| FamilyRow {
        file,
        rank,
        step,
        family,
        bucket: rules
            .find_family(family)
            .map_or(UNMATCHED, |f| rules.family(f).bucket.as_str()),
        time,
    })
}

/// The step's unmatched kernels as a family row (family and bucket `unmatched`).
pub fn unmatched_row<'a>(
    file: &'a str,
    rank: Option<u64>,
    step: &'a Step,
    budget: &'a StepBudget,
) -> FamilyRow<'a> {
    FamilyRow {
        file,
        rank,
        step,
        family: UNMATCHED,
        bucket: UNMATCHED,
        time: &budget.unmatched,
    }
}

/// Every step's bucket rows, in step order.
pub fn budget_rows<'a>(a: &'a Analysed<'a>) -> impl Iterator<Item = BudgetRow<'a>> + 'a {
    let rank = a.trace.header.rank;
    a.analysis
        .steps
        .steps
        .iter()
        .zip(a.budgets)
        .flat_map(move |(s, b)| bucket_rows(a.file, rank, s, b))
}

/// Every step's family rows, in step order.
pub fn families_rows<'a>(a: &'a Analysed<'a>) -> impl Iterator<Item = FamilyRow<'a>> + 'a {
    let rank = a.trace.header.rank;
    a.analysis
        .steps
        .steps
        .iter()
        .zip(a.budgets)
        .flat_map(move |(s, b)| family_rows(a.file, rank, s, b, a.rules))
}

/// The columns of `budget`.
#[rustfmt::skip]
pub fn budget_columns<'a>() -> &'a [Col<BudgetRow<'a>>] {
    &[
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none); in Parquet the Hive partition `rank=N`", |r| r.rank),
        col!("step", U32, None, "the step's index (joins `steps.step`)", |r| r.step.index as u32),
        col!("step_number", U64?, None, "the marker's step number", |r| r.step.number),
        col!("bucket", Str, None, "bucket name (`gemm`, `comm`, …, `unmatched`, `memcpy`, `memset`)", |r| r.bucket),
        col!("exclusive_ns", I64, Ns, "the bucket's share of the window (instant-by-instant equal split)", |r| r.time.exclusive_ns),
        col!("inclusive_ns", I64, Ns, "union of the bucket's ops", |r| r.time.inclusive_ns),
        col!("file", Str, None, "the trace file as given", |r| r.file),
    ]
}

/// The columns of `families`.
#[rustfmt::skip]
pub fn family_columns<'a>() -> &'a [Col<FamilyRow<'a>>] {
    &[
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none); in Parquet the Hive partition `rank=N`", |r| r.rank),
        col!("step", U32, None, "the step's index (joins `steps.step`)", |r| r.step.index as u32),
        col!("step_number", U64?, None, "the marker's step number", |r| r.step.number),
        col!("family", Str, None, "kernel family (matched kernels only; unmatched ones are in `steps`)", |r| r.family),
        col!("bucket", Str, None, "the family's bucket", |r| r.bucket),
        col!("count", U64, None, "kernels", |r| r.time.count),
        col!("sum_ns", I64, Ns, "Σ dur", |r| r.time.sum_ns),
        col!("union_ns", I64, Ns, "union of the family's kernels", |r| r.time.union_ns),
        col!("file", Str, None, "the trace file as given", |r| r.file),
    ]
}
