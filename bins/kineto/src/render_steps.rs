//! `kineto steps`: one row per step.

use crate::render::{Col, Kind, Show, Val};
use kineto_trace::step::Step;
use std::borrow::Cow;

/// A step with the columns that name its trace.
pub struct StepRow<'a> {
    /// The trace file.
    pub file: &'a str,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The step.
    pub step: &'a Step,
}

/// The columns of `kineto steps`, in order.
pub fn columns<'a>() -> &'a [Col<StepRow<'a>>] {
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
            name: "index",
            kind: Kind::Plain,
            head: "step",
            show: Show::Right(5),
            get: |r| Val::U(r.step.index as u64),
        },
        Col {
            name: "name",
            kind: Kind::Plain,
            head: "name",
            show: Show::Left(30),
            get: |r| Val::Str(Cow::Borrowed(&r.step.name)),
        },
        Col {
            name: "number",
            kind: Kind::Plain,
            head: "number",
            show: Show::No,
            get: |r| Val::u(r.step.number),
        },
        Col {
            name: "phase",
            kind: Kind::Plain,
            head: "phase",
            show: Show::Left(8),
            get: |r| Val::text(r.step.phase.as_deref()),
        },
        Col {
            name: "rows",
            kind: Kind::Plain,
            head: "rows",
            show: Show::Right(6),
            get: |r| Val::u(r.step.rows),
        },
        Col {
            name: "requests",
            kind: Kind::Plain,
            head: "reqs",
            show: Show::Right(5),
            get: |r| Val::u(r.step.requests),
        },
        Col {
            name: "prefill_requests",
            kind: Kind::Plain,
            head: "p reqs",
            show: Show::No,
            get: |r| {
                Val::u(
                    r.step
                        .tokens
                        .and_then(|t| t.prefill)
                        .and_then(|p| p.requests),
                )
            },
        },
        Col {
            name: "prefill_query_tokens",
            kind: Kind::Plain,
            head: "p q tok",
            show: Show::No,
            get: |r| {
                Val::u(
                    r.step
                        .tokens
                        .and_then(|t| t.prefill)
                        .and_then(|p| p.query_tokens),
                )
            },
        },
        Col {
            name: "prefill_context_tokens",
            kind: Kind::Plain,
            head: "p kv tok",
            show: Show::No,
            get: |r| {
                Val::u(
                    r.step
                        .tokens
                        .and_then(|t| t.prefill)
                        .and_then(|p| p.context_tokens),
                )
            },
        },
        Col {
            name: "decode_requests",
            kind: Kind::Plain,
            head: "d reqs",
            show: Show::No,
            get: |r| {
                Val::u(
                    r.step
                        .tokens
                        .and_then(|t| t.decode)
                        .and_then(|p| p.requests),
                )
            },
        },
        Col {
            name: "decode_query_tokens",
            kind: Kind::Plain,
            head: "d q tok",
            show: Show::No,
            get: |r| {
                Val::u(
                    r.step
                        .tokens
                        .and_then(|t| t.decode)
                        .and_then(|p| p.query_tokens),
                )
            },
        },
        Col {
            name: "decode_context_tokens",
            kind: Kind::Plain,
            head: "d kv tok",
            show: Show::No,
            get: |r| {
                Val::u(
                    r.step
                        .tokens
                        .and_then(|t| t.decode)
                        .and_then(|p| p.context_tokens),
                )
            },
        },
        Col {
            name: "query_tokens",
            kind: Kind::Plain,
            head: "q tok",
            show: Show::Right(6),
            get: |r| Val::u(r.step.tokens.and_then(|t| t.query_tokens())),
        },
        Col {
            name: "tokens_from",
            kind: Kind::Plain,
            head: "tokens from",
            show: Show::No,
            get: |r| {
                if r.step.tokens_from.is_empty() {
                    Val::Null
                } else {
                    Val::Str(Cow::Owned(kineto_trace::tokens::describe(
                        &r.step.tokens_from,
                    )))
                }
            },
        },
        Col {
            name: "cpu_lo",
            kind: Kind::Time,
            head: "cpu lo",
            show: Show::No,
            get: |r| Val::I(r.step.cpu_lo_ns),
        },
        Col {
            name: "cpu_hi",
            kind: Kind::Time,
            head: "cpu hi",
            show: Show::No,
            get: |r| Val::I(r.step.cpu_hi_ns),
        },
        Col {
            name: "lo",
            kind: Kind::Time,
            head: "lo",
            show: Show::Right(14),
            get: |r| Val::ns(r.step.lo_ns),
        },
        Col {
            name: "hi",
            kind: Kind::Time,
            head: "hi",
            show: Show::Right(14),
            get: |r| Val::ns(r.step.hi_ns),
        },
        Col {
            name: "period",
            kind: Kind::Dur,
            head: "period",
            show: Show::Right(12),
            get: |r| Val::ns(r.step.period_ns),
        },
        Col {
            name: "kernels",
            kind: Kind::Plain,
            head: "kernels",
            show: Show::Right(7),
            get: |r| Val::U(r.step.kernels.len() as u64),
        },
        Col {
            name: "kernel_sum",
            kind: Kind::Dur,
            head: "sum",
            show: Show::Right(12),
            get: |r| Val::I(r.step.kernel_sum_ns),
        },
        Col {
            name: "kernel_union",
            kind: Kind::Dur,
            head: "union",
            show: Show::Right(12),
            get: |r| Val::I(r.step.kernel_union_ns),
        },
        Col {
            name: "memcpys",
            kind: Kind::Plain,
            head: "copies",
            show: Show::No,
            get: |r| Val::U(r.step.memcpys.len() as u64),
        },
        Col {
            name: "memsets",
            kind: Kind::Plain,
            head: "fills",
            show: Show::No,
            get: |r| Val::U(r.step.memsets.len() as u64),
        },
        Col {
            name: "same_stream_overlaps",
            kind: Kind::Plain,
            head: "ovl",
            show: Show::Right(5),
            get: |r| Val::U(r.step.same_stream_overlaps),
        },
    ]
}
