//! Bytes, FLOPs and rates worked by hand: the expected values are the arithmetic that makes them, from the
//! model configs in `testdata/models/` (read by eye, not by this crate) and the formulas of
//! `docs/formulas.md` §9.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::{Path, PathBuf};

use kineto_trace::step::StepPattern;
use model_shapes::{GpuTable, ModelShape, RunOptions, model_from_config};
use roofline::{
    Bound, Counts, Error, GpuChoice, PhaseTokens, Setup, StepTokens, analyse, estimate, rates,
};

#[path = "../../../tests/corpus/mod.rs"]
mod corpus;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model(name: &str, tp: u64, ep: u64) -> ModelShape {
    let path = workspace().join("testdata/models").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let run = RunOptions {
        tp,
        ep,
        quant: None,
    };
    model_from_config(&text, name, &run).unwrap()
}

/// A number the estimate knows: every count of these steps is given, so no term may be `None`.
trait Known {
    fn known(self) -> f64;
}

impl Known for f64 {
    fn known(self) -> f64 {
        self
    }
}

impl Known for Option<f64> {
    fn known(self) -> f64 {
        self.expect("a known term")
    }
}

fn close(got: impl Known, want: f64) {
    let got = got.known();
    let tol = 1e-9 * want.abs().max(1.0);
    assert!((got - want).abs() <= tol, "got {got}, want {want}");
}

fn setup(m: ModelShape) -> Setup {
    Setup {
        kv_bytes: m.activation_bytes,
        model: m,
        pattern: StepPattern::builtin(),
        gpu: GpuChoice::FromTrace,
        table: GpuTable::builtin(),
        rules: kineto_trace::family::Rules::builtin(),
        given: roofline::Given::default(),
        captures: None,
    }
}

