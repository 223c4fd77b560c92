//! The KL1 spec as one instance of the general weights table ([`Spec::model_shape`]), and the table read
//! back per KL1 kernel ([`Spec::kl1_bytes`]).
//!
//! The table is the one source of the KL1 bytes: `kl1-bandwidth` reports what [`Spec::kl1_bytes`] reads from
//! it, so its numbers are the table's; and the spec can go wherever a [`ModelShape`] goes (the per-step engine
//! `roofline`, the tests), as any Hugging Face config's can. Which groups make up which kernel (the four dense
//! decode launches, the experts' gate|up and down) is kernel knowledge the table does not hold: it lives in
//! the reader, next to the writer, which share the group names as constants so neither can drift.

use crate::estimate::{DenseLaunch, ExpertBytes, Kl1Bytes};
use crate::exl3::{Bits, Shape};
use crate::spec::{ExpertSplit, Spec};
use model_shapes::{
    Attention, LayerKind, Layers, ModelShape, Moe, RankSplit, Reads, TensorGroup, WeightFormat,
};

const WQ_A: &str = "attn.wq_a";
const WKV: &str = "attn.wkv";
const WQ_B: &str = "attn.wq_b";
const WO_A: &str = "attn.wo_a";
const WO_B: &str = "attn.wo_b";
const EXPERT_GATE_UP: [&str; 2] = ["ffn.experts.w1 (gate)", "ffn.experts.w3 (up)"];
const EXPERT_DOWN: &str = "ffn.experts.w2 (down)";
const SHARED_GATE_UP: [&str; 2] = ["ffn.shared_experts.w1 (gate)", "ffn.shared_experts.w3 (up)"];
const SHARED_DOWN: &str = "ffn.shared_experts.w2 (down)";
const ROUTER: &str = "ffn.gate";
const MHC: &str = "hc_attn_fn + hc_ffn_fn";
const LM_HEAD: &str = "head";

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
        let r = p.ranks;
        let layers = m.moe_layers;
        let mut groups = self.attention_groups();
        groups.extend(self.expert_groups());
        groups.extend(self.router_mhc_and_head_groups());
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
            layers: Layers::repeat(
                LayerKind {
                    sliding_window: None,
                    compress_ratio: None,
                    moe: true,
                },
                layers,
            ),
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

    /// The attention's groups: `wq_a`, `wkv`, `wq_b`, the `wo_a` slices, `wo_b`.
    fn attention_groups(&self) -> Vec<TensorGroup> {
        let m = self.model();
        let q = self.quant();
        let s = self.rank_shapes();
        let group = moe_layer_group(m.moe_layers);
        let qd = m.heads * m.head_dim;
        vec![
            group(
                WQ_A,
                (m.hidden, m.q_lora_rank),
                kn(s.wq_a),
                1,
                1,
                exl3(q.wq_a.get()),
                Reads::EveryStep,
                RankSplit::Replicated,
            ),
            group(
                WKV,
                (m.hidden, m.head_dim),
                kn(s.wkv),
                1,
                1,
                exl3(q.wkv.get()),
                Reads::EveryStep,
                RankSplit::Replicated,
            ),
            group(
                WQ_B,
                (m.q_lora_rank, qd),
                kn(s.wq_b),
                1,
                1,
                exl3(q.wq_b.get()),
                Reads::EveryStep,
                RankSplit::Column,
            ),
            group(
                WO_A,
                (qd / m.o_groups, m.o_lora_rank),
                kn(s.wo_a),
                m.o_groups,
                s.wo_a_slices,
                exl3(q.wo_a.get()),
                Reads::EveryStep,
                RankSplit::Replicated,
            ),
            group(
                WO_B,
                (m.o_groups * m.o_lora_rank, m.hidden),
                kn(s.wo_b),
                1,
                1,
                exl3(q.wo_b.get()),
                Reads::EveryStep,
                RankSplit::Row,
            ),
        ]
    }

    /// The routed experts' gate, up and down (at the K mix's mean K, split as the spec says), then the
    /// shared expert's, when there is one.
    fn expert_groups(&self) -> Vec<TensorGroup> {
        let m = self.model();
        let p = self.parallelism();
        let q = self.quant();
        let s = self.rank_shapes();
        let group = moe_layer_group(m.moe_layers);
        let mut groups = Vec::new();
        let mean_k = WeightFormat::Exl3 {
            bits: q.routed_experts.mean_k(),
        };
        let experts_on_rank = match p.expert_split {
            ExpertSplit::Tensor => m.routed_experts,
            ExpertSplit::Whole => m.routed_experts / p.ranks,
        };
        let expert_split = |split| match p.expert_split {
            ExpertSplit::Tensor => split,
            ExpertSplit::Whole => RankSplit::Replicated,
        };
        for name in EXPERT_GATE_UP {
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
            EXPERT_DOWN,
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
            for name in SHARED_GATE_UP {
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
                SHARED_DOWN,
                (width, m.hidden),
                kn(dn),
                1,
                1,
                k,
                Reads::EveryStep,
                RankSplit::Row,
            ));
        }
        groups
    }

    /// The router (with its bias), the two mHC mixing weights, and the LM head (once, not per layer).
    fn router_mhc_and_head_groups(&self) -> Vec<TensorGroup> {
        let m = self.model();
        let q = self.quant();
        let d = self.dtypes();
        let s = self.rank_shapes();
        let group = moe_layer_group(m.moe_layers);
        let mut router = group(
            ROUTER,
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
        let h = m.mhc_expansion;
        let mhc = group(
            MHC,
            (h * m.hidden, (2 + h) * h),
            (h * m.hidden, (2 + h) * h),
            2,
            2,
            float(d.mhc.bytes()),
            Reads::EveryStep,
            RankSplit::Replicated,
        );
        let mut head = group(
            LM_HEAD,
            (m.hidden, m.vocab),
            kn(s.lm_head),
            1,
            1,
            exl3(q.lm_head.get()),
            Reads::LogitRows,
            RankSplit::Column,
        );
        head.layers = 1;
        vec![router, mhc, head]
    }
}

