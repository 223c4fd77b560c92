//! Every model config in `testdata/models/`: it loads, and its parameter count is within 0.5 % of the total
//! its publisher states (sources in `testdata/models/README.md`).
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] functions

use kl1_shapes::{ModelShape, Reads, RunOptions, model_from_config};

use std::path::PathBuf;

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/models")
}

fn load(name: &str) -> ModelShape {
    let path = models_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    model_from_config(&text, &path.display().to_string(), &RunOptions::default()).unwrap()
}

/// How a publisher counts active parameters: Mistral and Qwen include the embedding table, OpenAI and
/// DeepSeek do not.
#[derive(Clone, Copy)]
enum Active {
    None,
    WithEmbedding(f64),
    WithoutEmbedding(f64),
}

/// (file, published total parameters, published active parameters).
const PUBLISHED: &[(&str, f64, Active)] = &[
    ("qwen3-8b.json", 8.19e9, Active::None),
    ("llama-3.1-8b.json", 8.03e9, Active::None),
    (
        "mixtral-8x7b-v0.1.json",
        46.7e9,
        Active::WithEmbedding(12.9e9),
    ),
    ("qwen3-30b-a3b.json", 30.5e9, Active::WithEmbedding(3.3e9)),
    ("gpt-oss-20b.json", 20.9e9, Active::WithoutEmbedding(3.61e9)),
    ("deepseek-v3.json", 671e9, Active::WithoutEmbedding(36.6e9)),
    ("qwen2.5-7b-instruct-awq.json", 7.61e9, Active::None),
    ("gemma-2-9b.json", 9.24e9, Active::None),
    ("llama-3.2-1b.json", 1.24e9, Active::None),
    ("mistral-7b-v0.1.json", 7.24e9, Active::None),
    (
        "deepseek-v2-lite.json",
        15.7e9,
        Active::WithoutEmbedding(2.4e9),
    ),
];

