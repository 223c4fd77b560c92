//! Properties that must hold for any input, not only the shipped specs' values.
#![allow(clippy::expect_used)] // test helpers outside #[test] functions

use kl1_shapes::{
    Bits, Exl3Linear, ReconstructKernel, Shape, Spec, Split, expected_distinct_experts, gbps,
    mean_routed_k, reconstruct_bytes, reconstruct_shape, shared_runs,
};
use model_shapes::{Citation, uniform_distinct_experts};
use proptest::prelude::*;

fn bits() -> impl Strategy<Value = Bits> {
    (1u64..=8).prop_map(|k| Bits::new(k).expect("1..=8"))
}

/// A shape of 1..=512 tiles a side.
fn shape() -> impl Strategy<Value = Shape> {
    (1u64..=512, 1u64..=512).prop_map(|(a, b)| Shape::new(16 * a, 16 * b).expect("whole tiles"))
}

fn specs() -> impl Strategy<Value = Spec> {
    prop_oneof![
        Just(Spec::builtin()),
        Just(Spec::builtin_named("deepseek-v4-flash-exl3-2xgb10").expect("shipped")),
    ]
}

/// A K mix over `experts` experts: one weight per K, scaled to add up, remainder to the first used K.
fn k_mix(experts: u64) -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec(0u64..50, 8).prop_filter_map("at least one K used", move |w| {
        let total: u64 = w.iter().sum();
        let first = w.iter().position(|&x| x > 0)?;
        let mut counts: Vec<u64> = w.iter().map(|&x| experts * x / total).collect();
        let assigned: u64 = counts.iter().sum();
        counts[first] += experts - assigned;
        Some(
            counts
                .into_iter()
                .enumerate()
                .filter(|&(_, n)| n > 0)
                .map(|(i, n)| (i as u64 + 1, n))
                .collect(),
        )
    })
}

fn assumed() -> Citation {
    Citation::Assumed {
        reason: "property test".to_string(),
    }
}

