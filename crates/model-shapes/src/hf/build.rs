//! A language model's weights table from its keys, in outline: dtype and shared widths, attention, the
//! layers' layout, experts, the family's extra switches; then each layer's tensors, grouped across layers
//! ([`Grouper`]), and the tensors outside the layers. Every width is bounded where it is read
//! (`bounds.rs`); the table's parameter count is checked here, where widths meet counts.

use super::attention::read_attention;
use super::deepseek_v4::V4Dims;
use super::experts::{Experts, read_experts};
use super::family::{Family, IGNORED, take_gemma3_defaults};
use super::fields::Fields;
use super::layer::Decoder;
use super::layout::{Layout, read_layout};
use super::minimax::{MiniMax, read_minimax};
use super::quant::Quant;
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
    store_ue8m0_scales_as_fp32(&mut quant, family, &mut notes);
    if family == Family::Gemma3 {
        take_gemma3_defaults(&mut f, &mut notes);
    }
    let act = activation_format(&f, family, dtype, &mut notes)?;
    let (act_bytes, act_name) = match act {
        WeightFormat::Float { bytes, name } => (bytes, name),
        _ => (2, "bf16"),
    };
    let w = read_widths(&mut f, family, tie)?;
    let keys = read_attention(
        &mut f,
        family,
        &model_type,
        (w.hidden, w.heads, w.kv_heads),
        run.tp,
    )?;
    let attention = keys.attention;
    check_heads_divide(&f, w.heads, attention, run.tp)?;
    let layout = read_layout(&mut f, family, w.n_layers, &mut notes)?;
    let experts = read_experts(&mut f, family, w.intermediate, run, &mut notes)?;
    let switches = read_family_switches(&mut f, family, w.n_layers, &mut notes)?;
    // DeepSeek-V3.2 stores its norms in fp32 (the reference RMSNorm's weight dtype; its checkpoint).
    let norm_fixed = keys.indexer.map(|_| WeightFormat::FP32);
    let ignored: Vec<&str> = IGNORED.iter().chain(ignored).copied().collect();
    f.finish(&ignored)?;

    check_dense_width(&w, &experts, origin)?;
    let decoder = Decoder {
        family,
        model_type: &model_type,
        hidden: w.hidden,
        vocab: w.vocab,
        attention,
        attention_bias: w.attention_bias,
        mlp_bias: w.mlp_bias,
        qk_norm: switches.qk_norm,
        minimax: switches.minimax,
        q_lora: keys.q_lora,
        v4: keys.v4,
        norm_fixed,
        norms_per_layer: if matches!(family, Family::Gemma2 | Family::Gemma3) {
            4
        } else {
            2
        },
        intermediate: w.intermediate,
        experts: &experts,
        origin,
    };
    // DeepSeek-V4's checkpoint names its modules `layers.{i}.attn.wq_a` (no `model.` prefix).
    let root = if family == Family::DeepSeekV4 {
        "layers"
    } else {
        layer_root
    };
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
    let (layers, moe_layers) = add_layers(&mut table, &decoder, &layout, &experts, w.n_layers)?;
    if w.tied {
        notes.push("tie_word_embeddings: the LM head is the embedding (its parameters are counted once, its bytes read as the LM head)".to_string());
    }
    let outside = Outside {
        hidden: w.hidden,
        vocab: w.vocab,
        act,
        norm_fixed,
        v4: keys.v4,
        head: quant.head.unwrap_or(act),
        lm_head_bias: switches.lm_head_bias,
    };
    add_outside_layers(&mut table, &outside, run.tp);
    let groups = table.groups;
    check_size(&groups, origin)?;
    Ok(ModelShape {
        model_type,
        hidden: w.hidden,
        vocab: w.vocab,
        attention,
        layers,
        moe: moe(&experts, moe_layers),
        activation_bytes: act_bytes,
        activation_dtype: act_name,
        fp8_compute: quant.fp8_compute,
        tied_embeddings: w.tied,
        tp: run.tp,
        ep: run.ep,
        groups,
        notes,
    })
}

/// A dense layer needs the dense MLP's width (the first such layer would ask for it).
fn check_dense_width(w: &Widths, experts: &Experts, origin: &str) -> Result<(), Error> {
    if w.intermediate.is_none() && (0..w.n_layers).any(|i| !experts.is_moe_layer(i)) {
        return Err(Error::Invalid {
            origin: origin.to_string(),
            field: "intermediate_size".to_string(),
            reason: "missing: needed for the dense MLP".to_string(),
        });
    }
    Ok(())
}

/// The table's MoE summary, when the model has routed experts (`moe_layers` of its layers).
fn moe(experts: &Experts, moe_layers: u64) -> Option<Moe> {
    (experts.experts > 0).then_some(Moe {
        experts: experts.experts,
        top_k: experts.top_k,
        shared_experts: experts.shared,
        expert_intermediate: experts.expert_inter,
        moe_layers,
    })
}

/// `scale_fmt: ue8m0` block scales (one byte in the quantisation config) are stored as fp32 by every
/// family but DeepSeek-V4.
fn store_ue8m0_scales_as_fp32(quant: &mut Quant, family: Family, notes: &mut Vec<String>) {
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
}

