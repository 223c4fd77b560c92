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
mod cmd;
mod coverage;
mod cuda;
pub mod diff;
mod environment;
mod git;
mod git_tree;
mod gpu;
mod harness;
mod host;
mod host_during;
mod probe;
mod procs;
pub mod record_json;
mod time;
mod verdict;
pub mod wrap;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

pub use build_info::{BuildInfo, LibraryBuild, ProgramBuild};
pub use coverage::{Coverage, GpuCoverage, MIN_COVERAGE_FRACTION};
pub use cuda::{CudaSearch, CudaVersions, FoundVersion};
pub use environment::{EnvClass, Environment, Signal, detect_environment};
pub use git::{GitInfo, MAX_LISTED, git_info};
pub use gpu::{GpuBackend, MAX_TIMELINE_SAMPLES, Timeline};
pub use gpu_monitor;
pub use harness::{Recorded, record};
pub use host::{CpuFreq, HostInfo, LoadAvg, cpu_freq, host_info, loadavg, windows_cpu_percent};
pub use host_during::{HostDuring, MinMax, Spread};
pub use probe::Probe;
pub use tool_io::Claim;
pub use verdict::{
    BUSY_UTIL_PERCENT, Check, Flag, THROTTLE_MIN_FRACTION, THROTTLE_POLICIES, THROTTLE_REASONS,
    Unchecked, Verdict, WINDOWS_BUSY_PERCENT,
};

/// Version of the record's layout. Raised when a key changes meaning or moves; adding a key does not raise it.
pub const SCHEMA_VERSION: u32 = 1;

