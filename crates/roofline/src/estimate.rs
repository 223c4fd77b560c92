//! ESTIMATED bytes and FLOPs of one step on one rank, from the model's weights table and the step's token
//! counts. `docs/formulas.md` §9 writes out each formula.

use model_shapes::{
    Attention, Indexer, LayerKind, ModelShape, Reads, SPARSE_COMPRESS_RATIO,
    uniform_distinct_experts,
};
use serde::Serialize;

use crate::tokens::{PhaseTokens, StepTokens};

/// a·b + c, exact, rounded to f64 once: what `(a * b + c) as f64` gives whenever that does not wrap (token
/// counts come from a step's marker and may be anything).
fn exact(a: u64, b: u64, c: u64) -> f64 {
    (u128::from(a) * u128::from(b) + u128::from(c)) as f64
}

/// Bytes one rank reads or writes in a step, by what they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Bytes {
    /// Weights read once per step: attention projections, dense MLPs, shared experts, routers, norms.
    pub weights: f64,
    /// Routed experts: [`Experts::uniform`] distinct experts per MoE layer, each read once.
    pub routed_experts: f64,
    /// KV cache read by attention: Σ keys per layer kind × KV bytes per token and layer.
    pub kv_read: f64,
    /// KV cache written: Σ query tokens × KV bytes per token and layer × layers.
    pub kv_write: f64,
    /// The LM head, read once if any row makes logits.
    pub lm_head: f64,
    /// Embedding rows gathered: query tokens × hidden × activation bytes.
    pub embedding: f64,
}

impl Bytes {
    /// The sum.
    pub fn total(&self) -> f64 {
        self.weights
            + self.routed_experts
            + self.kv_read
            + self.kv_write
            + self.lm_head
            + self.embedding
    }
}

/// FLOPs of one rank in a step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Flops {
    /// 2 · (active decoder-layer parameters) · query tokens, divided among ranks.
    pub linear: f64,
    /// 2 · LM-head parameters · logit rows, divided among ranks.
    pub lm_head: f64,
    /// Attention scores and values: per (query, key) pair and layer, divided among ranks.
    pub attention: f64,
}

impl Flops {
    /// The sum.
    pub fn total(&self) -> f64 {
        self.linear + self.lm_head + self.attention
    }
}

/// Distinct routed experts per MoE layer on one rank, at three stated counts (no trace records which
/// experts a step's tokens picked).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Experts {
    /// Uniform routing: E·(1 − (1 − k/E)^T) for T query tokens, divided by ep. An upper bound (Jensen:
    /// uneven routing picks fewer); the bytes use it.
    pub uniform: f64,
    /// min(E, k · requests) / ep: each request's tokens pick the same k experts.
    pub top_k_per_request: f64,
    /// Experts per rank and MoE layer.
    pub on_rank: f64,
}

/// The estimate of one step on one rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepEstimate {
    /// Bytes by kind.
    pub bytes: Bytes,
    /// FLOPs by kind.
    pub flops: Flops,
    /// The distinct-expert counts (all zero for a dense model).
    pub experts: Experts,
    /// Bytes of one routed expert in all MoE layers on one rank: what one more distinct expert per layer
    /// costs.
    pub expert_bytes_all_layers: f64,
}

/// Keys attention reads per layer kind: a full layer reads Σ sk; a layer with a window W reads, per request,
/// the keys some query of it sees, min(sk, sq + W − 1), so at most min(Σ sk, Σ sq + R·(W − 1)) (decode:
/// min(Σ sk, R·W); exact when every request has at least sq + W − 1 keys).
fn keys_read(p: &PhaseTokens, window: Option<u64>) -> f64 {
    match window {
        None => p.kv_tokens as f64,
        Some(w) => (p.kv_tokens as f64).min(exact(p.requests, w.saturating_sub(1), p.query_tokens)),
    }
}

/// Causal (query, key) pairs per layer kind: full Σ sq·sk − (Σ sq² − Σ sq)/2; with a window W at most
/// min(that, Σ sq · W).
fn pairs(p: &PhaseTokens, window: Option<u64>) -> f64 {
    let full = p.causal_pairs();
    match window {
        None => full,
        Some(w) => full.min(exact(p.query_tokens, w, 0)),
    }
}

