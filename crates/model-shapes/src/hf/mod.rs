//! A [`ModelShape`] from a Hugging Face `config.json` (and its `quantization_config`, or a format given
//! by the caller).
//!
//! Every key of the config is either read, or on a list of keys known not to change any weight's shape or
//! bytes (token ids, rotary and normalisation constants, training knobs); any other key is an error that
//! names it, so a new architecture feature is never ignored silently. `docs/formulas.md` §16 lists what
//! each architecture contributes to the table.

mod attention;
mod deepseek_v4;
mod family;
mod fields;
mod minimax;
mod quant;

use serde_json::Value;

use crate::Error;
use crate::weights::{
    Attention, Indexer, LayerKind, ModelShape, Moe, RankSplit, Reads, TensorGroup, WeightFormat,
};
use attention::{gqa_tensors, mla_tensors, read_indexer};
use deepseek_v4::{INT64, hybrid_tensors, mhc_tensors, read_v4_attention, read_v4_layers};
use family::{
    Family, IGNORED, PHI3_IGNORED, VISION_BESIDE, WRAPPERS, family_of, take_gemma3_defaults,
};
use fields::Fields;
use minimax::{MiniMax, read_minimax};
use quant::{Quant, quant_of};

pub use quant::{QuantOverride, module_matches};

/// How the model is run: parallel sizes and an optional format override.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunOptions {
    /// Tensor-parallel ranks.
    pub tp: u64,
    /// Expert-parallel ranks (1: experts are split like dense MLPs among the tensor-parallel ranks).
    pub ep: u64,
    /// Replaces the config's `quantization_config` when given.
    pub quant: Option<QuantOverride>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            tp: 1,
            ep: 1,
            quant: None,
        }
    }
}

/// Reads a `config.json`. `origin` names the text in errors.
pub fn model_from_config(text: &str, origin: &str, run: &RunOptions) -> Result<ModelShape, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| Error::Parse {
        origin: origin.to_string(),
        message: e.to_string(),
    })?;
    let Value::Object(map) = value else {
        return Err(Error::Invalid {
            origin: origin.to_string(),
            field: "(top level)".to_string(),
            reason: "a config.json is a JSON object".to_string(),
        });
    };
    let mut f = Fields {
        map,
        origin,
        prefix: String::new(),
    };
    if run.tp == 0 || run.ep == 0 {
        return Err(f.invalid("tensor/expert-parallel size", "parallel sizes are positive"));
    }
    let model_type = f
        .str_opt("model_type")?
        .ok_or_else(|| f.invalid("model_type", "missing"))?;
    let mut notes = Vec::new();
    if let Some(w) = WRAPPERS.iter().find(|w| w.model_type == model_type) {
        // The wrapper's dtype, quantisation and tying apply to its language model unless text_config
        // gives its own.
        let dtype = dtype_of(&mut f)?;
        let quant = quant_of(&mut f, run, &mut notes)?;
        let tie = f.bool_opt("tie_word_embeddings")?;
        let mut text = f.object_opt("text_config")?.ok_or_else(|| {
            f.invalid(
                "text_config",
                format!("missing: a `{model_type}` config holds its language model there"),
            )
        })?;
        let mut vision: Vec<String> = Vec::new();
        if f.opt("vision_config").is_some() {
            vision.push("vision_config".to_string());
        }
        for key in w.vision_keys {
            if f.opt(key).is_some() {
                vision.push((*key).to_string());
            }
        }
        if !vision.is_empty() {
            notes.push(format!(
                "{}: the vision encoder and its projector are not counted (they run only on image inputs)",
                vision.join(", ")
            ));
        }
        let ignored: Vec<&str> = IGNORED.iter().chain(w.ignored).copied().collect();
        f.finish(&ignored)?;
        let inner = text
            .str_opt("model_type")?
            .unwrap_or_else(|| w.text_types[0].to_string());
        if !w.text_types.contains(&inner.as_str()) {
            return Err(text.invalid(
                "model_type",
                format!(
                    "`{inner}` is not understood inside `{model_type}` (known: {})",
                    w.text_types.join(", ")
                ),
            ));
        }
        let family = family_of(&text, &inner)?;
        let dtype = dtype_of(&mut text)?.or(dtype);
        let tie = text.bool_opt("tie_word_embeddings")?.or(tie);
        return build(
            text,
            family,
            format!("{model_type} ({inner})"),
            Inherited {
                dtype,
                quant,
                tie,
                layers: "language_model.model.layers",
                ignored: &[],
            },
            run,
            notes,
        );
    }
    let family = family_of(&f, &model_type)?;
    let mut ignored: &'static [&'static str] = &[];
    if let Some((_, keys)) = VISION_BESIDE.iter().find(|(t, _)| *t == model_type) {
        if f.opt("vision_config").is_some() {
            notes.push(
                "vision_config: the vision encoder is not counted (it runs only on image inputs)"
                    .to_string(),
            );
        }
        ignored = keys;
    }
    if family == Family::Phi3 {
        ignored = PHI3_IGNORED;
    }
    let dtype = dtype_of(&mut f)?;
    let quant = quant_of(&mut f, run, &mut notes)?;
    let tie = f.bool_opt("tie_word_embeddings")?;
    build(
        f,
        family,
        model_type,
        Inherited {
            dtype,
            quant,
            tie,
            layers: "model.layers",
            ignored,
        },
        run,
        notes,
    )
}