/// The shared vLLM trace: one decode step of 32 requests and 55,086 KV tokens of a gpt-oss-20b-like model
/// (hidden 2880, 24 layers alternating sliding-128 / full, 64 query and 8 KV heads of 64, 32 experts top-4
/// of intermediate 2880 in mxfp4, vocabulary 201,088, all else bf16) on an MI300X (its deviceProperties
/// name is empty: numSms 304 and 206,141,652,992 B identify it).
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn gpt_oss_20b_on_the_shared_vllm_decode_step() {
    let trace = corpus::corpus_file("serving/vllm_decode_full/graph_execution.json.gz");
    let t = analyse(&trace, &setup(model("gpt-oss-20b.json", 1, 1))).unwrap();
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    assert_eq!((t.gpu.as_str(), t.gpu_from), ("MI300X", "numSms+memory"));
    assert_eq!(t.steps.len(), 1);
    let s = &t.steps[0];
    let phases = s.tokens.phases.unwrap();
    assert_eq!(phases.decode, PhaseTokens::decode(32, 55_086));
    assert_eq!(phases.prefill, PhaseTokens::default());
    assert_eq!(s.tokens.from, "marker `tracelens`");
    assert!(s.unknown.is_empty(), "{:?}", s.unknown);

    // MEASURED, from the trace by plain json.load: first kernel start 6520618861901.761 µs, last kernel
    // end 6520618872601.742 µs; the 425 kernels do not overlap, so busy = Σ dur = 10,674.517 µs.
    assert_eq!(s.span_ns, 6_520_618_872_601_742 - 6_520_618_861_901_761);
    assert_eq!(s.busy_ns, 10_674_517);

    let e = &s.estimate;
    // Read every step, per layer (bf16 = 2 B): q 2880×4096 + bias, k and v 2880×512 + bias, o 4096×2880
    // + bias, sinks 64, two norms of 2880, router 2880×32 + bias 32; plus the final norm.
    let layer: u64 = 2 * (2880 * 4096 + 4096)
        + 2 * 2 * (2880 * 512 + 512)
        + 2 * (4096 * 2880 + 2880)
        + 2 * 64
        + 2 * 2 * 2880
        + 2 * (2880 * 32 + 32);
    close(e.bytes.weights, (24u64 * layer + 2 * 2880) as f64);
    // One expert in mxfp4 (k·n/2 + one E8M0 byte per 32 inputs) with bf16 biases:
    // gate_up 2880 → 5760: 2880·5760/2 + 90·5760 + 2·5760; down 2880 → 2880: 2880·2880/2 + 90·2880 + 2·2880.
    let expert: u64 =
        (2880 * 5760 / 2 + 90 * 5760 + 2 * 5760) + (2880 * 2880 / 2 + 90 * 2880 + 2 * 2880);
    assert_eq!(expert, 13_236_480);
    // Uniform routing of 32 tokens, top-4 of 32: 32·(1 − (28/32)^32) ≈ 31.55 distinct experts per layer.
    let d = 32.0 * (1.0 - (28.0f64 / 32.0).powi(32));
    close(e.experts.uniform, d);
    assert_eq!(e.experts.top_k_per_request, Some(32.0)); // min(32, 4·32)
    close(e.bytes.routed_experts, d * (expert * 24) as f64);
    // KV: 8 heads × (64 + 64) × 2 B = 2,048 B per token and layer. 12 full layers read all 55,086 keys,
    // 12 sliding layers at most 32 requests × 128.
    close(e.bytes.kv_read, ((55_086u64 + 32 * 128) * 2048 * 12) as f64);
    close(e.bytes.kv_write, (32u64 * 24 * 2048) as f64);
    close(e.bytes.lm_head, (201_088u64 * 2880 * 2) as f64);
    close(e.bytes.embedding, (32u64 * 2880 * 2) as f64);

    // FLOPs: 2 · 32 tokens · active layer parameters (all but the routed experts, 4/32 of those).
    let dense_params: u64 = 24
        * ((2880 * 4096 + 4096)
            + 2 * (2880 * 512 + 512)
            + (4096 * 2880 + 2880)
            + 64
            + 2 * 2880
            + (2880 * 32 + 32))
        + 2880;
    let routed_active: u64 = 24 * 4 * ((2880 * 5760 + 5760) + (2880 * 2880 + 2880));
    close(
        e.flops.linear,
        (2u64 * 32 * (dense_params + routed_active)) as f64,
    );
    close(e.flops.lm_head, (2u64 * 32 * 201_088 * 2880) as f64);
    // Attention: 2·64·64 (scores) + 2·64·64 (values) per (query, key) pair; decode pairs = Σ sk on full
    // layers, at most 32·128 on sliding ones.
    close(e.flops.attention, (16_384u64 * (55_086 + 4096) * 12) as f64);

    // Rates over the span against MI300X's 5,300 GB/s and 1,307.4 bf16 TFLOP/s (CLAIM).
    let span = s.span_ns as f64;
    close(s.rates.unwrap().gbps, e.bytes.total().unwrap() / span);
    close(
        s.rates.unwrap().gbps_busy,
        e.bytes.total().unwrap() / 10_674_517.0,
    );
    close(
        s.rates.unwrap().pct_of_peak_gbps,
        100.0 * e.bytes.total().unwrap() / span / 5300.0,
    );
    close(
        s.rates.unwrap().tflops,
        e.flops.total().unwrap() / span / 1e3,
    );
    close(s.rates.unwrap().ridge.unwrap(), 1307.4e12 / 5300e9);
    assert_eq!(s.rates.unwrap().bound, Bound::Memory);
    // Buckets (kernel times by plain json.load; one stream, no overlaps, so exclusive = Σ dur). GEMM and
    // MoE kernels read the weights: 73 `Cijk_*` hipBLASLt GEMMs 1,230.560 µs, 48 `_matmul_ogs_*` expert
    // GEMMs 7,034.595 µs and 24 `_finalize_matmul_scatter` 136.935 µs (the `gemm` bucket), 24
    // `moe_forward` pads 122.615 µs, 24 `_sum_bitmatrix_rows` 120.856 µs and 48 `_combined_routing_*`
    // 254.271 µs (`moe`). Attention kernels read the KV cache: 24 `kernel_unified_attention_*` 655.692 µs
    // and 12 `reduce_segments` 68.668 µs.
    let weights = &s.buckets[0];
    let weights_ns = 1_230_560 + 7_034_595 + 136_935 + 122_615 + 120_856 + 254_271;
    assert_eq!((weights.bucket, weights.time_ns), ("weights", weights_ns));
    close(
        weights.gbps.unwrap(),
        (e.bytes.weights.unwrap() + e.bytes.routed_experts.unwrap() + e.bytes.lm_head.unwrap())
            / weights_ns as f64,
    );
    let kv = &s.buckets[1];
    assert_eq!((kv.bucket, kv.time_ns), ("kv", 655_692 + 68_668));
    close(kv.gbps.unwrap(), e.bytes.kv_read.unwrap() / 724_360.0);
    assert!(t.notes.is_empty(), "{:?}", t.notes);

    // The numbers the command prints (13.92 GB, 1,300.7 GB/s, 24.5 % of peak).
    assert!((e.bytes.total().unwrap() / 1e9 - 13.917).abs() < 0.001);
    assert!((s.rates.unwrap().gbps - 1300.70).abs() < 0.01);
}

