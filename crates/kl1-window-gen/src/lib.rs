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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use kineto_trace::interval::union_within;
use kl1_shapes::{
    Bits, Kl1Bytes, ReconstructKernel, Shape, Spec, expected_distinct_experts_per_rank,
    reconstruct_bytes,
};
use serde::Serialize;

use kl1_bandwidth::CaptureKind;
use kl1_bandwidth::Kl1Rules;
use kl1_bandwidth::manifest::{MANIFEST, ManifestRow};

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

/// GB/s each family runs at (10⁹ B/s; 1 GB/s = 1 B/ns, so a kernel of B bytes at R GB/s lasts B/R ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rates {
    /// m-row dense decode launches.
    pub dense: f64,
    /// LM head.
    pub lm_head: f64,
    /// Router GEMV.
    pub router: f64,
    /// mHC pre-norm.
    pub mhc: f64,
    /// A sparse-MoE decode layer, first kernel start to down end, at the uniform-routing expert count.
    pub smoe: f64,
    /// Prefill gate|up at the uniform-routing expert count.
    pub tf_gu: f64,
    /// Prefill down at the uniform-routing expert count.
    pub tf_down: f64,
    /// Reconstruct, read + written bytes.
    pub reconstruct: f64,
    /// L2 prefetch of the shared expert.
    pub l2pf: f64,
}

impl Default for Rates {
    fn default() -> Rates {
        Rates {
            dense: 190.0,
            lm_head: 215.0,
            router: 120.0,
            mhc: 90.0,
            smoe: 175.0,
            tf_gu: 200.0,
            tf_down: 185.0,
            reconstruct: 160.0,
            l2pf: 205.0,
        }
    }
}

impl Rates {
    /// Sets one rate by family name (`dense`, `lm_head`, `router`, `mhc`, `smoe`, `tf_gu`, `tf_down`,
    /// `reconstruct`, `l2pf`).
    pub fn set(&mut self, name: &str, gbps: f64) -> Result<(), Error> {
        if !(gbps.is_finite() && gbps > 0.0) {
            return Err(Error::Plan {
                reason: format!("rate {name} = {gbps}: a rate must be a positive number of GB/s"),
            });
        }
        let slot = match name {
            "dense" => &mut self.dense,
            "lm_head" => &mut self.lm_head,
            "router" => &mut self.router,
            "mhc" => &mut self.mhc,
            "smoe" => &mut self.smoe,
            "tf_gu" => &mut self.tf_gu,
            "tf_down" => &mut self.tf_down,
            "reconstruct" => &mut self.reconstruct,
            "l2pf" => &mut self.l2pf,
            other => {
                return Err(Error::Plan {
                    reason: format!(
                        "no rate `{other}` (dense, lm_head, router, mhc, smoe, tf_gu, tf_down, reconstruct, l2pf)"
                    ),
                });
            }
        };
        *slot = gbps;
        Ok(())
    }
}

/// One step to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepPlan {
    /// Decode or prefill.
    pub phase: CaptureKind,
    /// Live rows.
    pub rows: u64,
    /// Requests.
    pub requests: u64,
}

/// One capture: a trace per rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapturePlan {
    /// The manifest's `cell`.
    pub cell: String,
    /// The manifest's `capture`.
    pub capture: String,
    /// Attention context length (sets attention kernel times only).
    pub context: u64,
    /// Its steps, in order. The last has no next step, so no period, and is not analysed.
    pub steps: Vec<StepPlan>,
    /// Run the decode LM head as `exl3_gemm_kernel` at the head's K instead of `exl3_mrow_head_kernel`.
    pub lm_head_gemm: bool,
}

/// What to generate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The captures.
    pub captures: Vec<CapturePlan>,
    /// Family rates.
    pub rates: Rates,
    /// Each kernel's duration is multiplied by 1 + jitter·u, u uniform in [−1, 1].
    pub jitter: f64,
    /// Seed of the jitter.
    pub seed: u64,
    /// Write `.json.gz` (else `.json`).
    pub gzip: bool,
}

fn decode(rows: u64, requests: u64) -> StepPlan {
    StepPlan {
        phase: CaptureKind::Decode,
        rows,
        requests,
    }
}

fn prefill(rows: u64) -> StepPlan {
    StepPlan {
        phase: CaptureKind::Prefill,
        rows,
        requests: 1,
    }
}

impl Plan {
    /// The demo window: the six known captures, a few steps each (decode with MTP-style 1–2 rows a request,
    /// batch 4 with 4–8 rows; prefill chunks of 4096 and 2048 rows, and one 512-row chunk under the prefill
    /// cut), at the default rates with 4 % jitter, gzipped.
    pub fn demo() -> Plan {
        let cap = |cell: &str, capture: &str, context: u64, steps: Vec<StepPlan>| CapturePlan {
            cell: cell.to_string(),
            capture: capture.to_string(),
            context,
            steps,
            lm_head_gemm: false,
        };
        let mut b4 = cap(
            "prof-32k-b4",
            "decode",
            32_768,
            vec![decode(4, 4), decode(8, 4), decode(6, 4)],
        );
        b4.lm_head_gemm = true;
        Plan {
            captures: vec![
                cap(
                    "prof-short-b1",
                    "decode",
                    512,
                    vec![decode(1, 1), decode(2, 1), decode(1, 1)],
                ),
                cap(
                    "prof-32k-b1",
                    "decode",
                    32_768,
                    vec![decode(2, 1), decode(2, 1), decode(1, 1)],
                ),
                cap(
                    "prof-150k-b1",
                    "decode",
                    150_000,
                    vec![decode(1, 1), decode(2, 1), decode(2, 1)],
                ),
                b4,
                cap(
                    "prof-32k-b1",
                    "prefill-early",
                    32_768,
                    vec![prefill(4096), prefill(512), decode(1, 1)],
                ),
                cap(
                    "prof-150k-b1",
                    "prefill-late",
                    150_000,
                    vec![prefill(2048), prefill(4096), decode(1, 1)],
                ),
            ],
            rates: Rates::default(),
            jitter: 0.04,
            seed: 0x6b6c_3100,
            gzip: true,
        }
    }
}

