//! gpu-monitor: samples NVIDIA GPUs beside a benchmark and summarises what it saw, saying how well it sampled.
//!
//! It reads, per GPU and at an interval, the clocks, temperature, power, utilisation, memory, performance state
//! and clock-event ("throttle") reasons — and through NVML also the energy counter, the throttle-time
//! (violation) counters, the enforced power limit and the processes on the GPU — and turns a run into a
//! [`MonitorSummary`]: min / median / max, the SM clock while busy, every reason seen and the time spent in it,
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
//! counters, and the [`Recording`] → [`MonitorSummary`] arithmetic; a backend owns only how to open its source, read it
//! and let go of it. Two consequences carry the design:
//!
//! * everything except the few lines that call the driver is tested on machines without a GPU, through the
//!   same code paths that run on one — fake `nvidia-smi` scripts and replay files exercise the monitor, the
//!   stop logic and the summary exactly as NVML does;
//! * `auto` is a loop over backends, and each rejection's reason is data ([`Rejection`]), so a recording says
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
//! let recording = monitor.stop();
//! println!("{}", serde_json::to_string_pretty(&recording.summary()).unwrap_or_default());
//! ```
//!
//! Around a region that is recorded (identity, a reading before, the monitor, a reading after), open the
//! backend once with [`GpuSource`]; its [`query_times`](GpuSource::query_times) say what the queries cost. A
//! summary's [`Coverage`] says how much of the watched region the readings cover and why not all of it (the
//! source died or stalled). To run a command beside the monitor, forwarding signals to it, use the `child-run` crate's runner.
//!
//! Nothing here panics on a machine without GPUs: every entry point either records [`Unavailable`] reasons
//! in its result or returns them.
#![deny(missing_docs)]

use serde::Serialize;

mod backend;
mod config;
mod counter;
mod coverage;
mod csv;
mod error;
mod identity;
mod kind;
mod monitor;
mod sample;
mod select;
mod source;
mod summary;
mod sys;
mod throttle;

pub use backend::{Backend, FieldNote, Session, SourceEnd, StopHook, Timestamps};
pub use config::{
    BackendChoice, MAX_INTERVAL_MS, MonitorConfig, NVIDIA_SMI_ENV, NVML_LIBRARY_ENV,
    check_interval_ms,
};
pub use counter::COUNTER_SLACK_S;
pub use coverage::{Coverage, GAP_FACTOR};
pub use error::{ParseError, Unavailable};
pub use identity::GpuIdentity;
pub use kind::{BackendKind, Rejection};
pub use monitor::{Monitor, MonitorCpu, Observer, Recording, StopHandle};
pub use sample::{
    GpuProcess, GpuRef, InvalidReading, MAX_POWER_W, MAX_PSTATE, Sample, VALID_RANGES,
    ViolationTimes,
};
pub use select::{GpuId, GpuSelection};
pub use source::{GpuSource, QueryTime};
pub use summary::{BUSY_UTIL_PERCENT, ENERGY_TOLERANCE};
pub use summary::{
    BusyStat, EnergyCheck, FieldStats, GapStats, GpuSummary, IntervalStats, MonitorCost,
    MonitorSummary, Stat, ThrottleTime,
};

/// The former name of [`Recording`], kept while the crates that use it move over.
#[doc(hidden)]
pub type Capture = Recording;
/// The former name of [`MonitorSummary`], kept while the crates that use it move over.
#[doc(hidden)]
pub type Summary = MonitorSummary;
pub use throttle::{KNOWN_MASK, THROTTLE_BITS, decode_throttle};

/// What [`gpu_identity`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Identity {
    /// The backend that answered.
    pub backend: BackendKind,
    /// Backends tried before it, with their reasons.
    pub rejected: Vec<Rejection>,
    /// One entry per selected GPU.
    pub gpus: Vec<GpuIdentity>,
}

/// The default bound on readings kept in memory ([`MonitorConfig::max_samples_kept`]): 2^17 = 131 072, 27 min
/// of 8 GPUs at 100 ms before any thinning; a reading takes ~0.4 KiB (352 B inline, a UUID and a P-state on
/// the heap; more with NVML's process lists), so at most ~64 MiB however long the run.
pub const MAX_SAMPLES_KEPT: usize = 1 << 17;

/// Forgets the `nvidia-smi` executables that timed out earlier in this process, so that the next query asks
/// them again. A timeout is otherwise remembered for the life of the process (one hung driver costs one
/// timeout, not one per query); a long-lived process that wants to retry calls this.
pub fn forget_failures() {
    backend::forget_hung();
}

/// One reading of every selected GPU, now: for a before/after pair around a region that is not monitored.
/// Readings carry `t_s = 0`. Opens the backend for this one reading; [`GpuSource`] opens it once for many.
pub fn sample_once(config: &MonitorConfig) -> Result<Vec<Sample>, Unavailable> {
    GpuSource::open(config)?.sample_once()
}

/// The static facts about each selected GPU (name, UUID, PCI bus id, driver and CUDA driver versions, VBIOS,
/// power limit, persistence mode), each `None` with a reason where the backend cannot say. Opens the backend
/// for this one question; [`GpuSource`] opens it once for many.
pub fn gpu_identity(config: &MonitorConfig) -> Result<Identity, Unavailable> {
    Ok(GpuSource::open(config)?.identity())
}
