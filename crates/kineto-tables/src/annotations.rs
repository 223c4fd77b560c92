//! `annotations` (one row per user annotation range and GPU mirror of one) and `annotation_stats` (one row
//! per annotation name: `kineto annotations`, the names a step pattern can match).

use crate::{Col, col};
use kineto_trace::analysis::AnnotationStats;
use kineto_trace::{Span, Trace};

/// A user annotation range or its GPU mirror.
pub struct AnnotationRow<'a> {
    file: &'a str,
    rank: Option<u64>,
    kind: &'static str,
    name: &'a str,
    span: Span,
    pid: String,
    tid: String,
}

/// The ranges of `trace`: CPU `user_annotation`s in file order, then their GPU mirrors.
pub fn annotation_rows<'a>(
    file: &'a str,
    trace: &'a Trace,
) -> impl Iterator<Item = AnnotationRow<'a>> + 'a {
    [
        ("cpu", &trace.user_annotations),
        ("gpu", &trace.gpu_user_annotations),
    ]
    .into_iter()
    .flat_map(move |(kind, spans)| {
        spans.iter().map(move |span| {
            let ids = trace.track(span.track);
            AnnotationRow {
                file,
                rank: trace.header.rank,
                kind,
                name: trace.name(span.name),
                span,
                pid: ids.pid.to_string(),
                tid: ids.tid.to_string(),
            }
        })
    })
}

/// The columns of `annotations`.
#[rustfmt::skip]
pub fn annotation_columns<'a>() -> &'a [Col<AnnotationRow<'a>>] {
    &[
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none); in Parquet the Hive partition `rank=N`", |r| r.rank),
        col!("kind", Str, None, "`cpu` (`user_annotation`) or `gpu` (`gpu_user_annotation`)", |r| r.kind),
        col!("name", Str, None, "the annotation", |r| r.name),
        col!("ts_ns", I64, TimeNs, "start (MEASURED)", |r| r.span.ts_ns),
        col!("dur_ns", I64, Ns, "duration (MEASURED)", |r| r.span.dur_ns),
        col!("pid", Str, None, "pid as the trace wrote it (the device for `gpu`)", |r| r.pid.as_str()),
        col!("tid", Str, None, "tid as the trace wrote it (the stream for `gpu`)", |r| r.tid.as_str()),
        col!("file", Str, None, "the trace file as given", |r| r.file),
    ]
}

/// An annotation name's numbers.
pub struct AnnotationStatsRow<'a> {
    /// The trace file as given.
    pub file: &'a str,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The numbers.
    pub stats: &'a AnnotationStats,
}

/// The columns of `annotation_stats`.
#[rustfmt::skip]
pub fn annotation_stats_columns<'a>() -> &'a [Col<AnnotationStatsRow<'a>>] {
    &[
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none)", |r| r.rank),
        col!("count", U64, None, "CPU ranges (`user_annotation`) of this name", |r| r.stats.count),
        col!("total_ns", I64, Ns, "their Σ dur (MEASURED)", |r| r.stats.total_ns),
        col!("mean_ns", I64?, Ns, "total_ns / count, rounded half up to the ns (null without a CPU range)", |r| r.stats.mean_ns()),
        col!("gpu_count", U64, None, "GPU mirrors (`gpu_user_annotation`) of this name", |r| r.stats.gpu_count),
        col!("gpu_total_ns", I64, Ns, "their Σ dur (MEASURED)", |r| r.stats.gpu_total_ns),
        col!("name", Str, None, "the annotation", |r| r.stats.name.as_str()),
        col!("file", Str, None, "the trace file as given", |r| r.file),
    ]
}
