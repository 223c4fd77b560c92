//! The [`Monitor`]: one sampling thread driving one [`Backend`], and the [`Recording`] it leaves.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::backend::{
    self, Backend, BackendKind, FieldNote, Opened, Rejection, Session, Shared, SourceEnd,
    Timestamps, lock,
};
use crate::config::MonitorConfig;
use crate::sample::{GpuRef, Sample};
use crate::sys;

/// How long [`Monitor::stop`] waits for the sampling thread. Backends end within about a second of a stop;
/// this only matters if a driver call hangs, and then the thread is left behind rather than waited for.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// Something that sees every sample as it is recorded, on the sampling thread (the CLI prints with it).
pub type Observer = Box<dyn FnMut(&Sample) + Send>;

/// A running monitor: started with [`Monitor::start`], ended with [`Monitor::stop`] (or dropped, which stops it
/// and discards the capture).
pub struct Monitor {
    requested: String,
    interval_ms: u64,
    backend: Option<BackendKind>,
    rejected: Vec<Rejection>,
    gpus: Vec<GpuRef>,
    timestamps: Option<Timestamps>,
    started: Instant,
    open_s: f64,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<(SourceEnd, Option<f64>)>>,
    spawn_error: Option<String>,
}

/// Requests a stop from anywhere (another thread, a Ctrl-C handler); cheap to clone.
#[derive(Clone)]
pub struct StopHandle {
    shared: Arc<Shared>,
}

impl StopHandle {
    /// Asks the sampling thread to stop; returns at once. [`Monitor::wait`] then returns, and
    /// [`Monitor::stop`] collects the capture.
    pub fn stop(&self) {
        self.shared.request_stop();
    }
}

impl Monitor {
    /// Opens the backend `config` asks for and starts sampling on a thread of its own.
    ///
    /// Never fails: when no backend can be used the monitor runs empty, and the capture says which backends
    /// were tried and why each was unavailable. Opening happens here, on the caller's thread, so `start`
    /// takes as long as the backend needs to answer: NVML initialisation (milliseconds; seconds on a machine
    /// without persistence mode) or one `nvidia-smi` query (bounded at 20 s); sampling starts after.
    pub fn start(config: MonitorConfig) -> Monitor {
        Self::start_inner(&config, None, None)
    }

    /// As [`start`](Self::start), showing each sample to `observer` as it is recorded.
    pub fn start_with_observer(config: MonitorConfig, observer: Observer) -> Monitor {
        Self::start_inner(&config, None, Some(observer))
    }

    /// Drives a backend supplied by the caller instead of opening one from `config.backend`.
    pub fn start_with_backend(
        config: MonitorConfig,
        backend: Box<dyn Backend>,
        observer: Option<Observer>,
    ) -> Monitor {
        let opened = Opened {
            backend: Some(backend),
            rejected: Vec::new(),
            notes: Vec::new(),
        };
        Self::start_inner(&config, Some(opened), observer)
    }

    /// A monitor for a caller whose [`GpuSource::open`](crate::GpuSource::open) found no backend: it reads
    /// nothing, and its recording gives the `rejected` reasons the opening gave, instead of trying every backend
    /// again a moment later (which would cost another opening and, where the two tries agreed, only repeat them).
    pub fn start_unopened(
        config: MonitorConfig,
        rejected: Vec<Rejection>,
        observer: Option<Observer>,
    ) -> Monitor {
        let opened = Opened {
            backend: None,
            rejected,
            notes: Vec::new(),
        };
        Self::start_inner(&config, Some(opened), observer)
    }

    /// Drives a backend already opened (by a [`GpuSource`](crate::GpuSource)), with what opening it noted.
    pub(crate) fn start_opened(
        config: &MonitorConfig,
        opened: Opened,
        observer: Option<Observer>,
    ) -> Monitor {
        Self::start_inner(config, Some(opened), observer)
    }

    fn start_inner(
        config: &MonitorConfig,
        given: Option<Opened>,
        observer: Option<Observer>,
    ) -> Monitor {
        let shared = Shared::new();
        let opening = Instant::now();
        let Opened {
            backend,
            rejected,
            notes,
        } = given.unwrap_or_else(|| backend::open(config));
        let open_s = opening.elapsed().as_secs_f64();
        for n in notes {
            shared.warn(n);
        }
        let started = Instant::now();
        let mut monitor = Monitor {
            requested: config.backend.to_string(),
            interval_ms: config.interval_ms,
            backend: backend.as_ref().map(|b| b.kind()),
            rejected,
            gpus: backend.as_ref().map(|b| b.gpus()).unwrap_or_default(),
            timestamps: backend.as_ref().map(|b| b.timestamps()),
            started,
            open_s,
            shared: Arc::clone(&shared),
            thread: None,
            spawn_error: None,
        };
        let Some(backend) = backend else {
            shared.mark_ended();
            return monitor;
        };
        let interval = Duration::from_millis(config.interval_ms.max(1));
        let max_kept = config.max_samples_kept;
        let thread_shared = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("gpu-monitor".into())
            .spawn(move || {
                sampling_thread(
                    backend,
                    observer,
                    thread_shared,
                    started,
                    interval,
                    max_kept,
                )
            });
        match spawned {
            Ok(handle) => monitor.thread = Some(handle),
            Err(e) => {
                let detail = format!("could not start the sampling thread: {e}");
                shared.warn(detail.clone());
                monitor.spawn_error = Some(detail);
                shared.mark_ended();
            }
        }
        monitor
    }