/// What the analysis must report for one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepTruth {
    /// The step's index (its annotation's `#N`).
    pub index: u64,
    /// `decode` or `prefill`.
    pub phase: String,
    /// Rows.
    pub rows: u64,
    /// Requests.
    pub requests: u64,
    /// Whether a capture of this step's phase analyses it (it has a next step; a prefill chunk has at least
    /// `prefill.min_rows` rows).
    pub analysed: bool,
    /// Last kernel end − first kernel start, ms: Σ of the `sp1.*` keys must equal it.
    pub span_ms: f64,
    /// Output key → value, as the analysis must report it.
    pub expected: BTreeMap<String, f64>,
}

/// One trace's truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceTruth {
    /// `cell:capture`.
    pub label: String,
    /// Rank.
    pub rank: u64,
    /// File, relative to the window.
    pub file: String,
    /// Its steps.
    pub steps: Vec<StepTruth>,
}

/// What was generated and what the analysis must find in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Truth {
    /// The spec the bytes come from.
    pub spec: String,
    /// The plan.
    pub plan: Plan,
    /// Per trace.
    pub traces: Vec<TraceTruth>,
}

/// What a generated kernel is, for the truth (never derived from its name).
#[derive(Debug, Clone, PartialEq)]
enum Role {
    /// Dense decode launch j of a layer (0..4).
    Dense(usize),
    /// The LM head: the m-row head kernel, or (`gemm`) an exl3_gemm at the head's K.
    Head {
        gemm: bool,
    },
    Router,
    TopK,
    Prenorm,
    HcMix,
    Attn,
    Nccl,
    Torch,
    Rot,
    Gu,
    Down,
    L2pf,
    TfGu {
        full: bool,
    },
    TfDown {
        full: bool,
    },
    TfAux,
    Gemm,
    CublasGemm,
    Reconstruct {
        key: String,
        bytes: f64,
    },
}

impl Role {
    /// The family the KL1 rules must give this kernel.
    fn family(&self) -> &'static str {
        match self {
            Role::Dense(_) => "mrow",
            Role::Head { gemm: false } => "mrow_head",
            Role::Head { gemm: true } => "exl3_gemm",
            Role::Router => "router",
            Role::TopK => "route_topk",
            Role::Prenorm => "hc_prenorm",
            Role::HcMix => "hc_mix",
            Role::Attn => "attn",
            Role::Nccl => "nccl",
            Role::Torch => "torch_native",
            Role::Rot => "smoe_rot",
            Role::Gu => "smoe_gu",
            Role::Down => "smoe_down",
            Role::L2pf => "l2pf",
            Role::TfGu { .. } => "tf_gu",
            Role::TfDown { .. } => "tf_down",
            Role::TfAux => "tf_aux",
            Role::Gemm => "exl3_gemm",
            Role::CublasGemm => "cublas_gemm",
            Role::Reconstruct { key, .. } => {
                if key.ends_with("_had") {
                    "reconstruct_had"
                } else {
                    "reconstruct"
                }
            }
        }
    }
}

/// How a kernel is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// `cudaLaunchKernel` (runtime).
    Runtime,
    /// `cuLaunchKernel` (driver, as Triton launches).
    Driver,
    /// Part of the CUDA-graph replay with this group number.
    Graph(u64),
}

#[derive(Debug, Clone)]
struct Kern {
    name: String,
    role: Role,
    stream: u32,
    start: i64,
    dur: i64,
    grid: [u32; 3],
    block: [u32; 3],
    via: Via,
}

impl Kern {
    fn end(&self) -> i64 {
        self.start + self.dur
    }
}

const MAIN_STREAM: u32 = 7;
const SIDE_STREAM: u32 = 13;
const PID_GPU: u32 = 0;
/// Relative time of the first step, ns (Kineto's times are relative to `baseTimeNanoseconds`).
const T0: i64 = 2_000_000;
const BASE_TIME_NS: i64 = 1_765_432_100_000_000_000;
/// Idle GPU time between steps (the server collecting results and scheduling), ns.
const STEP_GAP: i64 = 180_000;

/// A deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [−1, 1].
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// Uniform integer in [lo, hi].
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo + 1).max(1) as u64;
        lo + (self.next() % span) as i64
    }
}

/// Rows the decode graph is captured for: the smallest of 1, 2, 4, 8, 16, … that holds `rows`.
fn graph_rows(rows: u64) -> u64 {
    rows.max(1).next_power_of_two()
}

/// The per-rank quantities the generator needs, computed once.
struct Model<'a> {
    spec: &'a Spec,
    /// Weight bytes per kernel, as `kl1-bandwidth` reads them from the spec's weights table.
    bytes: Kl1Bytes,
    dense: Vec<(String, Bits, f64)>,
    layers: u64,
    full_layers: u64,
    suffix_rows: u64,
    min_rows: u64,
    units: u64,
    top_k: u64,
}

