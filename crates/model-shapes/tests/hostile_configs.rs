//! Hostile model configs: values no model has, which made the weights table's arithmetic wrap (2^62 words of
//! vocabulary counted 0 parameters), gave more active than total parameters, accepted a zero head width or
//! allocated in proportion to an absurd layer count. Each must be refused with an error naming the key, or
//! give a table whose counts are exact; none may panic. (Memory: `tests/memory.rs`.)
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::PathBuf;

use model_shapes::{Error, ModelShape, RunOptions, model_from_config};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/models")
}

/// Every config in testdata/models, by file name.
fn configs() -> Vec<(String, Map<String, Value>)> {
    let mut v: Vec<(String, Map<String, Value>)> = std::fs::read_dir(models_dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "json").then(|| {
                let text = std::fs::read_to_string(&p).unwrap();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, serde_json::from_str(&text).unwrap())
            })
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn config(name: &str) -> Map<String, Value> {
    configs()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, c)| c)
        .unwrap()
}

fn read(c: &Map<String, Value>) -> Result<ModelShape, Error> {
    model_from_config(
        &Value::Object(c.clone()).to_string(),
        "hostile.json",
        &RunOptions::default(),
    )
}

/// `name` with `key` (a top-level key, or `text_config.key`) set to `value`.
fn edited(name: &str, key: &str, value: Value) -> Result<ModelShape, Error> {
    let mut c = config(name);
    set(&mut c, key, value);
    read(&c)
}

fn set(c: &mut Map<String, Value>, key: &str, value: Value) {
    match key.split_once('.') {
        Some((outer, inner)) => {
            c.get_mut(outer)
                .and_then(Value::as_object_mut)
                .unwrap()
                .insert(inner.to_string(), value);
        }
        None => {
            c.insert(key.to_string(), value);
        }
    }
}

/// The field an error names, failing the test on success.
fn refused(r: Result<ModelShape, Error>) -> String {
    match r {
        Ok(m) => panic!(
            "accepted: {} parameters, {} active",
            m.total_params(),
            m.active_params()
        ),
        Err(e) => e
            .field()
            .unwrap_or_else(|| panic!("no field in {e}"))
            .to_string(),
    }
}

/// What every accepted table keeps: no empty tensor, parameter counts that are exact (below 2^53, where
/// f64 counts every integer) and add up, no more active parameters than there are, finite bytes.
fn sane(m: &ModelShape) {
    let mut sum: u128 = 0;
    for g in &m.groups {
        assert!(
            g.in_features >= 1 && g.out_features >= 1 && g.per_layer >= 1 && g.layers >= 1,
            "{}: an empty tensor group ({} × {}, {} per layer, {} layers)",
            g.name,
            g.in_features,
            g.out_features,
            g.per_layer,
            g.layers
        );
        let bias = if g.bias { g.out_features } else { 0 };
        let exact = u128::from(g.per_layer)
            * u128::from(g.layers)
            * (u128::from(g.in_features) * u128::from(g.out_features) + u128::from(bias));
        assert_eq!(u128::from(g.params()), exact, "{}", g.name);
        sum += exact;
        assert!(
            g.rank_bytes().is_finite() && g.rank_bytes() >= 0.0,
            "{}",
            g.name
        );
    }
    assert!(sum < 1 << 53, "{sum} parameters");
    let total = m.total_params() as f64;
    assert!(
        m.active_params() <= total,
        "{} active of {total}",
        m.active_params()
    );
    assert!(m.active_params() >= 0.0);
}

#[test]
fn a_vocabulary_of_2_to_the_62_is_refused_not_wrapped_to_nothing() {
    assert_eq!(
        refused(edited("llama-3.1-8b.json", "vocab_size", json!(1u64 << 62))),
        "vocab_size"
    );
}

#[test]
fn an_intermediate_size_near_2_to_the_63_is_refused() {
    for v in [(1u64 << 63) - 1, 1 << 63, u64::MAX] {
        assert_eq!(
            refused(edited("llama-3.1-8b.json", "intermediate_size", json!(v))),
            "intermediate_size",
            "{v}"
        );
    }
}