/// Top-level keys the record writes itself; user fields may not take them.
pub const RESERVED_KEYS: [&str; 22] = [
    "schema_version",
    "time_utc",
    "finished_utc",
    "git",
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

/// A provenance record being set up: user fields and options, before [`Provenance::start`].
#[derive(Debug, Clone)]
pub struct Provenance {
    fields: BTreeMap<String, Value>,
    monitor: gpu_monitor::MonitorConfig,
    repo_dir: Option<PathBuf>,
    program: Probe<ProgramBuild>,
    command_line: Vec<String>,
    windows_load: bool,
}

impl Default for Provenance {
    fn default() -> Self {
        Self::new()
    }
}

impl Provenance {
    /// A record with no user fields, the default monitor configuration, git read from the current directory
    /// (the program's crate directory once [`Provenance::program`] is given) and the command line of this
    /// process.
    pub fn new() -> Self {
        Provenance {
            fields: BTreeMap::new(),
            monitor: gpu::default_config(),
            repo_dir: None,
            program: Probe::unavailable(
                "the program did not name itself (Provenance::program(provenance::program!()))",
            ),
            command_line: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            windows_load: true,
        }
    }

    /// Adds a user field, written at the top level of the record (e.g. `weights = "bf16"`). Fails if the
    /// name is one of the record's own keys, or if the value holds NaN or infinity.
    ///
    /// ```
    /// use provenance::Provenance;
    /// let p = Provenance::new()
    ///     .program(provenance::program!())
    ///     .field("weights", "bf16")?
    ///     .interval_ms(100)
    ///     .repo_dir(".")
    ///     .command_line(vec!["bench".into(), "--batch".into(), "8".into()])
    ///     .windows_load(false);
    /// assert!(p.clone().field("git", 1).is_err()); // one of the record's own keys
    /// assert!(p.field("tps", f64::NAN).is_err());
    /// # Ok::<(), provenance::Error>(())
    /// ```
    pub fn field(mut self, key: impl Into<String>, value: impl Serialize) -> Result<Self, Error> {
        insert_field(&mut self.fields, key.into(), value)?;
        Ok(self)
    }

    /// Names the benchmark program (use [`program!`] in the calling crate).
    pub fn program(mut self, program: ProgramBuild) -> Self {
        self.program = Probe::Value(program);
        self
    }

    /// The GPU monitor's sampling interval in milliseconds.
    pub fn interval_ms(mut self, ms: u64) -> Self {
        gpu::set_interval_ms(&mut self.monitor, ms);
        self
    }

    /// The full GPU monitor configuration (backend, GPU selection, nvidia-smi path, interval).
    pub fn monitor_config(mut self, config: gpu_monitor::MonitorConfig) -> Self {
        self.monitor = config;
        self
    }

    /// Where to read git state from (default: the program's own crate directory when it named itself with
    /// [`program!`], else the current directory).
    pub fn repo_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.repo_dir = Some(dir.into());
        self
    }

    /// The command line to record (default: this process's arguments).
    pub fn command_line(mut self, argv: Vec<String>) -> Self {
        self.command_line = argv;
        self
    }

    /// Whether to read Windows' CPU load on WSL (default true; it costs about two seconds before and after).
    pub fn windows_load(mut self, enabled: bool) -> Self {
        self.windows_load = enabled;
        self
    }

    /// Reads the static part and the `before` snapshot, then starts the GPU monitor. Call it just before the
    /// timed region: everything slow happens here, not inside the region (its cost is in `recorder_s.start`).
    ///
    /// ```
    /// let running = provenance::Provenance::new().interval_ms(100).start();
    /// // ... the timed region ...
    /// let record = running.finish();
    /// assert!(record.monitored_s >= 0.0 && record.recorder_s.start > 0.0);
    /// ```
    pub fn start(self) -> Running {
        let began = Instant::now();
        let time_utc = time::iso_utc(SystemTime::now());
        let repo = self
            .repo_dir
            .clone()
            .or_else(|| self.program.value().and_then(|p| p.manifest_dir.clone()))
            .unwrap_or_else(|| PathBuf::from("."));
        let git = git_info(&repo);
        let host = host_info();
        let environment = detect_environment();
        let is_wsl = self.windows_load && environment.class == EnvClass::Wsl;
        let mut opened = gpu::Gpus::open(&self.monitor);
        let (gpus, gpu_backend) = opened.identities();
        let before = snapshot(opened.sample(), is_wsl);
        let host_sampler = host_during::HostSampler::start(self.monitor.interval_ms);
        let monitor = opened.session();
        let static_part = Static {
            time_utc,
            git,
            gpus,
            gpu_backend,
            build: BuildInfo::collect(self.program),
            command_line: self.command_line,
            host,
            environment,
            fields: self.fields,
        };
        Running {
            static_part,
            before,
            monitor,
            host_sampler,
            opened,
            is_wsl,
            own_pids: BTreeSet::from([std::process::id()]),
            interrupted: None,
            start_s: began.elapsed().as_secs_f64(),
            t0: Instant::now(),
        }
    }
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

/// Fails with [`Error::NonFinite`] naming the dotted path under `key` of the first NaN or infinity in `value`.
fn check_finite<T: Serialize + ?Sized>(value: &T, key: &str) -> Result<(), Error> {
    tool_io::check_finite(value).map_err(|e| Error::NonFinite {
        path: match e.json_path.as_str() {
            "$" => key.to_owned(),
            p if p.starts_with('[') => format!("{key}{p}"),
            p => format!("{key}.{p}"),
        },
        value: e.value,
    })
}

fn insert_field(
    fields: &mut BTreeMap<String, Value>,
    key: String,
    value: impl Serialize,
) -> Result<(), Error> {
    if RESERVED_KEYS.contains(&key.as_str()) {
        return Err(Error::ReservedField { name: key });
    }
    check_finite(&value, &key)?;
    let v = serde_json::to_value(value).map_err(|e| Error::Serialize {
        what: key.clone(),
        message: e.to_string(),
    })?;
    fields.insert(key, v);
    Ok(())
}

/// Parses a `key=value` field argument. The value is read as JSON when it is valid JSON (`n=3`, `ok=true`,
/// `tags=["a"]`) and kept as a string otherwise (`weights=bf16`); quote it to force a string (`v="3"`).
///
/// A number is never rounded silently: a value whose numbers JSON as written here cannot hold exactly (an
/// integer beyond 64 bits, a decimal with more digits than a double keeps) is kept as the string given.
///
/// ```
/// use serde_json::json;
/// assert_eq!(provenance::parse_field("n=3")?, ("n".to_owned(), json!(3)));
/// assert_eq!(provenance::parse_field("weights=bf16")?.1, json!("bf16"));
/// assert_eq!(
///     provenance::parse_field("id=123456789012345678901234567890")?.1,
///     json!("123456789012345678901234567890")
/// );
/// assert!(provenance::parse_field("no-equals").is_err());
/// # Ok::<(), provenance::Error>(())
/// ```
pub fn parse_field(arg: &str) -> Result<(String, Value), Error> {
    let (k, v) = arg
        .split_once('=')
        .ok_or_else(|| Error::BadField(arg.to_owned()))?;
    if k.is_empty() {
        return Err(Error::BadField(arg.to_owned()));
    }
    let value = match serde_json::from_str::<Value>(v) {
        Ok(parsed) if numbers_exact(v) => parsed,
        _ => Value::String(v.to_owned()),
    };
    Ok((k.to_owned(), value))
}

/// Whether every number in the JSON text `json` keeps its exact value once parsed: an integer within i64 or
/// u64 (kept as an integer), or a decimal whose double prints back as the same decimal value.
fn numbers_exact(json: &str) -> bool {
    let b = json.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() {
                    match b[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                if !number_exact(&json[start..i]) {
                    return false;
                }
            }
            _ => i += 1,
        }
    }
    true
}

