//! The seam between the [`Monitor`](crate::Monitor) and the sources of samples.
//!
//! The monitor owns *time and lifetime*: the sampling thread, the start instant, the stop signal, the record
//! of what happened. A backend owns *one source of readings*: how to open it, how to read it, how to let go of
//! it. [`Backend::run`] is the single place where the two meet, through a [`Session`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::Unavailable;
use crate::config::{BackendChoice, MonitorConfig};
use crate::identity::GpuIdentity;
pub use crate::kind::{BackendKind, Rejection};
use crate::sample::{GpuRef, Sample};

pub(crate) mod nvml;
pub(crate) mod replay;
pub(crate) mod smi;

pub(crate) use smi::forget_hung;

/// Where the samples' `t_s` come from; part of the capture because it decides what the intervals mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Timestamps {
    /// The host's monotonic clock just before each GPU was read (NVML).
    HostSampled,
    /// The host's monotonic clock when each line arrived from the child (`nvidia-smi`): includes pipe latency.
    HostReceived,
    /// Read from the replayed file.
    Recorded,
    /// Replay of CSV without times: tick *k* is placed at *k* × interval, so intervals and gaps mean nothing.
    Synthesised,
}

/// How a backend's source ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum SourceEnd {
    /// Stopped on request (stop, drop, Ctrl-C).
    Stopped,
    /// A replay file was read to its end.
    Exhausted,
    /// The source went away by itself before it was asked to (child exited, GPU lost).
    Died {
        /// What is known about how.
        detail: String,
    },
    /// No backend could be used; the capture's `rejected` list says why.
    NoBackend,
    /// The sampling thread panicked or did not finish in time; the samples recorded until then are kept.
    Lost {
        /// What is known about how.
        detail: String,
    },
}

/// A source of GPU samples, driven by the [`Monitor`](crate::Monitor).
///
/// Implementations exist for NVML, `nvidia-smi` and replay files; the trait is public so that a program can
/// hand the monitor a source of its own (a simulator, a remote agent) and get the same captures and summaries.
pub trait Backend: Send {
    /// Which kind of backend this is.
    fn kind(&self) -> BackendKind;

    /// The GPUs it will sample, as resolved when it was opened (empty where that is only known by reading, as
    /// in replay).
    fn gpus(&self) -> Vec<GpuRef>;

    /// What the samples' `t_s` will mean.
    fn timestamps(&self) -> Timestamps;

