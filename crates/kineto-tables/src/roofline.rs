//! `roofline` (one row per step and rank: ESTIMATED bytes and FLOPs, MEASURED time, the rates against the
//! GPU's CLAIMED peaks; `kineto roofline`) and `weights` (the model's weights table, one row per tensor
//! group; `kineto roofline --weights`).

use crate::{Col, col};
use model_shapes::{RankSplit, TensorGroup};
use roofline::StepRoofline;

/// A step's roofline with the columns that name its trace.
pub struct RooflineRow<'a> {
    /// The trace file as given.
    pub file: &'a str,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The GPU's name in the GPU table.
    pub gpu: &'a str,
    /// The step.
    pub step: &'a StepRoofline,
}

/// Bucket `i`'s time ([`roofline::BUCKET_BYTES`] order), ns.
fn bucket_ns(r: &RooflineRow<'_>, i: usize) -> Option<i64> {
    r.step.buckets.get(i).map(|b| b.time_ns)
}

/// Bucket `i`'s bytes over its time, GB/s (null when the mapping does not hold).
fn bucket_gbps(r: &RooflineRow<'_>, i: usize) -> Option<f64> {
    r.step.buckets.get(i).and_then(|b| b.gbps)
}

/// The columns of `roofline`. Dotted names nest in JSON (`bytes.weights` → `"bytes": {"weights": …}`).
#[rustfmt::skip]
pub fn roofline_columns<'a>() -> &'a [Col<RooflineRow<'a>>] {
    &[
        col!("rank", U64?, None, "`distributedInfo.rank` (null: the trace has none)", |r| r.rank),
        col!("step", U32, None, "the step's index in the trace", |r| r.step.index as u32),
        col!("name", Str, None, "the step marker's name", |r| r.step.name.as_str()),
        col!("phase", Str?, None, "`prefill`, `decode`, `mixed` or `idle`, from the step's requests (MEASURED; null: no source says)", |r| r.step.tokens.phase),
        col!("requests", U64?, None, "requests in the step (MEASURED: `tokens_from` names the source; null: none says)", |r| r.step.tokens.requests),
        col!("query_tokens", U64?, None, "Σ query tokens: the rows every linear multiplies (MEASURED: `tokens_from`; null: none says)", |r| r.step.tokens.query_tokens),
        col!("context_tokens", U64?, None, "Σ KV tokens attention reads (MEASURED: `tokens_from`; null: none says)", |r| r.step.tokens.kv_tokens),
        col!("tokens_from", Str, None, "where the counts come from: the marker, the step's GEMM rows, a graph capture, `given` (the caller's options)", |r| r.step.tokens.from.as_str()),
        col!("bytes_total", F64?, Bytes, "bytes one rank moves in the step (ESTIMATED): the sum of `bytes.*` (null: a term is unknown)", |r| r.step.estimate.bytes.total()),
        col!("bytes_known", F64, Bytes, "the sum of the byte terms that are known (ESTIMATED; a lower bound of bytes_total when some are unknown)", |r| r.step.bytes_known),
        col!("unknown", Str?, None, "the terms no count gives, space-separated (null: none)", |r| (!r.step.unknown.is_empty()).then(|| r.step.unknown.join(" "))),
        col!("bytes.weights", F64?, Bytes, "weights every step reads (ESTIMATED)", |r| r.step.estimate.bytes.weights),
        col!("bytes.routed_experts", F64?, Bytes, "routed experts read, at experts.uniform per MoE layer (ESTIMATED)", |r| r.step.estimate.bytes.routed_experts),
        col!("bytes.kv_read", F64?, Bytes, "KV cache read by attention (ESTIMATED)", |r| r.step.estimate.bytes.kv_read),
        col!("bytes.kv_write", F64?, Bytes, "KV cache written for the step's tokens (ESTIMATED)", |r| r.step.estimate.bytes.kv_write),
        col!("bytes.lm_head", F64?, Bytes, "the LM head, read when a row makes logits (ESTIMATED)", |r| r.step.estimate.bytes.lm_head),
        col!("bytes.embedding", F64?, Bytes, "embedding rows gathered (ESTIMATED)", |r| r.step.estimate.bytes.embedding),
        col!("experts.uniform", F64?, None, "distinct routed experts per MoE layer and rank under uniform routing, the bound the bytes use (ESTIMATED)", |r| r.step.estimate.experts.uniform),
        col!("experts.top_k_per_request", F64?, None, "top-k experts per request (ESTIMATED)", |r| r.step.estimate.experts.top_k_per_request),
        col!("experts.peak_allows", F64?, None, "distinct experts the GPU's peak bandwidth would allow in the span (ESTIMATED)", |r| r.step.experts_peak_allows),
        col!("experts.on_rank", F64, None, "routed experts per MoE layer held by one rank", |r| r.step.estimate.experts.on_rank),
        col!("flops_total", F64?, Flop, "FLOPs one rank computes in the step (ESTIMATED): the sum of `flops.*` (null: a term is unknown)", |r| r.step.estimate.flops.total()),
        col!("flops.linear", F64?, Flop, "of the linear layers (ESTIMATED)", |r| r.step.estimate.flops.linear),
        col!("flops.lm_head", F64?, Flop, "of the LM head (ESTIMATED)", |r| r.step.estimate.flops.lm_head),
        col!("flops.attention", F64?, Flop, "of attention (ESTIMATED)", |r| r.step.estimate.flops.attention),
        col!("span_ns", I64, Ns, "first kernel start → last kernel end of the step (MEASURED)", |r| r.step.span_ns),
        col!("busy_ns", I64, Ns, "union of the step's kernels (MEASURED)", |r| r.step.busy_ns),
        col!("gbps", F64?, GBps, "bytes_total / span (ESTIMATED over MEASURED; null: a term is unknown)", |r| r.step.rates.as_ref().map(|x| x.gbps)),
        col!("pct_of_peak_gbps", F64?, Pct, "gbps as a share of peak_gbps", |r| r.step.rates.as_ref().map(|x| x.pct_of_peak_gbps)),
        col!("gbps_busy", F64?, GBps, "bytes_total / busy", |r| r.step.rates.as_ref().map(|x| x.gbps_busy)),
        col!("pct_of_peak_gbps_busy", F64?, Pct, "gbps_busy as a share of peak_gbps", |r| r.step.rates.as_ref().map(|x| x.pct_of_peak_gbps_busy)),
        col!("tflops", F64?, TFlops, "flops_total / span (ESTIMATED over MEASURED)", |r| r.step.rates.as_ref().map(|x| x.tflops)),
        col!("tflops_busy", F64?, TFlops, "flops_total / busy", |r| r.step.rates.as_ref().map(|x| x.tflops_busy)),
        col!("pct_of_peak_tflops", F64?, Pct, "tflops as a share of peak_tflops (null: no peak for the dtype)", |r| r.step.rates.as_ref().and_then(|x| x.pct_of_peak_tflops)),
        col!("peak_gbps", F64?, GBps, "the GPU's peak bandwidth (CLAIM)", |r| r.step.rates.as_ref().map(|x| x.peak_gbps)),
        col!("peak_tflops", F64?, TFlops, "the GPU's dense peak for the compute dtype (CLAIM; null: none in the GPU table)", |r| r.step.rates.as_ref().and_then(|x| x.peak_tflops)),
        col!("intensity", F64?, FlopPerByte, "flops_total / bytes_total", |r| r.step.rates.as_ref().map(|x| x.intensity)),
        col!("ridge", F64?, FlopPerByte, "the GPU's ridge point, peak_tflops / peak_gbps", |r| r.step.rates.as_ref().and_then(|x| x.ridge)),
        col!("bound", Str?, None, "`memory` or `compute`: the side of the ridge the step lies on", |r| r.step.rates.as_ref().map(|x| x.bound.as_str())),
        col!("buckets.weights_ns", I64?, Ns, "exclusive time of the GEMM and MoE kernels (MEASURED)", |r| bucket_ns(r, 0)),
        col!("buckets.weights_gbps", F64?, GBps, "weight + routed expert + LM head bytes over that time (null where the mapping does not hold; a note says why)", |r| bucket_gbps(r, 0)),
        col!("buckets.kv_ns", I64?, Ns, "exclusive time of the attention kernels (MEASURED)", |r| bucket_ns(r, 1)),
        col!("buckets.kv_gbps", F64?, GBps, "KV bytes read over that time (null where the mapping does not hold)", |r| bucket_gbps(r, 1)),
        col!("dtype", Str, None, "the compute dtype the peak FLOP/s are for", |r| r.step.dtype),
        col!("gpu", Str, None, "the GPU's name in the GPU table", |r| r.gpu),
        col!("file", Str, None, "the trace file as given", |r| r.file),
    ]
}

