//! A handcrafted two-layer trace over a tiny spec (tests/data/tiny-spec.toml), every expected value worked
//! out by hand in the comments: the byte counts from the EXL3 formulas (docs/formulas.md), the times from
//! the kernel intervals written below. Nothing here comes from the generator or from the analysis's output.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{close, sha256_hex};
use kl1_bandwidth::{Kl1Rules, Prefill, analyze};
use kl1_shapes::Spec;
use serde_json::{Value, json};

fn tiny_spec() -> Spec {
    Spec::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tiny-spec.toml"))
        .expect("tiny spec")
}

/// A Kineto trace under construction: CPU thread (pid 1, tid 1), GPU device 0, streams 7 and 9.
#[derive(Default)]
struct Trace {
    events: Vec<Value>,
    corr: u64,
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

impl Trace {
    fn annotation(&mut self, name: &str, from: i64, to: i64) {
        self.events.push(
            json!({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1,
                                "ts": us(from), "dur": us(to - from)}),
        );
    }

    /// A kernel launched by its own cudaLaunchKernel at `launch` (ns), running [start, end) on `stream`.
    fn kernel(
        &mut self,
        name: &str,
        launch: i64,
        start: i64,
        end: i64,
        grid: [u32; 3],
        stream: u32,
    ) {
        self.corr += 1;
        let c = self.corr;
        self.events.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                                "tid": 1, "ts": us(launch), "dur": 1.0, "args": {"correlation": c}}));
        self.events.push(json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                                "ts": us(start), "dur": us(end - start),
                                "args": {"device": 0, "stream": stream, "correlation": c, "grid": grid,
                                         "block": [256, 1, 1]}}));
    }

    fn write(&self, path: &Path, rank: u64) -> String {
        let v = json!({"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 2},
                       "traceEvents": self.events});
        let text = serde_json::to_string(&v).expect("json");
        std::fs::write(path, &text).expect("write");
        sha256_hex(text.as_bytes())
    }
}

const MROW: &str = "void exl3_mrow_kernel<4, 2, 1>(__half const*)";
const T_A: i64 = 100_000;

/// Decode step 1 (rows 2, requests 1): two layers at t = 100 000 and 110 000 ns, the head at 120 000;
/// step 2 at 200 000 (only to give step 1 its period).
fn decode_trace() -> Trace {
    let mut t = Trace::default();
    t.annotation("kl1.step#1 phase=decode rows=2 requests=1", 0, 50_000);
    t.annotation("kl1.step#2 phase=decode rows=1 requests=1", 60_000, 90_000);
    let mut launch = 1_000;
    let mut k = |t: &mut Trace, name: &str, s: i64, e: i64, grid: [u32; 3], stream: u32| {
        t.kernel(name, launch, s, e, grid, stream);
        launch += 1_000;
    };
    for layer in 0..2 {
        let b = T_A + layer * 10_000;
        k(
            &mut t,
            "void hc_mix_partials_kernel<2>(float const*)",
            b,
            b + 128,
            [1, 1, 1],
            7,
        );
        k(&mut t, MROW, b + 200, b + 328, [8, 1, 1], 7); // wq_a+wkv, 128 ns
        k(&mut t, MROW, b + 400, b + 464, [8, 1, 1], 7); // wq_b, 64 ns
        k(&mut t, MROW, b + 500, b + 568, [8, 1, 1], 7); // wo_a, 68 ns
        k(&mut t, MROW, b + 600, b + 667, [8, 1, 1], 7); // wo_b, 67 ns
        k(
            &mut t,
            "void routing_gemv_kernel<8>(__half const*)",
            b + 700,
            b + 732,
            [1, 1, 1],
            7,
        );
        k(
            &mut t,
            "_l2_prefetch_kernel",
            b + 800,
            b + 900,
            [1, 1, 1],
            9,
        ); // beside the rotation
        k(
            &mut t,
            "void exl3_smoe_rot_kernel<256>(__half const*)",
            b + 800,
            b + 900,
            [2, 1, 1],
            7,
        );
        // grid x 6 = 6 slots × (I_rank/128 = 1): graph rows 6 / (top_k + 1) = 2.
        k(
            &mut t,
            "void exl3_smoe_gu_kernel<2, 1>(__half const*)",
            b + 910,
            b + 1400,
            [6, 1, 1],
            7,
        );
        k(
            &mut t,
            "void exl3_smoe_down_kernel<2, 1>(__half const*)",
            b + 1390,
            b + 1937,
            [6, 1, 1],
            7,
        );
    }
    k(
        &mut t,
        "void hc_mix_partials_kernel<2>(float const*)",
        120_000,
        120_128,
        [1, 1, 1],
        7,
    );
    k(
        &mut t,
        "void exl3_mrow_head_kernel<6, 2, 1>(__half const*)",
        120_200,
        120_424,
        [2, 1, 1],
        7,
    );
    // Step 2.
    t.kernel(
        "void at::native::vectorized_elementwise_kernel<4>(int)",
        61_000,
        200_000,
        201_000,
        [1, 1, 1],
        7,
    );
    t
}

