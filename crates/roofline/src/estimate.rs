//! ESTIMATED bytes and FLOPs of one step on one rank, from the model's weights table and the step's token
//! counts. `docs/formulas.md` §9 writes out each formula. A term whose count no source gives is `None`,
//! never a number: the weights read once per step are always known, the rest as far as the counts go.

use model_shapes::{
    Attention, Indexer, LayerKind, ModelShape, Reads, SPARSE_COMPRESS_RATIO,
    uniform_distinct_experts,
};
use serde::Serialize;

use crate::tokens::{Counts, PhaseTokens};

/// a·b + c, exact, rounded to f64 once: what `(a * b + c) as f64` gives whenever that does not wrap (token
/// counts come from a step's marker and may be anything).
fn exact(a: u64, b: u64, c: u64) -> f64 {
    (u128::from(a) * u128::from(b) + u128::from(c)) as f64
}

/// Bytes one rank reads or writes in a step, by what they are; `None`: the step's counts do not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Bytes {
    /// Weights read once per step: attention projections, dense MLPs, shared experts, routers, norms.
    /// Known whatever the tokens.
    pub weights: Option<f64>,
    /// Routed experts: [`Experts::uniform`] distinct experts per MoE layer, each read once (needs the
    /// query tokens).
    pub routed_experts: Option<f64>,
    /// KV cache read by attention: Σ keys per layer kind × KV bytes per token and layer (needs the KV
    /// tokens, and for windowed layers the requests and query tokens).
    pub kv_read: Option<f64>,
    /// KV cache written: Σ query tokens × KV bytes per token and layer × layers.
    pub kv_write: Option<f64>,
    /// The LM head, read once if any row makes logits (known once the step is known to have a
    /// request or a query token).
    pub lm_head: Option<f64>,
    /// Embedding rows gathered: query tokens × hidden × activation bytes.
    pub embedding: Option<f64>,
}

/// The terms of [`Bytes`], by name, in field order.
fn byte_terms(b: &Bytes) -> [(&'static str, Option<f64>); 6] {
    [
        ("weights", b.weights),
        ("routed_experts", b.routed_experts),
        ("kv_read", b.kv_read),
        ("kv_write", b.kv_write),
        ("lm_head", b.lm_head),
        ("embedding", b.embedding),
    ]
}

impl Bytes {
    /// The sum, when every term is known.
    pub fn total(&self) -> Option<f64> {
        byte_terms(self).iter().map(|t| t.1).sum()
    }

    /// The sum of the known terms (a lower bound of the total when some are unknown).
    pub fn known(&self) -> f64 {
        byte_terms(self).iter().filter_map(|t| t.1).sum()
    }

    /// The terms the step's counts do not give.
    pub fn unknown(&self) -> Vec<&'static str> {
        byte_terms(self)
            .iter()
            .filter(|t| t.1.is_none())
            .map(|t| t.0)
            .collect()
    }
}

/// FLOPs of one rank in a step; `None`: the step's counts do not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Flops {
    /// 2 · (active decoder-layer parameters) · query tokens, divided among ranks.
    pub linear: Option<f64>,
    /// 2 · LM-head parameters · logit rows, divided among ranks (needs the requests).
    pub lm_head: Option<f64>,
    /// Attention scores and values: per (query, key) pair and layer, divided among ranks (needs every
    /// per-phase count).
    pub attention: Option<f64>,
}

impl Flops {
    /// The sum, when every term is known.
    pub fn total(&self) -> Option<f64> {
        [self.linear, self.lm_head, self.attention]
            .into_iter()
            .sum()
    }

    /// The sum of the known terms (a lower bound of the total when some are unknown).
    pub fn known(&self) -> f64 {
        [self.linear, self.lm_head, self.attention]
            .into_iter()
            .flatten()
            .sum()
    }

    /// The terms the step's counts do not give.
    pub fn unknown(&self) -> Vec<&'static str> {
        [
            ("linear", self.linear),
            ("lm_head", self.lm_head),
            ("attention", self.attention),
        ]
        .iter()
        .filter(|t| t.1.is_none())
        .map(|t| t.0)
        .collect()
    }
}

/// Distinct routed experts per MoE layer on one rank, at three stated counts (no trace records which
/// experts a step's tokens picked).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Experts {
    /// Uniform routing: E·(1 − (1 − k/E)^T) for T query tokens, divided by ep. An upper bound (Jensen:
    /// uneven routing picks fewer); the bytes use it.
    pub uniform: Option<f64>,
    /// min(E, k · requests) / ep: each request's tokens pick the same k experts.
    pub top_k_per_request: Option<f64>,
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

