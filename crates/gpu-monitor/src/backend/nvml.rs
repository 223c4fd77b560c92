//! NVML in-process: `libnvidia-ml.so.1`, loaded at run time by `nvml-wrapper`.
//!
//! Every field is read through one gate ([`State::read`]) that sorts errors into two kinds. *Permanent* ones
//! (not supported, no permission, a function the installed driver does not export) switch the field off for
//! that GPU and are recorded once with NVML's words: an old driver costs fields, never the run. *Transient*
//! ones are counted, warned about once per GPU and field, and retried next tick. A GPU that falls off the bus
//! stops being read; when all have, the source has died.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, PerformanceState, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::{Bits, NvmlError};
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use nvml_wrapper::{Device, enum_wrappers::device::PerformancePolicy};

use crate::backend::{Backend, BackendKind, Session, SourceEnd, Timestamps};
use crate::identity::GpuIdentity;
use crate::sample::{GpuProcess, GpuRef, Sample, ViolationTimes};
use crate::{MonitorConfig, NVML_LIBRARY_ENV, Unavailable, select, sys};

/// The driver's library, by its run-time name (no `-dev` package needed).
const LIBRARY: &str = "libnvidia-ml.so.1";

const MIB: f64 = 1024.0 * 1024.0;

pub(crate) struct NvmlBackend {
    nvml: Nvml,
    gpus: Vec<GpuRef>,
    state: State,
}