/// FLOPs per (query, key) pair in one layer, all heads: GQA 2·H·d (scores) + 2·H·d_v (values). MLA at
/// decode runs absorbed, over the latent: 2·H·(c + r) + 2·H·c; at prefill over the heads' own keys and
/// values: 2·H·(d_nope + r) + 2·H·d_v.
fn flops_per_pair(a: &Attention, decode: bool) -> f64 {
    let f = match *a {
        Attention::Gqa {
            heads,
            head_dim,
            v_head_dim,
            ..
        } => 2 * heads * head_dim + 2 * heads * v_head_dim,
        Attention::Mla {
            heads,
            kv_lora_rank,
            qk_nope_head_dim,
            qk_rope_head_dim,
            v_head_dim,
            ..
        } => {
            if decode {
                2 * heads * (kv_lora_rank + qk_rope_head_dim) + 2 * heads * kv_lora_rank
            } else {
                2 * heads * (qk_nope_head_dim + qk_rope_head_dim) + 2 * heads * v_head_dim
            }
        }
        // One vector serves as key and value: scores and values both over head_dim.
        Attention::Hybrid {
            heads, head_dim, ..
        } => 4 * heads * head_dim,
    };
    f as f64
}

/// What a phase's queries attend to when DeepSeek's lightning indexer picks at most `topk` of `keys` entries
/// per query (`pairs` causal pairs among them), the indexer itself reading every entry's index key and
/// scoring every pair over its heads: (entries attended, pairs attended, index-key bytes read, indexer
/// FLOPs).
fn indexed(
    ix: &Indexer,
    keys: f64,
    pairs: f64,
    p: &PhaseTokens,
    kv_bytes: u64,
) -> (f64, f64, f64, f64) {
    let picked = exact(p.query_tokens, ix.topk, 0);
    (
        keys.min(picked),
        pairs.min(picked),
        keys * (ix.dim * kv_bytes) as f64,
        pairs * (2 * ix.heads * ix.dim) as f64,
    )
}

/// One layer's attention in one phase: (KV bytes read, FLOPs). GQA and MLA read the keys of their window (or
/// all) and compute every causal pair; DeepSeek-V3.2's indexer narrows MLA to the picked keys. DeepSeek-V4
/// reads its window's entries, and a layer of ratio r also Σ sk / r compressed entries (an upper bound: each
/// request has ⌊sk / r⌋) over the causal pairs / r: all of them at a heavily compressed ratio, the indexer's
/// pick at the sparse ratio.
fn layer_attention(
    model: &ModelShape,
    layer: &LayerKind,
    p: &PhaseTokens,
    decode: bool,
    kv_bytes: u64,
) -> (f64, f64) {
    let a = &model.attention;
    let entry = model.kv_bytes_per_token_layer(kv_bytes) as f64;
    let f_pair = flops_per_pair(a, decode);
    let keys = keys_read(p, layer.sliding_window);
    let all_pairs = pairs(p, layer.sliding_window);
    match *a {
        Attention::Mla {
            indexer: Some(ix), ..
        } => {
            let (k, q, index_read, index_flops) = indexed(&ix, keys, all_pairs, p, kv_bytes);
            (k * entry + index_read, q * f_pair + index_flops)
        }
        Attention::Hybrid { indexer: ix, .. } => {
            let mut read = keys * entry;
            let mut flops = all_pairs * f_pair;
            if let Some(r) = layer.compress_ratio {
                let entries = p.kv_tokens as f64 / r as f64;
                let compressed_pairs = p.causal_pairs() / r as f64;
                if r == SPARSE_COMPRESS_RATIO {
                    let (k, q, index_read, index_flops) =
                        indexed(&ix, entries, compressed_pairs, p, kv_bytes);
                    read += k * entry + index_read;
                    flops += q * f_pair + index_flops;
                } else {
                    read += entries * entry;
                    flops += compressed_pairs * f_pair;
                }
            }
            (read, flops)
        }
        Attention::Gqa { .. } | Attention::Mla { indexer: None, .. } => {
            (keys * entry, all_pairs * f_pair)
        }
    }
}

