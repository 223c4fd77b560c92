//! Template arguments of demangled kernel names, by position.
//!
//! Kineto writes the demangled CUPTI name, so a templated kernel's arguments are in the text:
//! `void exl3_gemm_kernel<4, false, 1, 16, 32, 128, 4, 3>(__half const*, …)` has `4` first. The kernel's
//! own argument list is the `<…>` group that ends just before its parameter list — not a namespace's or
//! class's, not one inside the parameters — so the name is read as a bracket structure, not with a
//! regex: `<…>` nests (`Array<char*, 2> >`), `(anonymous namespace)` and lambda markers such as
//! `{lambda(float)#1}` are groups of their own, and `operator()`, `operator<` and `->` are not brackets.

/// A bracket group at the top level of a name: its opening byte, and the byte offsets of the opener
/// and the closer.
#[derive(Debug, Clone, Copy)]
struct Group {
    open: u8,
    start: usize,
    end: usize,
}

/// The top-level bracket groups of `name`, in order; `None` when the brackets do not balance.
fn top_groups(name: &str) -> Option<Vec<Group>> {
    let b = name.as_bytes();
    let mut stack: Vec<(u8, usize)> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'o' && is_operator_keyword(b, i) {
            i = skip_operator(b, i + "operator".len());
            continue;
        }
        match c {
            b'-' if b.get(i + 1) == Some(&b'>') => {
                i += 2;
                continue;
            }
            b'<' | b'(' | b'[' | b'{' => stack.push((c, i)),
            b'>' | b')' | b']' | b'}' => {
                let want = match c {
                    b'>' => b'<',
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                match stack.last() {
                    Some(&(open, start)) if open == want => {
                        stack.pop();
                        if stack.is_empty() {
                            out.push(Group {
                                open,
                                start,
                                end: i,
                            });
                        }
                    }
                    // A `>` that closes nothing is a comparison inside an expression argument; any
                    // other mismatch means the name is not the shape we read.
                    _ if c == b'>' => {}
                    _ => return None,
                }
            }
            _ => {}
        }
        i += 1;
    }
    stack.is_empty().then_some(out)
}

/// `operator` as a whole word starting at `i`.
fn is_operator_keyword(b: &[u8], i: usize) -> bool {
    let word = b"operator";
    b.len() >= i + word.len()
        && &b[i..i + word.len()] == word
        && (i == 0 || !is_ident(b[i - 1]))
        && b.get(i + word.len()).is_none_or(|&c| !is_ident(c))
}