/// The GPU's peak bandwidth in that step's span is 5,300 GB/s × 10,699,981 ns = 56.7 GB; an estimate that
/// cannot fit (a 1 ms span) is an error naming both rates, and so is the same step on a GB10 (273 GB/s).
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn the_physics_gate_refuses_impossible_estimates() {
    let m = model("gpt-oss-20b.json", 1, 1);
    let tokens = StepTokens {
        prefill: PhaseTokens::default(),
        decode: PhaseTokens::decode(32, 55_086),
    };
    let e = estimate(&m, &Counts::from(tokens), 2);
    let table = GpuTable::builtin();
    let mi300x = table.get("MI300X").unwrap();
    let err = rates(&e, 1_000_000, 1_000_000, mi300x, "bf16").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Physics { .. }), "{text}");
    // 13,917.5 GB/s estimated against 5,300.0.
    assert!(
        text.contains("13917.5 GB/s") && text.contains("5300.0 GB/s"),
        "{text}"
    );
    assert!(!text.contains('%'), "{text}");

    let trace = corpus::corpus_file("serving/vllm_decode_full/graph_execution.json.gz");
    let mut s = setup(m);
    s.gpu = GpuChoice::Named(Box::new(table.get("GB10").unwrap().clone()));
    let t = analyse(&trace, &s).unwrap();
    assert!(t.steps.is_empty());
    assert_eq!(t.failures.len(), 1);
    let text = t.failures[0].to_string();
    assert!(
        text.contains("273.0 GB/s") && text.contains("1300.7 GB/s"),
        "{text}"
    );
}

