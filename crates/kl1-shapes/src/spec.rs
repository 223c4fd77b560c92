//! The model spec: dimensions, parallelism, quantisation, dtypes and GPU of one deployment, loaded from TOML
//! and validated once, so that every estimate can take a [`Spec`] and not fail.
//!
//! The file format is documented in `specs/deepseek-v4.1-flash-exl3-2xgb10.toml`, the built-in default.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::Error;
use crate::exl3::{Bits, MAX_DIM, Shape, Split};
use model_shapes::citation::{Cited, Sources};
use model_shapes::{Citation, Gpu, GpuTable};

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
        include_str!("../specs/deepseek-v4.1-flash-exl3-2xgb10.toml"),
    ),
    (
        "deepseek-v4-flash-exl3-2xgb10",
        include_str!("../specs/deepseek-v4-flash-exl3-2xgb10.toml"),
    ),
];

/// How routed experts are divided among ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpertSplit {
    /// Each expert's intermediate dimension is divided in 128-channel units (exllamav3 `-tp_moe_ts`): every
    /// rank holds a slice of every expert (gate/up by columns, down by rows).
    Tensor,
    /// Whole experts are divided: each rank holds `routed_experts / ranks` complete experts.
    Whole,
}

/// Storage type of an unquantised tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    /// 4 bytes.
    Fp32,
    /// 2 bytes.
    Fp16,
    /// 2 bytes.
    Bf16,
    /// 1 byte.
    Fp8,
}

impl Dtype {
    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            Dtype::Fp32 => 4,
            Dtype::Fp16 | Dtype::Bf16 => 2,
            Dtype::Fp8 => 1,
        }
    }
}

/// Model dimensions (checkpoint config names in parentheses).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Model {
    /// Residual width (`hidden_size`).
    pub hidden: u64,
    /// Layers with a routed-expert MoE (`num_hidden_layers` less dense layers).
    pub moe_layers: u64,
    /// Routed experts per layer (`n_routed_experts`).
    pub routed_experts: u64,
    /// Routed experts each row picks (`num_experts_per_tok`).
    pub top_k: u64,
    /// One expert's intermediate width (`moe_intermediate_size`).
    pub expert_intermediate: u64,
    /// Shared experts per layer (`n_shared_experts`); the shared MLP is `expert_intermediate ×` this wide.
    pub shared_experts: u64,
    /// Query low-rank width (`q_lora_rank`).
    pub q_lora_rank: u64,
    /// Attention heads (`num_attention_heads`).
    pub heads: u64,
    /// Width of one head, also of the single shared KV head (`head_dim`).
    pub head_dim: u64,
    /// Output projection groups (`o_groups`).
    pub o_groups: u64,
    /// Output low-rank width per group (`o_lora_rank`).
    pub o_lora_rank: u64,
    /// Vocabulary (`vocab_size`).
    pub vocab: u64,
    /// mHC residual streams (`hc_mult`).
    pub mhc_expansion: u64,
}

/// How the model is divided among GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Parallelism {
    /// Tensor-parallel ranks, one GPU each.
    pub ranks: u64,
    /// How routed experts are divided.
    pub expert_split: ExpertSplit,
}

/// Routed experts' bit widths: how many experts are stored at each K.
///
/// Every expert's gate, up and down share one K. Entries are in ascending K, each K once, and the counts add
/// up to the model's routed experts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KMix {
    entries: Vec<(Bits, u64)>,
}

impl KMix {
    /// (K, experts at that K), ascending K.
    pub fn entries(&self) -> &[(Bits, u64)] {
        &self.entries
    }

    /// Experts counted: equals the model's routed experts.
    pub fn experts(&self) -> u64 {
        self.entries.iter().map(|&(_, n)| n).sum()
    }

    /// Mean K over experts: Σ n_K·K / Σ n_K.
    pub fn mean_k(&self) -> f64 {
        let weighted: u64 = self
            .entries
            .iter()
            .map(|&(k, n)| u64::from(k.get()) * n)
            .sum();
        weighted as f64 / self.experts() as f64
    }
}

