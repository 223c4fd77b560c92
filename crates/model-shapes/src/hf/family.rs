//! The architectures understood: each `model_type`'s [`Family`], the multimodal wrappers whose language
//! model is read as one of them, Gemma 3's class defaults, and the keys every config may carry that set no
//! weight.

use serde_json::Value;

use super::fields::Fields;
use crate::Error;

/// Keys that change no weight shape or byte count, and why they may be skipped.
pub(super) const IGNORED: &[&str] = &[
    // Identity and bookkeeping.
    "_name_or_path",
    "architectures",
    "auto_map",
    "transformers_version",
    "unsloth_fixed",
    "id2label",
    "label2id",
    "tokenizer_class",
    "is_decoder",
    "use_bfloat16",
    "return_dict",
    "output_attentions",
    "output_hidden_states",
    "torchscript",
    // Token ids.
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    // Positions, rotary and normalisation constants: numbers the kernels use, not weights.
    "max_position_embeddings",
    "initial_context_length",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "rope_interleave",
    "use_mrope",
    "rope_local_base_freq",
    "partial_rotary_factor",
    "rms_norm_eps",
    "layer_norm_eps",
    "query_pre_attn_scalar",
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "swiglu_limit",
    // Activations, dropout, initialisation, cache policy.
    "hidden_act",
    "hidden_activation",
    "attention_dropout",
    "initializer_range",
    "use_cache",
    "cache_implementation",
    "pretraining_tp",
    // Routing policy (which experts, not how big they are) and training losses.
    "router_aux_loss_coef",
    "router_jitter_noise",
    "output_router_logits",
    "aux_loss_alpha",
    "seq_aux",
    "topk_method",
    "n_group",
    "topk_group",
    "routed_scaling_factor",
    "scoring_func",
    "norm_topk_prob",
    "ep_size",
];

/// The `model_type`s understood, as the error for another one lists them.
const KNOWN_TYPES: &str = "llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, deepseek_v32, deepseek_v4, gpt_oss, glm4_moe, minimax_m2, phi3; multimodal: gemma3, mistral3, qwen2_vl, qwen2_5_vl";

/// A multimodal model whose language model is its `text_config`: the wrapper's own keys set the vision
/// side, which is not counted, or nothing.
pub(super) struct Wrapper {
    pub(super) model_type: &'static str,
    /// The `text_config.model_type`s it holds; the first is taken when the key is absent.
    pub(super) text_types: &'static [&'static str],
    /// Wrapper keys that set no weight: token ids, image token counts.
    pub(super) ignored: &'static [&'static str],
    /// Wrapper keys that shape the vision projector, named in the note that it is not counted.
    pub(super) vision_keys: &'static [&'static str],
}

pub(super) const WRAPPERS: &[Wrapper] = &[
    // Gemma 3 (4B and larger): SigLIP encoder, a fixed projector (mm_input_projection, soft-embedding norm).
    Wrapper {
        model_type: "gemma3",
        text_types: &["gemma3_text"],
        ignored: &[
            "boi_token_index",
            "eoi_token_index",
            "image_token_index",
            "mm_tokens_per_image",
        ],
        vision_keys: &[],
    },
    // Mistral Small 3.1 and later: Pixtral encoder, a patch merger and a two-layer projector.
    Wrapper {
        model_type: "mistral3",
        text_types: &["mistral"],
        ignored: &["image_token_index"],
        vision_keys: &[
            "multimodal_projector_bias",
            "projector_hidden_act",
            "spatial_merge_size",
            "vision_feature_layer",
        ],
    },
];

/// Phi-3's keys that set no weight: dropouts (`embd_pdrop`, `resid_pdrop`) and rotary constants
/// (`original_max_position_embeddings`, the LongRoPE base length; `interpolate_factor`, Phi-4-mini's position
/// interpolation, which transformers' Phi3 does not read).
pub(super) const PHI3_IGNORED: &[&str] = &[
    "embd_pdrop",
    "resid_pdrop",
    "original_max_position_embeddings",
    "interpolate_factor",
];

