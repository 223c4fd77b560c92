//! A [`ModelShape`] from a Hugging Face `config.json` (and its `quantization_config`, or a format given
//! by the caller).
//!
//! Every key of the config is either read, or on a list of keys known not to change any weight's shape or
//! bytes (token ids, rotary and normalisation constants, training knobs); any other key is an error that
//! names it, so a new architecture feature is never ignored silently. `docs/formulas.md` §16 lists what
//! each architecture contributes to the table.

use serde_json::{Map, Value};

use crate::Error;
use crate::weights::{
    Attention, LayerKind, MlaIndexer, ModelShape, Moe, RankSplit, Reads, SPARSE_COMPRESS_RATIO,
    TensorGroup, WeightFormat,
};

/// 64-bit integers: DeepSeek-V4's hash-router tables.
const INT64: WeightFormat = WeightFormat::Float {
    bytes: 8,
    name: "int64",
};

/// Keys that change no weight shape or byte count, and why they may be skipped.
const IGNORED: &[&str] = &[
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

/// A weight format chosen by the caller, replacing the config's `quantization_config`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QuantOverride {
    /// Every weight in the activation dtype (ignore `quantization_config`).
    None,
    /// Every quantisable linear (not the router, embedding or LM head) in this format.
    All(WeightFormat),
}

impl QuantOverride {
    /// Parses `bf16` / `none`, `fp8`, `fp8-block`, `awq`, `gptq`, `int4-g<N>`, `mxfp4`, `nvfp4`,
    /// `exl3:<bits>`.
    pub fn parse(text: &str) -> Result<QuantOverride, Error> {
        let bad = |reason: &str| Error::Invalid {
            origin: "quantisation".to_string(),
            field: text.to_string(),
            reason: reason.to_string(),
        };
        Ok(match text {
            "none" | "bf16" | "fp16" => QuantOverride::None,
            "fp8" => QuantOverride::All(WeightFormat::Fp8PerTensor),
            "fp8-block" => QuantOverride::All(WeightFormat::Fp8Block {
                block_out: 128,
                block_in: 128,
                scale_bytes: 4,
            }),
            "awq" | "gptq" => QuantOverride::All(WeightFormat::IntGroup {
                bits: 4,
                group: 128,
                zero_points: true,
            }),
            "mxfp4" => QuantOverride::All(WeightFormat::Mxfp4),
            "nvfp4" => QuantOverride::All(WeightFormat::Nvfp4),
            _ => {
                if let Some(g) = text.strip_prefix("int4-g") {
                    let group: u64 = g.parse().map_err(|_| bad("int4-g<N>: N is a group size"))?;
                    if group == 0 {
                        return Err(bad("a group size is positive"));
                    }
                    QuantOverride::All(WeightFormat::IntGroup {
                        bits: 4,
                        group,
                        zero_points: true,
                    })
                } else if let Some(b) = text.strip_prefix("exl3:") {
                    let bits: f64 = b.parse().map_err(|_| bad("exl3:<bits per weight>"))?;
                    if !(bits.is_finite() && (1.0..=8.0).contains(&bits)) {
                        return Err(bad("EXL3 has 1..=8 bits per weight"));
                    }
                    QuantOverride::All(WeightFormat::Exl3 { bits })
                } else {
                    return Err(bad(
                        "known formats: none, bf16, fp8, fp8-block, awq, gptq, int4-g<N>, mxfp4, nvfp4, exl3:<bits>",
                    ));
                }
            }
        })
    }
}

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

/// The keys of one JSON object, taken one by one; what is left at the end must be known-irrelevant.
struct Fields<'a> {
    map: Map<String, Value>,
    origin: &'a str,
    prefix: String,
}

impl<'a> Fields<'a> {
    fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    fn invalid(&self, key: &str, reason: impl Into<String>) -> Error {
        Error::Invalid {
            origin: self.origin.to_string(),
            field: self.path(key),
            reason: reason.into(),
        }
    }

    /// The value, `None` when absent or JSON null.
    fn opt(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    fn u64_opt(&mut self, key: &str) -> Result<Option<u64>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.invalid(key, format!("{v} is not a non-negative integer"))),
        }
    }

    fn u64(&mut self, key: &str) -> Result<u64, Error> {
        self.u64_opt(key)?
            .ok_or_else(|| self.invalid(key, "missing: needed for the weight shapes"))
    }

    fn positive(&mut self, key: &str) -> Result<u64, Error> {
        let v = self.u64(key)?;
        if v == 0 {
            return Err(self.invalid(key, "must be positive"));
        }
        Ok(v)
    }

    fn bool_opt(&mut self, key: &str) -> Result<Option<bool>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.invalid(key, format!("{v} is not true or false"))),
        }
    }

    fn f64_opt(&mut self, key: &str) -> Result<Option<f64>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.invalid(key, format!("{v} is not a number"))),
        }
    }

    fn str_opt(&mut self, key: &str) -> Result<Option<String>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.invalid(key, format!("{v} is not a string"))),
        }
    }

    fn strings_opt(&mut self, key: &str) -> Result<Option<Vec<String>>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s),
                    other => Err(self.invalid(key, format!("{other} is not a string"))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.invalid(key, format!("{v} is not a list of strings"))),
        }
    }

    fn u64s_opt(&mut self, key: &str) -> Result<Option<Vec<u64>>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|i| {
                    i.as_u64()
                        .ok_or_else(|| self.invalid(key, format!("{i} is not an integer")))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.invalid(key, format!("{v} is not a list of integers"))),
        }
    }

    fn object_opt(&mut self, key: &str) -> Result<Option<Fields<'a>>, Error> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Fields {
                map,
                origin: self.origin,
                prefix: self.path(key),
            })),
            Some(v) => Err(self.invalid(key, format!("{v} is not an object"))),
        }
    }

    /// Fails on the first key neither read nor in `ignored`.
    fn finish(self, ignored: &[&str]) -> Result<(), Error> {
        for key in self.map.keys() {
            if !ignored.contains(&key.as_str()) {
                return Err(self.invalid(
                    key,
                    "not understood: this tool does not know how it changes the weights, so it will not guess",
                ));
            }
        }
        Ok(())
    }
}