/// One step as laid out.
struct Laid {
    plan: StepPlan,
    index: u64,
    kernels: Vec<Kern>,
}

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

/// Lays every step of a capture out on the GPU timeline.
fn lay_out(m: &Model<'_>, plan: &Plan, c: &CapturePlan, rng: &mut Rng) -> Vec<Laid> {
    let mut t = T0;
    let mut out = Vec::new();
    let mut graph = 0u64;
    for (i, s) in c.steps.iter().enumerate() {
        let mut b = Builder {
            m,
            plan,
            rng,
            t,
            kernels: Vec::new(),
            graph: &mut graph,
        };
        match s.phase {
            CaptureKind::Decode => b.decode_step(s, c),
            CaptureKind::Prefill => b.prefill_step(s, c),
        }
        let kernels = b.kernels;
        t = kernels.iter().map(Kern::end).max().unwrap_or(t) + STEP_GAP;
        out.push(Laid {
            plan: *s,
            index: 1000 + i as u64,
            kernels,
        });
    }
    out
}

struct Builder<'a, 'm> {
    m: &'a Model<'m>,
    plan: &'a Plan,
    rng: &'a mut Rng,
    /// Main-stream cursor, ns.
    t: i64,
    kernels: Vec<Kern>,
    graph: &'a mut u64,
}

const ARGS_MROW: &str = "(__half const*, unsigned short const* const*, __half const* const*, __half const* const*, __half* const*, int const*, int, int)";

impl Builder<'_, '_> {
    /// `base` ns with the plan's jitter, at least 1 µs.
    fn jittered(&mut self, base: f64) -> i64 {
        let f = 1.0 + self.plan.jitter * self.rng.unit();
        ((base * f).round() as i64).max(1_000)
    }

    /// A kernel reading `bytes` at `gbps` (1 GB/s = 1 B/ns), jittered.
    fn rate_dur(&mut self, bytes: f64, gbps: f64) -> i64 {
        self.jittered(bytes / gbps)
    }

    /// Appends a main-stream kernel after a launch gap.
    fn push(&mut self, name: String, role: Role, dur: i64, grid: [u32; 3], via: Via) -> usize {
        let gap = match via {
            Via::Graph(_) => self.rng.range(250, 450),
            _ => self.rng.range(600, 1_500),
        };
        self.t += gap;
        self.kernels.push(Kern {
            name,
            role,
            stream: MAIN_STREAM,
            start: self.t,
            dur,
            grid,
            block: [256, 1, 1],
            via,
        });
        self.t += dur;
        self.kernels.len() - 1
    }

    fn mhc_site(&mut self) {
        let d = self.rate_dur(self.m.bytes.mhc_prenorm, self.plan.rates.mhc);
        let h = self.m.spec.model().mhc_expansion;
        self.push(
            format!("void hc_mix_partials_kernel<{h}>(float const*, float const*, float*, float*, int, int)"),
            Role::Prenorm,
            d,
            [48, 1, 1],
            Via::Runtime,
        );
        let d = self.jittered(2_200.0);
        self.push(
            format!(
                "void hc_mix_finalize_kernel<{h}, 20>(float const*, float const*, float const*, float*, float*, float*, int)"
            ),
            Role::HcMix,
            d,
            [1, 1, 1],
            Via::Runtime,
        );
        let d = self.jittered(1_800.0);
        self.push(
            format!("void hc_apply_kernel<{h}>(float const*, float const*, __half*, int, int)"),
            Role::HcMix,
            d,
            [40, 1, 1],
            Via::Runtime,
        );
    }

    fn nccl(&mut self, op: &str) {
        let d = self.jittered(9_000.0);
        self.push(
            format!("ncclDevKernel_{op}_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            Role::Nccl,
            d,
            [2, 1, 1],
            Via::Runtime,
        );
    }

    fn routing(&mut self) {
        let e = self.m.spec.model().routed_experts;
        let d = self.rate_dur(self.m.bytes.router, self.plan.rates.router);
        self.push(
            format!(
                "void routing_gemv_kernel<{e}>(__half const*, __half const*, __half*, int, int)"
            ),
            Role::Router,
            d,
            [e.div_ceil(8) as u32, 1, 1],
            Via::Runtime,
        );
        let d = self.jittered(3_500.0);
        self.push(
            format!(
                "void routing_ds3_nogroup_topk_kernel<{e}, {}>(__half const*, __half const*, int*, __half*, int)",
                self.m.top_k
            ),
            Role::TopK,
            d,
            [1, 1, 1],
            Via::Runtime,
        );
    }

    /// The L2 prefetch of the next layer's shared expert, on the side stream, from `at`.
    fn l2pf(&mut self, at: i64) {
        let d = self.rate_dur(self.m.bytes.shared_expert, self.plan.rates.l2pf);
        self.kernels.push(Kern {
            name: "_l2_prefetch_kernel".to_string(),
            role: Role::L2pf,
            stream: SIDE_STREAM,
            start: at,
            dur: d,
            grid: [1, 1, 1],
            block: [128, 1, 1],
            via: Via::Driver,
        });
    }

    fn residual_add(&mut self) {
        let d = self.jittered(2_000.0);
        self.push(
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)".to_string(),
            Role::Torch,
            d,
            [160, 1, 1],
            Via::Runtime,
        );
    }

