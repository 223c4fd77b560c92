//! kl1-shapes: the KL1 deployment (DeepSeek-V4.1-Flash in EXL3 on two GB10s) as a cited [`Spec`], and the
//! weight bytes each of its kernels reads.
//!
//! The spec (TOML, every value cited or `assumed`, validated once) is one instance of the general weights
//! table of `model-shapes` ([`Spec::model_shape`] → a `model_shapes::ModelShape`), and [`Spec::kl1_bytes`]
//! reads that table back per kernel ([`Kl1Bytes`], module [`estimate`]): per-rank bytes of a routed expert at
//! a K and over the K mix, the shared expert, the four dense decode launches of a layer, LM head, router,
//! mHC pre-norm, one MoE layer and its inverse. `kl1-bandwidth` reports these bytes, so the table is their
//! one source. The reconstruct kernels' bytes ([`exl3`]) come from each launch's grid instead: a slice of a
//! tensor per launch, not a weight of the model. Also here: the expected distinct experts of the spec's
//! routing per rank ([`expected_distinct_experts_per_rank`]) and GB/s from bytes and microseconds
//! ([`gbps`]). `docs/formulas.md` lists each formula with its source and the assumptions that would make it
//! high or low.
//!
//! What it is not: the general model table, the Hugging Face config reader and the GPU table (those are
//! `model-shapes`, which this crate builds on); it knows nothing of traces, kernel names or timing (that is
//! `kineto-trace`, and `kl1-bandwidth`, which composes the two). Its numbers are ESTIMATES from shapes, not
//! measurements.
//!
//! ```
//! use kl1_shapes::{Bits, Spec, expected_distinct_experts, gbps};
//!
//! let spec = Spec::builtin(); // DeepSeek-V4.1-Flash, EXL3, 2 × GB10
//! let bytes = spec.kl1_bytes(); // read from the weights table, spec.model_shape()
//! let k2 = Bits::new(2)?;
//! // One routed expert on one rank at K = 2: 3·5120·1152·2/8 + 2·(3·5120 + 3·1152).
//! assert_eq!(bytes.expert_at(k2).total(), 4_461_312.0);
//! // Two rows pick 6 of 384 experts each: about 11.9 distinct experts under uniform routing.
//! let experts = expected_distinct_experts(&spec, 2);
//! let bytes = experts * bytes.expert_at(k2).total() + bytes.shared_expert;
//! let achieved = gbps(bytes, 400.0)?; // if the layer's MoE took 400 µs
//! assert!(achieved < spec.gpu().spec_bandwidth_gbps);
//! # Ok::<(), kl1_shapes::Error>(())
//! ```
#![deny(missing_docs)]

mod error;
pub mod estimate;
pub mod exl3;
mod kl1_table;
pub mod spec;

pub use error::Error;
pub use estimate::{
    DECODE_DENSE_LAUNCHES, DenseLaunch, ExpertBytes, Kl1Bytes, SHARED_RUN_ROWS,
    expected_distinct_experts, expected_distinct_experts_per_rank, gbps, mean_routed_k,
    shared_runs,
};
pub use exl3::{
    Bits, Exl3Linear, MAX_DIM, ReconstructBytes, ReconstructKernel, Shape, Split,
    reconstruct_bytes, reconstruct_shape,
};
/// The old name of `model_shapes::Citation`.
#[deprecated(
    note = "renamed to `model_shapes::Citation`: `Provenance` is the record builder in crate `provenance`"
)]
pub type Provenance = model_shapes::Citation;
pub use spec::{
    BUILTIN_SPECS, Dtype, Dtypes, ExpertSplit, KMix, Model, Parallelism, Quant, RankShapes, Spec,
};
