//! `ranks`: each step across the ranks of a run (`kineto ranks`): span, idle and every bucket's exclusive
//! time, their minimum, median and maximum, and which rank is slowest by how much.

use crate::{Col, col};
use kineto_trace::analysis::{Spread, StepAcrossRanks};

/// One quantity of one step across ranks.
pub struct RankRow<'a> {
    step: &'a StepAcrossRanks,
    quantity: &'a str,
    spread: &'a Spread,
}

/// The rows of one step: span, idle, then its buckets by largest maximum (then name).
pub fn rank_rows(step: &StepAcrossRanks) -> Vec<RankRow<'_>> {
    let mut out = vec![
        RankRow {
            step,
            quantity: "span",
            spread: &step.span,
        },
        RankRow {
            step,
            quantity: "idle",
            spread: &step.idle,
        },
    ];
    let mut b: Vec<(&String, &Spread)> = step.buckets.iter().collect();
    b.sort_by(|x, y| y.1.max_ns.cmp(&x.1.max_ns).then_with(|| x.0.cmp(y.0)));
    out.extend(b.into_iter().map(|(q, s)| RankRow {
        step,
        quantity: q,
        spread: s,
    }));
    out
}

/// The columns of `ranks`.
#[rustfmt::skip]
pub fn rank_columns<'a>() -> &'a [Col<RankRow<'a>>] {
    &[
        col!("step_key", Str, None, "how the step is paired across ranks: the marker's step number, else `#` and its position in the rank", |r| r.step.key.as_str()),
        col!("name", Str, None, "the step marker's name (of the first rank that has the step)", |r| r.step.name.as_str()),
        col!("ranks", U64, None, "ranks that have the step", |r| r.step.ranks as u64),
        col!("quantity", Str, None, "`span`, `idle` or a bucket name (its exclusive time)", |r| r.quantity),
        col!("min_ns", I64, Ns, "the smallest over the ranks (a rank without the bucket counts 0)", |r| r.spread.min_ns),
        col!("median_ns", F64, Ns, "the median over the ranks (mean of the two middle values for an even count)", |r| r.spread.median_ns),
        col!("max_ns", I64, Ns, "the largest over the ranks", |r| r.spread.max_ns),
        col!("max_over_median_ns", F64, Ns, "max_ns − median_ns: how far the slowest rank is behind the median", |r| r.spread.max_over_median_ns()),
        col!("min_rank", Str, None, "the rank at the minimum (the first, in rank order)", |r| r.spread.min_rank.as_str()),
        col!("max_rank", Str, None, "the rank at the maximum (the first, in rank order): for `span`, the straggler", |r| r.spread.max_rank.as_str()),
    ]
}