    fn decode_step(&mut self, s: &StepPlan, c: &CapturePlan) {
        let m = self.m;
        let rates = self.plan.rates;
        let gr = graph_rows(s.rows);
        let slots = gr * (m.top_k + 1);
        // Attention time grows with context and requests; it reads KV cache, which no estimate here counts.
        let attn_ns = 8_000.0 + c.context as f64 * 0.6 * s.requests as f64;
        for _layer in 0..m.layers {
            let layer_start = self.t;
            self.l2pf(layer_start + 400);
            self.mhc_site();
            for (j, (name, bits, bytes)) in m.dense.iter().enumerate() {
                if j == 2 {
                    let d = self.jittered(attn_ns);
                    self.push(
                        "void flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true>(Flash_fwd_mla_params)".to_string(),
                        Role::Attn,
                        d,
                        [s.requests as u32, 32, 1],
                        Via::Runtime,
                    );
                    let d = self.jittered(2_500.0);
                    self.push(
                        "void flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, float, 512, 64>(Flash_fwd_mla_params)".to_string(),
                        Role::Attn,
                        d,
                        [s.requests as u32, 32, 1],
                        Via::Runtime,
                    );
                }
                let _ = name;
                let d = self.rate_dur(*bytes, rates.dense);
                self.push(
                    format!("void exl3_mrow_kernel<{}, {gr}, 1>{ARGS_MROW}", bits.get()),
                    Role::Dense(j),
                    d,
                    [96, 1, 1],
                    Via::Runtime,
                );
            }
            self.nccl("AllReduce");
            self.mhc_site();
            self.routing();
            // The sparse-MoE graph: the layer's span is its weight bytes at the rate; rotation 2 %, gate|up
            // 66 %, down the rest, starting 1.5 µs before gate|up ends (PDL).
            *self.graph += 1;
            let g = Via::Graph(*self.graph);
            let experts = expected_distinct_experts_per_rank(m.spec, s.rows);
            let span = self.rate_dur(m.bytes.moe_layer_weight_bytes(experts, s.rows), rates.smoe);
            // Rotation 2 % of the span, gate|up 66 %, a gap of at most 300 ns between them, and down the rest,
            // starting early by a quarter of gate|up (at most 1.5 µs) as PDL allows. The span is ≥ 1 µs
            // (`jittered`), so down always ends after gate|up: 0.32·span − gap > 0.
            let rot = ((span as f64 * 0.02) as i64).max(1);
            let gap = ((span as f64 * 0.01) as i64).min(300);
            let gu = ((span as f64 * 0.66) as i64).max(1);
            let early = (gu / 4).min(1_500);
            self.t += self.rng.range(250, 450);
            let rot_start = self.t;
            let gu_start = rot_start + rot + gap;
            let down_start = gu_start + gu - early;
            let down_end = rot_start + span;
            let units = m.units;
            let graph_kernel =
                |name: String, role: Role, start: i64, end: i64, grid: [u32; 3]| Kern {
                    name,
                    role,
                    stream: MAIN_STREAM,
                    start,
                    dur: end - start,
                    grid,
                    block: [256, 1, 1],
                    via: g,
                };
            self.kernels.push(graph_kernel(
                format!("void exl3_smoe_rot_kernel<{}>(__half const*, __half const*, __half*, int const*, int)", m.spec.model().hidden),
                Role::Rot,
                rot_start,
                rot_start + rot,
                [gr as u32, 1, 1],
            ));
            self.kernels.push(graph_kernel(
                format!("void exl3_smoe_gu_kernel<{gr}, 1>(__half const*, unsigned short const* const*, __half const* const*, __half const* const*, int const*, __half*, int)"),
                Role::Gu,
                gu_start,
                gu_start + gu,
                [(slots * units) as u32, 1, 1],
            ));
            self.kernels.push(graph_kernel(
                format!("void exl3_smoe_down_kernel<{gr}, 1>(__half const*, unsigned short const* const*, __half const* const*, __half const* const*, int const*, float const*, float*, int)"),
                Role::Down,
                down_start,
                down_end,
                [(slots * 40) as u32, 1, 1],
            ));
            self.t = down_end;
            self.nccl("AllReduce");
            self.residual_add();
        }
        // The head: its mHC site, the LM head, the logits all-gather (vocabulary split) and sampling.
        let d = self.rate_dur(m.bytes.mhc_prenorm, rates.mhc);
        self.push(
            format!("void hc_mix_partials_kernel<{}>(float const*, float const*, float*, float*, int, int)", m.spec.model().mhc_expansion),
            Role::Prenorm,
            d,
            [48, 1, 1],
            Via::Runtime,
        );
        let d = self.rate_dur(m.bytes.lm_head, rates.lm_head);
        let k = m.bytes.lm_head_bits.get();
        if c.lm_head_gemm {
            self.push(
                format!("void exl3_gemm_kernel<{k}, false, 1, 16, 32, 128, 4, 3>(__half const*, unsigned short const*, void*, int, int, int, int*, __half const*, __half*, __half const*)"),
                Role::Head { gemm: true },
                d,
                [48, 1, 1],
                Via::Runtime,
            );
        } else {
            self.push(
                format!("void exl3_mrow_head_kernel<{k}, {gr}, 1>(__half const*, unsigned short const*, __half const*, __half const*, __half*, int, int)"),
                Role::Head { gemm: false },
                d,
                [505, 1, 1],
                Via::Runtime,
            );
        }
        self.nccl("AllGather");
        let d = self.jittered(6_000.0);
        self.push(
            "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)".to_string(),
            Role::Torch,
            d,
            [s.rows as u32, 1, 1],
            Via::Runtime,
        );
    }

