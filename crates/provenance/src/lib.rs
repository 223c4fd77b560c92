//! Provenance: the record of where a benchmark number came from.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("result.json");
//! let model = "tiny-llm"; // load the model, warm up: not timed
//! let tokens_per_s = provenance::Provenance::new()
//!     .program(provenance::program!()) // name, version, profile, and this crate's git state
//!     .field("model", model)?
//!     .record(&path, || {
//!         // ... the timed work ...
//!         1234.5
//!     })?; // wrote {"result": 1234.5, "provenance": {…}}; a Ctrl-C writes it too, marked interrupted
//! # assert_eq!(tokens_per_s, 1234.5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The record holds:
//!
//! - the static part, read once at start: UTC time, git commit / branch / dirty state / hash of the diff,
//!   toolchain and versions (CUDA toolkit, runtime and cuDNN with the file each was read from), the command
//!   line, the identity of the GPUs in use, the host (CPU, OS, kernel, hostname) and the environment class
//!   (bare metal, VM, container, WSL) with the signals that decided it;
//! - `before` and `after`: a GPU sample, the load average, the CPU frequency and (on WSL) Windows' CPU load;
//! - `during`: the [`gpu_monitor`] summary of the timed region (clocks, power, temperature, throttling), how much
//!   of the region the monitor covered ([`Coverage`]), and the host's load and CPU busy % sampled over it;
//! - a clean-run [`Verdict`]: flags such as throttling or a dirty tree, each with its evidence, and the checks
//!   that could not be made, with the reason (a monitor that died mid-run leaves `throttled` unchecked);
//! - what recording cost before and after the region (`recorder_s`).
//!
//! Entry points: [`record`] (one call), [`Provenance`] → [`Provenance::start`] → [`Running::finish`] (the
//! builder, for a result written by the caller), [`bench`](mod@bench) (one record per criterion or divan benchmark),
//! [`wrap`] (any program, from outside: `provenance run -- CMD`), [`diff`] (what changed between two records)
//! and [`record_json`] (reading records of any version).
//!
//! Every probe is optional ([`Probe`]): a missing tool or driver gives `null` and a reason, never an error, so
//! the same code records a laptop without a GPU and an H200 node. Result files are claimed before the work
//! ([`claim_output`]) and written atomically.
//!
//! What it is not: a profiler or a sampler (sampling is `gpu-monitor`'s), a statistics package (it does not
//! judge the benchmark's own numbers), or a lock on the machine (it reports other GPU users, it does not stop
//! them). The record describes conditions; whether a difference matters is the reader's call, helped by
//! [`diff`].
//!
//! The builder, when the result file is the caller's:
//!
//! ```no_run
//! #[derive(serde::Serialize)]
//! struct BenchOutput<'a> {
//!     tokens_per_s: f64,
//!     provenance: &'a provenance::Record,
//! }
//! let out = provenance::claim_output("result.json", false)?; // before any work
//! let prov = provenance::Provenance::new()
//!     .program(provenance::program!())
//!     .field("weights", "bf16")?
//!     .start(); // after loading the model, just before the timed region
//! // ... timed region ...
//! let record = prov.finish();
//! let written = out.write_json(&BenchOutput { tokens_per_s: 1234.5, provenance: &record })?;
//! // `written.path()` is where it went: beside the name if a file appeared there meanwhile.
//! # Ok::<(), provenance::Error>(())
//! ```
//!
//! (A typed result rather than `serde_json::json!`: that macro unwraps serialisation, and a record refuses NaN
//! with an error.)
#![deny(missing_docs)]

pub mod bench;
mod build_info;
mod builder;
mod cmd;
mod coverage;
mod cuda;
pub mod diff;
mod environment;
mod field;
mod git;
mod git_tree;
mod gpu;
mod harness;
mod host;
mod host_during;
mod interpreter;
mod probe;
mod procs;
mod record;
pub mod record_json;
mod running;
mod time;
mod verdict;
pub mod wrap;

use std::path::{Path, PathBuf};

