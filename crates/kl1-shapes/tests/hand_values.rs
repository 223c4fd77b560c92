//! Every estimate against values worked out by hand from the shipped specs. Each expected value is written
//! as the arithmetic that produces it, from the spec's numbers, so a reader can check it without the code.
#![allow(clippy::expect_used)] // test helpers outside #[test] functions

use kl1_shapes::{
    Bits, ExpertSplit, ReconstructKernel, Shape, Spec, Split, expected_distinct_experts,
    expected_distinct_experts_per_rank, gbps, mean_routed_k, reconstruct_bytes, reconstruct_shape,
    shared_runs,
};
use model_shapes::{Citation, GpuTable};

fn k(v: u64) -> Bits {
    Bits::new(v).expect("a valid K in the test")
}

fn v41() -> Spec {
    Spec::builtin()
}

fn v4() -> Spec {
    Spec::builtin_named("deepseek-v4-flash-exl3-2xgb10").expect("shipped")
}

/// The default spec with whole experts per rank instead of the tensor split.
fn v41_whole() -> Spec {
    let text = kl1_shapes::BUILTIN_SPECS[0].1.replace(
        r#"expert_split = { value = "tensor""#,
        r#"expert_split = { value = "whole""#,
    );
    let spec = Spec::from_toml_str(&text, "test: whole experts").expect("valid");
    assert_eq!(spec.parallelism().expert_split, ExpertSplit::Whole);
    spec
}

/// One routed expert on one rank at `bits` (gate + up + down), as the weights table gives it.
fn expert_bytes(spec: &Spec, bits: Bits) -> f64 {
    spec.kl1_bytes().expert_at(bits).total()
}

fn close(actual: f64, expected: f64) {
    let tolerance = 1e-9 * expected.abs().max(1.0);
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} is not {expected} (±{tolerance})"
    );
}

#[test]
fn one_linear_trellis_and_sign_vectors() {
    // wo_b of DeepSeek-V4-Flash on one of two ranks: 4096 × 4096 at K = 4.
    let l = kl1_shapes::Exl3Linear::new(Shape::new(4096, 4096).expect("valid"), k(4));
    assert_eq!(l.trellis_bytes(), 4096 * 4096 * 4 / 8); // 8,388,608
    assert_eq!(l.suh_bytes(), 2 * 4096);
    assert_eq!(l.svh_bytes(), 2 * 4096);
    assert_eq!(l.bytes(), 8_388_608 + 16_384);
    // K = 1 on the smallest tile: 16·16·1/8 = 32 B of trellis, 2·16 + 2·16 = 64 B of sign vectors.
    let tile = kl1_shapes::Exl3Linear::new(Shape::new(16, 16).expect("valid"), k(1));
    assert_eq!(tile.bytes(), 32 + 64);
}

#[test]
fn split_slices_the_divided_dimension_only() {
    let full = Shape::new(4096, 2048).expect("valid");
    // Column split: n is divided, so each rank's svh is a slice and its suh whole.
    let cols = full.split(Split::Columns, 2).expect("divides");
    assert_eq!((cols.k(), cols.n()), (4096, 1024));
    // Row split: k is divided.
    let rows = full.split(Split::Rows, 2).expect("divides");
    assert_eq!((rows.k(), rows.n()), (2048, 2048));
    assert_eq!(full.split(Split::Replicated, 7).expect("always"), full);
    // 48 columns over 2 ranks leaves 24, not whole 16-wide tiles.
    let narrow = Shape::new(16, 48).expect("valid");
    assert!(narrow.split(Split::Columns, 2).is_err());
    assert!(full.split(Split::Rows, 0).is_err());
    assert!(full.split(Split::Rows, u64::MAX).is_err());
}

#[test]
fn shapes_outside_exl3_are_rejected() {
    assert!(Shape::new(0, 16).is_err());
    assert!(Shape::new(16, 4095).is_err());
    assert!(Shape::new(kl1_shapes::MAX_DIM + 16, 16).is_err());
    assert!(Shape::new(kl1_shapes::MAX_DIM, 16).is_ok());
    assert!(Bits::new(0).is_err());
    assert!(Bits::new(9).is_err());
    assert!(Bits::new(u64::MAX).is_err());
    assert_eq!(Bits::new(8).map(Bits::get).ok(), Some(8));
}

