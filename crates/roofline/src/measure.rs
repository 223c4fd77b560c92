//! Achieved rates: ESTIMATED bytes and FLOPs over MEASURED step time, against the GPU's CLAIMED peaks, and
//! the physics gate that refuses an estimate no GPU could have met.

use model_shapes::Gpu;
use serde::Serialize;

use crate::Error;
use crate::estimate::StepEstimate;

/// Which roof binds a step: its arithmetic intensity (FLOPs per byte) below the GPU's ridge point
/// (peak FLOP/s ÷ peak bytes/s) is memory-bound, at or above it compute-bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Intensity below the ridge point.
    Memory,
    /// Intensity at or above it.
    Compute,
    /// The GPU table has no peak for the compute dtype.
    Unknown,
}

impl Bound {
    /// `memory`, `compute` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Unknown => "unknown",
        }
    }
}

/// A step's rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rates {
    /// bytes / span, GB/s (10⁹ B/s).
    pub gbps: f64,
    /// bytes / busy time (union of the step's kernels), GB/s.
    pub gbps_busy: f64,
    /// FLOPs / span, TFLOP/s.
    pub tflops: f64,
    /// FLOPs / busy time, TFLOP/s.
    pub tflops_busy: f64,
    /// The GPU's specified bandwidth, GB/s (CLAIM).
    pub peak_gbps: f64,
    /// The GPU's dense peak for the compute dtype, TFLOP/s (CLAIM); `None` if the table has none.
    pub peak_tflops: Option<f64>,
    /// 100 · gbps / peak_gbps.
    pub pct_of_peak_gbps: f64,
    /// 100 · gbps_busy / peak_gbps.
    pub pct_of_peak_gbps_busy: f64,
    /// 100 · tflops / peak_tflops.
    pub pct_of_peak_tflops: Option<f64>,
    /// FLOPs per byte.
    pub intensity: f64,
    /// peak FLOP/s ÷ peak B/s, FLOPs per byte.
    pub ridge: Option<f64>,
    /// Which roof binds.
    pub bound: Bound,
}

/// Rates of a step of `span_ns` (first kernel start to last kernel end) and `busy_ns` (union of its
/// kernels) on `gpu`, computing in `dtype`; `None` when a byte or FLOP term is unknown (the step's
/// counts do not give it), as a rate of part of the bytes would read as the step's.
///
/// The physics gate: bytes / span above the GPU's specified bandwidth, or FLOPs / span above its dense peak,
/// cannot have happened, so the estimate (model config, quantisation, parallel sizes) or the step bounds are
/// wrong; that is [`Error::Physics`] with both numbers, never a percentage above 100. The known terms alone
/// are gated too: they are a lower bound. The busy-time rates are reported, not gated: the union of kernels
/// can be shorter than the time the reads took.
pub fn rates(
    e: &StepEstimate,
    span_ns: i64,
    busy_ns: i64,
    gpu: &Gpu,
    dtype: &str,
) -> Result<Option<Rates>, Error> {
    if span_ns <= 0 || busy_ns <= 0 {
        return Err(Error::NoTime { span_ns, busy_ns });
    }
    gate(e.bytes.known(), e.flops.known(), span_ns, gpu, dtype)?;
    let (Some(bytes), Some(flops)) = (e.bytes.total(), e.flops.total()) else {
        return Ok(None);
    };
    let gbps = bytes / span_ns as f64;
    let gbps_busy = bytes / busy_ns as f64;
    let tflops = flops / span_ns as f64 / 1e3;
    let tflops_busy = flops / busy_ns as f64 / 1e3;
    let peak_gbps = gpu.spec_bandwidth_gbps;
    let peak_tflops = gpu.peak_tflops(dtype).map(|p| p.tflops);
    let intensity = if bytes > 0.0 { flops / bytes } else { 0.0 };
    let ridge = peak_tflops.map(|p| p * 1e12 / (peak_gbps * 1e9));
    let bound = match ridge {
        None => Bound::Unknown,
        Some(r) if intensity < r => Bound::Memory,
        Some(_) => Bound::Compute,
    };
    Ok(Some(Rates {
        gbps,
        gbps_busy,
        tflops,
        tflops_busy,
        peak_gbps,
        peak_tflops,
        pct_of_peak_gbps: 100.0 * gbps / peak_gbps,
        pct_of_peak_gbps_busy: 100.0 * gbps_busy / peak_gbps,
        pct_of_peak_tflops: peak_tflops.map(|p| 100.0 * tflops / p),
        intensity,
        ridge,
        bound,
    }))
}

/// The physics gate over `bytes` and `flops` in `span_ns`.
fn gate(bytes: f64, flops: f64, span_ns: i64, gpu: &Gpu, dtype: &str) -> Result<(), Error> {
    let gbps = bytes / span_ns as f64;
    let tflops = flops / span_ns as f64 / 1e3;
    let peak_gbps = gpu.spec_bandwidth_gbps;
    let peak_tflops = gpu.peak_tflops(dtype).map(|p| p.tflops);
    if gbps > peak_gbps {
        return Err(Error::Physics {
            what: "bandwidth",
            estimated: gbps,
            peak: peak_gbps,
            unit: "GB/s",
            gpu: gpu.name.clone(),
        });
    }
    if let Some(p) = peak_tflops
        && tflops > p
    {
        return Err(Error::Physics {
            what: "FLOP rate",
            estimated: tflops,
            peak: p,
            unit: "TFLOP/s",
            gpu: gpu.name.clone(),
        });
    }
    Ok(())
}

/// The expert count the GPU's specified bandwidth would allow in `span_ns`: (peak · span − every other
/// byte) / bytes of one expert in all MoE layers. `None` for a dense model, or when another byte term is
/// unknown.
pub fn experts_peak_allows(e: &StepEstimate, span_ns: i64, gpu: &Gpu) -> Option<f64> {
    if e.expert_bytes_all_layers <= 0.0 {
        return None;
    }
    let budget = gpu.spec_bandwidth_gbps * span_ns as f64;
    let b = &e.bytes;
    let others: f64 = [b.weights, b.kv_read, b.kv_write, b.lm_head, b.embedding]
        .into_iter()
        .sum::<Option<f64>>()?;
    Some((budget - others) / e.expert_bytes_all_layers)
}
