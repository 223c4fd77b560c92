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
//! - A GPU slice's debug annotations (rocprofv3's, `crate::pairing::Annotated`): a copy's or fill's
//!   `copy_bytes` → bytes; a kernel's `grid_size`, `workgroup_size` (work-item products, kept as
//!   `[product, 1, 1]`), `VGPR_Count` → registers, `LDS_Block_Size` → shared memory.
//! - Launch correlation: a track event's `correlation_id`, else its first flow id (rocprofv3 gives the
//!   API call and its dispatch one flow); a render stage's `event_id` against the
//!   `render_stage_submission_event_ids` of the call that submitted it.
//!
//! The events come in file order from `crate::pairing` (names resolved, times on the trace clock):
//! logged, and mapped here once every track descriptor of the file is known (a stream), or mapped as
//! they are paired, the descriptors read first (a plain file).

use crate::pairing::{Annotated, Logged, Names, Open, Pairing, Stage};
use crate::tracks::{NO_PROCESS, TrackInfo, Tracks};
use kineto_trace::native::rocprof_resources::KernelResources;
use kineto_trace::native::{KernelNames, TraceBuilder};
use kineto_trace::{
    GpuKind, GpuOpDetail, IdValue, Launch, NewGpuOp, Span, SpanKind, Trace, TraceFormat, Track,
};
use std::num::NonZeroU64;

/// Correlation scopes: track events' ids and flows, and render stages' event ids.
const FLOW_SCOPE: u64 = 0;
const RENDER_STAGE_SCOPE: u64 = 1;

/// What a slice is in the model.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SliceKind {
    Gpu(GpuKind),
    Call,
    Annotation,
    GpuAnnotation,
    Cpu,
}

/// A slice's name and first category, and the render stages it submitted: what tells its kind.
struct Named<'a> {
    name: &'a str,
    category: &'a str,
    submitted: Option<u64>,
}

/// The logged events onto the model, one at a time, in file order, with the tracks of every
/// descriptor of the file: at the end, from the log ([`map`]), or as they are paired when the
/// descriptors were read first ([`Mapper::new`], a plain file's first look).
pub struct Mapper {
    b: TraceBuilder,
    tracks: Tracks,
    kernels: KernelNames,
    /// Slices whose track has no descriptor.
    undescribed: u64,
    /// The last event's mapping failed: a render stage after the packet's track event is skipped.
    failed: bool,
}

/// The logged events onto the model, in file order, with the tracks of every descriptor of the file;
/// then the notes and warnings of what was not read row by row.
pub fn map(mut pairing: Pairing, tracks: Tracks) -> Trace {
    let mut m = Mapper::new(tracks);
    // Each chunk of the log is freed once mapped.
    for logged in pairing.take_log() {
        m.logged(&pairing.names, logged);
    }
    m.finish(&pairing)
}

impl Mapper {
    /// A mapper onto a new model, with the tracks of every descriptor of the file.
    pub fn new(tracks: Tracks) -> Mapper {
        Mapper {
            b: TraceBuilder::new(TraceFormat::Perfetto),
            tracks,
            kernels: KernelNames::default(),
            undescribed: 0,
            failed: false,
        }
    }

    /// One logged event into the model (`names`: the pairing's), a failure a warning at its packet.
    pub fn logged(&mut self, names: &Names, logged: Logged) {
        let (read, at) = match logged {
            Logged::Slice {
                uuid,
                open,
                end,
                thread,
                at,
            } => (self.slice(names, uuid, &open, end, thread), at),
            // The packet's track event failed: the packet's reading stopped there.
            Logged::Stage {
                after_event: true, ..
            } if self.failed => return,
            Logged::Stage { stage, at, .. } => (self.render_stage(names, &stage), at),
            Logged::Counted { what, ts, at } => (self.b.other(what.label(), ts, ts), at),
            Logged::Skipped { message, at } => (Err(message), at),
        };
        self.failed = read.is_err();
        if let Err(e) = read {
            self.b.warn(
                at.offset,
                format!(
                    "packet at byte {} (sequence {}): {e}; skipped",
                    at.offset, at.sequence
                ),
            );
        }
    }