/// KV bytes one new token writes in one layer: its cache entry, and DeepSeek's indexer key (V3.2: every
/// layer; V4: a quarter key on sparse layers); on DeepSeek-V4's compressed layers also 1/r of an entry.
fn layer_write(model: &ModelShape, layer: &LayerKind, kv_bytes: u64) -> f64 {
    let entry = model.kv_bytes_per_token_layer(kv_bytes) as f64;
    match model.attention {
        Attention::Mla {
            indexer: Some(ix), ..
        } => entry + (ix.dim * kv_bytes) as f64,
        Attention::Hybrid { indexer: ix, .. } => {
            let mut w = entry;
            if let Some(r) = layer.compress_ratio {
                w += entry / r as f64;
                if r == SPARSE_COMPRESS_RATIO {
                    w += (ix.dim * kv_bytes) as f64 / r as f64;
                }
            }
            w
        }
        Attention::Gqa { .. } | Attention::Mla { indexer: None, .. } => entry,
    }
}

/// Bytes and FLOPs of one step on one rank. `kv_bytes` is the KV cache's bytes per element.
pub fn estimate(model: &ModelShape, tokens: &StepTokens, kv_bytes: u64) -> StepEstimate {
    let t = tokens.query_tokens();
    let requests = tokens.requests();

    // Weights.
    let weights = model.rank_bytes_of(Reads::EveryStep);
    let lm_head = if requests > 0 {
        model.rank_bytes_of(Reads::LogitRows)
    } else {
        0.0
    };
    let embedding = exact(t, model.hidden * model.activation_bytes, 0);
    let (experts, expert_bytes_all_layers) = match model.moe {
        Some(m) => {
            let ep = model.ep as f64;
            // A valid model has 1 ≤ k ≤ E; the fallback is unreachable.
            let uniform =
                uniform_distinct_experts(m.experts, m.top_k, t).unwrap_or(m.experts as f64) / ep;
            let per_request = (m.experts.min(m.top_k.saturating_mul(requests))) as f64 / ep;
            (
                Experts {
                    uniform,
                    top_k_per_request: per_request,
                    on_rank: model.rank_experts() as f64,
                },
                model.rank_expert_bytes() * m.moe_layers as f64,
            )
        }
        None => (Experts::default(), 0.0),
    };
    let routed_experts = experts.uniform * expert_bytes_all_layers;

    // KV cache and attention, layer by layer kind.
    let mut kv_read = 0.0;
    let mut attention = 0.0;
    for layer in &model.layers {
        for (phase, decode) in [(&tokens.prefill, false), (&tokens.decode, true)] {
            let (read, flops) = layer_attention(model, layer, phase, decode, kv_bytes);
            kv_read += read;
            attention += flops;
        }
    }
    let kv_write = t as f64
        * model
            .layers
            .iter()
            .map(|l| layer_write(model, l, kv_bytes))
            .sum::<f64>();

    // FLOPs: dense parts divide among tp ranks, routed experts among ep ranks (or tp without ep).
    let tp = model.tp as f64;
    let routed_params = model.params_of(Reads::RoutedExperts) as f64;
    let routed_active = match model.moe {
        Some(m) => routed_params * m.top_k as f64 / m.experts as f64,
        None => 0.0,
    };
    let dense_active = model.active_layer_params() - routed_active;
    let expert_ranks = if model.ep > 1 { model.ep as f64 } else { tp };
    let linear = 2.0 * t as f64 * (dense_active / tp + routed_active / expert_ranks);
    let head = 2.0 * requests as f64 * model.params_of(Reads::LogitRows) as f64 / tp;

    StepEstimate {
        bytes: Bytes {
            weights,
            routed_experts,
            kv_read,
            kv_write,
            lm_head,
            embedding,
        },
        flops: Flops {
            linear,
            lm_head: head,
            attention: attention / tp,
        },
        experts,
        expert_bytes_all_layers,
    }
}