/// Writes a generated trace: one vLLM step marker, one graph launch inside it, two kernels replayed from
/// it (200..4200 µs and 4300..4300+`last_us` µs: with 1,000, span 5,100 µs and busy 5,000 µs), on a GPU
/// named by `device`.
fn generated_trace(dir: &Path, marker: &str, device: &str, last_us: u32) -> PathBuf {
    let text = format!(
        r#"{{"schemaVersion":1,"deviceProperties":[{{"id":0,"name":"{device}","totalGlobalMem":85899345920,"numSms":132}}],
"traceEvents":[
{{"ph":"X","cat":"user_annotation","name":"{marker}","pid":1,"tid":1,"ts":100.0,"dur":50.0}},
{{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":110.0,"dur":5.0,"args":{{"correlation":7}}}},
{{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":200.0,"dur":4000.0,"args":{{"correlation":7,"device":0,"stream":7}}}},
{{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":4300.0,"dur":{last_us}.0,"args":{{"correlation":7,"device":0,"stream":7}}}}
]}}"#
    );
    let path = dir.join("trace.json");
    std::fs::write(&path, text).unwrap();
    path
}

/// Llama-3.1-8B in bf16 on one H100 SXM: a decode step of 8 requests over 8,192 KV tokens.
#[test]
fn dense_llama_decode_on_a_generated_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated_trace(
        dir.path(),
        "execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_8(sq8sk8192sqsq8sqsk8192)",
        "NVIDIA H100 80GB HBM3",
        1000,
    );
    let t = analyse(&trace, &setup(model("llama-3.1-8b.json", 1, 1))).unwrap();
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    assert_eq!((t.gpu.as_str(), t.gpu_from), ("H100 SXM", "name"));
    let s = &t.steps[0];
    assert_eq!((s.span_ns, s.busy_ns), (5_100_000, 5_000_000));
    let e = &s.estimate;
    // Per layer: q 4096×4096, k and v 4096×1024, o 4096×4096, gate|up 4096×28672, down 14336×4096,
    // two norms of 4096; 32 layers and the final norm; bf16.
    let layer_params: u64 =
        4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 4096 * 28672 + 14336 * 4096 + 2 * 4096;
    close(e.bytes.weights, (2u64 * (32 * layer_params + 4096)) as f64);
    close(e.bytes.routed_experts, 0.0);
    // KV: 8 heads × (128 + 128) × 2 B = 4,096 B per token and layer, 32 full layers.
    close(e.bytes.kv_read, (8192u64 * 4096 * 32) as f64);
    close(e.bytes.kv_write, (8u64 * 4096 * 32) as f64);
    close(e.bytes.lm_head, (128_256u64 * 4096 * 2) as f64);
    close(
        e.flops.linear,
        (2u64 * 8 * (32 * layer_params + 4096)) as f64,
    );
    close(e.flops.lm_head, (2u64 * 8 * 128_256 * 4096) as f64);
    // 2·32·128 + 2·32·128 = 16,384 FLOPs per pair, 8,192 pairs, 32 layers.
    close(e.flops.attention, (16_384u64 * 8192 * 32) as f64);
    close(
        s.rates.unwrap().gbps,
        e.bytes.total().unwrap() / 5_100_000.0,
    );
    close(
        s.rates.unwrap().pct_of_peak_gbps,
        100.0 * e.bytes.total().unwrap() / 5_100_000.0 / 3350.0,
    );
    close(s.rates.unwrap().ridge.unwrap(), 989.4e12 / 3350e9);
    assert_eq!(s.rates.unwrap().bound, Bound::Memory);
}

/// A fresh prefill of one 1,000-token request: causal pairs 1 + 2 + … + 1000 = 500,500 per layer,
/// = Σ sq·sk − (Σ sq² − Σ sq)/2 = 1,000,000 − 999,000/2.
#[test]
fn dense_llama_prefill_pairs() {
    let m = model("llama-3.1-8b.json", 1, 1);
    let tokens = StepTokens {
        prefill: PhaseTokens::fresh_prefill(1, 1000, 1_000_000),
        decode: PhaseTokens::default(),
    };
    let e = estimate(&m, &Counts::from(tokens), 2);
    close(e.flops.attention, (16_384u64 * 500_500 * 32) as f64);
    close(e.bytes.kv_read, (1000u64 * 4096 * 32) as f64);
    // One request makes logits: the head is read once and multiplied for one row.
    close(e.flops.lm_head, (2u64 * 128_256 * 4096) as f64);
}

/// gpt-oss-20b prefilling 2 requests of 300 new tokens after 100 cached (sq 300, sk 400 each): a sliding
/// layer (W = 128) reads at most sq + W − 1 = 427 keys a request, capped by its 400; its queries see at most
/// 128 keys each.
#[test]
fn sliding_window_prefill() {
    let m = model("gpt-oss-20b.json", 1, 1);
    let prefill = PhaseTokens {
        requests: 2,
        query_tokens: 600,
        kv_tokens: 800,
        sq_sq: 2 * 300 * 300,
        sq_sk: 2 * 300 * 400,
    };
    let tokens = StepTokens {
        prefill,
        decode: PhaseTokens::default(),
    };
    let e = estimate(&m, &Counts::from(tokens), 2);
    // Keys: full layers 800; sliding min(800, 600 + 2·127 = 854) = 800. 12 + 12 layers, 2,048 B each.
    close(e.bytes.kv_read, ((800 * 12 + 800 * 12) * 2048) as f64);
    // Pairs: full 2·(300·400 − 300·299/2) = 150,300; sliding min(150,300, 600·128 = 76,800).
    close(
        e.flops.attention,
        (16_384u64 * (150_300 * 12 + 76_800 * 12)) as f64,
    );
    // A request with 1,000 cached tokens and 10 new: sliding keys min(1010, 10 + 127) = 137.
    let tokens = StepTokens {
        prefill: PhaseTokens {
            requests: 1,
            query_tokens: 10,
            kv_tokens: 1010,
            sq_sq: 100,
            sq_sk: 10_100,
        },
        decode: PhaseTokens::default(),
    };
    let e = estimate(&m, &Counts::from(tokens), 2);
    close(e.bytes.kv_read, ((1010 * 12 + 137 * 12) * 2048) as f64);
}

/// DeepSeek-V3 (MLA, fp8 128×128 blocks, 256 experts top-8, 58 MoE layers after 3 dense) on 8
/// tensor-parallel ranks: a decode step of 64 requests over 262,144 KV tokens, 24,100 µs of GPU span
/// (each rank reads about 73 GB of experts: 4,800 GB/s needs 15 ms for them).
#[test]
fn mla_deepseek_v3_decode_on_a_generated_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated_trace(
        dir.path(),
        "execute_64_context_0(sq0sk0sqsq0sqsk0)_generation_64(sq64sk262144sqsq64sqsk262144)",
        "NVIDIA H200",
        20_000,
    );
    let m = model("deepseek-v3.json", 8, 1);
    assert!(m.fp8_compute);
    let t = analyse(&trace, &setup(m)).unwrap();
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    let s = &t.steps[0];
    let e = &s.estimate;
    // MLA cache: (kv_lora 512 + rope 64) × 2 B = 1,152 B per token and layer, whole on every rank.
    close(e.bytes.kv_read, (262_144u64 * 1152 * 61) as f64);
    close(e.bytes.kv_write, (64u64 * 1152 * 61) as f64);
    // One expert on one rank (intermediate 2048 / 8 = 256), fp8 + one fp32 scale per 128×128 block:
    // gate|up 7168 → 512: 7168·512 + 4·56·4; down 256 → 7168: 256·7168 + 4·2·56.
    let expert: u64 = (7168 * 512 + 4 * 56 * 4) + (256 * 7168 + 4 * 2 * 56);
    let d = 256.0 * (1.0 - (1.0 - 8.0f64 / 256.0).powi(64));
    close(e.experts.uniform, d);
    close(e.bytes.routed_experts, d * (expert * 58) as f64);
    // LM head, bf16, vocabulary split: 7168 × 129,280/8.
    close(e.bytes.lm_head, (7168u64 * 16_160 * 2) as f64);
    // Absorbed decode attention per pair: 2·128·(512 + 64) + 2·128·512, over 8 ranks.
    close(e.flops.attention, (278_528u64 * 262_144 * 61) as f64 / 8.0);
    assert_eq!(s.dtype, "fp8");
    close(s.rates.unwrap().peak_tflops.unwrap(), 1978.9);
    assert_eq!((s.span_ns, s.busy_ns), (24_100_000, 24_000_000));
    close(
        s.rates.unwrap().gbps,
        e.bytes.total().unwrap() / 24_100_000.0,
    );
}

/// DeepSeek-V4-Flash (43 layers, each with a 128-token window over one shared 512-wide key/value vector;
/// layers 2, 4, …, 42 compress 4 tokens into one entry and attend to the indexer's top 512, layers 3, 5, …,
/// 41 compress 128 into one and attend to all; 256 fp4 experts top-6; the other linears fp8) on two
/// tensor-parallel ranks: a decode step of 32 requests of 4,096 KV tokens each (131,072 in all), bf16 KV.
#[test]
fn deepseek_v4_hybrid_attention_decode_on_a_generated_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated_trace(
        dir.path(),
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk131072sqsq32sqsk131072)",
        "NVIDIA H200",
        20_000,
    );
    let t = analyse(&trace, &setup(model("deepseek-v4-flash.json", 2, 1))).unwrap();
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    let e = &t.steps[0].estimate;
    // One cache entry: 512 × 2 B = 1,024 B. Window: each request reads its last 128 keys, 32 × 128 = 4,096
    // entries in every layer. Sparse layers: 131,072 / 4 = 32,768 compressed entries, of which the queries
    // read at most 32 × 512 = 16,384, and every indexer key (128 × 2 B) of the 32,768. Heavily compressed
    // layers: 131,072 / 128 = 1,024 entries, all read.
    let window: u64 = 4096 * 1024;
    let sparse: u64 = 16_384 * 1024 + 32_768 * 256;
    let heavy: u64 = 1024 * 1024;
    close(
        e.bytes.kv_read,
        (43 * window + 21 * sparse + 20 * heavy) as f64,
    );
    // A new token writes its window entry in 43 layers, a quarter entry and a quarter indexer key in the
    // 21 sparse layers, 1/128 of an entry in the 20 heavy ones: 43·1024 + 21·(256 + 64) + 20·8 = 50,912 B.
    close(e.bytes.kv_write, (32 * 50_912) as f64);
    // FLOPs per (query, entry) pair: scores and values over the one 512-wide vector, 4·64·512 = 131,072.
    // Window: 4,096 pairs per layer. Sparse: min(32,768, 16,384) pairs plus the indexer's 64 heads × 128
    // over all 32,768 entries (2·64·128 each). Heavy: 1,024 pairs. Heads divide between the two ranks.
    let f = 131_072u64;
    let per_rank = 43 * 4096 * f + 21 * (16_384 * f + 32_768 * 2 * 64 * 128) + 20 * 1024 * f;
    close(e.flops.attention, per_rank as f64 / 2.0);
    // One routed expert on a rank, fp4 with one byte per 32 inputs: gate|up 4096 → 2048, down 1024 → 4096.
    let expert: u64 = (4096 * 2048 / 2 + 128 * 2048) + (1024 * 4096 / 2 + 32 * 4096);
    let d = 256.0 * (1.0 - (1.0 - 6.0f64 / 256.0).powi(32));
    close(e.experts.uniform, d);
    close(e.bytes.routed_experts, d * (expert * 43) as f64);
    // LM head, bf16, vocabulary split: 4096 × 129,280 / 2.
    close(e.bytes.lm_head, (4096u64 * 64_640 * 2) as f64);
    assert_eq!(t.steps[0].dtype, "fp8");
}