/// Multimodal models whose language model's keys sit at the top level beside a `vision_config`, with their
/// keys that set no language-model weight.
pub(super) const VISION_BESIDE: &[(&str, &[&str])] =
    &[("qwen2_vl", QWEN_VL_TOKENS), ("qwen2_5_vl", QWEN_VL_TOKENS)];

const QWEN_VL_TOKENS: &[&str] = &[
    "image_token_id",
    "video_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    "vision_token_id",
];

/// Gemma3TextConfig's defaults for the keys that shape weights: Gemma 3's multimodal configs give only
/// what differs from them, and transformers fills the rest from the class, as this does (with a note).
const GEMMA3_TEXT_DEFAULTS: &[(&str, u64)] = &[
    ("vocab_size", 262_208),
    ("hidden_size", 2304),
    ("intermediate_size", 9216),
    ("num_hidden_layers", 26),
    ("num_attention_heads", 8),
    ("num_key_value_heads", 4),
    ("head_dim", 256),
    ("sliding_window", 4096),
    ("sliding_window_pattern", 6),
];

/// The model family, from `model_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    Llama,
    Mistral,
    Qwen2,
    Qwen3,
    Gemma,
    Gemma2,
    Gemma3,
    Mixtral,
    Qwen2Moe,
    Qwen3Moe,
    DeepSeek,
    DeepSeekV4,
    GptOss,
    Glm4Moe,
    MiniMaxM2,
    Phi3,
}

impl Family {
    fn of(model_type: &str) -> Option<Family> {
        Some(match model_type {
            "llama" => Family::Llama,
            "mistral" => Family::Mistral,
            "qwen2" | "qwen2_vl" | "qwen2_5_vl" => Family::Qwen2,
            "qwen3" => Family::Qwen3,
            "gemma" => Family::Gemma,
            "gemma2" => Family::Gemma2,
            "gemma3_text" => Family::Gemma3,
            "mixtral" => Family::Mixtral,
            "qwen2_moe" => Family::Qwen2Moe,
            "qwen3_moe" => Family::Qwen3Moe,
            "deepseek_v2" | "deepseek_v3" | "kimi_k2" | "deepseek_v32" => Family::DeepSeek,
            "deepseek_v4" => Family::DeepSeekV4,
            "gpt_oss" => Family::GptOss,
            "glm4_moe" => Family::Glm4Moe,
            "minimax_m2" => Family::MiniMaxM2,
            "phi3" => Family::Phi3,
            _ => return None,
        })
    }
}

/// The model family of a `model_type`, or an error naming the key and the known types.
pub(super) fn family_of(f: &Fields<'_>, model_type: &str) -> Result<Family, Error> {
    Family::of(model_type).ok_or_else(|| {
        f.invalid(
            "model_type",
            format!("`{model_type}` is not understood (known: {KNOWN_TYPES})"),
        )
    })
}

/// Fills the shape keys a `gemma3_text` config leaves out from [`GEMMA3_TEXT_DEFAULTS`] (not the pattern
/// when the layers are listed by kind), with a note naming each one taken.
pub(super) fn take_gemma3_defaults(f: &mut Fields<'_>, notes: &mut Vec<String>) {
    let by_layer =
        f.map.contains_key("layer_types") || f.map.contains_key("_sliding_window_pattern");
    let mut taken = Vec::new();
    for &(key, value) in GEMMA3_TEXT_DEFAULTS {
        if f.map.contains_key(key) || (key == "sliding_window_pattern" && by_layer) {
            continue;
        }
        f.map.insert(key.to_string(), Value::from(value));
        taken.push(format!("{key} {value}"));
    }
    if !taken.is_empty() {
        notes.push(format!(
            "absent, Gemma3TextConfig's defaults taken as transformers takes them: {}",
            taken.join(", ")
        ));
    }
}
