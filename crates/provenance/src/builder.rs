//! The builder: user fields and options, before the timed region ([`Provenance::start`]).

use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use crate::field::insert_field;
use crate::running::{Static, snapshot};
use crate::{
    BuildInfo, EnvClass, Error, InterpreterVersions, Probe, ProgramBuild, Running,
    detect_environment, git_info, gpu, host_during, host_info, time,
};

/// A provenance record being set up: user fields and options, before [`Provenance::start`].
#[derive(Debug, Clone)]
pub struct Provenance {
    pub(crate) fields: BTreeMap<String, Value>,
    pub(crate) monitor: gpu_monitor::MonitorConfig,
    pub(crate) repo_dir: Option<PathBuf>,
    pub(crate) program: Probe<ProgramBuild>,
    pub(crate) command_line: Vec<String>,
    pub(crate) windows_load: bool,
    pub(crate) interpreter: Option<InterpreterVersions>,
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
            interpreter: None,
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

    /// Names the benchmark program (use [`program!`](crate::program!) in the calling crate).
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

    /// The GPU monitor configuration the record will use: the default ([`Provenance::new`]: the seed's 500 ms,
    /// the GPUs `CUDA_VISIBLE_DEVICES` names) with the changes made so far. To change one setting and keep the
    /// rest, clone it and give it back with [`Provenance::monitor_config`].
    ///
    /// ```
    /// let p = provenance::Provenance::new();
    /// let mut config = p.monitor().clone();
    /// config.read_processes = false;
    /// let p = p.monitor_config(config);
    /// assert_eq!(p.monitor().interval_ms, 500);
    /// ```
    pub fn monitor(&self) -> &gpu_monitor::MonitorConfig {
        &self.monitor
    }

    /// Where to read git state from (default: the program's own crate directory when it named itself with
    /// [`program!`](crate::program!), else the current directory).
    pub fn repo_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.repo_dir = Some(dir.into());
        self
    }

    /// The command line to record (default: this process's arguments).
    pub fn command_line(mut self, argv: Vec<String>) -> Self {
        self.command_line = argv;
        self
    }

    /// Versions only the interpreter running the benchmark knows (a Python script's `python`, `torch`,
    /// `cuda`, `cudnn` and torch's GPU), written under the seed's keys; see [`InterpreterVersions`]. A program
    /// that does not name itself with [`Provenance::program`] is then a script: `build.program` says so, and
    /// the `debug_build` check has no build to judge.
    pub fn interpreter(mut self, versions: InterpreterVersions) -> Self {
        if self.program.value().is_none() {
            self.program = Probe::unavailable(
                "a script run by an interpreter: no debug or release build of its own to check (its versions are \
                 python, torch, cuda, cudnn)",
            );
        }
        self.interpreter = Some(versions);
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
            interpreter: self.interpreter,
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