/// Prefill step 1 (rows 2048): layer 0 full, layer 1 suffix (full_layers = 1), two plain reconstructs of
/// a 256×256 slice and one fused-Hadamard reconstruct of a 256×128 slice; step 2 a decode tail.
fn prefill_trace() -> Trace {
    let mut t = Trace::default();
    t.annotation("kl1.step#1 phase=prefill rows=2048 requests=1", 0, 50_000);
    t.annotation("kl1.step#2 phase=decode rows=1 requests=1", 60_000, 90_000);
    let b = T_A;
    t.kernel(
        "void reconstruct_kernel<4, 1>(__half*)",
        1_000,
        b,
        b + 1024,
        [2, 16, 1],
        7,
    );
    t.kernel(
        "void reconstruct_kernel<4, 1>(__half*)",
        2_000,
        b + 2000,
        b + 3024,
        [2, 16, 1],
        7,
    );
    t.kernel(
        "void reconstruct_had_kernel<4, 1>(__half*)",
        3_000,
        b + 4000,
        b + 4646,
        [1, 2, 1],
        7,
    );
    t.kernel(
        "void tf_moe_gate_up_kernel<128, 1>(__half const*)",
        4_000,
        b + 5000,
        b + 6120,
        [8, 1, 1],
        7,
    );
    t.kernel(
        "void tf_moe_down_kernel<128, 1>(__half const*)",
        5_000,
        b + 6200,
        b + 6760,
        [8, 1, 1],
        7,
    );
    t.kernel(
        "void tf_moe_gate_up_kernel<128, 1>(__half const*)",
        6_000,
        b + 7000,
        b + 8400,
        [8, 1, 1],
        7,
    );
    t.kernel(
        "void tf_moe_down_kernel<128, 1>(__half const*)",
        7_000,
        b + 8500,
        b + 9200,
        [8, 1, 1],
        7,
    );
    t.kernel(
        "void at::native::vectorized_elementwise_kernel<4>(int)",
        61_000,
        200_000,
        201_000,
        [1, 1, 1],
        7,
    );
    t
}

/// A window with one decode and one prefill capture, both ranks the same trace.
fn window() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("hand");
    std::fs::create_dir(&dir).expect("mkdir");
    let mut rows = Vec::new();
    for (cell, capture, trace) in [
        ("prof-short-b1", "decode", decode_trace()),
        ("prof-32k-b1", "prefill-early", prefill_trace()),
    ] {
        for rank in 0..2 {
            let file = format!("{capture}.{rank}.json");
            let sha = trace.write(&dir.join(&file), rank);
            rows.push(json!({"cell": cell, "capture": capture, "rank": rank, "file": file, "sha256": sha}));
        }
    }
    std::fs::write(
        dir.join("traces-manifest.json"),
        serde_json::to_string(&rows).expect("json"),
    )
    .expect("manifest");
    (tmp, dir)
}

fn check(row: &BTreeMap<String, f64>, want: &[(&str, f64)]) {
    for (key, v) in want {
        let got = row
            .get(*key)
            .copied()
            .unwrap_or_else(|| panic!("`{key}` missing"));
        assert!(close(got, *v, 1e-12), "`{key}` = {got}, by hand {v}");
    }
}