fn number_exact(literal: &str) -> bool {
    if !literal.contains(['.', 'e', 'E']) {
        return literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok();
    }
    match literal.parse::<f64>() {
        // `{:e}` prints the shortest decimal that reads back as the same double.
        Ok(x) if x.is_finite() => decimal(literal) == decimal(&format!("{x:e}")),
        _ => false,
    }
}

/// A decimal literal's value: (negative, significant digits without leading or trailing zeros, power of ten
/// of the last digit); zero is `(false, "", 0)`.
fn decimal(literal: &str) -> (bool, String, i64) {
    let (negative, rest) = match literal.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, literal),
    };
    let (mantissa, mut exp) = match rest.find(['e', 'E']) {
        Some(i) => (
            &rest[..i],
            rest[i + 1..].parse::<i64>().unwrap_or(i64::MAX / 2),
        ),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    exp = exp.saturating_sub(frac.len() as i64);
    let mut digits = format!("{int}{frac}").trim_start_matches('0').to_owned();
    while digits.ends_with('0') {
        digits.pop();
        exp = exp.saturating_add(1);
    }
    if digits.is_empty() {
        return (false, String::new(), 0);
    }
    (negative, digits, exp)
}

struct Static {
    time_utc: String,
    git: GitInfo,
    gpus: Probe<Vec<gpu_monitor::GpuIdentity>>,
    gpu_backend: Probe<GpuBackend>,
    build: BuildInfo,
    command_line: Vec<String>,
    host: HostInfo,
    environment: Environment,
    fields: BTreeMap<String, Value>,
}