pub use build_info::{BuildInfo, LibraryBuild, ProgramBuild};
pub use builder::Provenance;
pub use coverage::{Coverage, GpuCoverage, MIN_COVERAGE_FRACTION};
pub use cuda::{CudaSearch, CudaVersions, FoundVersion};
pub use environment::{EnvClass, Environment, Signal, detect_environment};
pub use field::parse_field;
pub use git::{GitInfo, MAX_LISTED, git_info};
pub use gpu::{GpuBackend, MAX_TIMELINE_SAMPLES, NO_GPU_BACKEND, Timeline};
pub use gpu_monitor;
pub use harness::{Recorded, record};
pub use host::{CpuFreq, HostInfo, LoadAvg, cpu_freq, host_info, loadavg, windows_cpu_percent};
pub use host_during::{HostDuring, MinMax, Spread};
pub use interpreter::{INTERPRETER_KEYS, InterpreterVersions};
pub use probe::Probe;
pub use record::{CommandRun, Record, RecorderCost};
pub use running::{Running, Snapshot};
pub use tool_io::Claim;
pub use verdict::{
    BUSY_UTIL_PERCENT, Check, Flag, THROTTLE_MIN_FRACTION, THROTTLE_POLICIES, THROTTLE_REASONS,
    Unchecked, Verdict, WINDOWS_BUSY_PERCENT,
};

/// Version of the record's layout. Raised when a key changes meaning or moves; adding a key does not raise it.
pub const SCHEMA_VERSION: u32 = 1;

/// Top-level keys the record writes itself; user fields may not take them. `python`, `torch`, `cuda` and
/// `cudnn` are written only when the interpreter gives them ([`InterpreterVersions`]), and are reserved always:
/// the seed's keys have one meaning and one source.
pub const RESERVED_KEYS: [&str; 26] = [
    "schema_version",
    "time_utc",
    "finished_utc",
    "git",
    "python",
    "torch",
    "cuda",
    "cudnn",
    "gpu_name",
    "driver",
    "cpu_count",
    "gpus",
    "gpu_backend",
    "build",
    "command_line",
    "host",
    "environment",
    "before",
    "during",
    "after",
    "monitored_s",
    "recorder_s",
    "interrupted",
    "command",
    "verdict",
    "unavailable",
];

/// The crate's one error type. Probes never produce it (they produce [`Probe::Unavailable`]); it comes from
/// output files, user fields, and starting a wrapped command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The result file could not be claimed or written (it exists, another run holds its name, it is not a
    /// regular file, a number in it is not finite, the disk is full, …).
    #[error(transparent)]
    Output(#[from] tool_io::Error),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A number to be written is NaN or infinite; it is refused rather than written as `null`.
    #[error("non-finite number {value} at {path}: refusing to write NaN or infinity")]
    NonFinite {
        /// Dotted path of the number in the record.
        path: String,
        /// The number.
        value: f64,
    },
    /// A value could not be turned into JSON.
    #[error("cannot serialise {what}: {message}")]
    Serialize {
        /// What was being serialised.
        what: String,
        /// serde's message.
        message: String,
    },
    /// A user field would replace one of the record's own keys.
    #[error("field {name:?} is one of the record's own keys ({})", RESERVED_KEYS.join(", "))]
    ReservedField {
        /// The field name.
        name: String,
    },
    /// A `key=value` field argument had no `=` or an empty key.
    #[error("field {0:?} is not key=value")]
    BadField(String),
    /// A record file is not JSON, or not a JSON object.
    #[error("{path} is not a provenance record: {message}")]
    NotARecord {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The wrapped command could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The call was malformed: no command to wrap, for instance.
    #[error("{0}")]
    Usage(String),
    /// Wrapping a command is not possible here (a second wrapped command in one process, a signal handler the
    /// OS refused).
    #[error("{0}")]
    Unsupported(String),
}

/// Reserves a result file before any work is done (see [`tool_io::Claim`]): an existing file is refused
/// unless `overwrite`, anything but a regular file always, and a second run claiming the same name fails at
/// once instead of after its whole benchmark.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let out = provenance::claim_output(dir.path().join("result.json"), false)?;
/// assert!(provenance::claim_output(out.path(), false).is_err()); // taken
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn claim_output(path: impl AsRef<Path>, overwrite: bool) -> Result<Claim, Error> {
    Ok(Claim::new(path, overwrite)?)
}

/// For the one-call harnesses, which return the work's result and have no other channel: says on stderr
/// when the record went beside its name because a file appeared there during the run.
pub(crate) fn say_where(written: &tool_io::Written) {
    if let Some(n) = written.notice() {
        tool_io::terminal::note(&format!("provenance: {n}"));
    }
}