    /// A dense linear at prefill: reconstruct (plain, or fused Hadamard) then a cuBLAS GEMM over `rows`.
    fn reconstructed(&mut self, shape: Shape, bits: Bits, had: bool, rows: u64) {
        // The reconstruct grids cover 128 columns (and, fused, 128 rows) a block; a slice they cannot tile
        // goes through exl3_gemm instead (only small test specs have one).
        if !shape.n().is_multiple_of(128) || (had && !shape.k().is_multiple_of(128)) {
            return self.gemm(shape, bits, rows);
        }
        let (kind, grid, suffix, name) = if had {
            (
                ReconstructKernel::Hadamard,
                [(shape.n() / 128) as u32, (shape.k() / 128) as u32, 1],
                "_had",
                format!(
                    "void reconstruct_had_kernel<{}, 1>(__half*, unsigned short const*, __half const*, __half const*, int, int)",
                    bits.get()
                ),
            )
        } else {
            (
                ReconstructKernel::Plain,
                [(shape.n() / 128) as u32, (shape.k() / 16) as u32, 1],
                "",
                format!(
                    "void reconstruct_kernel<{}, 1>(__half*, unsigned short const*, int, int)",
                    bits.get()
                ),
            )
        };
        // The grid is a valid reconstruct grid by construction (dimensions are multiples of 128).
        let bytes = reconstruct_bytes(kind, grid, bits).map_or(0.0, |b| b.total() as f64);
        let d = self.rate_dur(bytes, self.plan.rates.reconstruct);
        self.push(
            name,
            Role::Reconstruct {
                key: format!("{}x{}{suffix}", shape.k(), shape.n()),
                bytes,
            },
            d,
            grid,
            Via::Runtime,
        );
        // 60 TFLOP/s of fp16 GEMM: 2·m·k·n / 60e3 ns.
        let flops = 2.0 * rows as f64 * shape.k() as f64 * shape.n() as f64;
        let d = self.jittered(flops / 60e3);
        self.push(
            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas".to_string(),
            Role::CublasGemm,
            d,
            [(shape.n() / 128) as u32, rows.div_ceil(128) as u32, 1],
            Via::Runtime,
        );
    }

    /// A dense linear on the suffix layers (rows under exllamav3's reconstruct threshold): exl3_gemm directly.
    fn gemm(&mut self, shape: Shape, bits: Bits, rows: u64) {
        let bytes =
            kl1_shapes::Exl3Linear::new(shape, bits).bytes() as f64 * rows.div_ceil(16) as f64;
        let d = self.rate_dur(bytes, self.plan.rates.dense);
        self.push(
            format!("void exl3_gemm_kernel<{}, false, 1, 16, 32, 128, 4, 3>(__half const*, unsigned short const*, void*, int, int, int, int*, __half const*, __half*, __half const*)", bits.get()),
            Role::Gemm,
            d,
            [48, 1, 1],
            Via::Runtime,
        );
    }

    fn prefill_step(&mut self, s: &StepPlan, c: &CapturePlan) {
        let m = self.m;
        let rates = self.plan.rates;
        let sh = *m.spec.rank_shapes();
        let q = m.spec.quant().clone();
        for layer in 0..m.layers {
            let full = layer < m.full_layers;
            let rows = if full {
                s.rows
            } else {
                m.suffix_rows.min(s.rows)
            };
            // exllamav3 reconstructs above 144 rows (AUTO_RECONSTRUCT_THRESHOLD, domain.md §2.6).
            let dense = rows > 144;
            self.mhc_site();
            let attn_linears: [(Shape, Bits); 3] =
                [(sh.wq_a, q.wq_a), (sh.wkv, q.wkv), (sh.wq_b, q.wq_b)];
            for (shape, bits) in attn_linears {
                if dense {
                    self.reconstructed(shape, bits, false, rows);
                } else {
                    self.gemm(shape, bits, rows);
                }
            }
            let attn_ns = 40_000.0 + rows as f64 * (c.context as f64 / 8_000.0 + 30.0);
            let d = self.jittered(attn_ns);
            self.push(
                "void flash_fwd_kernel<Flash_fwd_kernel_traits<512, 64, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, false, false>(Flash_fwd_params)".to_string(),
                Role::Attn,
                d,
                [rows.div_ceil(64) as u32, 32, 1],
                Via::Runtime,
            );
            for _ in 0..sh.wo_a_slices {
                if dense {
                    self.reconstructed(sh.wo_a, q.wo_a, false, rows);
                } else {
                    self.gemm(sh.wo_a, q.wo_a, rows);
                }
            }
            if dense {
                self.reconstructed(sh.wo_b, q.wo_b, false, rows);
            } else {
                self.gemm(sh.wo_b, q.wo_b, rows);
            }
            self.nccl("AllReduce");
            self.mhc_site();
            self.routing();
            let experts = expected_distinct_experts_per_rank(m.spec, rows);
            let d = self.jittered(4_000.0 + rows as f64 * 2.0);
            self.push(
                format!(
                    "void tf_moe_gather_kernel<{}>(__half const*, int const*, __half*, int)",
                    m.spec.model().hidden
                ),
                Role::TfAux,
                d,
                [rows as u32, 1, 1],
                Via::Runtime,
            );
            let d = self.rate_dur(experts * m.bytes.expert.gate_up, rates.tf_gu);
            self.push(
                "void tf_moe_gate_up_kernel<128, 1>(__half const*, unsigned short const* const*, int const*, int const*, __half*, int)".to_string(),
                Role::TfGu { full },
                d,
                [(experts.ceil() as u32) * m.units as u32, 1, 1],
                Via::Runtime,
            );
            let d = self.rate_dur(experts * m.bytes.expert.down, rates.tf_down);
            self.push(
                "void tf_moe_down_kernel<128, 1>(__half const*, unsigned short const* const*, int const*, int const*, float*, int)".to_string(),
                Role::TfDown { full },
                d,
                [(experts.ceil() as u32) * 40, 1, 1],
                Via::Runtime,
            );
            let d = self.jittered(4_000.0 + rows as f64 * 2.0);
            self.push(
                format!("void tf_moe_scatter_kernel<{}>(float const*, int const*, float const*, __half*, int)", m.spec.model().hidden),
                Role::TfAux,
                d,
                [rows as u32, 1, 1],
                Via::Runtime,
            );
            // The shared expert: gate, up and down at its K.
            if let (Some(gu), Some(dn)) = (sh.shared_gate_up, sh.shared_down) {
                for shape in [gu, gu, dn] {
                    if dense {
                        self.reconstructed(shape, q.shared_expert, true, rows);
                    } else {
                        self.gemm(shape, q.shared_expert, rows);
                    }
                }
            }
            self.nccl("AllReduce");
            self.residual_add();
        }
        // The last position's logits only.
        let d = self.rate_dur(m.bytes.lm_head, rates.lm_head);
        self.push(
            format!("void exl3_gemm_kernel<{}, false, 1, 16, 32, 128, 4, 3>(__half const*, unsigned short const*, void*, int, int, int, int*, __half const*, __half*, __half const*)", m.bytes.lm_head_bits.get()),
            Role::Gemm,
            d,
            [48, 1, 1],
            Via::Runtime,
        );
    }
}

