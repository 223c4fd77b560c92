//! A decode step on the timeline: per MoE layer the mHC sites, the four m-row dense launches around the
//! attention kernels, the all-reduce, routing, the sparse-MoE CUDA graph and the L2 prefetch; then the head.

use kl1_shapes::expected_distinct_experts_per_rank;

use super::*;

impl Builder<'_, '_> {
    pub(super) fn decode_step(&mut self, s: &StepPlan, c: &CapturePlan) {
        let m = self.m;
        let rates = self.plan.rates;
        let gr = graph_rows(s.rows);
        let slots = gr * (m.top_k + 1);
        // Attention time grows with context and requests; it reads KV cache, which no estimate here counts.
        let attn_ns = 8_000.0 + c.context as f64 * 0.6 * s.requests as f64;
        for _layer in 0..m.layers {
            let layer_start = self.t;
            self.l2pf(layer_start + 400);
            self.mhc_site();
            for (j, (name, bits, bytes)) in m.dense.iter().enumerate() {
                if j == 2 {
                    let d = self.jittered(attn_ns);
                    self.push(
                        "void flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true>(Flash_fwd_mla_params)".to_string(),
                        Role::Attn,
                        d,
                        [s.requests as u32, 32, 1],
                        Via::Runtime,
                    );
                    let d = self.jittered(2_500.0);
                    self.push(
                        "void flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, float, 512, 64>(Flash_fwd_mla_params)".to_string(),
                        Role::Attn,
                        d,
                        [s.requests as u32, 32, 1],
                        Via::Runtime,
                    );
                }
                let _ = name;
                let d = self.rate_dur(*bytes, rates.dense);
                self.push(
                    format!("void exl3_mrow_kernel<{}, {gr}, 1>{ARGS_MROW}", bits.get()),
                    Role::Dense(j),
                    d,
                    [96, 1, 1],
                    Via::Runtime,
                );
            }
            self.nccl("AllReduce");
            self.mhc_site();
            self.routing();
            // The sparse-MoE graph: the layer's span is its weight bytes at the rate; rotation 2 %, gate|up
            // 66 %, down the rest, starting 1.5 µs before gate|up ends (PDL).
            *self.graph += 1;
            let g = Via::Graph(*self.graph);
            let experts = expected_distinct_experts_per_rank(m.spec, s.rows);
            let span = self.rate_dur(m.bytes.moe_layer_weight_bytes(experts, s.rows), rates.smoe);
            // Rotation 2 % of the span, gate|up 66 %, a gap of at most 300 ns between them, and down the rest,
            // starting early by a quarter of gate|up (at most 1.5 µs) as PDL allows. The span is ≥ 1 µs
            // (`jittered`), so down always ends after gate|up: 0.32·span − gap > 0.
            let rot = ((span as f64 * 0.02) as i64).max(1);
            let gap = ((span as f64 * 0.01) as i64).min(300);
            let gu = ((span as f64 * 0.66) as i64).max(1);
            let early = (gu / 4).min(1_500);
            self.t += self.rng.range(250, 450);
            let rot_start = self.t;
            let gu_start = rot_start + rot + gap;
            let down_start = gu_start + gu - early;
            let down_end = rot_start + span;
            let units = m.units;
            let graph_kernel =
                |name: String, role: Role, start: i64, end: i64, grid: [u32; 3]| Kern {
                    name,
                    role,
                    stream: MAIN_STREAM,
                    start,
                    dur: end - start,
                    grid,
                    block: [256, 1, 1],
                    via: g,
                };
            self.kernels.push(graph_kernel(
                format!("void exl3_smoe_rot_kernel<{}>(__half const*, __half const*, __half*, int const*, int)", m.spec.model().hidden),
                Role::Rot,
                rot_start,
                rot_start + rot,
                [gr as u32, 1, 1],
            ));
            self.kernels.push(graph_kernel(
                format!("void exl3_smoe_gu_kernel<{gr}, 1>(__half const*, unsigned short const* const*, __half const* const*, __half const* const*, int const*, __half*, int)"),
                Role::Gu,
                gu_start,
                gu_start + gu,
                [(slots * units) as u32, 1, 1],
            ));
            self.kernels.push(graph_kernel(
                format!("void exl3_smoe_down_kernel<{gr}, 1>(__half const*, unsigned short const* const*, __half const* const*, __half const* const*, int const*, float const*, float*, int)"),
                Role::Down,
                down_start,
                down_end,
                [(slots * 40) as u32, 1, 1],
            ));
            self.t = down_end;
            self.nccl("AllReduce");
            self.residual_add();
        }
        // The head: its mHC site, the LM head, the logits all-gather (vocabulary split) and sampling.
        let d = self.rate_dur(m.bytes.mhc_prenorm, rates.mhc);
        self.push(
            format!("void hc_mix_partials_kernel<{}>(float const*, float const*, float*, float*, int, int)", m.spec.model().mhc_expansion),
            Role::Prenorm,
            d,
            [48, 1, 1],
            Via::Runtime,
        );
        let d = self.rate_dur(m.bytes.lm_head, rates.lm_head);
        let k = m.bytes.lm_head_bits.get();
        if c.lm_head_gemm {
            self.push(
                format!("void exl3_gemm_kernel<{k}, false, 1, 16, 32, 128, 4, 3>(__half const*, unsigned short const*, void*, int, int, int, int*, __half const*, __half*, __half const*)"),
                Role::Head { gemm: true },
                d,
                [48, 1, 1],
                Via::Runtime,
            );
        } else {
            self.push(
                format!("void exl3_mrow_head_kernel<{k}, {gr}, 1>(__half const*, unsigned short const*, __half const*, __half const*, __half*, int, int)"),
                Role::Head { gemm: false },
                d,
                [505, 1, 1],
                Via::Runtime,
            );
        }
        self.nccl("AllGather");
        let d = self.jittered(6_000.0);
        self.push(
            "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)".to_string(),
            Role::Torch,
            d,
            [s.rows as u32, 1, 1],
            Via::Runtime,
        );
    }
}
