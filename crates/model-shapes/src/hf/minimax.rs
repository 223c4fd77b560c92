//! MiniMax-M2 (`minimax_m2`): a Mixtral-like MoE whose own keys add per-layer q/k norms over all heads and
//! a routing bias, and name layers and modules this tool does not model or count.

use super::fields::Fields;
use crate::Error;

/// MiniMax-M2's options beyond a Mixtral-like MoE.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct MiniMax {
    /// Per-layer q/k norms over all heads (`use_qk_norm` with `qk_norm_type: per_layer`).
    pub(super) qk_norm: bool,
    /// The router's `e_score_correction_bias` (`use_routing_bias`).
    pub(super) routing_bias: bool,
}

/// MiniMax-M2's keys: every layer softmax attention (`attn_type_list` all 1; MiniMax-01's lightning
/// attention layers, 0, are not modelled), q/k norms per layer, the routing bias, no shared expert, and MTP
/// modules that are not counted.
pub(super) fn read_minimax(
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
