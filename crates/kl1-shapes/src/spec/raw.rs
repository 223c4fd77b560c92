//! A spec file as written: serde-derived structs, every value with its provenance (`Cited`), unknown keys
//! refused; errors name the field by its dotted path.

use std::collections::BTreeMap;

use model_shapes::citation::Cited;
use serde::Deserialize;

use super::ExpertSplit;
use super::types::Dtype;
use crate::Error;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) references: BTreeMap<String, String>,
    pub(super) model: RawModel,
    pub(super) parallelism: RawParallelism,
    pub(super) quant: RawQuant,
    pub(super) dtypes: RawDtypes,
    pub(super) hardware: RawHardware,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHardware {
    pub(super) gpu: Cited<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    pub(super) hidden: Cited<u64>,
    pub(super) moe_layers: Cited<u64>,
    pub(super) routed_experts: Cited<u64>,
    pub(super) top_k: Cited<u64>,
    pub(super) expert_intermediate: Cited<u64>,
    pub(super) shared_experts: Cited<u64>,
    pub(super) q_lora_rank: Cited<u64>,
    pub(super) heads: Cited<u64>,
    pub(super) head_dim: Cited<u64>,
    pub(super) o_groups: Cited<u64>,
    pub(super) o_lora_rank: Cited<u64>,
    pub(super) vocab: Cited<u64>,
    pub(super) mhc_expansion: Cited<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawParallelism {
    pub(super) ranks: Cited<u64>,
    pub(super) expert_split: Cited<ExpertSplit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQuant {
    pub(super) wq_a: Cited<u64>,
    pub(super) wkv: Cited<u64>,
    pub(super) wq_b: Cited<u64>,
    pub(super) wo_a: Cited<u64>,
    pub(super) wo_b: Cited<u64>,
    pub(super) lm_head: Cited<u64>,
    pub(super) shared_expert: Cited<u64>,
    pub(super) routed_experts: Cited<Vec<RawKCount>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKCount {
    pub(super) k: u64,
    pub(super) experts: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDtypes {
    pub(super) router: Cited<Dtype>,
    pub(super) router_bias: Cited<Dtype>,
    pub(super) mhc: Cited<Dtype>,
}

/// Deserialises the spec (serde derive, unknown keys refused); errors name the field by its dotted path.
pub(super) fn read(text: &str, origin: &str) -> Result<RawSpec, Error> {
    Ok(model_shapes::toml_doc::from_toml(text, origin)?)
}
