//! One decoder layer's tensors: its attention (GQA, MLA or DeepSeek-V4's hybrid), norms, mHC, and its MLP —
//! dense, or routed experts with their router (and DeepSeek-V4's router bias or token table) and shared
//! experts, each family's modules named as its checkpoint names them.

use super::attention::{gqa_tensors, mla_tensors};
use super::deepseek_v4::{INT64, V4Dims, hybrid_tensors, mhc_tensors};
use super::experts::Experts;
use super::family::Family;
use super::minimax::MiniMax;
use super::tensor::{Tensor, lin};
use crate::Error;
use crate::weights::{Attention, LayerKind, RankSplit, Reads, WeightFormat};

/// What every layer of a model shares.
pub(super) struct Decoder<'a> {
    pub(super) family: Family,
    pub(super) model_type: &'a str,
    pub(super) hidden: u64,
    pub(super) vocab: u64,
    pub(super) attention: Attention,
    pub(super) attention_bias: bool,
    pub(super) mlp_bias: bool,
    pub(super) qk_norm: bool,
    pub(super) minimax: MiniMax,
    pub(super) q_lora: Option<u64>,
    pub(super) v4: Option<V4Dims>,
    /// The norms' stored format when not the activation dtype's (DeepSeek-V3.2: fp32).
    pub(super) norm_fixed: Option<WeightFormat>,
    pub(super) norms_per_layer: u64,
    /// `intermediate_size`: the dense MLP's width.
    pub(super) intermediate: Option<u64>,
    pub(super) experts: &'a Experts,
    pub(super) origin: &'a str,
}

