//! The packets' events onto the trace model (docs/native-formats.md, "Perfetto", says the same):
//!
//! - A `TrackEvent` slice (begin and end on one track, or a legacy complete event) is told by its
//!   first category, else by its track: `kernel_dispatch`/`kernel` → kernel, `memory_copy`/`memcpy` →
//!   copy, `memory_set`/`memset` → fill (rocprofv3's categories), and any slice on a GPU track (the
//!   `gpu_track` extension, or a rocprofv3 `… AGENT [n] STREAM [s] (GPU)` track) → GPU work by name;
//!   `hip_api`, `hsa_api`, `cuda_runtime`, `cuda_driver`, `rccl_api` or a slice that submitted render
//!   stages (`gpu_correlation`) → a runtime or driver call; `marker_api` (roctx), `nvtx`,
//!   `user_annotation` or a name `ProfilerStep#N` → a user annotation (a step can be one);
//!   `gpu_user_annotation` → a GPU annotation; the rest → CPU ops. Instants and counter values are
//!   counted, not kept.
//! - A `GpuRenderStageEvent` is GPU work on GPU `gpu_id`, queue `hw_queue_iid`: a kernel when it names a
//!   compute kernel or a launch or its stage is `COMPUTE`; else a copy or fill when its stage's name
//!   says so (`copy`, `transfer`, `blit` / `fill`, `memset`, `clear`), else a kernel.
//! - Launch correlation: a track event's `correlation_id`, else its first flow id (rocprofv3 gives the
//!   API call and its dispatch one flow); a render stage's `event_id` against the
//!   `render_stage_submission_event_ids` of the call that submitted it.

use crate::clock::Clocks;
use crate::proto::{GpuRenderStageEvent, TracePacket, TrackEvent};
use crate::sequence::Sequence;
use crate::tracks::{NO_PROCESS, TrackInfo, Tracks};
use kineto_trace::native::{KernelNames, TraceBuilder};
use kineto_trace::{GpuKind, GpuOp, IdValue, Launch, Span, SpanKind, Track};
use rustc_hash::FxHashMap;
use std::num::NonZeroU64;

/// Correlation scopes: track events' ids and flows, and render stages' event ids.
const FLOW_SCOPE: u64 = 0;
const RENDER_STAGE_SCOPE: u64 = 1;

/// `TrackEvent.Type`.
const SLICE_BEGIN: i32 = 1;
const SLICE_END: i32 = 2;
const INSTANT: i32 = 3;
const COUNTER: i32 = 4;

/// What a slice is in the model.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SliceKind {
    Gpu(GpuKind),
    Call,
    Annotation,
    GpuAnnotation,
    Cpu,
}

/// A slice begun and not yet ended.
struct Open {
    name: String,
    category: String,
    ts: i64,
    correlation: Option<u64>,
    submitted: Option<u64>,
}

pub struct Reader {
    pub b: TraceBuilder,
    pub tracks: Tracks,
    pub clocks: Clocks,
    kernels: KernelNames,
    /// Open slices per track uuid.
    open: FxHashMap<u64, Vec<Open>>,
    /// Ends with no begin on their track.
    unmatched_ends: u64,
    /// Events whose track has no descriptor.
    undescribed: u64,
}

/// A packet's place, for warnings.
pub struct At {
    pub offset: u64,
    pub sequence: u32,
}

impl Reader {
    pub fn new(b: TraceBuilder, tracks: Tracks, clocks: Clocks) -> Reader {
        Reader {
            b,
            tracks,
            clocks,
            kernels: KernelNames::default(),
            open: FxHashMap::default(),
            unmatched_ends: 0,
            undescribed: 0,
        }
    }