/// The `model_type`s understood, as the error for another one lists them.
const KNOWN_TYPES: &str = "llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, deepseek_v32, deepseek_v4, gpt_oss, glm4_moe, minimax_m2; multimodal: gemma3, mistral3, qwen2_vl, qwen2_5_vl";

/// A multimodal model whose language model is its `text_config`: the wrapper's own keys set the vision
/// side, which is not counted, or nothing.
struct Wrapper {
    model_type: &'static str,
    /// The `text_config.model_type`s it holds; the first is taken when the key is absent.
    text_types: &'static [&'static str],
    /// Wrapper keys that set no weight: token ids, image token counts.
    ignored: &'static [&'static str],
    /// Wrapper keys that shape the vision projector, named in the note that it is not counted.
    vision_keys: &'static [&'static str],
}

const WRAPPERS: &[Wrapper] = &[
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

/// Multimodal models whose language model's keys sit at the top level beside a `vision_config`, with their
/// keys that set no language-model weight.
const VISION_BESIDE: &[(&str, &[&str])] =
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
enum Family {
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
            _ => return None,
        })
    }
}

/// The config's quantisation: which format the quantised linears take, which modules are left alone.
#[derive(Debug, Clone, PartialEq)]
struct Quant {
    format: Option<WeightFormat>,
    /// Module patterns left unquantised (`modules_to_not_convert`, `ignored_layers`).
    skip: Vec<String>,
    /// EXL3 LM head bits.
    head: Option<WeightFormat>,
    fp8_compute: bool,
}

fn read_quant(q: &mut Fields<'_>) -> Result<Quant, Error> {
    let method = q
        .str_opt("quant_method")?
        .ok_or_else(|| q.invalid("quant_method", "missing"))?;
    let mut skip = Vec::new();
    for key in ["modules_to_not_convert", "ignored_layers"] {
        if let Some(list) = q.strings_opt(key)? {
            skip.extend(list);
        }
    }
    let mut head = None;
    let mut fp8_compute = false;
    let format = match method.as_str() {
        "fp8" => {
            fp8_compute = true;
            // `ue8m0`: power-of-two scales. DeepSeek-V4 stores them as E8M0 bytes; DeepSeek-V3.1 and V3.2
            // store them as fp32 `weight_scale_inv`, like V3's: the family decides (`build`).
            let scale_bytes = match q.str_opt("scale_fmt")?.as_deref() {
                None => 4,
                Some("ue8m0") => 1,
                Some(other) => {
                    return Err(q.invalid(
                        "scale_fmt",
                        format!("`{other}` is not understood (ue8m0, or absent for fp32 scales)"),
                    ));
                }
            };
            match q.u64s_opt("weight_block_size")? {
                None => WeightFormat::Fp8PerTensor,
                Some(b) if b.len() == 2 && b[0] > 0 && b[1] > 0 => WeightFormat::Fp8Block {
                    block_out: b[0],
                    block_in: b[1],
                    scale_bytes,
                },
                Some(b) => {
                    return Err(q.invalid(
                        "weight_block_size",
                        format!("{b:?}: expected [block_out, block_in], both positive"),
                    ));
                }
            }
        }
        "awq" | "gptq" => {
            let bits = q.u64("bits")?;
            let group = q.u64_opt("group_size")?.unwrap_or(128);
            if !(bits == 2 || bits == 3 || bits == 4 || bits == 8) {
                return Err(q.invalid("bits", format!("{bits}: expected 2, 3, 4 or 8")));
            }
            if group == 0 {
                return Err(q.invalid(
                    "group_size",
                    "must be positive (per-channel -1 is not supported)",
                ));
            }
            // AWQ stores zero points when zero_point is true (its default); GPTQ always stores qzeros.
            let zero_points = if method == "awq" {
                q.bool_opt("zero_point")?.unwrap_or(true)
            } else {
                let _ = q.bool_opt("sym")?;
                true
            };
            if q.bool_opt("lm_head")? == Some(true) {
                return Err(q.invalid("lm_head", "a quantised LM head is not supported"));
            }
            WeightFormat::IntGroup {
                bits,
                group,
                zero_points,
            }
        }
        "mxfp4" => WeightFormat::Mxfp4,
        "modelopt" => {
            if let Some(list) = q.strings_opt("exclude_modules")? {
                skip.extend(list);
            }
            let algo = q
                .str_opt("quant_algo")?
                .ok_or_else(|| q.invalid("quant_algo", "missing"))?;
            match algo.as_str() {
                "FP8" => {
                    fp8_compute = true;
                    WeightFormat::Fp8PerTensor
                }
                "NVFP4" => {
                    let _ = q.u64_opt("group_size")?;
                    WeightFormat::Nvfp4
                }
                other => {
                    return Err(q.invalid(
                        "quant_algo",
                        format!("`{other}` is not understood (FP8, NVFP4)"),
                    ));
                }
            }
        }
        "compressed-tensors" => {
            if let Some(list) = q.strings_opt("ignore")? {
                skip.extend(list);
            }
            let _ = q.str_opt("format")?;
            let groups = q
                .object_opt("config_groups")?
                .ok_or_else(|| q.invalid("config_groups", "missing"))?;
            let (format, fp8) = compressed_tensors(&groups)?;
            fp8_compute = fp8;
            format
        }
        "exl3" => {
            let bits = q
                .f64_opt("bits")?
                .ok_or_else(|| q.invalid("bits", "missing"))?;
            if !(bits.is_finite() && (1.0..=8.0).contains(&bits)) {
                return Err(q.invalid("bits", format!("{bits}: EXL3 has 1..=8 bits per weight")));
            }
            if let Some(h) = q.f64_opt("head_bits")? {
                head = Some(WeightFormat::Exl3 { bits: h });
            }
            WeightFormat::Exl3 { bits }
        }
        other => {
            return Err(q.invalid(
                "quant_method",
                format!("`{other}` is not understood (known: fp8, awq, gptq, mxfp4, exl3; or name the scheme explicitly)"),
            ));
        }
    };
    Ok(Quant {
        format: Some(format),
        skip,
        head,
        fp8_compute,
    })
}