#[test]
fn a_zero_head_width_is_refused_like_every_other_zero() {
    assert_eq!(
        refused(edited("llama-3.1-8b.json", "head_dim", json!(0))),
        "head_dim"
    );
    assert_eq!(
        refused(edited("qwen3-8b.json", "head_dim", json!(0))),
        "head_dim"
    );
    // A multimodal wrapper's language model names it under text_config.
    assert_eq!(
        refused(edited(
            "gemma-3-4b-it.json",
            "text_config.head_dim",
            json!(0)
        )),
        "text_config.head_dim"
    );
    // MLA reads its widths elsewhere, but a zero is no more a width there.
    assert_eq!(
        refused(edited("deepseek-v3.json", "head_dim", json!(0))),
        "head_dim"
    );
    assert_eq!(
        refused(edited("deepseek-v3.json", "q_lora_rank", json!(0))),
        "q_lora_rank"
    );
}

#[test]
fn absurd_layer_counts_are_refused_before_anything_is_allocated() {
    for v in [1u64 << 20, 1 << 32, 1 << 62, u64::MAX] {
        for name in [
            "llama-3.1-8b.json",
            "mixtral-8x7b-v0.1.json",
            "gemma-2-9b.json",
        ] {
            assert_eq!(
                refused(edited(name, "num_hidden_layers", json!(v))),
                "num_hidden_layers",
                "{name}: {v}"
            );
        }
    }
}

#[test]
fn a_sliding_window_of_no_keys_is_refused() {
    assert_eq!(
        refused(edited("mistral-7b-v0.1.json", "sliding_window", json!(0))),
        "sliding_window"
    );
}

/// Every integer a config holds, at the values that broke the arithmetic: refused with an error that names a
/// field, or (a key that sets no weight, such as a token id) a sane table.
#[test]
fn every_integer_key_at_an_edge_is_refused_by_name_or_gives_a_sane_table() {
    let edges = [0u64, 1 << 31, 1 << 32, 1 << 53, 1 << 62, u64::MAX];
    let mut checked = 0;
    for (name, base) in configs() {
        let mut keys: Vec<String> = Vec::new();
        for (k, v) in &base {
            if v.is_u64() {
                keys.push(k.clone());
            }
            if k == "text_config"
                && let Some(inner) = v.as_object()
            {
                keys.extend(
                    inner
                        .iter()
                        .filter(|(_, v)| v.is_u64())
                        .map(|(ik, _)| format!("text_config.{ik}")),
                );
            }
        }
        for key in keys {
            for &v in &edges {
                let mut c = base.clone();
                set(&mut c, &key, json!(v));
                match read(&c) {
                    Ok(m) => sane(&m),
                    Err(e) => {
                        let field = e.field().unwrap_or_else(|| panic!("{name} {key}={v}: {e}"));
                        assert!(!field.is_empty(), "{name} {key}={v}: {e}");
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 1000, "{checked} edits");
}

/// A few keys at random values from everywhere in u64 (and negative, fractional, absent): never a panic,
/// and what is accepted is sane.
fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u32..64).prop_map(|b| json!(1u64 << b)),
        (0u32..64).prop_map(|b| json!((1u64 << b) - 1)),
        any::<u64>().prop_map(|v| json!(v)),
        (0u64..4096).prop_map(|v| json!(v)),
        Just(json!(-1)),
        Just(json!(2.5)),
        Just(Value::Null),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_values_never_panic_and_what_is_accepted_is_sane(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), value()), 1..4),
    ) {
        let all = configs();
        let (_, base) = &all[which.index(all.len())];
        let keys: Vec<String> = base
            .iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, _)| k.clone())
            .collect();
        let mut c = base.clone();
        for (k, v) in edits {
            if !keys.is_empty() {
                set(&mut c, &keys[k.index(keys.len())], v);
            }
        }
        if let Ok(m) = read(&c) {
            sane(&m);
        }
    }
}

/// The parallel sizes come from the command line: absurd ones are refused, never a panic.
#[test]
fn absurd_parallel_sizes_are_refused() {
    let text = std::fs::read_to_string(models_dir().join("qwen3-30b-a3b.json")).unwrap();
    for (tp, ep) in [(1u64 << 62, 1), (1, 1 << 62), (u64::MAX, u64::MAX), (0, 1)] {
        let run = RunOptions {
            tp,
            ep,
            quant: None,
        };
        assert!(
            model_from_config(&text, "q.json", &run).is_err(),
            "tp {tp}, ep {ep}"
        );
    }
}
