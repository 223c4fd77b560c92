//! Byte estimates over a validated [`Spec`]: what one rank's kernels read in weights.
//!
//! The bytes are the spec's weights table ([`Spec::model_shape`]) read once per kernel by
//! [`Spec::kl1_bytes`] into a [`Kl1Bytes`], so what `kl1-bandwidth` reports is what the table holds, not a
//! second formula over the spec's shapes. This module says which kernel reads which bytes and holds the
//! formulas over them (one MoE layer and its inverse, distinct experts, GB/s). Every count is of weight bytes on one rank; activations, KV cache and
//! outputs are not counted (at decode they are small beside the weights; `docs/formulas.md` says where that
//! stops holding). Each item states its formula and the assumption that could make it high or low.
//!
//! The reconstruct kernels' bytes ([`crate::reconstruct_bytes`]) are not here: they are the slice one launch
//! dequantises, read from its grid in the trace, not a weight of the model.

use crate::Error;
use crate::exl3::Bits;
use crate::spec::{ExpertSplit, Spec};
use model_shapes::{TensorGroup, uniform_distinct_experts};

/// Live rows per read of the shared expert: the decode MoE kernels take at most 8 rows per pass
/// (exllamav3 `MAX_BSZN = 8`, `block_sparse_mlp.py:20`; the m-row ladders cited in docs/exl3-and-deepseek-v4.md §3).
pub const SHARED_RUN_ROWS: u64 = 8;

/// The dense EXL3 launches of one layer at decode, in forward order.
pub const DECODE_DENSE_LAUNCHES: usize = 4;

/// One rank's weight bytes per KL1 kernel, read from the spec's weights table by [`Spec::kl1_bytes`].
///
/// Bytes are `f64`, as the table's; every one but the mean expert is a whole number, exact in `f64`
/// (below 2^53).
#[derive(Debug, Clone, PartialEq)]
pub struct Kl1Bytes {
    /// The four dense attention launches of one decode layer, in forward order (docs/exl3-and-deepseek-v4.md
    /// §2.8, §4.1):
    ///
    /// 1. `wq_a+wkv`: hidden × q_lora_rank and hidden × head_dim, replicated;
    /// 2. `wq_b`: q_lora_rank × (heads/ranks)·head_dim;
    /// 3. `wo_a`: o_groups/ranks slices of (heads·head_dim/o_groups) × o_lora_rank;
    /// 4. `wo_b`: (o_groups/ranks)·o_lora_rank × hidden.
    ///
    /// Each launch streams its weights once (m ≤ 8 rows). Counts only those matrices: on layers where the
    /// x-fan also carries compressor and indexer projections, or the q-fan the indexer's `wq_b`, the launch
    /// reads more (estimate low for those layers).
    pub dense: [DenseLaunch; DECODE_DENSE_LAUNCHES],
    /// The mean routed expert: Σ_K n_K·bytes(K) / Σ_K n_K over the spec's K mix, for gate|up and down
    /// separately.
    ///
    /// Assumes the experts a step reads have the bank's K distribution. If routing favours high-K experts the
    /// true mean is higher (estimate low), if it favours low-K experts lower (estimate high).
    pub expert: ExpertBytes,
    /// The shared expert: gate + up + down of the `shared_experts × expert_intermediate`-wide MLP, divided
    /// among ranks like a tensor-split expert (exllamav3 `mlp.py:775-803`), at the shared expert's K. Zero
    /// without a shared expert.
    pub shared_expert: f64,
    /// The LM head, hidden × vocab/ranks (column split) at the head's K:
    /// hidden·(vocab/ranks)·K/8 + 2·hidden + 2·vocab/ranks. DeepSeek-V4-Flash at K = 6, 2 ranks:
    /// 4096·64640·6/8 = 198,574,080 B of trellis.
    pub lm_head: f64,
    /// The LM head's K, which a trace's head kernel must carry.
    pub lm_head_bits: Bits,
    /// The router per layer: experts·hidden·size(router) + experts·size(router bias).
    ///
    /// Assumes every rank computes the full routing (router replicated, as in exllamav3, where the routing
    /// gate is an unquantised, undivided linear) and reads it once per launch. Hash-routed layers
    /// (DeepSeek-V4's first three) look experts up by token instead and read less (estimate high for those).
    pub router: f64,
    /// The mHC pre-norm weight per launch: (2 + h)·h rows of the mixing weight `fn`, each h·hidden wide, at
    /// the mHC dtype: (2 + h)·h · h·hidden · size(mhc), h = `mhc_expansion`.
    ///
    /// The (2 + h)·h rows are h pre weights, h post weights and h·h residual-mixing weights
    /// (`hyperconnections.py:51-56`; 24 × 4·hidden for h = 4). Counts `fn` only: the activations
    /// (h·hidden values per row) are small at decode and grow with rows (estimate low for many rows), and the
    /// 24 base + 3 scale values are negligible. Two launches per layer (attention and FFN sites) plus one for
    /// the head.
    pub mhc_prenorm: f64,
    /// One routed expert at each K, index K − 1.
    pub(crate) expert_by_k: [ExpertBytes; Bits::ALL.len()],
}

impl Kl1Bytes {
    /// One routed expert at `bits`: gate|up 2·(k·n·K/8 + 2k + 2n) with k = hidden, n = the rank's
    /// intermediate width (see [`Spec::expert_intermediate_per_rank`]); down the same with k and n swapped.
    ///
    /// Gate and up are column-split (each rank holds all of `suh`, 2·hidden, and its slice of `svh`), down
    /// row-split (its slice of `suh` and all of `svh`), docs/exl3-and-deepseek-v4.md §1. DeepSeek-V4-Flash at
    /// K = 4, 2-way tensor split: 3·4096·1024·4/8 + 2·(3·4096 + 3·1024) = 6,291,456 + 30,720 B.
    pub fn expert_at(&self, bits: Bits) -> ExpertBytes {
        self.expert_by_k[usize::from(bits.get()) - 1]
    }

