//! `kineto ranks`: each step across the ranks of a run (span, idle and per-bucket exclusive time:
//! min, median, max, and which rank is slowest by how much).

use crate::render::{Col, Kind, Show, Val};
use kineto_trace::analysis::{Spread, StepAcrossRanks};
use std::borrow::Cow;

/// One quantity of one step across ranks.
pub struct RankRow<'a> {
    /// The step.
    pub step: &'a StepAcrossRanks,
    /// `span`, `idle`, or a bucket name.
    pub quantity: &'a str,
    /// Its spread.
    pub spread: &'a Spread,
}

/// The rows of one step: span, idle, then its buckets by largest maximum.
pub fn rows(step: &StepAcrossRanks) -> Vec<RankRow<'_>> {
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

/// The columns of `kineto ranks`, in order.
pub fn columns<'a>() -> &'a [Col<RankRow<'a>>] {
    &[
        Col {
            name: "step",
            kind: Kind::Plain,
            head: "step",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(&r.step.key)),
        },
        Col {
            name: "name",
            kind: Kind::Plain,
            head: "name",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(&r.step.name)),
        },
        Col {
            name: "ranks",
            kind: Kind::Plain,
            head: "ranks",
            show: Show::No,
            get: |r| Val::U(r.step.ranks as u64),
        },
        Col {
            name: "quantity",
            kind: Kind::Plain,
            head: "what",
            show: Show::Left(14),
            get: |r| Val::Str(Cow::Borrowed(r.quantity)),
        },
        Col {
            name: "min",
            kind: Kind::Dur,
            head: "min",
            show: Show::Right(14),
            get: |r| Val::I(r.spread.min_ns),
        },
        Col {
            name: "median_us",
            kind: Kind::Plain,
            head: "median µs",
            show: Show::Right(14),
            get: |r| Val::F(r.spread.median_ns / 1000.0),
        },
        Col {
            name: "max",
            kind: Kind::Dur,
            head: "max",
            show: Show::Right(14),
            get: |r| Val::I(r.spread.max_ns),
        },
        Col {
            name: "max_over_median_us",
            kind: Kind::Plain,
            head: "max−median µs",
            show: Show::Right(14),
            get: |r| Val::F(r.spread.max_over_median_ns() / 1000.0),
        },
        Col {
            name: "min_rank",
            kind: Kind::Plain,
            head: "min rank",
            show: Show::Right(9),
            get: |r| Val::Str(Cow::Borrowed(&r.spread.min_rank)),
        },
        Col {
            name: "max_rank",
            kind: Kind::Plain,
            head: "max rank",
            show: Show::Right(9),
            get: |r| Val::Str(Cow::Borrowed(&r.spread.max_rank)),
        },
    ]
}
