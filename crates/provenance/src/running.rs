//! The timed region: the static part read at start, the `before`/`after` snapshots, and
//! [`Running::finish`], which stops the monitor and judges the run into a [`Record`].

use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Instant, SystemTime};

use crate::field::insert_field;
use crate::{
    BuildInfo, CpuFreq, Environment, Error, GitInfo, GpuBackend, HostInfo, InterpreterVersions,
    LoadAvg, Probe, Record, RecorderCost, SCHEMA_VERSION, Verdict, cpu_freq, gpu, host_during,
    loadavg, procs, time, verdict, windows_cpu_percent,
};

/// What is read once at start and written unchanged.
pub(crate) struct Static {
    pub(crate) time_utc: String,
    pub(crate) git: GitInfo,
    pub(crate) gpus: Probe<Vec<gpu_monitor::GpuIdentity>>,
    pub(crate) gpu_backend: Probe<GpuBackend>,
    pub(crate) build: BuildInfo,
    pub(crate) command_line: Vec<String>,
    pub(crate) host: HostInfo,
    pub(crate) environment: Environment,
    pub(crate) interpreter: Option<InterpreterVersions>,
    pub(crate) fields: BTreeMap<String, Value>,
}

/// A record whose timed region is running. Created by [`Provenance::start`](crate::Provenance::start); ended by [`Running::finish`].
pub struct Running {
    pub(crate) static_part: Static,
    pub(crate) before: Snapshot,
    pub(crate) monitor: gpu::Session,
    pub(crate) host_sampler: host_during::HostSampler,
    pub(crate) opened: gpu::Gpus,
    pub(crate) is_wsl: bool,
    pub(crate) own_pids: BTreeSet<u32>,
    pub(crate) interrupted: Option<String>,
    pub(crate) start_s: f64,
    pub(crate) t0: Instant,
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
        // The GPU the interpreter's torch computes on, when it said; else the first GPU in use.
        let gpu_name = match s.interpreter.as_ref().and_then(|i| i.gpu_name.clone()) {
            Some(torch) => torch,
            None => first.clone().and_then(gpu::name),
        };
        let mut record = Record {
            schema_version: SCHEMA_VERSION,
            time_utc: s.time_utc,
            finished_utc: time::iso_utc(SystemTime::now()),
            gpu_name,
            driver: first.and_then(gpu::driver),
            cpu_count: s.host.cpu_count.clone(),
            git: s.git,
            gpus: s.gpus,
            gpu_backend: s.gpu_backend,
            build: s.build,
            command_line: s.command_line,
            host: s.host,
            environment: s.environment,
            interpreter: s.interpreter,
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

pub(crate) fn snapshot(gpus: Probe<Vec<gpu_monitor::Sample>>, is_wsl: bool) -> Snapshot {
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