/// Skips the symbol of an operator name (`()`, `[]`, `<<=`, `->`, …) after the keyword.
fn skip_operator(b: &[u8], mut i: usize) -> usize {
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    if matches!(b.get(i..i + 2), Some(b"()") | Some(b"[]")) {
        return i + 2;
    }
    while let Some(&c) = b.get(i) {
        if b"<>=!+-*/%^&|~".contains(&c) {
            i += 1;
        } else {
            break;
        }
    }
    i
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The template arguments of the kernel's own template, in order and trimmed: the `<…>` group just
/// before the parameter list (the last top-level `(…)` group, when it ends the name), or, for names
/// written without parameters, the `<…>` group that ends the name. `None` when the kernel is not a
/// template (`volta_sgemm_128x64_nn`, `foo<int>::bar(int)`) or the brackets do not balance.
///
/// ```
/// use kineto_trace::template::template_args;
/// let name = "void exl3_gemm_kernel<4, false, 1, 16, 32, 128, 4, 3>(__half const*, int)";
/// assert_eq!(template_args(name).unwrap()[..2], ["4", "false"]);
/// ```
pub fn template_args(name: &str) -> Option<Vec<&str>> {
    let groups = top_groups(name)?;
    let ends_name = |g: &Group| name[g.end + 1..].trim().is_empty();
    let params = groups.iter().rposition(|g| g.open == b'(' && ends_name(g));
    let targs = match params {
        Some(p) => {
            let before = p.checked_sub(1).map(|i| groups[i])?;
            let between = &name[before.end + 1..groups[p].start];
            if before.open != b'<' || !between.trim().is_empty() {
                return None;
            }
            before
        }
        None => *groups.last().filter(|g| g.open == b'<' && ends_name(g))?,
    };
    Some(split_args(&name[targs.start + 1..targs.end]))
}

/// Splits the inside of a `<…>` group at its top-level commas.
fn split_args(inner: &str) -> Vec<&str> {
    let b = inner.as_bytes();
    let mut depth = 0usize;
    let mut out = Vec::new();
    let mut from = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'o' && is_operator_keyword(b, i) {
            i = skip_operator(b, i + "operator".len());
            continue;
        }
        match c {
            b'-' if b.get(i + 1) == Some(&b'>') => i += 1,
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                out.push(inner[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = inner[from..].trim();
    if !(out.is_empty() && last.is_empty()) {
        out.push(last);
    }
    out
}

/// The template argument at `pos` (0-based) of the kernel's own template, as written.
pub fn template_arg(name: &str, pos: usize) -> Option<&str> {
    template_args(name)?.get(pos).copied()
}

/// The template argument at `pos` (0-based) read as an integer: `4`, `-1`, `5ul`, `128u`,
/// `(cudnnKernelDataType_t)2` (a cast the demangler writes for enum values). `None` when it is not one.
///
/// ```
/// use kineto_trace::template::template_int;
/// assert_eq!(template_int("void exl3_gemm_kernel<4, false, 1>(int)", 0), Some(4));
/// assert_eq!(template_int("void exl3_gemm_kernel<4, false, 1>(int)", 1), None);
/// ```
pub fn template_int(name: &str, pos: usize) -> Option<i64> {
    let mut text = template_arg(name, pos)?;
    if let Some(rest) = text.strip_prefix('(') {
        text = &rest[rest.find(')')? + 1..];
    }
    let text = text.trim_end_matches(['u', 'U', 'l', 'L']);
    text.parse().ok()
}

/// The kernel's own function name, qualified, without return type, template arguments or
/// parameters: `void deep_ep::internode::dispatch<8, true>(int4*, …)` → `deep_ep::internode::dispatch`;
/// a name with none of these is itself (`nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT`). An
/// Itanium-mangled name (`_ZN7ck_tile6kentryI…`, which some ROCm traces keep) gives its leading
/// nested name, `ck_tile::kentry`; a ROCm kernel-descriptor suffix (`.kd`, ` [clone .kd]`) or another
/// trailing bracketed note is dropped.
/// Brackets that do not balance leave the name whole.
///
/// ```
/// use kineto_trace::template::function_name;
/// assert_eq!(function_name("void at::native::(anonymous namespace)::softmax_warp_forward<float, 10>(float*)"),
///            "at::native::(anonymous namespace)::softmax_warp_forward");
/// assert_eq!(function_name("_ZN7ck_tile6kentryILi1EEEvv"), "ck_tile::kentry");
/// ```
pub fn function_name(name: &str) -> std::borrow::Cow<'_, str> {
    if let Some(m) = mangled_nested_name(name) {
        return std::borrow::Cow::Owned(m);
    }
    // ROCm tools name a kernel by its descriptor symbol (`foo.kd`, `void foo<…>(…) [clone .kd]`), and
    // some tools append a bracketed note (`… [embedding]`): neither is part of the function's name.
    let name = name.trim();
    let name = name
        .strip_suffix(']')
        .and_then(|n| n.rfind(" [").map(|i| n[..i].trim_end()))
        .unwrap_or(name);
    let name = name.strip_suffix(".kd").unwrap_or(name);
    let Some(groups) = top_groups(name) else {
        return std::borrow::Cow::Borrowed(name.trim());
    };
    let ends_name = |g: &Group| name[g.end + 1..].trim().is_empty();
    let mut cut = name.len();
    let mut last = groups.len();
    if let Some(g) = groups.last().filter(|g| g.open == b'(' && ends_name(g)) {
        cut = g.start;
        last -= 1;
    }
    if let Some(g) = last
        .checked_sub(1)
        .map(|i| groups[i])
        .filter(|g| g.open == b'<' && name[g.end + 1..cut].trim().is_empty())
    {
        cut = g.start;
    }
    let head = &name[..cut];
    // The return type ends at the last space outside every bracket group.
    let inside = |i: usize| groups.iter().any(|g| g.start < i && i < g.end);
    let from = head
        .char_indices()
        .filter(|&(i, c)| c == ' ' && !inside(i))
        .map(|(i, _)| i + 1)
        .next_back()
        .unwrap_or(0);
    let f = head[from..].trim();
    std::borrow::Cow::Borrowed(if f.is_empty() { name.trim() } else { f })
}

/// A kernel's name as people say it, for a text table or note: its function name ([`function_name`])
/// with the template arguments folded to `<…>` when it had any, no return type or parameters; an
/// Itanium-mangled name (as ROCm traces keep them) read as its qualified name. A name with none of these
/// is itself. The full name stays in the JSON and CSV forms.
///
/// ```
/// use kineto_trace::template::display_name;
/// assert_eq!(display_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int, float)"),
///            "at::native::vectorized_elementwise_kernel<…>");
/// assert_eq!(display_name("_ZN7ck_tile6kentryILi1EEEvv"), "ck_tile::kentry<…>");
/// assert_eq!(display_name("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT"), "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT");
/// ```
pub fn display_name(name: &str) -> std::borrow::Cow<'_, str> {
    let f = function_name(name);
    if f == name.trim() {
        return f;
    }
    let templated = match mangled_nested(name) {
        Some((_, templated)) => templated,
        None => template_args(name).is_some_and(|a| !a.is_empty()),
    };
    if templated {
        std::borrow::Cow::Owned(format!("{f}<…>"))
    } else {
        f
    }
}

/// The leading nested name of an Itanium-mangled symbol (`_ZN7ck_tile6kentryI…` → `ck_tile::kentry`,
/// `_Z9my_kernelPf` → `my_kernel`); `None` when `name` is not one.
fn mangled_nested_name(name: &str) -> Option<String> {
    mangled_nested(name).map(|(n, _)| n)
}

/// [`mangled_nested_name`], and whether template arguments follow it (an `I` right after the name).
fn mangled_nested(name: &str) -> Option<(String, bool)> {
    let b = name.strip_prefix("_Z")?.as_bytes();
    let mut i = 0;
    let nested = b.first() == Some(&b'N');
    if nested {
        i += 1;
        while matches!(b.get(i), Some(b'K' | b'V' | b'r')) {
            i += 1;
        }
    }
    let mut parts: Vec<&str> = Vec::new();
    // An unqualified name is one <length><identifier>; what follows are parameter types.
    while b.get(i).is_some_and(u8::is_ascii_digit) && (nested || parts.is_empty()) {
        let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let len: usize = std::str::from_utf8(&b[i..i + digits]).ok()?.parse().ok()?;
        let start = i + digits;
        let part = b.get(start..start.checked_add(len)?)?;
        parts.push(std::str::from_utf8(part).ok()?);
        i = start + len;
    }
    (!parts.is_empty()).then(|| (parts.join("::"), b.get(i) == Some(&b'I')))
}

/// The words of a kernel's function name ([`function_name`]), lowercase, in order: identifiers split
/// at `_`, `::` and other punctuation, at camelCase humps (`RMSNormKernel` → `rms`, `norm`, `kernel`),
/// and between letters and digits (`Rmsnorm2dFwd` → `rmsnorm`, `2`, `d`, `fwd`). Text inside bracket
/// groups of the qualified name (`(anonymous namespace)`, a class's template arguments) is skipped.
///
/// ```
/// use kineto_trace::template::function_words;
/// assert_eq!(function_words("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(int)"),
///            ["vllm", "fused", "add", "rms", "norm", "kernel"]);
/// ```
pub fn function_words(name: &str) -> Vec<String> {
    let f = function_name(name);
    let mut depth = 0usize;
    let mut outer = String::with_capacity(f.len());
    for c in f.chars() {
        match c {
            '<' | '(' | '[' | '{' => {
                depth += 1;
                outer.push(' ');
            }
            '>' | ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                outer.push(' ');
            }
            _ if depth == 0 => outer.push(c),
            _ => {}
        }
    }
    split_words(&outer)
}

/// Splits text into lowercase words: at every character that is not an ASCII letter or digit, at
/// lower→upper humps, before the last capital of a run followed by a lowercase letter (`FMHAKernel`
/// → `fmha`, `kernel`), and between letters and digits.
pub fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let c: Vec<char> = run.chars().collect();
        let mut start = 0;
        for i in 1..c.len() {
            let (a, b) = (c[i - 1], c[i]);
            let hump = a.is_ascii_lowercase() && b.is_ascii_uppercase();
            let acronym_end = a.is_ascii_uppercase()
                && b.is_ascii_uppercase()
                && c.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let digit_edge = a.is_ascii_digit() != b.is_ascii_digit();
            if hump || acronym_end || digit_edge {
                out.push(c[start..i].iter().collect::<String>().to_ascii_lowercase());
                start = i;
            }
        }
        if start < c.len() {
            out.push(c[start..].iter().collect::<String>().to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exl3_gemm_k_is_the_first_argument() {
        let n = "void exl3_gemm_kernel<4, false, 1, 16, 32, 128, 4, 3>(__half const*, unsigned short const*, \
                 void*, int, int, int, int*, __half const*, __half*, __half const*)";
        assert_eq!(
            template_args(n).unwrap(),
            ["4", "false", "1", "16", "32", "128", "4", "3"]
        );
        assert_eq!(template_int(n, 0), Some(4));
        assert_eq!(template_int(n, 7), Some(3));
        assert_eq!(template_int(n, 8), None);
    }

    #[test]
    fn nested_brackets_stay_in_one_argument() {
        let n = "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, \
                 float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, \
                 at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, \
                 at::detail::Array<char*, 2>)";
        let a = template_args(n).unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(a[0], "4");
        assert!(a[1].starts_with("at::native::AUnaryFunctor<") && a[1].ends_with("<float> >"));
        assert_eq!(a[2], "at::detail::Array<char*, 2>");
        // C++11 `>>` closes two groups.
        assert_eq!(
            template_args("void k<A<B<int>>, 7>(int)").unwrap(),
            ["A<B<int>>", "7"]
        );
    }

    #[test]
    fn anonymous_namespaces_and_lambdas() {
        let n = "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, \
                 float const*, int, int, int, bool const*, int, bool)";
        assert_eq!(template_int(n, 3), Some(10));
        let n = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*, \
                 at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 128, 1>)";
        assert_eq!(template_arg(n, 1), Some("unsigned int"));
        let n = "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::\
                 direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::\
                 operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda\
                 (at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::\
                 {lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<int>)";
        let a = template_args(n).unwrap();
        assert_eq!(a.len(), 3, "{a:?}");
        assert_eq!(template_int(n, 0), Some(128));
        assert!(a[2].ends_with("::{lambda(int)#1}"));
        assert_eq!(
            template_args("void f<(anonymous namespace)::Op, 3>(int)").unwrap(),
            ["(anonymous namespace)::Op", "3"]
        );
    }

    #[test]
    fn operators_and_arrows_are_not_brackets() {
        let n = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, \
                 at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, \
                 unsigned int, float, 4> >(at::native::ReduceOp<float, int, unsigned int, float, 4>)";
        assert_eq!(template_args(n).unwrap().len(), 3);
        assert_eq!(template_int(n, 1), Some(1));
        assert_eq!(
            template_args("void k<decltype(a->b), 2>(int)").unwrap(),
            ["decltype(a->b)", "2"]
        );
        assert_eq!(
            template_args("void k<std::less<int>, Foo::operator<, 9>(int)").unwrap(),
            ["std::less<int>", "Foo::operator<", "9"]
        );
    }

    #[test]
    fn casts_and_suffixes() {
        let n = "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(\
                 cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)";
        assert_eq!(template_int(n, 5), Some(2));
        let n = "void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 5ul>(int)";
        assert_eq!(template_int(n, 4), Some(5));
        assert_eq!(template_int("void k<-3, 7u>(int)", 0), Some(-3));
        assert_eq!(template_int("void k<-3, 7u>(int)", 1), Some(7));
    }

    #[test]
    fn names_without_a_kernel_template() {
        assert_eq!(template_args("volta_sgemm_128x64_nn"), None);
        assert_eq!(
            template_args(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
            ),
            None
        );
        assert_eq!(template_args("void foo<int>::bar(int)"), None);
        assert_eq!(template_args("void k<int(int)"), None);
        assert_eq!(template_args(""), None);
        // Written without parameters (some old traces): the group that ends the name.
        assert_eq!(
            template_args(
                "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"
            )
            .unwrap(),
            ["cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4"]
        );
        let n =
            "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, 7>(int)";
        assert_eq!(template_int(n, 3), Some(7));
        assert_eq!(template_args("void k<>(int)").unwrap(), Vec::<&str>::new());
    }

    #[test]
    fn function_names_and_their_words() {
        let f = |n: &str| function_name(n).into_owned();
        assert_eq!(f("volta_sgemm_128x64_nn"), "volta_sgemm_128x64_nn");
        assert_eq!(
            f("void deep_ep::internode::dispatch<8, true>(int4*, float*)"),
            "deep_ep::internode::dispatch"
        );
        assert_eq!(
            f("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"),
            "cutlass::Kernel"
        );
        assert_eq!(
            f("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, 7>(int)"),
            "internal::gemvx::kernel"
        );
        assert_eq!(
            f("at::cuda::(anonymous namespace)::spin_kernel(long)"),
            "at::cuda::(anonymous namespace)::spin_kernel"
        );
        assert_eq!(
            f("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllGather_RING_LL"
        );
        assert_eq!(f("void k<int(int)"), "void k<int(int)");
        assert_eq!(
            f("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdE"),
            "ck_tile::kentry"
        );
        assert_eq!(f("_Z9my_kernelPf"), "my_kernel");
        assert_eq!(f("_Z9my_kernel5Class"), "my_kernel");
        assert_eq!(f("_Zfoo"), "_Zfoo");
        assert_eq!(f("_fwd_kernel.kd"), "_fwd_kernel");
        assert_eq!(
            f("void at::native::indexSelectLargeIndex<float, long>(float*, long) [embedding]"),
            "at::native::indexSelectLargeIndex"
        );
        assert_eq!(
            f("void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long) [clone .kd]"),
            "vllm::rms_norm_kernel"
        );
        assert_eq!(
            function_words("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            ["nccl", "dev", "kernel", "all", "gather", "ring", "ll"]
        );
        assert_eq!(
            function_words("void foo<int>::FMHAKernel<4>(int)"),
            ["foo", "fmha", "kernel"]
        );
        assert_eq!(
            split_words("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu"),
            [
                "matmul", "ogs", "nnt", "bf", "16", "xbf", "16", "xmxfp", "4", "16", "x", "128",
                "x", "256", "x", "1", "swiglu"
            ]
        );
        assert_eq!(split_words("Rmsnorm2dFwd"), ["rmsnorm", "2", "d", "fwd"]);
        assert_eq!(split_words(""), Vec::<String>::new());
    }
}