    /// The packet's timestamp on the trace clock.
    pub fn time(&mut self, p: &TracePacket, seq: &Sequence, at: &At) -> Result<i64, String> {
        let raw = p.timestamp.ok_or("no timestamp")?;
        let clock = p
            .timestamp_clock_id
            .or(seq.default_clock)
            .unwrap_or(self.clocks.trace_clock);
        self.clocks.on_trace_clock(at.sequence, clock, raw)
    }

    /// One track event.
    pub fn track_event(&mut self, e: &TrackEvent, ts: i64, seq: &Sequence) -> Result<(), String> {
        let uuid = e.track_uuid.or(seq.default_track).unwrap_or(0);
        let legacy = e.legacy_event.as_ref();
        let kind = e.r#type.or_else(|| match legacy?.phase? {
            0x42 => Some(SLICE_BEGIN), // 'B'
            0x45 => Some(SLICE_END),   // 'E'
            0x49 | 0x69 | 0x6E => Some(INSTANT),
            _ => None,
        });
        let complete_us = legacy
            .filter(|l| l.phase == Some(0x58)) // 'X'
            .and_then(|l| l.duration_us);
        match (kind, complete_us) {
            (_, Some(us)) => {
                let open = self.opened(e, ts, seq)?;
                let end = ts.saturating_add(us.saturating_mul(1_000));
                self.slice(uuid, open, end, seq)
            }
            (Some(SLICE_BEGIN), None) => {
                let open = self.opened(e, ts, seq)?;
                self.open.entry(uuid).or_default().push(open);
                Ok(())
            }
            (Some(SLICE_END), None) => match self.open.get_mut(&uuid).and_then(Vec::pop) {
                Some(open) => self.slice(uuid, open, ts, seq),
                None => {
                    self.unmatched_ends += 1;
                    Err("a slice end with no begin on its track".into())
                }
            },
            (Some(INSTANT), None) => self.b.other("perfetto instant", ts, ts),
            (Some(COUNTER), None) => self.b.other("perfetto counter value", ts, ts),
            (other, None) => Err(format!("track event of type {other:?}, not read")),
        }
    }

    /// A slice's begin: its name and first category by their interned ids when they have them.
    fn opened(&self, e: &TrackEvent, ts: i64, seq: &Sequence) -> Result<Open, String> {
        let name_iid = e.name_iid.or_else(|| e.legacy_event.as_ref()?.name_iid);
        let name = match (&e.name, name_iid) {
            (Some(n), _) => crate::text(Some(n)),
            (None, Some(iid)) => seq
                .names
                .get(&iid)
                .cloned()
                .ok_or_else(|| format!("event name iid {iid} not interned on its sequence"))?,
            (None, None) => String::new(),
        };
        let category =
            match (e.categories.first(), e.category_iids.first()) {
                (Some(c), _) => crate::text(Some(c)),
                (None, Some(iid)) => seq.categories.get(iid).cloned().ok_or_else(|| {
                    format!("event category iid {iid} not interned on its sequence")
                })?,
                (None, None) => String::new(),
            };
        let correlation = e
            .correlation_id
            .or_else(|| e.flow_ids.first().copied())
            .or_else(|| e.flow_ids_old.first().copied());
        let submitted = e
            .gpu_correlation
            .as_ref()
            .and_then(|g| g.render_stage_submission_event_ids.first().copied());
        Ok(Open {
            name,
            category,
            ts,
            correlation,
            submitted,
        })
    }

    /// A whole slice on track `uuid`, into the model by its kind.
    fn slice(&mut self, uuid: u64, open: Open, end: i64, seq: &Sequence) -> Result<(), String> {
        let info = self.tracks.info(uuid);
        if info.is_none() && uuid != 0 {
            self.undescribed += 1;
        }
        let dur = end
            .checked_sub(open.ts)
            .filter(|&d| d >= 0)
            .ok_or_else(|| format!("slice {:?} ends before it begins", open.name))?;
        let kind = slice_kind(&open, info.as_ref());
        let thread = self.thread_track(uuid, info.as_ref(), seq);
        match kind {
            SliceKind::Gpu(gpu_kind) => {
                let (device, stream) = info.as_ref().and_then(|i| i.gpu).unwrap_or((None, None));
                let device = device.unwrap_or(0);
                let stream = stream.unwrap_or(i64::try_from(uuid & 0x7FFF_FFFF).unwrap_or(0));
                let track = self.b.track(IdValue::Num(device), IdValue::Num(stream));
                let name = match gpu_kind {
                    GpuKind::Kernel => self.kernels.sym(&mut self.b, &open.name),
                    _ => self.b.name(&open.name),
                };
                let mut op = GpuOp::at(name, open.ts, dur, track);
                op.device = Some(device);
                op.stream = Some(stream);
                op.correlation = self.correlation(FLOW_SCOPE, open.correlation);
                let process = info.as_ref().and_then(|i| i.pid);
                self.b.gpu_op_of(gpu_kind, op, process)
            }
            SliceKind::Call => {
                let (scope, raw) = match open.submitted {
                    Some(id) => (RENDER_STAGE_SCOPE, Some(id)),
                    None => (FLOW_SCOPE, open.correlation),
                };
                let correlation = self.correlation(scope, raw);
                let api = kineto_trace::native::api_of_call(&open.name);
                let sym = self.b.name(&open.name);
                self.b
                    .launch(Launch::at(sym, api, open.ts, dur, thread, correlation))
            }
            SliceKind::Annotation => self.b.marker_range(&open.name, open.ts, end, thread),
            SliceKind::GpuAnnotation | SliceKind::Cpu => {
                let span_kind = if kind == SliceKind::Cpu {
                    SpanKind::CpuOp
                } else {
                    SpanKind::GpuUserAnnotation
                };
                let sym = self.b.name(&open.name);
                self.b.span(span_kind, Span::at(sym, open.ts, dur, thread))
            }
        }
    }

    /// The model's (pid, tid) of a CPU-side track: a thread track's thread, else (its process, its
    /// name); a track with no descriptor, the sequence's thread descriptor when it has one.
    fn thread_track(&mut self, uuid: u64, info: Option<&TrackInfo>, seq: &Sequence) -> Track {
        match info {
            Some(i) => {
                let pid = IdValue::Num(i.pid.unwrap_or(NO_PROCESS));
                let tid = match i.tid {
                    Some(t) => IdValue::Num(t),
                    None if i.name.is_empty() => IdValue::Str(format!("track {uuid}")),
                    None => IdValue::Str(i.name.clone()),
                };
                self.b.track(pid, tid)
            }
            None => match seq.thread {
                Some((pid, tid)) => self.b.track(IdValue::Num(pid), IdValue::Num(tid)),
                None => self.b.track(
                    IdValue::Num(NO_PROCESS),
                    IdValue::Str(format!("track {uuid}")),
                ),
            },
        }
    }

    fn correlation(&mut self, scope: u64, raw: Option<u64>) -> Option<NonZeroU64> {
        self.b.correlation(scope, raw?)
    }

    /// One render-stage event: GPU work on its GPU's queue.
    pub fn render_stage(
        &mut self,
        e: &GpuRenderStageEvent,
        ts: i64,
        seq: &Sequence,
    ) -> Result<(), String> {
        let dur = i64::try_from(e.duration.unwrap_or(0)).map_err(|_| "duration out of range")?;
        let stage = e.stage_iid.and_then(|iid| seq.stages.get(&iid));
        let name = render_stage_name(e, seq)?;
        let kind = if e.kernel_iid.is_some()
            || e.launch.is_some()
            || stage.is_some_and(|s| s.category == 2)
        {
            GpuKind::Kernel
        } else {
            stage.map_or(GpuKind::Kernel, |s| kind_of_stage(&s.name))
        };
        let device = i64::from(e.gpu_id.unwrap_or(0));
        let queue = e
            .hw_queue_iid
            .and_then(|q| i64::try_from(q).ok())
            .or_else(|| e.hw_queue_id.map(i64::from))
            .unwrap_or(0);
        let track = self.b.track(IdValue::Num(device), IdValue::Num(queue));
        let sym = match kind {
            GpuKind::Kernel => self.kernels.sym(&mut self.b, &name),
            _ => self.b.name(&name),
        };
        let mut op = GpuOp::at(sym, ts, dur, track);
        op.device = Some(device);
        op.stream = Some(queue);
        op.correlation = self.correlation(RENDER_STAGE_SCOPE, e.event_id);
        if let Some(launch) = &e.launch {
            let dims = |d: &Option<crate::proto::Dim3>| {
                d.as_ref().map_or([0; 3], |d| {
                    [d.x.unwrap_or(1), d.y.unwrap_or(1), d.z.unwrap_or(1)]
                })
            };
            op.grid = dims(&launch.grid_size);
            op.block = dims(&launch.workgroup_size);
            (op.registers, op.shared_memory) = launch_resources(launch, seq);
        }
        let process = e
            .context
            .and_then(|c| seq.contexts.get(&c))
            .map(|&pid| i64::from(pid));
        self.b.gpu_op_of(kind, op, process)
    }

    /// The notes and warnings of what was read otherwise than one row per event.
    pub fn finish_notes(&mut self) {
        let open: usize = self.open.values().map(Vec::len).sum();
        if open > 0 {
            self.b.warn(
                0,
                format!(
                    "{open} slices begun and never ended (the trace stopped inside them): not read"
                ),
            );
        }
        if self.unmatched_ends > 0 {
            self.b.note(format!(
                "{} slice ends with no begin on their track (the begin fell before the trace): not read",
                self.unmatched_ends
            ));
        }
        if self.undescribed > 0 {
            self.b.note(format!(
                "{} slices on tracks with no TrackDescriptor: their process and thread unknown",
                self.undescribed
            ));
        }
    }
}

