//! Attention: its keys for every family ([`read_attention`]), and one decoder layer's attention tensors for
//! the two kinds most families share: grouped-query attention (with each family's biases, q/k norms and
//! sinks) and DeepSeek's multi-head latent attention (with DeepSeek-V3.2's lightning indexer). DeepSeek-V4's
//! hybrid attention is in `deepseek_v4.rs`.

use super::deepseek_v4::{V4Dims, read_v4_attention};
use super::family::Family;
use super::fields::Fields;
use super::minimax::MiniMax;
use super::tensor::{Tensor, lin};
use crate::Error;
use crate::weights::{Attention, Indexer, RankSplit, WeightFormat};

/// A family's attention as its keys give it.
pub(super) struct AttentionKeys {
    pub(super) attention: Attention,
    /// The query low rank (MLA with one, DeepSeek-V4).
    pub(super) q_lora: Option<u64>,
    /// DeepSeek-V4's widths beyond the attention.
    pub(super) v4: Option<V4Dims>,
    /// DeepSeek-V3.2's lightning indexer.
    pub(super) indexer: Option<Indexer>,
}

/// The attention keys: DeepSeek-V4's hybrid attention, DeepSeek's MLA (V3.2 with its indexer), or GQA
/// (`head_dim`, else hidden / heads).
pub(super) fn read_attention(
    f: &mut Fields<'_>,
    family: Family,
    model_type: &str,
    (hidden, heads, kv_heads): (u64, u64, u64),
    tp: u64,
) -> Result<AttentionKeys, Error> {
    if family == Family::DeepSeekV4 {
        let (attention, dims) = read_v4_attention(f, heads, kv_heads, tp)?;
        return Ok(AttentionKeys {
            attention,
            q_lora: Some(dims.q_lora),
            v4: Some(dims),
            indexer: None,
        });
    }
    if family == Family::DeepSeek {
        let q_lora = f.positive_opt("q_lora_rank")?;
        let mut indexer = None;
        if model_type == "deepseek_v32" {
            let ix = read_indexer(f)?;
            if q_lora.is_none() {
                return Err(f.invalid(
                    "q_lora_rank",
                    "missing: DeepSeek-V3.2's indexer takes its queries from the query low rank",
                ));
            }
            indexer = Some(ix);
        }
        let kv_lora_rank = f.positive("kv_lora_rank")?;
        let qk_nope_head_dim = f.positive("qk_nope_head_dim")?;
        let qk_rope_head_dim = f.positive("qk_rope_head_dim")?;
        let v_head_dim = f.positive("v_head_dim")?;
        // MLA's num_key_value_heads equals the heads and sets no shape, nor does head_dim.
        let _ = f.positive_opt("head_dim")?;
        return Ok(AttentionKeys {
            attention: Attention::Mla {
                heads,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
                indexer,
            },
            q_lora,
            v4: None,
            indexer,
        });
    }
    let head_dim = match f.positive_opt("head_dim")? {
        Some(d) => d,
        None => {
            if hidden % heads != 0 {
                return Err(f.invalid(
                    "head_dim",
                    "missing, and hidden_size is not a multiple of the heads",
                ));
            }
            hidden / heads
        }
    };
    Ok(AttentionKeys {
        attention: Attention::Gqa {
            heads,
            kv_heads,
            head_dim,
            v_head_dim: head_dim,
        },
        q_lora: None,
        v4: None,
        indexer: None,
    })
}

/// q, k, v and o, and what the family adds to them. Empty for another kind of attention.
pub(super) fn gqa_tensors(
    hidden: u64,
    attention: Attention,
    family: Family,
    attention_bias: bool,
    minimax: MiniMax,
    qk_norm: bool,
) -> Vec<Tensor> {
    let Attention::Gqa {
        heads,
        kv_heads,
        head_dim,
        ..
    } = attention
    else {
        return Vec::new();
    };
    let mut t = Vec::new();
    let qkv_bias = attention_bias || family == Family::Qwen2 || family == Family::Qwen2Moe;
    // Phi-3 fuses q, k and v into one `qkv_proj` of (heads + 2·kv_heads)·d outputs: listed as its three
    // parts (the same parameters), so that a rank holds whole heads of each as vLLM splits it.
    let module = |m: &str| {
        if family == Family::Phi3 {
            "self_attn.qkv_proj".to_string()
        } else {
            m.to_string()
        }
    };
    t.push(lin(
        "self_attn.q_proj",
        module("self_attn.q_proj"),
        hidden,
        heads * head_dim,
        qkv_bias,
        RankSplit::Column,
    ));
    t.push(lin(
        "self_attn.k_proj",
        module("self_attn.k_proj"),
        hidden,
        kv_heads * head_dim,
        qkv_bias,
        RankSplit::Column,
    ));
    t.push(lin(
        "self_attn.v_proj",
        module("self_attn.v_proj"),
        hidden,
        kv_heads * head_dim,
        qkv_bias,
        RankSplit::Column,
    ));
    // GLM-4.5's attention_bias is on q, k and v only.
    t.push(lin(
        "self_attn.o_proj",
        "self_attn.o_proj",
        heads * head_dim,
        hidden,
        attention_bias && family != Family::Glm4Moe,
        RankSplit::Row,
    ));
    if minimax.qk_norm {
        // MiniMax-M2's per-layer q/k norms span every head: heads·d and kv_heads·d wide.
        for (name, width) in [
            ("self_attn.q_norm", heads * head_dim),
            ("self_attn.k_norm", kv_heads * head_dim),
        ] {
            t.push(lin(name, name, 1, width, false, RankSplit::Replicated).kept());
        }
    }
    if qk_norm {
        t.push(
            lin(
                "self_attn.q_norm+k_norm",
                "self_attn.q_norm",
                1,
                head_dim,
                false,
                RankSplit::Replicated,
            )
            .times(2)
            .kept(),
        );
    }
    if family == Family::GptOss {
        t.push(
            lin(
                "self_attn.sinks",
                "self_attn.sinks",
                1,
                heads,
                false,
                RankSplit::Column,
            )
            .kept(),
        );
    }
    t
}