/// Bytes and FLOPs of one step on one rank. `kv_bytes` is the KV cache's bytes per element. Each term
/// is computed from the counts it needs and is `None` when one of them is unknown; attention uses the
/// per-phase counts when known, and with only totals reads Σ keys of a phase made of every request
/// (for a windowed layer an upper bound of the per-phase sum; its FLOPs need the per-phase counts).
pub fn estimate(model: &ModelShape, tokens: &Counts, kv_bytes: u64) -> StepEstimate {
    let t = tokens.query_tokens;
    let requests = tokens.requests;

    // Weights.
    let weights = Some(model.rank_bytes_of(Reads::EveryStep));
    let head_bytes = model.rank_bytes_of(Reads::LogitRows);
    let lm_head = match (requests, t) {
        (Some(r), _) => Some(if r > 0 { head_bytes } else { 0.0 }),
        (None, Some(t)) if t > 0 => Some(head_bytes),
        (None, Some(_)) => Some(0.0),
        (None, None) => None,
    };
    let embedding = t.map(|t| exact(t, model.hidden * model.activation_bytes, 0));
    let (experts, expert_bytes_all_layers) = match model.moe {
        Some(m) => {
            let ep = model.ep as f64;
            // A valid model has 1 ≤ k ≤ E; the fallback is unreachable.
            let uniform = t.map(|t| {
                uniform_distinct_experts(m.experts, m.top_k, t).unwrap_or(m.experts as f64) / ep
            });
            let per_request =
                requests.map(|r| (m.experts.min(m.top_k.saturating_mul(r))) as f64 / ep);
            (
                Experts {
                    uniform,
                    top_k_per_request: per_request,
                    on_rank: model.rank_experts() as f64,
                },
                model.rank_expert_bytes() * m.moe_layers as f64,
            )
        }
        None => (
            Experts {
                uniform: Some(0.0),
                top_k_per_request: Some(0.0),
                on_rank: 0.0,
            },
            0.0,
        ),
    };
    let routed_experts = experts.uniform.map(|u| u * expert_bytes_all_layers);

    // KV cache and attention, layer by layer kind.
    let phases: Option<[(PhaseTokens, bool); 2]> =
        match (&tokens.phases, requests, t, tokens.kv_tokens) {
            (Some(p), ..) => Some([(p.prefill, false), (p.decode, true)]),
            (None, Some(requests), Some(query_tokens), Some(kv_tokens)) => Some([
                (
                    PhaseTokens {
                        requests,
                        query_tokens,
                        kv_tokens,
                        sq_sq: 0,
                        sq_sk: 0,
                    },
                    false,
                ),
                (PhaseTokens::default(), true),
            ]),
            _ => None,
        };
    let (kv_read, attention) = match phases {
        None => (None, None),
        Some(phases) => {
            let mut kv_read = 0.0;
            let mut attention = 0.0;
            for layer in &model.layers {
                for (phase, decode) in &phases {
                    let (read, flops) = layer_attention(model, layer, phase, *decode, kv_bytes);
                    kv_read += read;
                    attention += flops;
                }
            }
            (Some(kv_read), tokens.phases.is_some().then_some(attention))
        }
    };
    let kv_write = t.map(|t| {
        t as f64
            * model
                .layers
                .iter()
                .map(|l| layer_write(model, l, kv_bytes))
                .sum::<f64>()
    });

    // FLOPs: dense parts divide among tp ranks, routed experts among ep ranks (or tp without ep).
    let tp = model.tp as f64;
    let routed_params = model.params_of(Reads::RoutedExperts) as f64;
    let routed_active = match model.moe {
        Some(m) => routed_params * m.top_k as f64 / m.experts as f64,
        None => 0.0,
    };
    let dense_active = model.active_layer_params() - routed_active;
    let expert_ranks = if model.ep > 1 { model.ep as f64 } else { tp };
    let linear = t.map(|t| 2.0 * t as f64 * (dense_active / tp + routed_active / expert_ranks));
    let head = requests.map(|r| 2.0 * r as f64 * model.params_of(Reads::LogitRows) as f64 / tp);

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
            attention: attention.map(|a| a / tp),
        },
        experts,
        expert_bytes_all_layers,
    }
}