/// DeepSeek-V3.2 (DeepSeek-V3's MLA plus the lightning indexer: 64 heads × 128, top 2,048 keys) on 8
/// tensor-parallel ranks: a decode step of 64 requests over 262,144 KV tokens (4,096 each), bf16 KV.
#[test]
fn mla_deepseek_v32_sparse_decode_on_a_generated_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated_trace(
        dir.path(),
        "execute_64_context_0(sq0sk0sqsq0sqsk0)_generation_64(sq64sk262144sqsq64sqsk262144)",
        "NVIDIA H200",
        20_000,
    );
    let t = analyse(&trace, &setup(model("deepseek-v3.2.json", 8, 1))).unwrap();
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    let e = &t.steps[0].estimate;
    // Each of the 64 queries reads at most 2,048 latent entries (576 × 2 B), 131,072 of the 262,144, and the
    // indexer reads every key's 128 × 2 B entry, in each of 61 layers.
    close(
        e.bytes.kv_read,
        ((131_072u64 * 1152 + 262_144 * 256) * 61) as f64,
    );
    // A new token writes its latent entry and its indexer key: (1,152 + 256) B per layer.
    close(e.bytes.kv_write, (64u64 * 1408 * 61) as f64);
    // Absorbed decode pairs, 278,528 FLOPs each, over the 131,072 picked keys; the indexer scores all
    // 262,144 pairs over 64 heads × 128 (2·64·128 each); heads divide among the 8 ranks.
    let per_layer = 131_072u64 * 278_528 + 262_144 * 2 * 64 * 128;
    close(e.flops.attention, (per_layer * 61) as f64 / 8.0);
}