    /// Produces samples into `session` until [`Session::stop_requested`] or until the source ends; runs on the
    /// monitor's sampling thread. Must return soon (about a second) after a stop is requested, must not panic,
    /// and must leave nothing running behind it.
    fn run(&mut self, session: &mut Session<'_>) -> SourceEnd;

    /// One reading of every selected GPU, now, without a session.
    fn sample_once(&mut self) -> Result<Vec<Sample>, Unavailable>;

    /// Another handle on the same source, made without asking the source again (no `nvidia-smi` query), for a
    /// monitor to run while this one keeps answering one-shot questions; `None` (the default) where that is
    /// not possible, and the monitor opens its own.
    fn try_clone(&self) -> Option<Box<dyn Backend>> {
        None
    }

    /// The static facts about each selected GPU. The default knows only index and UUID.
    fn identity(&mut self) -> Vec<GpuIdentity> {
        let why = format!("the {} backend does not report it", self.kind());
        self.gpus()
            .into_iter()
            .map(|g| GpuIdentity::unknown(g.index, g.uuid, &why))
            .collect()
    }
}

/// A backend together with what was noted while choosing and opening it.
pub(crate) struct Opened {
    pub backend: Option<Box<dyn Backend>>,
    pub rejected: Vec<Rejection>,
    pub notes: Vec<String>,
}

/// Opens the backend `config` asks for; for `auto`, NVML, else `nvidia-smi`, keeping every reason.
pub(crate) fn open(config: &MonitorConfig) -> Opened {
    let mut notes = Vec::new();
    let mut rejected = Vec::new();
    if let Err(reason) = crate::config::check_interval_ms(config.interval_ms) {
        let reason = Unavailable::BadConfig { reason }.to_string();
        let kinds: &[BackendKind] = match &config.backend {
            BackendChoice::Auto => &[BackendKind::Nvml, BackendKind::NvidiaSmi],
            BackendChoice::Nvml => &[BackendKind::Nvml],
            BackendChoice::NvidiaSmi => &[BackendKind::NvidiaSmi],
            BackendChoice::Replay(_) => &[BackendKind::Replay],
        };
        rejected.extend(kinds.iter().map(|&backend| Rejection {
            backend,
            reason: reason.clone(),
        }));
        return Opened {
            backend: None,
            rejected,
            notes,
        };
    }
    let order: Vec<BackendKind> = match &config.backend {
        BackendChoice::Auto => vec![BackendKind::Nvml, BackendKind::NvidiaSmi],
        BackendChoice::Nvml => vec![BackendKind::Nvml],
        BackendChoice::NvidiaSmi => vec![BackendKind::NvidiaSmi],
        BackendChoice::Replay(_) => vec![BackendKind::Replay],
    };
    for kind in order {
        let attempt: Result<Box<dyn Backend>, Unavailable> =
            match kind {
                BackendKind::Nvml => nvml::NvmlBackend::open(config, &mut notes)
                    .map(|b| Box::new(b) as Box<dyn Backend>),
                BackendKind::NvidiaSmi => smi::SmiBackend::open(config, &mut notes)
                    .map(|b| Box::new(b) as Box<dyn Backend>),
                BackendKind::Replay => match &config.backend {
                    BackendChoice::Replay(path) => {
                        replay::ReplayBackend::open(path, config, &mut notes)
                            .map(|b| Box::new(b) as Box<dyn Backend>)
                    }
                    _ => continue,
                },
            };
        match attempt {
            Ok(b) => {
                return Opened {
                    backend: Some(b),
                    rejected,
                    notes,
                };
            }
            Err(e) => rejected.push(Rejection {
                backend: kind,
                reason: e.to_string(),
            }),
        }
    }
    Opened {
        backend: None,
        rejected,
        notes,
    }
}

/// Something to run when a stop is requested, from the thread that requests it.
pub type StopHook = Box<dyn FnOnce() + Send>;

/// State shared by the monitor, its stop handles and its sampling thread.
pub(crate) struct Shared {
    pub control: Mutex<Control>,
    pub changed: std::sync::Condvar,
    pub record: Mutex<Record>,
}

#[derive(Default)]
pub(crate) struct Control {
    pub stop: bool,
    pub ended: bool,
    pub hooks: Vec<StopHook>,
}

/// What a run leaves behind besides samples' order: kept outside the thread so that a thread that never
/// returns still leaves its record.
#[derive(Default)]
pub(crate) struct Record {
    pub samples: Vec<Sample>,
    pub counters: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
    pub unavailable_fields: Vec<FieldNote>,
    pub child_cpu_s: Option<f64>,
    /// GPU and field of every impossible reading warned about.
    pub invalid_seen: std::collections::BTreeSet<(u32, String)>,
    /// Per GPU: the time of the last reading recorded, and how many were recorded.
    pub per_gpu: BTreeMap<u32, (f64, u64)>,
    /// Only every `keep_every`-th recorded reading of a GPU is kept in `samples` (1 until the bound is met).
    pub keep_every: u64,
    /// When the backend's run returned without being asked to stop, s since the start.
    pub source_ended_s: Option<f64>,
}

/// A field a backend could not read for a GPU, and why; recorded once per GPU and field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldNote {
    /// The GPU.
    pub index: u32,
    /// The sample field (its serialised name).
    pub field: String,
    /// The driver's or tool's words.
    pub reason: String,
}

