//! A [`ModelShape`] from a Hugging Face `config.json` (and its `quantization_config`, or a format given
//! by the caller).
//!
//! Every key of the config is either read, or on a list of keys known not to change any weight's shape or
//! bytes (token ids, rotary and normalisation constants, training knobs); any other key is an error that
//! names it, so a new architecture feature is never ignored silently. Every integer is within its
//! plausibility bound ([`bounds`]) and every product of them is checked where the table forms it, so no
//! count wraps; memory and work do not grow with the layer count where layers repeat.
//! `docs/formulas.md` §16 lists what each architecture contributes to the table.

mod attention;
pub mod bounds;
mod build;
mod deepseek_v4;
mod experts;
mod family;
mod fields;
mod layer;
mod layout;
mod minimax;
mod quant;
mod tensor;

use serde_json::Value;

use crate::Error;
use crate::weights::ModelShape;
use build::build;
use family::{IGNORED, PHI3_IGNORED, VISION_BESIDE, WRAPPERS, family_of};
use fields::Fields;
use quant::{Quant, quant_of};

pub use build::MAX_PARAMS;

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
    if family == family::Family::Phi3 {
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
