//! gpu-monitor: samples NVIDIA GPUs beside a benchmark and summarises what it saw, saying how well it sampled.
//!
//! It reads, per GPU and at an interval, the clocks, temperature, power, utilisation, memory, performance state
//! and clock-event ("throttle") reasons — and through NVML also the energy counter, the throttle-time
//! (violation) counters, the enforced power limit and the processes on the GPU — and turns a run into a
//! [`Summary`]: min / median / max, the SM clock while busy, every reason seen and the time spent in it,
//! energy cross-checked against integrated power, achieved interval and gaps, and its own CPU cost.
//!
//! It is **not** a profiler (no per-kernel attribution: use Nsight or Kineto traces), not a controller (it
//! never sets clocks or limits), and not a fleet agent (one process, one run, local GPUs). Linux only.
//!
//! # The backend seam
//!
//! The readings can come from three places that have nothing in common as software: NVML, a C library that
//! may be missing, too old, or refuse a call on one GPU and not another; `nvidia-smi`, a child process that
//! prints at its own pace and may die, hang, or print an error where a number should be; and a file recorded
//! earlier. What a benchmark needs from them is the same: readings at an interval, a run that starts and stops
//! on command and never takes the benchmark down with it, an honest account of what went wrong, a summary.
//!
//! So, as ripgrep's `grep-matcher` puts every regex engine behind one `Matcher` trait so that the searcher is
//! written once, this crate puts every source behind one [`Backend`] trait and writes the rest once: the
//! [`Monitor`] owns the thread, the clock, the stop signal (stop, drop, Ctrl-C), the record of warnings and
//! counters, and the [`Capture`] → [`Summary`] arithmetic; a backend owns only how to open its source, read it
//! and let go of it. Two consequences carry the design:
//!
//! * everything except the few lines that call the driver is tested on machines without a GPU, through the
//!   same code paths that run on one — fake `nvidia-smi` scripts and replay files exercise the monitor, the
//!   stop logic and the summary exactly as NVML does;
//! * `auto` is a loop over backends, and each rejection's reason is data ([`Rejection`]), so a capture says
//!   not just "no NVML" but why, and which backend it fell back to.
//!
//! The price is that the trait must fit both a source the monitor clocks (NVML: read every GPU each tick) and
//! one that clocks itself (`nvidia-smi -lms`: lines arrive when they arrive). That is why [`Backend::run`] owns
//! its loop and talks to the monitor through a [`Session`] (wait-until-tick-or-stop, record, warn, count)
//! instead of being asked for one reading at a time.
//!
//! # Use
//!
//! ```no_run
//! use gpu_monitor::{Monitor, MonitorConfig};
//! let monitor = Monitor::start(MonitorConfig { interval_ms: 100, ..MonitorConfig::default() });
//! // ... timed region ...
//! let capture = monitor.stop();
//! println!("{}", serde_json::to_string_pretty(&capture.summary()).unwrap_or_default());
//! ```
//!
//! Nothing here panics on a machine without GPUs: every entry point either records [`Unavailable`] reasons
//! in its result or returns them.
#![deny(missing_docs)]

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

mod backend;
mod child;
mod coverage;
mod csv;
mod error;
mod identity;
mod monitor;
pub mod runner;
mod sample;
mod select;
mod summary;
mod sys;
mod throttle;

pub use backend::{
    Backend, BackendKind, FieldNote, Rejection, Session, SourceEnd, StopHook, Timestamps,
};
pub use coverage::Coverage;
pub use error::Unavailable;
pub use identity::{GpuIdentity, Identity};
pub use monitor::{Capture, Monitor, MonitorCpu, Observer, StopHandle};
pub use sample::{GpuProcess, GpuRef, Sample, ViolationTimes};
pub use select::{GpuId, GpuSelection};
pub use summary::{BUSY_UTIL_PERCENT, ENERGY_TOLERANCE, GAP_FACTOR};
pub use summary::{
    BusyStat, EnergyCheck, GapStats, GpuSummary, IntervalStats, MonitorCost, SeedView, Stat,
    Summary, ThrottleTime,
};
pub use throttle::{KNOWN_MASK, THROTTLE_BITS, decode_throttle};

/// The environment variable naming the `nvidia-smi` to run when [`MonitorConfig::nvidia_smi`] is `None`.
pub const NVIDIA_SMI_ENV: &str = "KL1_NVIDIA_SMI";

/// The environment variable naming the NVML library to load when [`MonitorConfig::nvml_library`] is `None`.
pub const NVML_LIBRARY_ENV: &str = "KL1_NVML_LIBRARY";

/// What to monitor, how often, and through which backend.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorConfig {
    /// Requested interval between readings of each GPU, ms (at least 1). Default 500, the seed's.
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
    /// Samples recorded earlier: `nvidia-smi`'s CSV, our `--format csv`, or our JSON lines.
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

impl FromStr for BackendChoice {
    type Err = Unavailable;

    /// `auto`, `nvml`, `nvidia-smi` (or `smi`), `replay:PATH` / `replay=PATH`.
    fn from_str(s: &str) -> Result<Self, Unavailable> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "nvml" => Ok(BackendChoice::Nvml),
            "nvidia-smi" | "smi" => Ok(BackendChoice::NvidiaSmi),
            _ => match s
                .strip_prefix("replay:")
                .or_else(|| s.strip_prefix("replay="))
            {
                Some(p) if !p.is_empty() => Ok(BackendChoice::Replay(PathBuf::from(p))),
                _ => Err(Unavailable::BadConfig {
                    reason: format!(
                        "unknown backend {s:?}: expected auto, nvml, nvidia-smi or replay:FILE"
                    ),
                }),
            },
        }
    }
}

/// One reading of every selected GPU, now: for a before/after pair around a region that is not monitored.
/// Readings carry `t_s = 0`.
pub fn sample_once(config: &MonitorConfig) -> Result<Vec<Sample>, Unavailable> {
    let (mut backend, _) = backend::open_or_explain(config)?;
    backend.sample_once()
}

/// The static facts about each selected GPU (name, UUID, PCI bus id, driver and CUDA driver versions, VBIOS,
/// power limit, persistence mode), each `None` with a reason where the backend cannot say.
pub fn gpu_identity(config: &MonitorConfig) -> Result<Identity, Unavailable> {
    let (mut backend, rejected) = backend::open_or_explain(config)?;
    let gpus = backend.identity();
    Ok(Identity {
        backend: backend.kind(),
        rejected,
        gpus,
    })
}