/// What the backend learns while reading: fields switched off, things to tell the session.
struct State {
    read_processes: bool,
    off: HashSet<(u32, &'static str)>,
    warned: HashSet<(u32, &'static str)>,
    lost: HashSet<u32>,
    names: HashMap<u32, Option<String>>,
    pending: Vec<Pending>,
}

enum Pending {
    Field(u32, &'static str, String),
    Warn(String),
    Count(&'static str),
}

fn permanent(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::NotSupported
            | NvmlError::FunctionNotFound
            | NvmlError::FailedToLoadSymbol(_)
            | NvmlError::NoPermission
            | NvmlError::InvalidArg
            | NvmlError::VgpuEccNotSupported
    )
}

fn describe(e: &NvmlError) -> String {
    match e {
        NvmlError::FailedToLoadSymbol(s) => {
            format!("the installed driver's NVML lacks this function ({s})")
        }
        other => other.to_string(),
    }
}

impl State {
    /// Reads one field through the gate described in the module docs.
    fn read<T>(
        &mut self,
        gpu: u32,
        field: &'static str,
        call: impl FnOnce() -> Result<T, NvmlError>,
    ) -> Option<T> {
        if self.off.contains(&(gpu, field)) || self.lost.contains(&gpu) {
            return None;
        }
        match call() {
            Ok(v) => Some(v),
            Err(NvmlError::GpuLost) => {
                self.lost.insert(gpu);
                self.pending.push(Pending::Warn(format!(
                    "GPU {gpu} fell off the bus (NVML: GPU lost); no longer read"
                )));
                None
            }
            Err(e) if permanent(&e) => {
                self.off.insert((gpu, field));
                self.pending.push(Pending::Field(gpu, field, describe(&e)));
                None
            }
            Err(e) => {
                self.pending.push(Pending::Count("nvml_errors"));
                if self.warned.insert((gpu, field)) {
                    self.pending.push(Pending::Warn(format!(
                        "GPU {gpu} {field}: {} (will retry)",
                        describe(&e)
                    )));
                }
                None
            }
        }
    }

    fn flush(&mut self, session: &mut Session<'_>) {
        for p in self.pending.drain(..) {
            match p {
                Pending::Field(gpu, field, why) => session.field_unavailable(gpu, field, why),
                Pending::Warn(w) => session.warn(w),
                Pending::Count(c) => session.count(c, 1),
            }
        }
    }
}

fn pstate_name(p: PerformanceState) -> Option<String> {
    let n = match p {
        PerformanceState::Zero => 0,
        PerformanceState::One => 1,
        PerformanceState::Two => 2,
        PerformanceState::Three => 3,
        PerformanceState::Four => 4,
        PerformanceState::Five => 5,
        PerformanceState::Six => 6,
        PerformanceState::Seven => 7,
        PerformanceState::Eight => 8,
        PerformanceState::Nine => 9,
        PerformanceState::Ten => 10,
        PerformanceState::Eleven => 11,
        PerformanceState::Twelve => 12,
        PerformanceState::Thirteen => 13,
        PerformanceState::Fourteen => 14,
        PerformanceState::Fifteen => 15,
        PerformanceState::Unknown => return None,
    };
    Some(format!("P{n}"))
}

fn init(config: &MonitorConfig) -> Result<Nvml, Unavailable> {
    let library: OsString = match &config.nvml_library {
        Some(p) => p.clone().into_os_string(),
        None => std::env::var_os(NVML_LIBRARY_ENV)
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| LIBRARY.into()),
    };
    let shown = library.to_string_lossy().into_owned();
    Nvml::builder()
        .lib_path(&library)
        .init()
        .map_err(|e| Unavailable::NvmlInit {
            reason: match e {
                NvmlError::LibloadingError(l) => {
                    format!("{shown} could not be loaded (no NVIDIA driver here?): {l}")
                }
                NvmlError::DriverNotLoaded => "the NVIDIA kernel driver is not loaded".into(),
                NvmlError::NoPermission => "no permission to talk to the NVIDIA driver".into(),
                other => describe(&other),
            },
        })
}

impl NvmlBackend {
    pub(crate) fn open(
        config: &MonitorConfig,
        notes: &mut Vec<String>,
    ) -> Result<Self, Unavailable> {
        let nvml = init(config)?;
        let count = nvml.device_count().map_err(|e| Unavailable::NvmlCall {
            function: "nvmlDeviceGetCount_v2".into(),
            reason: describe(&e),
        })?;
        if count == 0 {
            return Err(Unavailable::NoGpus {
                backend: "NVML".into(),
            });
        }
        let mut visible = Vec::new();
        for index in 0..count {
            let uuid = nvml.device_by_index(index).and_then(|d| d.uuid()).ok();
            visible.push(GpuRef { index, uuid });
        }
        let cvd = select::cuda_visible_devices_env();
        let order = std::env::var("CUDA_DEVICE_ORDER").ok();
        let (gpus, more) =
            select::resolve(&config.gpus, &visible, cvd.as_deref(), order.as_deref())?;
        notes.extend(more);
        Ok(NvmlBackend {
            nvml,
            gpus,
            state: State {
                read_processes: config.read_processes,
                off: HashSet::new(),
                warned: HashSet::new(),
                lost: HashSet::new(),
                names: HashMap::new(),
                pending: Vec::new(),
            },
        })
    }

    fn read_all(&mut self, t_s: impl Fn() -> f64) -> Vec<Sample> {
        let mut out = Vec::with_capacity(self.gpus.len());
        for gpu in &self.gpus {
            if self.state.lost.contains(&gpu.index) {
                continue;
            }
            let t = t_s();
            match self.nvml.device_by_index(gpu.index) {
                Ok(dev) => out.push(read_gpu(&dev, gpu, t, &mut self.state)),
                Err(e) => {
                    let _ = self.state.read(gpu.index, "device", || Err::<(), _>(e));
                }
            }
        }
        out
    }
}

fn read_gpu(dev: &Device<'_>, gpu: &GpuRef, t_s: f64, st: &mut State) -> Sample {
    let i = gpu.index;
    let mut s = Sample::empty(t_s, i);
    s.uuid = gpu.uuid.clone();
    s.pstate = st
        .read(i, "pstate", || dev.performance_state())
        .and_then(pstate_name);
    s.clocks_sm = st
        .read(i, "clocks.sm", || dev.clock_info(Clock::SM))
        .map(f64::from);
    s.clocks_mem = st
        .read(i, "clocks.mem", || dev.clock_info(Clock::Memory))
        .map(f64::from);
    s.temperature_gpu = st
        .read(i, "temperature.gpu", || {
            dev.temperature(TemperatureSensor::Gpu)
        })
        .map(f64::from);
    s.power_draw = st
        .read(i, "power.draw", || dev.power_usage())
        .map(|mw| f64::from(mw) / 1000.0);
    s.utilization_gpu = st
        .read(i, "utilization.gpu", || dev.utilization_rates())
        .map(|u| f64::from(u.gpu));
    s.memory_used = st
        .read(i, "memory.used", || dev.memory_info())
        .map(|m| m.used as f64 / MIB);
    s.throttle_mask = st.read(i, "clocks_throttle_reasons.active", || {
        // The strict call is the only one that hands back bits the wrapper does not know; they are kept so
        // that they decode as `unknown_0x…` instead of vanishing.
        match dev.current_throttle_reasons_strict() {
            Ok(r) => Ok(r.bits()),
            Err(NvmlError::IncorrectBits(Bits::U64(raw))) => Ok(raw),
            Err(NvmlError::IncorrectBits(Bits::U32(raw))) => Ok(u64::from(raw)),
            Err(e) => Err(e),
        }
    });
    s.power_limit = st
        .read(i, "power.limit", || dev.enforced_power_limit())
        .map(|mw| f64::from(mw) / 1000.0);
    s.energy_mj = st.read(i, "energy_mj", || dev.total_energy_consumption());
    let mut v = ViolationTimes::default();
    let policies: [(&'static str, PerformancePolicy, &mut Option<u64>); 6] = [
        ("violation_ns.power", PerformancePolicy::Power, &mut v.power),
        (
            "violation_ns.thermal",
            PerformancePolicy::Thermal,
            &mut v.thermal,
        ),
        (
            "violation_ns.sync_boost",
            PerformancePolicy::SyncBoost,
            &mut v.sync_boost,
        ),
        (
            "violation_ns.board_limit",
            PerformancePolicy::BoardLimit,
            &mut v.board_limit,
        ),
        (
            "violation_ns.low_utilization",
            PerformancePolicy::LowUtilization,
            &mut v.low_utilization,
        ),
        (
            "violation_ns.reliability",
            PerformancePolicy::Reliability,
            &mut v.reliability,
        ),
    ];
    for (field, policy, slot) in policies {
        *slot = st
            .read(i, field, || dev.violation_status(policy))
            .map(|t| t.violation_time);
    }
    if v != ViolationTimes::default() {
        s.violation_ns = Some(v);
    }
    if st.read_processes {
        let compute = st.read(i, "processes.compute", || dev.running_compute_processes());
        let graphics = st.read(i, "processes.graphics", || dev.running_graphics_processes());
        if compute.is_some() || graphics.is_some() {
            let mut list = Vec::new();
            for (kind, procs) in [("compute", compute), ("graphics", graphics)] {
                for p in procs.unwrap_or_default() {
                    list.push(process(kind, &p, &mut st.names));
                }
            }
            s.processes = Some(list);
        }
    }
    s
}

fn process(kind: &str, p: &ProcessInfo, names: &mut HashMap<u32, Option<String>>) -> GpuProcess {
    // Read once per pid: /proc costs a syscall or three, and a pid's name does not change while it lives.
    let name = names
        .entry(p.pid)
        .or_insert_with(|| sys::process_name(p.pid))
        .clone();
    GpuProcess {
        pid: p.pid,
        kind: kind.to_owned(),
        used_memory_mib: match p.used_gpu_memory {
            UsedGpuMemory::Used(bytes) => Some(bytes as f64 / MIB),
            UsedGpuMemory::Unavailable => None,
        },
        name,
    }
}

impl Backend for NvmlBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Nvml
    }

    fn gpus(&self) -> Vec<GpuRef> {
        self.gpus.clone()
    }

    fn timestamps(&self) -> Timestamps {
        Timestamps::HostSampled
    }

    fn run(&mut self, session: &mut Session<'_>) -> SourceEnd {
        let interval = session.interval();
        let mut next = session.started();
        loop {
            if session.wait_until(next) {
                return SourceEnd::Stopped;
            }
            let started = session.started();
            let samples = self.read_all(|| {
                Instant::now()
                    .saturating_duration_since(started)
                    .as_secs_f64()
            });
            self.state.flush(session);
            for s in samples {
                session.record(s);
            }
            if self.state.lost.len() == self.gpus.len() {
                return SourceEnd::Died {
                    detail: "every selected GPU was lost".into(),
                };
            }
            next += interval;
            let now = Instant::now();
            if next < now {
                // Driver calls took longer than the interval (or the thread was descheduled): ticks are skipped,
                // not queued, so the record shows the gap instead of a burst of back-to-back readings.
                let behind = now - next;
                let skipped = (behind.as_nanos() / interval.as_nanos().max(1)) as u64 + 1;
                session.count("missed_ticks", skipped);
                next += interval * u32::try_from(skipped).unwrap_or(u32::MAX);
                if next < now {
                    next = now + Duration::from_millis(1);
                }
            }
        }
    }

    fn sample_once(&mut self) -> Result<Vec<Sample>, Unavailable> {
        let samples = self.read_all(|| 0.0);
        self.state.pending.clear();
        Ok(samples)
    }

    fn identity(&mut self) -> Vec<GpuIdentity> {
        let driver = self.nvml.sys_driver_version().map_err(|e| describe(&e));
        let cuda = self
            .nvml
            .sys_cuda_driver_version()
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10))
            .map_err(|e| describe(&e));
        let mut out = Vec::new();
        for gpu in &self.gpus {
            let mut id = GpuIdentity::unknown(gpu.index, gpu.uuid.clone(), "not read");
            id.unavailable.remove("uuid");
            let dev = match self.nvml.device_by_index(gpu.index) {
                Ok(d) => d,
                Err(e) => {
                    let why = describe(&e);
                    out.push(GpuIdentity::unknown(gpu.index, gpu.uuid.clone(), &why));
                    continue;
                }
            };
            let name = dev.name().map_err(|e| describe(&e));
            let pci = dev.pci_info().map(|p| p.bus_id).map_err(|e| describe(&e));
            let vbios = dev.vbios_version().map_err(|e| describe(&e));
            let limit = dev
                .enforced_power_limit()
                .map(|mw| f64::from(mw) / 1000.0)
                .map_err(|e| describe(&e));
            let persistence = dev.is_in_persistent_mode().map_err(|e| describe(&e));
            id.note("name", &name);
            id.note("pci_bus_id", &pci);
            id.note("driver_version", &driver);
            id.note("cuda_driver_version", &cuda);
            id.note("vbios_version", &vbios);
            id.note("power_limit_w", &limit);
            id.note("persistence_mode", &persistence);
            id.name = name.ok();
            id.pci_bus_id = pci.ok();
            id.driver_version = driver.clone().ok();
            id.cuda_driver_version = cuda.clone().ok();
            id.vbios_version = vbios.ok();
            id.power_limit_w = limit.ok();
            id.persistence_mode = persistence.ok();
            out.push(id);
        }
        out
    }
}
