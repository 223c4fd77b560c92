//! `steps`: one row per step, with its budget's totals (`kineto steps`; `kineto budget` nests the step's
//! buckets and families in the same row).

use crate::{Analysed, Col, col};
use kineto_trace::budget::StepBudget;
use kineto_trace::step::{PhaseTokens, Step};

/// A step and its budget.
pub struct StepRow<'a> {
    /// The trace file as given.
    pub file: &'a str,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The step.
    pub step: &'a Step,
    /// Its budget.
    pub budget: &'a StepBudget,
}

/// The rows of one trace's steps, in step order.
pub fn step_rows<'a>(a: &'a Analysed<'a>) -> impl Iterator<Item = StepRow<'a>> + 'a {
    a.analysis
        .steps
        .steps
        .iter()
        .zip(a.budgets)
        .map(|(step, budget)| StepRow {
            file: a.file,
            rank: a.trace.header.rank,
            step,
            budget,
        })
}

fn prefill(r: &StepRow<'_>) -> Option<PhaseTokens> {
    r.step.tokens.and_then(|t| t.prefill)
}

fn decode(r: &StepRow<'_>) -> Option<PhaseTokens> {
    r.step.tokens.and_then(|t| t.decode)
}

/// The columns of `steps`.
#[rustfmt::skip]
pub fn step_columns<'a>() -> &'a [Col<StepRow<'a>>] {
    &[
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none); in Parquet the Hive partition `rank=N`", |r| r.rank),
        col!("step", U32, None, "the step's index in the trace (0, 1, …)", |r| r.step.index as u32),
        col!("step_number", U64?, None, "the marker's step number (`ProfilerStep#N`'s N)", |r| r.step.number),
        col!("name", Str, None, "the step marker's name", |r| r.step.name.as_str()),
        col!("phase", Str?, None, "the step's phase: the marker's (`prefill`, `DECODE`, `mixed`, … as written), else inferred from the trace (`prefill`, `decode`, `mixed`); null: unknown", |r| r.step.phase.as_deref()),
        col!("phase_from", Str?, None, "how the phase was found: the marker, a graph replay, phase-only attention kernels, one query token per request (null: unknown)", |r| r.step.phase_from.as_ref().map(ToString::to_string)),
        col!("rows", U64?, None, "rows (tokens) the marker states", |r| r.step.rows),
        col!("requests", U64?, None, "requests the marker states", |r| r.step.requests),
        col!("prefill_requests", U64?, None, "prefill requests the marker states", |r| prefill(r).and_then(|p| p.requests)),
        col!("prefill_query_tokens", U64?, None, "Σ query tokens of the prefill requests the marker states", |r| prefill(r).and_then(|p| p.query_tokens)),
        col!("prefill_context_tokens", U64?, None, "Σ context (KV) tokens of the prefill requests the marker states", |r| prefill(r).and_then(|p| p.context_tokens)),
        col!("decode_requests", U64?, None, "decode requests the marker states", |r| decode(r).and_then(|p| p.requests)),
        col!("decode_query_tokens", U64?, None, "Σ query tokens of the decode requests the marker states", |r| decode(r).and_then(|p| p.query_tokens)),
        col!("decode_context_tokens", U64?, None, "Σ context (KV) tokens of the decode requests the marker states", |r| decode(r).and_then(|p| p.context_tokens)),
        col!("query_tokens", U64?, None, "Σ query tokens of the step from any source (`tokens_from`): the marker, the step's GEMM rows, a graph capture", |r| r.step.tokens.and_then(|t| t.query_tokens())),
        col!("tokens_from", Str?, None, "where the step's token counts come from (null: no source gives any)", |r| (!r.step.tokens_from.is_empty()).then(|| kineto_trace::tokens::describe(&r.step.tokens_from))),
        col!("cpu_lo_ns", I64, TimeNs, "marker start on the CPU", |r| r.step.cpu_lo_ns),
        col!("cpu_hi_ns", I64, TimeNs, "marker end on the CPU", |r| r.step.cpu_hi_ns),
        col!("lo_ns", I64?, TimeNs, "first start of the step's kernels", |r| r.step.lo_ns),
        col!("hi_ns", I64?, TimeNs, "last end of the step's kernels", |r| r.step.hi_ns),
        col!("period_ns", I64?, Ns, "start of the next step's kernels minus this one's", |r| r.step.period_ns),
        col!("kernels", U64, None, "kernels in the step", |r| r.step.kernels.len() as u64),
        col!("memcpys", U64, None, "copies in the step", |r| r.step.memcpys.len() as u64),
        col!("memsets", U64, None, "fills in the step", |r| r.step.memsets.len() as u64),
        col!("kernel_sum_ns", I64, Ns, "Σ kernel durations", |r| r.step.kernel_sum_ns),
        col!("kernel_union_ns", I64, Ns, "union of the kernels' intervals", |r| r.step.kernel_union_ns),
        col!("window_lo_ns", I64?, TimeNs, "budget window start: first start of the step's kernels, copies and fills", |r| r.budget.window.map(|w| w.0)),
        col!("window_hi_ns", I64?, TimeNs, "budget window end: last end of the step's kernels, copies and fills", |r| r.budget.window.map(|w| w.1)),
        col!("span_ns", I64, Ns, "window_hi_ns − window_lo_ns (0 without GPU work)", |r| r.budget.span_ns),
        col!("idle_ns", I64, Ns, "time in the window with nothing of the step running", |r| r.budget.idle_ns),
        col!("comm_ns", I64, Ns, "union of the `comm` bucket's kernels", |r| r.budget.comm.comm_ns),
        col!("comm_overlapped_ns", I64, Ns, "part of comm_ns under other kernels", |r| r.budget.comm.overlapped_ns),
        col!("comm_exposed_ns", I64, Ns, "comm_ns − comm_overlapped_ns: communication nothing hides", |r| r.budget.comm.exposed_ns),
        col!("comm_overlap_pct", F64?, Pct, "100 × comm_overlapped_ns / comm_ns (null without comm)", |r| r.budget.comm.pct()),
        col!("unmatched_kernels", U64, None, "kernels no rule matched", |r| r.budget.unmatched.count),
        col!("unmatched_sum_ns", I64, Ns, "their Σ dur", |r| r.budget.unmatched.sum_ns),
        col!("same_stream_overlaps", U64, None, "kernels that started before an earlier one on their stream ended", |r| r.step.same_stream_overlaps),
        col!("file", Str, None, "the trace file as given", |r| r.file),
    ]
}
