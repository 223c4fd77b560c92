//! One trace: its steps, each step's token counts and GPU time, the GPU, and the roofline of each step.

use kineto_trace::budget::budget;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use kineto_trace::{AnalysedTrace, Session};
use model_shapes::{Gpu, GpuTable, ModelShape};
use serde::Serialize;

use crate::Error;
use crate::estimate::{StepEstimate, estimate};
use crate::measure::{Rates, experts_peak_allows, rates};
use crate::tokens::{Counts, Given, from_step};
use std::path::PathBuf;

/// Which GPU the steps ran on.
#[derive(Debug, Clone)]
pub enum GpuChoice {
    /// This one, named by the caller.
    Named(Box<Gpu>),
    /// From each trace's `deviceProperties`.
    FromTrace,
}

/// What every trace is analysed with.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The model, per rank.
    pub model: ModelShape,
    /// KV-cache bytes per element.
    pub kv_bytes: u64,
    /// Step markers (`StepPattern::builtin()` tries vLLM's, SGLang's, KL1's and `ProfilerStep#N`).
    pub pattern: StepPattern,
    /// The GPU.
    pub gpu: GpuChoice,
    /// The GPU table to identify GPUs from.
    pub table: GpuTable,
    /// Kernel rules: the `gemm`+`moe` and `attention` buckets they fill are set against the bytes those
    /// kernels read.
    pub rules: Rules,
    /// Token counts for steps whose trace does not give them.
    pub given: Given,
    /// A directory of CUDA/HIP-graph capture traces for the graph replays' sizes; `None`: the
    /// `capture_traces/` (or `graph_capture_profile/`) directory beside each trace, if any.
    pub captures: Option<PathBuf>,
}

/// Which bytes each group of kernel buckets reads: GEMM and MoE kernels the weights (every-step weights,
/// routed experts, LM head; rule tables differ on whether an expert GEMM is `gemm` or `moe`, so the two go
/// together), attention kernels the KV cache. (name, buckets, bytes).
pub const BUCKET_BYTES: [(&str, &[&str], &str); 2] = [
    (
        "weights",
        &["gemm", "moe"],
        "weights + routed_experts + lm_head",
    ),
    ("kv", &["attention"], "kv_read"),
];

/// A group of kernel buckets' share of the step: its bytes over the buckets' exclusive time (each instant
/// of the step split equally among the buckets running then; on one stream, the kernels' time).
#[derive(Debug, Clone, Serialize)]
pub struct BucketRate {
    /// `weights` or `kv` ([`BUCKET_BYTES`]).
    pub bucket: &'static str,
    /// Which bytes ([`BUCKET_BYTES`]).
    pub bytes_of: &'static str,
    /// ESTIMATED bytes; `None` when one of them is unknown.
    pub bytes: Option<f64>,
    /// Σ exclusive time of the buckets in the step, ns (MEASURED); 0 when they have no kernels.
    pub time_ns: i64,
    /// bytes / time, GB/s; `None` without kernels, or when it would exceed the GPU's peak (then the kernel
    /// rules do not put these bytes' kernels in this bucket, and a note says so).
    pub gbps: Option<f64>,
}

/// The roofline of one step on one rank.
#[derive(Debug, Clone, Serialize)]
pub struct StepRoofline {
    /// Step index in the trace.
    pub index: usize,
    /// The step marker.
    pub name: String,
    /// Token counts, as far as known, and where they come from.
    pub tokens: Counts,
    /// First kernel start to last kernel end, ns (MEASURED).
    pub span_ns: i64,
    /// Union of the step's kernels, ns (MEASURED).
    pub busy_ns: i64,
    /// Bytes and FLOPs (ESTIMATED).
    pub estimate: StepEstimate,
    /// Distinct experts per MoE layer and rank the GPU's specified bandwidth would allow in the span.
    pub experts_peak_allows: Option<f64>,
    /// Rates against the peaks; `None` when a byte or FLOP term is unknown.
    pub rates: Option<Rates>,
    /// Σ of the byte terms that are known (all of them when `unknown` is empty).
    pub bytes_known: f64,
    /// The byte and FLOP terms the step's counts do not give (`bytes.kv_read`, `flops.attention`, …).
    pub unknown: Vec<String>,
    /// Per kernel bucket: bytes over the bucket's time.
    pub buckets: Vec<BucketRate>,
    /// The compute dtype whose peak is used.
    pub dtype: &'static str,
}

/// One trace's result.
#[derive(Debug)]
pub struct TraceRoofline {
    /// The file.
    pub file: String,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// The GPU's table name.
    pub gpu: String,
    /// How the GPU was named: `given` (by the caller), `name` or `numSms+memory`.
    pub gpu_from: &'static str,
    /// Steps analysed, in trace order.
    pub steps: Vec<StepRoofline>,
    /// Steps that failed (no token counts, no time, the physics gate), each naming the step.
    pub failures: Vec<Error>,
    /// What the user should know (a bucket mapping that does not hold, how graph captures matched).
    pub notes: Vec<String>,
    /// Steps (indices) with a term unknown for lack of a token count: the caller can give the counts.
    pub incomplete: Vec<usize>,
}

/// The compute dtype: fp8 when the quantised weights are multiplied in fp8, else the activation dtype.
fn compute_dtype(model: &ModelShape) -> &'static str {
    if model.fp8_compute {
        "fp8"
    } else {
        model.activation_dtype
    }
}

