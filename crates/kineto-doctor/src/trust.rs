//! Trust warnings: what the trace crate reports that makes a number of this trace doubtful. Listed
//! beside the findings, never ranked with them: they say how far to trust the findings, not what to fix.

use crate::{Next, TraceInput, TrustId, TrustWarning, us};

/// A warning before its file and rank are added: (id, steps, evidence, what to look at next).
type Found = (TrustId, Vec<usize>, String, Next);

/// One check: the warning it finds in a trace, if any.
type Check = fn(&TraceInput<'_>) -> Option<Found>;

/// The checks, in the order their warnings are listed.
const CHECKS: [Check; 9] = [
    salvaged,
    same_stream_overlap,
    queue_overruns,
    unlinked_ops,
    launches_without_op,
    graph_replays_without_kernels,
    parse_warnings,
    kernels_outside_steps,
    no_step_markers,
];

pub(crate) fn find(t: &TraceInput<'_>) -> Vec<TrustWarning> {
    CHECKS
        .iter()
        .filter_map(|check| check(t))
        .map(|(id, steps, evidence, next)| TrustWarning {
            id,
            file: t.file.to_string(),
            rank: t.trace.header.rank,
            steps,
            evidence,
            next,
        })
        .collect()
}

fn salvaged(t: &TraceInput<'_>) -> Option<Found> {
    let s = t.trace.salvaged.as_ref()?;
    Some((
        TrustId::Salvaged,
        Vec::new(),
        format!(
            "the file was cut at byte {} ({}); only the events before the cut are analysed",
            s.cut_offset, s.reason
        ),
        Next::Summary,
    ))
}

fn same_stream_overlap(t: &TraceInput<'_>) -> Option<Found> {
    let steps = &t.analysis.steps;
    if steps.same_stream_overlaps == 0 {
        return None;
    }
    let at: Vec<usize> = t
        .budgets
        .iter()
        .filter(|b| b.same_stream_overlaps > 0)
        .map(|b| b.index)
        .collect();
    Some((
        TrustId::SameStreamOverlap,
        at,
        format!(
            "{} kernels start before the previous kernel on their stream ended: times on those streams \
             are the profiler's, not the hardware's (budgets count the overlap once)",
            steps.same_stream_overlaps
        ),
        Next::Kernels,
    ))
}

fn queue_overruns(t: &TraceInput<'_>) -> Option<Found> {
    let o = t.trace.capture.queue_overruns.filter(|o| o.count > 0)?;
    Some((
        TrustId::QueueOverruns,
        Vec::new(),
        format!(
            "{} dispatches start before their predecessor on the queue ended (largest {} µs, Σ {} µs)",
            o.count,
            us(o.max_ns),
            us(o.sum_ns)
        ),
        Next::Summary,
    ))
}

fn unlinked_ops(t: &TraceInput<'_>) -> Option<Found> {
    let report = &t.analysis.links.report;
    let unlinked = [
        ("kernels", &report.kernels_without_launch),
        ("copies", &report.memcpys_without_launch),
        ("fills", &report.memsets_without_launch),
    ];
    let parts: Vec<String> = unlinked
        .iter()
        .filter(|(_, u)| u.count > 0)
        .map(|(what, u)| format!("{} {what} (Σ {} µs)", u.count, us(u.sum_ns)))
        .collect();
    if parts.is_empty() {
        return None;
    }
    Some((
        TrustId::UnlinkedOps,
        Vec::new(),
        format!(
            "{} have no launch call linked: the launch-bound, short-kernel and graph rules do not see them{}",
            parts.join(", "),
            if t.trace.launches.is_empty() {
                " (the trace has no runtime calls at all)"
            } else {
                ""
            }
        ),
        Next::Summary,
    ))
}

fn launches_without_op(t: &TraceInput<'_>) -> Option<Found> {
    let report = &t.analysis.links.report;
    let without: u64 = report.launches_without_gpu_op.values().sum();
    if without == 0 {
        return None;
    }
    let names: Vec<String> = report
        .launches_without_gpu_op
        .iter()
        .map(|(n, c)| format!("`{n}` ×{c}"))
        .collect();
    Some((
        TrustId::LaunchesWithoutOp,
        Vec::new(),
        format!(
            "{without} launch calls have no GPU op (dropped events, or work outside the profiled window): {}",
            names.join(", ")
        ),
        Next::Summary,
    ))
}

fn graph_replays_without_kernels(t: &TraceInput<'_>) -> Option<Found> {
    let capture = &t.trace.capture;
    if capture.kernels_complete() {
        return None;
    }
    Some((
        TrustId::GraphReplaysWithoutKernels,
        Vec::new(),
        format!(
            "{} CUDA-graph replays (Σ {} µs) were recorded whole (graph trace mode {}): the kernels inside \
             them are not in the trace, so per-kernel rules miss them",
            capture.graph_replays,
            us(capture.graph_replays_ns),
            capture.graph_trace_mode.as_deref().unwrap_or("unknown")
        ),
        Next::Summary,
    ))
}

fn parse_warnings(t: &TraceInput<'_>) -> Option<Found> {
    let tr = t.trace;
    if tr.warnings_total == 0 {
        return None;
    }
    let first = tr.warnings.first().map_or(String::new(), |w| {
        if tr.header.format.has_byte_offsets() {
            format!("; first at byte {}: {}", w.offset, w.message)
        } else {
            format!("; first: {}", w.message)
        }
    });
    Some((
        TrustId::ParseWarnings,
        Vec::new(),
        format!(
            "{} problems were worked around while reading{first}",
            tr.warnings_total
        ),
        Next::Summary,
    ))
}

fn kernels_outside_steps(t: &TraceInput<'_>) -> Option<Found> {
    let steps = &t.analysis.steps;
    if steps.kernels_outside == 0 {
        return None;
    }
    Some((
        TrustId::KernelsOutsideSteps,
        Vec::new(),
        format!(
            "{} kernels (Σ {} µs) are in no step and in no step's numbers",
            steps.kernels_outside,
            us(steps.outside.sum_ns)
        ),
        Next::Steps,
    ))
}

fn no_step_markers(t: &TraceInput<'_>) -> Option<Found> {
    let steps = &t.analysis.steps;
    if steps.profile.is_some() || steps.steps.is_empty() {
        return None;
    }
    Some((
        TrustId::NoStepMarkers,
        Vec::new(),
        "no step marker was found: the whole GPU window is one step, so between-step, straggler \
         and unsteady-step rules have nothing to compare"
            .to_string(),
        Next::Steps,
    ))
}