/// The activation (and unquantised weight) format, from `torch_dtype`.
fn activation_format(
    f: &Fields<'_>,
    family: Family,
    dtype: Option<String>,
    notes: &mut Vec<String>,
) -> Result<WeightFormat, Error> {
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
    match dtype.as_str() {
        "bfloat16" => Ok(WeightFormat::BF16),
        "float16" => Ok(WeightFormat::FP16),
        "float32" => Ok(WeightFormat::FP32),
        other => Err(f.invalid(
            "torch_dtype",
            format!("`{other}`: expected bfloat16, float16 or float32"),
        )),
    }
}

/// The model's shared widths and switches, as the config's keys give them.
struct Widths {
    hidden: u64,
    n_layers: u64,
    vocab: u64,
    heads: u64,
    kv_heads: u64,
    /// Whether the LM head is the embedding.
    tied: bool,
    attention_bias: bool,
    mlp_bias: bool,
    /// The dense MLP's width (absent in an all-MoE model).
    intermediate: Option<u64>,
}

/// The shared widths; `tie` is the inherited `tie_word_embeddings` (Gemma's default true).
fn read_widths(f: &mut Fields<'_>, family: Family, tie: Option<bool>) -> Result<Widths, Error> {
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
    Ok(Widths {
        hidden,
        n_layers,
        vocab,
        heads,
        kv_heads,
        tied: tie.unwrap_or(tie_default),
        attention_bias: f
            .bool_opt("attention_bias")?
            .unwrap_or(matches!(family, Family::GptOss)),
        mlp_bias: f.bool_opt("mlp_bias")?.unwrap_or(false),
        intermediate: f.positive_opt("intermediate_size")?,
    })
}

/// Refuses heads that do not divide among the tensor-parallel ranks.
fn check_heads_divide(
    f: &Fields<'_>,
    heads: u64,
    attention: Attention,
    tp: u64,
) -> Result<(), Error> {
    if !heads.is_multiple_of(tp) {
        return Err(f.invalid(
            "num_attention_heads",
            format!("{heads} heads do not divide among {tp} tensor-parallel ranks"),
        ));
    }
    // Each rank holds whole KV heads (or, with fewer KV heads than ranks, one replicated head), as vLLM
    // splits q/k/v and Phi-3's fused qkv_proj per head.
    if let Attention::Gqa { kv_heads, .. } = attention
        && kv_heads >= tp
        && !kv_heads.is_multiple_of(tp)
    {
        return Err(f.invalid(
            "num_key_value_heads",
            format!("{kv_heads} KV heads do not divide among {tp} tensor-parallel ranks"),
        ));
    }
    Ok(())
}

/// The switches only some families have.
struct FamilySwitches {
    /// Queries and keys normalised per head.
    qk_norm: bool,
    minimax: MiniMax,
    /// Phi-4-mini's LM-head bias.
    lm_head_bias: bool,
}

fn read_family_switches(
    f: &mut Fields<'_>,
    family: Family,
    n_layers: u64,
    notes: &mut Vec<String>,
) -> Result<FamilySwitches, Error> {
    // GLM-4.5 normalises queries and keys per head when `use_qk_norm` (GLM-4.5, not -Air).
    let glm_qk_norm = family == Family::Glm4Moe && f.bool_opt("use_qk_norm")?.unwrap_or(false);
    let qk_norm =
        matches!(family, Family::Qwen3 | Family::Qwen3Moe | Family::Gemma3) || glm_qk_norm;
    let minimax = if family == Family::MiniMaxM2 {
        read_minimax(f, n_layers, notes)?
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
    Ok(FamilySwitches {
        qk_norm,
        minimax,
        lm_head_bias,
    })
}

/// Adds every decoder layer's tensors to the table; returns the layers' kinds and how many are MoE.
fn add_layers(
    table: &mut Grouper<'_>,
    decoder: &Decoder<'_>,
    layout: &Layout,
    experts: &Experts,
    n_layers: u64,
) -> Result<(Layers, u64), Error> {
    let spelled = spelled_layers(&table.quant.skip);
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
    Ok((layers, moe_layers))
}

/// What the tensors outside the layers are made of.
struct Outside {
    hidden: u64,
    vocab: u64,
    act: WeightFormat,
    /// The final norm's own format, where the family fixes one.
    norm_fixed: Option<WeightFormat>,
    v4: Option<V4Dims>,
    /// The LM head's format.
    head: WeightFormat,
    lm_head_bias: bool,
}

/// Adds the tensors outside the layers: final norm, DeepSeek-V4's head mixing, embedding, LM head (the
/// last two column split over the vocabulary among `tp` ranks).
fn add_outside_layers(table: &mut Grouper<'_>, o: &Outside, tp: u64) {
    let (hidden, vocab) = (o.hidden, o.vocab);
    let rank_vocab = vocab.div_ceil(tp);
    table.whole(
        "model.norm",
        (1, hidden),
        o.norm_fixed.unwrap_or(o.act),
        Reads::EveryStep,
        RankSplit::Replicated,
        hidden,
    );
    if let Some(d) = o.v4 {
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
        o.act,
        Reads::TokenRows,
        RankSplit::Column,
        rank_vocab,
    );
    table
        .whole(
            "lm_head",
            (hidden, vocab),
            o.head,
            Reads::LogitRows,
            RankSplit::Column,
            rank_vocab,
        )
        .bias = o.lm_head_bias;
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
