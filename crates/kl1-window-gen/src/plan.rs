//! What to generate: the captures, their steps (phase, rows, requests), and the GB/s each kernel family
//! runs at.

use serde::Serialize;

use kl1_bandwidth::CaptureKind;

use crate::Error;

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