/// SGLang's `step[EXTEND bs=2 toks=300]` gives requests and query tokens, not the KV tokens: the terms
/// that need them are `None`, never a number; the rest are worked as for any step. Llama-3.1-8B, bf16.
#[test]
fn terms_without_their_counts_are_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let trace = generated_trace(
        dir.path(),
        "step[EXTEND bs=2 toks=300]",
        "NVIDIA H100 80GB HBM3",
        1000,
    );
    let m = model("llama-3.1-8b.json", 1, 1);
    let t = analyse(&trace, &setup(m.clone())).unwrap();
    assert!(t.failures.is_empty(), "{:?}", t.failures);
    let s = &t.steps[0];
    assert_eq!(
        (s.tokens.requests, s.tokens.query_tokens, s.tokens.kv_tokens),
        (Some(2), Some(300), None)
    );
    assert_eq!(s.tokens.phase, Some("prefill"));
    assert_eq!(s.tokens.from, "marker `sglang`");
    let e = &s.estimate;
    let layer_params: u64 =
        4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 4096 * 28672 + 14336 * 4096 + 2 * 4096;
    let weights = (2u64 * (32 * layer_params + 4096)) as f64;
    close(e.bytes.weights, weights);
    close(e.bytes.kv_write, (300u64 * 4096 * 32) as f64);
    close(e.bytes.lm_head, (128_256u64 * 4096 * 2) as f64);
    close(e.bytes.embedding, (300u64 * 4096 * 2) as f64);
    close(
        e.flops.linear,
        (2u64 * 300 * (32 * layer_params + 4096)) as f64,
    );
    close(e.flops.lm_head, (2u64 * 2 * 128_256 * 4096) as f64);
    assert_eq!((e.bytes.kv_read, e.flops.attention), (None, None));
    assert_eq!(s.unknown, ["bytes.kv_read", "flops.attention"]);
    assert_eq!(e.bytes.total(), None);
    assert!(s.rates.is_none());
    assert_eq!(t.incomplete, [0]);
    // Σ of the known terms: weights + KV written + LM head + embedding (no routed experts).
    close(
        s.bytes_known,
        weights + (300u64 * 4096 * 32 + 128_256 * 4096 * 2 + 300 * 4096 * 2) as f64,
    );

    // The caller's KV tokens complete the bytes: 32 full-attention layers read all 400 keys.
    let mut with_kv = setup(m.clone());
    with_kv.given.kv_tokens = Some(400);
    let t = analyse(&trace, &with_kv).unwrap();
    let s = &t.steps[0];
    assert_eq!(s.tokens.from, "marker `sglang` + given (KV tokens)");
    close(s.estimate.bytes.kv_read, (400u64 * 4096 * 32) as f64);
    // Causal prefill FLOPs need Σ sq² per request, which no count gives: still unknown, so no rates.
    assert_eq!(s.unknown, ["flops.attention"]);
    assert!(s.rates.is_none());

    // No count at all (a ProfilerStep): the weights read once per step are all that is known.
    let trace = generated_trace(dir.path(), "ProfilerStep#3", "NVIDIA H100 80GB HBM3", 1000);
    let t = analyse(&trace, &setup(m)).unwrap();
    let s = &t.steps[0];
    assert_eq!(
        (
            s.tokens.requests,
            s.tokens.query_tokens,
            s.tokens.kv_tokens,
            s.tokens.phase
        ),
        (None, None, None, None)
    );
    close(s.bytes_known, weights);
    assert_eq!(
        s.unknown,
        [
            "bytes.kv_read",
            "bytes.kv_write",
            "bytes.lm_head",
            "bytes.embedding",
            "flops.linear",
            "flops.lm_head",
            "flops.attention"
        ]
    );
    // The GEMM bucket's GB/s needs the LM head's bytes: unknown as well.
    assert_eq!(s.buckets[0].gbps, None);
}