    /// The model, with the notes and warnings of what `pairing` read otherwise than row by row.
    pub fn finish(mut self, pairing: &Pairing) -> Trace {
        self.finish_notes(pairing);
        self.b.finish()
    }
}

impl Mapper {
    /// A whole slice on track `uuid`, into the model by its kind.
    fn slice(
        &mut self,
        names: &Names,
        uuid: u64,
        open: &Open,
        end: i64,
        thread: Option<(i64, i64)>,
    ) -> Result<(), String> {
        let info = self.tracks.info(uuid);
        if info.is_none() && uuid != 0 {
            self.undescribed += 1;
        }
        let named = Named {
            name: names.get(open.name),
            category: names.get(open.category),
            submitted: open.submitted,
        };
        let dur = end
            .checked_sub(open.ts)
            .filter(|&d| d >= 0)
            .ok_or_else(|| format!("slice {:?} ends before it begins", named.name))?;
        let kind = slice_kind(&named, info.as_ref());
        let thread = self.thread_track(uuid, info.as_ref(), thread);
        match kind {
            SliceKind::Gpu(gpu_kind) => {
                let (device, stream) = info.as_ref().and_then(|i| i.gpu).unwrap_or((None, None));
                let device = device.unwrap_or(0);
                let stream = stream.unwrap_or(i64::try_from(uuid & 0x7FFF_FFFF).unwrap_or(0));
                let track = self.b.track(IdValue::Num(device), IdValue::Num(stream));
                let name = match gpu_kind {
                    GpuKind::Kernel => self.kernels.sym(&mut self.b, named.name),
                    _ => self.b.name(named.name),
                };
                let mut op = NewGpuOp::at(name, open.ts, dur, track);
                op.detail.device = Some(device);
                op.detail.stream = Some(stream);
                op.correlation = self.correlation(FLOW_SCOPE, open.correlation);
                annotated_detail(gpu_kind, &open.annotated, &mut op.detail);
                let process = info.as_ref().and_then(|i| i.pid);
                self.b.gpu_op_of(gpu_kind, op, process)
            }
            SliceKind::Call => {
                let (scope, raw) = match open.submitted {
                    Some(id) => (RENDER_STAGE_SCOPE, Some(id)),
                    None => (FLOW_SCOPE, open.correlation),
                };
                let correlation = self.correlation(scope, raw);
                let api = kineto_trace::native::api_of_call(named.name);
                let sym = self.b.name(named.name);
                self.b
                    .launch(Launch::at(sym, api, open.ts, dur, thread, correlation))
            }
            SliceKind::Annotation => self.b.marker_range(named.name, open.ts, end, thread),
            SliceKind::GpuAnnotation | SliceKind::Cpu => {
                let span_kind = if kind == SliceKind::Cpu {
                    SpanKind::CpuOp
                } else {
                    SpanKind::GpuUserAnnotation
                };
                let sym = self.b.name(named.name);
                self.b.span(span_kind, Span::at(sym, open.ts, dur, thread))
            }
        }
    }

