//! The model spec: dimensions, parallelism, quantisation, dtypes and GPU of one deployment, loaded from TOML
//! and validated once, so that every estimate can take a [`Spec`] and not fail.
//!
//! The file format is documented in `specs/deepseek-v4.1-flash-exl3-2xgb10.toml`, the built-in default. What a
//! spec says is `types.rs`; the file as written `raw.rs`; the rules a file must keep `validate.rs`.

mod raw;
mod types;
mod validate;

use std::collections::BTreeMap;
use std::path::Path;

use crate::Error;
use model_shapes::citation::Sources;
use model_shapes::{Citation, Gpu, GpuTable};

pub use types::{Dtype, Dtypes, ExpertSplit, KMix, Model, Parallelism, Quant, RankShapes};
use validate::{invalid, k_mix, validate};

/// exllamav3 divides linears among ranks in 128-channel units (`modules/linear.py:645-656`,
/// `modules/block_sparse_mlp.py:1574-1586`).
pub const SPLIT_UNIT: u64 = 128;

/// The most ranks a spec may have; far above any deployment, low enough that no product overflows.
pub const MAX_RANKS: u64 = 1024;

/// The most mHC residual streams a spec may have (DeepSeek-V4 has 4), for the same reason.
pub const MAX_MHC_EXPANSION: u64 = 64;

/// The built-in specs: (name, TOML text). The first is the default.
pub const BUILTIN_SPECS: [(&str, &str); 2] = [
    (
        "deepseek-v4.1-flash-exl3-2xgb10",
        include_str!("../../specs/deepseek-v4.1-flash-exl3-2xgb10.toml"),
    ),
    (
        "deepseek-v4-flash-exl3-2xgb10",
        include_str!("../../specs/deepseek-v4-flash-exl3-2xgb10.toml"),
    ),
];

/// A validated spec. It can only be made by loading and validating TOML (or by the `with_` methods, which
/// validate again), so every estimate over it is defined.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    name: String,
    description: String,
    origin: String,
    model: Model,
    parallelism: Parallelism,
    quant: Quant,
    dtypes: Dtypes,
    gpu: Gpu,
    shapes: RankShapes,
    provenance: BTreeMap<String, Citation>,
}

impl Spec {
    /// The default spec: DeepSeek-V4.1-Flash, EXL3, tensor-parallel on two GB10s (the first of
    /// [`BUILTIN_SPECS`]).
    pub fn builtin() -> Spec {
        let (name, _) = BUILTIN_SPECS[0];
        // The embedded files are part of this crate and a test loads each; failing here is a build defect.
        #[allow(clippy::expect_used)] // an embedded, tested file: failing is a build defect
        Spec::builtin_named(name).expect("the default built-in spec is valid (tested)")
    }

    /// The built-in spec called `name` (see [`BUILTIN_SPECS`]), against the built-in GPU table.
    pub fn builtin_named(name: &str) -> Option<Spec> {
        let (_, text) = BUILTIN_SPECS.iter().find(|(n, _)| *n == name)?;
        let origin = format!("built-in spec {name}");
        #[allow(clippy::expect_used)] // embedded, tested files: failing is a build defect
        Some(
            Spec::from_toml_str(text, &origin)
                .expect("every built-in spec is valid against the built-in GPU table (tested)"),
        )
    }

    /// Loads and validates a spec from TOML text, naming its GPU from the built-in table. `origin` names the
    /// text in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Spec, Error> {
        Spec::from_toml_str_with_gpus(text, origin, &GpuTable::builtin())
    }

    /// Loads and validates a spec from TOML text, naming its GPU from `gpus`.
    pub fn from_toml_str_with_gpus(
        text: &str,
        origin: &str,
        gpus: &GpuTable,
    ) -> Result<Spec, Error> {
        validate(raw::read(text, origin)?, origin, gpus)
    }

    /// Loads and validates a spec file against the built-in GPU table.
    pub fn from_file(path: &Path) -> Result<Spec, Error> {
        Spec::from_file_with_gpus(path, &GpuTable::builtin())
    }

    /// Loads and validates a spec file against `gpus`.
    pub fn from_file_with_gpus(path: &Path, gpus: &GpuTable) -> Result<Spec, Error> {
        let text = tool_io::read_input_string(path, "model spec", tool_io::caps::CONFIG)?;
        Spec::from_toml_str_with_gpus(&text, &path.display().to_string(), gpus)
    }

    /// The spec's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What deployment it describes.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Where it was loaded from (a path, or `built-in spec <name>`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Model dimensions.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Ranks and expert split.
    pub fn parallelism(&self) -> &Parallelism {
        &self.parallelism
    }

    /// Bit widths.
    pub fn quant(&self) -> &Quant {
        &self.quant
    }

    /// Unquantised tensors' types.
    pub fn dtypes(&self) -> &Dtypes {
        &self.dtypes
    }

    /// The GPU each rank runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Per-rank linear shapes.
    pub fn rank_shapes(&self) -> &RankShapes {
        &self.shapes
    }

    /// A routed expert's intermediate width on one rank: `expert_intermediate / ranks` under a tensor split,
    /// all of it under a whole-expert split.
    pub fn expert_intermediate_per_rank(&self) -> u64 {
        self.shapes.expert_gate_up.n()
    }

    /// Where the value of `field` (a dotted path such as `model.hidden`) comes from.
    pub fn provenance(&self, field: &str) -> Option<&Citation> {
        self.provenance.get(field)
    }

    /// Every field with its provenance, in path order.
    pub fn provenances(&self) -> impl Iterator<Item = (&str, &Citation)> {
        self.provenance.iter().map(|(f, p)| (f.as_str(), p))
    }

    /// The fields whose values are assumptions, not citations.
    pub fn assumed_fields(&self) -> Vec<&str> {
        self.provenances()
            .filter(|(_, p)| p.is_assumed())
            .map(|(f, _)| f)
            .collect()
    }

    /// The same spec on another GPU (e.g. one from [`GpuTable::get`]), with the provenance of that choice
    /// recorded for `hardware.gpu`.
    pub fn with_gpu(&self, gpu: Gpu, provenance: Citation) -> Spec {
        let mut spec = self.clone();
        spec.gpu = gpu;
        spec.provenance
            .insert("hardware.gpu".to_string(), provenance);
        spec
    }

    /// The same spec with another routed-expert K mix: (K, experts at that K). The mix is validated like one
    /// loaded from a file, and its provenance recorded for `quant.routed_experts`.
    pub fn with_routed_k_mix(
        &self,
        mix: &[(u64, u64)],
        provenance: Citation,
    ) -> Result<Spec, Error> {
        let origin = format!("{} (K mix replaced by the caller)", self.origin);
        let empty = BTreeMap::new();
        let sources = Sources {
            origin: &origin,
            references: &empty,
        };
        let routed_experts = k_mix(&sources, mix, self.model.routed_experts)?;
        let said = match &provenance {
            Citation::Cited { source, at, .. } => {
                !source.trim().is_empty() && !at.trim().is_empty()
            }
            Citation::Assumed { reason } => !reason.trim().is_empty(),
        };
        if !said {
            return Err(invalid(
                &sources,
                "quant.routed_experts",
                "the provenance is empty: say where the mix comes from, or why it is assumed",
            ));
        }
        let mut spec = self.clone();
        spec.quant.routed_experts = routed_experts;
        spec.provenance
            .insert("quant.routed_experts".to_string(), provenance);
        Ok(spec)
    }
}