#[test]
fn every_config_in_testdata_is_checked() {
    let mut files: Vec<String> = std::fs::read_dir(models_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = PUBLISHED.iter().map(|p| p.0.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed);
}

#[test]
fn parameter_counts_match_the_published_totals() {
    for &(file, total, active) in PUBLISHED {
        let m = load(file);
        let got = m.total_params() as f64;
        let err = (got / total - 1.0).abs();
        println!("{file}: {got:.4e} vs {total:.4e} ({:.3} %)", 100.0 * err);
        assert!(err < 0.005, "{file}: {got} parameters, published {total}");
        let embedding = m.params_of(Reads::TokenRows) as f64;
        let (got, a) = match active {
            Active::None => continue,
            Active::WithEmbedding(a) => (m.active_params() + embedding, a),
            Active::WithoutEmbedding(a) => (m.active_params(), a),
        };
        {
            let err = (got / a - 1.0).abs();
            println!("{file}: active {got:.4e} vs {a:.4e} ({:.3} %)", 100.0 * err);
            // Model cards give active counts to two digits, truncated (Qwen3-30B-A3B 3.35 B is "3.3 B",
            // DeepSeek-V2-Lite 2.45 B is "2.4 B"): 2.5 %.
            assert!(
                err < 0.025,
                "{file}: {got} active parameters, published {a}"
            );
        }
    }
}

/// The GPU table names the shared vLLM trace's GPU from numSms = 304 and totalGlobalMem = 206,141,652,992 B
/// (191.98 GiB: MI300X's 192 GB), its name being empty; H100 SXM and H800 share 132 SMs and 80 GB, so a
/// nameless trace of either is refused rather than guessed.
#[test]
fn gpus_are_identified_from_device_properties() {
    let t = kl1_shapes::GpuTable::builtin();
    assert_eq!(
        t.identify("", Some(304), Some(206_141_652_992))
            .unwrap()
            .name,
        "MI300X"
    );
    assert_eq!(
        t.identify("NVIDIA H100 80GB HBM3", None, None)
            .unwrap()
            .name,
        "H100 SXM"
    );
    let err = t.identify("", Some(132), Some(85_031_714_816)).unwrap_err();
    assert!(err.contains("H100 SXM") && err.contains("H800"), "{err}");
    assert!(t.identify("", Some(7), Some(1 << 30)).is_err());
    for g in [
        "H100 SXM",
        "H200",
        "H800",
        "B200",
        "GB200",
        "A100 SXM 80GB",
        "L40S",
        "MI300X",
        "MI325X",
        "MI355X",
    ] {
        let gpu = t.get(g).unwrap();
        assert!(gpu.peak_tflops("bf16").is_some(), "{g} has a bf16 peak");
    }
}

fn config_error(
    edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) -> kl1_shapes::Error {
    let text = std::fs::read_to_string(models_dir().join("qwen3-8b.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(v.as_object_mut().unwrap());
    model_from_config(&v.to_string(), "edited.json", &RunOptions::default()).unwrap_err()
}

/// A key the tool does not understand is an error naming it; so is an unknown architecture or quantisation
/// method, a missing dimension, and heads that do not divide among the ranks.
#[test]
fn what_is_not_understood_is_an_error_naming_it() {
    let e = config_error(|m| {
        m.insert("num_experts_per_token".into(), 2.into());
    });
    assert_eq!(e.field(), Some("num_experts_per_token"), "{e}");
    assert!(e.to_string().contains("not understood"), "{e}");
    let e = config_error(|m| {
        m.insert("model_type".into(), "falcon".into());
    });
    assert_eq!(e.field(), Some("model_type"), "{e}");
    let e = config_error(|m| {
        m.insert(
            "quantization_config".into(),
            serde_json::json!({"quant_method": "bitsandbytes"}),
        );
    });
    assert_eq!(e.field(), Some("quantization_config.quant_method"), "{e}");
    let e = config_error(|m| {
        m.insert(
            "quantization_config".into(),
            serde_json::json!({"quant_method": "fp8", "weight_block_size": [128, 128], "shiny": 1}),
        );
    });
    assert_eq!(e.field(), Some("quantization_config.shiny"), "{e}");
    let e = config_error(|m| {
        m.remove("hidden_size");
    });
    assert_eq!(e.field(), Some("hidden_size"), "{e}");
    let text = std::fs::read_to_string(models_dir().join("qwen3-8b.json")).unwrap();
    let run = RunOptions {
        tp: 3,
        ep: 1,
        quant: None,
    };
    let e = model_from_config(&text, "qwen3-8b.json", &run).unwrap_err();
    assert_eq!(e.field(), Some("num_attention_heads"), "{e}");
}

/// Per-rank bytes under tensor and expert parallelism, and a format given on the command line.
#[test]
fn ranks_and_formats() {
    let text = std::fs::read_to_string(models_dir().join("qwen3-30b-a3b.json")).unwrap();
    let one = model_from_config(&text, "q", &RunOptions::default()).unwrap();
    let tp4 = model_from_config(
        &text,
        "q",
        &RunOptions {
            tp: 4,
            ep: 1,
            quant: None,
        },
    )
    .unwrap();
    let ep4 = model_from_config(
        &text,
        "q",
        &RunOptions {
            tp: 4,
            ep: 4,
            quant: None,
        },
    )
    .unwrap();
    // One expert: gate|up 2048×1536 + down 768×2048, bf16; tp 4 splits the intermediate 768 → 192;
    // ep 4 keeps experts whole, 32 of 128 per rank.
    assert_eq!(
        one.rank_expert_bytes(),
        (2 * (2048 * 1536 + 768 * 2048)) as f64
    );
    assert_eq!(
        tp4.rank_expert_bytes(),
        (2 * (2048 * 384 + 192 * 2048)) as f64
    );
    assert_eq!(ep4.rank_expert_bytes(), one.rank_expert_bytes());
    assert_eq!((one.rank_experts(), ep4.rank_experts()), (128, 32));
    // KV: 4 KV heads × (128 + 128) × 2 B; tp 4 holds one head per rank.
    assert_eq!(one.kv_bytes_per_token_layer(2), 4 * 256 * 2);
    assert_eq!(tp4.kv_bytes_per_token_layer(2), 256 * 2);
    // tp 8 with 4 KV heads: each rank holds one whole KV head (2048 × 128), as vLLM replicates them.
    let tp8 = model_from_config(
        &text,
        "q",
        &RunOptions {
            tp: 8,
            ep: 1,
            quant: None,
        },
    )
    .unwrap();
    let k = tp8
        .groups
        .iter()
        .find(|g| g.name == "self_attn.k_proj")
        .unwrap();
    assert_eq!((k.rank_in, k.rank_out), (2048, 128));
    assert_eq!(tp8.kv_bytes_per_token_layer(2), 256 * 2);
    // nvfp4 from the command line: k·n/2 + one byte per 16 inputs + a 4-byte tensor scale.
    let run = RunOptions {
        tp: 1,
        ep: 1,
        quant: Some(kl1_shapes::QuantOverride::parse("nvfp4").unwrap()),
    };
    let fp4 = model_from_config(&text, "q", &run).unwrap();
    let gu = 2048 * 1536 / 2 + (2048 / 16) * 1536 + 4;
    let down = 768 * 2048 / 2 + (768 / 16) * 2048 + 4;
    assert_eq!(fp4.rank_expert_bytes(), (gu + down) as f64);
    // The embedding, LM head, router and norms stay bf16; parameters are the same whatever the format.
    assert_eq!(fp4.total_params(), one.total_params());
}

/// int4 AWQ (Qwen2.5-7B-Instruct-AWQ): q_proj 3584 → 3584 is 3584²/2 B of weights, one fp16 scale and a
/// 4-bit zero per 128 inputs and output: 28 groups × 3584 × (2 + 0.5) B; q, k, v carry fp16 biases.
#[test]
fn awq_group_scales() {
    let text = std::fs::read_to_string(models_dir().join("qwen2.5-7b-instruct-awq.json")).unwrap();
    let m = model_from_config(&text, "awq", &RunOptions::default()).unwrap();
    let q = m
        .groups
        .iter()
        .find(|g| g.name == "self_attn.q_proj")
        .unwrap();
    assert_eq!(q.format.to_string(), "int4-g128-zp");
    assert_eq!(
        q.rank_tensor_bytes(),
        (3584 * 3584 / 2) as f64 + (28 * 3584) as f64 * 2.5 + (3584 * 2) as f64
    );
    let head = m.groups.iter().find(|g| g.name == "lm_head").unwrap();
    assert_eq!(head.format.to_string(), "fp16");
}

fn llama_with(quant: serde_json::Value, run: RunOptions) -> Result<ModelShape, kl1_shapes::Error> {
    let text = std::fs::read_to_string(models_dir().join("llama-3.1-8b.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["quantization_config"] = quant;
    model_from_config(&v.to_string(), "llama+quant", &run)
}

/// vLLM's other checkpoint schemes: llm-compressor's compressed-tensors (fp8 per channel, as RedHatAI's
/// FP8-dynamic checkpoints), NVIDIA ModelOpt nvfp4; and `--quant` over a scheme the tool does not know.
#[test]
fn compressed_tensors_modelopt_and_overrides() {
    let ct = serde_json::json!({
        "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
        "quantization_status": "compressed", "kv_cache_scheme": null,
        "config_groups": {"group_0": {"targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true, "dynamic": false},
            "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}}
    });
    let m = llama_with(ct, RunOptions::default()).unwrap();
    assert!(m.fp8_compute);
    let q = m
        .groups
        .iter()
        .find(|g| g.name == "self_attn.q_proj")
        .unwrap();
    // 4096 × 4096 fp8 + one fp32 scale per output channel.
    assert_eq!(q.rank_tensor_bytes(), (4096 * 4096 + 4 * 4096) as f64);
    assert_eq!(
        m.groups
            .iter()
            .find(|g| g.name == "lm_head")
            .unwrap()
            .format
            .to_string(),
        "bf16"
    );

    let mo = serde_json::json!({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
        "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]});
    let m = llama_with(mo, RunOptions::default()).unwrap();
    let down = m.groups.iter().find(|g| g.name == "mlp.down_proj").unwrap();
    // 14336 → 4096 in nvfp4: k·n/2 + k/16·n + 4.
    assert_eq!(
        down.rank_tensor_bytes(),
        (14336 * 4096 / 2 + 896 * 4096 + 4) as f64
    );

    let unknown = serde_json::json!({"quant_method": "bitsandbytes", "load_in_4bit": true});
    assert!(llama_with(unknown.clone(), RunOptions::default()).is_err());
    let run = RunOptions {
        tp: 1,
        ep: 1,
        quant: Some(kl1_shapes::QuantOverride::parse("awq").unwrap()),
    };
    let m = llama_with(unknown, run).unwrap();
    assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
}
