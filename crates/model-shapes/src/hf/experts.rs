//! The routed experts: each family's keys for how many, how wide, how many a token picks, the shared
//! experts, and which layers are MoE (dense-first layers, every n-th, listed exceptions); DeepSeek-V4's
//! expert format.

use std::collections::BTreeSet;

use super::RunOptions;
use super::family::Family;
use super::fields::Fields;
use crate::Error;
use crate::weights::WeightFormat;

/// A model's experts (all zero for a dense model).
pub(super) struct Experts {
    pub(super) experts: u64,
    pub(super) top_k: u64,
    /// One routed expert's intermediate width.
    pub(super) expert_inter: u64,
    /// Shared experts.
    pub(super) shared: u64,
    /// The shared experts' total intermediate width.
    pub(super) shared_inter: u64,
    /// Layers before this one are dense.
    dense_first: u64,
    /// Every n-th layer is MoE.
    every: u64,
    /// Added to a layer's number before `every` divides it (Qwen counts from 1, DeepSeek from 0).
    offset: u64,
    /// Dense layers listed (`mlp_only_layers`).
    dense_listed: BTreeSet<u64>,
    /// DeepSeek-V4's routed experts' own format.
    pub(super) format: Option<WeightFormat>,
}

impl Experts {
    /// Whether layer `i`'s MLP is a mixture of experts: DeepSeek's when i % moe_layer_freq == 0 (after the
    /// dense-first layers); Qwen-MoE's when (i + 1) % decoder_sparse_step == 0, unless listed dense.
    pub(super) fn is_moe_layer(&self, i: u64) -> bool {
        self.experts > 0
            && i >= self.dense_first
            && (i + self.offset).is_multiple_of(self.every)
            && !self.dense_listed.contains(&i)
    }
}

/// The experts' keys of `family`, checked against each other and the parallel sizes; `intermediate` is
/// `intermediate_size` (the experts' width in Mixtral-like families).
pub(super) fn read_experts(
    f: &mut Fields<'_>,
    family: Family,
    intermediate: Option<u64>,
    run: &RunOptions,
    notes: &mut Vec<String>,
) -> Result<Experts, Error> {
    let (experts, top_k, expert_inter, shared, shared_inter, dense_first, every, dense_listed) =
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
                (e, k, i, 0, 0, 0, 1, BTreeSet::new())
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
                (e, k, i, s, si, 0, step, only.into_iter().collect())
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
                // Both are bounded (a count and a width), so their product is far inside u64.
                (e, k, i, s, s * i, first, every, BTreeSet::new())
            }
            _ => (0, 0, 0, 0, 0, 0, 1, BTreeSet::new()),
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
    let offset = u64::from(!matches!(
        family,
        Family::DeepSeek | Family::DeepSeekV4 | Family::Glm4Moe
    ));
    // Family-specific keys that set nothing beyond the above.
    if family == Family::Qwen2Moe {
        let _ = f.u64_opt("max_window_layers")?;
    }
    // DeepSeek-V4 stores its routed experts in fp4 beside the fp8 of the other linears.
    let format = match f.str_opt("expert_dtype")?.as_deref() {
        None => None,
        Some("fp4") => Some(WeightFormat::Mxfp4),
        Some(other) => {
            return Err(f.invalid(
                "expert_dtype",
                format!("`{other}` is not understood (fp4: E2M1 with one E8M0 scale per 32)"),
            ));
        }
    };
    let format = match (run.quant, format) {
        (Some(_), Some(_)) => {
            notes.push("expert_dtype replaced by the format given on the command line".to_string());
            None
        }
        (_, e) => e,
    };
    Ok(Experts {
        experts,
        top_k,
        expert_inter,
        shared,
        shared_inter,
        dense_first,
        every,
        offset,
        dense_listed,
        format,
    })
}