/// Bit widths of the EXL3 tensors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quant {
    /// `attn.wq_a`. Equal to `wkv`: the two share one launch, and one launch has one K.
    pub wq_a: Bits,
    /// `attn.wkv`.
    pub wkv: Bits,
    /// `attn.wq_b`.
    pub wq_b: Bits,
    /// `attn.wo_a` (every group slice).
    pub wo_a: Bits,
    /// `attn.wo_b`.
    pub wo_b: Bits,
    /// The LM head (`head`).
    pub lm_head: Bits,
    /// The shared expert's gate, up and down.
    pub shared_expert: Bits,
    /// The routed experts.
    pub routed_experts: KMix,
}

/// Storage types of the unquantised tensors estimates count.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Dtypes {
    /// Router weight (`ffn.gate`, experts × hidden).
    pub router: Dtype,
    /// Router score-correction bias (`ffn.gate.bias`, one per expert).
    pub router_bias: Dtype,
    /// mHC mixing weights (`hc_attn_fn`, `hc_ffn_fn`).
    pub mhc: Dtype,
}

/// The shape of each EXL3 linear as one rank holds it, derived from the model and parallelism.
///
/// Attention follows exllamav3 `modules/dsv4.py:686-693` (only q_b, wo_a and wo_b are divided, by output
/// group); experts and the shared expert follow `block_sparse_mlp.py:1574-1586` and `mlp.py:775-803`; the LM
/// head is divided by vocabulary columns (docs/exl3-and-deepseek-v4.md §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RankShapes {
    /// `wq_a`: hidden × q_lora_rank, replicated.
    pub wq_a: Shape,
    /// `wkv`: hidden × head_dim, replicated.
    pub wkv: Shape,
    /// `wq_b`: q_lora_rank × (heads/ranks)·head_dim, column split.
    pub wq_b: Shape,
    /// One `wo_a` group slice: (heads·head_dim/o_groups) × o_lora_rank; a rank holds whole slices.
    pub wo_a: Shape,
    /// `wo_a` slices on one rank: o_groups / ranks.
    pub wo_a_slices: u64,
    /// `wo_b`: (o_groups/ranks)·o_lora_rank × hidden, row split.
    pub wo_b: Shape,
    /// A routed expert's gate (and, identically, up) projection.
    pub expert_gate_up: Shape,
    /// A routed expert's down projection.
    pub expert_down: Shape,
    /// The shared expert's gate (and up) projection; `None` without a shared expert.
    pub shared_gate_up: Option<Shape>,
    /// The shared expert's down projection.
    pub shared_down: Option<Shape>,
    /// The LM head: hidden × vocab/ranks, column split.
    pub lm_head: Shape,
}

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: String,
    description: String,
    references: BTreeMap<String, String>,
    model: RawModel,
    parallelism: RawParallelism,
    quant: RawQuant,
    dtypes: RawDtypes,
    hardware: RawHardware,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHardware {
    gpu: Cited<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    hidden: Cited<u64>,
    moe_layers: Cited<u64>,
    routed_experts: Cited<u64>,
    top_k: Cited<u64>,
    expert_intermediate: Cited<u64>,
    shared_experts: Cited<u64>,
    q_lora_rank: Cited<u64>,
    heads: Cited<u64>,
    head_dim: Cited<u64>,
    o_groups: Cited<u64>,
    o_lora_rank: Cited<u64>,
    vocab: Cited<u64>,
    mhc_expansion: Cited<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParallelism {
    ranks: Cited<u64>,
    expert_split: Cited<ExpertSplit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuant {
    wq_a: Cited<u64>,
    wkv: Cited<u64>,
    wq_b: Cited<u64>,
    wo_a: Cited<u64>,
    wo_b: Cited<u64>,
    lm_head: Cited<u64>,
    shared_expert: Cited<u64>,
    routed_experts: Cited<Vec<RawKCount>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKCount {
    k: u64,
    experts: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDtypes {
    router: Cited<Dtype>,
    router_bias: Cited<Dtype>,
    mhc: Cited<Dtype>,
}

/// Deserialises the spec (serde derive, unknown keys refused); errors name the field by its dotted path.
fn read(text: &str, origin: &str) -> Result<RawSpec, Error> {
    Ok(model_shapes::toml_doc::from_toml(text, origin)?)
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
        validate(read(text, origin)?, origin, gpus)
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

/// Records provenance as values are taken out of the raw file.
struct Taker<'a> {
    sources: Sources<'a>,
    provenance: BTreeMap<String, Citation>,
}

impl Taker<'_> {
    fn take<T>(&mut self, field: &str, cited: Cited<T>) -> Result<T, Error> {
        let p = self.sources.resolve(field, &cited)?;
        self.provenance.insert(field.to_string(), p);
        Ok(cited.value)
    }

    fn invalid(&self, field: &str, reason: impl Into<String>) -> Error {
        invalid(&self.sources, field, reason)
    }

    /// A count or dimension in `min..=MAX_DIM`.
    fn bounded(&mut self, field: &str, cited: Cited<u64>, min: u64) -> Result<u64, Error> {
        let v = self.take(field, cited)?;
        if v < min {
            return Err(self.invalid(field, format!("{v} is below the minimum {min}")));
        }
        if v > MAX_DIM {
            return Err(self.invalid(field, format!("{v} exceeds {MAX_DIM}")));
        }
        Ok(v)
    }

    /// A matrix dimension: positive, a multiple of the 16-wide EXL3 tile.
    fn dim(&mut self, field: &str, cited: Cited<u64>) -> Result<u64, Error> {
        let v = self.bounded(field, cited, 1)?;
        if !v.is_multiple_of(crate::exl3::TILE) {
            return Err(self.invalid(
                field,
                format!("{v} is not a multiple of 16: EXL3 stores 16×16 tiles"),
            ));
        }
        Ok(v)
    }

    fn bits(&mut self, field: &str, cited: Cited<u64>) -> Result<Bits, Error> {
        let v = self.take(field, cited)?;
        Bits::new(v).map_err(|e| self.invalid(field, e.to_string()))
    }

    /// A product of two validated values, itself a dimension no larger than [`MAX_DIM`].
    fn product(&self, field: &str, what: &str, a: u64, b: u64) -> Result<u64, Error> {
        match a.checked_mul(b) {
            Some(p) if p <= MAX_DIM => Ok(p),
            _ => Err(self.invalid(field, format!("{what} = {a} × {b} exceeds {MAX_DIM}"))),
        }
    }

    fn divisible(&self, field: &str, value: u64, by: u64, why: &str) -> Result<(), Error> {
        if value.is_multiple_of(by) {
            Ok(())
        } else {
            Err(self.invalid(field, format!("{value} is not a multiple of {by}: {why}")))
        }
    }

    fn shape(&self, field: &str, result: Result<Shape, Error>) -> Result<Shape, Error> {
        result.map_err(|e| self.invalid(field, e.to_string()))
    }
}

fn validate(raw: RawSpec, origin: &str, gpus: &GpuTable) -> Result<Spec, Error> {
    let sources = Sources {
        origin,
        references: &raw.references,
    };
    sources.check_table()?;
    if raw.name.trim().is_empty() {
        return Err(invalid(&sources, "name", "empty name"));
    }
    let mut t = Taker {
        sources,
        provenance: BTreeMap::new(),
    };

    let ranks = t.take("parallelism.ranks", raw.parallelism.ranks)?;
    if !(1..=MAX_RANKS).contains(&ranks) {
        return Err(t.invalid(
            "parallelism.ranks",
            format!("{ranks} is outside 1..={MAX_RANKS}"),
        ));
    }
    let expert_split = t.take("parallelism.expert_split", raw.parallelism.expert_split)?;
    let unit = SPLIT_UNIT * ranks;

    let m = raw.model;
    let hidden = t.dim("model.hidden", m.hidden)?;
    let moe_layers = t.bounded("model.moe_layers", m.moe_layers, 1)?;
    let routed_experts = t.bounded("model.routed_experts", m.routed_experts, 1)?;
    let top_k = t.bounded("model.top_k", m.top_k, 1)?;
    if top_k > routed_experts {
        return Err(t.invalid(
            "model.top_k",
            format!("{top_k} picks per row from {routed_experts} experts"),
        ));
    }
    let expert_intermediate = t.dim("model.expert_intermediate", m.expert_intermediate)?;
    let shared_experts = t.bounded("model.shared_experts", m.shared_experts, 0)?;
    let q_lora_rank = t.dim("model.q_lora_rank", m.q_lora_rank)?;
    let heads = t.bounded("model.heads", m.heads, 1)?;
    let head_dim = t.dim("model.head_dim", m.head_dim)?;
    let o_groups = t.bounded("model.o_groups", m.o_groups, 1)?;
    let o_lora_rank = t.dim("model.o_lora_rank", m.o_lora_rank)?;
    let vocab = t.dim("model.vocab", m.vocab)?;
    let mhc_expansion = t.take("model.mhc_expansion", m.mhc_expansion)?;
    if !(1..=MAX_MHC_EXPANSION).contains(&mhc_expansion) {
        return Err(t.invalid(
            "model.mhc_expansion",
            format!("{mhc_expansion} is outside 1..={MAX_MHC_EXPANSION}"),
        ));
    }

    // Attention is divided by output group (dsv4.py:686-693): groups must divide among ranks, heads among
    // groups.
    t.divisible(
        "model.o_groups",
        o_groups,
        ranks,
        "wq_b, wo_a and wo_b are divided among ranks by output group",
    )?;
    t.divisible(
        "model.heads",
        heads,
        o_groups,
        "each output group owns a whole number of heads",
    )?;
    let q_width = t.product("model.heads", "heads × head_dim", heads, head_dim)?;
    let o_width = t.product(
        "model.o_lora_rank",
        "o_groups × o_lora_rank",
        o_groups,
        o_lora_rank,
    )?;
    t.divisible(
        "model.vocab",
        vocab,
        unit,
        "the LM head is divided among ranks in 128-column units",
    )?;
    match expert_split {
        ExpertSplit::Tensor => t.divisible(
            "model.expert_intermediate",
            expert_intermediate,
            unit,
            "a tensor split divides each expert among ranks in 128-column units",
        )?,
        ExpertSplit::Whole => t.divisible(
            "model.routed_experts",
            routed_experts,
            ranks,
            "a whole-expert split gives each rank the same number of experts",
        )?,
    }
    let shared_width = if shared_experts == 0 {
        None
    } else {
        let w = t.product(
            "model.shared_experts",
            "shared_experts × expert_intermediate",
            shared_experts,
            expert_intermediate,
        )?;
        t.divisible(
            "model.shared_experts",
            w,
            unit,
            "the shared expert (shared_experts × expert_intermediate wide) is divided among ranks in \
             128-column units",
        )?;
        Some(w)
    };

    let shapes = {
        let s = |field: &str, k, n, split| {
            t.shape(
                field,
                Shape::new(k, n).and_then(|sh| sh.split(split, ranks)),
            )
        };
        let expert_split_cols = match expert_split {
            ExpertSplit::Tensor => Split::Columns,
            ExpertSplit::Whole => Split::Replicated,
        };
        let expert_split_rows = match expert_split {
            ExpertSplit::Tensor => Split::Rows,
            ExpertSplit::Whole => Split::Replicated,
        };
        RankShapes {
            wq_a: s("model.q_lora_rank", hidden, q_lora_rank, Split::Replicated)?,
            wkv: s("model.head_dim", hidden, head_dim, Split::Replicated)?,
            wq_b: s("model.heads", q_lora_rank, q_width, Split::Columns)?,
            wo_a: s(
                "model.o_groups",
                q_width / o_groups,
                o_lora_rank,
                Split::Replicated,
            )?,
            wo_a_slices: o_groups / ranks,
            wo_b: s("model.o_lora_rank", o_width, hidden, Split::Rows)?,
            expert_gate_up: s(
                "model.expert_intermediate",
                hidden,
                expert_intermediate,
                expert_split_cols,
            )?,
            expert_down: s(
                "model.expert_intermediate",
                expert_intermediate,
                hidden,
                expert_split_rows,
            )?,
            shared_gate_up: shared_width
                .map(|w| s("model.shared_experts", hidden, w, Split::Columns))
                .transpose()?,
            shared_down: shared_width
                .map(|w| s("model.shared_experts", w, hidden, Split::Rows))
                .transpose()?,
            lm_head: s("model.vocab", hidden, vocab, Split::Columns)?,
        }
    };

    let q = raw.quant;
    let wq_a = t.bits("quant.wq_a", q.wq_a)?;
    let wkv = t.bits("quant.wkv", q.wkv)?;
    if wkv != wq_a {
        return Err(t.invalid(
            "quant.wkv",
            format!(
                "{wkv} differs from quant.wq_a {wq_a}: the two are read by one launch, and one EXL3 launch \
                 has one K"
            ),
        ));
    }
    let wq_b = t.bits("quant.wq_b", q.wq_b)?;
    let wo_a = t.bits("quant.wo_a", q.wo_a)?;
    let wo_b = t.bits("quant.wo_b", q.wo_b)?;
    let lm_head = t.bits("quant.lm_head", q.lm_head)?;
    let shared_expert = t.bits("quant.shared_expert", q.shared_expert)?;
    let mix: Vec<(u64, u64)> = t
        .take("quant.routed_experts", q.routed_experts)?
        .into_iter()
        .map(|e| (e.k, e.experts))
        .collect();
    let routed_mix = k_mix(&t.sources, &mix, routed_experts)?;

    let d = raw.dtypes;
    let dtypes = Dtypes {
        router: t.take("dtypes.router", d.router)?,
        router_bias: t.take("dtypes.router_bias", d.router_bias)?,
        mhc: t.take("dtypes.mhc", d.mhc)?,
    };

    let gpu_name = t.take("hardware.gpu", raw.hardware.gpu)?;
    let Some(gpu) = gpus.get(&gpu_name) else {
        let known: Vec<&str> = gpus.gpus().iter().map(|g| g.name.as_str()).collect();
        return Err(t.invalid(
            "hardware.gpu",
            format!(
                "`{gpu_name}` is not in the GPU table (known: {})",
                known.join(", ")
            ),
        ));
    };

    Ok(Spec {
        name: raw.name,
        description: raw.description,
        origin: origin.to_string(),
        model: Model {
            hidden,
            moe_layers,
            routed_experts,
            top_k,
            expert_intermediate,
            shared_experts,
            q_lora_rank,
            heads,
            head_dim,
            o_groups,
            o_lora_rank,
            vocab,
            mhc_expansion,
        },
        parallelism: Parallelism {
            ranks,
            expert_split,
        },
        quant: Quant {
            wq_a,
            wkv,
            wq_b,
            wo_a,
            wo_b,
            lm_head,
            shared_expert,
            routed_experts: routed_mix,
        },
        dtypes,
        gpu: gpu.clone(),
        shapes,
        provenance: t.provenance,
    })
}

/// Validates a K mix against the model's expert count.
fn k_mix(sources: &Sources<'_>, mix: &[(u64, u64)], routed_experts: u64) -> Result<KMix, Error> {
    const FIELD: &str = "quant.routed_experts";
    if mix.is_empty() {
        return Err(invalid(
            sources,
            FIELD,
            "no entries: give { k, experts } for each K used",
        ));
    }
    let mut seen = BTreeSet::new();
    let mut entries = Vec::with_capacity(mix.len());
    let mut total: u64 = 0;
    for (i, &(k, experts)) in mix.iter().enumerate() {
        let bits = Bits::new(k)
            .map_err(|e| invalid(sources, &format!("{FIELD}[{i}].k"), e.to_string()))?;
        if !seen.insert(bits) {
            return Err(invalid(
                sources,
                &format!("{FIELD}[{i}].k"),
                format!("{bits} listed twice: give each K once with its total"),
            ));
        }
        total = total.saturating_add(experts);
        entries.push((bits, experts));
    }
    if total != routed_experts {
        return Err(invalid(
            sources,
            FIELD,
            format!(
                "expert counts add up to {total}, but model.routed_experts is {routed_experts}"
            ),
        ));
    }
    entries.sort_by_key(|&(k, _)| k);
    Ok(KMix { entries })
}

/// An invalid-field error about `field` of the file `sources` describes.
fn invalid(sources: &Sources<'_>, field: &str, reason: impl Into<String>) -> Error {
    sources.invalid(field, reason).into()
}
