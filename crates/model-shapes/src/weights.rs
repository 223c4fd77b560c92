//! A general weights table: every tensor group of a transformer, with its shape, how many there are per
//! layer and in how many layers, its storage format, how it is divided among ranks, and which tokens of
//! a step read it.
//!
//! The table is built from a Hugging Face `config.json` by [`crate::hf`]; this module only describes it
//! and counts. A tensor's storage is a [`WeightFormat`] (`format.rs`), the layers' kinds are [`Layers`]
//! (`layers.rs`). Byte formulas per format are in `docs/formulas.md` §16.

pub use crate::format::WeightFormat;
use crate::format::exact;
pub use crate::layers::Layers;

/// Which tokens of a step read a tensor group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reads {
    /// Read once per step whatever the number of tokens (attention projections, dense MLPs, shared
    /// experts, norms, routers).
    EveryStep,
    /// Routed experts: a step reads the distinct experts its tokens pick.
    RoutedExperts,
    /// The LM head: read once per step if any row makes logits.
    LogitRows,
    /// The token embedding: a gather of one row per token.
    TokenRows,
}

impl Reads {
    /// A short name: `step`, `routed`, `logits`, `tokens`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reads::EveryStep => "step",
            Reads::RoutedExperts => "routed",
            Reads::LogitRows => "logits",
            Reads::TokenRows => "tokens",
        }
    }
}

/// How a tensor group is divided among ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RankSplit {
    /// Output features divided among the tensor-parallel ranks.
    Column,
    /// Input features divided among the tensor-parallel ranks.
    Row,
    /// Every rank holds all of it.
    Replicated,
}

/// One group of identical tensors: e.g. `mlp.experts.gate_up_proj` of 24 layers × 32 experts.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorGroup {
    /// The group's name, after the Hugging Face module (`self_attn.q_proj`, `mlp.experts.down_proj`).
    pub name: String,
    /// Input features of one tensor (a vector such as a norm has 1).
    pub in_features: u64,
    /// Output features of one tensor.
    pub out_features: u64,
    /// Whether each tensor has a bias of `out_features` (stored in the activation dtype).
    pub bias: bool,
    /// Tensors per layer (routed experts: the number of experts).
    pub per_layer: u64,
    /// Layers holding the group (1 for the embedding, LM head and final norm).
    pub layers: u64,
    /// Storage format.
    pub format: WeightFormat,
    /// Bytes per bias element.
    pub bias_bytes: u64,
    /// Which tokens read it.
    pub reads: Reads,
    /// How it is divided among tensor-parallel ranks.
    pub split: RankSplit,
    /// Input features of one tensor on one rank.
    pub rank_in: u64,
    /// Output features of one tensor on one rank.
    pub rank_out: u64,
    /// Tensors per layer on one rank (routed experts under expert parallelism: experts / ep).
    pub rank_per_layer: u64,
}

impl TensorGroup {
    /// Parameters of the whole group on all ranks: per_layer · layers · (in·out + out if bias).
    ///
    /// Taken with checked arithmetic; `None` past u64. A table from [`crate::model_from_config`] or
    /// `kl1-shapes`' spec never is (they refuse a model past 2^53 parameters): [`Self::params`] is this,
    /// for them.
    pub fn checked_params(&self) -> Option<u64> {
        let bias = if self.bias { self.out_features } else { 0 };
        let tensors = self.per_layer.checked_mul(self.layers)?;
        self.in_features
            .checked_mul(self.out_features)?
            .checked_add(bias)?
            .checked_mul(tensors)
    }

    /// [`Self::checked_params`], saturating at u64::MAX (only a hand-built table past 2^64 gets there).
    pub fn params(&self) -> u64 {
        self.checked_params().unwrap_or(u64::MAX)
    }

    /// Parameters of the group's matrices alone (no biases): per_layer · layers · in·out, saturating at
    /// u64::MAX as [`Self::params`].
    pub fn matrix_params(&self) -> u64 {
        self.per_layer
            .checked_mul(self.layers)
            .and_then(|t| t.checked_mul(self.in_features))
            .and_then(|t| t.checked_mul(self.out_features))
            .unwrap_or(u64::MAX)
    }

    /// Bytes of one tensor as one rank holds it: format bytes of rank_in × rank_out, plus the bias.
    pub fn rank_tensor_bytes(&self) -> f64 {
        let bias = if self.bias {
            exact(self.rank_out, self.bias_bytes)
        } else {
            0.0
        };
        self.format.bytes(self.rank_in, self.rank_out) + bias
    }

    /// Bytes one rank holds of the group: rank_per_layer · layers · [`Self::rank_tensor_bytes`].
    pub fn rank_bytes(&self) -> f64 {
        exact(self.rank_per_layer, self.layers) * self.rank_tensor_bytes()
    }
}