proptest! {
    #[test]
    fn linear_bytes_grow_with_k_by_exactly_the_trellis(s in shape(), a in bits(), b in bits()) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let (small, big) = (Exl3Linear::new(s, lo), Exl3Linear::new(s, hi));
        // Sign vectors do not depend on K; the trellis grows by k·n/8 per bit.
        prop_assert_eq!(small.sign_bytes(), big.sign_bytes());
        prop_assert_eq!(
            big.bytes() - small.bytes(),
            s.k() * s.n() * u64::from(hi.get() - lo.get()) / 8
        );
        if lo < hi {
            prop_assert!(big.bytes() > small.bytes());
        }
    }

    #[test]
    fn splitting_conserves_the_trellis(s in shape(), ranks in 1u64..=8, cols in any::<bool>()) {
        let split = if cols { Split::Columns } else { Split::Rows };
        let divided = if cols { s.n() } else { s.k() };
        let sliced = s.split(split, ranks);
        prop_assert_eq!(sliced.is_ok(), divided.is_multiple_of(16 * ranks));
        if let Ok(part) = sliced {
            let (whole, one) = (Exl3Linear::new(s, Bits::ALL[3]), Exl3Linear::new(part, Bits::ALL[3]));
            prop_assert_eq!(ranks * one.trellis_bytes(), whole.trellis_bytes());
            // The undivided sign vector is held in full by every rank, the divided one once in total.
            let kept = if cols { one.suh_bytes() } else { one.svh_bytes() };
            prop_assert_eq!(ranks * one.sign_bytes() - (ranks - 1) * kept, whole.sign_bytes());
        }
    }

    #[test]
    fn expert_bytes_are_monotone_in_k(spec in specs(), a in bits(), b in bits()) {
        let bytes = spec.kl1_bytes();
        let (a_bytes, b_bytes) = (bytes.expert_at(a).total(), bytes.expert_at(b).total());
        prop_assert_eq!(a < b, a_bytes < b_bytes);
        prop_assert_eq!(a == b, a_bytes == b_bytes);
    }

    #[test]
    fn the_mean_expert_lies_within_its_mix(spec in specs(), mix in k_mix(384)) {
        let experts = spec.model().routed_experts;
        // Rescale the 384-expert mix to this model's experts.
        let mut rescaled: Vec<(u64, u64)> = mix.iter().map(|&(k, n)| (k, n * experts / 384)).collect();
        let short = experts - rescaled.iter().map(|&(_, n)| n).sum::<u64>();
        rescaled[0].1 += short;
        let mixed = spec.with_routed_k_mix(&rescaled, assumed()).expect("adds up");
        let used: Vec<Bits> = rescaled.iter().filter(|&&(_, n)| n > 0)
            .map(|&(k, _)| Bits::new(k).expect("1..=8")).collect();
        let (lo, hi) = (used.iter().min().copied().expect("one"), used.iter().max().copied().expect("one"));
        let bytes = mixed.kl1_bytes();
        let mean = bytes.expert.total();
        prop_assert!(bytes.expert_at(lo).total() <= mean * (1.0 + 1e-12));
        prop_assert!(mean <= bytes.expert_at(hi).total() * (1.0 + 1e-12));
        let k = mean_routed_k(&mixed);
        prop_assert!(f64::from(lo.get()) - 1e-12 <= k && k <= f64::from(hi.get()) + 1e-12);
    }

    #[test]
    fn moving_an_expert_to_a_higher_k_raises_the_mean(from in 1u64..8, step in 1u64..8, n in 1u64..=383) {
        let to = (from + step).min(8);
        prop_assume!(to > from);
        let spec = Spec::builtin();
        let before = spec.with_routed_k_mix(&[(from, n + 1), (to, 383 - n)], assumed()).expect("adds up");
        let after = spec.with_routed_k_mix(&[(from, n), (to, 384 - n)], assumed()).expect("adds up");
        prop_assert!(after.kl1_bytes().expert.total() > before.kl1_bytes().expert.total());
        prop_assert!(mean_routed_k(&after) > mean_routed_k(&before));
    }

    #[test]
    fn spec_distinct_experts_match_the_general_formula(spec in specs(), m in 0u64..10_000) {
        let model = spec.model();
        prop_assert_eq!(
            expected_distinct_experts(&spec, m),
            uniform_distinct_experts(model.routed_experts, model.top_k, m).expect("valid")
        );
    }

    #[test]
    fn shared_runs_cover_the_rows_in_runs_of_8(rows in 0u64..1_000_000) {
        let runs = shared_runs(rows);
        prop_assert!(runs * 8 >= rows);
        if rows > 0 {
            prop_assert!((runs - 1) * 8 < rows);
        } else {
            prop_assert_eq!(runs, 0);
        }
        prop_assert!(shared_runs(rows + 1) >= runs);
    }

    #[test]
    fn moe_bytes_are_monotone_and_inverted_by_experts_readable(
        spec in specs(), d in 0.0f64..384.0, extra in 0.0f64..10.0, rows in 0u64..512, span in 1.0f64..10_000.0
    ) {
        let kl1 = spec.kl1_bytes();
        let bytes = kl1.moe_layer_weight_bytes(d, rows);
        prop_assert!(kl1.moe_layer_weight_bytes(d + extra, rows) >= bytes);
        prop_assert!(kl1.moe_layer_weight_bytes(d, rows + 1) >= bytes);
        let rate = gbps(bytes, span).expect("valid");
        let back = kl1.experts_readable(rate, span, rows).expect("valid");
        prop_assert!((back - d).abs() <= 1e-6 * d.max(1.0), "{} came back as {}", d, back);
    }

    #[test]
    fn gbps_times_duration_is_bytes(bytes in 0.0f64..1e12, us in 1e-3f64..1e9) {
        let rate = gbps(bytes, us).expect("valid");
        prop_assert!((rate * us * 1e3 - bytes).abs() <= 1e-9 * bytes.max(1.0));
    }

    #[test]
    fn reconstruct_grids_round_trip(k_tiles in 1u64..=2048, n_units in 1u64..=256, b in bits()) {
        // Plain: grid (n/128, k/16).
        let (k, n) = (16 * k_tiles, 128 * n_units);
        let grid = [n_units as u32, k_tiles as u32, 1];
        let s = reconstruct_shape(ReconstructKernel::Plain, grid).expect("valid");
        prop_assert_eq!((s.k(), s.n()), (k, n));
        let moved = reconstruct_bytes(ReconstructKernel::Plain, grid, b).expect("valid");
        prop_assert_eq!(moved.read, k * n * u64::from(b.get()) / 8);
        prop_assert_eq!(moved.written, 2 * k * n);
        // Hadamard: grid (n/128, k/128), and it reads the sign vectors too.
        let had = reconstruct_bytes(ReconstructKernel::Hadamard, grid, b).expect("valid");
        prop_assert_eq!(had.read, 128 * k_tiles * n * u64::from(b.get()) / 8 + 2 * 128 * k_tiles + 2 * n);
    }

    #[test]
    fn loading_accepts_exactly_k_1_to_8(k in 0i64..20) {
        let text = kl1_shapes::BUILTIN_SPECS[0].1.replace(
            "wq_b = { value = 4,",
            &format!("wq_b = {{ value = {k},"),
        );
        match Spec::from_toml_str(&text, "test") {
            Ok(spec) => {
                prop_assert!((1..=8).contains(&k));
                prop_assert_eq!(i64::from(spec.quant().wq_b.get()), k);
            }
            Err(e) => {
                prop_assert!(!(1..=8).contains(&k));
                prop_assert_eq!(e.field(), Some("quant.wq_b"));
            }
        }
    }
}
