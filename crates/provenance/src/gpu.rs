//! The seam to `gpu-monitor`: identity, one-shot samples, the monitored region, and the GPU parts of the verdict.

use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gpu_monitor::{
    BackendKind, GpuIdentity, GpuProcess, GpuSelection, GpuSummary, Monitor, MonitorConfig,
    Rejection, Sample, Summary, Unavailable,
};

use crate::environment::{EnvClass, Environment};
use crate::{Probe, Snapshot, procs};

/// The monitor configuration a record uses unless told otherwise: the seed's 500 ms, and the GPUs a CUDA
/// program started now would use (`CUDA_VISIBLE_DEVICES`; all when unset), since those are the GPUs in use.
pub(crate) fn default_config() -> MonitorConfig {
    MonitorConfig {
        gpus: GpuSelection::CudaVisibleDevices,
        ..MonitorConfig::default()
    }
}

pub(crate) fn set_interval_ms(cfg: &mut MonitorConfig, ms: u64) {
    cfg.interval_ms = ms.max(1);
}

/// Which backend answered the identity query, and the ones tried before it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuBackend {
    /// The backend used.
    pub backend: BackendKind,
    /// Backends tried and not used, with the reason.
    pub rejected: Vec<Rejection>,
}

/// The reason of every GPU probe and check that has nothing to read because no backend could be used. Each
/// backend's own reason is written once in a record, under `during.rejected` (the monitor is given the
/// opening's rejections, see `Gpus::session`); a record without a GPU repeated it in a dozen places.
pub const NO_GPU_BACKEND: &str = "no GPU backend (each backend's reason: during.rejected)";

/// The GPUs of one record, opened once: identity, the readings before and after, and the monitor all use
/// one backend, so a record costs one `nvidia-smi` opening before the timed region instead of one per
/// question (what each query took is in `recorder_s`). When no backend opens, each question says why.
pub(crate) struct Gpus {
    config: MonitorConfig,
    source: Result<gpu_monitor::GpuSource, Unavailable>,
}

impl Gpus {
    pub fn open(config: &MonitorConfig) -> Gpus {
        Gpus {
            config: config.clone(),
            source: gpu_monitor::GpuSource::open(config),
        }
    }

    /// Why a question has no answer when the source did not open: [`NO_GPU_BACKEND`] when the monitor's
    /// `during.rejected` will say why (see [`session`](Self::session)), else the opening's own words.
    fn unopened_reason(why: &Unavailable) -> String {
        match why {
            Unavailable::NoBackend { reasons } if !reasons.is_empty() => NO_GPU_BACKEND.to_owned(),
            other => other.to_string(),
        }
    }

    /// The identity of every selected GPU, and the backend that gave it.
    pub fn identities(&mut self) -> (Probe<Vec<GpuIdentity>>, Probe<GpuBackend>) {
        match &mut self.source {
            Ok(s) => {
                let id = s.identity();
                (
                    Probe::Value(id.gpus),
                    Probe::Value(GpuBackend {
                        backend: id.backend,
                        rejected: id.rejected,
                    }),
                )
            }
            Err(why) => (
                Probe::unavailable(Self::unopened_reason(why)),
                Probe::unavailable(Self::unopened_reason(why)),
            ),
        }
    }

    /// One reading of every selected GPU, now.
    pub fn sample(&mut self) -> Probe<Vec<Sample>> {
        match &mut self.source {
            Ok(s) => s.sample_once().into(),
            Err(why) => Probe::unavailable(Self::unopened_reason(why)),
        }
    }

    /// The monitor over the timed region, on the opened backend (or, with none, one that records why: the
    /// opening's rejections, not a second try a moment later whose reasons would only repeat them).
    pub fn session(&self) -> Session {
        let samples = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&samples);
        let observer: gpu_monitor::Observer = Box::new(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        let monitor = match &self.source {
            Ok(s) => s.monitor(Some(observer)),
            Err(Unavailable::NoBackend { reasons }) if !reasons.is_empty() => {
                Monitor::start_unopened(self.config.clone(), reasons.clone(), Some(observer))
            }
            Err(_) => Monitor::start_with_observer(self.config.clone(), observer),
        };
        Session { monitor, samples }
    }
}

/// The GPU monitor over the timed region, counting samples as they arrive.
pub(crate) struct Session {
    monitor: Monitor,
    samples: Arc<AtomicUsize>,
}

impl Session {
    pub fn samples(&self) -> usize {
        self.samples.load(Ordering::Relaxed)
    }