/// A group of the spec's table, in each of its `layers` MoE layers: (name, full (k, n), one rank's (k, n),
/// tensors per layer, on a rank per layer, format, reads, split).
#[allow(clippy::type_complexity)] // a group's fields, in the order `TensorGroup` names them
fn moe_layer_group(
    layers: u64,
) -> impl Fn(&str, (u64, u64), (u64, u64), u64, u64, WeightFormat, Reads, RankSplit) -> TensorGroup
{
    move |name, full, rank, per_layer, rank_per_layer, format, reads, split| TensorGroup {
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
    }
}

/// An EXL3 format at `bits` per weight.
fn exl3(bits: u8) -> WeightFormat {
    WeightFormat::Exl3 {
        bits: f64::from(bits),
    }
}

/// A float format of `bytes` per value (fp32, fp8, else bf16).
fn float(bytes: u64) -> WeightFormat {
    WeightFormat::Float {
        bytes,
        name: match bytes {
            4 => "fp32",
            1 => "fp8",
            _ => "bf16",
        },
    }
}

/// A shape as (k, n).
fn kn(s: Shape) -> (u64, u64) {
    (s.k(), s.n())
}

impl Spec {
    /// One rank's weight bytes per KL1 kernel, read from [`Spec::model_shape`]'s table (made once here):
    /// each byte count is a group's format over its `rank_in` × `rank_out`, times its `rank_per_layer`
    /// where a kernel reads a layer's worth, plus its bias.
    ///
    /// The routed experts are the exception that needs the spec too: the table holds them at the K mix's
    /// mean K, while the mean expert is taken over the mix, Σ_K n_K·bytes(K) / N, with each K on the
    /// table's shapes. Both are the same number (bytes are linear in K); the mix's sum is the one
    /// `kl1-bandwidth` has always reported, to the last bit.
    pub fn kl1_bytes(&self) -> Kl1Bytes {
        let table = self.model_shape();
        let t = &table;
        let q = self.quant();
        let launch = |name, bits, groups: &[&str]| DenseLaunch {
            name,
            bits,
            groups: groups.iter().map(|g| group(t, g).clone()).collect(),
        };
        let expert_by_k = Bits::ALL.map(|k| ExpertBytes {
            gate_up: EXPERT_GATE_UP
                .iter()
                .map(|g| tensor_bytes_at(group(t, g), k))
                .sum(),
            down: tensor_bytes_at(group(t, EXPERT_DOWN), k),
        });
        let mix = q.routed_experts.entries();
        let experts = q.routed_experts.experts() as f64;
        let mean = |part: fn(&ExpertBytes) -> f64| {
            mix.iter()
                .map(|&(k, n)| n as f64 * part(&expert_by_k[usize::from(k.get()) - 1]))
                .sum::<f64>()
                / experts
        };
        Kl1Bytes {
            dense: [
                launch("wq_a+wkv", q.wq_a, &[WQ_A, WKV]),
                launch("wq_b", q.wq_b, &[WQ_B]),
                launch("wo_a", q.wo_a, &[WO_A]),
                launch("wo_b", q.wo_b, &[WO_B]),
            ],
            expert: ExpertBytes {
                gate_up: mean(|e| e.gate_up),
                down: mean(|e| e.down),
            },
            // A spec without a shared expert has none of its groups. Folded from +0.0: an empty f64 sum is
            // −0.0, which the report would print as such.
            shared_expert: SHARED_GATE_UP
                .iter()
                .chain([&SHARED_DOWN])
                .filter_map(|g| find(t, g))
                .fold(0.0, |sum, g| sum + layer_bytes(g)),
            lm_head: layer_bytes(group(t, LM_HEAD)),
            lm_head_bits: q.lm_head,
            router: layer_bytes(group(t, ROUTER)),
            // One launch per site: one of the layer's two mixing weights.
            mhc_prenorm: group(t, MHC).rank_tensor_bytes(),
            expert_by_k,
        }
    }
}

/// The group `name` of a table [`Spec::model_shape`] made. Only [`Spec::kl1_bytes`] calls it, on the table
/// it has just made, with names that table has for every valid spec (the shared expert, which a spec may
/// lack, is looked up with [`find`]).
#[allow(clippy::expect_used)] // model_shape writes these groups for every valid spec (tested for each built-in)
fn group<'t>(table: &'t ModelShape, name: &str) -> &'t TensorGroup {
    find(table, name).expect("Spec::model_shape writes every group Spec::kl1_bytes reads")
}

/// The group `name`, if the table has it.
fn find<'t>(table: &'t ModelShape, name: &str) -> Option<&'t TensorGroup> {
    table.groups.iter().find(|g| g.name == name)
}

/// Bytes one rank reads of `g` in one layer: its `rank_per_layer` tensors.
fn layer_bytes(g: &TensorGroup) -> f64 {
    g.rank_per_layer as f64 * g.rank_tensor_bytes()
}

/// One tensor of `g` on one rank stored in EXL3 at `bits` rather than the table's format: one K of the
/// routed experts' mix, which the table holds at its mean K.
fn tensor_bytes_at(g: &TensorGroup, bits: Bits) -> f64 {
    TensorGroup {
        format: WeightFormat::Exl3 {
            bits: f64::from(bits.get()),
        },
        ..g.clone()
    }
    .rank_tensor_bytes()
}
