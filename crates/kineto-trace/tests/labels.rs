//! Labels of real kernels: the top kernel names of every shared trace (the names that together hold
//! at least 90 % of its kernel time, listed by `testdata/reference/top_kernels.py`, independent of the Rust
//! parser) against the family and bucket a person assigned to each from what the name says
//! (`testdata/reference/top_kernel_labels.csv`). And names from the kernel libraries' own sources
//! that do not appear in the shared traces, so that the rules are checked on names they were not
//! tuned on.
//!
//! The traces are the shared corpus's (`../shared/traces`): without it the tests that read them are
//! listed as ignored (and fail when KL1_REQUIRE_CORPUS is set).

use kineto_trace::family::{Label, MatchKind, Rules};
use kineto_trace::{Options, parse_file};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

mod common;
use common::workspace;

/// Reads a CSV with quoted fields (names hold commas) into rows of strings.
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in text.lines().skip(1).filter(|l| !l.is_empty()) {
        let mut row = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                ',' if !quoted => row.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        row.push(cur);
        rows.push(row);
    }
    rows
}

fn reference_file(name: &str) -> String {
    let p = workspace().join("testdata/reference").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// (family, bucket) by name, as a person assigned them.
fn hand_labels() -> HashMap<String, (String, String)> {
    csv_rows(&reference_file("top_kernel_labels.csv"))
        .into_iter()
        .map(|r| (r[0].clone(), (r[1].clone(), r[2].clone())))
        .collect()
}

/// Top names by trace path: (name, count, sum_ns, cumulative share in per mille).
fn top_names() -> BTreeMap<String, Vec<(String, u64, i64, u32)>> {
    let mut by: BTreeMap<String, Vec<(String, u64, i64, u32)>> = BTreeMap::new();
    for r in csv_rows(&reference_file("top_kernels.csv")) {
        let num = |i: usize| -> i64 {
            r[i].parse()
                .unwrap_or_else(|e| panic!("top_kernels.csv: {:?}: {e}", r[i]))
        };
        by.entry(r[0].clone()).or_default().push((
            r[2].clone(),
            num(3) as u64,
            num(4),
            num(5) as u32,
        ));
    }
    by
}

fn label_of(rules: &Rules, name: &str) -> (String, String) {
    match rules.family_of(name).family() {
        Some(f) => (rules.family(f).name.clone(), rules.family(f).bucket.clone()),
        None => ("unmatched".into(), "unmatched".into()),
    }
}

/// Checks the traces of the reference under `root`; returns how many were checked.
fn check(root: &Path) -> usize {
    let rules = Rules::builtin();
    let hand = hand_labels();
    let mut wrong = Vec::new();
    let mut n = 0;
    for (rel, names) in top_names() {
        let path = root.join(&rel);
        // The reference lists names until >= 90 % of the trace's kernel time.
        assert!(
            names.last().is_some_and(|l| l.3 >= 900),
            "{rel}: the top names hold less than 90 %"
        );
        // The Rust parser sees the same kernels by name, count and time.
        let parsed = parse_file(&path, &Options::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let t = &parsed.trace;
        let mut seen: HashMap<&str, (u64, i64)> = HashMap::new();
        for k in &t.kernels {
            let e = seen.entry(t.name(k.name)).or_default();
            e.0 += 1;
            e.1 += k.dur_ns;
        }
        for (name, count, sum_ns, _) in &names {
            assert_eq!(
                seen.get(name.as_str()),
                Some(&(*count, *sum_ns)),
                "{rel}: {name}"
            );
            let want = hand
                .get(name)
                .unwrap_or_else(|| panic!("no hand label for {name}"));
            let got = label_of(&rules, name);
            if &got != want {
                wrong.push(format!("{rel}: {name}: got {got:?}, by hand {want:?}"));
            }
        }
        n += 1;
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    n
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn shared_corpus_top_kernels_have_the_hand_labels() {
    let root = common::corpus::required();
    let n = check(&root);
    assert_eq!(n, top_names().len());
}

/// Every hand label names a family of the built-in table with that family's bucket, and no GEMM or
/// collective sits outside the gemm and comm buckets.
#[test]
fn hand_labels_are_families_of_the_table() {
    let rules = Rules::builtin();
    for (name, (family, bucket)) in hand_labels() {
        if family == "unmatched" {
            assert_eq!(bucket, "unmatched");
            continue;
        }
        let f = rules
            .find_family(&family)
            .unwrap_or_else(|| panic!("{family}"));
        assert_eq!(&rules.family(f).bucket, &bucket, "{name}");
        if family.starts_with("gemm") || family == "moe_gemm" {
            assert_eq!(bucket, "gemm", "{name}");
        }
        if ["nccl", "collective", "expert_parallel"].contains(&family.as_str()) {
            assert_eq!(bucket, "comm", "{name}");
        }
    }
}

/// Real kernel names of today's libraries, taken from their public sources and profiles, that are
/// not in the shared traces: (name, family, bucket).
const LIBRARY_NAMES: &[(&str, &str, &str)] = &[
    // cuBLASLt on Hopper/Blackwell, with epilogue words in the name.
    (
        "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_bias_relu_TNT",
        "gemm_cublas",
        "gemm",
    ),
    (
        "nvjet_hsh_64x8_64x16_4x1_v_bz_splitK_TNT",
        "gemm_cublas",
        "gemm",
    ),
    (
        "sm100_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cluster2x1x1_execute_kernel__5x_cublas",
        "gemm_cublas",
        "gemm",
    ),
    // hipBLASLt / rocBLAS (MI300).
    (
        "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASLT_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_DTL0_DTVA0_DTVB0_DVO0_ETSP_EPS1_ELFLR0_EMLLn1_FL0_GRPM1_GRVW8_GSU1_GSUASB_GLS0_ISA942_IU1_K1_KLA_LBSPPA128_LBSPPB128_LPA0_LPB0_LDL1_LRVW16_LWPMn1_LDW0_FMA_MIAV0_MDA2_MO40_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR1_SIA3_SS1_SU32_SUM0_SUS256_SCIUI1_SPO0_SRVW0_SSO0_SVW4_SNLL0_TT4_64_TLDS1_USFGROn1_VAW2_VSn1_VW4_WSGRA1_WSGRB1_WS64_WG32_8_1_WGM8",
        "gemm_hipblaslt",
        "gemm",
    ),
    // TensorRT-LLM trtllm-gen FP4/FP8 GEMMs (MoE, with SwiGLU epilogue words).
    (
        "bmm_E2m1_E2m1E2m1_Fp32_t128x8x256u2_s4_et128x8_m128x8x64_cga1x1x1_16dp256b_rM_TN_transOut_schedS_swiGlu_bN_sm100f",
        "gemm_trtllm",
        "gemm",
    ),
    (
        "bmm_E4m3_E4m3E4m3_Fp32_t128x16x128u2_s4_et128x16_m128x16x32_cga1x1x1_16dp256b_TN_transOut_schedS_sm100a",
        "gemm_trtllm",
        "gemm",
    ),
    // Triton kernels: matmul_ogs with and without fused activation; fused MoE GEMM.
    (
        "_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x256x1_swiglu",
        "gemm_triton",
        "gemm",
    ),
    ("fused_moe_kernel", "moe_gemm", "gemm"),
    // CUTLASS 3 grouped FP8 block-scaled GEMM (sgl-kernel), CK and aiter.
    (
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90ArrayTmaGmmaWarpSpecializedBlockwiseScaling<4>, cutlass::float_e4m3_t> > >(cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> > >::Params)",
        "gemm_cutlass",
        "gemm",
    ),
    (
        "_ZN2ck48kernel_gemm_xdl_cshuffle_v3_multi_d_b_preshuffleINS_44GridwiseGemmMultiD_xdl_cshuffle_v3_b_preshuffleEEEvNT_8ArgumentE",
        "gemm_ck",
        "gemm",
    ),
    (
        "_ZN5aiter50fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256E",
        "moe_gemm",
        "gemm",
    ),
    // Attention: FA2/FA3, FlashInfer, FlashMLA, vLLM paged, TensorRT-LLM XQA.
    (
        "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
        "flash_attention",
        "attention",
    ),
    (
        "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 2u, 4u, 4u, 4u, 1u, 4u, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<false, false, false, false> > >(flashinfer::BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)",
        "flashinfer",
        "attention",
    ),
    (
        "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true>(Flash_fwd_mla_params)",
        "flash_mla",
        "attention",
    ),
    (
        "void vllm::paged_attention_v1_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false>(__nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16 const*, int, float, int const*, int const*, int, float const*, int, int, int, float const*, float const*)",
        "paged_attention",
        "attention",
    ),
    (
        "void kernel_mha<false>(unsigned int, float, CUtensorMap, unsigned int*)",
        "attention",
        "attention",
    ),
    // Expert-parallel all-to-all in DeepEP and in forks with their own namespace.
    (
        "void deep_ep::internode::dispatch<false, 8, 4, 2, 8, 32>(int4*, float*, long*, float*)",
        "expert_parallel",
        "comm",
    ),
    (
        "void uccl::internode_ll::combine<false, 7168, 9>(void*, void*, int*)",
        "expert_parallel",
        "comm",
    ),
    (
        "void my_ep_fork::intranode::cached_notify_dispatch<8>(int const*, int, void**, int**, int)",
        "expert_parallel",
        "comm",
    ),
    // NCCL and RCCL.
    (
        "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "nccl",
        "comm",
    ),
    (
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
        "collective",
        "comm",
    ),
    // FP8 quantisation, fused norms, rotary, sampling, activation.
    (
        "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, float*, c10::BFloat16 const*, float const*, int)",
        "quantize",
        "quantize",
    ),
    (
        "void sgl_per_token_quant_fp8<__nv_bfloat16>(__nv_bfloat16 const*, __nv_fp8_e4m3*, float*, int, int)",
        "quantize",
        "quantize",
    ),
    (
        "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
        "norm",
        "norm",
    ),
    (
        "void flashinfer::norm::GemmaRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)",
        "norm",
        "norm",
    ),
    (
        "void flashinfer::sampling::TopKSamplingFromProbKernel<1024u, (cub::CUB_200200_890_NS::BlockScanAlgorithm)0, (cub::CUB_200200_890_NS::BlockReduceAlgorithm)2, 4u, true, float, int>(float*, int*, int*, float*, int*, unsigned int, unsigned int, unsigned long, unsigned long)",
        "sampling",
        "sampling",
    ),
    (
        "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::gelu_tanh_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
        "activation",
        "elementwise",
    ),
    (
        "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)",
        "moe",
        "moe",
    ),
];

/// Names of the same libraries' schemes in training and diffusion traces (normalisation backward, attention
/// libraries whose kernels carry no attention word, linear attention), other names than the rule table's
/// examples: the rules must cover the scheme, not the examples. Each from the library's source (cited in
/// `rules/default.toml` and `docs/kernel-families.md`): (name, family, bucket).
const TRAINING_AND_DIFFUSION_NAMES: &[(&str, &str, &str)] = &[
    // PyTorch layer norm backward for large rows (apex's kernels, also on ROCm), group norm forward and
    // backward, batch norm and weight norm backward.
    (
        "void at::native::(anonymous namespace)::cuComputeGradGammaBeta<c10::Half, float>(float const*, float const*, long, long, long, c10::Half*, c10::Half*)",
        "norm",
        "norm",
    ),
    (
        "void at::native::(anonymous namespace)::ComputeBackwardFusedParamsCUDAKernel<float>(long, long, long, float const*, float const*, float const*, float const*, float const*, float*, float*)",
        "norm",
        "norm",
    ),
    (
        "void at::native::(anonymous namespace)::GammaBeta1dBackwardCUDAKernel2<c10::BFloat16>(long, long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)",
        "norm",
        "norm",
    ),
    (
        "void at::native::batch_norm_backward_reduce_channels_last_kernel<4, float, float, float, int>(float const*, float const*, float const*, float const*, float*, float*, float*, float*, volatile float*, int*, int, int, int)",
        "norm",
        "norm",
    ),
    (
        "void at::native::(anonymous namespace)::weight_norm_fwd_first_dim_kernel<float, float>(float*, float*, float const*, float const*, int)",
        "norm",
        "norm",
    ),
    // apex (Megatron's fused layer norm), Liger, Transformer Engine, composable_kernel.
    (
        "void cuComputePartGradGammaBeta<float, float, float, true>(float const*, float const*, int, int, float const*, float const*, float, float*, float*)",
        "norm",
        "norm",
    ),
    ("_group_norm_backward_kernel", "norm", "norm"),
    ("_fused_add_rms_norm_backward_kernel", "norm", "norm"),
    (
        "void transformer_engine::normalization::ln_bwd_general_kernel<transformer_engine::normalization::Kernel_traits<float, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 4096u, 1u, 1u, 4u, 16u> >(transformer_engine::normalization::BwdParams)",
        "norm",
        "norm",
    ),
    (
        "_ZN2ck29kernel_normalization_bwd_dataINS_33GridwiseNormalizationBwdData_mk_to_mkIffffffNS_16TensorDescriptorEEEEEvT_",
        "norm",
        "norm",
    ),
    // ThunderKittens attention (FastVideo sliding tile attention), AOTriton (PyTorch SDPA on ROCm), the
    // Triton fused-attention convention (vLLM, SGLang), native sparse attention, Transformer Engine's
    // context-parallel corrections, cuDNN SDPA backward on Blackwell.
    (
        "void fwd_attend_ker<128, true, false, false, 1, 16, 16, 1, 16, 16>(fwd_globals<128>)",
        "attention",
        "attention",
    ),
    ("bwd_kernel_fuse", "attention", "attention"),
    ("bwd_preprocess_varlen", "attention", "attention"),
    ("_fwd_kernel_alibi", "attention", "attention"),
    ("_fwd_kernel_stage1", "paged_attention", "attention"),
    (
        "parallel_nsa_compression_fwd_kernel",
        "attention",
        "attention",
    ),
    (
        "void transformer_engine::context_parallel::thd_grad_correction_kernel<__nv_bfloat16, transformer_engine::context_parallel::AddFunctor<__nv_bfloat16>, 0, 16>(__nv_bfloat16*, __nv_bfloat16*, int*, int, int, int, int)",
        "attention",
        "attention",
    ),
    (
        "cudnn_generated_fort_native_sdpa_sm100_flash_bprop_f16_knob_7_128x128x64_4x1x1_cga1x1x1_kernel0_0",
        "flash_attention",
        "attention",
    ),
    (
        "compute_dot_do_o_ragged_specialized",
        "flash_attention",
        "attention",
    ),
    // SageAttention's CUDA and Triton kernels and its quantisation; FlashInfer's POD attention.
    (
        "void qk_int_sv_f16_attn_kernel<128u, 64u, 32u, 64u, 128u, (DataType)0, (QuantGranularity)2, (QuantGranularity)2, float, false, __nv_bfloat16, (ComputeUnit)0, (MaskMode)0, false, false>(signed char*, signed char*, __half*, __nv_bfloat16*, float*, float*, float*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, float)",
        "attention",
        "attention",
    ),
    ("_attn_fwd", "attention", "attention"),
    (
        "void MeanScaleKernel<128u, true, __half>(__half*, signed char*, float*, float*, float, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int)",
        "quantize",
        "quantize",
    ),
    (
        "void flashinfer::PODWithKVCacheTensorKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)0, 64u, 2u, 4u, 4u, 4u, 1u, 4u, (flashinfer::PosEncodingMode)0, __half, __half, __half, float, int>, flashinfer::KernelTraits<(flashinfer::MaskMode)0, 16u, 1u, 8u, 8u, 8u, 1u, 4u, (flashinfer::PosEncodingMode)0, __half, __half, __half, float, int> >(unsigned int, unsigned int*, unsigned int*)",
        "flashinfer",
        "attention",
    ),
    // flash-linear-attention (GLA, RWKV, delta rule and their WY / triangular-solve helpers).
    ("chunk_simple_gla_bwd_kernel_dqkwg", "ssm", "ssm"),
    ("fused_chunk_gla_fwd_kernel", "ssm", "ssm"),
    ("merge_16x16_to_64x64_inverse_kernel", "ssm", "ssm"),
    // PyTorch's embedding backward, FSDP2's copies, cuDNN's runtime-fused GEMM.
    (
        "void at::native::(anonymous namespace)::krn_partial_segment_offset<long>(long*, long const*, long const*, long const*, long)",
        "embedding",
        "embedding",
    ),
    (
        "void at::native::(anonymous namespace)::chunk_cat_cuda_kernel<float, c10::BFloat16>(c10::BFloat16**, float*, long*, long*, long*, long*, long*, long*, long, long)",
        "copy",
        "memory",
    ),
    (
        "cudnn_generated_fort_native_sm90_matMul_pointwise_knob_5_128x128x64_0_0",
        "gemm",
        "gemm",
    ),
];

#[test]
fn training_and_diffusion_library_names() {
    let rules = Rules::builtin();
    let mut wrong = Vec::new();
    for (name, family, bucket) in TRAINING_AND_DIFFUSION_NAMES {
        let got = label_of(&rules, name);
        if got != (family.to_string(), bucket.to_string())
            || rules.family_of(name).kind() != MatchKind::Rule
        {
            wrong.push(format!(
                "{name}: got {got:?} ({}), want ({family}, {bucket})",
                rules.how(rules.family_of(name))
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn library_names_not_in_the_traces() {
    let rules = Rules::builtin();
    let mut wrong = Vec::new();
    for (name, family, bucket) in LIBRARY_NAMES {
        let got = label_of(&rules, name);
        if got != (family.to_string(), bucket.to_string()) {
            wrong.push(format!("{name}: got {got:?}, want ({family}, {bucket})"));
        }
        assert_eq!(rules.family_of(name).kind(), MatchKind::Rule, "{name}");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A GEMM whose name carries an epilogue word stays a GEMM, by rule and by the fallback words alike.
#[test]
fn epilogue_words_never_outrank_gemm() {
    let rules = Rules::builtin();
    for epilogue in ["swiglu", "gelu", "bias", "silu", "relu", "act"] {
        for name in [
            format!("_matmul_ogs_NNT_bf16xbf16xbf16_64x64x64x1_{epilogue}"),
            format!("void vendor::grouped_gemm_{epilogue}_kernel<128>(int)"),
            format!("void vendor::{epilogue}_bmm_kernel(int)"),
            format!("void vendor::fused_{epilogue}_mma_tile(int)"),
        ] {
            let (_, bucket) = label_of(&rules, &name);
            assert_eq!(bucket, "gemm", "{name}");
        }
    }
}

/// When no rule matches, the words of the function name place the kernel, and the label says so;
/// what the words cannot place is unmatched.
#[test]
fn the_fallback_places_by_words_and_says_so() {
    let rules = Rules::builtin();
    let cases = [
        (
            "void newlib::ep::low_latency_dispatch_send<8>(int4*)",
            "comm?",
        ),
        ("void newlib::ring_sendrecv_step<8>(int)", "comm?"),
        ("void newlib::mqa_decode_v9<4>(int)", "attention?"),
        ("void newlib::WeightOnlyBatchedXmma<4>(int)", "gemm?"),
        ("void newlib::SkinnyMMKernel<4>(int)", "gemm?"),
        ("void newlib::cast_to_e4m3(int)", "quantize?"),
        ("_ZN6newlib14unit_normalizeEv", "norm?"),
    ];
    for (name, family) in cases {
        let l = rules.family_of(name);
        assert_eq!(l.kind(), MatchKind::Fallback, "{name}");
        let f = l.family().unwrap();
        assert_eq!(rules.family(f).name, family, "{name}");
        assert!(
            rules.how(l).starts_with("fallback word "),
            "{}",
            rules.how(l)
        );
    }
    for name in [
        "Kernel",
        "void at::to_dense_representation_kernel<float>(long, long, long const*, float const*, long const*, float*)",
    ] {
        assert_eq!(rules.family_of(name), Label::Unmatched, "{name}");
        assert_eq!(rules.how(Label::Unmatched), "unmatched");
    }
    let l = rules.family_of("volta_sgemm_128x64_nn");
    assert_eq!(l.kind(), MatchKind::Rule);
    assert!(rules.how(l).starts_with("rule "), "{}", rules.how(l));
}

/// Over every kernel name of the shared corpus: a name that says GEMM (gemm, matmul, bmm_, nvjet,
/// Cijk_; fbgemm is a library of sparse kernels, not a GEMM) is in the gemm bucket (or conv, for
/// convolutions done as implicit GEMMs), and a name that says collective (nccl, all_reduce, …) is in
/// comm. Checked on the words of the names, independently of the rules' patterns.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn shared_corpus_gemms_and_collectives_are_in_their_buckets() {
    let root = common::corpus::required();
    let rules = Rules::builtin();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for rel in top_names().keys() {
        let parsed = parse_file(&root.join(rel), &Options::default())
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        let t = &parsed.trace;
        let mut names: Vec<&str> = t.kernels.iter().map(|k| t.name(k.name)).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let lower = name.to_ascii_lowercase().replace("fbgemm", "");
            let gemm = ["gemm", "matmul", "nvjet_", "cijk_"]
                .iter()
                .any(|w| lower.contains(w))
                || lower.starts_with("bmm_");
            let comm = [
                "nccl",
                "rccl",
                "all_reduce",
                "allreduce",
                "allgather",
                "all_gather",
                "reducescatter",
                "reduce_scatter",
                "alltoall",
            ]
            .iter()
            .any(|w| lower.contains(w));
            let (_, bucket) = label_of(&rules, name);
            let ok = match (gemm, comm) {
                (_, true) => bucket == "comm",
                (true, false) => bucket == "gemm" || bucket == "conv",
                (false, false) => true,
            };
            if !ok {
                wrong.push(format!("{rel}: {name}: {bucket}"));
            }
            checked += usize::from(gemm || comm);
        }
    }
    assert!(checked > 50, "only {checked} GEMM or collective names");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