/// What a slice is, by its category, else its track.
fn slice_kind(open: &Open, info: Option<&TrackInfo>) -> SliceKind {
    let category = open.category.to_ascii_lowercase();
    match category.as_str() {
        "kernel_dispatch" | "kernel" | "gpu_kernel" | "cuda_kernel" => {
            return SliceKind::Gpu(GpuKind::Kernel);
        }
        "memory_copy" | "memcpy" | "gpu_memcpy" => return SliceKind::Gpu(GpuKind::Memcpy),
        "memory_set" | "memset" | "gpu_memset" => return SliceKind::Gpu(GpuKind::Memset),
        "hip_api" | "hsa_api" | "cuda_runtime" | "cuda_driver" | "cuda_api" | "rccl_api" => {
            return SliceKind::Call;
        }
        "marker_api" | "nvtx" | "roctx" | "user_annotation" => return SliceKind::Annotation,
        "gpu_user_annotation" => return SliceKind::GpuAnnotation,
        _ => {}
    }
    if info.is_some_and(|i| i.gpu.is_some()) {
        let name = open.name.to_ascii_lowercase();
        return SliceKind::Gpu(
            if name.starts_with("memcpy") || name.starts_with("memory_copy") {
                GpuKind::Memcpy
            } else if name.starts_with("memset") {
                GpuKind::Memset
            } else {
                GpuKind::Kernel
            },
        );
    }
    if open.submitted.is_some() {
        SliceKind::Call
    } else if open.name.starts_with("ProfilerStep#") {
        SliceKind::Annotation
    } else {
        SliceKind::Cpu
    }
}