/// The query projection (through the low rank `q_lora` when given), the key/value latent and its
/// up-projection, o, and DeepSeek-V3.2's indexer; `norm_fixed` is the norms' stored format when not the
/// activation dtype's. Empty for another kind of attention.
pub(super) fn mla_tensors(
    hidden: u64,
    attention: Attention,
    q_lora: Option<u64>,
    norm_fixed: Option<WeightFormat>,
) -> Vec<Tensor> {
    let Attention::Mla {
        heads,
        kv_lora_rank,
        qk_nope_head_dim,
        qk_rope_head_dim,
        v_head_dim,
        indexer,
    } = attention
    else {
        return Vec::new();
    };
    let mut t = Vec::new();
    let q_head = qk_nope_head_dim + qk_rope_head_dim;
    match q_lora {
        Some(r) => {
            t.push(lin(
                "self_attn.q_a_proj",
                "self_attn.q_a_proj",
                hidden,
                r,
                false,
                RankSplit::Replicated,
            ));
            let mut n = lin(
                "self_attn.q_a_layernorm",
                "self_attn.q_a_layernorm",
                1,
                r,
                false,
                RankSplit::Replicated,
            );
            n.quantizable = false;
            n.fixed = norm_fixed;
            t.push(n);
            t.push(lin(
                "self_attn.q_b_proj",
                "self_attn.q_b_proj",
                r,
                heads * q_head,
                false,
                RankSplit::Column,
            ));
        }
        None => t.push(lin(
            "self_attn.q_proj",
            "self_attn.q_proj",
            hidden,
            heads * q_head,
            false,
            RankSplit::Column,
        )),
    }
    t.push(lin(
        "self_attn.kv_a_proj_with_mqa",
        "self_attn.kv_a_proj_with_mqa",
        hidden,
        kv_lora_rank + qk_rope_head_dim,
        false,
        RankSplit::Replicated,
    ));
    let mut n = lin(
        "self_attn.kv_a_layernorm",
        "self_attn.kv_a_layernorm",
        1,
        kv_lora_rank,
        false,
        RankSplit::Replicated,
    );
    n.quantizable = false;
    n.fixed = norm_fixed;
    t.push(n);
    t.push(lin(
        "self_attn.kv_b_proj",
        "self_attn.kv_b_proj",
        kv_lora_rank,
        heads * (qk_nope_head_dim + v_head_dim),
        false,
        RankSplit::Column,
    ));
    t.push(lin(
        "self_attn.o_proj",
        "self_attn.o_proj",
        heads * v_head_dim,
        hidden,
        false,
        RankSplit::Row,
    ));
    if let (
        Some(Indexer {
            heads: index_heads,
            dim: index_dim,
            ..
        }),
        Some(r),
    ) = (indexer, q_lora)
    {
        // The lightning indexer (DeepSeek-V3.2 `Indexer`): queries from the query low rank,
        // one key head, a LayerNorm on the key (weight and bias, fp32), and per-head weights
        // (bf16); every rank holds all of it (plain `Linear`s in the reference code).
        t.push(lin(
            "self_attn.indexer.wq_b",
            "self_attn.indexer.wq_b",
            r,
            index_heads * index_dim,
            false,
            RankSplit::Replicated,
        ));
        t.push(lin(
            "self_attn.indexer.wk",
            "self_attn.indexer.wk",
            hidden,
            index_dim,
            false,
            RankSplit::Replicated,
        ));
        let mut k_norm = lin(
            "self_attn.indexer.k_norm",
            "self_attn.indexer.k_norm",
            1,
            index_dim,
            true,
            RankSplit::Replicated,
        );
        k_norm.quantizable = false;
        k_norm.fixed = Some(WeightFormat::FP32);
        k_norm.bias_bytes = Some(4);
        t.push(k_norm);
        t.push(
            lin(
                "self_attn.indexer.weights_proj",
                "self_attn.indexer.weights_proj",
                hidden,
                index_heads,
                false,
                RankSplit::Replicated,
            )
            .kept(),
        );
    }
    t
}

/// DeepSeek's lightning indexer (V3.2, V4) from its three keys.
pub(super) fn read_indexer(f: &mut Fields<'_>) -> Result<Indexer, Error> {
    Ok(Indexer {
        heads: f.positive("index_n_heads")?,
        dim: f.positive("index_head_dim")?,
        topk: f.positive("index_topk")?,
    })
}