    /// The summary (it exists even without a backend, and then says which backends were tried and why not),
    /// how much of the region the samples cover, and the readings kept for a timeline.
    pub fn stop(self) -> (Summary, crate::coverage::Coverage, Timeline) {
        let capture = self.monitor.stop();
        let summary = capture.summary();
        let coverage = crate::coverage::of(&capture);
        (
            summary,
            coverage,
            Timeline::thin(capture.samples, capture.kept_every),
        )
    }
}

/// At most this many readings (all GPUs together) are kept in a record for its timeline: at the default
/// 500 ms interval, 8 GPUs for a minute. Each is a few hundred bytes of JSON.
pub const MAX_TIMELINE_SAMPLES: usize = 1024;

/// The monitor's readings over the timed region as kept in the record (`during.timeline`), for the
/// clocks, power, utilisation and temperature over time that `provenance show --html` draws. MEASURED
/// readings, thinned evenly when there are more than [`MAX_TIMELINE_SAMPLES`]; the summary (`during.gpus`)
/// is always over every reading.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// The readings kept, in the monitor's order, with `t_s` (seconds since the monitor started) and `index`.
    pub samples: Vec<Sample>,
    /// One reading of each GPU kept in every `every` the monitor took (1: all kept): the monitor's own
    /// thinning of a long run (`kept_every`) times the record's.
    pub every: u64,
}

impl Timeline {
    /// Keeps each GPU's 1st, (1 + k)th, … of the readings the monitor kept (one in every `kept_every` it
    /// took), with k the smallest that keeps at most [`MAX_TIMELINE_SAMPLES`] in all.
    pub fn thin(samples: Vec<Sample>, kept_every: u64) -> Timeline {
        let k = samples.len().div_ceil(MAX_TIMELINE_SAMPLES).max(1);
        let mut seen: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
        let samples = samples
            .into_iter()
            .filter(|s| {
                let i = seen.entry(s.index).or_insert(0);
                let keep = i.is_multiple_of(k);
                *i += 1;
                keep
            })
            .collect();
        Timeline {
            samples,
            every: k as u64 * kept_every.max(1),
        }
    }
}

fn field(id: &GpuIdentity, value: Option<&String>, name: &str) -> Probe<String> {
    match value {
        Some(v) => Probe::Value(v.clone()),
        None => Probe::unavailable(
            id.unavailable
                .get(name)
                .cloned()
                .unwrap_or_else(|| format!("GPU {} did not report its {name}", id.index)),
        ),
    }
}

pub(crate) fn name(id: &GpuIdentity) -> Probe<String> {
    field(id, id.name.as_ref(), "name")
}

pub(crate) fn driver(id: &GpuIdentity) -> Probe<String> {
    field(id, id.driver_version.as_ref(), "driver_version")
}

pub(crate) fn label(s: &Sample) -> String {
    s.index.to_string()
}

/// Per-GPU throttle evidence from the monitor's summary: what the `throttled` check judges.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThrottleEvidence {
    pub gpu: String,
    /// Samples read.
    pub samples: usize,
    /// Samples in which each reason was set.
    pub reason_samples: Vec<(String, usize)>,
    /// Seconds covered by the violation counters, where the driver has them.
    pub span_s: Option<f64>,
    /// Seconds each violation-counter policy held the clocks down over that span.
    pub policy_time_s: Vec<(String, f64)>,
}