    /// Seconds since sampling began: the clock of host-timed samples' `t_s` (NVML, `nvidia-smi`), so an
    /// event the caller times (a command's start and end) can be placed among the samples.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The backend in use, if any.
    pub fn backend(&self) -> Option<BackendKind> {
        self.backend
    }

    /// A handle that can request a stop from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Blocks until the source ends by itself (replay read to the end, child died) or a stop is requested
    /// through a [`StopHandle`]; returns at once when there is no backend.
    pub fn wait(&self) {
        self.shared.wait_ended(None);
    }

    /// As [`wait`](Self::wait) but for at most `timeout`; `true` if the source ended.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.shared.wait_ended(Some(timeout))
    }

    /// Stops sampling (killing and reaping any child), and returns everything recorded.
    pub fn stop(mut self) -> Recording {
        let (end, thread_cpu_s) = self.finish(STOP_WAIT);
        let duration_s = self.started.elapsed().as_secs_f64();
        let record = std::mem::take(&mut *lock(&self.shared.record));
        let mut gpus = self.gpus.clone();
        if gpus.is_empty() {
            // Replay learns its GPUs by reading.
            let mut seen: Vec<GpuRef> = record
                .samples
                .iter()
                .map(|s| GpuRef {
                    index: s.index,
                    uuid: s.uuid.clone(),
                })
                .collect();
            seen.sort();
            seen.dedup_by(|a, b| a.index == b.index);
            gpus = seen;
        }
        Recording {
            requested_backend: self.requested.clone(),
            backend: self.backend,
            rejected: self.rejected.clone(),
            interval_ms: self.interval_ms,
            gpus,
            timestamps: self.timestamps,
            duration_s,
            open_s: self.open_s,
            kept_every: record.keep_every.max(1),
            end,
            source_ended_s: record.source_ended_s,
            samples: record.samples,
            counters: record.counters,
            warnings: record.warnings,
            unavailable_fields: record.unavailable_fields,
            monitor_cpu: MonitorCpu {
                method: CPU_METHOD,
                sampling_thread_s: thread_cpu_s,
                child_process_s: record.child_cpu_s,
            },
        }
    }

    fn finish(&mut self, wait: Duration) -> (SourceEnd, Option<f64>) {
        self.shared.request_stop();
        let Some(handle) = self.thread.take() else {
            return match self.spawn_error.take() {
                Some(detail) => (SourceEnd::Lost { detail }, None),
                None => (SourceEnd::NoBackend, None),
            };
        };
        if !self.shared.wait_ended(Some(wait)) {
            // Joining would hang the caller for as long as the driver does; the thread is detached instead and
            // the samples it recorded so far are still in the shared record.
            let detail = format!(
                "sampling thread still running {} s after stop; left behind",
                wait.as_secs()
            );
            self.shared.warn(detail.clone());
            return (SourceEnd::Lost { detail }, None);
        }
        match handle.join() {
            Ok(result) => result,
            Err(panic) => {
                let detail = format!("sampling thread panicked: {}", panic_text(&panic));
                self.shared.warn(detail.clone());
                (SourceEnd::Lost { detail }, None)
            }
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if self.thread.is_some() {
            // Shorter than stop's wait: a drop is usually an early return or unwinding, which should not stall.
            let _ = self.finish(Duration::from_secs(5));
        }
    }
}

fn sampling_thread(
    mut backend: Box<dyn Backend>,
    mut observer: Option<Observer>,
    shared: Arc<Shared>,
    started: Instant,
    interval: Duration,
    max_kept: usize,
) -> (SourceEnd, Option<f64>) {
    // Set `ended` however this thread leaves, so that waiters never wait for a thread that is gone.
    struct EndGuard(Arc<Shared>);
    impl Drop for EndGuard {
        fn drop(&mut self) {
            self.0.mark_ended();
        }
    }
    let _guard = EndGuard(Arc::clone(&shared));
    let cpu0 = sys::thread_cpu_s();
    let end = {
        let mut session = Session {
            started,
            interval,
            min_spacing_s: match backend.timestamps() {
                Timestamps::HostReceived => interval.as_secs_f64() / 2.0,
                _ => 0.0,
            },
            max_kept,
            shared: &shared,
            observer: observer
                .as_mut()
                .map(|o| &mut **o as &mut (dyn FnMut(&Sample) + Send)),
        };
        match catch_unwind(AssertUnwindSafe(|| backend.run(&mut session))) {
            Ok(end) => end,
            Err(panic) => {
                let detail = format!("backend panicked: {}", panic_text(&panic));
                shared.warn(detail.clone());
                SourceEnd::Lost { detail }
            }
        }
    };
    if !lock(&shared.control).stop {
        lock(&shared.record).source_ended_s = Some(started.elapsed().as_secs_f64());
    }
    // Dropping the backend here, on its own thread, is what kills and reaps an nvidia-smi child that a
    // panicking run left behind.
    drop(backend);
    let cpu = match (cpu0, sys::thread_cpu_s()) {
        (Some(a), Some(b)) => Some((b - a).max(0.0)),
        _ => None,
    };
    (end, cpu)
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string payload)".to_owned()
    }
}

