//! A kernel's name as two runs' kernels are matched by ([`normalise`], docs/verdict.md): what a library
//! upgrade or a tuner changes without changing what the kernel does is taken out, so that a cuBLAS upgrade
//! does not read as "every kernel is new".
//!
//! Taken out, by the trace crate's `function_name`: template arguments (`<…>`), the parameter list (`(…)`;
//! `(anonymous namespace)` is kept, as `{anonymous}`), the return type, a ROCm `.kd` suffix; then tile and cluster
//! shapes (a run of numbers joined by `x`: `128x64`, `tilesize128x128x32` → `tilesize#`), and version
//! tokens (`_v2`, `_v3`). Kept: the architecture prefix (`sm80_`, `ampere_`), data types and layouts
//! (`f16`, `_nn`, `_tn`): those are different kernels, and a different GPU makes runs incomparable anyway.

/// The name `name` is matched by (see the module's doc).
pub fn normalise(name: &str) -> String {
    // The function's own name is the trace crate's rule (return type, template arguments, parameters,
    // a ROCm `.kd` suffix out; a mangled name read): one home for what a kernel's name is.
    let function = kineto_trace::template::function_name(name);
    // A namespace written in parentheses is part of the name; braces keep `_` splitting off it.
    let function = function.replace("(anonymous namespace)", "{anonymous}");
    function
        .split('_')
        .filter(|token| !is_version(token))
        .map(shapes_out)
        .collect::<Vec<_>>()
        .join("_")
}

/// `v2`, `v10`: a version suffix.
fn is_version(token: &str) -> bool {
    token
        .strip_prefix('v')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// `token` with each shape (digits `x` digits, and more `x` digits) replaced by `#`.
fn shapes_out(token: &str) -> String {
    let b = token.as_bytes();
    let mut out = String::with_capacity(token.len());
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let digits = |mut j: usize| {
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                j
            };
            let mut end = digits(i);
            let mut parts = 1;
            while end + 1 < b.len() && b[end] == b'x' && b[end + 1].is_ascii_digit() {
                end = digits(end + 1);
                parts += 1;
            }
            if parts > 1 {
                out.push('#');
            } else {
                out.push_str(&token[i..end]);
            }
            i = end;
        } else {
            // Bytes up to the next digit: whole UTF-8 characters, since digits are ASCII.
            let next = b[i..]
                .iter()
                .position(u8::is_ascii_digit)
                .map_or(b.len(), |p| i + p);
            out.push_str(&token[i..next]);
            i = next;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn what_an_upgrade_changes_is_taken_out() {
        // Tile shapes differ between cuBLAS versions; the kernel is the same SGEMM.
        assert_eq!(normalise("volta_sgemm_128x64_nn"), "volta_sgemm_#_nn");
        assert_eq!(normalise("volta_sgemm_64x32_nn"), "volta_sgemm_#_nn");
        assert_eq!(
            normalise(
                "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel"
            ),
            "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize#_stage4_warpsize#_tensor#_kernel"
        );
        assert_eq!(
            normalise(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
            ),
            "at::native::vectorized_elementwise_kernel"
        );
        assert_eq!(normalise("cudnn_conv_kernel_v2"), "cudnn_conv_kernel");
        assert_eq!(
            normalise("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, 3>(int)"),
            "at::native::{anonymous}::CatArrayBatchedCopy"
        );
        assert_eq!(normalise("cudnn_conv_kernel_v3"), "cudnn_conv_kernel");
    }

    #[test]
    fn what_makes_another_kernel_is_kept() {
        assert_ne!(
            normalise("volta_sgemm_128x64_nn"),
            normalise("volta_sgemm_128x64_tn")
        );
        assert_ne!(normalise("sm80_gemm_f16"), normalise("sm90_gemm_f16"));
        // A lone number is not a shape: `stage4` stays, `vectorized_kernel<4>` loses only its argument.
        assert_eq!(normalise("kernel_stage4"), "kernel_stage4");
        assert_eq!(normalise("nccl_v"), "nccl_v");
        assert_eq!(
            normalise("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)"),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
        );
        // Non-ASCII names pass through whole.
        assert_eq!(normalise("ядро_2x2"), "ядро_#");
    }
}
