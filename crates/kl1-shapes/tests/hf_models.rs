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
            // Model cards round active counts to 2-3 digits (Qwen3-30B-A3B: 3.35 B written "3.3 B"): 2 %.
            assert!(err < 0.02, "{file}: {got} active parameters, published {a}");
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
