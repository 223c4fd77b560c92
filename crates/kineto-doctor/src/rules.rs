//! The rules as data: each finding's id, what it measures, its threshold and why, in one table
//! (`docs/doctor.md` is this table in prose; a test holds the two together), and the thresholds' values.

use crate::{FindingId, Next, Origin};

/// One rule of the doctor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The finding it reports.
    pub finding: FindingId,
    /// The stable id (`finding` column).
    pub id: &'static str,
    /// Where its time at stake comes from.
    pub origin: Origin,
    /// What it measures and when it fires, in one line (the `rule` column).
    pub what: &'static str,
    /// What to look at next.
    pub next: Next,
}

/// Every rule, in [`FindingId::ALL`]'s order.
pub const RULES: [Rule; 12] = [
    Rule {
        finding: FindingId::LaunchBoundIdle,
        id: "launch_bound_idle",
        origin: Origin::Measured,
        what: "Σ idle gaps inside steps whose next GPU op's launch call began after the GPU went idle (less any part a blocking call spans)",
        next: Next::Kernels,
    },
    Rule {
        finding: FindingId::SyncBlockedIdle,
        id: "sync_blocked_idle",
        origin: Origin::Measured,
        what: "Σ of the idle gaps inside steps that a blocking call (stream/device/event synchronize, a blocking copy) spans on a CPU thread",
        next: Next::Budget,
    },
    Rule {
        finding: FindingId::BetweenSteps,
        id: "between_steps",
        origin: Origin::Measured,
        what: "Σ GPU idle from one step's last GPU end to the next step's first GPU start (the scheduler's time)",
        next: Next::Steps,
    },
    Rule {
        finding: FindingId::ExposedComm,
        id: "exposed_comm",
        origin: Origin::Measured,
        what: "Σ over steps of comm time with no compute kernel running (HTA's definition; budget's comm_exposed)",
        next: Next::Budget,
    },
    Rule {
        finding: FindingId::Straggler,
        id: "straggler",
        origin: Origin::Measured,
        what: "Σ over the steps paired across ranks of this rank's span − the median rank's span, where positive",
        next: Next::Ranks,
    },
    Rule {
        finding: FindingId::ShortKernels,
        id: "short_kernels",
        origin: Origin::Measured,
        what: "Σ dur of eagerly launched kernels in steps shorter than the launch-cost threshold",
        next: Next::TopPerStep,
    },
    Rule {
        finding: FindingId::EagerSteps,
        id: "eager_steps",
        origin: Origin::Measured,
        what: "Σ idle of decode steps (marker or inferred; or of unknown phase with no more tokens than a graph replay ran) with no graph launch, in a trace where other steps run graphs",
        next: Next::Steps,
    },
    Rule {
        finding: FindingId::CopiesInStep,
        id: "copies_in_step",
        origin: Origin::Measured,
        what: "time host↔device copies inside steps run with no kernel beside them (union of the copies less their overlap with kernels)",
        next: Next::Summary,
    },
    Rule {
        finding: FindingId::BelowRoofline,
        id: "below_roofline",
        origin: Origin::Estimated,
        what: "Σ over steps below the roof-efficiency threshold of span − the time the binding roof allows for the model's bytes and FLOPs",
        next: Next::Roofline,
    },
    Rule {
        finding: FindingId::UnsteadySteps,
        id: "unsteady_steps",
        origin: Origin::Measured,
        what: "Σ over outlier steps (|span − median| > 3 × MAD among decode steps, or steps of unknown phase and one token octave) of span − median, above the median only",
        next: Next::Budget,
    },
    Rule {
        finding: FindingId::SimtGemm,
        id: "fp32_simt_gemm",
        origin: Origin::Measured,
        what: "Σ dur of the steps' fp32 GEMM kernels that run on the SIMT cores (`sgemm`, `ffma` GEMMs): no tensor core, TF32 off",
        next: Next::TopPerStep,
    },
    Rule {
        finding: FindingId::CollectiveWait,
        id: "collective_wait",
        origin: Origin::Measured,
        what: "Σ over comm kernels in steps running over 10 × their name's median (≥ 3 of that name) of dur − median: waiting for peers, not transfer",
        next: Next::Ranks,
    },
];

/// The rule of a finding.
pub fn rule(f: FindingId) -> &'static Rule {
    // RULES is in FindingId::ALL's order (a test checks it).
    &RULES[f as usize]
}

