//! `kineto top`: kernels grouped by name, family or bucket, most total time first.

use crate::render::{Col, Kind, Show, Val};
use kineto_trace::analysis::KernelGroup;
use std::borrow::Cow;

/// A group with the columns that name its trace and step.
pub struct TopRow<'a> {
    /// The trace file.
    pub file: &'a str,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The step's index with `--per-step`.
    pub step: Option<u64>,
    /// The group.
    pub group: &'a KernelGroup,
}

fn us(ns: f64) -> Val<'static> {
    Val::F(ns / 1000.0)
}

/// The columns of `kineto top`, in order.
pub fn columns<'a>() -> &'a [Col<TopRow<'a>>] {
    &[
        Col {
            name: "file",
            kind: Kind::Plain,
            head: "file",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.file)),
        },
        Col {
            name: "rank",
            kind: Kind::Plain,
            head: "rank",
            show: Show::No,
            get: |r| Val::u(r.rank),
        },
        Col {
            name: "step",
            kind: Kind::Plain,
            head: "step",
            show: Show::No,
            get: |r| Val::u(r.step),
        },
        Col {
            name: "count",
            kind: Kind::Plain,
            head: "count",
            show: Show::Right(8),
            get: |r| Val::U(r.group.count),
        },
        Col {
            name: "total",
            kind: Kind::Dur,
            head: "total",
            show: Show::Right(14),
            get: |r| Val::I(r.group.total_ns),
        },
        Col {
            name: "pct",
            kind: Kind::Plain,
            head: "%",
            show: Show::Right(7),
            get: |r| Val::F(r.group.pct),
        },
        Col {
            name: "mean_us",
            kind: Kind::Plain,
            head: "mean µs",
            show: Show::Right(12),
            get: |r| us(r.group.mean_ns),
        },
        Col {
            name: "median_us",
            kind: Kind::Plain,
            head: "median µs",
            show: Show::Right(12),
            get: |r| us(r.group.median_ns),
        },
        Col {
            name: "min",
            kind: Kind::Dur,
            head: "min",
            show: Show::Right(12),
            get: |r| Val::I(r.group.min_ns),
        },
        Col {
            name: "max",
            kind: Kind::Dur,
            head: "max",
            show: Show::Right(12),
            get: |r| Val::I(r.group.max_ns),
        },
        Col {
            name: "stddev_us",
            kind: Kind::Plain,
            head: "stddev µs",
            show: Show::Right(12),
            get: |r| us(r.group.stddev_ns),
        },
        Col {
            name: "matched",
            kind: Kind::Plain,
            head: "matched",
            show: Show::Left(9),
            get: |r| {
                Val::Str(Cow::Borrowed(
                    r.group.matched.map_or("mixed", |m| m.as_str()),
                ))
            },
        },
        Col {
            name: "name",
            kind: Kind::Plain,
            head: "name",
            show: Show::Rest,
            get: |r| Val::Str(Cow::Borrowed(&r.group.key)),
        },
    ]
}
