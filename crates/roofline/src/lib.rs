//! roofline: how close to the GPU's roofs each serving step of a Kineto trace ran, for any model given as
//! a Hugging Face config.
//!
//! It composes two crates that know nothing of each other: `model-shapes` (the model's weights table, KV
//! cache and GPU table: ESTIMATED bytes and FLOPs, CLAIMED peaks) and `kineto-trace` (steps and their
//! MEASURED GPU time). Per step and rank it gives bytes by kind (weights, routed experts at the uniform
//! distinct-expert bound, KV read and written, LM head), FLOPs (linear layers, LM head, attention), the
//! achieved GB/s and TFLOP/s over the step's GPU span and busy time, their share of the GPU's peaks, and
//! which roof binds. An estimate above a peak is an error about the estimate ([`Error::Physics`]).
//! `docs/formulas.md` §9 defines every number.
//!
//! What it is not: a renderer (the `kineto roofline` command prints), a parser of traces or configs (the
//! two crates above), or a measurement of bytes: no trace records what a CUDA-graph step read.
#![deny(missing_docs)]

pub mod estimate;
pub mod measure;
pub mod tokens;
pub mod trace;

pub use estimate::{Bytes, Experts, Flops, StepEstimate, estimate};
pub use measure::{Bound, Rates, experts_peak_allows, rates};
pub use tokens::{Counts, Given, PhaseTokens, StepTokens, from_step};
pub use trace::{
    BUCKET_BYTES, BucketRate, GpuChoice, Setup, StepRoofline, TraceRoofline, analyse, analyse_trace,
};

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] kineto_trace::Error),
    /// The GPU could not be named.
    #[error("{file}: which GPU: {reason} (name the GPU explicitly)")]
    Gpu {
        /// The trace.
        file: String,
        /// Why.
        reason: String,
    },
    /// A step's counts do not give what an estimate needs (no longer raised: unknown terms are `None`;
    /// kept for callers that match on it).
    #[error("{0}")]
    NoTokens(String),
    /// A step without GPU time.
    #[error("no GPU time: span {span_ns} ns, busy {busy_ns} ns")]
    NoTime {
        /// First kernel start to last kernel end.
        span_ns: i64,
        /// Union of the kernels.
        busy_ns: i64,
    },
    /// The estimate exceeds what the GPU can do.
    #[error(
        "the estimate is impossible: {estimated:.1} {unit} of ESTIMATED {what} in the MEASURED step exceeds {gpu}'s peak {peak:.1} {unit} (CLAIM); the model config, quantisation, tensor/expert-parallel sizes or the step bounds are wrong"
    )]
    Physics {
        /// `bandwidth` or `FLOP rate`.
        what: &'static str,
        /// The estimated rate.
        estimated: f64,
        /// The peak.
        peak: f64,
        /// `GB/s` or `TFLOP/s`.
        unit: &'static str,
        /// The GPU.
        gpu: String,
    },
    /// A step failed; the others were still analysed.
    #[error("{file}: step {index} `{name}`: {source}")]
    Step {
        /// The trace.
        file: String,
        /// Step index in the trace.
        index: usize,
        /// Its marker.
        name: String,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
}