/// The GPU of a trace: the one given, else the first `deviceProperties` entry of the device the kernels ran on
/// (or the first entry), by name, else by SM count and memory.
fn gpu_of(
    setup: &Setup,
    file: &str,
    trace: &kineto_trace::Trace,
) -> Result<(Gpu, &'static str), Error> {
    if let GpuChoice::Named(g) = &setup.gpu {
        return Ok(((**g).clone(), "given"));
    }
    let device = trace.kernels.first().and_then(|k| trace.detail(&k).device);
    let props = &trace.header.devices;
    let entry = props
        .iter()
        .find(|p| device.is_some() && p.id == device)
        .or_else(|| props.first())
        .ok_or_else(|| Error::Gpu {
            file: file.to_string(),
            reason: "the trace has no deviceProperties".to_string(),
        })?;
    let name = entry.name.as_deref().unwrap_or("");
    let (sms, mem) = (entry.num_sms, entry.total_global_mem);
    let gpu = setup
        .table
        .identify(name, sms, mem)
        .map_err(|reason| Error::Gpu {
            file: file.to_string(),
            reason,
        })?;
    let from = if !name.trim().is_empty()
        && (gpu.name == name || gpu.device_names.iter().any(|d| d == name))
    {
        "name"
    } else {
        "numSms+memory"
    };
    Ok((gpu.clone(), from))
}

impl Setup {
    /// The session that reads traces with this setup's step pattern, kernel rules and capture directory.
    pub fn session(&self) -> Session {
        Session::from_parts(
            self.rules.clone(),
            self.pattern.clone(),
            self.captures.clone(),
            kineto_trace::Options {
                sha256: false,
                ..kineto_trace::Options::default()
            },
        )
    }
}

/// Reads one trace (through [`Setup::session`]) and computes the roofline of each step.
pub fn analyse(path: &std::path::Path, setup: &Setup) -> Result<TraceRoofline, Error> {
    analyse_trace(&setup.session().open(path)?, setup)
}

/// The roofline of each step of a trace the session read and analysed (its steps, with the graph
/// captures' sizes, and its kernel families): one analysis for every listing of the trace, never a second
/// one that could disagree. The session's pattern, rules and capture directory are `setup`'s.
pub fn analyse_trace(t: &AnalysedTrace, setup: &Setup) -> Result<TraceRoofline, Error> {
    let trace = t.trace();
    let steps = &t.analysis.steps;
    let classes = &t.analysis.classes;
    let file = t.file();
    let (gpu, gpu_from) = gpu_of(setup, &file, trace)?;
    let dtype = compute_dtype(&setup.model);
    let mut out = Vec::new();
    let mut failures = Vec::new();
    let mut notes: Vec<String> = steps
        .notes
        .iter()
        .filter(|n| n.starts_with("graph captures"))
        .cloned()
        .collect();
    let mut incomplete = Vec::new();
    for s in &steps.steps {
        let mut one = || -> Result<StepRoofline, Error> {
            let tokens = from_step(s, &setup.given);
            let (span_ns, busy_ns) = match (s.lo_ns, s.hi_ns) {
                (Some(lo), Some(hi)) => (hi - lo, s.kernel_union_ns),
                _ => (0, 0),
            };
            let e = estimate(&setup.model, &tokens, setup.kv_bytes);
            let r = rates(&e, span_ns, busy_ns, &gpu, dtype)?;
            let b = budget(trace, s, classes, &setup.rules);
            let mut buckets = Vec::new();
            for (bucket, names, bytes_of) in BUCKET_BYTES {
                let bytes = match bucket {
                    "weights" => [e.bytes.weights, e.bytes.routed_experts, e.bytes.lm_head]
                        .into_iter()
                        .sum::<Option<f64>>(),
                    _ => e.bytes.kv_read,
                };
                let time_ns: i64 = names
                    .iter()
                    .filter_map(|n| b.buckets.get(*n))
                    .map(|t| t.exclusive_ns)
                    .sum();
                let kernels = names.join("`+`");
                let mut gbps = bytes.filter(|_| time_ns > 0).map(|b| b / time_ns as f64);
                if let (Some(g), Some(bytes)) = (gbps, bytes)
                    && g > gpu.spec_bandwidth_gbps
                {
                    notes.push(format!(
                        "step {} `{}`: {:.2} GB of {bytes_of} in {:.1} µs of `{kernels}` kernels would be {g:.0} GB/s, above {}'s {:.0}: the kernel rules do not put all the kernels that read these bytes in `{kernels}` (see `kineto budget`), or the model is not the one traced",
                        s.index,
                        s.name,
                        bytes / 1e9,
                        time_ns as f64 / 1e3,
                        gpu.name,
                        gpu.spec_bandwidth_gbps
                    ));
                    gbps = None;
                }
                buckets.push(BucketRate {
                    bucket,
                    bytes_of,
                    bytes,
                    time_ns,
                    gbps,
                });
            }
            let unknown: Vec<String> = e
                .bytes
                .unknown()
                .into_iter()
                .map(|t| format!("bytes.{t}"))
                .chain(e.flops.unknown().into_iter().map(|t| format!("flops.{t}")))
                .collect();
            Ok(StepRoofline {
                buckets,
                index: s.index,
                name: s.name.clone(),
                tokens,
                span_ns,
                busy_ns,
                experts_peak_allows: experts_peak_allows(&e, span_ns, &gpu),
                bytes_known: e.bytes.known(),
                unknown,
                estimate: e,
                rates: r,
                dtype,
            })
        };
        match one() {
            Ok(r) => {
                if !r.unknown.is_empty() {
                    incomplete.push(r.index);
                }
                out.push(r)
            }
            Err(e) => failures.push(Error::Step {
                file: file.clone(),
                index: s.index,
                name: s.name.clone(),
                source: Box::new(e),
            }),
        }
    }
    Ok(TraceRoofline {
        file,
        rank: trace.header.rank,
        gpu: gpu.name.clone(),
        gpu_from,
        steps: out,
        failures,
        notes,
        incomplete,
    })
}
