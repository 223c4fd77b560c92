//! A prefill step on the timeline: per MoE layer reconstruct + GEMM for each dense tensor (exl3_gemm on
//! the suffix layers), flash attention, the tensor-fold expert kernels and the shared expert.

use kl1_shapes::{ReconstructKernel, Shape, expected_distinct_experts_per_rank, reconstruct_bytes};

use super::*;

impl Builder<'_, '_> {
    /// A dense linear at prefill: reconstruct (plain, or fused Hadamard) then a cuBLAS GEMM over `rows`.
    fn reconstructed(&mut self, shape: Shape, bits: Bits, had: bool, rows: u64) {
        // The reconstruct grids cover 128 columns (and, fused, 128 rows) a block; a slice they cannot tile
        // goes through exl3_gemm instead (only small test specs have one).
        if !shape.n().is_multiple_of(128) || (had && !shape.k().is_multiple_of(128)) {
            return self.gemm(shape, bits, rows);
        }
        let (kind, grid, suffix, name) = if had {
            (
                ReconstructKernel::Hadamard,
                [(shape.n() / 128) as u32, (shape.k() / 128) as u32, 1],
                "_had",
                format!(
                    "void reconstruct_had_kernel<{}, 1>(__half*, unsigned short const*, __half const*, __half const*, int, int)",
                    bits.get()
                ),
            )
        } else {
            (
                ReconstructKernel::Plain,
                [(shape.n() / 128) as u32, (shape.k() / 16) as u32, 1],
                "",
                format!(
                    "void reconstruct_kernel<{}, 1>(__half*, unsigned short const*, int, int)",
                    bits.get()
                ),
            )
        };
        // The grid is a valid reconstruct grid by construction (dimensions are multiples of 128).
        let bytes = reconstruct_bytes(kind, grid, bits).map_or(0.0, |b| b.total() as f64);
        let d = self.rate_dur(bytes, self.plan.rates.reconstruct);
        self.push(
            name,
            Role::Reconstruct {
                key: format!("{}x{}{suffix}", shape.k(), shape.n()),
                bytes,
            },
            d,
            grid,
            Via::Runtime,
        );
        // 60 TFLOP/s of fp16 GEMM: 2·m·k·n / 60e3 ns.
        let flops = 2.0 * rows as f64 * shape.k() as f64 * shape.n() as f64;
        let d = self.jittered(flops / 60e3);
        self.push(
            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas".to_string(),
            Role::CublasGemm,
            d,
            [(shape.n() / 128) as u32, rows.div_ceil(128) as u32, 1],
            Via::Runtime,
        );
    }

    /// A dense linear on the suffix layers (rows under exllamav3's reconstruct threshold): exl3_gemm directly.
    fn gemm(&mut self, shape: Shape, bits: Bits, rows: u64) {
        let bytes =
            kl1_shapes::Exl3Linear::new(shape, bits).bytes() as f64 * rows.div_ceil(16) as f64;
        let d = self.rate_dur(bytes, self.plan.rates.dense);
        self.push(
            format!("void exl3_gemm_kernel<{}, false, 1, 16, 32, 128, 4, 3>(__half const*, unsigned short const*, void*, int, int, int, int*, __half const*, __half*, __half const*)", bits.get()),
            Role::Gemm,
            d,
            [48, 1, 1],
            Via::Runtime,
        );
    }

    pub(super) fn prefill_step(&mut self, s: &StepPlan, c: &CapturePlan) {
        let m = self.m;
        let rates = self.plan.rates;
        let sh = *m.spec.rank_shapes();
        let q = m.spec.quant().clone();
        for layer in 0..m.layers {
            let full = layer < m.full_layers;
            let rows = if full {
                s.rows
            } else {
                m.suffix_rows.min(s.rows)
            };
            // exllamav3 reconstructs above 144 rows (AUTO_RECONSTRUCT_THRESHOLD, domain.md §2.6).
            let dense = rows > 144;
            self.mhc_site();
            let attn_linears: [(Shape, Bits); 3] =
                [(sh.wq_a, q.wq_a), (sh.wkv, q.wkv), (sh.wq_b, q.wq_b)];
            for (shape, bits) in attn_linears {
                if dense {
                    self.reconstructed(shape, bits, false, rows);
                } else {
                    self.gemm(shape, bits, rows);
                }
            }
            let attn_ns = 40_000.0 + rows as f64 * (c.context as f64 / 8_000.0 + 30.0);
            let d = self.jittered(attn_ns);
            self.push(
                "void flash_fwd_kernel<Flash_fwd_kernel_traits<512, 64, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, false, false>(Flash_fwd_params)".to_string(),
                Role::Attn,
                d,
                [rows.div_ceil(64) as u32, 32, 1],
                Via::Runtime,
            );
            for _ in 0..sh.wo_a_slices {
                if dense {
                    self.reconstructed(sh.wo_a, q.wo_a, false, rows);
                } else {
                    self.gemm(sh.wo_a, q.wo_a, rows);
                }
            }
            if dense {
                self.reconstructed(sh.wo_b, q.wo_b, false, rows);
            } else {
                self.gemm(sh.wo_b, q.wo_b, rows);
            }
            self.nccl("AllReduce");
            self.mhc_site();
            self.routing();
            let experts = expected_distinct_experts_per_rank(m.spec, rows);
            let d = self.jittered(4_000.0 + rows as f64 * 2.0);
            self.push(
                format!(
                    "void tf_moe_gather_kernel<{}>(__half const*, int const*, __half*, int)",
                    m.spec.model().hidden
                ),
                Role::TfAux,
                d,
                [rows as u32, 1, 1],
                Via::Runtime,
            );
            let d = self.rate_dur(experts * m.bytes.expert.gate_up, rates.tf_gu);
            self.push(
                "void tf_moe_gate_up_kernel<128, 1>(__half const*, unsigned short const* const*, int const*, int const*, __half*, int)".to_string(),
                Role::TfGu { full },
                d,
                [(experts.ceil() as u32) * m.units as u32, 1, 1],
                Via::Runtime,
            );
            let d = self.rate_dur(experts * m.bytes.expert.down, rates.tf_down);
            self.push(
                "void tf_moe_down_kernel<128, 1>(__half const*, unsigned short const* const*, int const*, int const*, float*, int)".to_string(),
                Role::TfDown { full },
                d,
                [(experts.ceil() as u32) * 40, 1, 1],
                Via::Runtime,
            );
            let d = self.jittered(4_000.0 + rows as f64 * 2.0);
            self.push(
                format!("void tf_moe_scatter_kernel<{}>(float const*, int const*, float const*, __half*, int)", m.spec.model().hidden),
                Role::TfAux,
                d,
                [rows as u32, 1, 1],
                Via::Runtime,
            );
            // The shared expert: gate, up and down at its K.
            if let (Some(gu), Some(dn)) = (sh.shared_gate_up, sh.shared_down) {
                for shape in [gu, gu, dn] {
                    if dense {
                        self.reconstructed(shape, q.shared_expert, true, rows);
                    } else {
                        self.gemm(shape, q.shared_expert, rows);
                    }
                }
            }
            self.nccl("AllReduce");
            self.residual_add();
        }
        // The last position's logits only.
        let d = self.rate_dur(m.bytes.lm_head, rates.lm_head);
        self.push(
            format!("void exl3_gemm_kernel<{}, false, 1, 16, 32, 128, 4, 3>(__half const*, unsigned short const*, void*, int, int, int, int*, __half const*, __half*, __half const*)", m.bytes.lm_head_bits.get()),
            Role::Gemm,
            d,
            [48, 1, 1],
            Via::Runtime,
        );
    }
}
