//! Versions only the running interpreter knows: a Python benchmark's `python`, `torch`, `cuda` and `cudnn`
//! (the seed's keys) and the GPU torch computes on, given by the program that embeds this library (the
//! `kl1_provenance` Python module). Nothing here is probed: the machine cannot say which Python runs the
//! benchmark or which torch it imported; only that Python can.

use crate::Probe;

/// The record's top-level keys an [`InterpreterVersions`] fills, the seed's names.
pub const INTERPRETER_KEYS: [&str; 4] = ["python", "torch", "cuda", "cudnn"];

/// What the interpreter running the benchmark says about itself and the libraries it has loaded. Given with
/// [`Provenance::interpreter`](crate::Provenance::interpreter); written as the seed's top-level keys
/// `python`, `torch`, `cuda`, `cudnn` (each `null` with its reason under `unavailable` when the interpreter
/// could not say), and `gpu_name` when [`InterpreterVersions::gpu_name`] is given.
///
/// ```
/// use provenance::{InterpreterVersions, Probe, Provenance};
/// let versions = InterpreterVersions {
///     python: Probe::Value("3.12.4".into()),
///     torch: Probe::unavailable("torch not imported"),
///     cuda: Probe::unavailable("torch not imported"),
///     cudnn: Probe::unavailable("torch not imported"),
///     gpu_name: None,
/// };
/// let record = Provenance::new().interpreter(versions).interval_ms(100).start().finish();
/// let v = record.to_value()?;
/// assert_eq!(v["python"], "3.12.4");
/// assert!(v["torch"].is_null());
/// assert_eq!(v["unavailable"]["torch"], "torch not imported");
/// # Ok::<(), provenance::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct InterpreterVersions {
    /// The interpreter's version (`platform.python_version()`).
    pub python: Probe<String>,
    /// torch's version (`torch.__version__`).
    pub torch: Probe<String>,
    /// The CUDA toolkit torch was built with (`torch.version.cuda`); not the toolkit installed on the machine,
    /// which is `build.cuda.toolkit`.
    pub cuda: Probe<String>,
    /// The cuDNN torch loaded, as torch gives it (`torch.backends.cudnn.version()`: 90100 for 9.1.0), the
    /// seed's form.
    pub cudnn: Probe<u64>,
    /// The GPU torch computes on (`torch.cuda.get_device_name()`), when the interpreter has torch to ask:
    /// it then stands for the record's `gpu_name`, even unavailable (torch without a GPU benchmarks on the CPU,
    /// whatever GPU the machine has). `None`: the interpreter cannot say, and `gpu_name` is the first GPU in
    /// use, as in every other record.
    pub gpu_name: Option<Probe<String>>,
}