pub(crate) fn throttle_evidence(during: &Summary) -> Result<Vec<ThrottleEvidence>, String> {
    if during.backend.is_none() {
        return Err(no_backend(during));
    }
    let sampled: Vec<&GpuSummary> = during.gpus.iter().filter(|g| g.n_samples > 0).collect();
    if sampled.is_empty() {
        return Err(format!(
            "the {} backend recorded no samples",
            backend_name(during)
        ));
    }
    Ok(sampled
        .into_iter()
        .map(|g| {
            let t = g.throttle_time_s.as_ref();
            ThrottleEvidence {
                gpu: g.index.to_string(),
                samples: g.n_samples,
                reason_samples: g
                    .throttle_reason_samples
                    .iter()
                    .map(|(k, v)| (k.clone(), *v))
                    .collect(),
                span_s: t.map(|t| t.span_s),
                policy_time_s: t
                    .map(|t| {
                        [
                            ("power", t.power),
                            ("thermal", t.thermal),
                            ("board_limit", t.board_limit),
                            ("reliability", t.reliability),
                        ]
                        .into_iter()
                        .filter_map(|(k, v)| Some((k.to_owned(), v?)))
                        .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect())
}

fn backend_name(s: &Summary) -> String {
    s.backend
        .map(|b| b.to_string())
        .unwrap_or_else(|| "no".to_owned())
}

fn no_backend(s: &Summary) -> String {
    if s.rejected.is_empty() {
        "no GPU backend was used".to_owned()
    } else {
        // `s.rejected` is the record's `during.rejected`: the reasons are there, once.
        NO_GPU_BACKEND.to_owned()
    }
}

/// A process seen on a GPU, and when.
struct Seen<'a> {
    gpu: u32,
    process: &'a GpuProcess,
    when: &'static str,
}

/// The `other_gpu_processes` check: processes on the GPUs in use that are neither this process nor started by
/// it. Pids the driver reports but this pid namespace cannot see (a container without the host's pid
/// namespace) cannot be attributed either way; they make the check incomplete rather than raise it.
pub(crate) fn other_processes(
    before: &Snapshot,
    during: &Summary,
    after: &Snapshot,
    own: &BTreeSet<u32>,
    env: &Environment,
) -> Result<Option<String>, String> {
    let mut seen: Vec<Seen<'_>> = Vec::new();
    let mut asked = false;
    for (snap, when) in [(before, "before start"), (after, "after the end")] {
        if let Probe::Value(samples) = &snap.gpus {
            for s in samples {
                if let Some(ps) = &s.processes {
                    asked = true;
                    seen.extend(ps.iter().map(|p| Seen {
                        gpu: s.index,
                        process: p,
                        when,
                    }));
                }
            }
        }
    }
    if during.backend == Some(BackendKind::Nvml) {
        asked = true;
        for g in &during.gpus {
            seen.extend(g.processes_seen.iter().map(|p| Seen {
                gpu: g.index,
                process: p,
                when: "during the run",
            }));
        }
    }
    if !asked {
        return Err(match during.backend {
            None => no_backend(during),
            Some(b) => format!("the {b} backend does not list GPU processes (NVML does)"),
        });
    }
    let proc_root = Path::new("/proc");
    let mut others = String::new();
    let mut hidden = BTreeSet::new();
    let mut reported = BTreeSet::new();
    for s in &seen {
        let pid = s.process.pid;
        if own.contains(&pid) {
            continue;
        }
        if !procs::visible(pid, proc_root) {
            hidden.insert(pid);
            continue;
        }
        if !reported.insert((pid, s.gpu)) {
            continue;
        }
        if !others.is_empty() {
            others.push_str("; ");
        }
        let _ = write!(others, "pid {pid}");
        if let Some(n) = &s.process.name {
            let _ = write!(others, " ({n})");
        }
        let _ = write!(others, " {} on GPU {} {}", s.process.kind, s.gpu, s.when);
        if let Some(m) = s.process.used_memory_mib {
            let _ = write!(others, ", {m:.0} MiB");
        }
    }
    let hidden_note = (!hidden.is_empty()).then(|| {
        let pids: Vec<String> = hidden.iter().map(u32::to_string).collect();
        let why = if env.class == EnvClass::Container {
            "this container has its own pid namespace"
        } else {
            "they exited, or live in another pid namespace"
        };
        format!(
            "pids {} are on a GPU but not visible here ({why})",
            pids.join(", ")
        )
    });
    match (others.is_empty(), hidden_note) {
        (false, None) => Ok(Some(others)),
        (false, Some(h)) => Ok(Some(format!("{others}; also {h}"))),
        (true, Some(h)) => Err(h),
        (true, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::{EnvClass, Environment};
    use gpu_monitor::{Capture, Timestamps};

    fn sample(util: f64, processes: Option<Vec<u32>>) -> Sample {
        let mut s = Sample::empty(0.0, 0);
        s.utilization_gpu = Some(util);
        s.processes = processes.map(|pids| {
            pids.into_iter()
                .map(|pid| GpuProcess {
                    pid,
                    kind: "compute".to_owned(),
                    used_memory_mib: Some(1024.0),
                    name: None,
                })
                .collect()
        });
        s
    }

    fn snapshot(samples: Vec<Sample>) -> Snapshot {
        Snapshot {
            time_utc: String::new(),
            gpu: Probe::unavailable("-"),
            gpus: Probe::Value(samples),
            loadavg: Probe::unavailable("-"),
            wsl_loadavg_1m: Probe::unavailable("-"),
            cpu_freq: Probe::unavailable("-"),
            windows_cpu_percent: Probe::unavailable("-"),
        }
    }

    fn env(class: EnvClass) -> Environment {
        Environment {
            class,
            indicated: vec![class],
            signals: Vec::new(),
        }
    }

    fn summary(backend: Option<BackendKind>, during: Vec<Sample>) -> Summary {
        let mut s = Capture::from_samples(100, Timestamps::HostSampled, during).summary();
        s.backend = backend;
        s
    }

    #[test]
    fn our_own_process_is_not_another_user() {
        let me = std::process::id();
        let own = BTreeSet::from([me]);
        let before = snapshot(vec![sample(0.0, Some(vec![me]))]);
        let r = other_processes(
            &before,
            &summary(Some(BackendKind::Nvml), vec![]),
            &before,
            &own,
            &env(EnvClass::Vm),
        );
        assert_eq!(r, Ok(None));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_visible_foreign_process_is_flagged_with_its_pid_and_memory() {
        let own = BTreeSet::from([std::process::id()]);
        // pid 1 is always visible and never ours.
        let during = vec![sample(50.0, Some(vec![1]))];
        let r = other_processes(
            &snapshot(vec![]),
            &summary(Some(BackendKind::Nvml), during),
            &snapshot(vec![]),
            &own,
            &env(EnvClass::BareMetal),
        );
        let e = r.expect("checked").expect("flagged");
        assert!(
            e.starts_with("pid 1") && e.contains("on GPU 0 during the run, 1024 MiB"),
            "{e}"
        );
    }

    #[test]
    fn an_invisible_pid_makes_the_check_incomplete_not_raised() {
        let own = BTreeSet::new();
        let before = snapshot(vec![sample(0.0, Some(vec![u32::MAX - 7]))]);
        let r = other_processes(
            &before,
            &summary(None, vec![]),
            &snapshot(vec![]),
            &own,
            &env(EnvClass::Container),
        );
        let why = r.expect_err("cannot attribute");
        assert!(why.contains("own pid namespace"), "{why}");
    }

    #[test]
    fn without_process_lists_the_check_is_not_made() {
        let none = snapshot(vec![sample(0.0, None)]);
        let r = other_processes(
            &none,
            &summary(Some(BackendKind::NvidiaSmi), vec![]),
            &none,
            &BTreeSet::new(),
            &env(EnvClass::Vm),
        );
        assert!(
            r.expect_err("not made")
                .contains("nvidia-smi backend does not list")
        );
    }

    #[test]
    fn throttle_evidence_needs_samples() {
        assert!(throttle_evidence(&summary(None, vec![])).is_err());
        assert!(throttle_evidence(&summary(Some(BackendKind::Nvml), vec![])).is_err());
        let mut s = Sample::empty(0.0, 0);
        s.throttle_mask = Some(0x4);
        let e = throttle_evidence(&summary(Some(BackendKind::Nvml), vec![s])).expect("evidence");
        assert_eq!(e[0].reason_samples, vec![("sw_power_cap".to_owned(), 1)]);
    }
}

#[cfg(test)]
mod timeline_tests {
    use super::*;

    fn readings(gpus: u32, each: usize) -> Vec<Sample> {
        let mut v = Vec::new();
        for i in 0..each {
            for g in 0..gpus {
                v.push(Sample::empty(i as f64 * 0.5, g));
            }
        }
        v
    }

    #[test]
    fn a_short_region_keeps_every_reading() {
        let t = Timeline::thin(readings(2, 10), 1);
        assert_eq!((t.every, t.samples.len()), (1, 20));
    }

    #[test]
    fn a_long_region_is_thinned_evenly_per_gpu_to_the_cap() {
        // 2 GPUs × 1500 readings = 3000 > 1024: every = ⌈3000 / 1024⌉ = 3, so each GPU keeps readings
        // 0, 3, 6, …, 1497: ⌈1500 / 3⌉ = 500, 1000 in all.
        let t = Timeline::thin(readings(2, 1500), 1);
        assert_eq!(t.every, 3);
        assert_eq!(t.samples.len(), 1000);
        let gpu1: Vec<f64> = t
            .samples
            .iter()
            .filter(|s| s.index == 1)
            .map(|s| s.t_s)
            .collect();
        assert_eq!(gpu1.len(), 500);
        assert_eq!(&gpu1[..3], &[0.0, 1.5, 3.0]);
        assert_eq!(gpu1.last(), Some(&(1497.0 * 0.5)));
    }

    #[test]
    fn exactly_the_cap_is_not_thinned() {
        let t = Timeline::thin(readings(1, MAX_TIMELINE_SAMPLES), 1);
        assert_eq!((t.every, t.samples.len()), (1, MAX_TIMELINE_SAMPLES));
    }

    #[test]
    fn the_monitors_own_thinning_is_in_every() {
        // The monitor kept one reading in 4 of a long run; 3000 kept → the record keeps one in 3 of those,
        // so one in 12 the monitor took.
        let t = Timeline::thin(readings(2, 1500), 4);
        assert_eq!((t.every, t.samples.len()), (12, 1000));
    }
}