fn split_name(s: RankSplit) -> &'static str {
    match s {
        RankSplit::Column => "column",
        RankSplit::Row => "row",
        RankSplit::Replicated => "replicated",
    }
}

/// The columns of `weights`: one row per tensor group, per rank for tp/ep (ESTIMATED from the config).
#[rustfmt::skip]
pub fn weight_columns<'a>() -> &'a [Col<TensorGroup>] {
    &[
        col!("group", Str, None, "the group's name, after the Hugging Face module (`self_attn.q_proj`)", |g| g.name.as_str()),
        col!("in_features", U64, None, "input features of one tensor", |g| g.in_features),
        col!("out_features", U64, None, "output features of one tensor", |g| g.out_features),
        col!("bias", Bool, None, "whether each tensor has a bias", |g| g.bias),
        col!("per_layer", U64, None, "tensors per layer (routed experts: the number of experts)", |g| g.per_layer),
        col!("layers", U64, None, "layers holding the group", |g| g.layers),
        col!("format", Str, None, "storage format (`bf16`, `fp8`, `mxfp4`, …)", |g| g.format.to_string()),
        col!("reads", Str, None, "which tokens read it: `step`, `routed`, `logits` or `tokens`", |g| g.reads.as_str()),
        col!("split", Str, None, "how tensor-parallel ranks divide it: `column`, `row` or `replicated`", |g| split_name(g.split)),
        col!("rank_in", U64, None, "input features of one tensor on one rank", |g| g.rank_in),
        col!("rank_out", U64, None, "output features of one tensor on one rank", |g| g.rank_out),
        col!("rank_per_layer", U64, None, "tensors per layer on one rank", |g| g.rank_per_layer),
        col!("params", U64, None, "parameters of the whole group on all ranks", |g| g.params()),
        col!("rank_bytes", F64, Bytes, "bytes one rank holds of the group (ESTIMATED)", |g| g.rank_bytes()),
    ]
}