/// The one weight scheme of a compressed-tensors `config_groups` (vLLM's llm-compressor checkpoints), and
/// whether activations are fp8 too. Several groups with different schemes are not supported.
fn compressed_tensors(groups: &Fields<'_>) -> Result<(WeightFormat, bool), Error> {
    let mut found = None;
    for (name, group) in &groups.map {
        if found.is_some() {
            return Err(groups.invalid(
                name,
                "more than one config group: mixed schemes are not supported (name one scheme explicitly)",
            ));
        }
        let w = group
            .get("weights")
            .filter(|v| !v.is_null())
            .ok_or_else(|| groups.invalid(&format!("{name}.weights"), "missing"))?;
        let at = |k: &str| format!("{name}.weights.{k}");
        let int = |k: &str| w.get(k).and_then(Value::as_u64);
        let text = |k: &str| w.get(k).and_then(Value::as_str).unwrap_or("");
        let bits = int("num_bits").ok_or_else(|| groups.invalid(&at("num_bits"), "missing"))?;
        let strategy = text("strategy");
        let format = match (text("type"), bits, strategy) {
            ("float", 8, "tensor") => WeightFormat::Fp8PerTensor,
            ("float", 8, "channel") => WeightFormat::Fp8PerChannel,
            ("float", 8, "block") => {
                let b: Vec<u64> = w
                    .get("block_structure")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_u64).collect())
                    .unwrap_or_default();
                match b.as_slice() {
                    [o, i] if *o > 0 && *i > 0 => WeightFormat::Fp8Block {
                        block_out: *o,
                        block_in: *i,
                        scale_bytes: 4,
                    },
                    _ => {
                        return Err(groups
                            .invalid(&at("block_structure"), "expected [block_out, block_in]"));
                    }
                }
            }
            ("float", 4, "tensor_group") if int("group_size") == Some(16) => WeightFormat::Nvfp4,
            ("int", 4 | 8, "group") => WeightFormat::IntGroup {
                bits,
                group: int("group_size")
                    .filter(|g| *g > 0)
                    .ok_or_else(|| groups.invalid(&at("group_size"), "missing"))?,
                zero_points: w.get("symmetric").and_then(Value::as_bool) == Some(false),
            },
            (t, b, st) => {
                return Err(groups.invalid(
                    &format!("{name}.weights"),
                    format!("type `{t}`, {b} bits, strategy `{st}` is not understood (fp8 tensor/channel/block, nvfp4, int4/int8 group)"),
                ));
            }
        };
        let fp8_acts = group
            .get("input_activations")
            .and_then(|a| a.get("num_bits"))
            .and_then(Value::as_u64)
            == Some(8)
            && format_is_fp8(&format);
        found = Some((format, fp8_acts));
    }
    found.ok_or_else(|| groups.invalid("", "no config group"))
}

fn format_is_fp8(f: &WeightFormat) -> bool {
    matches!(
        f,
        WeightFormat::Fp8PerTensor | WeightFormat::Fp8PerChannel | WeightFormat::Fp8Block { .. }
    )
}