/// A record whose timed region is running. Created by [`Provenance::start`]; ended by [`Running::finish`].
pub struct Running {
    static_part: Static,
    before: Snapshot,
    monitor: gpu::Session,
    host_sampler: host_during::HostSampler,
    opened: gpu::Gpus,
    is_wsl: bool,
    own_pids: BTreeSet<u32>,
    interrupted: Option<String>,
    start_s: f64,
    t0: Instant,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("started", &self.static_part.time_utc)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// Adds a user field known only during or after the run (the benchmark's own result, for instance).
    ///
    /// ```
    /// let mut running = provenance::Provenance::new().start();
    /// running.field("tokens_per_s", 1234.5)?;
    /// running.mark_interrupted("the user's own stop button");
    /// let record = running.finish();
    /// assert!(record.interrupted && record.verdict.has(provenance::Check::Interrupted));
    /// assert_eq!(record.fields["tokens_per_s"], 1234.5);
    /// # Ok::<(), provenance::Error>(())
    /// ```
    pub fn field(&mut self, key: impl Into<String>, value: impl Serialize) -> Result<(), Error> {
        insert_field(&mut self.static_part.fields, key.into(), value)
    }

    /// Counts `pid` (and what it starts) as ours when telling our GPU processes from others'. This process is
    /// always counted; a wrapper adds the command it runs.
    pub fn add_own_pid(&mut self, pid: u32) {
        self.own_pids.insert(pid);
    }

    /// GPU samples the monitor has recorded so far (all GPUs together). Lets a caller make sure a short region
    /// was sampled at all before ending it.
    pub fn gpu_samples(&self) -> usize {
        self.monitor.samples()
    }

    /// Marks the run as interrupted, with what interrupted it (e.g. `SIGINT`).
    pub fn mark_interrupted(&mut self, reason: impl Into<String>) {
        self.interrupted = Some(reason.into());
    }

    /// Notes the current descendants of the processes counted as ours (see [`Running::add_own_pid`]). Called by
    /// a wrapper while its command still runs, so that the command's own GPU processes can be told apart from
    /// other users' after they have exited.
    pub fn note_own_processes(&mut self) {
        let tree = procs::tree_of(&self.own_pids, Path::new("/proc"));
        self.own_pids.extend(tree);
    }

    /// Stops the monitor, reads the `after` snapshot and judges the run. Call it just after the timed region.
    pub fn finish(mut self) -> Record {
        let ended = Instant::now();
        let monitored_s = round_ms(ended.duration_since(self.t0).as_secs_f64());
        let (during, coverage, timeline) = self.monitor.stop();
        let host_during = self.host_sampler.stop();
        // After the stop, so the walk of /proc is not inside the monitored region; our processes are still alive.
        self.own_pids
            .extend(procs::tree_of(&self.own_pids, Path::new("/proc")));
        let after = snapshot(self.opened.sample(), self.is_wsl);
        let s = self.static_part;
        let first = s.gpus.as_ref().and_then(|g| match g.first() {
            Some(id) => Probe::Value(id),
            None => Probe::unavailable("no GPU in use"),
        });
        let mut record = Record {
            schema_version: SCHEMA_VERSION,
            time_utc: s.time_utc,
            finished_utc: time::iso_utc(SystemTime::now()),
            gpu_name: first.clone().and_then(gpu::name),
            driver: first.and_then(gpu::driver),
            cpu_count: s.host.cpu_count.clone(),
            git: s.git,
            gpus: s.gpus,
            gpu_backend: s.gpu_backend,
            build: s.build,
            command_line: s.command_line,
            host: s.host,
            environment: s.environment,
            before: self.before,
            during,
            coverage,
            timeline,
            host_during,
            after,
            monitored_s,
            recorder_s: RecorderCost {
                start: round_ms(self.start_s),
                finish: 0.0,
            },
            interrupted: self.interrupted.is_some(),
            command: None,
            verdict: Verdict::default(),
            fields: s.fields,
        };
        record.verdict = verdict::judge(&record, self.interrupted.as_deref(), &self.own_pids);
        record.recorder_s.finish = round_ms(ended.elapsed().as_secs_f64());
        record
    }
}

fn round_ms(s: f64) -> f64 {
    let r = (s * 1000.0).round() / 1000.0;
    // -0.0 is written as 0.
    if r == 0.0 { 0.0 } else { r }
}