#[test]
fn v4_flash_expert_at_k4_matches_the_issue() {
    // One DeepSeek-V4-Flash expert per rank at K = 4, 2-way tensor split: intermediate 2048 / 2 = 1024.
    let spec = v4();
    assert_eq!(spec.expert_intermediate_per_rank(), 1024);
    let trellis = 3 * 4096 * 1024 * 4 / 8; // gate, up, down
    let signs = 2 * (3 * 4096 + 3 * 1024); // suh + svh of the three
    assert_eq!(trellis, 6_291_456);
    assert_eq!(signs, 30_720);
    assert_eq!(expert_bytes(&spec, k(4)), (trellis + signs) as f64);
}

#[test]
fn v41_flash_expert_parts_per_k() {
    let spec = v41();
    // Intermediate 2304 / 2 ranks = 1152 = 9 × 128 columns per rank.
    assert_eq!(spec.expert_intermediate_per_rank(), 1152);
    let k2 = spec.kl1_bytes().expert_at(k(2));
    // gate|up: 2 × (5120·1152·K/8 + 2·5120 + 2·1152)
    assert_eq!(
        k2.gate_up,
        (2 * (5120 * 1152 * 2 / 8 + 2 * 5120 + 2 * 1152)) as f64
    );
    assert_eq!(k2.gate_up, 2_974_208.0);
    // down: 1152·5120·K/8 + 2·1152 + 2·5120
    assert_eq!(k2.down, (1_474_560 + 2_304 + 10_240) as f64);
    assert_eq!(expert_bytes(&spec, k(2)), (2_974_208 + 1_487_104) as f64);
    assert_eq!(
        expert_bytes(&spec, k(3)),
        (3 * 5120 * 1152 * 3 / 8 + 2 * (3 * 5120 + 3 * 1152)) as f64
    );
}

#[test]
fn whole_expert_split_keeps_experts_whole() {
    let spec = v41_whole();
    assert_eq!(spec.expert_intermediate_per_rank(), 2304);
    // 3·5120·2304·2/8 + 2·(3·5120 + 3·2304)
    assert_eq!(expert_bytes(&spec, k(2)), (8_847_360 + 44_544) as f64);
    // The shared expert is still tensor-split (its own GatedMLP).
    assert_eq!(
        spec.kl1_bytes().shared_expert,
        v41().kl1_bytes().shared_expert
    );
    // Each rank holds half the experts, so under uniform routing it reads half the distinct ones.
    close(
        expected_distinct_experts_per_rank(&spec, 2),
        11.906_25 / 2.0,
    );
}

#[test]
fn mean_expert_over_the_k_mix() {
    // The default mix is every expert at K = 2, so the mean is the K = 2 expert.
    let spec = v41();
    let mean = spec.kl1_bytes().expert;
    close(mean.gate_up, 2_974_208.0);
    close(mean.down, 1_487_104.0);
    close(mean_routed_k(&spec), 2.0);

    // 192 experts at K = 2, 128 at K = 3, 64 at K = 4: mean K = (192·2 + 128·3 + 64·4) / 384 = 8/3.
    let mixed = spec
        .with_routed_k_mix(
            &[(3, 128), (2, 192), (4, 64)],
            Citation::Assumed {
                reason: "test mix".to_string(),
            },
        )
        .expect("adds up to 384");
    close(mean_routed_k(&mixed), 8.0 / 3.0);
    // gate|up(K) = 2·(5120·1152·K/8) + 2·(2·5120 + 2·1152) = 1,474,560·K + 25,088, linear in K, so the mean is
    // gate|up at the mean K.
    let mean = mixed.kl1_bytes().expert;
    close(mean.gate_up, 1_474_560.0 * 8.0 / 3.0 + 25_088.0); // 3,957,248
    close(mean.down, 737_280.0 * 8.0 / 3.0 + 12_544.0); // 1,978,624
    close(mean.total(), 3_957_248.0 + 1_978_624.0);
    assert_eq!(
        mixed
            .quant()
            .routed_experts
            .entries()
            .iter()
            .map(|&(b, n)| (b.get(), n))
            .collect::<Vec<_>>(),
        vec![(2, 192), (3, 128), (4, 64)],
        "entries come back in ascending K"
    );
    assert!(
        mixed
            .provenance("quant.routed_experts")
            .is_some_and(Citation::is_assumed)
    );
    let silent = Citation::Assumed {
        reason: " ".to_string(),
    };
    let e = spec
        .with_routed_k_mix(&[(2, 384)], silent)
        .expect_err("no reason");
    assert_eq!(e.field(), Some("quant.routed_experts"));
    let reason = Citation::Assumed {
        reason: "test".to_string(),
    };
    let short = spec.with_routed_k_mix(&[(2, 383)], reason);
    assert_eq!(
        short.expect_err("383 is not 384").field(),
        Some("quant.routed_experts")
    );
}

