//! The GPU timeline of a KL1 window: what each generated kernel is ([`Role`], never read back from its
//! name), how it is launched, the per-rank quantities the layout needs, and the layout of every step of a
//! capture ([`lay_out`]) by a [`Builder`] that appends kernels at their family's rate with a deterministic
//! jitter. A decode step's kernels are `decode.rs`, a prefill step's `prefill.rs`.

mod decode;
mod prefill;

use kl1_bandwidth::CaptureKind;
use kl1_shapes::{Bits, Kl1Bytes, Spec};

use crate::plan::{CapturePlan, Plan, StepPlan};

/// What a generated kernel is, for the truth (never derived from its name).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Role {
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
    pub(crate) fn family(&self) -> &'static str {
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
pub(crate) enum Via {
    /// `cudaLaunchKernel` (runtime).
    Runtime,
    /// `cuLaunchKernel` (driver, as Triton launches).
    Driver,
    /// Part of the CUDA-graph replay with this group number.
    Graph(u64),
}

#[derive(Debug, Clone)]
pub(crate) struct Kern {
    pub(crate) name: String,
    pub(crate) role: Role,
    pub(crate) stream: u32,
    pub(crate) start: i64,
    pub(crate) dur: i64,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) via: Via,
}

impl Kern {
    pub(crate) fn end(&self) -> i64 {
        self.start + self.dur
    }
}

pub(crate) const MAIN_STREAM: u32 = 7;
pub(crate) const SIDE_STREAM: u32 = 13;
pub(crate) const PID_GPU: u32 = 0;
/// Relative time of the first step, ns (Kineto's times are relative to `baseTimeNanoseconds`).
pub(crate) const T0: i64 = 2_000_000;
pub(crate) const BASE_TIME_NS: i64 = 1_765_432_100_000_000_000;
/// Idle GPU time between steps (the server collecting results and scheduling), ns.
pub(crate) const STEP_GAP: i64 = 180_000;

/// A deterministic generator (splitmix64).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [−1, 1].
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// Uniform integer in [lo, hi].
    pub(crate) fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo + 1).max(1) as u64;
        lo + (self.next() % span) as i64
    }
}

/// Rows the decode graph is captured for: the smallest of 1, 2, 4, 8, 16, … that holds `rows`.
pub(crate) fn graph_rows(rows: u64) -> u64 {
    rows.max(1).next_power_of_two()
}

/// The per-rank quantities the generator needs, computed once.
pub(crate) struct Model<'a> {
    pub(crate) spec: &'a Spec,
    /// Weight bytes per kernel, as `kl1-bandwidth` reads them from the spec's weights table.
    pub(crate) bytes: Kl1Bytes,
    pub(crate) dense: Vec<(String, Bits, f64)>,
    pub(crate) layers: u64,
    pub(crate) full_layers: u64,
    pub(crate) suffix_rows: u64,
    pub(crate) min_rows: u64,
    pub(crate) units: u64,
    pub(crate) top_k: u64,
}

/// One step as laid out.
pub(crate) struct Laid {
    pub(crate) plan: StepPlan,
    pub(crate) index: u64,
    pub(crate) kernels: Vec<Kern>,
}

/// Lays every step of a capture out on the GPU timeline.
pub(crate) fn lay_out(m: &Model<'_>, plan: &Plan, c: &CapturePlan, rng: &mut Rng) -> Vec<Laid> {
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

pub(crate) struct Builder<'a, 'm> {
    pub(crate) m: &'a Model<'m>,
    pub(crate) plan: &'a Plan,
    pub(crate) rng: &'a mut Rng,
    /// Main-stream cursor, ns.
    pub(crate) t: i64,
    pub(crate) kernels: Vec<Kern>,
    pub(crate) graph: &'a mut u64,
}

pub(crate) const ARGS_MROW: &str = "(__half const*, unsigned short const* const*, __half const* const*, __half const* const*, __half* const*, int const*, int, int)";

impl Builder<'_, '_> {
    /// `base` ns with the plan's jitter, at least 1 µs.
    pub(crate) fn jittered(&mut self, base: f64) -> i64 {
        let f = 1.0 + self.plan.jitter * self.rng.unit();
        ((base * f).round() as i64).max(1_000)
    }

    /// A kernel reading `bytes` at `gbps` (1 GB/s = 1 B/ns), jittered.
    pub(crate) fn rate_dur(&mut self, bytes: f64, gbps: f64) -> i64 {
        self.jittered(bytes / gbps)
    }

    /// Appends a main-stream kernel after a launch gap.
    pub(crate) fn push(
        &mut self,
        name: String,
        role: Role,
        dur: i64,
        grid: [u32; 3],
        via: Via,
    ) -> usize {
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
}
