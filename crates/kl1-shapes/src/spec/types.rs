//! What a validated spec says: dimensions, parallelism, bit widths, dtypes and the per-rank shapes.

use serde::Deserialize;

use crate::exl3::{Bits, Shape};

/// How routed experts are divided among ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpertSplit {
    /// Each expert's intermediate dimension is divided in 128-channel units (exllamav3 `-tp_moe_ts`): every
    /// rank holds a slice of every expert (gate/up by columns, down by rows).
    Tensor,
    /// Whole experts are divided: each rank holds `routed_experts / ranks` complete experts.
    Whole,
}

/// Storage type of an unquantised tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    /// 4 bytes.
    Fp32,
    /// 2 bytes.
    Fp16,
    /// 2 bytes.
    Bf16,
    /// 1 byte.
    Fp8,
}

impl Dtype {
    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            Dtype::Fp32 => 4,
            Dtype::Fp16 | Dtype::Bf16 => 2,
            Dtype::Fp8 => 1,
        }
    }
}

/// Model dimensions (checkpoint config names in parentheses).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Model {
    /// Residual width (`hidden_size`).
    pub hidden: u64,
    /// Layers with a routed-expert MoE (`num_hidden_layers` less dense layers).
    pub moe_layers: u64,
    /// Routed experts per layer (`n_routed_experts`).
    pub routed_experts: u64,
    /// Routed experts each row picks (`num_experts_per_tok`).
    pub top_k: u64,
    /// One expert's intermediate width (`moe_intermediate_size`).
    pub expert_intermediate: u64,
    /// Shared experts per layer (`n_shared_experts`); the shared MLP is `expert_intermediate ×` this wide.
    pub shared_experts: u64,
    /// Query low-rank width (`q_lora_rank`).
    pub q_lora_rank: u64,
    /// Attention heads (`num_attention_heads`).
    pub heads: u64,
    /// Width of one head, also of the single shared KV head (`head_dim`).
    pub head_dim: u64,
    /// Output projection groups (`o_groups`).
    pub o_groups: u64,
    /// Output low-rank width per group (`o_lora_rank`).
    pub o_lora_rank: u64,
    /// Vocabulary (`vocab_size`).
    pub vocab: u64,
    /// mHC residual streams (`hc_mult`).
    pub mhc_expansion: u64,
}

/// How the model is divided among GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Parallelism {
    /// Tensor-parallel ranks, one GPU each.
    pub ranks: u64,
    /// How routed experts are divided.
    pub expert_split: ExpertSplit,
}

/// Routed experts' bit widths: how many experts are stored at each K.
///
/// Every expert's gate, up and down share one K. Entries are in ascending K, each K once, and the counts add
/// up to the model's routed experts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KMix {
    pub(super) entries: Vec<(Bits, u64)>,
}

impl KMix {
    /// (K, experts at that K), ascending K.
    pub fn entries(&self) -> &[(Bits, u64)] {
        &self.entries
    }

    /// Experts counted: equals the model's routed experts.
    pub fn experts(&self) -> u64 {
        self.entries.iter().map(|&(_, n)| n).sum()
    }

    /// Mean K over experts: Σ n_K·K / Σ n_K.
    pub fn mean_k(&self) -> f64 {
        let weighted: u64 = self
            .entries
            .iter()
            .map(|&(k, n)| u64::from(k.get()) * n)
            .sum();
        weighted as f64 / self.experts() as f64
    }
}

/// Bit widths of the EXL3 tensors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quant {
    /// `attn.wq_a`. Equal to `wkv`: the two share one launch, and one launch has one K.
    pub wq_a: Bits,
    /// `attn.wkv`.
    pub wkv: Bits,
    /// `attn.wq_b`.
    pub wq_b: Bits,
    /// `attn.wo_a` (every group slice).
    pub wo_a: Bits,
    /// `attn.wo_b`.
    pub wo_b: Bits,
    /// The LM head (`head`).
    pub lm_head: Bits,
    /// The shared expert's gate, up and down.
    pub shared_expert: Bits,
    /// The routed experts.
    pub routed_experts: KMix,
}

/// Storage types of the unquantised tensors estimates count.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Dtypes {
    /// Router weight (`ffn.gate`, experts × hidden).
    pub router: Dtype,
    /// Router score-correction bias (`ffn.gate.bias`, one per expert).
    pub router_bias: Dtype,
    /// mHC mixing weights (`hc_attn_fn`, `hc_ffn_fn`).
    pub mhc: Dtype,
}

/// The shape of each EXL3 linear as one rank holds it, derived from the model and parallelism.
///
/// Attention follows exllamav3 `modules/dsv4.py:686-693` (only q_b, wo_a and wo_b are divided, by output
/// group); experts and the shared expert follow `block_sparse_mlp.py:1574-1586` and `mlp.py:775-803`; the LM
/// head is divided by vocabulary columns (docs/exl3-and-deepseek-v4.md §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RankShapes {
    /// `wq_a`: hidden × q_lora_rank, replicated.
    pub wq_a: Shape,
    /// `wkv`: hidden × head_dim, replicated.
    pub wkv: Shape,
    /// `wq_b`: q_lora_rank × (heads/ranks)·head_dim, column split.
    pub wq_b: Shape,
    /// One `wo_a` group slice: (heads·head_dim/o_groups) × o_lora_rank; a rank holds whole slices.
    pub wo_a: Shape,
    /// `wo_a` slices on one rank: o_groups / ranks.
    pub wo_a_slices: u64,
    /// `wo_b`: (o_groups/ranks)·o_lora_rank × hidden, row split.
    pub wo_b: Shape,
    /// A routed expert's gate (and, identically, up) projection.
    pub expert_gate_up: Shape,
    /// A routed expert's down projection.
    pub expert_down: Shape,
    /// The shared expert's gate (and up) projection; `None` without a shared expert.
    pub shared_gate_up: Option<Shape>,
    /// The shared expert's down projection.
    pub shared_down: Option<Shape>,
    /// The LM head: hidden × vocab/ranks, column split.
    pub lm_head: Shape,
}