#[test]
fn shared_expert_and_its_runs() {
    // 1 shared expert × 2304 wide, 1152 per rank, at K = 4:
    // gate|up 2·(5120·1152·4/8 + 2·5120 + 2·1152), down 1152·5120·4/8 + 2·1152 + 2·5120.
    let gate_up = 2 * (2_949_120 + 10_240 + 2_304);
    let down = 2_949_120 + 2_304 + 10_240;
    let shared = |spec: Spec| spec.kl1_bytes().shared_expert;
    assert_eq!(shared(v41()), (gate_up + down) as f64);
    assert_eq!(shared(v41()), 8_884_992.0);
    // V4-Flash at K = 6: 3·4096·1024·6/8 + 2·(3·4096 + 3·1024)
    assert_eq!(shared(v4()), (9_437_184 + 30_720) as f64);

    assert_eq!(shared_runs(0), 0);
    assert_eq!(shared_runs(1), 1);
    assert_eq!(shared_runs(8), 1);
    assert_eq!(shared_runs(9), 2);
    assert_eq!(shared_runs(16), 2);
    assert_eq!(shared_runs(17), 3);
}

#[test]
fn distinct_experts_under_uniform_routing() {
    let spec = v41();
    close(expected_distinct_experts(&spec, 0), 0.0);
    // One row picks exactly top_k = 6 distinct experts.
    close(expected_distinct_experts(&spec, 1), 6.0);
    // Two rows: 384·(1 − (378/384)²) = 384 − 378²/384 = 384 − 372.09375.
    close(expected_distinct_experts(&spec, 2), 11.906_25);
    // Many rows approach every expert: the same formula with powi, an independent computation.
    close(
        expected_distinct_experts(&spec, 1000),
        384.0 * (1.0 - (378.0_f64 / 384.0).powi(1000)),
    );
    // Tensor split: every rank reads a slice of each distinct expert.
    close(expected_distinct_experts_per_rank(&spec, 2), 11.906_25);
}

#[test]
fn moe_layer_bytes_and_its_inverse() {
    let bytes = v41().kl1_bytes();
    // 10 distinct experts of 4,461,312 B, 9 live rows = 2 runs of the 8,884,992 B shared expert.
    close(
        bytes.moe_layer_weight_bytes(10.0, 9),
        10.0 * 4_461_312.0 + 2.0 * 8_884_992.0,
    );
    // 273 GB/s for 100 µs = 27,300,000 B; less one shared run, over the mean expert.
    close(
        bytes.experts_readable(273.0, 100.0, 1).expect("valid"),
        (27_300_000.0 - 8_884_992.0) / 4_461_312.0,
    );
    // Too short a span for the shared expert alone: negative, not clamped.
    assert!(bytes.experts_readable(273.0, 1.0, 8).expect("valid") < 0.0);
    assert!(bytes.experts_readable(f64::NAN, 1.0, 8).is_err());
    assert!(bytes.experts_readable(273.0, -1.0, 8).is_err());
}

