//! kl1-shapes: what a model's kernels must read and compute, estimated from the model's shapes; and the
//! GPUs' claimed peaks to compare with.
//!
//! Two ways in:
//!
//! * **Any served model** from its Hugging Face `config.json` ([`model_from_config`], module [`hf`]): dense
//!   (Llama, Mistral, Qwen2/3, Gemma), MoE (Mixtral, Qwen-MoE, DeepSeek-V2/V3 with MLA and shared experts,
//!   gpt-oss), GQA/MQA, tied embeddings, sliding-window and dense-first layers; weights in bf16/fp16, fp8
//!   (per tensor or per block), int4 AWQ/GPTQ, mxfp4, nvfp4 or EXL3; per rank under tensor and expert
//!   parallelism. The result, a [`ModelShape`], holds the general weights table ([`TensorGroup`]s: shape,
//!   count per layer, format, which tokens read them, how ranks divide them), the KV cache per token and the
//!   parameter counts. A config key it does not understand is an error naming it.
//! * **The KL1 deployment** (DeepSeek-V4.1-Flash in EXL3 on two GB10s) as a cited [`Spec`] (TOML). The spec
//!   is one instance of the general table ([`Spec::model_shape`]), and [`Spec::kl1_bytes`] reads that table
//!   back per kernel ([`Kl1Bytes`], module [`estimate`]): per-rank bytes of a routed expert at a K and over
//!   the K mix, the shared expert, the four dense decode launches of a layer, LM head, router, mHC
//!   pre-norm, one MoE layer and its inverse. `kl1-bandwidth` reports these bytes, so the table is their one
//!   source. The reconstruct kernels' bytes ([`exl3`]) come from each launch's grid instead: a slice of a
//!   tensor per launch, not a weight of the model.
//!
//! Shared by both: the expected number of distinct experts a batch of rows reads
//! ([`uniform_distinct_experts`]), GB/s from bytes and microseconds, and the GPU table ([`GpuTable`],
//! `specs/gpus.toml`): specified bandwidth, dense peak TFLOP/s per dtype, SM count and memory to name a GPU
//! from a trace's `deviceProperties`, every figure cited ([`Citation`]). `docs/formulas.md` lists each
//! formula with its source and the assumptions that would make it high or low.
//!
//! What it is not: it knows nothing of traces, kernel names or timing (that is `kineto-trace`, and the
//! crates that compose the two: `kl1-bandwidth`, `roofline`), and nothing of sampling GPUs (`gpu-monitor`).
//! Its numbers are ESTIMATES from shapes, not measurements; the GPU table's figures are labelled as the
//! vendor's specification, a measurement someone published, or a claim.
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

mod citation;
mod doc;
mod error;
pub mod estimate;
pub mod exl3;
pub mod gpu;
pub mod hf;
mod kl1_table;
pub mod spec;
pub mod weights;

pub use citation::Citation;
pub use error::Error;
pub use estimate::{
    DECODE_DENSE_LAUNCHES, DenseLaunch, ExpertBytes, Kl1Bytes, SHARED_RUN_ROWS,
    expected_distinct_experts, expected_distinct_experts_per_rank, gbps, mean_routed_k,
    shared_runs, uniform_distinct_experts,
};
pub use exl3::{
    Bits, Exl3Linear, MAX_DIM, ReconstructBytes, ReconstructKernel, Shape, Split,
    reconstruct_bytes, reconstruct_shape,
};
pub use gpu::{BUILTIN_GPUS_TOML, BandwidthLabel, Gpu, GpuTable, PeakFlops, ReadBandwidth};
pub use hf::{QuantOverride, RunOptions, model_from_config};
/// The old name of [`Citation`].
#[deprecated(
    note = "renamed to `Citation`: `Provenance` is the record builder in crate `provenance`"
)]
pub type Provenance = Citation;
pub use spec::{
    BUILTIN_SPECS, Dtype, Dtypes, ExpertSplit, KMix, Model, Parallelism, Quant, RankShapes, Spec,
};
pub use weights::{
    Attention, Indexer, LayerKind, ModelShape, Moe, RankSplit, Reads, SPARSE_COMPRESS_RATIO,
    TensorGroup, WeightFormat,
};
