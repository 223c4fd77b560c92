//! Why a backend, a GPU or a field could not be used.

use serde::Serialize;

use crate::kind::Rejection;

/// Why the monitor could not use a backend (or a GPU, or a file) at all.
///
/// This is the crate's one error type. It is deliberately not called `Error`: nothing in this crate *fails* —
/// a missing driver is a fact about the machine to be written into the result, and every public entry point
/// that can meet it either returns it (`sample_once`, `gpu_identity`) or records its text in the
/// [`Recording`](crate::Recording). The variants carry strings rather than source errors so that the value can
/// be cloned into a capture and serialised beside it.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Unavailable {
    /// `libnvidia-ml` could not be loaded or initialised (no driver, no library, no permission).
    #[error("NVML could not be initialised: {reason}")]
    NvmlInit {
        /// NVML's own words, prefixed by what was tried.
        reason: String,
    },
    /// A call every sample or listing depends on failed.
    #[error("NVML call {function} failed: {reason}")]
    NvmlCall {
        /// The NVML function (C name).
        function: String,
        /// NVML's own words.
        reason: String,
    },
    /// No `nvidia-smi` at the configured path, in `KL1_NVIDIA_SMI`, or on `PATH`.
    #[error("nvidia-smi not found: {searched}")]
    NvidiaSmiNotFound {
        /// Where it was looked for.
        searched: String,
    },
    /// `nvidia-smi` ran but could not list the GPUs (the usual case with no driver loaded).
    #[error("{path} failed ({status}): {output}")]
    NvidiaSmiFailed {
        /// The executable that was run.
        path: String,
        /// How it ended, e.g. `exit status: 9`.
        status: String,
        /// The start of what it printed, which is where nvidia-smi puts its reason.
        output: String,
    },
    /// `nvidia-smi` did not answer a one-shot query in time; it was killed.
    #[error("{path} did not answer within {after_s} s; killed")]
    NvidiaSmiTimeout {
        /// The executable that was run.
        path: String,
        /// How long it was given.
        after_s: f64,
    },
    /// `nvidia-smi` timed out earlier in this process and is not asked again: one hung driver costs one
    /// timeout per process, not one per query.
    #[error(
        "{path} did not answer a query earlier in this process (within {after_s} s); not asked again"
    )]
    NvidiaSmiHungEarlier {
        /// The executable.
        path: String,
        /// The timeout it ran past then.
        after_s: f64,
    },
    /// A child process could not be started.
    #[error("could not start {path}: {reason}")]
    Spawn {
        /// The executable.
        path: String,
        /// The operating system's words.
        reason: String,
    },
    /// The backend works but sees no GPU at all.
    #[error("{backend} sees no GPU")]
    NoGpus {
        /// Which backend looked.
        backend: String,
    },
    /// A GPU named in the selection does not exist (or a selection named none).
    #[error("no GPU matches {wanted:?}; visible: {visible}")]
    NoSuchGpu {
        /// The selection item that matched nothing.
        wanted: String,
        /// The GPUs the backend can see, as `index:uuid` pairs.
        visible: String,
    },
    /// A replay file could not be opened or read.
    #[error("replay file {path}: {reason}")]
    Replay {
        /// The file.
        path: String,
        /// The operating system's or parser's words.
        reason: String,
    },
    /// The configuration cannot be honoured by any backend.
    #[error("bad monitor configuration: {reason}")]
    BadConfig {
        /// What is wrong.
        reason: String,
    },
    /// `auto` tried every backend and none could be used; each reason is kept.
    #[error("no GPU backend available: {}", join_rejections(.reasons))]
    NoBackend {
        /// Why each backend tried was rejected, in the order tried.
        reasons: Vec<Rejection>,
    },
}

fn join_rejections(reasons: &[Rejection]) -> String {
    if reasons.is_empty() {
        return "none was tried".to_owned();
    }
    reasons
        .iter()
        .map(|r| format!("{}: {}", r.backend, r.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A value that does not name a backend or a GPU selection: a usage error, unlike [`Unavailable`], which is a
/// fact about the machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);
