//! Kernel names as the family rules expect them: demangled, without the code-object suffixes AMD
//! tools leave on (`.kd`, ` [clone .kd]`). Kineto writes demangled names; the vendors' formats keep
//! some mangled (RPD's `_ZN…`, rocprofv3's `kernel_name`), so a reader demangles what is left.
//!
//! What it is not: the kernel families (`crate::family`), which classify names; this only makes them readable.

use crate::model::Api;
use std::borrow::Cow;

/// A host call's API told by its name alone, for formats that do not say it: the driver's — CUDA's
/// driver API is `cu…` but never `cuda…` (the runtime's), ROCm's HSA runtime is `hsa_…` — else the
/// runtime's.
///
/// ```
/// use kineto_trace::{Api, native::api_of_call};
/// assert_eq!(api_of_call("cuLaunchKernel"), Api::Driver);
/// assert_eq!(api_of_call("cudaLaunchKernel"), Api::Runtime);
/// assert_eq!(api_of_call("hsa_signal_wait_scacquire"), Api::Driver);
/// assert_eq!(api_of_call("hipLaunchKernel"), Api::Runtime);
/// ```
pub fn api_of_call(name: &str) -> Api {
    if (name.starts_with("cu") && !name.starts_with("cuda")) || name.starts_with("hsa_") {
        Api::Driver
    } else {
        Api::Runtime
    }
}

/// The name with AMD's code-object descriptor suffixes removed and an Itanium-mangled symbol
/// (`_Z…`) demangled; other names (extern "C", Tensile's `Cijk_…`) as they are.
///
/// ```
/// use kineto_trace::native::kernel_name;
/// assert_eq!(kernel_name("__amd_rocclr_fillBufferAligned.kd"), "__amd_rocclr_fillBufferAligned");
/// assert_eq!(kernel_name("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>) [clone .kd]"),
///            "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)");
/// assert_eq!(kernel_name("_Z15addition_kernelIfEvPT_PKS0_S3_ii"),
///            "void addition_kernel<float>(float*, float const*, float const*, int, int)");
/// ```
pub fn kernel_name(raw: &str) -> Cow<'_, str> {
    let trimmed = raw
        .strip_suffix(" [clone .kd]")
        .or_else(|| raw.strip_suffix(".kd"))
        .unwrap_or(raw);
    if trimmed.starts_with("_Z")
        && let Some(d) = demangle(trimmed)
    {
        return Cow::Owned(d);
    }
    Cow::Borrowed(trimmed)
}

/// Kernel names as [`kernel_name`] gives them, interned, kept per name as the file writes it: a
/// reader names each distinct kernel once rather than once per event (demangling a symbol takes ~5 µs,
/// so a million launches of a few mangled kernels cost seconds).
#[derive(Default)]
pub struct KernelNames {
    seen: rustc_hash::FxHashMap<String, crate::model::Sym>,
}

impl KernelNames {
    /// The symbol of `raw`'s name as the family rules expect it, interned in `b`.
    pub fn sym(&mut self, b: &mut super::TraceBuilder, raw: &str) -> crate::model::Sym {
        if let Some(&sym) = self.seen.get(raw) {
            return sym;
        }
        let sym = b.name(&kernel_name(raw));
        self.seen.insert(raw.to_owned(), sym);
        sym
    }
}

/// An Itanium C++ symbol demangled as `c++filt` prints it, or `None` when it does not demangle.
pub fn demangle(symbol: &str) -> Option<String> {
    let sym = cpp_demangle::Symbol::new(symbol).ok()?;
    sym.demangle().ok()
}

/// The HIP runtime's own blit kernels (`__amd_rocclr_fillBuffer…`, `__amd_rocclr_copyBuffer…`,
/// images too): rocprofv3 and rocpd record fills, and some copies, only as these kernels, so a
/// reader counts them as what they do. `None` for every other kernel.
pub fn blit_kind(name: &str) -> Option<crate::model::GpuKind> {
    let rest = name.strip_prefix("__amd_rocclr_")?;
    if rest.starts_with("fill") {
        Some(crate::model::GpuKind::Memset)
    } else if rest.starts_with("copy") {
        Some(crate::model::GpuKind::Memcpy)
    } else {
        None
    }
}

/// A copy's name in the form the summary reads its direction from (`Memcpy HtoD (…)`), from an AMD
/// direction word (`MEMORY_COPY_HOST_TO_DEVICE`, `CopyHostToDevice`, `HOST_TO_DEVICE`); the original
/// word is kept in the parentheses.
pub fn copy_name(direction: &str) -> String {
    let folded: String = direction
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let short = [
        ("hosttodevice", "HtoD"),
        ("devicetohost", "DtoH"),
        ("devicetodevice", "DtoD"),
        ("hosttohost", "HtoH"),
        ("peertopeer", "PtoP"),
    ]
    .iter()
    .find(|(long, _)| folded.contains(long))
    .map_or("other", |(_, s)| s);
    format!("Memcpy {short} ({direction})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_names_carry_the_direction_the_summary_reads() {
        assert_eq!(
            copy_name("MEMORY_COPY_HOST_TO_DEVICE"),
            "Memcpy HtoD (MEMORY_COPY_HOST_TO_DEVICE)"
        );
        assert_eq!(
            copy_name("CopyDeviceToHost"),
            "Memcpy DtoH (CopyDeviceToHost)"
        );
        assert_eq!(
            copy_name("MEMORY_COPY_NONE"),
            "Memcpy other (MEMORY_COPY_NONE)"
        );
        assert_eq!(
            crate::summary::copy_kind(&copy_name("MEMORY_COPY_DEVICE_TO_DEVICE")),
            "DtoD"
        );
    }

    #[test]
    fn runtime_blits_are_fills_and_copies() {
        use crate::model::GpuKind;
        assert_eq!(
            blit_kind("__amd_rocclr_fillBufferAligned"),
            Some(GpuKind::Memset)
        );
        assert_eq!(blit_kind("__amd_rocclr_copyBuffer"), Some(GpuKind::Memcpy));
        assert_eq!(blit_kind("__amd_rocclr_gwsInit"), None);
        assert_eq!(blit_kind("Cijk_Ailk_Bljk"), None);
    }
}
