//! What to monitor, how often, through which backend; and how a backend is named.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

use crate::error::ParseError;
use crate::select::GpuSelection;

/// The environment variable naming the `nvidia-smi` to run when [`MonitorConfig::nvidia_smi`] is `None`.
pub const NVIDIA_SMI_ENV: &str = "KL1_NVIDIA_SMI";

/// The environment variable naming the NVML library to load when [`MonitorConfig::nvml_library`] is `None`.
pub const NVML_LIBRARY_ENV: &str = "KL1_NVML_LIBRARY";

/// The longest interval between readings a monitor may be asked for, ms (one minute). Coverage grants a
/// stretch of [`GAP_FACTOR`](crate::GAP_FACTOR) × the interval without a reading; beyond a minute that grace
/// would let a monitor that read once and died pass for one that watched the run.
pub const MAX_INTERVAL_MS: u64 = 60_000;

/// Checks a requested interval: at least 1 ms, at most [`MAX_INTERVAL_MS`]. The error is the reason, for a
/// usage message or a rejected backend.
pub fn check_interval_ms(ms: u64) -> Result<(), String> {
    if ms == 0 {
        Err("interval_ms must be at least 1".into())
    } else if ms > MAX_INTERVAL_MS {
        Err(format!(
            "interval_ms {ms} is over the limit of {MAX_INTERVAL_MS} ms: a monitor reading less often than once a \
             minute cannot show that it watched the run"
        ))
    } else {
        Ok(())
    }
}

/// What to monitor, how often, and through which backend.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorConfig {
    /// Requested interval between readings of each GPU, ms (1 to [`MAX_INTERVAL_MS`]; another is refused at
    /// start with the reason, [`check_interval_ms`]). Default 500, the seed's.
    pub interval_ms: u64,
    /// Which backend to use. Default [`BackendChoice::Auto`].
    pub backend: BackendChoice,
    /// Which GPUs. Default [`GpuSelection::All`].
    pub gpus: GpuSelection,
    /// The `nvidia-smi` to run; `None`: `$KL1_NVIDIA_SMI`, else `nvidia-smi` on `PATH`.
    pub nvidia_smi: Option<PathBuf>,
    /// The NVML library to load; `None`: `$KL1_NVML_LIBRARY`, else the driver's `libnvidia-ml.so.1`. For tests
    /// (a fake library) and installs that keep the driver outside the loader's path.
    pub nvml_library: Option<PathBuf>,
    /// Whether NVML lists the processes on each GPU at each reading (two driver calls per GPU). Default true.
    pub read_processes: bool,
    /// How long a one-shot `nvidia-smi` query (opening, identity, a single reading) may take before it is
    /// killed, ms. Default 20 000: nvidia-smi can take seconds where the driver must wake every GPU. A query
    /// that times out is not asked again in this process (see [`forget_failures`](crate::forget_failures)).
    pub query_timeout_ms: u64,
    /// The most readings kept in memory for the summary (all GPUs together). Beyond it, the kept readings are
    /// thinned to every second one per GPU, and from then on only every 2nd (4th, …) reading is kept: memory
    /// stays bounded however long the run, and the summary says how far it was thinned. Every reading still
    /// reaches the observer (the CLI's sample file). Default [`MAX_SAMPLES_KEPT`](crate::MAX_SAMPLES_KEPT).
    pub max_samples_kept: usize,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        MonitorConfig {
            interval_ms: 500,
            backend: BackendChoice::Auto,
            gpus: GpuSelection::All,
            nvidia_smi: None,
            nvml_library: None,
            read_processes: true,
            query_timeout_ms: 20_000,
            max_samples_kept: crate::MAX_SAMPLES_KEPT,
        }
    }
}

/// Which backend to use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// NVML, else `nvidia-smi`, else none; each rejection is recorded.
    #[default]
    Auto,
    /// NVML only.
    Nvml,
    /// `nvidia-smi` only.
    NvidiaSmi,
    /// Samples recorded earlier: `nvidia-smi`'s CSV, our CSV rows, or our JSON lines.
    Replay(PathBuf),
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendChoice::Auto => f.write_str("auto"),
            BackendChoice::Nvml => f.write_str("nvml"),
            BackendChoice::NvidiaSmi => f.write_str("nvidia-smi"),
            BackendChoice::Replay(p) => write!(f, "replay:{}", p.display()),
        }
    }
}

impl Serialize for BackendChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl BackendChoice {
    /// Reads a backend given as one word (`auto`, `nvml`, `nvidia-smi`, `replay:FILE`), or as the two words
    /// of the older spelling `replay FILE`, which both command-line tools keep as a hidden alias.
    pub fn from_words<S: AsRef<str>>(words: &[S]) -> Result<BackendChoice, ParseError> {
        match words {
            [kind, file] if kind.as_ref() == "replay" && !file.as_ref().is_empty() => {
                Ok(BackendChoice::Replay(PathBuf::from(file.as_ref())))
            }
            [kind] if kind.as_ref() == "replay" => Err(ParseError(
                "the replay backend needs a file: replay:FILE".to_owned(),
            )),
            [kind] => kind.as_ref().parse(),
            _ => Err(ParseError(format!(
                "{:?}: expected auto, nvml, nvidia-smi or replay:FILE",
                words
                    .iter()
                    .map(AsRef::as_ref)
                    .collect::<Vec<_>>()
                    .join(" ")
            ))),
        }
    }
}

impl FromStr for BackendChoice {
    type Err = ParseError;

    /// `auto`, `nvml`, `nvidia-smi` (or `smi`), `replay:PATH` / `replay=PATH`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "nvml" => Ok(BackendChoice::Nvml),
            "nvidia-smi" | "smi" => Ok(BackendChoice::NvidiaSmi),
            _ => match s
                .strip_prefix("replay:")
                .or_else(|| s.strip_prefix("replay="))
            {
                Some(p) if !p.is_empty() => Ok(BackendChoice::Replay(PathBuf::from(p))),
                _ => Err(ParseError(format!(
                    "unknown backend {s:?}: expected auto, nvml, nvidia-smi or replay:FILE"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_in_one_word_or_the_old_two() {
        let replay = BackendChoice::Replay(PathBuf::from("r.csv"));
        assert_eq!(
            BackendChoice::from_words(&["replay:r.csv"]),
            Ok(replay.clone())
        );
        assert_eq!(BackendChoice::from_words(&["replay", "r.csv"]), Ok(replay));
        assert_eq!(
            BackendChoice::from_words(&["nvml"]),
            Ok(BackendChoice::Nvml)
        );
        assert!(BackendChoice::from_words(&["replay"]).is_err());
        assert!(BackendChoice::from_words(&["nvml", "x"]).is_err());
        let typo = BackendChoice::from_words(&["nvmll"]).expect_err("typo");
        assert!(typo.0.contains("unknown backend \"nvmll\""), "{typo}");
    }
}
