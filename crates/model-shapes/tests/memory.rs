//! Memory while reading a config, measured by a counting global allocator (a test binary of its own: the
//! allocator counts the whole process, so its measurements run one at a time). Layers that repeat cost
//! nothing per layer: a model of 16,384 layers is read in the memory of one of 64 (issue 21 #9: 2^20 layers
//! in a 400-byte config took 1.5 GB).
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::PathBuf;
use std::sync::Mutex;

use model_shapes::{RunOptions, model_from_config};
use serde_json::{Value, json};

// The counting allocator the trace crate's memory tests and fuzz target use (not its parse bound).
#[path = "../../kineto-trace/tests/property/counting.rs"]
mod counting;

/// One measurement at a time: the counters are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

fn config(name: &str, layers: u64) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/models")
        .join(name);
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    match c.get_mut("text_config") {
        Some(text) => text["num_hidden_layers"] = json!(layers),
        None => c["num_hidden_layers"] = json!(layers),
    }
    c.to_string()
}

/// Peak heap of reading the config at `layers` layers, the table's layer count, and the runs its layers are
/// stored as.
fn peak(name: &str, layers: u64) -> (usize, u64, usize) {
    let text = config(name, layers);
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (m, peak, _) = counting::measure(|| {
        model_from_config(&text, name, &RunOptions::default()).expect("a valid config")
    });
    (peak, m.layers.iter().count() as u64, m.layers.stored_runs())
}

#[test]
fn layers_that_repeat_cost_no_memory_per_layer() {
    // Dense (every layer alike), sliding every other layer (Gemma 2), five sliding to one full (Gemma 3),
    // MoE after dense layers (DeepSeek-V2 Lite's first_k_dense_replace), every layer MoE (Mixtral).
    for name in [
        "llama-3.1-8b.json",
        "gemma-2-9b.json",
        "gemma-3-4b-it.json",
        "deepseek-v2-lite.json",
        "mixtral-8x7b-v0.1.json",
    ] {
        let (small, n_small, _) = peak(name, 64);
        let (large, n_large, runs) = peak(name, 16_384);
        assert_eq!((n_small, n_large), (64, 16_384), "{name}");
        assert!(runs <= 8, "{name}: 16,384 layers stored as {runs} runs");
        // 256 × the layers in the memory of the 64 plus 64 KiB: a byte per layer would be 16 KiB.
        assert!(
            large <= small + (64 << 10),
            "{name}: {large} B for 16,384 layers against {small} B for 64"
        );
    }
}
