//! The rules a spec file must keep, checked once as its values are taken out: every value cited or
//! assumed, dimensions whole EXL3 tiles that divide among the ranks, K in 1..=8, a K mix that adds up, the
//! GPU in the table; and the per-rank shapes derived from them.

use std::collections::{BTreeMap, BTreeSet};

use model_shapes::citation::{Cited, Sources};
use model_shapes::{Citation, GpuTable};

use super::raw::{RawModel, RawParallelism, RawQuant, RawSpec};
use super::types::{Dtypes, KMix, Model, Parallelism, Quant, RankShapes};
use super::{ExpertSplit, MAX_MHC_EXPANSION, MAX_RANKS, SPLIT_UNIT, Spec};
use crate::Error;
use crate::exl3::{Bits, MAX_DIM, Shape, Split};

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

pub(super) fn validate(raw: RawSpec, origin: &str, gpus: &GpuTable) -> Result<Spec, Error> {
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
    let parallelism = take_parallelism(&mut t, raw.parallelism)?;
    let model = take_model(&mut t, raw.model)?;
    let widths = check_split(&t, &model, &parallelism)?;
    let shapes = rank_shapes(&t, &model, &parallelism, &widths)?;
    let quant = take_quant(&mut t, raw.quant, model.routed_experts)?;
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
        model,
        parallelism,
        quant,
        dtypes,
        gpu: gpu.clone(),
        shapes,
        provenance: t.provenance,
    })
}

/// The ranks (in 1..=[`MAX_RANKS`]) and how experts are divided among them.
fn take_parallelism(t: &mut Taker<'_>, p: RawParallelism) -> Result<Parallelism, Error> {
    let ranks = t.take("parallelism.ranks", p.ranks)?;
    if !(1..=MAX_RANKS).contains(&ranks) {
        return Err(t.invalid(
            "parallelism.ranks",
            format!("{ranks} is outside 1..={MAX_RANKS}"),
        ));
    }
    let expert_split = t.take("parallelism.expert_split", p.expert_split)?;
    Ok(Parallelism {
        ranks,
        expert_split,
    })
}

/// The model's dimensions, each bounded (matrix dimensions whole tiles), top-k within the experts and the
/// mHC expansion within 1..=[`MAX_MHC_EXPANSION`].
fn take_model(t: &mut Taker<'_>, m: RawModel) -> Result<Model, Error> {
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
    Ok(Model {
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
    })
}

/// The widths the per-rank shapes are cut from, each checked to divide among the ranks.
struct SplitWidths {
    /// heads × head_dim.
    q_width: u64,
    /// o_groups × o_lora_rank.
    o_width: u64,
    /// shared_experts × expert_intermediate; `None` without shared experts.
    shared_width: Option<u64>,
}

/// Checks that what is divided among the ranks divides: output groups, heads among groups, the LM head and
/// the experts in 128-column units (or whole experts), the shared expert.
fn check_split(t: &Taker<'_>, m: &Model, p: &Parallelism) -> Result<SplitWidths, Error> {
    let ranks = p.ranks;
    let unit = SPLIT_UNIT * ranks;
    // Attention is divided by output group (dsv4.py:686-693): groups must divide among ranks, heads among
    // groups.
    t.divisible(
        "model.o_groups",
        m.o_groups,
        ranks,
        "wq_b, wo_a and wo_b are divided among ranks by output group",
    )?;
    t.divisible(
        "model.heads",
        m.heads,
        m.o_groups,
        "each output group owns a whole number of heads",
    )?;
    let q_width = t.product("model.heads", "heads × head_dim", m.heads, m.head_dim)?;
    let o_width = t.product(
        "model.o_lora_rank",
        "o_groups × o_lora_rank",
        m.o_groups,
        m.o_lora_rank,
    )?;
    t.divisible(
        "model.vocab",
        m.vocab,
        unit,
        "the LM head is divided among ranks in 128-column units",
    )?;
    match p.expert_split {
        ExpertSplit::Tensor => t.divisible(
            "model.expert_intermediate",
            m.expert_intermediate,
            unit,
            "a tensor split divides each expert among ranks in 128-column units",
        )?,
        ExpertSplit::Whole => t.divisible(
            "model.routed_experts",
            m.routed_experts,
            ranks,
            "a whole-expert split gives each rank the same number of experts",
        )?,
    }
    let shared_width = if m.shared_experts == 0 {
        None
    } else {
        let w = t.product(
            "model.shared_experts",
            "shared_experts × expert_intermediate",
            m.shared_experts,
            m.expert_intermediate,
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
    Ok(SplitWidths {
        q_width,
        o_width,
        shared_width,
    })
}

/// Each matrix's per-rank shape.
fn rank_shapes(
    t: &Taker<'_>,
    m: &Model,
    p: &Parallelism,
    w: &SplitWidths,
) -> Result<RankShapes, Error> {
    let ranks = p.ranks;
    let s = |field: &str, k, n, split| {
        t.shape(
            field,
            Shape::new(k, n).and_then(|sh| sh.split(split, ranks)),
        )
    };
    let expert_split_cols = match p.expert_split {
        ExpertSplit::Tensor => Split::Columns,
        ExpertSplit::Whole => Split::Replicated,
    };
    let expert_split_rows = match p.expert_split {
        ExpertSplit::Tensor => Split::Rows,
        ExpertSplit::Whole => Split::Replicated,
    };
    let hidden = m.hidden;
    Ok(RankShapes {
        wq_a: s(
            "model.q_lora_rank",
            hidden,
            m.q_lora_rank,
            Split::Replicated,
        )?,
        wkv: s("model.head_dim", hidden, m.head_dim, Split::Replicated)?,
        wq_b: s("model.heads", m.q_lora_rank, w.q_width, Split::Columns)?,
        wo_a: s(
            "model.o_groups",
            w.q_width / m.o_groups,
            m.o_lora_rank,
            Split::Replicated,
        )?,
        wo_a_slices: m.o_groups / ranks,
        wo_b: s("model.o_lora_rank", w.o_width, hidden, Split::Rows)?,
        expert_gate_up: s(
            "model.expert_intermediate",
            hidden,
            m.expert_intermediate,
            expert_split_cols,
        )?,
        expert_down: s(
            "model.expert_intermediate",
            m.expert_intermediate,
            hidden,
            expert_split_rows,
        )?,
        shared_gate_up: w
            .shared_width
            .map(|sw| s("model.shared_experts", hidden, sw, Split::Columns))
            .transpose()?,
        shared_down: w
            .shared_width
            .map(|sw| s("model.shared_experts", sw, hidden, Split::Rows))
            .transpose()?,
        lm_head: s("model.vocab", hidden, m.vocab, Split::Columns)?,
    })
}

/// Each matrix's K (wq_a and wkv one K: one launch reads both) and the routed experts' K mix.
fn take_quant(t: &mut Taker<'_>, q: RawQuant, routed_experts: u64) -> Result<Quant, Error> {
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
    Ok(Quant {
        wq_a,
        wkv,
        wq_b,
        wo_a,
        wo_b,
        lm_head,
        shared_expert,
        routed_experts: k_mix(&t.sources, &mix, routed_experts)?,
    })
}

/// Validates a K mix against the model's expert count.
pub(super) fn k_mix(
    sources: &Sources<'_>,
    mix: &[(u64, u64)],
    routed_experts: u64,
) -> Result<KMix, Error> {
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
pub(super) fn invalid(sources: &Sources<'_>, field: &str, reason: impl Into<String>) -> Error {
    sources.invalid(field, reason).into()
}
