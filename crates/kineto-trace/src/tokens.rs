//! Where a step's token counts come from, and the counts a trace records without a marker saying
//! them: the rows of the step's GEMMs when the profiler ran with `record_shapes`.
//!
//! In eager mode every linear layer of a step multiplies the step's tokens: the activation input of
//! `aten::mm`, `aten::addmm`, `aten::linear` … has the step's query tokens as rows
//! ([`crate::profiles::GEMM_OPS`]). The step's first GEMM is the first layer's projection; its rows are
//! the tokens. The LM head (rows = logit rows) and a multimodal encoder (rows = patches) have other
//! rows, so the count taken is the one most of the step's GEMMs share, and the source says whether
//! the first GEMM agrees. CUDA-graph replays record no ops: their size comes from the graph's capture
//! ([`crate::capture`]).

use crate::model::Trace;
use crate::step::{PhaseTokens, Step};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Where a step's token counts come from (the `tokens_from` the listings print).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TokenSource {
    /// The step marker's own counts, MEASURED by the server that wrote it.
    Marker {
        /// The profile whose marker it is (`tracelens`, `vllm`, `sglang`, …).
        profile: String,
    },
    /// The rows of the step's GEMMs (`record_shapes`), MEASURED.
    GemmRows {
        /// The op of the first GEMM with these rows (`aten::mm`, …).
        op: String,
        /// The rows: the step's query tokens.
        rows: u64,
        /// GEMMs of the step with these rows.
        agreeing: u64,
        /// GEMMs of the step with input dims.
        gemms: u64,
        /// Whether the step's first GEMM has these rows.
        first: bool,
    },
    /// The size the step's one CUDA/HIP-graph replay was captured at, MEASURED by the capture.
    GraphCapture {
        /// The capture's annotation (`capture_32_FULL`) or file.
        label: String,
        /// What the capture names: vLLM's captured tokens, SGLang's batch size.
        size: u64,
        /// GPU ops of the replay, which picked the capture.
        ops: u64,
    },
}

impl std::fmt::Display for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenSource::Marker { profile } => write!(f, "marker `{profile}`"),
            TokenSource::GemmRows {
                op,
                rows,
                agreeing,
                gemms,
                first: true,
            } => write!(
                f,
                "record_shapes: {rows} rows of the first GEMM `{op}` ({agreeing} of {gemms} GEMMs)"
            ),
            TokenSource::GemmRows {
                op,
                rows,
                agreeing,
                gemms,
                first: false,
            } => write!(
                f,
                "record_shapes: {rows} rows of {agreeing} of {gemms} GEMMs (`{op}`; the first GEMM's differ)"
            ),
            TokenSource::GraphCapture { label, size, ops } => {
                write!(f, "graph capture `{label}` (size {size}, {ops} ops)")
            }
        }
    }
}

/// The sources of a step, joined (`marker `trtllm` + record_shapes: …`); empty without any.
pub fn describe(sources: &[TokenSource]) -> String {
    sources
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Fills the query tokens of steps whose marker does not state them from their GEMMs' rows.
/// `gemms` are the GEMM ops with their rows ([`crate::Trace::gemm_ops`]), `op_step[i]` the step of
/// `gemms[i]` (its op's start in the step's CPU range). A step that replays a CUDA/HIP graph is left
/// alone: its layers ran inside the graph, and the GEMMs it records ran outside it — vLLM's LM head,
/// whose rows are the logit rows, not the tokens.
pub(crate) fn from_gemm_rows(
    trace: &Trace,
    links: &crate::correlate::Links,
    steps: &mut [Step],
    gemms: &[(crate::model::Span, u32)],
    op_step: &[Option<u32>],
) {
    // Per step: (start, rows, op name) of its GEMMs.
    let mut by_step: FxHashMap<u32, Vec<(i64, u32, crate::model::Sym)>> = FxHashMap::default();
    for ((op, rows), s) in gemms.iter().zip(op_step) {
        if let Some(s) = s {
            by_step
                .entry(*s)
                .or_default()
                .push((op.ts_ns, *rows, op.name));
        }
    }
    for (s, mut gemms) in by_step {
        let step = &mut steps[s as usize];
        if step.tokens.and_then(|t| t.query_tokens()).is_some() {
            continue;
        }
        let mut calls = trace.launches.reader();
        let replays_a_graph = step.kernels.iter().any(|&k| {
            links.kernel_launch[k as usize].is_some_and(|l| {
                crate::correlate::is_graph_launch(trace.name(calls.row(l as usize).name))
            })
        });
        if replays_a_graph {
            continue;
        }
        // Stable: ops starting together (`aten::linear` over its `aten::addmm`) keep file order.
        gemms.sort_by_key(|g| g.0);
        let mut counts: FxHashMap<u32, (u64, usize)> = FxHashMap::default();
        for (i, g) in gemms.iter().enumerate() {
            counts.entry(g.1).or_insert((0, i)).0 += 1;
        }
        let Some((&rows, &(agreeing, at))) = counts
            .iter()
            .max_by_key(|(_, (n, at))| (*n, std::cmp::Reverse(*at)))
        else {
            continue;
        };
        let mut t = step.tokens.unwrap_or_default();
        t.unphased = Some(PhaseTokens {
            query_tokens: Some(u64::from(rows)),
            ..t.unphased.unwrap_or_default()
        });
        step.tokens = Some(t);
        step.tokens_from.push(TokenSource::GemmRows {
            op: trace.name(gemms[at].2).to_string(),
            rows: u64::from(rows),
            agreeing,
            gemms: gemms.len() as u64,
            first: at == 0,
        });
    }
}