impl Decoder<'_> {
    /// The tensors of a layer of `kind`; `hash_routed`: DeepSeek-V4 looks its experts up by token.
    pub(super) fn tensors(&self, kind: LayerKind, hash_routed: bool) -> Result<Vec<Tensor>, Error> {
        let (family, hidden) = (self.family, self.hidden);
        let mut t = match self.attention {
            Attention::Gqa { .. } => gqa_tensors(
                hidden,
                self.attention,
                family,
                self.attention_bias,
                self.minimax,
                self.qk_norm,
            ),
            Attention::Mla { .. } => {
                mla_tensors(hidden, self.attention, self.q_lora, self.norm_fixed)
            }
            // A validated DeepSeek-V4 config has its dimensions in `v4`.
            Attention::Hybrid { .. } => hybrid_tensors(
                hidden,
                self.attention,
                self.v4.unwrap_or_default(),
                kind.compress_ratio,
            ),
        };
        let mut norms = lin(
            "layer norms",
            "input_layernorm",
            1,
            hidden,
            false,
            RankSplit::Replicated,
        );
        norms.per_layer = self.norms_per_layer;
        norms.quantizable = false;
        norms.fixed = self.norm_fixed;
        t.push(norms);
        if let Some(d) = self.v4 {
            t.extend(mhc_tensors(hidden, d));
        }
        if kind.moe {
            self.experts_of(&mut t, hash_routed);
        } else {
            let inter = self.intermediate.ok_or_else(|| Error::Invalid {
                origin: self.origin.to_string(),
                field: "intermediate_size".to_string(),
                reason: "missing: needed for the dense MLP".to_string(),
            })?;
            // Phi-3's checkpoint fuses gate and up into one `mlp.gate_up_proj`.
            let gate_module = if family == Family::Phi3 {
                "mlp.gate_up_proj"
            } else {
                "mlp.gate_proj"
            };
            t.push(lin(
                "mlp.gate_up_proj",
                gate_module,
                hidden,
                2 * inter,
                self.mlp_bias,
                RankSplit::Column,
            ));
            t.push(lin(
                "mlp.down_proj",
                "mlp.down_proj",
                inter,
                hidden,
                self.mlp_bias,
                RankSplit::Row,
            ));
        }
        Ok(t)
    }

    /// A MoE layer's routed experts, router and shared experts.
    fn experts_of(&self, t: &mut Vec<Tensor>, hash_routed: bool) {
        let (family, hidden, x) = (self.family, self.hidden, self.experts);
        let (experts_module, router_module) = match family {
            Family::Mixtral | Family::MiniMaxM2 => {
                ("block_sparse_moe.experts", "block_sparse_moe.gate")
            }
            Family::GptOss => ("mlp.experts", "mlp.router"),
            Family::DeepSeekV4 => ("ffn.experts", "ffn.gate"),
            _ => ("mlp.experts", "mlp.gate"),
        };
        let expert_bias = family == Family::GptOss;
        let mut gu = lin(
            "mlp.experts.gate_up_proj",
            experts_module,
            hidden,
            2 * x.expert_inter,
            expert_bias,
            RankSplit::Column,
        );
        gu.per_layer = x.experts;
        gu.reads = Reads::RoutedExperts;
        let mut dn = lin(
            "mlp.experts.down_proj",
            experts_module,
            x.expert_inter,
            hidden,
            expert_bias,
            RankSplit::Row,
        );
        dn.per_layer = x.experts;
        dn.reads = Reads::RoutedExperts;
        t.push(gu);
        t.push(dn);
        // DeepSeek-V3's and GLM-4.5's routers add an fp32 `e_score_correction_bias` to their scores;
        // DeepSeek-V2's router has no bias.
        let correction = family == Family::Glm4Moe
            || (family == Family::DeepSeek && self.model_type != "deepseek_v2");
        // MiniMax-M2 adds its `e_score_correction_bias` when `use_routing_bias`; its checkpoints store
        // the router's weight and bias in fp32 (their shard headers, as a public loader records them).
        let minimax_bias = family == Family::MiniMaxM2 && self.minimax.routing_bias;
        let mut r = lin(
            "mlp.router",
            router_module,
            hidden,
            x.experts,
            family == Family::GptOss || correction || minimax_bias,
            RankSplit::Replicated,
        );
        r.quantizable = false;
        if correction || minimax_bias {
            r.bias_bytes = Some(4);
        }
        if family == Family::MiniMaxM2 {
            r.fixed = Some(WeightFormat::FP32);
        }
        t.push(r);
        if family == Family::DeepSeekV4 {
            // Scored layers add an fp32 bias to the router's scores; hash-routed layers look each
            // token's experts up in an int64 table of vocab × top_k instead.
            let mut extra = if hash_routed {
                let mut table = lin(
                    "mlp.router.tid2eid",
                    "ffn.gate.tid2eid",
                    x.top_k,
                    self.vocab,
                    false,
                    RankSplit::Replicated,
                );
                table.reads = Reads::TokenRows;
                table.fixed = Some(INT64);
                table
            } else {
                let mut bias = lin(
                    "mlp.router.bias",
                    "ffn.gate.bias",
                    1,
                    x.experts,
                    false,
                    RankSplit::Replicated,
                );
                bias.fixed = Some(WeightFormat::FP32);
                bias
            };
            extra.quantizable = false;
            t.push(extra);
        }
        if x.shared_inter > 0 {
            let module = if family == Family::Qwen2Moe {
                "mlp.shared_expert"
            } else if family == Family::DeepSeekV4 {
                "ffn.shared_experts"
            } else {
                "mlp.shared_experts"
            };
            t.push(lin(
                "mlp.shared_experts.gate_up_proj",
                module,
                hidden,
                2 * x.shared_inter,
                false,
                RankSplit::Column,
            ));
            t.push(lin(
                "mlp.shared_experts.down_proj",
                module,
                x.shared_inter,
                hidden,
                false,
                RankSplit::Row,
            ));
            if family == Family::Qwen2Moe {
                t.push(
                    lin(
                        "mlp.shared_expert_gate",
                        "mlp.shared_expert_gate",
                        hidden,
                        1,
                        false,
                        RankSplit::Replicated,
                    )
                    .kept(),
                );
            }
        }
    }
}