#[test]
fn decode_dense_launches_v41() {
    let [qa_kv, qb, oa, ob] = v41().kl1_bytes().dense;
    let names = [qa_kv.name, qb.name, oa.name, ob.name];
    assert_eq!(names, ["wq_a+wkv", "wq_b", "wo_a", "wo_b"]);
    assert!([&qa_kv, &qb, &oa, &ob].iter().all(|l| l.bits == k(4)));
    // wq_a 5120×1280 and wkv 5120×512, replicated.
    assert_eq!(
        qa_kv.bytes(),
        ((5120 * 1280 * 4 / 8 + 2 * (5120 + 1280)) + (5120 * 512 * 4 / 8 + 2 * (5120 + 512)))
            as f64
    );
    assert_eq!(qa_kv.bytes(), (3_289_600 + 1_321_984) as f64);
    // wq_b 1280 × 64·512/2 = 1280 × 16384.
    assert_eq!(
        qb.bytes(),
        (1280 * 16384 * 4 / 8 + 2 * (1280 + 16384)) as f64
    );
    // wo_a: 8/2 = 4 slices of (64·512/8) × 1024 = 4096 × 1024.
    assert_eq!(oa.groups[0].rank_per_layer, 4);
    assert_eq!(
        oa.bytes(),
        (4 * (4096 * 1024 * 4 / 8 + 2 * (4096 + 1024))) as f64
    );
    assert_eq!(oa.bytes(), 8_429_568.0);
    // wo_b: (8/2)·1024 × 5120.
    assert_eq!(ob.bytes(), (4096 * 5120 * 4 / 8 + 2 * (4096 + 5120)) as f64);
    assert_eq!(ob.bytes(), 10_504_192.0);
}

#[test]
fn decode_dense_shapes_v4_flash() {
    // docs/exl3-and-deepseek-v4.md §4.1: wq_a 4096×1024, wkv 4096×512, wq_b 1024×16384, wo_a 4×(4096×1024), wo_b 4096×4096.
    let launches = v4().kl1_bytes().dense;
    // Each matrix the launch reads on one rank: a group's rank_per_layer tensors of rank_in × rank_out.
    let dims = |i: usize| -> Vec<(u64, u64)> {
        launches[i]
            .groups
            .iter()
            .flat_map(|g| (0..g.rank_per_layer).map(|_| (g.rank_in, g.rank_out)))
            .collect()
    };
    assert_eq!(dims(0), vec![(4096, 1024), (4096, 512)]);
    assert_eq!(dims(1), vec![(1024, 16384)]);
    assert_eq!(dims(2), vec![(4096, 1024); 4]);
    assert_eq!(dims(3), vec![(4096, 4096)]);
    assert!(launches.iter().all(|l| l.bits == k(6)));
}

#[test]
fn lm_head_router_and_mhc() {
    let spec = v41();
    let bytes = spec.kl1_bytes();
    // 129280 / 2 = 64640 vocabulary columns per rank, at K = 6.
    let table = spec.model_shape();
    let head = table
        .groups
        .iter()
        .find(|g| g.name == "head")
        .expect("the table has the LM head");
    assert_eq!(
        (head.rank_in, head.rank_out, bytes.lm_head_bits),
        (5120, 64640, k(6))
    );
    assert_eq!(
        bytes.lm_head,
        (5120 * 64640 * 6 / 8 + 2 * (5120 + 64640)) as f64
    );
    assert_eq!(bytes.lm_head, (248_217_600 + 139_520) as f64);
    // docs/exl3-and-deepseek-v4.md §4.1: V4-Flash LM head per rank at K = 6 = 198,574,080 B (+ 2·(4096 + 64640)).
    assert_eq!(
        v4().kl1_bytes().lm_head,
        (198_574_080 + 2 * (4096 + 64640)) as f64
    );

    // Router: 384 experts × 5120 fp16 weights + 384 fp16 biases.
    assert_eq!(bytes.router, (384 * 5120 * 2 + 384 * 2) as f64);
    // mHC fn: (2 + 4)·4 = 24 rows × 4·5120 fp32.
    assert_eq!(bytes.mhc_prenorm, (24 * 4 * 5120 * 4) as f64);
    assert_eq!(bytes.mhc_prenorm, 1_966_080.0);
    // docs/exl3-and-deepseek-v4.md §4.2: 1.5 MiB at k = 4·4096 = 16384.
    assert_eq!(v4().kl1_bytes().mhc_prenorm, (3 * 1024 * 1024 / 2) as f64);
}