/// Host and GPU state at one instant, before or after the timed region.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// When it was taken.
    pub time_utc: String,
    /// The first GPU in use (the seed's `gpu`, one GPU's sample).
    pub gpu: Probe<gpu_monitor::Sample>,
    /// Every GPU in use.
    pub gpus: Probe<Vec<gpu_monitor::Sample>>,
    /// `/proc/loadavg`.
    pub loadavg: Probe<LoadAvg>,
    /// The one-minute load average again, under the seed's key name (which it used on any Linux, not only WSL).
    pub wsl_loadavg_1m: Probe<f64>,
    /// CPU clock.
    pub cpu_freq: Probe<CpuFreq>,
    /// Windows' CPU load, on WSL only.
    pub windows_cpu_percent: Probe<f64>,
}

fn snapshot(gpus: Probe<Vec<gpu_monitor::Sample>>, is_wsl: bool) -> Snapshot {
    let load = loadavg();
    Snapshot {
        time_utc: time::iso_utc(SystemTime::now()),
        gpu: gpus.as_ref().and_then(|g| match g.first() {
            Some(s) => Probe::Value(s.clone()),
            None => Probe::unavailable("no GPU in use"),
        }),
        gpus,
        wsl_loadavg_1m: load.as_ref().map(|l| l.one),
        loadavg: load,
        cpu_freq: cpu_freq(),
        windows_cpu_percent: windows_cpu_percent(is_wsl),
    }
}

/// What recording cost outside the timed region: the work a benchmark waits for before and after it, MEASURED
/// on the host's monotonic clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecorderCost {
    /// [`Provenance::start`]: git, host, GPU identity, the `before` snapshot and starting the monitor, s.
    pub start: f64,
    /// [`Running::finish`]: stopping the monitor, the `after` snapshot and the verdict, s.
    pub finish: f64,
}

/// What the wrapper knows about the command it ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandRun {
    /// The command and its arguments.
    pub argv: Vec<String>,
    /// Its process id.
    pub pid: Option<u32>,
    /// Its exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did (`SIGINT`, …).
    pub signal: Option<String>,
    /// Signals the wrapper received while it ran, in order (forwarded to it unless the terminal had already
    /// delivered them to it).
    pub signals_received: Vec<String>,
    /// The exit status the wrapper itself returns: the exit code, or 128 + the signal number.
    pub wrapper_exit_code: i32,
}

/// The provenance record: everything known about where a number came from.
///
/// Serialises to the JSON described in `docs/provenance.md`. Unavailable probes become `null`, with their reasons
/// collected under `unavailable`; user fields sit at the top level, as in the seed.
#[derive(Debug, Clone)]
pub struct Record {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// When the record was started (UTC, seconds).
    pub time_utc: String,
    /// When it was finished.
    pub finished_utc: String,
    /// Repository state.
    pub git: GitInfo,
    /// The first GPU's name (the seed's key).
    pub gpu_name: Probe<String>,
    /// The first GPU's driver version (the seed's key).
    pub driver: Probe<String>,
    /// Logical CPUs online (the seed's key).
    pub cpu_count: Probe<usize>,
    /// Identity of every GPU in use.
    pub gpus: Probe<Vec<gpu_monitor::GpuIdentity>>,
    /// The backend that read the identities.
    pub gpu_backend: Probe<GpuBackend>,
    /// Versions and toolchain.
    pub build: BuildInfo,
    /// The command line of the process that made the record.
    pub command_line: Vec<String>,
    /// The machine.
    pub host: HostInfo,
    /// Bare metal, VM, container or WSL, with the signals.
    pub environment: Environment,
    /// State just before the timed region.
    pub before: Snapshot,
    /// The GPU monitor's summary of the timed region. Present even without a GPU: it then has no samples and
    /// says which backends were tried and why each was unavailable.
    pub during: gpu_monitor::Summary,
    /// How much of the timed region the monitor's samples cover (written as `during.region_coverage`).
    pub coverage: Coverage,
    /// The monitor's readings over the timed region, thinned to at most [`MAX_TIMELINE_SAMPLES`] (written as
    /// `during.timeline`).
    pub timeline: Timeline,
    /// The host's load and CPU busy % over the timed region (written as `during.host`, and the load's range
    /// as `during.wsl_loadavg_1m`).
    pub host_during: HostDuring,
    /// State just after the timed region.
    pub after: Snapshot,
    /// Length of the timed region, seconds (host monotonic clock).
    pub monitored_s: f64,
    /// What recording cost before and after the timed region.
    pub recorder_s: RecorderCost,
    /// Whether the run was interrupted.
    pub interrupted: bool,
    /// The wrapped command, when the record was made by [`wrap`].
    pub command: Option<CommandRun>,
    /// The clean-run verdict.
    pub verdict: Verdict,
    /// User fields.
    pub fields: BTreeMap<String, Value>,
}

