//! The record: what it holds, and its JSON (unavailable probes lifted into `unavailable`, NaN refused).

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::{
    BuildInfo, Check, Claim, Coverage, Environment, Error, GitInfo, GpuBackend, HostDuring,
    HostInfo, InterpreterVersions, Probe, RESERVED_KEYS, Snapshot, Timeline, Verdict, probe,
    verdict,
};
/// What recording cost outside the timed region: the work a benchmark waits for before and after it, MEASURED
/// on the host's monotonic clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecorderCost {
    /// [`Provenance::start`](crate::Provenance::start): git, host, GPU identity, the `before` snapshot and starting the monitor, s.
    pub start: f64,
    /// [`Running::finish`](crate::Running::finish): stopping the monitor, the `after` snapshot and the verdict, s.
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
    /// The processes the command left running when it exited (its background workers), and what the wrapper
    /// did about them (`child_run::left`); `None` when not known (not started, or no `/proc`).
    pub left_running: Option<child_run::left::LeftRunning>,
}

/// The provenance record: everything known about where a number came from.
///
/// Serialises to the JSON described in `docs/provenance.md`. Unavailable probes become `null`, with their reasons
/// collected under `unavailable`; user fields sit at the top level, as in the seed.
#[derive(Debug, Clone)]
pub struct Record {
    /// [`SCHEMA_VERSION`](crate::SCHEMA_VERSION).
    pub schema_version: u32,
    /// When the record was started (UTC, seconds).
    pub time_utc: String,
    /// When it was finished.
    pub finished_utc: String,
    /// Repository state.
    pub git: GitInfo,
    /// The GPU's name (the seed's key): torch's device when the interpreter gave it
    /// ([`InterpreterVersions::gpu_name`](crate::InterpreterVersions::gpu_name)), else the first GPU in use.
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
    /// The interpreter's own versions, when a Python benchmark gave them (written as the seed's top-level
    /// `python`, `torch`, `cuda`, `cudnn`; absent otherwise).
    pub interpreter: Option<InterpreterVersions>,
    /// State just before the timed region.
    pub before: Snapshot,
    /// The GPU monitor's summary of the timed region. Present even without a GPU: it then has no samples and
    /// says which backends were tried and why each was unavailable.
    pub during: gpu_monitor::Summary,
    /// How much of the timed region the monitor's samples cover (written as `during.region_coverage`).
    pub coverage: Coverage,
    /// The monitor's readings over the timed region, thinned to at most [`MAX_TIMELINE_SAMPLES`](crate::MAX_TIMELINE_SAMPLES) (written as
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
    /// The wrapped command, when the record was made by [`wrap`](crate::wrap).
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
        // The seed's place for them: after `git`.
        if let Some(i) = &self.interpreter {
            put("python", &i.python)?;
            put("torch", &i.torch)?;
            put("cuda", &i.cuda)?;
            put("cudnn", &i.cudnn)?;
        }
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
    use crate::field::check_finite;

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