/// Relative µs with three decimals, as current Kineto writes `ts` and `dur`.
fn us(ns: i64) -> String {
    kineto_trace::ns_to_us_string(ns)
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

/// One rank's trace as Kineto JSON.
fn trace_json(spec: &Spec, c: &CapturePlan, rank: u64, ranks: u64, steps: &[Laid]) -> String {
    let pid_cpu = 4242 + rank;
    let tid_cpu = pid_cpu;
    let mut ev: Vec<String> = Vec::new();
    ev.push(format!(
        r#"{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {pid_cpu}, "tid": 0, "args": {{"name": "python3"}}}}"#
    ));
    ev.push(format!(
        r#"{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {pid_cpu}, "tid": {tid_cpu}, "args": {{"name": "thread {tid_cpu} (python3)"}}}}"#
    ));
    ev.push(format!(
        r#"{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {PID_GPU}, "tid": 0, "args": {{"name": "GPU {PID_GPU}"}}}}"#
    ));
    for st in [MAIN_STREAM, SIDE_STREAM] {
        ev.push(format!(
            r#"{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {PID_GPU}, "tid": {st}, "args": {{"name": "stream {st}"}}}}"#
        ));
    }
    let mut corr: u64 = 100 + rank * 7;
    let mut cpu_free: i64 = 0;
    for (ext, st) in (1u64..).zip(steps) {
        // Launch groups in kernel order: one launch per eager kernel, one per graph replay.
        let mut order: Vec<usize> = (0..st.kernels.len()).collect();
        order.sort_by_key(|&i| (st.kernels[i].start, i));
        let mut groups: Vec<(Via, Vec<usize>)> = Vec::new();
        for i in order {
            let via = st.kernels[i].via;
            match (via, groups.last_mut()) {
                (Via::Graph(g), Some((Via::Graph(h), v))) if g == *h => v.push(i),
                _ => groups.push((via, vec![i])),
            }
        }
        let lo = st.kernels.iter().map(|k| k.start).min().unwrap_or(0);
        let hi = st.kernels.iter().map(Kern::end).max().unwrap_or(0);
        // The CPU runs ahead of the GPU: the step's launches start 40 µs before its first kernel, 2.5 µs apart,
        // each at least 3 µs before its first kernel.
        let ann_start = (lo - 45_000).max(cpu_free + 2_000);
        let mut cpu = ann_start + 5_000;
        let mut last_end = cpu;
        for (via, idx) in &groups {
            corr += 1;
            let first = &st.kernels[idx[0]];
            let ts = cpu.min(first.start - 3_000);
            let (cat, name, cbid) = match via {
                Via::Runtime => ("cuda_runtime", "cudaLaunchKernel", 211),
                Via::Driver => ("cuda_driver", "cuLaunchKernel", 307),
                Via::Graph(_) => ("cuda_runtime", "cudaGraphLaunch", 311),
            };
            ev.push(format!(
                r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid_cpu}, "tid": {tid_cpu}, "ts": {}, "dur": {}, "args": {{"cbid": {cbid}, "correlation": {corr}}}}}"#,
                us(ts),
                us(2_000)
            ));
            ev.push(format!(
                r#"{{"ph": "s", "id": {corr}, "pid": {pid_cpu}, "tid": {tid_cpu}, "ts": {}, "cat": "ac2g", "name": "ac2g"}}"#,
                us(ts)
            ));
            ev.push(format!(
                r#"{{"ph": "f", "id": {corr}, "pid": {PID_GPU}, "tid": {}, "ts": {}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}"#,
                first.stream,
                us(first.start)
            ));
            for (node, &i) in idx.iter().enumerate() {
                let k = &st.kernels[i];
                let graph = match via {
                    Via::Graph(g) => format!(r#", "graph id": {g}, "graph node id": {}"#, node + 1),
                    _ => String::new(),
                };
                ev.push(format!(
                    r#"{{"ph": "X", "cat": "kernel", "name": "{}", "pid": {PID_GPU}, "tid": {}, "ts": {}, "dur": {}, "args": {{"queued": 0, "device": {PID_GPU}, "context": 1, "stream": {}, "correlation": {corr}, "registers per thread": 96, "shared memory": 49152, "blocks per SM": 1.0, "warps per SM": 8.0, "grid": [{}, {}, {}], "block": [{}, {}, {}], "est. achieved occupancy %": 12{graph}}}}}"#,
                    escape(&k.name),
                    k.stream,
                    us(k.start),
                    us(k.dur),
                    k.stream,
                    k.grid[0],
                    k.grid[1],
                    k.grid[2],
                    k.block[0],
                    k.block[1],
                    k.block[2],
                ));
            }
            last_end = ts + 2_000;
            cpu = ts + 2_500;
        }
        let ann_end = last_end + 5_000;
        cpu_free = ann_end;
        let name = annotation(st.index, st.plan.phase, st.plan.rows, st.plan.requests);
        ev.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "{name}", "pid": {pid_cpu}, "tid": {tid_cpu}, "ts": {}, "dur": {}, "args": {{"External id": {ext}, "Record function id": 0, "Ev Idx": {ext}}}}}"#,
            us(ann_start),
            us(ann_end - ann_start)
        ));
        ev.push(format!(
            r#"{{"ph": "X", "cat": "gpu_user_annotation", "name": "{name}", "pid": {PID_GPU}, "tid": {MAIN_STREAM}, "ts": {}, "dur": {}, "args": {{"External id": {ext}}}}}"#,
            us(lo),
            us(hi - lo)
        ));
    }
    let end = steps
        .iter()
        .flat_map(|s| s.kernels.iter().map(Kern::end))
        .max()
        .unwrap_or(0);
    ev.push(format!(
        r#"{{"ph": "i", "cat": "", "name": "Record Window End", "s": "g", "pid": "", "tid": "", "ts": {}}}"#,
        us(end + 1_000)
    ));
    let gpu = spec.gpu();
    let mut out = String::with_capacity(ev.iter().map(|e| e.len() + 4).sum::<usize>() + 2048);
    let _ = write!(
        out,
        r#"{{
  "schemaVersion": 1,
  "deviceProperties": [
    {{"id": 0, "name": "NVIDIA {} (synthetic)", "totalGlobalMem": 128526278656, "computeMajor": 12, "computeMinor": 1, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 1536, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 48, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 101376, "sharedMemPerMultiprocessor": 102400}}
  ],
  "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {ranks}, "pg_count": 1, "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": {ranks}, "ranks": []}}], "nccl_version": "2.27.3"}},
  "kl1_generator": "kl1-bandwidth synth: {} {}:{}",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": {BASE_TIME_NS},
  "traceEvents": [
"#,
        escape(&gpu.name),
        escape(spec.name()),
        escape(&c.cell),
        escape(&c.capture)
    );
    let n = ev.len();
    for (i, e) in ev.into_iter().enumerate() {
        out.push_str("  ");
        out.push_str(&e);
        out.push_str(if i + 1 < n { ",\n" } else { "\n" });
    }
    let _ = write!(
        out,
        r#"  ],
  "traceName": "{}.{}.rank{rank}.pt.trace.json"
}}
"#,
        escape(&c.cell),
        escape(&c.capture)
    );
    out
}

