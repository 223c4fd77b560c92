//! kl1-shapes: how many bytes the kernels of an EXL3-quantised mixture-of-experts model read, estimated from
//! a model spec loaded from data.
//!
//! A [`Spec`] (TOML; the default, [`Spec::builtin`], is DeepSeek-V4.1-Flash in EXL3 on two GB10s) describes
//! the model's dimensions, how it is divided among tensor-parallel ranks, the bit width K of every quantised
//! tensor (and the K mix of the routed experts), the storage types of the unquantised tensors the estimates
//! count, and the GPU, named from a [`GpuTable`]. Every value in a spec carries its provenance: cited from a
//! source, or assumed with the reason. Loading validates the spec once; the functions in [`estimate`] and
//! [`exl3`] then compute, without failing, per-rank weight bytes of one linear, of a routed expert at a K and
//! on average over the K mix, of the shared expert, of the four dense decode launches of a layer, of the LM
//! head, router and mHC pre-norm; the expected number of distinct experts a batch of rows reads; a
//! reconstruct kernel's tensor slice and traffic from its launch grid; GB/s from bytes and microseconds.
//! `docs/formulas.md` lists each formula with its source and the assumptions that would make it high or low.
//!
//! What it is not: it knows nothing of traces, kernel names or timing (that is `kineto-trace` and
//! `kl1-bandwidth`), and nothing of sampling GPUs (`gpu-monitor`). Its numbers are ESTIMATES from shapes,
//! not measurements; the bandwidths in its GPU table are labelled as the vendor's specification, a
//! measurement someone published, or a claim.
//!
//! ```
//! use kl1_shapes::{Bits, Spec, expected_distinct_experts, expert_bytes, gbps, shared_expert_bytes};
//!
//! let spec = Spec::builtin(); // DeepSeek-V4.1-Flash, EXL3, 2 × GB10
//! let k2 = Bits::new(2)?;
//! // One routed expert on one rank at K = 2: 3·5120·1152·2/8 + 2·(3·5120 + 3·1152).
//! assert_eq!(expert_bytes(&spec, k2), 4_461_312);
//! // Two rows pick 6 of 384 experts each: about 11.9 distinct experts under uniform routing.
//! let experts = expected_distinct_experts(&spec, 2);
//! let bytes = experts * expert_bytes(&spec, k2) as f64 + shared_expert_bytes(&spec) as f64;
//! let achieved = gbps(bytes, 400.0)?; // if the layer's MoE took 400 µs
//! assert!(achieved < spec.gpu().spec_bandwidth_gbps);
//! # Ok::<(), kl1_shapes::Error>(())
//! ```
#![deny(missing_docs)]

mod doc;
mod error;
pub mod estimate;
pub mod exl3;
pub mod gpu;
pub mod hf;
mod provenance;
pub mod spec;
pub mod weights;

pub use error::Error;
pub use estimate::{
    DECODE_DENSE_LAUNCHES, DenseLaunch, ExpertBytes, SHARED_RUN_ROWS, decode_dense_launches,
    expected_distinct_experts, expected_distinct_experts_per_rank, expert_bytes, expert_down_bytes,
    expert_gate_up_bytes, experts_readable, gbps, lm_head, lm_head_bytes, mean_expert_bytes,
    mean_routed_k, mhc_prenorm_bytes, moe_layer_weight_bytes, router_bytes, shared_expert_bytes,
    shared_runs, uniform_distinct_experts,
};
pub use exl3::{
    Bits, Exl3Linear, MAX_DIM, ReconstructBytes, ReconstructKernel, Shape, Split,
    reconstruct_bytes, reconstruct_shape,
};
pub use gpu::{BUILTIN_GPUS_TOML, BandwidthLabel, Gpu, GpuTable, PeakFlops, ReadBandwidth};
pub use hf::{QuantOverride, RunOptions, model_from_config};
pub use provenance::Provenance;
pub use spec::{
    BUILTIN_SPECS, Dtype, Dtypes, ExpertSplit, KMix, Model, Parallelism, Quant, RankShapes, Spec,
};
pub use weights::{
    Attention, LayerKind, ModelShape, Moe, RankSplit, Reads, TensorGroup, WeightFormat,
};