/// Attention as the KV cache and the attention FLOPs see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Attention {
    /// Multi-head, grouped-query or multi-query attention.
    Gqa {
        /// Query heads.
        heads: u64,
        /// Key/value heads (= heads: MHA; 1: MQA).
        kv_heads: u64,
        /// Width of one query/key head.
        head_dim: u64,
        /// Width of one value head.
        v_head_dim: u64,
    },
    /// DeepSeek multi-head latent attention: the cache holds one compressed latent of `kv_lora_rank` plus
    /// the shared rotary key of `qk_rope_head_dim` per token and layer.
    Mla {
        /// Query heads.
        heads: u64,
        /// Latent width of the KV compression.
        kv_lora_rank: u64,
        /// Non-rotary part of a query/key head.
        qk_nope_head_dim: u64,
        /// Rotary part of a query/key head.
        qk_rope_head_dim: u64,
        /// Width of one value head.
        v_head_dim: u64,
        /// DeepSeek-V3.2's lightning indexer, when each query attends only to the keys it picks.
        indexer: Option<Indexer>,
    },
    /// DeepSeek-V4 hybrid attention: one key/value head of `head_dim` shared by keys and values (the cache
    /// holds one vector per token), attended over a sliding window in every layer; a layer with a
    /// compression ratio r ([`LayerKind::compress_ratio`]) also keeps one compressed entry per r tokens:
    /// r = 4 (compressed sparse attention) picks `indexer.topk` entries per query with the lightning indexer
    /// (one index key per 4 tokens); any other r (heavily compressed) reads all.
    Hybrid {
        /// Query heads.
        heads: u64,
        /// Width of the shared key/value vector.
        head_dim: u64,
        /// The lightning indexer of the sparse layers.
        indexer: Indexer,
    },
}

/// DeepSeek's lightning indexer (V3.2 over MLA's keys, V4 over the compressed entries): it keeps one key of
/// `dim` per entry, scores every (query, entry) pair with `heads` heads, and each query attends to the
/// `topk` entries it scores highest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexer {
    /// Indexer query heads.
    pub heads: u64,
    /// Width of one indexer key.
    pub dim: u64,
    /// Entries a query attends to at most.
    pub topk: u64,
}

impl Attention {
    /// Query heads.
    pub fn heads(&self) -> u64 {
        match *self {
            Attention::Gqa { heads, .. }
            | Attention::Mla { heads, .. }
            | Attention::Hybrid { heads, .. } => heads,
        }
    }
}

/// The compression ratio of DeepSeek-V4's compressed sparse attention: its layers select entries with the
/// indexer; layers with other ratios read every compressed entry.
pub const SPARSE_COMPRESS_RATIO: u64 = 4;

/// The routed-expert part of a mixture-of-experts model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moe {
    /// Routed experts per MoE layer.
    pub experts: u64,
    /// Experts each token picks.
    pub top_k: u64,
    /// Shared experts (always read), each `shared_intermediate` wide in total.
    pub shared_experts: u64,
    /// One routed expert's intermediate width.
    pub expert_intermediate: u64,
    /// MoE layers.
    pub moe_layers: u64,
}

/// One decoder layer's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LayerKind {
    /// The sliding window (keys a query attends to at most), if the layer uses one.
    pub sliding_window: Option<u64>,
    /// DeepSeek-V4: the layer also keeps one compressed KV entry per this many tokens (with
    /// [`Attention::Hybrid`] only).
    pub compress_ratio: Option<u64>,
    /// Whether the layer's MLP is a mixture of experts.
    pub moe: bool,
}

/// A model as the estimates need it: dimensions, attention, experts, layer kinds, and the weights table,
/// per rank for the given tensor- and expert-parallel sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelShape {
    /// `model_type` from the config.
    pub model_type: String,
    /// Hidden width.
    pub hidden: u64,
    /// Vocabulary.
    pub vocab: u64,
    /// Attention.
    pub attention: Attention,
    /// Each decoder layer's kind, in order (stored as repeated blocks: see [`Layers`]).
    pub layers: Layers,
    /// Routed experts, if any.
    pub moe: Option<Moe>,
    /// Bytes per activation element (`torch_dtype`).
    pub activation_bytes: u64,
    /// The activation dtype's name (`bf16`, `fp16`, `fp32`): the dtype of the compute.
    pub activation_dtype: &'static str,
    /// Whether the quantised weights are multiplied in fp8 (fp8 formats) rather than the activation dtype.
    pub fp8_compute: bool,
    /// Whether the LM head is the embedding (`tie_word_embeddings`): its parameters are counted once.
    pub tied_embeddings: bool,
    /// Tensor-parallel ranks.
    pub tp: u64,
    /// Expert-parallel ranks (1: experts are divided like dense MLPs among the tensor-parallel ranks).
    pub ep: u64,
    /// The weights table.
    pub groups: Vec<TensorGroup>,
    /// Fields understood but deliberately left out of the estimate, with the reason (one line each).
    pub notes: Vec<String>,
}