impl Record {
    /// The record as ordered `(key, value)` pairs, with unavailable probes lifted into `unavailable`; fails on
    /// NaN or infinity.
    fn entries(&self) -> Result<Vec<(String, Value)>, Error> {
        let mut out: Vec<(String, Value)> = Vec::new();
        let mut reasons = BTreeMap::new();
        let mut put = |key: &str, value: &dyn erased::Ser| -> Result<(), Error> {
            let mut v = value.to_checked_value(key)?;
            no_negative_zero(&mut v);
            if key == "before" || key == "after" {
                one_shot_without_monitor_time(&mut v);
            }
            probe::lift_reasons(&mut v, key, &mut reasons);
            out.push((key.to_owned(), v));
            Ok(())
        };
        put("schema_version", &self.schema_version)?;
        put("time_utc", &self.time_utc)?;
        put("finished_utc", &self.finished_utc)?;
        put("git", &self.git)?;
        put("gpu_name", &self.gpu_name)?;
        put("driver", &self.driver)?;
        put("cpu_count", &self.cpu_count)?;
        for (k, v) in &self.fields {
            // Guarded in `field`; checked again because the map is public.
            if RESERVED_KEYS.contains(&k.as_str()) {
                return Err(Error::ReservedField { name: k.clone() });
            }
            put(k, v)?;
        }
        put("gpus", &self.gpus)?;
        put("gpu_backend", &self.gpu_backend)?;
        put("build", &self.build)?;
        put("command_line", &self.command_line)?;
        put("host", &self.host)?;
        put("environment", &self.environment)?;
        put("before", &self.before)?;
        put("during", &self.during_value()?)?;
        put("after", &self.after)?;
        put("monitored_s", &self.monitored_s)?;
        put("recorder_s", &self.recorder_s)?;
        put("interrupted", &self.interrupted)?;
        put("command", &self.command)?;
        put("verdict", &self.verdict)?;
        let reasons = serde_json::to_value(&reasons).map_err(|e| Error::Serialize {
            what: "unavailable".to_owned(),
            message: e.to_string(),
        })?;
        out.push(("unavailable".to_owned(), reasons));
        Ok(out)
    }

    /// `during`: the monitor's summary with what this crate measured over the same region beside it.
    fn during_value(&self) -> Result<Value, Error> {
        use erased::Ser;
        let mut during = self.during.to_checked_value("during")?;
        if let Value::Object(m) = &mut during {
            m.insert(
                "region_coverage".to_owned(),
                self.coverage.to_checked_value("during.region_coverage")?,
            );
            m.insert(
                "host".to_owned(),
                self.host_during.to_checked_value("during.host")?,
            );
            let mut timeline = self.timeline.to_checked_value("during.timeline")?;
            no_negative_zero(&mut timeline);
            m.insert("timeline".to_owned(), timeline);
            m.insert(
                "wsl_loadavg_1m".to_owned(),
                self.host_during
                    .wsl_loadavg_1m()
                    .to_checked_value("during.wsl_loadavg_1m")?,
            );
        }
        Ok(during)
    }