/// What a language model's reader takes from the level above its keys: a multimodal wrapper's dtype,
/// quantisation and tying, and where its layers sit in the checkpoint.
struct Inherited {
    dtype: Option<String>,
    quant: Quant,
    tie: Option<bool>,
    /// The layers' module path (`model.layers`; a wrapper's `language_model.model.layers`).
    layers: &'static str,
    /// Keys of this level that set no language-model weight, beyond [`IGNORED`].
    ignored: &'static [&'static str],
}

/// `torch_dtype` (or the newer `dtype`).
fn dtype_of(f: &mut Fields<'_>) -> Result<Option<String>, Error> {
    let old = f.str_opt("torch_dtype")?;
    let new = f.str_opt("dtype")?;
    Ok(old.or(new))
}

/// A language model's table from its keys (the config, or a wrapper's `text_config`).
fn build(
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
    let act_bytes = match act {
        WeightFormat::Float { bytes, .. } => bytes,
        _ => 2,
    };
    let act_name = match act {
        WeightFormat::Float { name, .. } => name,
        _ => "bf16",
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
    let intermediate = f.u64_opt("intermediate_size")?;

    // Attention.
    let mla = family == Family::DeepSeek;
    let mut v4 = None;
    // DeepSeek-V3.2's lightning indexer.
    let mut indexer: Option<Indexer> = None;
    let (attention, q_lora) = if family == Family::DeepSeekV4 {
        let (attention, dims) = read_v4_attention(&mut f, heads, kv_heads, run.tp)?;
        v4 = Some(dims);
        (attention, Some(dims.q_lora))
    } else if mla {
        let q_lora = f.u64_opt("q_lora_rank")?;
        if model_type == "deepseek_v32" {
            let ix = read_indexer(&mut f)?;
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
        // MLA's num_key_value_heads equals the heads and sets no shape.
        let _ = f.u64_opt("head_dim")?;
        (
            Attention::Mla {
                heads,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
                indexer,
            },
            q_lora,
        )
    } else {
        let head_dim = match f.u64_opt("head_dim")? {
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
        (
            Attention::Gqa {
                heads,
                kv_heads,
                head_dim,
                v_head_dim: head_dim,
            },
            None,
        )
    };
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
    // Sliding windows.
    let window = f.u64_opt("sliding_window")?;
    let use_sliding = f.bool_opt("use_sliding_window")?;
    let max_window_layers = f.u64_opt("max_window_layers")?;
    // Newer Gemma 3 configs write the pattern as `_sliding_window_pattern` beside `layer_types`.
    let pattern = f.u64_opt("sliding_window_pattern")?;
    let pattern = pattern.or(f.u64_opt("_sliding_window_pattern")?);
    let mut compress = vec![None; n_layers as usize];
    let mut hash_router = vec![false; n_layers as usize];
    let layer_types = if family == Family::DeepSeekV4 {
        let layout = read_v4_layers(&mut f, n_layers, &mut notes)?;
        compress = layout.compress;
        hash_router = layout.hash_router;
        None
    } else {
        f.strings_opt("layer_types")?
    };
    let mut sliding = vec![family == Family::DeepSeekV4; n_layers as usize];
    if let Some(types) = &layer_types {
        if types.len() as u64 != n_layers {
            return Err(f.invalid(
                "layer_types",
                format!("{} entries for {n_layers} layers", types.len()),
            ));
        }
        for (i, t) in types.iter().enumerate() {
            sliding[i] = match t.as_str() {
                "sliding_attention" => true,
                "full_attention" => false,
                other => {
                    return Err(f.invalid(
                        "layer_types",
                        format!("`{other}` is not understood (sliding_attention, full_attention)"),
                    ));
                }
            };
        }
    } else {
        match family {
            // Phi-3's attention passes `config.sliding_window` to every layer (transformers' Phi3Attention).
            Family::Mistral | Family::Mixtral | Family::Phi3 => sliding.fill(window.is_some()),
            Family::Qwen2 | Family::Qwen3 | Family::Qwen2Moe | Family::Qwen3Moe
                if use_sliding == Some(true) && window.is_some() =>
            {
                let from = max_window_layers.unwrap_or(0);
                for (i, s) in sliding.iter_mut().enumerate() {
                    *s = i as u64 >= from;
                }
            }
            Family::Gemma2 => {
                for (i, s) in sliding.iter_mut().enumerate() {
                    *s = i % 2 == 0;
                }
            }
            Family::Gemma3 => {
                let p = pattern.ok_or_else(|| {
                    f.invalid("sliding_window_pattern", "missing (and no layer_types)")
                })?;
                for (i, s) in sliding.iter_mut().enumerate() {
                    *s = p == 0 || !(i as u64 + 1).is_multiple_of(p);
                }
            }
            _ => {}
        }
    }
    if sliding.iter().any(|&s| s) && window.is_none() {
        return Err(f.invalid("sliding_window", "missing, but some layers slide"));
    }

    // Experts.
    let (experts, top_k, expert_inter, shared, shared_inter, dense_first, moe_every, mlp_only) =
        match family {
            Family::Mixtral | Family::GptOss | Family::MiniMaxM2 => {
                let e = f.positive("num_local_experts")?;
                let k = f.positive("num_experts_per_tok")?;
                if family == Family::GptOss
                    && let Some(k2) = f.u64_opt("experts_per_token")?
                    && k2 != k
                {
                    return Err(f.invalid(
                        "experts_per_token",
                        format!("{k2} differs from num_experts_per_tok {k}"),
                    ));
                }
                let i = intermediate.ok_or_else(|| f.invalid("intermediate_size", "missing"))?;
                (e, k, i, 0, 0, 0, 1, Vec::new())
            }
            Family::Qwen2Moe | Family::Qwen3Moe => {
                let e = f.positive("num_experts")?;
                let k = f.positive("num_experts_per_tok")?;
                let i = f.positive("moe_intermediate_size")?;
                let step = f.u64_opt("decoder_sparse_step")?.unwrap_or(1).max(1);
                let only = f.u64s_opt("mlp_only_layers")?.unwrap_or_default();
                let (s, si) = if family == Family::Qwen2Moe {
                    let si = f.u64_opt("shared_expert_intermediate_size")?.unwrap_or(0);
                    (u64::from(si > 0), si)
                } else {
                    (0, 0)
                };
                (e, k, i, s, si, 0, step, only)
            }
            Family::DeepSeek | Family::DeepSeekV4 | Family::Glm4Moe => {
                let e = f.positive("n_routed_experts")?;
                let k = f.positive("num_experts_per_tok")?;
                let i = f.positive("moe_intermediate_size")?;
                // DeepSeek-V4 has no dense layers: its configs carry neither key, and one would be an error.
                // GLM-4.5 has no moe_layer_freq: every layer from first_k_dense_replace on is MoE.
                let (s, first, every) = match family {
                    Family::DeepSeek => (
                        f.u64_opt("n_shared_experts")?.unwrap_or(0),
                        f.u64_opt("first_k_dense_replace")?.unwrap_or(0),
                        f.u64_opt("moe_layer_freq")?.unwrap_or(1).max(1),
                    ),
                    Family::Glm4Moe => (
                        f.u64("n_shared_experts")?,
                        f.u64("first_k_dense_replace")?,
                        1,
                    ),
                    _ => (f.u64_opt("n_shared_experts")?.unwrap_or(0), 0, 1),
                };
                if let Some(mtp) = f.u64_opt("num_nextn_predict_layers")?
                    && mtp > 0
                {
                    notes.push(format!(
                    "num_nextn_predict_layers = {mtp}: the multi-token-prediction layer(s) are not counted (they run only for speculative decoding)"
                ));
                }
                (e, k, i, s, s * i, first, every, Vec::new())
            }
            _ => (0, 0, 0, 0, 0, 0, 1, Vec::new()),
        };
    if experts > 0 && top_k > experts {
        return Err(f.invalid(
            "num_experts_per_tok",
            format!("{top_k} exceeds the {experts} experts"),
        ));
    }
    if experts > 0 && experts % run.ep != 0 {
        return Err(f.invalid(
            "expert-parallel size",
            format!("{experts} experts do not divide among {} ranks", run.ep),
        ));
    }
    if run.ep > 1 && experts == 0 {
        return Err(f.invalid(
            "expert-parallel size",
            "expert parallelism on a model without routed experts",
        ));
    }
    // DeepSeek: layer i is MoE when i % moe_layer_freq == 0; Qwen-MoE when (i + 1) % decoder_sparse_step == 0.
    let step_offset = u64::from(!matches!(
        family,
        Family::DeepSeek | Family::DeepSeekV4 | Family::Glm4Moe
    ));
    let is_moe_layer = |i: u64| -> bool {
        experts > 0
            && i >= dense_first
            && (i + step_offset).is_multiple_of(moe_every)
            && !mlp_only.contains(&i)
    };
    // Family-specific keys that set nothing beyond the above.
    if family == Family::Qwen2Moe {
        let _ = f.u64_opt("max_window_layers")?;
    }
    // DeepSeek-V4 stores its routed experts in fp4 beside the fp8 of the other linears.
    let expert_format = match f.str_opt("expert_dtype")?.as_deref() {
        None => None,
        Some("fp4") => Some(WeightFormat::Mxfp4),
        Some(other) => {
            return Err(f.invalid(
                "expert_dtype",
                format!("`{other}` is not understood (fp4: E2M1 with one E8M0 scale per 32)"),
            ));
        }
    };
    let expert_format = match (run.quant, expert_format) {
        (Some(_), Some(_)) => {
            notes.push("expert_dtype replaced by the format given on the command line".to_string());
            None
        }
        (_, e) => e,
    };
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
    let norm_fixed = indexer.map(|_| WeightFormat::FP32);
    let norms_per_layer = if matches!(family, Family::Gemma2 | Family::Gemma3) {
        4
    } else {
        2
    };
    let ignored: Vec<&str> = IGNORED.iter().chain(ignored).copied().collect();
    f.finish(&ignored)?;

    let tp = run.tp;
    let ep = run.ep;
    // Experts under expert parallelism are whole on one rank; otherwise split like a dense MLP.
    let expert_tp = if ep > 1 { 1 } else { tp };
    let split_dim = |dim: u64, ranks: u64, what: &str| -> Result<u64, Error> {
        if !dim.is_multiple_of(ranks) {
            return Err(Error::Invalid {
                origin: origin.to_string(),
                field: what.to_string(),
                reason: format!("{dim} does not divide among {ranks} ranks"),
            });
        }
        Ok(dim / ranks)
    };

    let mut layer_kinds = Vec::with_capacity(n_layers as usize);
    let mut per_layer: Vec<Vec<Tensor>> = Vec::with_capacity(n_layers as usize);
    for i in 0..n_layers {
        let moe = is_moe_layer(i);
        layer_kinds.push(LayerKind {
            sliding_window: if sliding[i as usize] { window } else { None },
            compress_ratio: compress[i as usize],
            moe,
        });
        // DeepSeek-V4's checkpoint names its modules `layers.{i}.attn.wq_a` (no `model.` prefix).
        let at = |m: &str| {
            if family == Family::DeepSeekV4 {
                format!("layers.{i}.{m}")
            } else {
                format!("{layer_root}.{i}.{m}")
            }
        };
        let mut t = match attention {
            Attention::Gqa { .. } => gqa_tensors(
                &at,
                hidden,
                attention,
                family,
                attention_bias,
                minimax,
                qk_norm,
            ),
            Attention::Mla { .. } => mla_tensors(&at, hidden, attention, q_lora, norm_fixed),
            // A validated DeepSeek-V4 config has its dimensions in `v4`.
            Attention::Hybrid { .. } => hybrid_tensors(
                &at,
                hidden,
                attention,
                v4.unwrap_or_default(),
                compress[i as usize],
            ),
        };
        let mut norms = lin(
            "layer norms",
            at("input_layernorm"),
            1,
            hidden,
            false,
            RankSplit::Replicated,
        );
        norms.per_layer = norms_per_layer;
        norms.quantizable = false;
        norms.fixed = norm_fixed;
        t.push(norms);
        if let Some(d) = v4 {
            t.extend(mhc_tensors(&at, hidden, d));
        }
        if moe {
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
                at(experts_module),
                hidden,
                2 * expert_inter,
                expert_bias,
                RankSplit::Column,
            );
            gu.per_layer = experts;
            gu.reads = Reads::RoutedExperts;
            let mut dn = lin(
                "mlp.experts.down_proj",
                at(experts_module),
                expert_inter,
                hidden,
                expert_bias,
                RankSplit::Row,
            );
            dn.per_layer = experts;
            dn.reads = Reads::RoutedExperts;
            t.push(gu);
            t.push(dn);
            // DeepSeek-V3's and GLM-4.5's routers add an fp32 `e_score_correction_bias` to their scores;
            // DeepSeek-V2's router has no bias.
            let correction = family == Family::Glm4Moe
                || (family == Family::DeepSeek && model_type != "deepseek_v2");
            // MiniMax-M2 adds its `e_score_correction_bias` when `use_routing_bias`; its checkpoints store
            // the router's weight and bias in fp32 (their shard headers, as a public loader records them).
            let minimax_bias = family == Family::MiniMaxM2 && minimax.routing_bias;
            let mut r = lin(
                "mlp.router",
                at(router_module),
                hidden,
                experts,
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
                let mut extra = if hash_router[i as usize] {
                    let mut table = lin(
                        "mlp.router.tid2eid",
                        at("ffn.gate.tid2eid"),
                        top_k,
                        vocab,
                        false,
                        RankSplit::Replicated,
                    );
                    table.reads = Reads::TokenRows;
                    table.fixed = Some(INT64);
                    table
                } else {
                    let mut bias = lin(
                        "mlp.router.bias",
                        at("ffn.gate.bias"),
                        1,
                        experts,
                        false,
                        RankSplit::Replicated,
                    );
                    bias.fixed = Some(WeightFormat::FP32);
                    bias
                };
                extra.quantizable = false;
                t.push(extra);
            }
            if shared_inter > 0 {
                let module = if family == Family::Qwen2Moe {
                    "mlp.shared_expert"
                } else if family == Family::DeepSeekV4 {
                    "ffn.shared_experts"
                } else {
                    "mlp.shared_experts"
                };
                t.push(lin(
                    "mlp.shared_experts.gate_up_proj",
                    at(module),
                    hidden,
                    2 * shared_inter,
                    false,
                    RankSplit::Column,
                ));
                t.push(lin(
                    "mlp.shared_experts.down_proj",
                    at(module),
                    shared_inter,
                    hidden,
                    false,
                    RankSplit::Row,
                ));
                if family == Family::Qwen2Moe {
                    t.push(
                        lin(
                            "mlp.shared_expert_gate",
                            at("mlp.shared_expert_gate"),
                            hidden,
                            1,
                            false,
                            RankSplit::Replicated,
                        )
                        .kept(),
                    );
                }
            }
        } else {
            let inter = intermediate.ok_or_else(|| Error::Invalid {
                origin: origin.to_string(),
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
                at(gate_module),
                hidden,
                2 * inter,
                mlp_bias,
                RankSplit::Column,
            ));
            t.push(lin(
                "mlp.down_proj",
                at("mlp.down_proj"),
                inter,
                hidden,
                mlp_bias,
                RankSplit::Row,
            ));
        }
        per_layer.push(t);
    }

    // Group identical tensors across layers.
    let mut groups: Vec<TensorGroup> = Vec::new();
    let format_of = |t: &Tensor| -> WeightFormat {
        if let Some(f) = t.fixed {
            return f;
        }
        if t.reads == Reads::RoutedExperts
            && let Some(e) = expert_format
        {
            return e;
        }
        match quant.format {
            Some(q)
                if t.quantizable && !quant.skip.iter().any(|p| module_matches(p, &t.module)) =>
            {
                q
            }
            _ => act,
        }
    };
    for t in per_layer.iter().flatten() {
        let format = format_of(t);
        let routed = t.reads == Reads::RoutedExperts;
        let ranks = if routed { expert_tp } else { tp };
        // Fewer KV heads than ranks: each rank holds one whole KV head (vLLM replicates them).
        let kv_replicated = matches!(t.name, "self_attn.k_proj" | "self_attn.v_proj")
            && matches!(attention, Attention::Gqa { kv_heads, .. } if kv_heads < tp);
        let (rank_in, rank_out) = match t.split {
            RankSplit::Column if kv_replicated => match attention {
                Attention::Gqa { head_dim, .. } => (t.k, head_dim),
                Attention::Mla { .. } | Attention::Hybrid { .. } => (t.k, t.n),
            },
            RankSplit::Column => (t.k, split_dim(t.n, ranks, t.name)?),
            RankSplit::Row => (split_dim(t.k, ranks, t.name)?, t.n),
            RankSplit::Replicated => (t.k, t.n),
        };
        let rank_per_layer = if routed {
            t.per_layer / ep
        } else {
            t.per_layer
        };
        if let Some(g) = groups.iter_mut().find(|g| {
            g.name == t.name
                && g.in_features == t.k
                && g.out_features == t.n
                && g.per_layer == t.per_layer
                && g.format == format
        }) {
            g.layers += 1;
            continue;
        }
        groups.push(TensorGroup {
            name: t.name.to_string(),
            in_features: t.k,
            out_features: t.n,
            bias: t.bias,
            per_layer: t.per_layer,
            layers: 1,
            format,
            bias_bytes: t.bias_bytes.unwrap_or(act_bytes),
            reads: t.reads,
            split: t.split,
            rank_in,
            rank_out,
            rank_per_layer,
        });
    }
    // Outside the layers: final norm, embedding, LM head (column split over the vocabulary).
    let whole = |name: &str,
                 k: u64,
                 n: u64,
                 format: WeightFormat,
                 reads: Reads,
                 split: RankSplit,
                 rank_out: u64| TensorGroup {
        name: name.to_string(),
        in_features: k,
        out_features: n,
        bias: false,
        per_layer: 1,
        layers: 1,
        format,
        bias_bytes: act_bytes,
        reads,
        split,
        rank_in: k,
        rank_out,
        rank_per_layer: 1,
    };
    groups.push(whole(
        "model.norm",
        1,
        hidden,
        norm_fixed.unwrap_or(act),
        Reads::EveryStep,
        RankSplit::Replicated,
        hidden,
    ));
    if let Some(d) = v4 {
        // mHC's head site: h mixing rows over h·hidden, h base values and one scale, fp32.
        groups.push(whole(
            "hc_head_fn",
            d.hc_mult * hidden,
            d.hc_mult,
            WeightFormat::FP32,
            Reads::EveryStep,
            RankSplit::Replicated,
            d.hc_mult,
        ));
        groups.push(whole(
            "hc_head_base+hc_head_scale",
            1,
            d.hc_mult + 1,
            WeightFormat::FP32,
            Reads::EveryStep,
            RankSplit::Replicated,
            d.hc_mult + 1,
        ));
    }
    groups.push(whole(
        "model.embed_tokens",
        hidden,
        vocab,
        act,
        Reads::TokenRows,
        RankSplit::Column,
        vocab.div_ceil(tp),
    ));
    if tied {
        notes.push("tie_word_embeddings: the LM head is the embedding (its parameters are counted once, its bytes read as the LM head)".to_string());
    }
    let head_format = quant.head.unwrap_or(act);
    let mut head = whole(
        "lm_head",
        hidden,
        vocab,
        head_format,
        Reads::LogitRows,
        RankSplit::Column,
        vocab.div_ceil(tp),
    );
    head.bias = lm_head_bias;
    groups.push(head);
    let moe_layers = layer_kinds.iter().filter(|l| l.moe).count() as u64;
    let shape = ModelShape {
        model_type,
        hidden,
        vocab,
        attention,
        layers: layer_kinds,
        moe: (experts > 0).then_some(Moe {
            experts,
            top_k,
            shared_experts: shared,
            expert_intermediate: expert_inter,
            moe_layers,
        }),
        activation_bytes: act_bytes,
        activation_dtype: act_name,
        fp8_compute: quant.fp8_compute,
        tied_embeddings: tied,
        tp,
        ep,
        groups,
        notes,
    };
    Ok(shape)
}

/// One tensor of one layer before grouping.
struct Tensor {
    name: &'static str,
    module: String,
    k: u64,
    n: u64,
    bias: bool,
    per_layer: u64,
    quantizable: bool,
    /// The format the checkpoint stores it in whatever the quantisation (fp32 mixing weights, int64
    /// lookup tables).
    fixed: Option<WeightFormat>,
    /// Bytes per bias element when not the activation dtype's (the fp32 router correction biases).
    bias_bytes: Option<u64>,
    reads: Reads,
    split: RankSplit,
}

impl Tensor {
    /// Never quantised (norms, routers, sinks, projections a checkpoint keeps in its dtype).
    fn kept(mut self) -> Tensor {
        self.quantizable = false;
        self
    }

    /// Stored in `format` whatever the quantisation (fp32 mixing weights and norms, int64 tables).
    fn stored_as(mut self, format: WeightFormat) -> Tensor {
        self.quantizable = false;
        self.fixed = Some(format);
        self
    }

    /// `n` of them in each layer.
    fn times(mut self, n: u64) -> Tensor {
        self.per_layer = n;
        self
    }
}

/// One linear of one layer, read every step and quantised with the others; callers change what differs.
fn lin(name: &'static str, module: String, k: u64, n: u64, bias: bool, split: RankSplit) -> Tensor {
    Tensor {
        name,
        module,
        k,
        n,
        bias,
        per_layer: 1,
        quantizable: true,
        fixed: None,
        bias_bytes: None,
        reads: Reads::EveryStep,
        split,
    }
}
