//! Which decoder layers slide, and (DeepSeek-V4) which compress their KV and which route by a token table:
//! from a list in the config (one entry per layer) or from a rule over the layer's number, never from a
//! table as long as the layer count.

use super::deepseek_v4::{HashRouted, read_v4_layers};
use super::family::Family;
use super::fields::Fields;
use crate::Error;

/// Which layers attend over a sliding window.
pub(super) enum Sliding {
    /// Every layer, or none.
    All(bool),
    /// As the config lists them.
    List(Vec<bool>),
    /// Layers from this number on (Qwen's `max_window_layers`).
    From(u64),
    /// Even layers (Gemma 2).
    Even,
    /// All but every p-th (Gemma 3's `sliding_window_pattern`; 0: all).
    AllButEvery(u64),
}

impl Sliding {
    pub(super) fn slides(&self, i: u64) -> bool {
        match self {
            Sliding::All(b) => *b,
            Sliding::List(l) => usize::try_from(i)
                .ok()
                .and_then(|i| l.get(i))
                .copied()
                .unwrap_or(false),
            Sliding::From(from) => i >= *from,
            Sliding::Even => i.is_multiple_of(2),
            Sliding::AllButEvery(p) => *p == 0 || !(i + 1).is_multiple_of(*p),
        }
    }
}

/// The layers' attention layout.
pub(super) struct Layout {
    /// The window's width, when some layer slides.
    pub(super) window: Option<u64>,
    pub(super) sliding: Sliding,
    /// DeepSeek-V4: each layer's compression ratio (as listed; empty for other families).
    pub(super) compress: Vec<Option<u64>>,
    /// DeepSeek-V4: which layers route by a token → experts table.
    pub(super) hash_routed: HashRouted,
}

impl Layout {
    pub(super) fn compress(&self, i: u64) -> Option<u64> {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.compress.get(i))
            .copied()
            .flatten()
    }
}

/// The sliding-window keys, and DeepSeek-V4's layer layout or any family's `layer_types`.
pub(super) fn read_layout(
    f: &mut Fields<'_>,
    family: Family,
    n_layers: u64,
    notes: &mut Vec<String>,
) -> Result<Layout, Error> {
    let window = f.u64_opt("sliding_window")?;
    let use_sliding = f.bool_opt("use_sliding_window")?;
    let max_window_layers = f.u64_opt("max_window_layers")?;
    // Newer Gemma 3 configs write the pattern as `_sliding_window_pattern` beside `layer_types`.
    let pattern = f.u64_opt("sliding_window_pattern")?;
    let pattern = pattern.or(f.u64_opt("_sliding_window_pattern")?);
    let mut compress = Vec::new();
    let mut hash_routed = HashRouted::First(0);
    let layer_types = if family == Family::DeepSeekV4 {
        let layout = read_v4_layers(f, n_layers, notes)?;
        compress = layout.compress;
        hash_routed = layout.hash_routed;
        None
    } else {
        f.strings_opt("layer_types")?
    };
    let sliding = if let Some(types) = &layer_types {
        if types.len() as u64 != n_layers {
            return Err(f.invalid(
                "layer_types",
                format!("{} entries for {n_layers} layers", types.len()),
            ));
        }
        let mut list = Vec::with_capacity(types.len());
        for t in types {
            list.push(match t.as_str() {
                "sliding_attention" => true,
                "full_attention" => false,
                other => {
                    return Err(f.invalid(
                        "layer_types",
                        format!("`{other}` is not understood (sliding_attention, full_attention)"),
                    ));
                }
            });
        }
        Sliding::List(list)
    } else {
        match family {
            Family::DeepSeekV4 => Sliding::All(true),
            // Phi-3's attention passes `config.sliding_window` to every layer (transformers' Phi3Attention).
            Family::Mistral | Family::Mixtral | Family::Phi3 => Sliding::All(window.is_some()),
            Family::Qwen2 | Family::Qwen3 | Family::Qwen2Moe | Family::Qwen3Moe
                if use_sliding == Some(true) && window.is_some() =>
            {
                Sliding::From(max_window_layers.unwrap_or(0))
            }
            Family::Gemma2 => Sliding::Even,
            Family::Gemma3 => {
                let p = pattern.ok_or_else(|| {
                    f.invalid("sliding_window_pattern", "missing (and no layer_types)")
                })?;
                Sliding::AllButEvery(p)
            }
            _ => Sliding::All(false),
        }
    };
    let some_slide = (0..n_layers).any(|i| sliding.slides(i));
    if some_slide && window.is_none() {
        return Err(f.invalid("sliding_window", "missing, but some layers slide"));
    }
    if some_slide && window == Some(0) {
        return Err(f.invalid(
            "sliding_window",
            "0: a window holds at least the query's own key",
        ));
    }
    Ok(Layout {
        window,
        sliding,
        compress,
        hash_routed,
    })
}
