//! `kineto annotations`: one row per annotation name.

use crate::render::{Col, Kind, Show, Val};
use kineto_trace::analysis::AnnotationStats;
use std::borrow::Cow;

/// An annotation name's numbers with the columns that name its trace.
pub struct AnnotationRow<'a> {
    /// The trace file.
    pub file: &'a str,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The numbers.
    pub stats: &'a AnnotationStats,
}

/// The columns of `kineto annotations`, in order.
pub fn columns<'a>() -> &'a [Col<AnnotationRow<'a>>] {
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
            name: "count",
            kind: Kind::Plain,
            head: "count",
            show: Show::Right(8),
            get: |r| Val::U(r.stats.count),
        },
        Col {
            name: "total",
            kind: Kind::Dur,
            head: "total",
            show: Show::Right(14),
            get: |r| Val::I(r.stats.total_ns),
        },
        Col {
            name: "mean",
            kind: Kind::Dur,
            head: "mean",
            show: Show::Right(12),
            get: |r| Val::ns(r.stats.mean_ns()),
        },
        Col {
            name: "gpu_count",
            kind: Kind::Plain,
            head: "gpu count",
            show: Show::Right(9),
            get: |r| Val::U(r.stats.gpu_count),
        },
        Col {
            name: "gpu_total",
            kind: Kind::Dur,
            head: "gpu total",
            show: Show::Right(14),
            get: |r| Val::I(r.stats.gpu_total_ns),
        },
        Col {
            name: "name",
            kind: Kind::Plain,
            head: "name",
            show: Show::Rest,
            get: |r| Val::Str(Cow::Borrowed(&r.stats.name)),
        },
    ]
}
