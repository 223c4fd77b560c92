//! Which backend, and why one was not used: the words shared by the backends, the errors and the summary.

use std::fmt;

use serde::Serialize;

/// Which kind of backend produced a recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum BackendKind {
    /// NVML in-process (`libnvidia-ml`, loaded at run time).
    #[serde(rename = "nvml")]
    Nvml,
    /// One `nvidia-smi --query-gpu … -lms` child for the whole run.
    #[serde(rename = "nvidia-smi")]
    NvidiaSmi,
    /// Samples read back from a file.
    #[serde(rename = "replay")]
    Replay,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Nvml => "nvml",
            BackendKind::NvidiaSmi => "nvidia-smi",
            BackendKind::Replay => "replay",
        })
    }
}

/// A backend that was tried and not used, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// The backend tried.
    pub backend: BackendKind,
    /// Why it could not be used: the [`Unavailable`](crate::Unavailable) text, verbatim.
    pub reason: String,
}