/// A copy or fill by its stage's name; any other stage is a kernel.
fn kind_of_stage(stage: &str) -> GpuKind {
    let s = stage.to_ascii_lowercase();
    if ["copy", "transfer", "blit"].iter().any(|w| s.contains(w)) {
        GpuKind::Memcpy
    } else if ["fill", "memset", "clear"].iter().any(|w| s.contains(w)) {
        GpuKind::Memset
    } else {
        GpuKind::Kernel
    }
}

/// A render stage's name: its own, its interned name, its compute kernel's, its stage's.
fn render_stage_name(e: &GpuRenderStageEvent, seq: &Sequence) -> Result<String, String> {
    if let Some(n) = &e.name {
        return Ok(crate::text(Some(n)));
    }
    let interned = |table: &FxHashMap<u64, String>, iid: Option<u64>, what: &str| {
        iid.map(|iid| {
            table
                .get(&iid)
                .cloned()
                .ok_or_else(|| format!("{what} iid {iid} not interned on its sequence"))
        })
    };
    if let Some(n) = interned(&seq.names, e.name_iid, "event name") {
        return n;
    }
    if let Some(n) = interned(&seq.kernels, e.kernel_iid, "compute kernel") {
        return n;
    }
    match e.stage_iid {
        Some(iid) => seq
            .stages
            .get(&iid)
            .map(|s| s.name.clone())
            .ok_or_else(|| format!("render stage iid {iid} not interned on its sequence")),
        None => Ok(format!("stage {}", e.stage_id.unwrap_or(0))),
    }
}

