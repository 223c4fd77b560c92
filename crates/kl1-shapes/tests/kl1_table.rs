//! The KL1 spec through the general weights table gives the same per-rank bytes as the KL1 estimate
//! functions that `kl1-bandwidth` uses, for every built-in spec and both expert splits.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] functions

use kl1_shapes::{
    BUILTIN_SPECS, Reads, Spec, decode_dense_launches, lm_head_bytes, mean_expert_bytes,
    mhc_prenorm_bytes, router_bytes, shared_expert_bytes,
};

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: {got} vs {want}"
    );
}

fn per_layer(shape: &kl1_shapes::ModelShape, prefix: &str) -> f64 {
    shape
        .groups
        .iter()
        .filter(|g| g.name.starts_with(prefix))
        .map(|g| g.rank_bytes() / g.layers as f64)
        .sum()
}

#[test]
fn the_kl1_spec_is_one_instance_of_the_weights_table() {
    for (name, _) in BUILTIN_SPECS {
        let spec = Spec::builtin_named(name).unwrap();
        let shape = spec.model_shape();
        let m = spec.model();
        assert_eq!(shape.layers.len() as u64, m.moe_layers, "{name}");
        close(
            shape.rank_expert_bytes(),
            mean_expert_bytes(&spec).total(),
            "routed expert",
        );
        let dense: u64 = decode_dense_launches(&spec).iter().map(|l| l.bytes()).sum();
        close(per_layer(&shape, "attn."), dense as f64, "dense launches");
        close(
            per_layer(&shape, "ffn.shared_experts"),
            shared_expert_bytes(&spec) as f64,
            "shared",
        );
        close(
            per_layer(&shape, "ffn.gate"),
            router_bytes(&spec) as f64,
            "router",
        );
        close(
            per_layer(&shape, "hc_"),
            2.0 * mhc_prenorm_bytes(&spec) as f64,
            "mHC",
        );
        close(
            shape.rank_bytes_of(Reads::LogitRows),
            lm_head_bytes(&spec) as f64,
            "LM head",
        );
        // The default: DeepSeek-V4.1-Flash, 2 GB10s, tensor-split experts: 384 on every rank.
        assert_eq!(shape.rank_experts(), m.routed_experts);
    }
}
