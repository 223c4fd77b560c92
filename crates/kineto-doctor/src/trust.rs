//! Trust warnings: what the trace crate reports that makes a number of this trace doubtful. Listed
//! beside the findings, never ranked with them: they say how far to trust the findings, not what to fix.

use crate::{Next, TraceInput, TrustId, TrustWarning, us};

pub(crate) fn find(t: &TraceInput<'_>) -> Vec<TrustWarning> {
    let tr = t.trace;
    let steps = &t.analysis.steps;
    let report = &t.analysis.links.report;
    let mut out = Vec::new();
    let mut warn = |id: TrustId, steps: Vec<usize>, evidence: String, next: Next| {
        out.push(TrustWarning {
            id,
            file: t.file.to_string(),
            rank: tr.header.rank,
            steps,
            evidence,
            next,
        });
    };
    if let Some(s) = &tr.salvaged {
        warn(
            TrustId::Salvaged,
            Vec::new(),
            format!(
                "the file was cut at byte {} ({}); only the events before the cut are analysed",
                s.cut_offset, s.reason
            ),
            Next::Summary,
        );
    }
    if steps.same_stream_overlaps > 0 {
        let at: Vec<usize> = t
            .budgets
            .iter()
            .filter(|b| b.same_stream_overlaps > 0)
            .map(|b| b.index)
            .collect();
        warn(
            TrustId::SameStreamOverlap,
            at,
            format!(
                "{} kernels start before the previous kernel on their stream ended: times on those streams \
                 are the profiler's, not the hardware's (budgets count the overlap once)",
                steps.same_stream_overlaps
            ),
            Next::Kernels,
        );
    }
    if let Some(o) = tr.capture.queue_overruns.filter(|o| o.count > 0) {
        warn(
            TrustId::QueueOverruns,
            Vec::new(),
            format!(
                "{} dispatches start before their predecessor on the queue ended (largest {} µs, Σ {} µs)",
                o.count,
                us(o.max_ns),
                us(o.sum_ns)
            ),
            Next::Summary,
        );
    }
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
    if !parts.is_empty() {
        warn(
            TrustId::UnlinkedOps,
            Vec::new(),
            format!(
                "{} have no launch call linked: the launch-bound, short-kernel and graph rules do not see them{}",
                parts.join(", "),
                if tr.launches.is_empty() {
                    " (the trace has no runtime calls at all)"
                } else {
                    ""
                }
            ),
            Next::Summary,
        );
    }
    let without: u64 = report.launches_without_gpu_op.values().sum();
    if without > 0 {
        let names: Vec<String> = report
            .launches_without_gpu_op
            .iter()
            .map(|(n, c)| format!("`{n}` ×{c}"))
            .collect();
        warn(
            TrustId::LaunchesWithoutOp,
            Vec::new(),
            format!(
                "{without} launch calls have no GPU op (dropped events, or work outside the profiled window): {}",
                names.join(", ")
            ),
            Next::Summary,
        );
    }
    if !tr.capture.kernels_complete() {
        warn(
            TrustId::GraphReplaysWithoutKernels,
            Vec::new(),
            format!(
                "{} CUDA-graph replays (Σ {} µs) were recorded whole (graph trace mode {}): the kernels inside \
                 them are not in the trace, so per-kernel rules miss them",
                tr.capture.graph_replays,
                us(tr.capture.graph_replays_ns),
                tr.capture.graph_trace_mode.as_deref().unwrap_or("unknown")
            ),
            Next::Summary,
        );
    }
    if tr.warnings_total > 0 {
        let first = tr.warnings.first().map_or(String::new(), |w| {
            if tr.header.format.has_byte_offsets() {
                format!("; first at byte {}: {}", w.offset, w.message)
            } else {
                format!("; first: {}", w.message)
            }
        });
        warn(
            TrustId::ParseWarnings,
            Vec::new(),
            format!(
                "{} problems were worked around while reading{first}",
                tr.warnings_total
            ),
            Next::Summary,
        );
    }
    if steps.kernels_outside > 0 {
        warn(
            TrustId::KernelsOutsideSteps,
            Vec::new(),
            format!(
                "{} kernels (Σ {} µs) are in no step and in no step's numbers",
                steps.kernels_outside,
                us(steps.outside.sum_ns)
            ),
            Next::Steps,
        );
    }
    if steps.profile.is_none() && !steps.steps.is_empty() {
        warn(
            TrustId::NoStepMarkers,
            Vec::new(),
            "no step marker was found: the whole GPU window is one step, so between-step, straggler \
             and unsteady-step rules have nothing to compare"
                .to_string(),
            Next::Steps,
        );
    }
    out
}