/// Registers per thread and shared memory (static + dynamic) from a launch's arguments.
fn launch_resources(
    launch: &crate::proto::ComputeKernelLaunch,
    seq: &Sequence,
) -> (Option<u32>, Option<u32>) {
    let (mut registers, mut shared) = (None, None::<u32>);
    for arg in &launch.args {
        let name = match (&arg.name, arg.name_iid) {
            (Some(n), _) => crate::text(Some(n)),
            (None, Some(iid)) => seq.arg_names.get(&iid).cloned().unwrap_or_default(),
            (None, None) => continue,
        };
        let value = arg
            .uint_value
            .or_else(|| arg.int_value.and_then(|i| u64::try_from(i).ok()))
            .and_then(|v| u32::try_from(v).ok());
        match name.as_str() {
            "registers_per_thread" => registers = value,
            "shared_mem_static" | "shared_mem_dynamic" => {
                shared = Some(shared.unwrap_or(0).saturating_add(value.unwrap_or(0)));
            }
            _ => {}
        }
    }
    (registers, shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(category: &str, name: &str) -> Open {
        Open {
            name: name.into(),
            category: category.into(),
            ts: 0,
            correlation: None,
            submitted: None,
        }
    }

    #[test]
    fn slices_are_told_by_category_then_track() {
        assert_eq!(
            slice_kind(&open("kernel_dispatch", "k"), None),
            SliceKind::Gpu(GpuKind::Kernel)
        );
        assert_eq!(
            slice_kind(&open("memory_copy", "MEMORY_COPY_HOST_TO_DEVICE"), None),
            SliceKind::Gpu(GpuKind::Memcpy)
        );
        assert_eq!(
            slice_kind(&open("hip_api", "hipLaunchKernel"), None),
            SliceKind::Call
        );
        assert_eq!(
            slice_kind(&open("marker_api", "step"), None),
            SliceKind::Annotation
        );
        assert_eq!(
            slice_kind(&open("", "ProfilerStep#3"), None),
            SliceKind::Annotation
        );
        assert_eq!(slice_kind(&open("app", "work"), None), SliceKind::Cpu);
        let gpu = TrackInfo {
            name: "q".into(),
            pid: None,
            tid: None,
            gpu: Some((Some(1), None)),
        };
        assert_eq!(
            slice_kind(&open("", "MemcpyHtoD"), Some(&gpu)),
            SliceKind::Gpu(GpuKind::Memcpy)
        );
        assert_eq!(kind_of_stage("Blit"), GpuKind::Memcpy);
        assert_eq!(kind_of_stage("render"), GpuKind::Kernel);
    }
}
