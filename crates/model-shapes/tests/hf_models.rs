//! Every model config in `testdata/models/`: it loads, and its parameter count is within 0.5 % of the total
//! its publisher states (sources in `testdata/models/README.md`).
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] functions

use model_shapes::{ModelShape, Reads, RunOptions, model_from_config};

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
/// DeepSeek do not. GLM gives whole billions, truncated: `Truncated(n)` holds when n ≤ active < n + 1 B
/// (without the embedding).
#[derive(Clone, Copy)]
enum Active {
    None,
    WithEmbedding(f64),
    WithoutEmbedding(f64),
    Truncated(f64),
}

/// Whether `got` fits a published total. A figure given to two significant digits ("230 B", "3.8 B") is a
/// rounding: it holds when `got` rounds to it (MiniMax-M2.7's 228.69 B, Phi-4-mini's 3.836 B). Others hold
/// within 0.5 %, but GLM-4.5's 355 B, which no count of its tensors reproduces (the main model is 352.80 B,
/// with the MTP layer 356.79 B): 1 % (`testdata/models/README.md`).
fn fits_total(file: &str, got: f64, published: f64) -> bool {
    match file {
        "minimax-m2.7.json" | "phi-4-mini-instruct.json" => {
            // Half a unit of the second significant digit.
            let half = 0.5 * 10f64.powf(published.log10().floor() - 1.0);
            (published - half..published + half).contains(&got)
        }
        "glm-4.7.json" => (got / published - 1.0).abs() < 0.01,
        _ => (got / published - 1.0).abs() < 0.005,
    }
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
    (
        "deepseek-v4-flash.json",
        284e9,
        Active::WithoutEmbedding(13e9),
    ),
    // Multimodal: the language model only (the vision encoders are not counted), against a published
    // language-model figure.
    ("gemma-3-4b-it.json", 3.884e9, Active::None),
    (
        "mistral-small-3.1-24b-instruct-2503.json",
        23.6e9,
        Active::None,
    ),
    ("qwen2.5-vl-7b-instruct-awq.json", 7.61e9, Active::None),
    ("glm-4.7.json", 355e9, Active::Truncated(32e9)),
    ("deepseek-v3.2.json", 671e9, Active::None),
    ("minimax-m2.7.json", 230e9, Active::Truncated(10e9)),
    // Phi-3 family: fused qkv_proj and gate_up_proj.
    ("phi-3-mini-4k-instruct.json", 3_821_079_552.0, Active::None),
    ("phi-4.json", 14.7e9, Active::None),
    ("phi-4-mini-instruct.json", 3.8e9, Active::None),
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
        assert!(
            fits_total(file, got, total),
            "{file}: {got} parameters, published {total}"
        );
        let embedding = m.params_of(Reads::TokenRows) as f64;
        let (got, a) = match active {
            Active::None => continue,
            Active::Truncated(a) => {
                let got = m.active_params();
                println!("{file}: active {got:.4e} vs {a:.4e} truncated");
                assert!(
                    a <= got && got < a + 1e9,
                    "{file}: {got} active parameters, published {a} (whole billions, truncated)"
                );
                continue;
            }
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
    let t = model_shapes::GpuTable::builtin();
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
) -> model_shapes::Error {
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
        quant: Some(model_shapes::QuantOverride::parse("nvfp4").unwrap()),
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

fn llama_with(
    quant: serde_json::Value,
    run: RunOptions,
) -> Result<ModelShape, model_shapes::Error> {
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
        quant: Some(model_shapes::QuantOverride::parse("awq").unwrap()),
    };
    let m = llama_with(unknown, run).unwrap();
    assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
}

fn v4_text() -> String {
    std::fs::read_to_string(models_dir().join("deepseek-v4-flash.json")).unwrap()
}

fn v4(run: RunOptions) -> ModelShape {
    model_from_config(&v4_text(), "deepseek-v4-flash.json", &run).unwrap()
}

fn v4_edited(
    edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) -> Result<ModelShape, model_shapes::Error> {
    let mut v: serde_json::Value = serde_json::from_str(&v4_text()).unwrap();
    edit(v.as_object_mut().unwrap());
    model_from_config(&v.to_string(), "edited.json", &RunOptions::default())
}

fn reference(key: &str) -> u64 {
    let path = models_dir().join("../reference/deepseek_v4_params.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v[key].as_u64().unwrap()
}

/// DeepSeek-V4-Flash against `testdata/reference/deepseek_v4_params.py`, which counts the checkpoint's own
/// tensor list (its names tally with a public inventory: 69,187 with the MTP layer) and prices each tensor
/// in its stored format; with the MTP layer its bytes equal the checkpoint index's total_size to the byte.
/// The table must give the same parameters, active parameters and bytes (tp 1) exactly.
#[test]
fn deepseek_v4_flash_matches_its_checkpoint_tensor_list() {
    let m = v4(RunOptions::default());
    assert_eq!(reference("names_with_mtp"), 69_187);
    assert_eq!(reference("checkpoint_bytes_with_mtp"), 159_609_485_896);
    assert_eq!(m.total_params(), reference("total_params_main"));
    assert_eq!(
        m.active_params(),
        reference("active_params_without_embedding") as f64
    );
    let bytes: f64 = m.groups.iter().map(|g| g.rank_bytes()).sum();
    assert_eq!(bytes, reference("checkpoint_bytes_main") as f64);
    // Layer kinds: 2 window-only, then 21 sparse (ratio 4) and 20 heavily compressed (ratio 128), all MoE
    // with a 128-token window; the three trailing ratios (MTP / DSpark) are not layers.
    let ratio = |r: Option<u64>| m.layers.iter().filter(|l| l.compress_ratio == r).count();
    assert_eq!((ratio(None), ratio(Some(4)), ratio(Some(128))), (2, 21, 20));
    assert!(
        m.layers
            .iter()
            .all(|l| l.moe && l.sliding_window == Some(128))
    );
    // One shared 512-wide key/value vector per token in the window.
    assert_eq!(m.kv_bytes_per_token_layer(1), 512);
    assert!(m.fp8_compute);
    assert!(
        m.notes.iter().any(|n| n.contains("dspark_block_size")),
        "{:?}",
        m.notes
    );
}

/// Two tensor-parallel ranks: the query up-projection, the grouped output projections (4 of the 8 groups
/// per rank) and the output down-projection divide; the indexer, compressors and wq_a/wkv do not. One
/// routed expert on a rank in fp4: gate|up 4096 → 2·1024 is 4096·2048/2 + (4096/32)·2048 bytes, down
/// 1024 → 4096 is 1024·4096/2 + (1024/32)·4096.
#[test]
fn deepseek_v4_on_two_ranks() {
    let m = v4(RunOptions {
        tp: 2,
        ep: 1,
        quant: None,
    });
    let g = |name: &str| m.groups.iter().find(|g| g.name == name).unwrap();
    assert_eq!(
        (g("attn.wq_b").rank_in, g("attn.wq_b").rank_out),
        (1024, 16_384)
    );
    assert_eq!(
        (g("attn.wo_a").rank_in, g("attn.wo_a").rank_out),
        (4096, 4096)
    );
    assert_eq!(
        (g("attn.wo_b").rank_in, g("attn.wo_b").rank_out),
        (4096, 4096)
    );
    assert_eq!(
        (g("attn.wq_a").rank_in, g("attn.wq_a").rank_out),
        (4096, 1024)
    );
    assert_eq!(
        (
            g("attn.indexer.wq_b").rank_in,
            g("attn.indexer.wq_b").rank_out
        ),
        (1024, 8192)
    );
    // wq_b on a rank in fp8 with one E8M0 byte per 128×128 block: 1024·16384 + 8·128.
    assert_eq!(
        g("attn.wq_b").rank_tensor_bytes(),
        (1024 * 16_384 + 8 * 128) as f64
    );
    let gate_up = 4096 * 2048 / 2 + 128 * 2048;
    let down = 1024 * 4096 / 2 + 32 * 4096;
    assert_eq!(m.rank_expert_bytes(), (gate_up + down) as f64);
    // o_groups must divide among the ranks: 16 ranks hold the 64 heads but not the 8 groups.
    let e = model_from_config(
        &v4_text(),
        "deepseek-v4-flash.json",
        &RunOptions {
            tp: 16,
            ep: 1,
            quant: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.field(), Some("o_groups"), "{e}");
}

/// The newer transformers form of the layout (`layer_types`, `compress_rates`, `mlp_layer_types`) gives
/// the same table as the checkpoint's `compress_ratios` and `num_hash_layers`.
#[test]
fn deepseek_v4_layer_types_form_is_the_same_model() {
    let old = v4(RunOptions::default());
    let new = v4_edited(|m| {
        let ratios: Vec<u64> = m["compress_ratios"]
            .as_array()
            .unwrap()
            .iter()
            .take(43)
            .map(|v| v.as_u64().unwrap())
            .collect();
        let types: Vec<&str> = ratios
            .iter()
            .map(|r| match r {
                0 => "sliding_attention",
                4 => "compressed_sparse_attention",
                _ => "heavily_compressed_attention",
            })
            .collect();
        m.remove("compress_ratios");
        m.remove("num_hash_layers");
        m.insert("layer_types".into(), serde_json::json!(types));
        m.insert(
            "compress_rates".into(),
            serde_json::json!({"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}),
        );
        let mlp: Vec<&str> = (0..43).map(|i| if i < 3 { "hash_moe" } else { "moe" }).collect();
        m.insert("mlp_layer_types".into(), serde_json::json!(mlp));
    })
    .unwrap();
    assert_eq!(new.groups, old.groups);
    assert_eq!(new.layers, old.layers);
}

/// What DeepSeek-V4's reader does not understand is an error naming the field.
#[test]
fn deepseek_v4_errors_name_the_field() {
    let field = |edit: fn(&mut serde_json::Map<String, serde_json::Value>)| {
        v4_edited(edit).unwrap_err().field().map(str::to_string)
    };
    let f = field(|m| {
        m["compress_ratios"][5] = 2.into();
    });
    assert_eq!(f.as_deref(), Some("compress_ratios"));
    let f = field(|m| {
        m.insert("expert_dtype".into(), "fp6".into());
    });
    assert_eq!(f.as_deref(), Some("expert_dtype"));
    let f = field(|m| {
        m.insert("num_key_value_heads".into(), 8.into());
    });
    assert_eq!(f.as_deref(), Some("num_key_value_heads"));
    let f = field(|m| {
        m.remove("num_hash_layers");
    });
    assert_eq!(f.as_deref(), Some("num_hash_layers"));
    let f = field(|m| {
        m["compress_ratios"] = serde_json::json!([0, 4]);
    });
    assert_eq!(f.as_deref(), Some("compress_ratios"));
    let f = field(|m| {
        m["quantization_config"]["scale_fmt"] = "e4m3".into();
    });
    assert_eq!(f.as_deref(), Some("quantization_config.scale_fmt"));
    // Only the drafter keys V4-Flash carries are known to stay out of the main layers.
    let f = field(|m| {
        m.insert("dspark_shared_head".into(), true.into());
    });
    assert_eq!(f.as_deref(), Some("dspark_shared_head"));
    // DeepSeek-V4.1's shared-KV layout is another architecture: its keys are refused, not skipped.
    let f = field(|m| {
        m.insert("kv_source_layer_ids".into(), serde_json::json!([2, 8]));
    });
    assert_eq!(f.as_deref(), Some("kv_source_layer_ids"));
}

type ConfigMap = serde_json::Map<String, serde_json::Value>;

fn edited(
    file: &str,
    edit: impl FnOnce(&mut ConfigMap),
) -> Result<ModelShape, model_shapes::Error> {
    let text = std::fs::read_to_string(models_dir().join(file)).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(v.as_object_mut().unwrap());
    model_from_config(&v.to_string(), "edited.json", &RunOptions::default())
}

fn field_of(file: &str, edit: impl FnOnce(&mut ConfigMap)) -> Option<String> {
    edited(file, edit).unwrap_err().field().map(str::to_string)
}

fn group<'a>(m: &'a ModelShape, name: &str) -> &'a model_shapes::TensorGroup {
    m.groups
        .iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no group {name}"))
}

fn reference_json(file: &str) -> serde_json::Value {
    let path = models_dir().join("../reference").join(file);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Gemma 3 and Mistral Small 3.1 hold their language model in `text_config`: it is read as its own
/// model_type, the wrapper's dtype and tying apply unless text_config gives its own, its layers are
/// `language_model.model.layers.*` for quantisation patterns, and the vision side is a note.
#[test]
fn multimodal_wrappers_read_their_text_config() {
    let g = load("gemma-3-4b-it.json");
    assert_eq!(g.model_type, "gemma3 (gemma3_text)");
    assert!(g.tied_embeddings);
    // Gemma3TextConfig's defaults fill what the config leaves out: 8 heads of 256, 4 KV heads, a
    // 262,208 vocabulary, every 6th layer full (window 1024 from the config).
    assert_eq!(g.vocab, 262_208);
    assert_eq!(
        (
            group(&g, "self_attn.q_proj").out_features,
            group(&g, "self_attn.k_proj").out_features
        ),
        (8 * 256, 4 * 256)
    );
    let full = g
        .layers
        .iter()
        .filter(|l| l.sliding_window.is_none())
        .count();
    assert_eq!((g.layers.len(), full), (34, 5));
    assert!(
        g.layers
            .iter()
            .all(|l| l.sliding_window.is_none() || l.sliding_window == Some(1024))
    );
    assert!(
        g.notes.iter().any(|n| n.starts_with("vision_config")),
        "{:?}",
        g.notes
    );
    assert!(
        g.notes.iter().any(|n| n.contains("vocab_size 262208")),
        "{:?}",
        g.notes
    );

    let m = load("mistral-small-3.1-24b-instruct-2503.json");
    assert_eq!(m.activation_dtype, "bf16");
    assert!(!m.tied_embeddings);
    assert!(m.layers.iter().all(|l| l.sliding_window.is_none()));
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("multimodal_projector_bias") && n.contains("not counted")),
        "{:?}",
        m.notes
    );
    // text_config's own dtype wins over the wrapper's.
    let f16 = edited("mistral-small-3.1-24b-instruct-2503.json", |c| {
        c["text_config"]["torch_dtype"] = "float16".into();
    })
    .unwrap();
    assert_eq!(f16.activation_dtype, "fp16");
    // The wrapper's tie_word_embeddings applies to its language model: untied, the head is counted too.
    let untied = edited("gemma-3-4b-it.json", |c| {
        c.insert("tie_word_embeddings".into(), false.into());
    })
    .unwrap();
    assert_eq!(untied.total_params() - g.total_params(), 262_208 * 2560);
    // A wrapper-level quantization_config, with a skip pattern on the language model's layer path.
    let q = edited("gemma-3-4b-it.json", |c| {
        c.insert(
            "quantization_config".into(),
            serde_json::json!({"quant_method": "fp8", "modules_to_not_convert": ["language_model.model.layers.0.self_attn"]}),
        );
    })
    .unwrap();
    let q_proj: Vec<(String, u64)> = q
        .groups
        .iter()
        .filter(|g| g.name == "self_attn.q_proj")
        .map(|g| (g.format.to_string(), g.layers))
        .collect();
    assert_eq!(q_proj, [("bf16".to_string(), 1), ("fp8".to_string(), 33)]);
}

/// What a wrapper's reader does not understand is an error naming the key, text_config's keys under
/// `text_config.`.
#[test]
fn multimodal_wrapper_errors_name_the_field() {
    let gemma = "gemma-3-4b-it.json";
    let f = field_of(gemma, |c| {
        c.remove("text_config");
    });
    assert_eq!(f.as_deref(), Some("text_config"));
    let f = field_of(gemma, |c| {
        c["text_config"]["model_type"] = "llama".into();
    });
    assert_eq!(f.as_deref(), Some("text_config.model_type"));
    let f = field_of(gemma, |c| {
        c["text_config"]["shiny"] = 1.into();
    });
    assert_eq!(f.as_deref(), Some("text_config.shiny"));
    let f = field_of(gemma, |c| {
        c.insert("audio_config".into(), serde_json::json!({}));
    });
    assert_eq!(f.as_deref(), Some("audio_config"));
    let f = field_of("mistral-small-3.1-24b-instruct-2503.json", |c| {
        c["text_config"]
            .as_object_mut()
            .unwrap()
            .remove("num_hidden_layers");
    });
    assert_eq!(f.as_deref(), Some("text_config.num_hidden_layers"));
    // Qwen2.5-VL keeps its language model's keys at the top level; the vision tower is a note, the
    // image and video token ids set nothing, AWQ's `modules_to_not_convert: ["visual"]` touches no
    // language-model module.
    let vl = load("qwen2.5-vl-7b-instruct-awq.json");
    assert!(
        vl.notes.iter().any(|n| n.starts_with("vision_config")),
        "{:?}",
        vl.notes
    );
    assert_eq!(
        group(&vl, "self_attn.q_proj").format.to_string(),
        "int4-g128-zp"
    );
    let f = field_of("qwen2.5-vl-7b-instruct-awq.json", |c| {
        c.insert("audio_token_id".into(), 7.into());
    });
    assert_eq!(f.as_deref(), Some("audio_token_id"));
}

/// GLM-4.7 (GLM-4.5's architecture) against `testdata/reference/glm4_moe_params.py`, which counts the
/// checkpoint's tensor names; GLM-4.5-Air's dimensions against the same script, whose Air count plus
/// GLM-4.5V's vision tensors equals that checkpoint's inventory total (107,710,933,120) to the parameter.
#[test]
fn glm4_moe_matches_its_tensor_list() {
    let r = reference_json("glm4_moe_params.json");
    let n = |a: &str, b: &str| r[a][b].as_u64().unwrap();
    let m = load("glm-4.7.json");
    assert_eq!(m.total_params(), n("glm_4_7", "total_params"));
    assert_eq!(
        m.active_params(),
        n("glm_4_7", "active_params_without_embedding") as f64
    );
    // Three dense layers, then 89 of 160 experts with one shared expert.
    let dense = m.layers.iter().filter(|l| !l.moe).count();
    assert_eq!((dense, m.layers.len()), (3, 92));
    assert_eq!(group(&m, "mlp.gate_up_proj").layers, 3);
    assert_eq!(group(&m, "mlp.shared_experts.gate_up_proj").layers, 89);
    // attention_bias puts biases on q, k, v, not o; use_qk_norm a norm of head_dim on q and k; the
    // router's e_score_correction_bias is fp32.
    assert!(group(&m, "self_attn.q_proj").bias && group(&m, "self_attn.v_proj").bias);
    assert!(!group(&m, "self_attn.o_proj").bias);
    assert_eq!(group(&m, "self_attn.q_norm+k_norm").out_features, 128);
    assert_eq!(group(&m, "mlp.router").bias_bytes, 4);
    assert!(
        m.notes
            .iter()
            .any(|n| n.starts_with("num_nextn_predict_layers = 1")),
        "{:?}",
        m.notes
    );

    let air = edited("glm-4.7.json", |c| {
        for (k, v) in [
            ("hidden_size", 4096),
            ("num_hidden_layers", 46),
            ("first_k_dense_replace", 1),
            ("intermediate_size", 10944),
            ("moe_intermediate_size", 1408),
            ("n_routed_experts", 128),
        ] {
            c.insert(k.into(), v.into());
        }
        c.insert("use_qk_norm".into(), false.into());
    })
    .unwrap();
    assert_eq!(r["glm_4_5v_total"].as_u64(), Some(107_710_933_120));
    assert_eq!(air.total_params(), n("air", "total_params"));
    assert_eq!(
        air.active_params(),
        n("air", "active_params_without_embedding") as f64
    );
    assert!(
        !air.groups
            .iter()
            .any(|g| g.name == "self_attn.q_norm+k_norm")
    );
    // Published: 106 B total, 12 B active (whole billions, truncated).
    let (t, a) = (air.total_params() as f64, air.active_params());
    assert!(
        (106e9..107e9).contains(&t) && (12e9..13e9).contains(&a),
        "{t} {a}"
    );

    // Eight ranks: 8 KV heads, one each; 160 experts, 20 per rank under expert parallelism.
    let text = std::fs::read_to_string(models_dir().join("glm-4.7.json")).unwrap();
    let run = RunOptions {
        tp: 8,
        ep: 8,
        quant: None,
    };
    let r8 = model_from_config(&text, "glm-4.7.json", &run).unwrap();
    let k = group(&r8, "self_attn.k_proj");
    assert_eq!((k.rank_in, k.rank_out), (5120, 128));
    assert_eq!(r8.rank_experts(), 20);
}

/// What GLM-4.5's reader does not understand is an error naming the field.
#[test]
fn glm4_moe_errors_name_the_field() {
    let glm = "glm-4.7.json";
    let f = field_of(glm, |c| {
        c.remove("first_k_dense_replace");
    });
    assert_eq!(f.as_deref(), Some("first_k_dense_replace"));
    let f = field_of(glm, |c| {
        c.remove("n_shared_experts");
    });
    assert_eq!(f.as_deref(), Some("n_shared_experts"));
    // DeepSeek's moe_layer_freq is not a GLM key: refused, not skipped.
    let f = field_of(glm, |c| {
        c.insert("moe_layer_freq".into(), 2.into());
    });
    assert_eq!(f.as_deref(), Some("moe_layer_freq"));
    let f = field_of(glm, |c| {
        c.insert("use_qk_norm".into(), "yes".into());
    });
    assert_eq!(f.as_deref(), Some("use_qk_norm"));
}

/// DeepSeek-V3.2 against `testdata/reference/deepseek_v32_params.py`, which counts the checkpoint's own
/// tensor list: with the MTP layer and the scale tensors it reproduces a public inventory's 92,425
/// tensors, 685,396,921,376 elements and 642.12 GiB; the main model's parameters, active parameters and
/// bytes (fp8 with fp32 block scales, fp32 norms) must match the table exactly.
#[test]
fn deepseek_v32_matches_its_checkpoint_tensor_list() {
    let r = reference_json("deepseek_v32_params.json");
    let n = |k: &str| r[k].as_u64().unwrap();
    assert_eq!(n("tensors_with_mtp"), 92_425);
    assert_eq!(n("elements_with_mtp_and_scales"), 685_396_921_376);
    assert_eq!(r["checkpoint_gib_with_mtp"].as_f64(), Some(642.12));
    let m = load("deepseek-v3.2.json");
    assert_eq!(m.total_params(), n("total_params_main"));
    assert_eq!(
        m.active_params(),
        n("active_params_without_embedding") as f64
    );
    let bytes: f64 = m.groups.iter().map(|g| g.rank_bytes()).sum();
    assert_eq!(bytes, n("checkpoint_bytes_main") as f64);
    let indexer: u64 = m
        .groups
        .iter()
        .filter(|g| g.name.contains(".indexer."))
        .map(|g| g.params())
        .sum();
    assert_eq!(indexer, n("indexer_params_main"));
    // scale_fmt ue8m0 here means power-of-two fp32 scales (V4's alone are E8M0 bytes).
    assert_eq!(
        group(&m, "self_attn.q_b_proj").format.to_string(),
        "fp8-block128x128"
    );
    assert!(matches!(
        m.attention,
        model_shapes::Attention::Mla {
            indexer: Some(model_shapes::Indexer {
                heads: 64,
                dim: 128,
                topk: 2048
            }),
            ..
        }
    ));
    // The indexer is replicated: eight ranks each hold all of wq_b, while q_b_proj divides.
    let text = std::fs::read_to_string(models_dir().join("deepseek-v3.2.json")).unwrap();
    let run = RunOptions {
        tp: 8,
        ep: 1,
        quant: None,
    };
    let r8 = model_from_config(&text, "v3.2", &run).unwrap();
    assert_eq!(group(&r8, "self_attn.indexer.wq_b").rank_out, 8192);
    assert_eq!(group(&r8, "self_attn.q_b_proj").rank_out, 24_576 / 8);
    // DeepSeek-V2's router has no correction bias; V3's has an fp32 one.
    assert!(!group(&load("deepseek-v2-lite.json"), "mlp.router").bias);
    assert_eq!(group(&load("deepseek-v3.json"), "mlp.router").bias_bytes, 4);
}

/// What DeepSeek-V3.2's reader does not understand is an error naming the field.
#[test]
fn deepseek_v32_errors_name_the_field() {
    let v32 = "deepseek-v3.2.json";
    let f = field_of(v32, |c| {
        c.remove("index_n_heads");
    });
    assert_eq!(f.as_deref(), Some("index_n_heads"));
    let f = field_of(v32, |c| {
        c.insert("q_lora_rank".into(), serde_json::Value::Null);
    });
    assert_eq!(f.as_deref(), Some("q_lora_rank"));
    // V3.2's index keys on a V3 config are not understood.
    let f = field_of(v32, |c| {
        c.insert("model_type".into(), "deepseek_v3".into());
    });
    assert_eq!(f.as_deref(), Some("index_head_dim"));
}

/// MiniMax-M2.7 against `testdata/reference/minimax_m2_params.py` (the checkpoint's tensor names and
/// dtypes): per-layer q/k norms over all heads, the fp32 router and correction bias left unquantised by
/// `modules_to_not_convert`, fp8 block-quantised attention and experts; MTP modules are a note.
#[test]
fn minimax_m2_matches_its_tensor_list() {
    let r = reference_json("minimax_m2_params.json");
    let n = |k: &str| r[k].as_u64().unwrap();
    let m = load("minimax-m2.7.json");
    assert_eq!(m.total_params(), n("total_params"));
    assert_eq!(
        m.active_params(),
        n("active_params_without_embedding") as f64
    );
    let bytes: f64 = m.groups.iter().map(|g| g.rank_bytes()).sum();
    assert_eq!(bytes, n("bytes") as f64);
    assert_eq!(
        (
            group(&m, "self_attn.q_norm").out_features,
            group(&m, "self_attn.k_norm").out_features
        ),
        (48 * 128, 8 * 128)
    );
    let router = group(&m, "mlp.router");
    assert_eq!(
        (router.format.to_string(), router.bias),
        ("fp32".to_string(), true)
    );
    assert_eq!(
        group(&m, "mlp.experts.down_proj").format.to_string(),
        "fp8-block128x128"
    );
    assert!(m.layers.iter().all(|l| l.moe && l.sliding_window.is_none()));
    assert!(
        m.notes.iter().any(|n| n.contains("num_mtp_modules")),
        "{:?}",
        m.notes
    );
}

/// What MiniMax-M2's reader does not understand is an error naming the field: lightning-attention
/// layers, another q/k norm type, a shared expert.
#[test]
fn minimax_m2_errors_name_the_field() {
    let mm = "minimax-m2.7.json";
    let f = field_of(mm, |c| {
        c["attn_type_list"][7] = 0.into();
    });
    assert_eq!(f.as_deref(), Some("attn_type_list"));
    let f = field_of(mm, |c| {
        c["attn_type_list"] = serde_json::json!([1, 1]);
    });
    assert_eq!(f.as_deref(), Some("attn_type_list"));
    let f = field_of(mm, |c| {
        c.insert("qk_norm_type".into(), "per_head".into());
    });
    assert_eq!(f.as_deref(), Some("qk_norm_type"));
    let f = field_of(mm, |c| {
        c.insert("shared_intermediate_size".into(), 1536.into());
    });
    assert_eq!(f.as_deref(), Some("shared_intermediate_size"));
    let f = field_of(mm, |c| {
        c.insert("mlp_intermediate_size".into(), 8192.into());
    });
    assert_eq!(f.as_deref(), Some("mlp_intermediate_size"));
}

/// Phi-3's fused `qkv_proj` and `gate_up_proj` are listed as q, k, v and gate|up with the checkpoint's module
/// names (for quantisation patterns); under tensor parallelism a rank holds whole heads of each, as vLLM
/// splits the fused projection. Phi-3-mini-4k's window applies to every layer (transformers' Phi3Attention
/// passes `config.sliding_window` to each); Phi-4-mini ties its embeddings and has a window longer than
/// its context.
#[test]
fn phi3_fused_projections() {
    let mini = load("phi-3-mini-4k-instruct.json");
    assert_eq!(mini.total_params(), 3_821_079_552);
    assert!(mini.layers.iter().all(|l| l.sliding_window == Some(2047)));
    let phi4 = load("phi-4.json");
    assert!(phi4.layers.iter().all(|l| l.sliding_window.is_none()));
    assert_eq!(
        (
            group(&phi4, "self_attn.q_proj").out_features,
            group(&phi4, "self_attn.k_proj").out_features,
            group(&phi4, "self_attn.v_proj").out_features,
            group(&phi4, "mlp.gate_up_proj").out_features,
        ),
        (40 * 128, 10 * 128, 10 * 128, 2 * 17920)
    );
    assert!(phi4.notes.iter().any(|n| n.contains("qkv_proj")));
    let m4 = load("phi-4-mini-instruct.json");
    assert!(m4.tied_embeddings && !group(&m4, "lm_head").bias);
    assert!(m4.layers.iter().all(|l| l.sliding_window == Some(262_144)));

    // Two ranks: 20 query heads and 5 KV heads each; o and down split by rows.
    let text = std::fs::read_to_string(models_dir().join("phi-4.json")).unwrap();
    let run = |tp| RunOptions {
        tp,
        ep: 1,
        quant: None,
    };
    let r2 = model_from_config(&text, "phi-4.json", &run(2)).unwrap();
    let rank = |m: &ModelShape, name: &str| {
        let g = group(m, name);
        (g.rank_in, g.rank_out)
    };
    assert_eq!(rank(&r2, "self_attn.q_proj"), (5120, 20 * 128));
    assert_eq!(rank(&r2, "self_attn.k_proj"), (5120, 5 * 128));
    assert_eq!(rank(&r2, "self_attn.o_proj"), (20 * 128, 5120));
    assert_eq!(rank(&r2, "mlp.gate_up_proj"), (5120, 17920));
    // Eight ranks would split 10 KV heads into 1.25 each: an error naming the field, as vLLM refuses it.
    let e = model_from_config(&text, "phi-4.json", &run(8)).unwrap_err();
    assert_eq!(e.field(), Some("num_key_value_heads"));
    // Phi-4-mini on sixteen ranks: 8 KV heads, one replicated head each; 24 heads do not divide.
    let text = std::fs::read_to_string(models_dir().join("phi-4-mini-instruct.json")).unwrap();
    let r8 = model_from_config(&text, "phi-4-mini", &run(8)).unwrap();
    assert_eq!(rank(&r8, "self_attn.k_proj"), (3072, 128));
    let e = model_from_config(&text, "phi-4-mini", &run(16)).unwrap_err();
    assert_eq!(e.field(), Some("num_attention_heads"));

    // The fused module's name is the one a quantisation pattern matches: leaving layer 0's qkv_proj in
    // bf16 leaves its q, k and v alike.
    let q = edited("phi-3-mini-4k-instruct.json", |c| {
        c.insert(
            "quantization_config".into(),
            serde_json::json!({
                "quant_method": "fp8", "activation_scheme": "dynamic",
                "modules_to_not_convert": ["model.layers.0.self_attn.qkv_proj"]
            }),
        );
    })
    .unwrap();
    for name in ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"] {
        let formats: Vec<(String, u64)> = q
            .groups
            .iter()
            .filter(|g| g.name == name)
            .map(|g| (g.format.to_string(), g.layers))
            .collect();
        assert_eq!(
            formats,
            [("bf16".to_string(), 1), ("fp8".to_string(), 31)],
            "{name}"
        );
    }
}

/// What Phi-3's reader does not understand is an error naming the field: Phi-3-small's block-sparse keys
/// (a different `model_type` in its own configs), a `full_attn_mod` other than 1.
#[test]
fn phi3_errors_name_the_field() {
    let f = field_of("phi-3-mini-4k-instruct.json", |c| {
        c.insert("blocksparse_block_size".into(), 64.into());
    });
    assert_eq!(f.as_deref(), Some("blocksparse_block_size"));
    let f = field_of("phi-4-mini-instruct.json", |c| {
        c.insert("full_attn_mod".into(), 4.into());
    });
    assert_eq!(f.as_deref(), Some("full_attn_mod"));
    let f = field_of("phi-4.json", |c| {
        c.insert("lm_head_bias".into(), "no".into());
    });
    assert_eq!(f.as_deref(), Some("lm_head_bias"));
    // The LM-head bias, when a config sets it, is a vocabulary-wide vector.
    let m = edited("phi-4-mini-instruct.json", |c| {
        c.insert("lm_head_bias".into(), true.into());
    })
    .unwrap();
    assert_eq!(
        m.total_params(),
        load("phi-4-mini-instruct.json").total_params() + 200_064
    );
}