impl ModelShape {
    /// Total parameters (all ranks); a tied LM head's matrix is counted once, as the embedding (a bias of
    /// its own, Phi-3's `lm_head_bias`, is not tied and counted). Sums saturate at u64::MAX, which only a
    /// hand-built table reaches: [`crate::model_from_config`] refuses a model past 2^53 parameters.
    pub fn total_params(&self) -> u64 {
        let sum = |it: &mut dyn Iterator<Item = u64>| it.fold(0u64, u64::saturating_add);
        let all = sum(&mut self.groups.iter().map(TensorGroup::params));
        if self.tied_embeddings {
            let head = sum(&mut self
                .groups
                .iter()
                .filter(|g| g.reads == Reads::LogitRows)
                .map(TensorGroup::matrix_params));
            all.saturating_sub(head)
        } else {
            all
        }
    }

    /// Parameters one token multiplies with: every group read every step, the LM head, and top_k / experts
    /// of the routed experts. The embedding (a gather) is not counted, as model cards count "active".
    pub fn active_params(&self) -> f64 {
        let mut total = 0.0;
        for g in &self.groups {
            match g.reads {
                Reads::EveryStep | Reads::LogitRows => total += g.params() as f64,
                Reads::RoutedExperts => {
                    if let Some(m) = self.moe {
                        total += g.params() as f64 * m.top_k as f64 / m.experts as f64;
                    }
                }
                Reads::TokenRows => {}
            }
        }
        total
    }

    /// Parameters one token multiplies with in the decoder layers (active minus the LM head): the part of
    /// the FLOPs that scales with every token, while the LM head's scales with the rows that make logits.
    pub fn active_layer_params(&self) -> f64 {
        self.active_params() - self.params_of(Reads::LogitRows) as f64
    }

    /// Parameters of the groups read as `reads` (saturating as [`Self::total_params`]).
    pub fn params_of(&self, reads: Reads) -> u64 {
        self.groups
            .iter()
            .filter(|g| g.reads == reads)
            .map(TensorGroup::params)
            .fold(0, u64::saturating_add)
    }

    /// Bytes one rank holds of the groups read as `reads`.
    pub fn rank_bytes_of(&self, reads: Reads) -> f64 {
        self.groups
            .iter()
            .filter(|g| g.reads == reads)
            .map(TensorGroup::rank_bytes)
            .sum()
    }

    /// Bytes one rank holds of one routed expert in one layer (all its tensors), 0 without experts.
    pub fn rank_expert_bytes(&self) -> f64 {
        self.groups
            .iter()
            .filter(|g| g.reads == Reads::RoutedExperts)
            .map(|g| g.rank_tensor_bytes() * g.layers as f64)
            .sum::<f64>()
            / self.moe.map_or(1, |m| m.moe_layers.max(1)) as f64
    }

    /// Routed experts one rank holds per MoE layer: experts / ep.
    pub fn rank_experts(&self) -> u64 {
        self.moe.map_or(0, |m| m.experts / self.ep)
    }

    /// KV-cache bytes one token adds in one layer on one rank, at `kv_bytes` per element:
    /// GQA 2·max(1, kv_heads/tp)·head_dim (keys and values, v_head_dim for values); MLA
    /// (kv_lora_rank + qk_rope_head_dim), held whole on every rank (DeepSeek-V3.2's indexer key, `dim` more,
    /// is counted by the caller); DeepSeek-V4 head_dim (the window's entry; its compressed entries are per
    /// r tokens, counted by the caller per layer kind). Saturates at u64::MAX, which no table from a
    /// config reaches (its widths are bounded).
    pub fn kv_bytes_per_token_layer(&self, kv_bytes: u64) -> u64 {
        match self.attention {
            Attention::Gqa {
                kv_heads,
                head_dim,
                v_head_dim,
                ..
            } => {
                let rank_heads = (kv_heads / self.tp.max(1)).max(1);
                rank_heads
                    .saturating_mul(head_dim.saturating_add(v_head_dim))
                    .saturating_mul(kv_bytes)
            }
            Attention::Mla {
                kv_lora_rank,
                qk_rope_head_dim,
                ..
            } => kv_lora_rank
                .saturating_add(qk_rope_head_dim)
                .saturating_mul(kv_bytes),
            Attention::Hybrid { head_dim, .. } => head_dim.saturating_mul(kv_bytes),
        }
    }
}