/// Beyond this many, warnings are counted (`warnings_dropped`) rather than kept: a child that prints an error
/// every 10 ms must not grow the capture without bound.
pub(crate) const MAX_WARNINGS: usize = 64;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves data that is still a valid record of what happened.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    pub(crate) fn new() -> Arc<Shared> {
        Arc::new(Shared {
            control: Mutex::new(Control::default()),
            changed: std::sync::Condvar::new(),
            record: Mutex::new(Record::default()),
        })
    }

    pub(crate) fn request_stop(&self) {
        let hooks = {
            let mut c = lock(&self.control);
            if c.stop {
                Vec::new()
            } else {
                c.stop = true;
                std::mem::take(&mut c.hooks)
            }
        };
        self.changed.notify_all();
        // Hooks run outside the lock: one may block briefly (a write to a pipe) and must not hold up waiters.
        for hook in hooks {
            hook();
        }
    }

    pub(crate) fn mark_ended(&self) {
        lock(&self.control).ended = true;
        self.changed.notify_all();
    }

    /// Waits until the source ended; `false` if `timeout` passed first.
    pub(crate) fn wait_ended(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut c = lock(&self.control);
        loop {
            if c.ended {
                return true;
            }
            match deadline {
                None => c = self.changed.wait(c).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    c = self
                        .changed
                        .wait_timeout(c, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
    }

    pub(crate) fn warn(&self, message: String) {
        let mut r = lock(&self.record);
        if r.warnings.len() < MAX_WARNINGS {
            r.warnings.push(message);
        } else {
            *r.counters.entry("warnings_dropped".into()).or_default() += 1;
        }
    }
}

/// Halves the kept readings: every second kept reading of each GPU goes (counted in `samples_thinned`), and
/// from now on only every `2 × keep_every`-th reading is kept, so that what stays is evenly spaced.
fn thin(r: &mut Record) {
    let mut ordinal: BTreeMap<u32, u64> = BTreeMap::new();
    let before = r.samples.len();
    r.samples.retain(|s| {
        let k = ordinal.entry(s.index).or_default();
        let keep = k.is_multiple_of(2);
        *k += 1;
        keep
    });
    let removed = (before - r.samples.len()) as u64;
    *r.counters.entry("samples_thinned".into()).or_default() += removed;
    // The readings kept so far were the multiples of the old stride in each GPU's count; those left are the
    // multiples of twice it, which is what `nth % keep_every` keeps from now on.
    r.keep_every = r.keep_every.max(1) * 2;
}

/// A backend's view of the monitor while it runs: the clock, the stop signal and the record.
pub struct Session<'a> {
    pub(crate) started: Instant,
    pub(crate) interval: Duration,
    /// Readings of a GPU closer than this to its previous one are over the requested rate and dropped
    /// (`samples_over_rate`); zero for sources the monitor clocks or that replay a file.
    pub(crate) min_spacing_s: f64,
    pub(crate) max_kept: usize,
    pub(crate) shared: &'a Shared,
    pub(crate) observer: Option<&'a mut (dyn FnMut(&Sample) + Send)>,
}

impl Session<'_> {
    /// When the monitor started; `t_s` counts from here.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The requested interval between readings of a GPU.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// `at` as seconds since the monitor started.
    pub fn t_s(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64()
    }

    /// Whether a stop has been requested.
    pub fn stop_requested(&self) -> bool {
        lock(&self.shared.control).stop
    }

    /// Sleeps until `deadline` or until a stop is requested, whichever is first; `true` if stopped.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let mut c = lock(&self.shared.control);
        loop {
            if c.stop {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            c = self
                .shared
                .changed
                .wait_timeout(c, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Runs `hook` when a stop is requested (at once if one already was): how a backend blocked on something
    /// other than [`wait_until`](Self::wait_until) — a pipe — gets woken.
    pub fn on_stop(&self, hook: StopHook) {
        let mut c = lock(&self.shared.control);
        if c.stop {
            drop(c);
            hook();
        } else {
            c.hooks.push(hook);
        }
    }

    /// Records a sample (and shows it to the observer, if any). Non-finite values become `None` (counted as
    /// `non_finite_values`); a sample whose `t_s` is not finite cannot be placed and is dropped
    /// (`non_finite_times`).
    ///
    /// A reading from a source that clocks itself (`nvidia-smi`) that comes less than half the requested
    /// interval after the GPU's previous one is over the requested rate: dropped and counted
    /// (`samples_over_rate`), so a flooding source cannot grow memory. Kept readings are bounded by
    /// [`MonitorConfig::max_samples_kept`](crate::MonitorConfig::max_samples_kept), by thinning.
    pub fn record(&mut self, mut sample: Sample) {
        if !sample.t_s.is_finite() {
            self.count("non_finite_times", 1);
            return;
        }
        if self.min_spacing_s > 0.0 {
            let last = lock(&self.shared.record)
                .per_gpu
                .get(&sample.index)
                .map(|p| p.0);
            if last.is_some_and(|t| sample.t_s - t < self.min_spacing_s) {
                self.count("samples_over_rate", 1);
                return;
            }
        }
        let bad = sample.sanitize();
        self.count("non_finite_values", bad);
        let invalid = sample.invalidate_impossible();
        if invalid > 0 {
            self.count("invalid_values", invalid as u64);
            self.note_invalid(&sample);
        }
        if let Some(obs) = self.observer.as_mut() {
            obs(&sample);
        }
        let mut r = lock(&self.shared.record);
        let keep_every = r.keep_every.max(1);
        let tally = r.per_gpu.entry(sample.index).or_insert((sample.t_s, 0));
        tally.0 = sample.t_s;
        let nth = tally.1;
        tally.1 += 1;
        if !nth.is_multiple_of(keep_every) {
            *r.counters.entry("samples_thinned".into()).or_default() += 1;
            return;
        }
        r.samples.push(sample);
        if r.samples.len() >= self.max_kept.max(2) {
            thin(&mut r);
        }
    }

    /// Records a warning: something went wrong that the reader of the result should know.
    pub fn warn(&mut self, message: impl Into<String>) {
        self.shared.warn(message.into());
    }

    /// Adds `n` to the named counter.
    pub fn count(&mut self, counter: &str, n: u64) {
        if n > 0 {
            *lock(&self.shared.record)
                .counters
                .entry(counter.to_owned())
                .or_default() += n;
        }
    }

    /// Warns once per GPU and field that a reading was impossible.
    fn note_invalid(&mut self, sample: &Sample) {
        for inv in &sample.invalid {
            let first = lock(&self.shared.record)
                .invalid_seen
                .insert((sample.index, inv.field.clone()));
            if first {
                let range = crate::sample::VALID_RANGES
                    .iter()
                    .find(|r| r.0 == inv.field)
                    .map_or_else(
                        || format!("P0 … P{}", crate::sample::MAX_PSTATE),
                        |(_, lo, hi, unit)| format!("{lo} … {hi} {unit}"),
                    );
                self.warn(format!(
                    "GPU {} {} = {} is impossible (valid: {range}): marked invalid and left out of the statistics \
                     (counted in invalid_values; only the first per GPU and field is shown)",
                    sample.index, inv.field, inv.value
                ));
            }
        }
    }

    /// Records, once per GPU and field, that a field cannot be read and why.
    pub fn field_unavailable(&mut self, index: u32, field: &str, reason: impl Into<String>) {
        let mut r = lock(&self.shared.record);
        if !r
            .unavailable_fields
            .iter()
            .any(|n| n.index == index && n.field == field)
        {
            r.unavailable_fields.push(FieldNote {
                index,
                field: field.to_owned(),
                reason: reason.into(),
            });
        }
    }

    /// Records the CPU time a child process used (user + system), once it has been reaped.
    pub fn child_cpu(&mut self, seconds: f64) {
        lock(&self.shared.record).child_cpu_s = Some(seconds);
    }
}