    /// The model's (pid, tid) of a CPU-side track: a thread track's thread, else (its process, its
    /// name); a track with no descriptor, its sequence's thread descriptor (`thread`) when it has one.
    fn thread_track(
        &mut self,
        uuid: u64,
        info: Option<&TrackInfo>,
        thread: Option<(i64, i64)>,
    ) -> Track {
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
            None => match thread {
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

    /// One render stage: GPU work on its GPU's queue.
    fn render_stage(&mut self, names: &Names, s: &Stage) -> Result<(), String> {
        let track = self.b.track(IdValue::Num(s.device), IdValue::Num(s.queue));
        let name = names.get(s.name);
        let sym = match s.kind {
            GpuKind::Kernel => self.kernels.sym(&mut self.b, name),
            _ => self.b.name(name),
        };
        let mut op = NewGpuOp::at(sym, s.ts, s.dur, track);
        op.detail.device = Some(s.device);
        op.detail.stream = Some(s.queue);
        op.correlation = self.correlation(RENDER_STAGE_SCOPE, s.event_id);
        if let Some((grid, block, registers, shared)) = s.launch {
            (op.detail.grid, op.detail.block) = (grid, block);
            (op.detail.registers, op.detail.shared_memory) = (registers, shared);
        }
        self.b.gpu_op_of(s.kind, op, s.process)
    }

    /// The notes and warnings of what was read otherwise than one row per event.
    fn finish_notes(&mut self, pairing: &Pairing) {
        let open = pairing.open_slices();
        if open > 0 {
            self.b.warn(
                0,
                format!(
                    "{open} slices begun and never ended (the trace stopped inside them): not read"
                ),
            );
        }
        if pairing.unmatched_ends > 0 {
            self.b.note(format!(
                "{} slice ends with no begin on their track (the begin fell before the trace): not read",
                pairing.unmatched_ends
            ));
        }
        if self.undescribed > 0 {
            self.b.note(format!(
                "{} slices on tracks with no TrackDescriptor: their process and thread unknown",
                self.undescribed
            ));
        }
        // A warning, not a note: what those packets held is not in the model (a file whose every
        // event needs state never set up reads as no events, which must not look like an empty trace).
        if pairing.skipped > 0 {
            self.b.warn(
                0,
                format!(
                    "{} packets skipped: they need their sequence's incremental state (interned \
                     names), lost before them",
                    pairing.skipped
                ),
            );
        }
        let faults = &pairing.annotation_faults;
        if faults.unnamed > 0 {
            self.b.warn(
                0,
                format!(
                    "{} debug annotations named by an iid not interned on their sequence: not read",
                    faults.unnamed
                ),
            );
        }
        if faults.odd > 0 {
            self.b.warn(
                0,
                format!(
                    "{} debug annotations {} not an unsigned integer (or too large): not read",
                    faults.odd,
                    annotation_names()
                ),
            );
        }
        if pairing.zstd > 0 {
            self.b.warn(
                0,
                format!(
                    "{} packets of zstd-compressed packets not read (only deflate is read)",
                    pairing.zstd
                ),
            );
        }
    }
}

/// A GPU op's detail from its slice's debug annotations: a copy's or fill's bytes; a kernel's launch
/// shape, its registers and LDS by the rule of every rocprofv3 reader
/// (`kineto_trace::native::rocprof_resources`). rocprofv3 writes the grid and workgroup as their work-item products (x·y·z), so they are
/// kept as `[product, 1, 1]`: the totals are the file's, the dimensions it does not give are 1.
fn annotated_detail(kind: GpuKind, a: &Annotated, detail: &mut GpuOpDetail) {
    match kind {
        GpuKind::Memcpy | GpuKind::Memset => detail.bytes = a.bytes,
        GpuKind::Kernel => {
            if let Some(g) = a.grid {
                detail.grid = [g, 1, 1];
            }
            if let Some(b) = a.block {
                detail.block = [b, 1, 1];
            }
            KernelResources {
                arch_vgprs: a.registers,
                group_segment_bytes: a.shared,
            }
            .set_on(detail);
        }
    }
}

/// The names of the annotations read, as the warning lists them: `a, b … or e`.
fn annotation_names() -> String {
    let names: Vec<String> = crate::pairing::READ
        .iter()
        .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// What a slice is, by its category, else its track.
fn slice_kind(open: &Named, info: Option<&TrackInfo>) -> SliceKind {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn open<'a>(category: &'a str, name: &'a str) -> Named<'a> {
        Named {
            name,
            category,
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
    }
}
