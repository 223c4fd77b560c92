//! Token counts no step has (a marker may say anything): the estimate never wraps or panics, whatever the
//! counts and whichever model, and every number it gives is finite and non-negative.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::PathBuf;

use model_shapes::{ModelShape, RunOptions, model_from_config};
use proptest::prelude::*;
use roofline::{Counts, PhaseTokens, StepTokens, estimate};

fn models() -> Vec<ModelShape> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/models");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            model_from_config(&text, "m", &RunOptions::default()).unwrap()
        })
        .collect()
}

fn count() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(u64::MAX),
        (0u32..64).prop_map(|b| 1u64 << b),
        any::<u64>(),
        0u64..10_000,
    ]
}

fn phase() -> impl Strategy<Value = PhaseTokens> {
    (count(), count(), count(), count(), count()).prop_map(
        |(requests, query_tokens, kv_tokens, sq_sq, sq_sk)| PhaseTokens {
            requests,
            query_tokens,
            kv_tokens,
            sq_sq,
            sq_sk,
        },
    )
}

/// Every count is known, so every term is a number: finite and non-negative.
fn finite(what: &str, v: Option<f64>) {
    let v = v.unwrap_or_else(|| panic!("{what}: unknown though every count is given"));
    assert!(v.is_finite() && v >= 0.0, "{what}: {v}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn any_counts_give_finite_estimates(which in any::<prop::sample::Index>(), prefill in phase(), decode in phase()) {
        let all = models();
        let m = &all[which.index(all.len())];
        let e = estimate(m, &Counts::from(StepTokens { prefill, decode }), m.activation_bytes);
        let b = e.bytes;
        for (what, v) in [
            ("weights", b.weights),
            ("routed experts", b.routed_experts),
            ("kv read", b.kv_read),
            ("kv write", b.kv_write),
            ("lm head", b.lm_head),
            ("embedding", b.embedding),
            ("linear flops", e.flops.linear),
            ("lm head flops", e.flops.lm_head),
            ("experts", e.experts.uniform),
            ("experts per request", e.experts.top_k_per_request),
        ] {
            finite(what, v);
        }
        // Attention FLOPs take causal pairs, Σ sq·sk − (Σ sq² − Σ sq)/2, from counts that need not agree:
        // finite, whatever its sign.
        prop_assert!(e.flops.attention.is_some_and(f64::is_finite));
    }
}

/// The largest counts at once: every sum saturates rather than wraps.
#[test]
fn the_largest_counts_at_once() {
    let max = PhaseTokens {
        requests: u64::MAX,
        query_tokens: u64::MAX,
        kv_tokens: u64::MAX,
        sq_sq: u64::MAX,
        sq_sk: u64::MAX,
    };
    let t = StepTokens {
        prefill: max,
        decode: max,
    };
    assert_eq!(t.requests(), u64::MAX);
    for m in models() {
        let e = estimate(&m, &Counts::from(t), m.activation_bytes);
        finite(&m.model_type, e.bytes.total());
        finite(
            &m.model_type,
            e.flops.linear.zip(e.flops.lm_head).map(|(a, b)| a + b),
        );
    }
}