#[test]
fn decode_and_prefill_numbers_match_the_hand_computation() {
    let (_tmp, dir) = window();
    let rules = Kl1Rules::builtin()
        .with_prefill(Prefill {
            full_layers: 1,
            suffix_rows: 128,
            min_rows: 1024,
        })
        .expect("prefill");
    let report = analyze(&[dir], &tiny_spec(), &rules, None).expect("analyse");
    let w = &report.windows[0];
    assert_eq!(w.name, "hand");
    let d = &w.captures[0].ranks[0];
    assert_eq!((d.steps, d.step_index.clone()), (1, vec![1]));
    let row = &d.per_step[0];

    // Bytes per rank (k·n·K/8 + 2k + 2n), K = 4:
    //   wq_a 256×128: 16384 + 512 + 256 = 17152; wkv 256×64: 8192 + 512 + 128 = 8832 → wq_a+wkv 25984
    //   wq_b 128×(4/2·64 = 128): 8192 + 256 + 256 = 8704; wo_a 1 slice of 128×128: 8704;
    //   wo_b (2/2·128)×256: 16384 + 256 + 512 = 17152; a layer: 60544.
    // LM head 256×(512/2) at K = 6: 49152 + 512 + 512 = 50176. Router 8·256·2 + 8·2 = 4112.
    // mHC (2+2)·2 · 2·256 · 4 = 16384.
    check(
        row,
        &[
            ("period_ms", 0.1), // 200 000 − 100 000 ns
            ("rows", 2.0),
            ("dense.wq_a+wkv.launches", 2.0),
            ("dense.wq_a+wkv.us_per_step", 0.256),
            ("dense.wq_a+wkv.mb_per_launch", 0.025984),
            ("dense.wq_a+wkv.gbps", 25984.0 * 2.0 / 256.0), // 203
            ("dense.wq_b.gbps", 8704.0 * 2.0 / 128.0),      // 136
            ("dense.wo_a.gbps", 8704.0 * 2.0 / 136.0),      // 128
            ("dense.wo_b.gbps", 17152.0 * 2.0 / 134.0),     // 256
            ("dense.all.launches", 8.0),
            ("dense.all.mb_per_step", 0.121088),
            ("dense.all.gbps", 121088.0 / 654.0),
            ("dense.lm_head.gbps", 50176.0 / 224.0), // 224
            ("dense.lm_head.mb_per_step", 0.050176),
            ("dense.router.gbps", 4112.0 * 2.0 / 64.0), // 128.5
            ("dense.hc_prenorm.launches", 3.0),
            ("dense.hc_prenorm.gbps", 16384.0 * 3.0 / 384.0), // 128
        ],
    );

    // Sparse MoE. Expert per rank at K = 2, I_rank = 128: gate|up 2·(8192 + 512 + 256) = 17920,
    // down 8192 + 256 + 512 = 8960, 26880 in all. Shared expert (K = 4, 128 wide): 2·17152 + 17152 = 51456.
    // Distinct experts for 2 rows picking 2 of 8: 8·(1 − (6/8)²) = 3.5; at 2 per request (1 request): 2.
    // Layer bytes: 3.5·26880 + 51456 = 145536; 2·26880 + 51456 = 105216. Layer span 1937 − 800 = 1137 ns.
    // Readable at 273 GB/s: (273·1137 − 51456)/26880 = 258945/26880; at the 240 GB/s claim: 221424/26880.
    check(
        row,
        &[
            ("smoe.rows", 2.0),
            ("smoe.requests", 1.0),
            ("smoe.graph_slots", 6.0),
            ("smoe.graph_rows", 2.0),
            ("smoe.span_ms", 2.0 * 1137.0 / 1e6),
            ("smoe.gu_ms", 2.0 * 490.0 / 1e6),
            ("smoe.down_after_gu_ms", 2.0 * 537.0 / 1e6), // down ends 537 ns after gate|up
            ("smoe.rot_ms", 2.0 * 100.0 / 1e6),
            ("smoe.shared_runs", 1.0),
            ("smoe.unique_uniform", 3.5),
            ("smoe.gbps_if_uniform", 145536.0 / 1137.0), // 128
            ("smoe.gbps_if_6_per_request", 105216.0 / 1137.0),
            ("smoe.unique_max_at_273", 258945.0 / 26880.0),
            ("smoe.unique_max_at_240", 221424.0 / 26880.0),
        ],
    );

    // Budgets over [100 000, 120 424): 20 424 ns. Per layer the rotation and l2pf share [800, 900) and
    // gate|up ∪ down = [910, 1937) = 1027 ns. Busy: 2·(128 + 327 + 32 + 100 + 1027) + 128 + 224 = 3580 ns,
    // idle 16 844 ns. sp1: l2pf is routed_moe, so [800, 900) is routed_moe's alone.
    check(
        row,
        &[
            ("sp1.routed_moe", 2.0 * 1127.0 / 1e6),
            ("sp1.dense", 654.0 / 1e6),
            ("sp1.mhc", 384.0 / 1e6),
            ("sp1.router", 64.0 / 1e6),
            ("sp1.lm_head", 224.0 / 1e6),
            ("sp1.idle", 16844.0 / 1e6),
            // l2pf apart: [800, 900) split 50/50 between l2pf and routed_moe.
            ("l2pf_apart.l2pf", 2.0 * 50.0 / 1e6),
            ("l2pf_apart.routed_moe", 2.0 * 1077.0 / 1e6),
            ("l2pf_apart.idle", 16844.0 / 1e6),
            // Without l2pf: the rotation has [800, 900) alone again.
            ("no_l2pf.routed_moe", 2.0 * 1127.0 / 1e6),
            ("no_l2pf.idle", 16844.0 / 1e6),
            ("moe_union_ms", 2.0 * (32.0 + 100.0 + 1027.0) / 1e6),
            ("expert_union_ms", 2.0 * 1127.0 / 1e6),
            ("router_topk_union_ms", 64.0 / 1e6),
            ("family_sum_ms.l2pf", 200.0 / 1e6),
            ("family_sum_ms.smoe_gu", 980.0 / 1e6),
            ("family_sum_ms.smoe_down", 1094.0 / 1e6),
            ("family_union_ms.mrow", 654.0 / 1e6),
        ],
    );
    assert!(!row.contains_key("l2pf_apart.unmatched") && !row.contains_key("sp1.l2pf"));
    // The per-rank mean of one step is that step; PDL overlaps: one a layer (down starts before gate|up ends).
    assert_eq!(d.mean, *row);
    assert_eq!(d.same_stream_overlaps, 2);
    assert_eq!(d.rows_hist, vec![(2, 1)]);

    // Prefill. Distinct experts: 2048 rows → 8 (every expert); 128 suffix rows → 8·(1 − 0.75¹²⁸).
    // Full layer: gate|up 8·17920 = 143360 B in 1120 ns (128 GB/s), down 8·8960 = 71680 B in 560 ns.
    // Reconstruct 256×256 (grid (2, 16), plain): read 256·256·4/8 = 32768, written 2·256·256 = 131072,
    // 163840 B in 1024 ns = 160 GB/s, twice. 256×128 fused Hadamard (grid (1, 2)): read 16384 + 512 + 256,
    // written 65536: 82688 B in 646 ns = 128 GB/s.
    let p = &w.captures[1].ranks[1];
    let row = &p.per_step[0];
    let d128 = 8.0 * (1.0 - 0.75f64.powi(128));
    check(
        row,
        &[
            ("rows", 2048.0),
            ("tf.full.layers", 1.0),
            ("tf.full.rows", 2048.0),
            ("tf.full.unique_uniform", 8.0),
            ("tf.full.gu_gbps_if_uniform", 128.0),
            ("tf.full.down_gbps_if_uniform", 128.0),
            ("tf.full.span_ms", 1760.0 / 1e6),
            ("tf.suffix.rows", 128.0),
            ("tf.suffix.unique_uniform", d128),
            ("tf.suffix.gu_gbps_if_uniform", d128 * 17920.0 / 1400.0),
            ("tf.suffix.down_gbps_if_uniform", d128 * 8960.0 / 700.0),
            ("reconstruct.256x256.launches", 2.0),
            ("reconstruct.256x256.K", 4.0),
            ("reconstruct.256x256.us", 2.048),
            ("reconstruct.256x256.gbps", 160.0),
            ("reconstruct.256x128_had.gbps", 128.0),
            ("reconstruct.all.launches", 3.0),
            ("reconstruct.all.gb", 410368.0 / 1e9),
            ("reconstruct.all.gbps", 410368.0 / 2694.0),
        ],
    );
    // Constants of the tiny spec.
    let c = &report.constants;
    assert_eq!(c["expert_gu_mb"], json!(0.01792));
    assert_eq!(c["shared_expert_mb"], json!(0.051456));
    assert_eq!(c["dense_mb_per_layer"]["wq_a+wkv"], json!(0.025984));
    assert_eq!(c["gb10_spec_gbps"], json!(273.0));
    // The seed's shape: [low, high] of the GPU table's CLAIM read bandwidth (GB10's `seed-source-read`,
    // 240–240 GB/s in crates/model-shapes/specs/gpus.toml); scripts read [1] as the 240 GB/s figure.
    assert_eq!(c["source_read_gbps"], json!([240.0, 240.0]));
    assert_eq!(c["source_read_gbps"][1], json!(240.0));
    assert_eq!(c["source_decode_gbps"], json!([]));
}