    /// One layer's sparse-MoE weight bytes on one rank: `distinct_experts` mean routed experts, each read
    /// once, plus the shared expert once per run of 8 live rows: D·(gate|up + down)_mean + ceil(rows/8)·shared.
    ///
    /// Assumes each routed expert is read once however many of the rows pick it (true while an expert sees at
    /// most 8 rows, the kernels' row cap, docs/exl3-and-deepseek-v4.md §3); above that, reads repeat and the
    /// estimate is low.
    pub fn moe_layer_weight_bytes(&self, distinct_experts: f64, live_rows: u64) -> f64 {
        distinct_experts * self.expert.total() + shared_runs(live_rows) as f64 * self.shared_expert
    }

    /// How many mean routed experts one rank could have read in `span_us` at `gbps`, after the shared
    /// expert's runs: (gbps·10³·span_us − ceil(rows/8)·shared) / (gate|up + down)_mean. The inverse of
    /// [`Self::moe_layer_weight_bytes`]. Negative when the shared expert alone needs longer than the span.
    pub fn experts_readable(&self, gbps: f64, span_us: f64, live_rows: u64) -> Result<f64, Error> {
        if !(gbps.is_finite() && gbps >= 0.0 && span_us.is_finite() && span_us >= 0.0) {
            return Err(Error::Rate {
                bytes: gbps * 1e3 * span_us,
                duration_us: span_us,
                reason: format!(
                    "{gbps} GB/s over {span_us} µs: both must be finite and non-negative"
                ),
            });
        }
        let budget = gbps * 1e3 * span_us;
        let shared = shared_runs(live_rows) as f64 * self.shared_expert;
        Ok((budget - shared) / self.expert.total())
    }
}

/// One dense EXL3 launch of a decode layer.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseLaunch {
    /// `wq_a+wkv`, `wq_b`, `wo_a` or `wo_b`.
    pub name: &'static str,
    /// K of every matrix in the launch (one launch has one K; the kernel's template carries it).
    pub bits: Bits,
    /// The weights-table groups it reads: one layer's `rank_per_layer` tensors of each, as one rank holds
    /// them.
    pub groups: Vec<TensorGroup>,
}

impl DenseLaunch {
    /// Weight bytes the launch reads on one rank: Σ over its groups of rank_per_layer · (k·n·K/8 + 2k + 2n).
    pub fn bytes(&self) -> f64 {
        self.groups
            .iter()
            .map(|g| g.rank_per_layer as f64 * g.rank_tensor_bytes())
            .sum()
    }
}

/// Bytes of one routed expert on one rank, split as gate|up and down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExpertBytes {
    /// Gate and up projections.
    pub gate_up: f64,
    /// Down projection.
    pub down: f64,
}

impl ExpertBytes {
    /// Gate, up and down.
    pub fn total(self) -> f64 {
        self.gate_up + self.down
    }
}

/// Mean K of the routed experts: Σ_K n_K·K / Σ_K n_K (experts weighted equally; every expert has the same
/// shape, so this is also the mean over weights).
pub fn mean_routed_k(spec: &Spec) -> f64 {
    spec.quant().routed_experts.mean_k()
}

/// Reads of the shared expert in one layer with `live_rows` rows: ceil(rows / 8) (one read per run of up to
/// [`SHARED_RUN_ROWS`] rows); 0 rows read nothing.
///
/// Assumes no reuse from L2 between runs; the shared expert on one rank (~9 MB for DeepSeek-V4.1-Flash at
/// K = 4) is a third of GB10's 24 MB L2, so some reuse between back-to-back runs is possible (estimate high).
pub fn shared_runs(live_rows: u64) -> u64 {
    live_rows.div_ceil(SHARED_RUN_ROWS)
}

/// [`uniform_distinct_experts`] for the spec's model: routed experts and top-k, `rows` rows.
pub fn expected_distinct_experts(spec: &Spec, rows: u64) -> f64 {
    // A validated spec has 1 ≤ top_k ≤ routed_experts, so the formula always applies.
    uniform_distinct_experts(spec.model().routed_experts, spec.model().top_k, rows).unwrap_or(0.0)
}

/// Expected distinct experts one rank reads for `rows` rows: all of [`expected_distinct_experts`] under a
/// tensor split (every rank holds a slice of every expert), 1/ranks of it under a whole-expert split (each
/// expert is on one rank, and under uniform routing each is equally likely to be picked).
pub fn expected_distinct_experts_per_rank(spec: &Spec, rows: u64) -> f64 {
    let d = expected_distinct_experts(spec, rows);
    match spec.parallelism().expert_split {
        ExpertSplit::Tensor => d,
        ExpertSplit::Whole => d / spec.parallelism().ranks as f64,
    }
}

/// Achieved bandwidth in GB/s (10⁹ B/s): bytes / (duration_us · 10³).
///
/// Errors unless bytes is finite and non-negative and the duration finite and positive.
pub fn gbps(bytes: f64, duration_us: f64) -> Result<f64, Error> {
    if !(bytes.is_finite() && bytes >= 0.0) {
        return Err(Error::Rate {
            bytes,
            duration_us,
            reason: "bytes must be finite and non-negative".to_string(),
        });
    }
    if !(duration_us.is_finite() && duration_us > 0.0) {
        return Err(Error::Rate {
            bytes,
            duration_us,
            reason: "the duration must be finite and positive".to_string(),
        });
    }
    Ok(bytes / (duration_us * 1e3))
}