    /// Fails as writing would: NaN or infinity, a user field under a reserved key.
    pub(crate) fn check(&self) -> Result<(), Error> {
        self.entries().map(drop)
    }

    /// The record as a JSON object (keys sorted, as `serde_json::Value` keeps them).
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let out = provenance::claim_output(dir.path().join("r.json"), false)?;
    /// let record = provenance::Provenance::new().start().finish();
    /// let v = record.to_value()?;
    /// assert_eq!(v["schema_version"], provenance::SCHEMA_VERSION);
    /// assert!(record.to_json_pretty()?.starts_with("{"));
    /// record.write(&out)?; // atomically, refusing NaN
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_value(&self) -> Result<Value, Error> {
        Ok(Value::Object(
            self.entries()?.into_iter().collect::<Map<String, Value>>(),
        ))
    }

    /// The record as pretty JSON, keys in the documented order.
    pub fn to_json_pretty(&self) -> Result<String, Error> {
        self.entries()?;
        serde_json::to_string_pretty(self).map_err(|e| Error::Serialize {
            what: "record".to_owned(),
            message: e.to_string(),
        })
    }

    /// Writes the record alone to a claimed output. Returns where it went: the claimed path, or beside it
    /// when a file appeared there during the run ([`tool_io::Written`]: that file is kept, nothing is lost).
    pub fn write(&self, out: &Claim) -> Result<tool_io::Written, Error> {
        // Checked here first for a typed error; serialising inside the writer would only carry its text.
        self.entries()?;
        Ok(out.write_json(self)?)
    }

    /// Attaches what the wrapper knows about the command it ran, and judges its end: a non-zero exit or a
    /// signal raises the `command_failed` verdict flag.
    pub fn set_command(&mut self, command: CommandRun) {
        self.verdict
            .set(Check::CommandFailed, verdict::command_check(&command));
        self.command = Some(command);
    }
}

impl Serialize for Record {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entries = self.entries().map_err(serde::ser::Error::custom)?;
        let mut m = s.serialize_map(Some(entries.len()))?;
        for (k, v) in &entries {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Writes `-0.0` as `0.0`: a reading rounded to zero from below is zero, and a reader comparing values as
/// text (or a `diff` of two records) must not see two zeros.
fn no_negative_zero(v: &mut Value) {
    match v {
        Value::Number(n) if n.as_f64().is_some_and(|x| x == 0.0 && x.is_sign_negative()) => {
            *v = Value::from(0.0);
        }
        Value::Array(a) => a.iter_mut().for_each(no_negative_zero),
        Value::Object(m) => m.values_mut().for_each(no_negative_zero),
        _ => {}
    }
}

/// Drops `t_s` from the one-shot GPU readings of `before` and `after`: it counts seconds since a monitor
/// started, and a one-shot reading has no monitor; the snapshot's `time_utc` says when it was taken.
fn one_shot_without_monitor_time(snapshot: &mut Value) {
    let Some(m) = snapshot.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(g)) = m.get_mut("gpu") {
        g.remove("t_s");
    }
    if let Some(Value::Array(gs)) = m.get_mut("gpus") {
        for g in gs.iter_mut().filter_map(Value::as_object_mut) {
            g.remove("t_s");
        }
    }
}

/// Object-safe "serialise me into a checked JSON value", so `entries` can take fields of different types.
mod erased {
    use super::*;

    pub(super) trait Ser {
        fn to_checked_value(&self, key: &str) -> Result<Value, Error>;
    }

    impl<T: Serialize> Ser for T {
        fn to_checked_value(&self, key: &str) -> Result<Value, Error> {
            check_finite(self, key)?;
            serde_json::to_value(self).map_err(|e| Error::Serialize {
                what: key.to_owned(),
                message: e.to_string(),
            })
        }
    }
}
