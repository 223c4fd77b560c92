//! The physics gate of the KL1 analysis, as the roofline's (`docs/roofline.md`): an estimate that needs more
//! than the GPU's specified bandwidth cannot have happened, so it is an error about its inputs (the step's
//! marker, the spec), never a GB/s above the GPU's.

use kl1_shapes::shared_runs;
use model_shapes::Gpu;

/// The shared expert's reads in a decode step of `rows` rows: each of the ceil(rows / 8) runs reads its
/// `shared_expert_bytes` weights, in each of `layers` layers, within `span_ns` (docs/formulas.md §5). They
/// are the part of the sparse-MoE estimate that is no upper bound, so they alone above the GPU's specified
/// bandwidth mean `rows` is wrong: the error names the rate and the bandwidth.
pub(crate) fn shared_expert_fits(
    rows: u64,
    layers: f64,
    shared_expert_bytes: f64,
    span_ns: i64,
    gpu: &Gpu,
) -> Result<(), String> {
    let bytes = shared_runs(rows) as f64 * shared_expert_bytes * layers;
    match kl1_shapes::gbps(bytes, span_ns as f64 / 1e3) {
        Ok(need) if need > gpu.spec_bandwidth_gbps => Err(format!(
            "rows = {rows}: the shared expert alone ({} runs a layer × {:.3} MB × {layers} layers in {:.3} ms) \
             would be read at {need:.4e} GB/s, above the {}'s {} GB/s: no step can have run {rows} rows \
             (the physics gate; is the marker's `rows` right?)",
            shared_runs(rows),
            shared_expert_bytes / 1e6,
            span_ns as f64 / 1e6,
            gpu.name,
            gpu.spec_bandwidth_gbps
        )),
        _ => Ok(()),
    }
}