/// Whether a module pattern (dot-separated, `*` matching one component) matches a contiguous run of the
/// module path's components: `self_attn` and `model.layers.*.self_attn` both match
/// `model.layers.3.self_attn.q_proj`.
pub fn module_matches(pattern: &str, module: &str) -> bool {
    let p: Vec<&str> = pattern.split('.').collect();
    let m: Vec<&str> = module.split('.').collect();
    if p.len() > m.len() {
        return false;
    }
    (0..=m.len() - p.len()).any(|start| {
        p.iter()
            .zip(&m[start..])
            .all(|(pc, mc)| *pc == "*" || pc == mc)
    })
}

/// DeepSeek-V4's attention and mHC widths beyond [`Attention::Hybrid`].
#[derive(Debug, Clone, Copy, Default)]
struct V4Dims {
    q_lora: u64,
    o_lora: u64,
    o_groups: u64,
    hc_mult: u64,
}

/// DeepSeek-V4's attention: one shared key/value head (`num_key_value_heads` must be 1), queries through a
/// low rank, grouped output projection, the lightning indexer's widths, and mHC's stream count.
fn read_v4_attention(
    f: &mut Fields<'_>,
    heads: u64,
    kv_heads: u64,
    tp: u64,
) -> Result<(Attention, V4Dims), Error> {
    if kv_heads != 1 {
        return Err(f.invalid(
            "num_key_value_heads",
            format!("{kv_heads}: DeepSeek-V4 attention has one key/value head shared by all"),
        ));
    }
    let head_dim = f.positive("head_dim")?;
    // The rotary part of head_dim sets no weight's shape.
    let _ = f.u64_opt("qk_rope_head_dim")?;
    let dims = V4Dims {
        q_lora: f.positive("q_lora_rank")?,
        o_lora: f.positive("o_lora_rank")?,
        o_groups: f.positive("o_groups")?,
        hc_mult: f.positive("hc_mult")?,
    };
    if !(heads * head_dim).is_multiple_of(dims.o_groups) {
        return Err(f.invalid(
            "o_groups",
            format!(
                "{} groups do not divide {heads} heads × {head_dim}",
                dims.o_groups
            ),
        ));
    }
    if !dims.o_groups.is_multiple_of(tp) {
        return Err(f.invalid(
            "o_groups",
            format!(
                "{} output groups do not divide among {tp} tensor-parallel ranks",
                dims.o_groups
            ),
        ));
    }
    // Sinkhorn iterations, its epsilon and the compressed layers' rotary base set no shape.
    for key in ["hc_sinkhorn_iters", "hc_eps", "compress_rope_theta"] {
        let _ = f.opt(key);
    }
    let attention = Attention::Hybrid {
        heads,
        head_dim,
        index_heads: f.positive("index_n_heads")?,
        index_dim: f.positive("index_head_dim")?,
        index_topk: f.positive("index_topk")?,
    };
    Ok((attention, dims))
}

/// DeepSeek-V4's per-layer layout.
struct V4Layers {
    /// The compression ratio of each decoder layer (None: the window alone).
    compress: Vec<Option<u64>>,
    /// Whether each layer routes by a token → experts table.
    hash_router: Vec<bool>,
}

