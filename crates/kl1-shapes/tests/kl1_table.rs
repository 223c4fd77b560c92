//! The KL1 spec through the general weights table: `Spec::kl1_bytes`, which `kl1-bandwidth` reports, reads
//! the same bytes as the per-rank shapes give by the kernel-level formulas (to the last bit: its output must
//! not move), and the table's own sums agree with it, for every built-in spec, both expert splits, K mixes and
//! a model without a shared expert.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] functions

use kl1_shapes::{BUILTIN_SPECS, Bits, Exl3Linear, ExpertSplit, Shape, Spec};
use model_shapes::{Citation, Reads, WeightFormat};

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: {got} vs {want}"
    );
}

/// The same `f64` to the bit (`==` would take −0.0 for 0.0, which a report prints differently).
fn same(got: f64, want: f64, what: &str) {
    assert_eq!(got.to_bits(), want.to_bits(), "{what}: {got:?} vs {want:?}");
}

fn per_layer(shape: &model_shapes::ModelShape, prefix: &str) -> f64 {
    shape
        .groups
        .iter()
        .filter(|g| g.name.starts_with(prefix))
        .map(|g| g.rank_bytes() / g.layers as f64)
        .sum()
}

/// `text` with the line starting `key = ` replaced by `line`.
fn with_line(text: &str, key: &str, line: &str) -> String {
    let prefix = format!("{key} = ");
    assert!(text.lines().any(|l| l.starts_with(&prefix)), "{key}");
    text.lines()
        .map(|l| if l.starts_with(&prefix) { line } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every built-in spec, with whole experts per rank, without a shared expert, and at a K mix.
fn specs() -> Vec<Spec> {
    let mut out = Vec::new();
    for (name, text) in BUILTIN_SPECS {
        let spec = Spec::builtin_named(name).unwrap();
        let experts = spec.model().routed_experts;
        let whole = with_line(
            text,
            "expert_split",
            r#"expert_split = { value = "whole", assumed = "test" }"#,
        );
        let none = with_line(
            text,
            "shared_experts",
            r#"shared_experts = { value = 0, assumed = "test" }"#,
        );
        let whole = Spec::from_toml_str(&whole, "test: whole").unwrap();
        assert_eq!(whole.parallelism().expert_split, ExpertSplit::Whole);
        let none = Spec::from_toml_str(&none, "test: no shared expert").unwrap();
        assert_eq!(none.model().shared_experts, 0);
        // Mean K not a binary fraction: the mean expert's f64 sum is not trivially exact.
        let mix = [(1, 7), (5, experts - 7 - 77), (8, 77)];
        let assumed = || Citation::Assumed {
            reason: "test mix".to_string(),
        };
        let mixed = spec.with_routed_k_mix(&mix, assumed()).unwrap();
        let whole_mixed = whole.with_routed_k_mix(&mix, assumed()).unwrap();
        out.extend([spec, whole, none, mixed, whole_mixed]);
    }
    out
}

/// The bytes from the spec's per-rank shapes by the kernel-level formulas, as `kl1-bandwidth` computed them
/// before it read the table: the oracle `Spec::kl1_bytes` must match exactly.
struct FromShapes {
    dense: [f64; 4],
    gate_up: f64,
    down: f64,
    shared: f64,
    lm_head: f64,
    router: f64,
    mhc: f64,
}

fn from_shapes(spec: &Spec) -> FromShapes {
    let lin = |shape: Shape, bits: Bits| Exl3Linear::new(shape, bits).bytes();
    let (s, q, m, d) = (
        spec.rank_shapes(),
        spec.quant(),
        spec.model(),
        spec.dtypes(),
    );
    let experts = q.routed_experts.experts() as f64;
    let mean = |bytes: &dyn Fn(Bits) -> u64| {
        q.routed_experts
            .entries()
            .iter()
            .map(|&(k, n)| n as f64 * bytes(k) as f64)
            .sum::<f64>()
            / experts
    };
    let h = m.mhc_expansion;
    FromShapes {
        dense: [
            (lin(s.wq_a, q.wq_a) + lin(s.wkv, q.wkv)) as f64,
            lin(s.wq_b, q.wq_b) as f64,
            (s.wo_a_slices * lin(s.wo_a, q.wo_a)) as f64,
            lin(s.wo_b, q.wo_b) as f64,
        ],
        gate_up: mean(&|k| 2 * lin(s.expert_gate_up, k)),
        down: mean(&|k| lin(s.expert_down, k)),
        shared: match (s.shared_gate_up, s.shared_down) {
            (Some(gu), Some(dn)) => {
                (2 * lin(gu, q.shared_expert) + lin(dn, q.shared_expert)) as f64
            }
            _ => 0.0,
        },
        lm_head: lin(s.lm_head, q.lm_head) as f64,
        router: (m.routed_experts * m.hidden * d.router.bytes()
            + m.routed_experts * d.router_bias.bytes()) as f64,
        mhc: ((2 + h) * h * h * m.hidden * d.mhc.bytes()) as f64,
    }
}

#[test]
fn the_table_read_per_kernel_is_the_per_rank_shapes_to_the_bit() {
    for spec in specs() {
        let name = format!("{} {:?}", spec.name(), spec.quant().routed_experts);
        let b = spec.kl1_bytes();
        let want = from_shapes(&spec);
        for (l, want) in b.dense.iter().zip(want.dense) {
            same(l.bytes(), want, &format!("{name}: {}", l.name));
        }
        same(
            b.expert.gate_up,
            want.gate_up,
            &format!("{name}: mean gate|up"),
        );
        same(b.expert.down, want.down, &format!("{name}: mean down"));
        same(
            b.shared_expert,
            want.shared,
            &format!("{name}: shared expert"),
        );
        same(b.lm_head, want.lm_head, &format!("{name}: LM head"));
        same(b.router, want.router, &format!("{name}: router"));
        same(b.mhc_prenorm, want.mhc, &format!("{name}: mHC"));
        let q = spec.quant();
        assert_eq!(b.lm_head_bits, q.lm_head, "{name}");
        let bits: Vec<Bits> = b.dense.iter().map(|l| l.bits).collect();
        assert_eq!(bits, [q.wq_a, q.wq_b, q.wo_a, q.wo_b], "{name}");
        for k in Bits::ALL {
            let s = spec.rank_shapes();
            let e = b.expert_at(k);
            let lin = |shape| Exl3Linear::new(shape, k).bytes() as f64;
            same(
                e.gate_up,
                2.0 * lin(s.expert_gate_up),
                &format!("{name} {k}"),
            );
            same(e.down, lin(s.expert_down), &format!("{name} {k}"));
        }
    }
}

#[test]
fn the_kl1_spec_is_one_instance_of_the_weights_table() {
    for spec in specs() {
        let name = spec.name().to_string();
        let shape = spec.model_shape();
        let b = spec.kl1_bytes();
        let m = spec.model();
        assert_eq!(shape.layers.len(), m.moe_layers, "{name}");
        // The table holds the experts at the mix's mean K: the same bytes, as bytes are linear in K.
        close(shape.rank_expert_bytes(), b.expert.total(), "routed expert");
        let dense: f64 = b.dense.iter().map(|l| l.bytes()).sum();
        close(per_layer(&shape, "attn."), dense, "dense launches");
        close(
            per_layer(&shape, "ffn.shared_experts"),
            b.shared_expert,
            "shared",
        );
        close(per_layer(&shape, "ffn.gate"), b.router, "router");
        close(per_layer(&shape, "hc_"), 2.0 * b.mhc_prenorm, "mHC");
        close(shape.rank_bytes_of(Reads::LogitRows), b.lm_head, "LM head");
        // A launch's K is its groups' format.
        for l in &b.dense {
            for g in &l.groups {
                assert_eq!(
                    g.format,
                    WeightFormat::Exl3 {
                        bits: f64::from(l.bits.get())
                    },
                    "{name}: {}",
                    g.name
                );
            }
        }
        let experts_on_rank = match spec.parallelism().expert_split {
            ExpertSplit::Tensor => m.routed_experts,
            ExpertSplit::Whole => m.routed_experts / spec.parallelism().ranks,
        };
        assert_eq!(shape.rank_experts(), experts_on_rank, "{name}");
    }
}