#[test]
fn reconstruct_from_grid() {
    // Plain kernel: k = y·16, n_slice = x·128.
    let plain = reconstruct_shape(ReconstructKernel::Plain, [8, 320, 1]).expect("valid");
    assert_eq!((plain.k(), plain.n()), (5120, 1024));
    let b = reconstruct_bytes(ReconstructKernel::Plain, [8, 320, 1], k(4)).expect("valid");
    assert_eq!(b.read, 5120 * 1024 * 4 / 8); // trellis only
    assert_eq!(b.written, 2 * 5120 * 1024); // fp16 weights
    assert_eq!(b.total(), 2_621_440 + 10_485_760);
    // Fused Hadamard kernel: k = y·128, and it also reads both sign vectors.
    let had = reconstruct_shape(ReconstructKernel::Hadamard, [8, 40, 1]).expect("valid");
    assert_eq!((had.k(), had.n()), (5120, 1024));
    let b = reconstruct_bytes(ReconstructKernel::Hadamard, [8, 40, 1], k(4)).expect("valid");
    assert_eq!(b.read, 2_621_440 + 2 * 5120 + 2 * 1024);
    // A full 32768-column slice of a 5120-row tensor: grid (256, 320).
    let wide = reconstruct_shape(ReconstructKernel::Plain, [256, 320, 1]).expect("valid");
    assert_eq!(wide.n(), 32_768);

    assert!(reconstruct_shape(ReconstructKernel::Plain, [8, 320, 2]).is_err());
    assert!(reconstruct_shape(ReconstructKernel::Plain, [0, 320, 1]).is_err());
    assert!(reconstruct_shape(ReconstructKernel::Plain, [8, 0, 1]).is_err());
    // k = 16·(2^20 + 1) exceeds MAX_DIM.
    assert!(reconstruct_shape(ReconstructKernel::Plain, [1, (1 << 20) + 1, 1]).is_err());
    assert!(reconstruct_shape(ReconstructKernel::Plain, [u32::MAX, u32::MAX, 1]).is_err());
}

#[test]
fn gigabytes_per_second() {
    // 1 MB in 10 µs = 10^6 / (10 · 10^3) = 100 GB/s.
    close(gbps(1e6, 10.0).expect("valid"), 100.0);
    // 273 GB/s for 1 ms moves 273 MB.
    close(gbps(273e6, 1000.0).expect("valid"), 273.0);
    close(gbps(0.0, 5.0).expect("valid"), 0.0);
    assert!(gbps(1e6, 0.0).is_err());
    assert!(gbps(1e6, -1.0).is_err());
    assert!(gbps(-1.0, 1.0).is_err());
    assert!(gbps(f64::NAN, 1.0).is_err());
    assert!(gbps(1.0, f64::INFINITY).is_err());
}

#[test]
fn the_default_spec_runs_on_the_tables_gb10_and_can_be_moved() {
    let table = GpuTable::builtin();
    let gb10 = table.get("GB10").expect("listed");
    assert_eq!(v41().gpu(), gb10);
    let h200 = v41().with_gpu(
        table.get("H200").expect("listed").clone(),
        Citation::Assumed {
            reason: "what-if".to_string(),
        },
    );
    assert_eq!(h200.gpu().spec_bandwidth_gbps, 4800.0);
    assert!(
        h200.provenance("hardware.gpu")
            .is_some_and(Citation::is_assumed)
    );
    assert_eq!(expert_bytes(&h200, k(2)), expert_bytes(&v41(), k(2)));
}