/// The thresholds of the rules. `docs/doctor.md` says why each has its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// A finding below this share of its trace's analysed span, %, is not reported: noise, not a fix.
    pub min_share_pct: f64,
    /// A kernel shorter than this is shorter than what launching it costs the CPU, ns.
    pub short_kernel_ns: i64,
    /// A step whose achieved rate is below this share of its binding roof is below the roofline, %.
    pub roof_efficiency_pct: f64,
    /// Fewest steps of one phase the outlier rule is applied to.
    pub unsteady_min_steps: usize,
    /// How many contributors (kernels, gaps, calls) the evidence names.
    pub top: usize,
    /// A first step idling over this many times the later steps' median idle is cold.
    pub cold_idle_ratio: f64,
    /// Fewest ns an opening wait or a cold step's extra idle must have to be an artefact.
    pub artefact_min_ns: i64,
    /// A last step with fewer kernels than this share of the others' median count was cut, %.
    pub cut_step_kernel_pct: f64,
    /// A collective running over this many times its name's median waits for peers.
    pub peer_wait_ratio: f64,
}

impl Thresholds {
    /// The defaults (`docs/doctor.md`).
    pub const DEFAULT: Thresholds = Thresholds {
        min_share_pct: 1.0,
        short_kernel_ns: 5_000,
        roof_efficiency_pct: 50.0,
        unsteady_min_steps: 4,
        top: 3,
        cold_idle_ratio: 10.0,
        artefact_min_ns: 1_000_000,
        cut_step_kernel_pct: 10.0,
        peer_wait_ratio: 10.0,
    };
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds::DEFAULT
    }
}

/// Runtime and driver calls that block the calling thread until GPU work is done: every synchronize,
/// and the copies without `Async` (CUDA's and HIP's synchronous `Memcpy` return when the copy has).
pub fn is_blocking_call(name: &str) -> bool {
    if name.contains("Synchronize") {
        return true;
    }
    let copy = ["cudaMemcpy", "hipMemcpy", "cuMemcpy"]
        .iter()
        .any(|p| name.starts_with(p));
    copy && !name.contains("Async")
}

/// Whether a kernel is an fp32 GEMM on the SIMT cores, by its name: cuBLAS's `sgemm` family
/// (`ampere_sgemm_128x64_nn`, `volta_sgemm_…`, CUTLASS's `…simt_sgemm…`) and cuBLASLt's FMA GEMMs
/// (`sm80_xmma_gemm_f32f32_f32f32_f32_…_ffma_…`). The tensor-core fp32 GEMMs carry `tf32`, `s1688`,
/// `s16816` or `tensorop` in their names and are not counted.
pub fn is_simt_gemm(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let tensor_core = ["tf32", "1688", "16816", "tensorop"]
        .iter()
        .any(|w| n.contains(w));
    let simt = n.contains("sgemm") || (n.contains("gemm") && n.contains("ffma"));
    simt && !tensor_core
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_in_finding_order_with_unique_ids() {
        for (i, f) in FindingId::ALL.iter().enumerate() {
            assert_eq!(RULES[i].finding, *f);
            assert_eq!(rule(*f).finding, *f);
        }
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }

    #[test]
    fn simt_gemms_by_name() {
        for s in [
            "ampere_sgemm_128x64_nn",
            "volta_sgemm_64x64_nt",
            "maxwell_sgemm_128x128_raggedMn_nn",
            "cutlass_80_simt_sgemm_128x32_8x5_nn_align1",
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
        ] {
            assert!(is_simt_gemm(s), "{s}");
        }
        for n in [
            "ampere_tf32_s1688gemm_tf32_128x128_16x3_nt",
            "cutlass_80_tensorop_s1688gemm_128x128_16x3_nn_align4",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
            "sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16",
            "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
            "void at::native::vectorized_elementwise_kernel<4, float>",
        ] {
            assert!(!is_simt_gemm(n), "{n}");
        }
    }

    #[test]
    fn blocking_calls_by_name() {
        for b in [
            "cudaStreamSynchronize",
            "cudaDeviceSynchronize",
            "cudaEventSynchronize",
            "hipStreamSynchronize",
            "hipDeviceSynchronize",
            "cuCtxSynchronize",
            "cudaMemcpy",
            "hipMemcpy",
            "cuMemcpyDtoH_v2",
            "cudaMemcpy2D",
        ] {
            assert!(is_blocking_call(b), "{b}");
        }
        for n in [
            "cudaMemcpyAsync",
            "hipMemcpyAsync",
            "cuMemcpyHtoDAsync_v2",
            "cudaLaunchKernel",
            "cudaStreamWaitEvent",
            "cudaEventRecord",
            "cudaGraphLaunch",
        ] {
            assert!(!is_blocking_call(n), "{n}");
        }
    }
}