/// The values the analysis must report, from the kernels by role.
fn step_truths(m: &Model<'_>, steps: &[Laid]) -> Vec<StepTruth> {
    let bounds: Vec<(i64, i64)> = steps
        .iter()
        .map(|s| {
            (
                s.kernels.iter().map(|k| k.start).min().unwrap_or(0),
                s.kernels.iter().map(Kern::end).max().unwrap_or(0),
            )
        })
        .collect();
    let mut out = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let (lo, hi) = bounds[i];
        let next = bounds.get(i + 1).map(|b| b.0);
        let mut e: BTreeMap<String, f64> = BTreeMap::new();
        let ms = |ns: i64| ns as f64 / 1e6;
        let sum = |f: &dyn Fn(&Role) -> bool| -> i64 {
            s.kernels.iter().filter(|k| f(&k.role)).map(|k| k.dur).sum()
        };
        let count = |f: &dyn Fn(&Role) -> bool| s.kernels.iter().filter(|k| f(&k.role)).count();
        let gbps = |bytes: f64, ns: i64| bytes / ns as f64;
        e.insert("rows".into(), s.plan.rows as f64);
        if let Some(n) = next {
            e.insert("period_ms".into(), ms(n - lo));
        }
        // Families: sum and union of each.
        let mut fams: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
        for k in &s.kernels {
            fams.entry(k.role.family())
                .or_default()
                .push((k.start, k.end()));
        }
        for (f, iv) in &fams {
            let total: i64 = iv.iter().map(|(a, b)| b - a).sum();
            e.insert(format!("family_sum_ms.{f}"), ms(total));
            e.insert(
                format!("family_union_ms.{f}"),
                ms(union_within(iv.iter().copied(), lo, hi)),
            );
        }
        let busy = union_within(s.kernels.iter().map(|k| (k.start, k.end())), lo, hi);
        e.insert("sp1.idle".into(), ms(hi - lo - busy));
        match s.plan.phase {
            CaptureKind::Decode => {
                let mut all_bytes = 0.0;
                for (j, (name, _, bytes)) in m.dense.iter().enumerate() {
                    let n = count(&|r| *r == Role::Dense(j));
                    let ns = sum(&|r| *r == Role::Dense(j));
                    e.insert(format!("dense.{name}.launches"), n as f64);
                    e.insert(format!("dense.{name}.us_per_step"), ns as f64 / 1e3);
                    e.insert(format!("dense.{name}.gbps"), gbps(bytes * n as f64, ns));
                    all_bytes += bytes * n as f64;
                }
                let dense = |r: &Role| matches!(r, Role::Dense(_));
                e.insert("dense.all.launches".into(), count(&dense) as f64);
                e.insert("dense.all.gbps".into(), gbps(all_bytes, sum(&dense)));
                e.insert(
                    "dense.lm_head.gbps".into(),
                    gbps(m.bytes.lm_head, sum(&|r| matches!(r, Role::Head { .. }))),
                );
                let nr = count(&|r| *r == Role::Router);
                e.insert("dense.router.launches".into(), nr as f64);
                e.insert(
                    "dense.router.gbps".into(),
                    gbps(m.bytes.router * nr as f64, sum(&|r| *r == Role::Router)),
                );
                let np = count(&|r| *r == Role::Prenorm);
                e.insert("dense.hc_prenorm.launches".into(), np as f64);
                e.insert(
                    "dense.hc_prenorm.gbps".into(),
                    gbps(
                        m.bytes.mhc_prenorm * np as f64,
                        sum(&|r| *r == Role::Prenorm),
                    ),
                );
                // Sparse MoE: rotation start → down end of each layer, by role and order.
                let rots: Vec<&Kern> = s.kernels.iter().filter(|k| k.role == Role::Rot).collect();
                let gus: Vec<&Kern> = s.kernels.iter().filter(|k| k.role == Role::Gu).collect();
                let downs: Vec<&Kern> = s.kernels.iter().filter(|k| k.role == Role::Down).collect();
                let span: i64 = rots
                    .iter()
                    .zip(&downs)
                    .map(|(r, d)| d.end() - r.start)
                    .sum();
                let after: i64 = gus.iter().zip(&downs).map(|(g, d)| d.end() - g.end()).sum();
                let rows = s.plan.rows;
                let experts = expected_distinct_experts_per_rank(m.spec, rows);
                let layers = downs.len() as f64;
                e.insert(
                    "smoe.gbps_if_uniform".into(),
                    gbps(m.bytes.moe_layer_weight_bytes(experts, rows) * layers, span),
                );
                e.insert("smoe.span_ms".into(), ms(span));
                e.insert("smoe.gu_ms".into(), ms(gus.iter().map(|k| k.dur).sum()));
                e.insert("smoe.rot_ms".into(), ms(rots.iter().map(|k| k.dur).sum()));
                e.insert("smoe.down_after_gu_ms".into(), ms(after));
                let gr = graph_rows(rows);
                e.insert("smoe.graph_rows".into(), gr as f64);
                e.insert("smoe.graph_slots".into(), (gr * (m.top_k + 1)) as f64);
                e.insert("smoe.requests".into(), s.plan.requests as f64);
                e.insert("smoe.unique_uniform".into(), experts);
            }
            CaptureKind::Prefill => {
                for (tag, full) in [("full", true), ("suffix", false)] {
                    let gu_ns = sum(&|r| *r == Role::TfGu { full });
                    let dn_ns = sum(&|r| *r == Role::TfDown { full });
                    let n = count(&|r| *r == Role::TfGu { full });
                    if n == 0 {
                        continue;
                    }
                    let rows = if full {
                        s.plan.rows
                    } else {
                        m.suffix_rows.min(s.plan.rows)
                    };
                    let experts = expected_distinct_experts_per_rank(m.spec, rows);
                    e.insert(format!("tf.{tag}.layers"), n as f64);
                    e.insert(format!("tf.{tag}.rows"), rows as f64);
                    e.insert(
                        format!("tf.{tag}.gu_gbps_if_uniform"),
                        gbps(experts * m.bytes.expert.gate_up * n as f64, gu_ns),
                    );
                    e.insert(
                        format!("tf.{tag}.down_gbps_if_uniform"),
                        gbps(experts * m.bytes.expert.down * n as f64, dn_ns),
                    );
                }
                let mut rec: BTreeMap<String, (usize, f64, i64)> = BTreeMap::new();
                for k in &s.kernels {
                    if let Role::Reconstruct { key, bytes } = &k.role {
                        let x = rec.entry(key.clone()).or_default();
                        x.0 += 1;
                        x.1 += bytes;
                        x.2 += k.dur;
                    }
                }
                let (mut tb, mut tns, mut tn) = (0.0, 0i64, 0usize);
                for (key, (n, bytes, ns)) in &rec {
                    e.insert(format!("reconstruct.{key}.launches"), *n as f64);
                    e.insert(format!("reconstruct.{key}.gbps"), gbps(*bytes, *ns));
                    tb += bytes;
                    tns += ns;
                    tn += n;
                }
                if tn > 0 {
                    e.insert("reconstruct.all.launches".into(), tn as f64);
                    e.insert("reconstruct.all.gbps".into(), gbps(tb, tns));
                }
            }
        }
        let analysed =
            next.is_some() && (s.plan.phase == CaptureKind::Decode || s.plan.rows >= m.min_rows);
        out.push(StepTruth {
            index: s.index,
            phase: s.plan.phase.as_str().to_string(),
            rows: s.plan.rows,
            requests: s.plan.requests,
            analysed,
            span_ms: ms(hi - lo),
            expected: e,
        });
    }
    out
}
