//! The KL1 spec as one instance of the general weights table: [`Spec::model_shape`].
//!
//! `kl1-bandwidth` keeps using the kernel-level functions of [`crate::estimate`] (its output does not
//! change); this view lets the per-step engine (`roofline`) and the tests see the same model through the
//! same table as any Hugging Face config, and checks that both give the same per-rank bytes.

use crate::exl3::Shape;
use crate::spec::{ExpertSplit, Spec};
use crate::weights::{
    Attention, LayerKind, ModelShape, Moe, RankSplit, Reads, TensorGroup, WeightFormat,
};

impl Spec {
    /// The spec's model as a [`ModelShape`] for its ranks: per MoE layer `wq_a`, `wkv` (replicated),
    /// `wq_b` (columns), the `o_groups` `wo_a` slices (whole slices per rank), `wo_b` (rows), routed
    /// experts' gate, up and down (EXL3 at the K mix's mean K: bytes are linear in K, so the mean expert's
    /// bytes are exact), the shared expert, router (+ bias) and the two mHC mixing weights; then the LM head.
    /// Attention is the single shared KV head of `head_dim` (MQA); the sliding window and the compressed
    /// KV of DeepSeek-V4's layers are not modelled (ESTIMATE low for KV at long context). Norms and the
    /// embedding are not in the spec and not counted.
    pub fn model_shape(&self) -> ModelShape {
        let m = self.model();
        let p = self.parallelism();
        let q = self.quant();
        let d = self.dtypes();
        let s = self.rank_shapes();
        let r = p.ranks;
        let layers = m.moe_layers;
        let exl3 = |bits: u8| WeightFormat::Exl3 {
            bits: f64::from(bits),
        };
        let group = |name: &str,
                     full: (u64, u64),
                     rank: (u64, u64),
                     per_layer: u64,
                     rank_per_layer: u64,
                     format: WeightFormat,
                     reads: Reads,
                     split: RankSplit| TensorGroup {
            name: name.to_string(),
            in_features: full.0,
            out_features: full.1,
            bias: false,
            per_layer,
            layers,
            format,
            bias_bytes: 2,
            reads,
            split,
            rank_in: rank.0,
            rank_out: rank.1,
            rank_per_layer,
        };
        let qd = m.heads * m.head_dim;
        let mut groups = vec![
            group(
                "attn.wq_a",
                (m.hidden, m.q_lora_rank),
                kn(s.wq_a),
                1,
                1,
                exl3(q.wq_a.get()),
                Reads::EveryStep,
                RankSplit::Replicated,
            ),
            group(
                "attn.wkv",
                (m.hidden, m.head_dim),
                kn(s.wkv),
                1,
                1,
                exl3(q.wkv.get()),
                Reads::EveryStep,
                RankSplit::Replicated,
            ),
            group(
                "attn.wq_b",
                (m.q_lora_rank, qd),
                kn(s.wq_b),
                1,
                1,
                exl3(q.wq_b.get()),
                Reads::EveryStep,
                RankSplit::Column,
            ),
            group(
                "attn.wo_a",
                (qd / m.o_groups, m.o_lora_rank),
                kn(s.wo_a),
                m.o_groups,
                s.wo_a_slices,
                exl3(q.wo_a.get()),
                Reads::EveryStep,
                RankSplit::Replicated,
            ),
            group(
                "attn.wo_b",
                (m.o_groups * m.o_lora_rank, m.hidden),
                kn(s.wo_b),
                1,
                1,
                exl3(q.wo_b.get()),
                Reads::EveryStep,
                RankSplit::Row,
            ),
        ];
        let mean_k = WeightFormat::Exl3 {
            bits: q.routed_experts.mean_k(),
        };
        let experts_on_rank = match p.expert_split {
            ExpertSplit::Tensor => m.routed_experts,
            ExpertSplit::Whole => m.routed_experts / r,
        };
        let expert_split = |split| match p.expert_split {
            ExpertSplit::Tensor => split,
            ExpertSplit::Whole => RankSplit::Replicated,
        };
        for name in ["ffn.experts.w1 (gate)", "ffn.experts.w3 (up)"] {
            groups.push(group(
                name,
                (m.hidden, m.expert_intermediate),
                kn(s.expert_gate_up),
                m.routed_experts,
                experts_on_rank,
                mean_k,
                Reads::RoutedExperts,
                expert_split(RankSplit::Column),
            ));
        }
        groups.push(group(
            "ffn.experts.w2 (down)",
            (m.expert_intermediate, m.hidden),
            kn(s.expert_down),
            m.routed_experts,
            experts_on_rank,
            mean_k,
            Reads::RoutedExperts,
            expert_split(RankSplit::Row),
        ));
        if let (Some(gu), Some(dn)) = (s.shared_gate_up, s.shared_down) {
            let width = m.shared_experts * m.expert_intermediate;
            let k = exl3(q.shared_expert.get());
            for name in ["ffn.shared_experts.w1 (gate)", "ffn.shared_experts.w3 (up)"] {
                groups.push(group(
                    name,
                    (m.hidden, width),
                    kn(gu),
                    1,
                    1,
                    k,
                    Reads::EveryStep,
                    RankSplit::Column,
                ));
            }
            groups.push(group(
                "ffn.shared_experts.w2 (down)",
                (width, m.hidden),
                kn(dn),
                1,
                1,
                k,
                Reads::EveryStep,
                RankSplit::Row,
            ));
        }
        let float = |bytes: u64| WeightFormat::Float {
            bytes,
            name: match bytes {
                4 => "fp32",
                1 => "fp8",
                _ => "bf16",
            },
        };
        let mut router = group(
            "ffn.gate",
            (m.hidden, m.routed_experts),
            (m.hidden, m.routed_experts),
            1,
            1,
            float(d.router.bytes()),
            Reads::EveryStep,
            RankSplit::Replicated,
        );
        router.bias = true;
        router.bias_bytes = d.router_bias.bytes();
        groups.push(router);
        let h = m.mhc_expansion;
        groups.push(group(
            "hc_attn_fn + hc_ffn_fn",
            (h * m.hidden, (2 + h) * h),
            (h * m.hidden, (2 + h) * h),
            2,
            2,
            float(d.mhc.bytes()),
            Reads::EveryStep,
            RankSplit::Replicated,
        ));
        let mut head = group(
            "head",
            (m.hidden, m.vocab),
            kn(s.lm_head),
            1,
            1,
            exl3(q.lm_head.get()),
            Reads::LogitRows,
            RankSplit::Column,
        );
        head.layers = 1;
        groups.push(head);
        ModelShape {
            model_type: format!("kl1 spec {}", self.name()),
            hidden: m.hidden,
            vocab: m.vocab,
            attention: Attention::Gqa {
                heads: m.heads,
                kv_heads: 1,
                head_dim: m.head_dim,
                v_head_dim: m.head_dim,
            },
            layers: vec![
                LayerKind {
                    sliding_window: None,
                    compress_ratio: None,
                    moe: true,
                };
                layers as usize
            ],
            moe: Some(Moe {
                experts: m.routed_experts,
                top_k: m.top_k,
                shared_experts: m.shared_experts,
                expert_intermediate: m.expert_intermediate,
                moe_layers: layers,
            }),
            activation_bytes: 2,
            activation_dtype: "bf16",
            fp8_compute: false,
            tied_embeddings: false,
            tp: r,
            ep: match p.expert_split {
                ExpertSplit::Tensor => 1,
                ExpertSplit::Whole => r,
            },
            groups,
            notes: vec![
                "DeepSeek-V4's sliding window, compressed KV, indexer and compressor weights are not in the KL1 spec".to_string(),
            ],
        }
    }
}

/// A shape as (k, n).
fn kn(s: Shape) -> (u64, u64) {
    (s.k(), s.n())
}