/// DeepSeek-V4's layer kinds, from `compress_ratios` (one ratio per layer: 0 the window alone, 4 compressed
/// sparse attention, 128 heavily compressed; entries past the decoder layers belong to the MTP layers) or
/// from `layer_types` with `compress_rates` (the newer form), and the hash-routed layers from
/// `num_hash_layers` (the first n) or `mlp_layer_types`.
fn read_v4_layers(
    f: &mut Fields<'_>,
    n_layers: u64,
    notes: &mut Vec<String>,
) -> Result<V4Layers, Error> {
    let n = n_layers as usize;
    let ratios = f.u64s_opt("compress_ratios")?;
    let types = f.strings_opt("layer_types")?;
    let rates = match f.object_opt("compress_rates")? {
        Some(mut r) => {
            let csa = r.u64_opt("compressed_sparse_attention")?;
            let hca = r.u64_opt("heavily_compressed_attention")?;
            r.finish(&[])?;
            (csa, hca)
        }
        None => (None, None),
    };
    let compress = match (ratios, types) {
        (Some(_), Some(_)) => {
            return Err(f.invalid("layer_types", "given with compress_ratios: one layout only"));
        }
        (Some(r), None) => {
            if r.len() < n {
                return Err(f.invalid(
                    "compress_ratios",
                    format!("{} entries for {n_layers} layers", r.len()),
                ));
            }
            if r.len() > n {
                notes.push(format!(
                    "compress_ratios has {} entries past the {n_layers} decoder layers: the MTP / speculative layers', not counted",
                    r.len() - n
                ));
            }
            r[..n]
                .iter()
                .map(|&x| match x {
                    0 => Ok(None),
                    SPARSE_COMPRESS_RATIO | 128 => Ok(Some(x)),
                    other => Err(f.invalid(
                        "compress_ratios",
                        format!("ratio {other} is not understood (0, 4, 128)"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        (None, Some(t)) => {
            if t.len() != n {
                return Err(f.invalid(
                    "layer_types",
                    format!("{} entries for {n_layers} layers", t.len()),
                ));
            }
            let csa = rates.0.unwrap_or(SPARSE_COMPRESS_RATIO);
            if csa != SPARSE_COMPRESS_RATIO {
                return Err(f.invalid(
                    "compress_rates.compressed_sparse_attention",
                    format!("{csa}: the indexer's ratio is 4"),
                ));
            }
            let hca = rates.1.unwrap_or(128);
            if hca == 0 {
                return Err(f.invalid(
                    "compress_rates.heavily_compressed_attention",
                    "a ratio is positive",
                ));
            }
            t.iter()
                .map(|k| match k.as_str() {
                    "sliding_attention" => Ok(None),
                    "compressed_sparse_attention" => Ok(Some(csa)),
                    "heavily_compressed_attention" => Ok(Some(hca)),
                    other => Err(f.invalid(
                        "layer_types",
                        format!("`{other}` is not understood (sliding_attention, compressed_sparse_attention, heavily_compressed_attention)"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        (None, None) => {
            return Err(f.invalid(
                "compress_ratios",
                "missing (and no layer_types): each layer's compression",
            ));
        }
    };
    let hash_layers = f.u64_opt("num_hash_layers")?;
    let mlp_types = f.strings_opt("mlp_layer_types")?;
    let hash_router = match (hash_layers, mlp_types) {
        (Some(_), Some(_)) => {
            return Err(f.invalid(
                "mlp_layer_types",
                "given with num_hash_layers: one layout only",
            ));
        }
        (Some(h), None) => (0..n_layers).map(|i| i < h).collect(),
        (None, Some(t)) => {
            if t.len() != n {
                return Err(f.invalid(
                    "mlp_layer_types",
                    format!("{} entries for {n_layers} layers", t.len()),
                ));
            }
            t.iter()
                .map(|k| match k.as_str() {
                    "hash_moe" => Ok(true),
                    "moe" => Ok(false),
                    other => Err(f.invalid(
                        "mlp_layer_types",
                        format!("`{other}` is not understood (hash_moe, moe)"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        (None, None) => {
            return Err(f.invalid(
                "num_hash_layers",
                "missing (and no mlp_layer_types): which layers route by token",
            ));
        }
    };
    // DSpark: a speculative drafter over some layers' hidden states, in its own (mtp.*) layers.
    let dspark: Vec<String> = f
        .map
        .keys()
        .filter(|k| k.starts_with("dspark_"))
        .cloned()
        .collect();
    if !dspark.is_empty() {
        for k in &dspark {
            let _ = f.opt(k);
        }
        notes.push(format!(
            "{}: the DSpark speculative-decoding stages are not counted (they run only when drafting)",
            dspark.join(", ")
        ));
    }
    Ok(V4Layers {
        compress,
        hash_router,
    })
}

/// MiniMax-M2's options beyond a Mixtral-like MoE.
#[derive(Debug, Clone, Copy, Default)]
struct MiniMax {
    /// Per-layer q/k norms over all heads (`use_qk_norm` with `qk_norm_type: per_layer`).
    qk_norm: bool,
    /// The router's `e_score_correction_bias` (`use_routing_bias`).
    routing_bias: bool,
}

/// MiniMax-M2's keys: every layer softmax attention (`attn_type_list` all 1; MiniMax-01's lightning
/// attention layers, 0, are not modelled), q/k norms per layer, the routing bias, no shared expert, and MTP
/// modules that are not counted.
fn read_minimax(
    f: &mut Fields<'_>,
    n_layers: u64,
    notes: &mut Vec<String>,
) -> Result<MiniMax, Error> {
    if let Some(types) = f.u64s_opt("attn_type_list")? {
        if types.len() as u64 != n_layers {
            return Err(f.invalid(
                "attn_type_list",
                format!("{} entries for {n_layers} layers", types.len()),
            ));
        }
        if let Some(i) = types.iter().position(|&t| t != 1) {
            return Err(f.invalid(
                "attn_type_list",
                format!(
                    "layer {i} is type {}: only softmax attention (1) is modelled, not lightning attention",
                    types[i]
                ),
            ));
        }
    }
    let qk_norm = f.bool_opt("use_qk_norm")?.unwrap_or(false);
    if qk_norm {
        match f.str_opt("qk_norm_type")?.as_deref() {
            Some("per_layer") => {}
            other => {
                return Err(f.invalid(
                    "qk_norm_type",
                    format!("{other:?}: only per_layer (norms over all heads) is understood"),
                ));
            }
        }
    } else {
        let _ = f.str_opt("qk_norm_type")?;
    }
    if let Some(s) = f.u64_opt("shared_intermediate_size")?
        && s > 0
    {
        return Err(f.invalid(
            "shared_intermediate_size",
            format!("{s}: a shared expert is not modelled for minimax_m2"),
        ));
    }
    // Partial rotary embedding sets no shape.
    let _ = f.u64_opt("rotary_dim")?;
    let mut mtp = Vec::new();
    for key in ["use_mtp", "num_mtp_modules", "mtp_transformer_layers"] {
        if f.opt(key).is_some() {
            mtp.push(key);
        }
    }
    if !mtp.is_empty() {
        notes.push(format!(
            "{}: the multi-token-prediction modules are not counted (they run only for speculative decoding)",
            mtp.join(", ")
        ));
    }
    Ok(MiniMax {
        qk_norm,
        routing_bias: f.bool_opt("use_routing_bias")?.unwrap_or(false),
    })
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

/// The model family of a `model_type`, or an error naming the key and the known types.
fn family_of(f: &Fields<'_>, model_type: &str) -> Result<Family, Error> {
    Family::of(model_type).ok_or_else(|| {
        f.invalid(
            "model_type",
            format!("`{model_type}` is not understood (known: {KNOWN_TYPES})"),
        )
    })
}

/// The config's `quantization_config`, or the format given on the command line.
fn quant_of(f: &mut Fields<'_>, run: &RunOptions, notes: &mut Vec<String>) -> Result<Quant, Error> {
    // A format given on the command line replaces the config's, which is then not read at all (so a
    // quantisation scheme this tool does not know can still be overridden).
    if run.quant.is_some() && f.opt("quantization_config").is_some() {
        notes.push(
            "quantization_config replaced by the format given on the command line".to_string(),
        );
    }
    let quant_cfg = match f.object_opt("quantization_config")? {
        Some(mut q) => {
            let parsed = read_quant(&mut q)?;
            q.finish(&[
                "kv_cache_quant_algo",
                "producer",
                "kv_cache_scheme",
                "quantization_status",
                "global_compression_ratio",
                "sparsity_config",
                "transform_config",
                "activation_scheme",
                "fmt",
                "version",
                "desc_act",
                "damp_percent",
                "true_sequential",
                "static_groups",
                "model_name_or_path",
                "model_file_base_name",
                "checkpoint_format",
                "meta",
                "quantizer",
                "calibration",
                "out_scales",
                "backend",
                "modules_in_block_to_quantize",
                "exllama_config",
                "use_exllama",
                "use_cuda_fp16",
                "cache_block_outputs",
                "batch_size",
                "pad_token_id",
                "tokenizer",
                "dataset",
                "do_fuse",
                "fuse_max_seq_len",
                "module_name_preceding_first_linear",
                "bits",
                "group_size",
            ])?;
            Some(parsed)
        }
        None => None,
    };
    Ok(match run.quant {
        Some(QuantOverride::None) => Quant {
            format: None,
            skip: Vec::new(),
            head: None,
            fp8_compute: false,
        },
        Some(QuantOverride::All(format)) => {
            if quant_cfg.is_some() {
                notes.push(
                    "quantization_config replaced by the format given on the command line"
                        .to_string(),
                );
            }
            Quant {
                format: Some(format),
                skip: Vec::new(),
                head: None,
                fp8_compute: matches!(
                    format,
                    WeightFormat::Fp8PerTensor | WeightFormat::Fp8Block { .. }
                ),
            }
        }
        None => quant_cfg.unwrap_or(Quant {
            format: None,
            skip: Vec::new(),
            head: None,
            fp8_compute: false,
        }),
    })
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
    let mut indexer: Option<MlaIndexer> = None;
    let (attention, q_lora) = if family == Family::DeepSeekV4 {
        let (attention, dims) = read_v4_attention(&mut f, heads, kv_heads, run.tp)?;
        v4 = Some(dims);
        (attention, Some(dims.q_lora))
    } else if mla {
        let q_lora = f.u64_opt("q_lora_rank")?;
        if model_type == "deepseek_v32" {
            let heads = f.positive("index_n_heads")?;
            let dim = f.positive("index_head_dim")?;
            let topk = f.positive("index_topk")?;
            if q_lora.is_none() {
                return Err(f.invalid(
                    "q_lora_rank",
                    "missing: DeepSeek-V3.2's indexer takes its queries from the query low rank",
                ));
            }
            indexer = Some(MlaIndexer { heads, dim, topk });
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
            Family::Mistral | Family::Mixtral => sliding.fill(window.is_some()),
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
        let lin =
            |name: &'static str, module: String, k: u64, n: u64, bias: bool, split: RankSplit| {
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
            };
        let mut t = Vec::new();
        match attention {
            Attention::Gqa {
                heads,
                kv_heads,
                head_dim,
                ..
            } => {
                let qkv_bias =
                    attention_bias || family == Family::Qwen2 || family == Family::Qwen2Moe;
                t.push(lin(
                    "self_attn.q_proj",
                    at("self_attn.q_proj"),
                    hidden,
                    heads * head_dim,
                    qkv_bias,
                    RankSplit::Column,
                ));
                t.push(lin(
                    "self_attn.k_proj",
                    at("self_attn.k_proj"),
                    hidden,
                    kv_heads * head_dim,
                    qkv_bias,
                    RankSplit::Column,
                ));
                t.push(lin(
                    "self_attn.v_proj",
                    at("self_attn.v_proj"),
                    hidden,
                    kv_heads * head_dim,
                    qkv_bias,
                    RankSplit::Column,
                ));
                // GLM-4.5's attention_bias is on q, k and v only.
                t.push(lin(
                    "self_attn.o_proj",
                    at("self_attn.o_proj"),
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
                        let mut n = lin(name, at(name), 1, width, false, RankSplit::Replicated);
                        n.quantizable = false;
                        t.push(n);
                    }
                }
                if qk_norm {
                    let mut n = lin(
                        "self_attn.q_norm+k_norm",
                        at("self_attn.q_norm"),
                        1,
                        head_dim,
                        false,
                        RankSplit::Replicated,
                    );
                    n.per_layer = 2;
                    n.quantizable = false;
                    t.push(n);
                }
                if family == Family::GptOss {
                    let mut s = lin(
                        "self_attn.sinks",
                        at("self_attn.sinks"),
                        1,
                        heads,
                        false,
                        RankSplit::Column,
                    );
                    s.quantizable = false;
                    t.push(s);
                }
            }
            Attention::Mla {
                heads,
                kv_lora_rank,
                qk_nope_head_dim,
                qk_rope_head_dim,
                v_head_dim,
                ..
            } => {
                let q_head = qk_nope_head_dim + qk_rope_head_dim;
                match q_lora {
                    Some(r) => {
                        t.push(lin(
                            "self_attn.q_a_proj",
                            at("self_attn.q_a_proj"),
                            hidden,
                            r,
                            false,
                            RankSplit::Replicated,
                        ));
                        let mut n = lin(
                            "self_attn.q_a_layernorm",
                            at("self_attn.q_a_layernorm"),
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
                            at("self_attn.q_b_proj"),
                            r,
                            heads * q_head,
                            false,
                            RankSplit::Column,
                        ));
                    }
                    None => t.push(lin(
                        "self_attn.q_proj",
                        at("self_attn.q_proj"),
                        hidden,
                        heads * q_head,
                        false,
                        RankSplit::Column,
                    )),
                }
                t.push(lin(
                    "self_attn.kv_a_proj_with_mqa",
                    at("self_attn.kv_a_proj_with_mqa"),
                    hidden,
                    kv_lora_rank + qk_rope_head_dim,
                    false,
                    RankSplit::Replicated,
                ));
                let mut n = lin(
                    "self_attn.kv_a_layernorm",
                    at("self_attn.kv_a_layernorm"),
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
                    at("self_attn.kv_b_proj"),
                    kv_lora_rank,
                    heads * (qk_nope_head_dim + v_head_dim),
                    false,
                    RankSplit::Column,
                ));
                t.push(lin(
                    "self_attn.o_proj",
                    at("self_attn.o_proj"),
                    heads * v_head_dim,
                    hidden,
                    false,
                    RankSplit::Row,
                ));
                if let (
                    Some(MlaIndexer {
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
                        at("self_attn.indexer.wq_b"),
                        r,
                        index_heads * index_dim,
                        false,
                        RankSplit::Replicated,
                    ));
                    t.push(lin(
                        "self_attn.indexer.wk",
                        at("self_attn.indexer.wk"),
                        hidden,
                        index_dim,
                        false,
                        RankSplit::Replicated,
                    ));
                    let mut k_norm = lin(
                        "self_attn.indexer.k_norm",
                        at("self_attn.indexer.k_norm"),
                        1,
                        index_dim,
                        true,
                        RankSplit::Replicated,
                    );
                    k_norm.quantizable = false;
                    k_norm.fixed = Some(WeightFormat::FP32);
                    k_norm.bias_bytes = Some(4);
                    t.push(k_norm);
                    let mut w = lin(
                        "self_attn.indexer.weights_proj",
                        at("self_attn.indexer.weights_proj"),
                        hidden,
                        index_heads,
                        false,
                        RankSplit::Replicated,
                    );
                    w.quantizable = false;
                    t.push(w);
                }
            }
            Attention::Hybrid {
                heads,
                head_dim,
                index_heads,
                index_dim,
                ..
            } => {
                // A validated DeepSeek-V4 config has its dimensions in `v4`.
                let d = v4.unwrap_or_default();
                let vector = |name: &'static str, module: &str, width: u64, split: RankSplit| {
                    let mut v = lin(name, at(module), 1, width, false, split);
                    v.quantizable = false;
                    v
                };
                t.push(lin(
                    "attn.wq_a",
                    at("attn.wq_a"),
                    hidden,
                    d.q_lora,
                    false,
                    RankSplit::Replicated,
                ));
                t.push(vector(
                    "attn.q_norm",
                    "attn.q_norm",
                    d.q_lora,
                    RankSplit::Replicated,
                ));
                t.push(lin(
                    "attn.wq_b",
                    at("attn.wq_b"),
                    d.q_lora,
                    heads * head_dim,
                    false,
                    RankSplit::Column,
                ));
                t.push(lin(
                    "attn.wkv",
                    at("attn.wkv"),
                    hidden,
                    head_dim,
                    false,
                    RankSplit::Replicated,
                ));
                t.push(vector(
                    "attn.kv_norm",
                    "attn.kv_norm",
                    head_dim,
                    RankSplit::Replicated,
                ));
                let mut sink = vector("attn.attn_sink", "attn.attn_sink", heads, RankSplit::Column);
                sink.fixed = Some(WeightFormat::FP32);
                t.push(sink);
                // The o_groups grouped projections each map their heads' slice of the attention output
                // (heads·head_dim / G) to o_lora: written as one (heads·head_dim / G) × (G·o_lora) tensor,
                // the same parameters and bytes, and a column split hands each rank G / tp whole groups.
                t.push(lin(
                    "attn.wo_a",
                    at("attn.wo_a"),
                    heads * head_dim / d.o_groups,
                    d.o_groups * d.o_lora,
                    false,
                    RankSplit::Column,
                ));
                t.push(lin(
                    "attn.wo_b",
                    at("attn.wo_b"),
                    d.o_groups * d.o_lora,
                    hidden,
                    false,
                    RankSplit::Row,
                ));
                if let Some(ratio) = compress[i as usize] {
                    // The compressor pools `ratio` tokens into one entry; at the sparse ratio its
                    // windows overlap and it projects twice the width (the reference `Compressor`'s coff).
                    let coff = if ratio == SPARSE_COMPRESS_RATIO { 2 } else { 1 };
                    let mut kv_gate = lin(
                        "attn.compressor.wkv+wgate",
                        at("attn.compressor"),
                        hidden,
                        coff * head_dim,
                        false,
                        RankSplit::Replicated,
                    );
                    kv_gate.per_layer = 2;
                    kv_gate.quantizable = false;
                    t.push(kv_gate);
                    let mut ape = vector(
                        "attn.compressor.ape",
                        "attn.compressor.ape",
                        ratio * coff * head_dim,
                        RankSplit::Replicated,
                    );
                    ape.fixed = Some(WeightFormat::FP32);
                    t.push(ape);
                    t.push(vector(
                        "attn.compressor.norm",
                        "attn.compressor.norm",
                        head_dim,
                        RankSplit::Replicated,
                    ));
                    if ratio == SPARSE_COMPRESS_RATIO {
                        t.push(lin(
                            "attn.indexer.wq_b",
                            at("attn.indexer.wq_b"),
                            d.q_lora,
                            index_heads * index_dim,
                            false,
                            RankSplit::Replicated,
                        ));
                        let mut w = lin(
                            "attn.indexer.weights_proj",
                            at("attn.indexer.weights_proj"),
                            hidden,
                            index_heads,
                            false,
                            RankSplit::Replicated,
                        );
                        w.quantizable = false;
                        t.push(w);
                        let mut kv_gate = lin(
                            "attn.indexer.compressor.wkv+wgate",
                            at("attn.indexer.compressor"),
                            hidden,
                            2 * index_dim,
                            false,
                            RankSplit::Replicated,
                        );
                        kv_gate.per_layer = 2;
                        kv_gate.quantizable = false;
                        t.push(kv_gate);
                        let mut ape = vector(
                            "attn.indexer.compressor.ape",
                            "attn.indexer.compressor.ape",
                            SPARSE_COMPRESS_RATIO * 2 * index_dim,
                            RankSplit::Replicated,
                        );
                        ape.fixed = Some(WeightFormat::FP32);
                        t.push(ape);
                        t.push(vector(
                            "attn.indexer.compressor.norm",
                            "attn.indexer.compressor.norm",
                            index_dim,
                            RankSplit::Replicated,
                        ));
                    }
                }
            }
        }
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
            // mHC: per site (attention, FFN) the mixing weight `fn` of (2 + h)·h rows over h·hidden, and
            // its (2 + h)·h base and 3 scales, all fp32.
            let mix = (2 + d.hc_mult) * d.hc_mult;
            let mut fns = lin(
                "hc_attn_fn+hc_ffn_fn",
                at("hc_attn_fn"),
                d.hc_mult * hidden,
                mix,
                false,
                RankSplit::Replicated,
            );
            fns.per_layer = 2;
            fns.fixed = Some(WeightFormat::FP32);
            t.push(fns);
            let mut base = lin(
                "hc_*_base+hc_*_scale",
                at("hc_attn_base"),
                1,
                mix + 3,
                false,
                RankSplit::Replicated,
            );
            base.per_layer = 2;
            base.fixed = Some(WeightFormat::FP32);
            t.push(base);
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
                    let mut g = lin(
                        "mlp.shared_expert_gate",
                        at("mlp.shared_expert_gate"),
                        hidden,
                        1,
                        false,
                        RankSplit::Replicated,
                    );
                    g.quantizable = false;
                    t.push(g);
                }
            }
        } else {
            let inter = intermediate.ok_or_else(|| Error::Invalid {
                origin: origin.to_string(),
                field: "intermediate_size".to_string(),
                reason: "missing: needed for the dense MLP".to_string(),
            })?;
            t.push(lin(
                "mlp.gate_up_proj",
                at("mlp.gate_proj"),
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
    groups.push(whole(
        "lm_head",
        hidden,
        vocab,
        head_format,
        Reads::LogitRows,
        RankSplit::Column,
        vocab.div_ceil(tp),
    ));
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
