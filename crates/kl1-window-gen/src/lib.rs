//! Synthetic KL1 windows with known bandwidths: what `cargo xtask gen-window` writes, and what the
//! `kl1-bandwidth` tests analyse.
//!
//! What it is: a test-window generator, with its own small JSON writer and deterministic random jitter. What
//! it is not: part of the analysis (`kl1-bandwidth` does not depend on it; its tests do) or a model of any
//! real server beyond the KL1 window contract. Every file it writes goes through tool-io (atomic, never over
//! a device or FIFO).
//!
//! A [`Plan`] names the captures, their steps (phase, rows, requests) and the GB/s each kernel family should
//! run at ([`Rates`]). [`write_window`] lays the steps out on a GPU timeline the way a KL1 server's trace
//! looks (`docs/kl1-window.md`): per decode layer the mHC pre-norm and mixing, four m-row dense launches around
//! the attention kernels, an all-reduce, the router and top-k, the sparse-MoE CUDA graph (rotation, gate|up,
//! down, with down starting early as PDL allows), an L2 prefetch on a side stream; per prefill layer
//! reconstruct + GEMM for each dense tensor (exl3_gemm on the suffix layers), flash attention, the
//! tensor-fold expert kernels and the shared expert. CPU launches (runtime, driver, graph) carry the
//! correlation of their kernels and sit inside the step annotation on the launching thread. Each kernel that
//! reads weights lasts (bytes from `kl1-shapes`) / (its family's rate), times a deterministic jitter.
//!
//! The [`Truth`] it returns (and writes as `generator-truth.json`, outside the manifest) holds, per step, the
//! values the analysis must report, computed from the kernels as generated: by role, not by name, pattern or
//! layer grouping, so the analysis's classification and grouping are tested rather than repeated.

mod plan;
mod timeline;
mod trace_json;
mod truth;

use std::io::Write as _;
use std::path::Path;

use kl1_bandwidth::CaptureKind;
use kl1_bandwidth::Kl1Rules;
use kl1_bandwidth::manifest::{MANIFEST, ManifestRow};
use kl1_shapes::Spec;

pub use plan::{CapturePlan, Plan, Rates, StepPlan};
use timeline::{Model, Rng, lay_out};
use trace_json::trace_json;
use truth::step_truths;
pub use truth::{StepTruth, TraceTruth, Truth};

