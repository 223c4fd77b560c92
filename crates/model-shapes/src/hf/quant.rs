//! The weight format: a config's `quantization_config` (fp8 per tensor or block, AWQ/GPTQ, mxfp4, ModelOpt,
//! compressed-tensors, EXL3), or a format the caller gives instead ([`QuantOverride`]), and which modules
//! stay unquantised ([`module_matches`]).

use serde_json::Value;

use super::RunOptions;
use super::bounds::WIDTH;
use super::fields::Fields;
use crate::Error;
use crate::weights::WeightFormat;

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

/// The config's quantisation: which format the quantised linears take, which modules are left alone.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Quant {
    pub(super) format: Option<WeightFormat>,
    /// Module patterns left unquantised (`modules_to_not_convert`, `ignored_layers`).
    pub(super) skip: Vec<String>,
    /// EXL3 LM head bits.
    pub(super) head: Option<WeightFormat>,
    pub(super) fp8_compute: bool,
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
                if !(h.is_finite() && (1.0..=8.0).contains(&h)) {
                    return Err(
                        q.invalid("head_bits", format!("{h}: EXL3 has 1..=8 bits per weight"))
                    );
                }
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
                    [o, i] if (1..=WIDTH.max).contains(o) && (1..=WIDTH.max).contains(i) => {
                        WeightFormat::Fp8Block {
                            block_out: *o,
                            block_in: *i,
                            scale_bytes: 4,
                        }
                    }
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
                    .filter(|g| (1..=WIDTH.max).contains(g))
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

/// The config's `quantization_config`, or the format given on the command line.
pub(super) fn quant_of(
    f: &mut Fields<'_>,
    run: &RunOptions,
    notes: &mut Vec<String>,
) -> Result<Quant, Error> {
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
