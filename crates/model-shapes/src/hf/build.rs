//! A language model's weights table from its keys, in outline: dtype and shared widths, attention, the
//! layers' layout, experts, the family's extra switches; then each layer's tensors, grouped across layers
//! ([`Grouper`]), and the tensors outside the layers. Every width is bounded where it is read
//! (`bounds.rs`); the table's parameter count is checked here, where widths meet counts.

use super::attention::read_attention;
use super::experts::read_experts;
use super::family::{Family, IGNORED, take_gemma3_defaults};
use super::fields::Fields;
use super::layer::Decoder;
use super::layout::read_layout;
use super::minimax::{MiniMax, read_minimax};
use super::tensor::{Grouper, LayerSignature, spelled_layers};
use super::{Inherited, RunOptions};
use crate::Error;
use crate::weights::{
    Attention, LayerKind, Layers, ModelShape, Moe, RankSplit, Reads, TensorGroup, WeightFormat,
};

/// More parameters than any model has by far (the largest have ~2^41), and the last count f64 holds
/// exactly: a table past it is refused.
pub const MAX_PARAMS: u64 = 1 << 53;

/// A language model's table from its keys (the config, or a wrapper's `text_config`).
pub(super) fn build(
    mut f: Fields<'_>,
    family: Family,
    model_type: String,
    inherited: Inherited,
    run: &RunOptions,
    mut notes: Vec<String>,
) -> Result<ModelShape, Error> {
    let origin = f.origin;
    let Inherited {
        dtype,
        mut quant,
        tie,
        layers: layer_root,
        ignored,
    } = inherited;
    if let Some(WeightFormat::Fp8Block {
        block_out,
        block_in,
        scale_bytes: 1,
    }) = quant.format
        && family != Family::DeepSeekV4
    {
        quant.format = Some(WeightFormat::Fp8Block {
            block_out,
            block_in,
            scale_bytes: 4,
        });
        notes.push("scale_fmt ue8m0: power-of-two block scales, stored as fp32 `weight_scale_inv` as DeepSeek-V3.1/V3.2 checkpoints store them (DeepSeek-V4's alone are E8M0 bytes)".to_string());
    }
    if family == Family::Gemma3 {
        take_gemma3_defaults(&mut f, &mut notes);
    }
    let dtype = match dtype {
        Some(d) => d,
        // gpt-oss configs carry no dtype; the checkpoints' unquantised tensors are bf16 (its model card).
        None if family == Family::GptOss => {
            notes
                .push("torch_dtype absent: gpt-oss's unquantised tensors are bfloat16".to_string());
            "bfloat16".to_string()
        }
        None => {
            return Err(f.invalid(
                "torch_dtype",
                "missing: the activation and unquantised weight dtype",
            ));
        }
    };
    let act = match dtype.as_str() {
        "bfloat16" => WeightFormat::BF16,
        "float16" => WeightFormat::FP16,
        "float32" => WeightFormat::FP32,
        other => {
            return Err(f.invalid(
                "torch_dtype",
                format!("`{other}`: expected bfloat16, float16 or float32"),
            ));
        }
    };
    let (act_bytes, act_name) = match act {
        WeightFormat::Float { bytes, name } => (bytes, name),
        _ => (2, "bf16"),
    };

    let hidden = f.positive("hidden_size")?;
    let n_layers = f.positive("num_hidden_layers")?;
    let vocab = f.positive("vocab_size")?;
    let heads = f.positive("num_attention_heads")?;
    let kv_heads = f.u64_opt("num_key_value_heads")?.unwrap_or(heads);
    if kv_heads == 0 || heads % kv_heads != 0 {
        return Err(f.invalid(
            "num_key_value_heads",
            format!("{kv_heads} does not divide {heads} heads"),
        ));
    }
    let tie_default = matches!(family, Family::Gemma | Family::Gemma2 | Family::Gemma3);
    let tied = tie.unwrap_or(tie_default);
    let attention_bias = f
        .bool_opt("attention_bias")?
        .unwrap_or(matches!(family, Family::GptOss));
    let mlp_bias = f.bool_opt("mlp_bias")?.unwrap_or(false);
    let intermediate = f.positive_opt("intermediate_size")?;

    let keys = read_attention(
        &mut f,
        family,
        &model_type,
        (hidden, heads, kv_heads),
        run.tp,
    )?;
    let attention = keys.attention;
    if heads % run.tp != 0 {
        return Err(f.invalid(
            "num_attention_heads",
            format!(
                "{heads} heads do not divide among {} tensor-parallel ranks",
                run.tp
            ),
        ));
    }
    // Each rank holds whole KV heads (or, with fewer KV heads than ranks, one replicated head), as vLLM
    // splits q/k/v and Phi-3's fused qkv_proj per head.
    if let Attention::Gqa { kv_heads, .. } = attention
        && kv_heads >= run.tp
        && !kv_heads.is_multiple_of(run.tp)
    {
        return Err(f.invalid(
            "num_key_value_heads",
            format!(
                "{kv_heads} KV heads do not divide among {} tensor-parallel ranks",
                run.tp
            ),
        ));
    }
    let layout = read_layout(&mut f, family, n_layers, &mut notes)?;
    let experts = read_experts(&mut f, family, intermediate, run, &mut notes)?;

    // GLM-4.5 normalises queries and keys per head when `use_qk_norm` (GLM-4.5, not -Air).
    let glm_qk_norm = family == Family::Glm4Moe && f.bool_opt("use_qk_norm")?.unwrap_or(false);
    let qk_norm =
        matches!(family, Family::Qwen3 | Family::Qwen3Moe | Family::Gemma3) || glm_qk_norm;
    let minimax = if family == Family::MiniMaxM2 {
        read_minimax(&mut f, n_layers, &mut notes)?
    } else {
        MiniMax::default()
    };
    // Phi-4-mini's configs (Microsoft's own Phi3Config) add an LM-head bias switch and `full_attn_mod`, the
    // period of full-attention layers among sliding ones: 1, every layer alike, is the only value read.
    let mut lm_head_bias = false;
    if family == Family::Phi3 {
        lm_head_bias = f.bool_opt("lm_head_bias")?.unwrap_or(false);
        if let Some(m) = f.u64_opt("full_attn_mod")?
            && m != 1
        {
            return Err(f.invalid(
                "full_attn_mod",
                format!("{m}: only 1 (every layer alike) is understood"),
            ));
        }
        notes.push("phi3: qkv_proj and gate_up_proj are fused in the checkpoint; listed as q, k, v and gate|up (the same parameters; a rank holds whole heads of each)".to_string());
    }
    // DeepSeek-V3.2 stores its norms in fp32 (the reference RMSNorm's weight dtype; its checkpoint).
    let norm_fixed = keys.indexer.map(|_| WeightFormat::FP32);
    let norms_per_layer = if matches!(family, Family::Gemma2 | Family::Gemma3) {
        4
    } else {
        2
    };
    let ignored: Vec<&str> = IGNORED.iter().chain(ignored).copied().collect();
    f.finish(&ignored)?;

    // A dense layer needs the dense MLP's width (the first such layer would ask for it).
    if intermediate.is_none() && (0..n_layers).any(|i| !experts.is_moe_layer(i)) {
        return Err(Error::Invalid {
            origin: origin.to_string(),
            field: "intermediate_size".to_string(),
            reason: "missing: needed for the dense MLP".to_string(),
        });
    }
    let decoder = Decoder {
        family,
        model_type: &model_type,
        hidden,
        vocab,
        attention,
        attention_bias,
        mlp_bias,
        qk_norm,
        minimax,
        q_lora: keys.q_lora,
        v4: keys.v4,
        norm_fixed,
        norms_per_layer,
        intermediate,
        experts: &experts,
        origin,
    };
    // DeepSeek-V4's checkpoint names its modules `layers.{i}.attn.wq_a` (no `model.` prefix).
    let root = if family == Family::DeepSeekV4 {
        "layers"
    } else {
        layer_root
    };
    let spelled = spelled_layers(&quant.skip);
    let mut table = Grouper::new(
        &quant,
        experts.format,
        act,
        act_bytes,
        attention,
        (run.tp, run.ep),
        root.to_string(),
        origin,
    );
    let mut layers = Layers::new();
    let mut moe_layers = 0;
    for i in 0..n_layers {
        let kind = LayerKind {
            sliding_window: layout.window.filter(|_| layout.sliding.slides(i)),
            compress_ratio: layout.compress(i),
            moe: experts.is_moe_layer(i),
        };
        layers.push(kind);
        moe_layers += u64::from(kind.moe);
        let hash_routed = layout.hash_routed.routed(i);
        let signature = LayerSignature {
            kind,
            hash_routed,
            spelled: spelled.contains(&i).then_some(i),
        };
        table.add_layer(i, signature, || decoder.tensors(kind, hash_routed))?;
    }

    // Outside the layers: final norm, embedding, LM head (column split over the vocabulary).
    let rank_vocab = vocab.div_ceil(run.tp);
    table.whole(
        "model.norm",
        (1, hidden),
        norm_fixed.unwrap_or(act),
        Reads::EveryStep,
        RankSplit::Replicated,
        hidden,
    );
    if let Some(d) = keys.v4 {
        // mHC's head site: h mixing rows over h·hidden, h base values and one scale, fp32.
        table.whole(
            "hc_head_fn",
            (d.hc_mult * hidden, d.hc_mult),
            WeightFormat::FP32,
            Reads::EveryStep,
            RankSplit::Replicated,
            d.hc_mult,
        );
        table.whole(
            "hc_head_base+hc_head_scale",
            (1, d.hc_mult + 1),
            WeightFormat::FP32,
            Reads::EveryStep,
            RankSplit::Replicated,
            d.hc_mult + 1,
        );
    }
    table.whole(
        "model.embed_tokens",
        (hidden, vocab),
        act,
        Reads::TokenRows,
        RankSplit::Column,
        rank_vocab,
    );
    if tied {
        notes.push("tie_word_embeddings: the LM head is the embedding (its parameters are counted once, its bytes read as the LM head)".to_string());
    }
    table
        .whole(
            "lm_head",
            (hidden, vocab),
            quant.head.unwrap_or(act),
            Reads::LogitRows,
            RankSplit::Column,
            rank_vocab,
        )
        .bias = lm_head_bias;
    let groups = table.groups;
    check_size(&groups, origin)?;
    Ok(ModelShape {
        model_type,
        hidden,
        vocab,
        attention,
        layers,
        moe: (experts.experts > 0).then_some(Moe {
            experts: experts.experts,
            top_k: experts.top_k,
            shared_experts: experts.shared,
            expert_intermediate: experts.expert_inter,
            moe_layers,
        }),
        activation_bytes: act_bytes,
        activation_dtype: act_name,
        fp8_compute: quant.fp8_compute,
        tied_embeddings: tied,
        tp: run.tp,
        ep: run.ep,
        groups,
        notes,
    })
}

/// Refuses a table past [`MAX_PARAMS`], naming the group that takes it there: each group's count is taken
/// with checked arithmetic, so nothing wraps on the way.
fn check_size(groups: &[TensorGroup], origin: &str) -> Result<(), Error> {
    let mut total: u64 = 0;
    for g in groups {
        match g
            .checked_params()
            .and_then(|p| total.checked_add(p))
            .filter(|&t| t <= MAX_PARAMS)
        {
            Some(t) => total = t,
            None => {
                return Err(Error::Invalid {
                    origin: origin.to_string(),
                    field: g.name.clone(),
                    reason: format!(
                        "{} layers × {} of {} × {} takes the model past 2^53 parameters: no model is near that many, and counts past it are not exact",
                        g.layers, g.per_layer, g.in_features, g.out_features
                    ),
                });
            }
        }
    }
    Ok(())
}