/// Why a window could not be generated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The plan, a rate, or the rules cannot make a window (the message says which and why).
    #[error("{reason}")]
    Plan {
        /// What is wrong.
        reason: String,
    },
    /// The directory already holds a window and replacing its files was not asked for.
    #[error("{dir} already holds a window ({MANIFEST})")]
    WindowExists {
        /// The directory.
        dir: std::path::PathBuf,
    },
    /// A file could not be written (tool-io's message names it).
    #[error(transparent)]
    File(#[from] tool_io::Error),
    /// The directory could not be created.
    #[error("{path}: {error}")]
    Io {
        /// The directory.
        path: std::path::PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
}

/// The file the truth is written to, inside the window (not listed in the manifest).
pub const TRUTH_FILE: &str = "generator-truth.json";

/// Writes a window to `dir` (created if missing): one trace per capture and rank, `traces-manifest.json`,
/// and `generator-truth.json`. Refuses a directory that already holds a manifest unless `overwrite`; then
/// only the files it writes are replaced.
pub fn write_window(
    spec: &Spec,
    rules: &Kl1Rules,
    plan: &Plan,
    dir: &Path,
    overwrite: bool,
) -> Result<Truth, Error> {
    let bad = |reason: String| Error::Plan { reason };
    // The manifest names each file: one written beside its name (a file appeared there meanwhile) would
    // leave the window inconsistent, so it is an error saying where it went.
    let placed = |w: tool_io::Written| match w.notice() {
        None => Ok(()),
        Some(n) => Err(bad(n)),
    };
    if !(plan.jitter.is_finite() && (0.0..0.5).contains(&plan.jitter)) {
        return Err(bad(format!("jitter {} must be in [0, 0.5)", plan.jitter)));
    }
    let probe = annotation(7, CaptureKind::Decode, 2, 1);
    if !rules.step_pattern().is_match(&probe) {
        return Err(bad(format!(
            "the rules' step pattern `{}` does not match the KL1 annotation `{probe}` the generator writes \
             (docs/kl1-window.md)",
            rules.step_pattern().as_str()
        )));
    }
    let p = rules.prefill();
    let units = spec.expert_intermediate_per_rank() / 128;
    let bytes = spec.kl1_bytes();
    let model = Model {
        spec,
        dense: bytes
            .dense
            .iter()
            .map(|l| (l.name.to_string(), l.bits, l.bytes()))
            .collect(),
        bytes,
        layers: spec.model().moe_layers,
        full_layers: p.full_layers.min(spec.model().moe_layers),
        suffix_rows: p.suffix_rows,
        min_rows: p.min_rows,
        units,
        top_k: spec.model().top_k,
    };
    if model.layers > 4096 {
        return Err(bad(format!(
            "{} MoE layers: too many for a synthetic window",
            model.layers
        )));
    }
    for c in &plan.captures {
        if c.steps.is_empty() {
            return Err(bad(format!(
                "capture {}:{} has no steps",
                c.cell, c.capture
            )));
        }
        for s in &c.steps {
            if s.rows == 0 || s.requests == 0 || s.rows > 1 << 20 {
                return Err(bad(format!(
                    "capture {}:{}: a step with {} rows and {} requests (rows in 1..=2^20, requests ≥ 1)",
                    c.cell, c.capture, s.rows, s.requests
                )));
            }
        }
    }
    if dir.join(MANIFEST).exists() && !overwrite {
        return Err(Error::WindowExists {
            dir: dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|error| Error::Io {
        path: dir.to_path_buf(),
        error,
    })?;

    let ranks = spec.parallelism().ranks;
    let mut manifest: Vec<ManifestRow> = Vec::new();
    let mut truth = Truth {
        spec: spec.name().to_string(),
        plan: plan.clone(),
        traces: Vec::new(),
    };
    for (ci, c) in plan.captures.iter().enumerate() {
        for rank in 0..ranks {
            let mut rng = Rng(plan
                .seed
                .wrapping_mul(0x100_0000_01b3)
                .wrapping_add((ci as u64) << 32 | rank));
            let laid = lay_out(&model, plan, c, &mut rng);
            let ext = if plan.gzip { "json.gz" } else { "json" };
            let file = format!("{}.{}.rank{rank}.pt.trace.{ext}", c.cell, c.capture);
            let json = trace_json(spec, c, rank, ranks, &laid);
            let bytes = if plan.gzip {
                gzip(json.as_bytes())
            } else {
                json.into_bytes()
            };
            placed(tool_io::Claim::new(dir.join(&file), overwrite)?.write_bytes(&bytes)?)?;
            manifest.push(ManifestRow {
                cell: c.cell.clone(),
                capture: c.capture.clone(),
                rank,
                file: file.clone(),
                sha256: sha256_hex(&bytes),
            });
            truth.traces.push(TraceTruth {
                label: format!("{}:{}", c.cell, c.capture),
                rank,
                file,
                steps: step_truths(&model, &laid),
            });
        }
    }
    let write_json = |name: &str, value: &dyn erased::Json| -> Result<(), Error> {
        let mut text = value.to_pretty().map_err(|e| bad(e.to_string()))?;
        text.push('\n');
        placed(tool_io::Claim::new(dir.join(name), overwrite)?.write_bytes(text.as_bytes())?)
    };
    write_json(MANIFEST, &manifest)?;
    write_json(TRUTH_FILE, &truth)?;
    Ok(truth)
}

/// `serde_json::to_string_pretty` behind a trait object, so one closure writes both files.
mod erased {
    pub(super) trait Json {
        fn to_pretty(&self) -> serde_json::Result<String>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_pretty(&self) -> serde_json::Result<String> {
            serde_json::to_string_pretty(self)
        }
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(bytes);
    enc.finish().unwrap_or_default()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    kineto_trace::hex(&sha2::Sha256::digest(bytes))
}

/// The KL1 step annotation (docs/kl1-window.md).
pub fn annotation(index: u64, phase: CaptureKind, rows: u64, requests: u64) -> String {
    format!("kl1.step#{index} phase={phase} rows={rows} requests={requests}")
}
