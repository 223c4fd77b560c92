//! One opened backend for a whole recorded run: identity, a reading before, the monitor, a reading after —
//! without opening the backend four times.
//!
//! Opening `nvidia-smi` is a one-shot query (~0.1 s, seconds without persistence mode, up to the query timeout
//! when the driver hangs), so a record that asked [`gpu_identity`](crate::gpu_identity),
//! [`sample_once`](crate::sample_once) and [`Monitor::start`] separately paid for three openings before its
//! benchmark began. A [`GpuSource`] opens once, answers the before-reading from the opening query itself, hands
//! the monitor a copy of the opened backend, and says how long its queries took.

use std::time::Instant;

use serde::Serialize;

use crate::backend::{self, Backend, Opened};
use crate::config::MonitorConfig;
use crate::kind::{BackendKind, Rejection};
use crate::monitor::{Monitor, Observer};
use crate::sample::Sample;
use crate::{Identity, Unavailable};

/// How long one query of a [`GpuSource`] took (MEASURED, wall clock on the calling thread).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryTime {
    /// `open`, `identity` or `sample`.
    pub query: &'static str,
    /// Seconds.
    pub seconds: f64,
}

/// A backend opened once for a whole recorded run: identity, a reading before, the monitor, a reading after.
///
/// Opening `nvidia-smi` is a one-shot query, so asking [`gpu_identity`](crate::gpu_identity),
/// [`sample_once`](crate::sample_once) and [`Monitor::start`] separately pays for three openings before a
/// benchmark begins. A source opens once, answers the first reading from the opening query itself, hands the
/// monitor a copy of the opened backend, and says how long its queries took ([`query_times`](Self::query_times)).
pub struct GpuSource {
    config: MonitorConfig,
    backend: Box<dyn Backend>,
    rejected: Vec<Rejection>,
    notes: Vec<String>,
    times: Vec<QueryTime>,
}

impl GpuSource {
    /// Opens the backend `config` asks for (for `auto`: NVML, else `nvidia-smi`), or says why none could be.
    pub fn open(config: &MonitorConfig) -> Result<GpuSource, Unavailable> {
        let t = Instant::now();
        let opened = backend::open(config);
        let seconds = t.elapsed().as_secs_f64();
        match opened.backend {
            Some(backend) => Ok(GpuSource {
                config: config.clone(),
                backend,
                rejected: opened.rejected,
                notes: opened.notes,
                times: vec![QueryTime {
                    query: "open",
                    seconds,
                }],
            }),
            None => Err(Unavailable::NoBackend {
                reasons: opened.rejected,
            }),
        }
    }

    /// The backend in use.
    pub fn backend(&self) -> BackendKind {
        self.backend.kind()
    }

    /// Backends tried before it, with their reasons.
    pub fn rejected(&self) -> &[Rejection] {
        &self.rejected
    }

    /// What choosing the GPUs noted (`CUDA_VISIBLE_DEVICES` read, a list cut short).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The static facts about each selected GPU.
    pub fn identity(&mut self) -> Identity {
        let t = Instant::now();
        let gpus = self.backend.identity();
        self.time("identity", t);
        Identity {
            backend: self.backend.kind(),
            rejected: self.rejected.clone(),
            gpus,
        }
    }

    /// One reading of every selected GPU, now (the first call after opening is answered by the opening query
    /// of `nvidia-smi`). Impossible readings are marked invalid, as in a monitor.
    pub fn sample_once(&mut self) -> Result<Vec<Sample>, Unavailable> {
        let t = Instant::now();
        let r = self.backend.sample_once();
        self.time("sample", t);
        let mut samples = r?;
        for s in &mut samples {
            s.sanitize();
            s.invalidate_impossible();
        }
        Ok(samples)
    }

    /// Starts a monitor on this source, showing each sample to `observer`; the source keeps answering
    /// [`sample_once`](Self::sample_once) (for the reading after). Where the backend cannot be shared (NVML),
    /// the monitor opens its own, which costs no `nvidia-smi` query.
    pub fn monitor(&self, observer: Option<Observer>) -> Monitor {
        match self.backend.try_clone() {
            Some(b) => Monitor::start_opened(
                &self.config,
                Opened {
                    backend: Some(b),
                    rejected: self.rejected.clone(),
                    notes: self.notes.clone(),
                },
                observer,
            ),
            None => match observer {
                Some(o) => Monitor::start_with_observer(self.config.clone(), o),
                None => Monitor::start(self.config.clone()),
            },
        }
    }

    /// Every query so far, in order, with how long it took.
    pub fn query_times(&self) -> &[QueryTime] {
        &self.times
    }

    /// The seconds all queries so far took together.
    pub fn query_s(&self) -> f64 {
        self.times.iter().map(|q| q.seconds).sum()
    }

    fn time(&mut self, query: &'static str, since: Instant) {
        self.times.push(QueryTime {
            query,
            seconds: since.elapsed().as_secs_f64(),
        });
    }
}