const CPU_METHOD: &str = "sampling_thread_s: getrusage(RUSAGE_THREAD) user+system on the sampling thread, from \
before the backend starts to after it is released (includes the observer, e.g. the CLI's printing); \
child_process_s: user+system of the nvidia-smi child from wait4 when it is reaped";

/// The monitor's own cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonitorCpu {
    /// How each figure is measured.
    pub method: &'static str,
    /// CPU seconds of the sampling thread (MEASURED); `None` where the platform cannot say.
    pub sampling_thread_s: Option<f64>,
    /// CPU seconds of the `nvidia-smi` child (MEASURED); `None` for other backends.
    pub child_process_s: Option<f64>,
}

/// Everything a monitor recorded between start and stop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recording {
    /// The backend asked for (`auto`, `nvml`, `nvidia-smi`, `replay:PATH`).
    pub requested_backend: String,
    /// The backend used; `None` when none could be.
    pub backend: Option<BackendKind>,
    /// Backends tried and not used, each with its reason.
    pub rejected: Vec<Rejection>,
    /// The requested interval.
    pub interval_ms: u64,
    /// The GPUs sampled.
    pub gpus: Vec<GpuRef>,
    /// What `t_s` means; `None` without a backend.
    pub timestamps: Option<Timestamps>,
    /// Seconds from start to stop on the host's monotonic clock (MEASURED).
    pub duration_s: f64,
    /// Only every `kept_every`-th reading of each GPU is in `samples` (1: all), when the run met
    /// [`MonitorConfig::max_samples_kept`]; intervals and gaps are then between kept readings.
    pub kept_every: u64,
    /// Seconds [`Monitor::start`] spent opening the backend before sampling began (MEASURED; 0 when the
    /// backend was opened beforehand).
    pub open_s: f64,
    /// How the source ended.
    pub end: SourceEnd,
    /// When the source ended by itself, before a stop was asked for (died, replay read to its end), s since
    /// the start; `None` when it ran until stopped.
    pub source_ended_s: Option<f64>,
    /// The samples, in the order recorded.
    pub samples: Vec<Sample>,
    /// Counts of things worth knowing that are not samples: lines read, short or garbage lines, `[N/A]`
    /// values, missed ticks, … (named in docs/gpu-monitor.md).
    pub counters: BTreeMap<String, u64>,
    /// What went wrong, in words, in order (at most 64; the rest are counted as `warnings_dropped`).
    pub warnings: Vec<String>,
    /// Fields a backend could not read for a GPU, once each, with the reason.
    pub unavailable_fields: Vec<FieldNote>,
    /// The monitor's own CPU time.
    pub monitor_cpu: MonitorCpu,
}

impl Recording {
    /// A capture of already-recorded samples, as if a replay backend had produced them; for summarising
    /// samples obtained elsewhere.
    pub fn from_samples(
        interval_ms: u64,
        timestamps: Timestamps,
        samples: Vec<Sample>,
    ) -> Recording {
        let mut gpus: Vec<GpuRef> = samples
            .iter()
            .map(|s| GpuRef {
                index: s.index,
                uuid: s.uuid.clone(),
            })
            .collect();
        gpus.sort();
        gpus.dedup_by(|a, b| a.index == b.index);
        let duration_s = match (samples.first(), samples.last()) {
            (Some(a), Some(b)) => (b.t_s - a.t_s).max(0.0),
            _ => 0.0,
        };
        Recording {
            requested_backend: "samples".into(),
            backend: Some(BackendKind::Replay),
            rejected: Vec::new(),
            interval_ms,
            gpus,
            timestamps: Some(timestamps),
            duration_s,
            open_s: 0.0,
            kept_every: 1,
            end: SourceEnd::Exhausted,
            source_ended_s: None,
            samples,
            counters: BTreeMap::new(),
            warnings: Vec::new(),
            unavailable_fields: Vec::new(),
            monitor_cpu: MonitorCpu {
                method: CPU_METHOD,
                sampling_thread_s: None,
                child_process_s: None,
            },
        }
    }
}
