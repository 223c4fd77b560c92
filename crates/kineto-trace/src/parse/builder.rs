//! The model builder: folds accepted events into the [`Trace`], interning names and (pid, tid) pairs,
//! counting phases and categories, keeping warnings (the first [`KEEP_WARNINGS`]) and time bounds.
//!
//! What it is not: the vendor readers' builder (`native/builder.rs`), which fills the same model
//! from whole rows.

use super::event::{Args, RawEvent};
use crate::category::EventKind;
use crate::model::{
    Api, Flow, FlowPhase, GemmRows, GpuKind, GpuOp, GpuOpDetail, IdValue, Launch, NewGpuOp, Span,
    Sym, Trace, Track, TrackIds, Warning,
};
use crate::scan::{Cursor, Scan, event_bad, parse_i64, parse_u64};
use crate::trace_events::DevicePids;
use rustc_hash::FxHashMap;
use std::num::NonZeroU64;

/// Events per one-byte ASCII phase.
struct PhaseCounts([u64; 128]);

impl Default for PhaseCounts {
    fn default() -> Self {
        PhaseCounts([0; 128])
    }
}

impl std::ops::IndexMut<usize> for PhaseCounts {
    fn index_mut(&mut self, i: usize) -> &mut u64 {
        &mut self.0[i & 127]
    }
}

impl std::ops::Index<usize> for PhaseCounts {
    type Output = u64;
    fn index(&self, i: usize) -> &u64 {
        &self.0[i & 127]
    }
}

/// Accumulates the model as events arrive.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) trace: Trace,
    track_map: FxHashMap<Box<[u8]>, u32>,
    /// The last few (pid, tid) tokens seen, as pid‖tid with the split point: consecutive events
    /// mostly share them, and a hit skips hashing.
    track_cache: [(Vec<u8>, usize, u32); 4],
    track_cache_next: usize,
    min_ts: i64,
    max_end: i64,
    /// Stream offset of the window's first byte, for warnings.
    pub(super) base: u64,
    phase_counts: PhaseCounts,
    timed: bool,
    /// `python_function` `X` events, counted here (a `with_stack` trace has millions) and folded into
    /// `Counts::other_complete` at the end.
    python_events: u64,
    /// Keep every `python_function` event, not only a step profile's ([`crate::Options::python_frames`]).
    python_frames: bool,
    /// `B` and `E` events in file order, paired at the end (a pair may span the ranges of a parallel
    /// parse).
    begin_ends: Vec<BeginEnd>,
    /// `X` events of another producer's GPU category on a pid whose text names no device, with their
    /// durations: placed at the end, once every `process_name` is read ([`DevicePids`]).
    foreign_unresolved: Vec<(BeginEnd, i64)>,
    /// The pids that are devices, for other producers' GPU categories.
    pub(super) devices: DevicePids,
    /// A range's ops, calls and spans, held whole until the range is folded into the model, which
    /// encodes them ([`crate::Rows`]); `None` in the builder of the model itself, whose rows go
    /// straight to it.
    pub(super) range: Option<RangeRows>,
}

/// A range's rows of the tables the model keeps encoded: encoded in the range and again in the fold
/// (with the model's names, tracks and details), they would cost the fold's thread, which the parse
/// waits on, a decode and an encode a row; held whole, an encode.
#[derive(Default)]
pub(super) struct RangeRows {
    /// Kernels, copies and fills ([`GpuKind::index`]'s order).
    pub(super) ops: [Vec<GpuOp>; 3],
    pub(super) launches: Vec<Launch>,
    /// CPU ops, user and GPU annotations and Python functions, in that order.
    pub(super) spans: [Vec<Span>; 4],
}

/// A `B` or `E` event kept until every event is read (or an `X` event of another producer's GPU
/// category, as its `B`).
struct BeginEnd {
    end: bool,
    ts: i64,
    track: Track,
    /// What the `B` is (an `E`'s own fields are not used).
    kind: EventKind,
    foreign_gpu: bool,
    name: Sym,
    cat: String,
    args: Args,
    /// Stream offset, for warnings.
    offset: u64,
}

/// The kind of another producer's GPU op, by its name (`crate::trace_events::foreign_gpu_kind`).
fn foreign_gpu_event_kind(name: &str) -> EventKind {
    match crate::trace_events::foreign_gpu_kind(name) {
        GpuKind::Kernel => EventKind::Kernel,
        GpuKind::Memcpy => EventKind::Memcpy,
        GpuKind::Memset => EventKind::Memset,
    }
}

pub(super) const KEEP_WARNINGS: usize = 100;

impl Builder {
    /// An empty model; `python_frames`: [`crate::Options::python_frames`].
    pub(super) fn new(python_frames: bool) -> Builder {
        Builder {
            python_frames,
            ..Builder::default()
        }
    }

    pub(super) fn warn(&mut self, at: usize, message: String) {
        self.warn_at(self.base + at as u64, message);
    }

    /// A warning at a stream offset (for a byte read in an earlier window).
    pub(super) fn warn_at(&mut self, offset: u64, message: String) {
        self.trace.warnings_total += 1;
        if self.trace.warnings.len() < KEEP_WARNINGS {
            self.trace.warnings.push(Warning { offset, message });
        }
    }

    #[inline]
    fn track(&mut self, pid: Option<&[u8]>, tid: Option<&[u8]>) -> Track {
        let pid = pid.unwrap_or(b"null");
        let tid = tid.unwrap_or(b"null");
        for (k, split, v) in &self.track_cache {
            if k.len() == pid.len() + tid.len() && k[..*split] == *pid && k[*split..] == *tid {
                return Track(*v);
            }
        }
        let mut key = Vec::with_capacity(pid.len() + tid.len() + 1);
        key.extend_from_slice(pid);
        key.push(0);
        key.extend_from_slice(tid);
        let id = if let Some(&id) = self.track_map.get(key.as_slice()) {
            id
        } else {
            let id = self.trace.tracks.len() as u32;
            self.trace.tracks.push(TrackIds {
                pid: id_value(pid),
                tid: id_value(tid),
            });
            self.track_map.insert(key.into_boxed_slice(), id);
            id
        };
        let slot = &mut self.track_cache[self.track_cache_next];
        slot.0.clear();
        slot.0.extend_from_slice(pid);
        slot.0.extend_from_slice(tid);
        slot.1 = pid.len();
        slot.2 = id;
        self.track_cache_next = (self.track_cache_next + 1) % self.track_cache.len();
        Track(id)
    }

    /// Folds one event into the model. `start` is the event's index in `buf`.
    #[inline]
    pub(super) fn apply(&mut self, ev: &RawEvent<'_>, start: usize) -> Scan<()> {
        // `{}` is no event (XLA's profiler ends its array with one, as rocprof opens its with one).
        if ev.empty {
            return Ok(());
        }
        // Counted only once accepted, so an error's event index is the 0-based index of the bad one.
        self.apply_inner(ev, start)?;
        self.trace.counts.events += 1;
        Ok(())
    }

    /// The event's phase counted; for the phases the model uses, its times checked and taken into the
    /// bounds, and its record kept by its category.
    #[inline]
    fn apply_inner(&mut self, ev: &RawEvent<'_>, start: usize) -> Scan<()> {
        let Some(ph) = ev.ph.as_deref() else {
            return event_bad(start, "no \"ph\" (event phase)");
        };
        let ph_byte = if ph.len() == 1 { ph[0] } else { 0 };
        self.count_phase(ph);
        if ph_byte == b'M' && ev.name.as_deref() == Some(b"process_name") {
            self.process_name(ev);
        }
        // An async slice of a GPU-looking category: no GPU op (no device or stream), but counted under
        // its category for the note of what no rule places (`crate::trace_events::unplaced_note`).
        if ph_byte == b'b'
            && let Some(cat) = ev.cat.as_deref()
            && let Ok(cat) = std::str::from_utf8(cat)
            && crate::trace_events::gpu_looking(cat)
        {
            *self
                .trace
                .counts
                .other_complete
                .entry(cat.to_string())
                .or_insert(0) += 1;
        }
        // Metadata (`M`) and the phases the model does not use are counted only: the phases read are
        // `trace_events::TIMED_PHASES` (which names the others in a note), matched here as bytes.
        if !matches!(
            ph_byte,
            b'X' | b'i' | b'I' | b's' | b'f' | b't' | b'B' | b'E'
        ) {
            return Ok(());
        }
        // The time checks and bounds stay inline: as a function of their own (returning ts and dur) the
        // parse took ~1 % more instructions (MEASURED, callgrind on the dev profile, 60 000 events:
        // 289.7 M against 286.9 M).
        let invalid = |msg: String| -> Scan<()> { event_bad(start, msg) };
        let Some(ts) = ev.ts else {
            return invalid(format!(
                "a \"{}\" event with no \"ts\"",
                String::from_utf8_lossy(ph)
            ));
        };
        let Some(ts) = ts else {
            return invalid(format!("\"ts\" is out of range: {}", crate::time::RANGE));
        };
        let dur = match ev.dur {
            Some(Some(d)) if d < 0 => {
                return invalid(format!("negative \"dur\" ({d} ns)"));
            }
            Some(Some(d)) => d,
            Some(None) => {
                return invalid(format!("\"dur\" is out of range: {}", crate::time::RANGE));
            }
            None if ph_byte == b'X' => return invalid("an \"X\" event with no \"dur\"".into()),
            None => 0,
        };
        if ts.unsigned_abs() > crate::time::MAX_ABS_NS.unsigned_abs() {
            return invalid(format!("\"ts\" is out of range: {}", crate::time::RANGE));
        }
        let end = match ts.checked_add(dur) {
            Some(end) if end <= crate::time::MAX_ABS_NS => end,
            _ => {
                return invalid(format!(
                    "\"ts\" + \"dur\" ends past the range: {}",
                    crate::time::RANGE
                ));
            }
        };
        if self.timed {
            self.min_ts = self.min_ts.min(ts);
            self.max_end = self.max_end.max(end);
        } else {
            self.timed = true;
            self.min_ts = ts;
            self.max_end = end;
        }
        let cat = ev.kind.unwrap_or(EventKind::Other);
        if let Some(field) = ev.args.odd_field {
            self.warn(
                start,
                format!("args.\"{field}\" has a form that cannot be used; treated as absent"),
            );
        }
        match (ph_byte, cat) {
            (b'X', _) if ev.foreign_gpu => self.foreign_gpu_op(ev, ts, dur, start),
            (b'X', EventKind::Kernel | EventKind::Memcpy | EventKind::Memset) => {
                self.gpu_op(ev, cat, ts, dur);
            }
            (b'X', EventKind::Runtime | EventKind::Driver) => self.gpu_op(ev, cat, ts, dur),
            (b'X', EventKind::CpuOp | EventKind::UserAnnotation | EventKind::GpuUserAnnotation) => {
                self.span(ev, cat, ts, dur);
            }
            (b'X', EventKind::PythonFunction) => self.python_function(ev, ts, dur),
            (b'X', _) => {
                let c = String::from_utf8_lossy(ev.cat.as_deref().unwrap_or(b"")).into_owned();
                *self.trace.counts.other_complete.entry(c).or_insert(0) += 1;
            }
            (b's' | b'f', EventKind::Flow) => self.flow(ev, ph_byte, ts, start),
            (b'B' | b'E', _) => {
                let be = self.kept(ev, ph_byte == b'E', ts, start);
                self.begin_ends.push(be);
            }
            _ => {}
        }
        Ok(())
    }

    /// A `process_name` metadata event: the device it names its pid, if any.
    fn process_name(&mut self, ev: &RawEvent<'_>) {
        if let Some(name) = ev.args_raw.and_then(super::event::args_name) {
            let pid = id_value(ev.pid.unwrap_or(b"null"));
            self.devices.process_name(pid, &name);
        }
    }

    /// An event kept until every event is read (a `B` or `E`, or an `X` of another producer's GPU
    /// category), with what the model needs of it.
    fn kept(&mut self, ev: &RawEvent<'_>, end: bool, ts: i64, start: usize) -> BeginEnd {
        BeginEnd {
            end,
            ts,
            track: self.track(ev.pid, ev.tid),
            kind: ev.kind.unwrap_or(EventKind::Other),
            foreign_gpu: ev.foreign_gpu,
            name: self.name(ev.name.as_deref()),
            cat: String::from_utf8_lossy(ev.cat.as_deref().unwrap_or(b"")).into_owned(),
            args: ev.args.clone(),
            offset: self.base + start as u64,
        }
    }

    /// An event of another producer's GPU category: a GPU op on a device's pid (its name tells which
    /// kind, `crate::trace_events`); on a pid whose text names no device, placed at the end (a
    /// `process_name` anywhere may name it one).
    fn foreign_gpu_op(&mut self, ev: &RawEvent<'_>, ts: i64, dur: i64, start: usize) {
        use crate::trace_events::device_pid;
        let device = device_pid(&id_value(ev.pid.unwrap_or(b"null")));
        let (ts, dur) = match (ev.args.start_ns, ev.args.end_ns) {
            (Some(t0), Some(t1)) if crate::trace_events::same_clock(ts, dur, t0, t1) => {
                (t0, t1 - t0)
            }
            _ => (ts, dur),
        };
        let Some(device) = device else {
            let kept = self.kept(ev, false, ts, start);
            self.foreign_unresolved.push((kept, dur));
            return;
        };
        // The device is the one the pid's text names (`trace_events::device_pid`, as the deferred path
        // and the array reader take it), not a number read off the pid: `"GPU1"` is device 1.
        let kind =
            foreign_gpu_event_kind(&String::from_utf8_lossy(ev.name.as_deref().unwrap_or(b"")));
        let mut args = std::borrow::Cow::Borrowed(&ev.args);
        if args.device.is_none() {
            args.to_mut().device = Some(device);
        }
        let name = self.name(ev.name.as_deref());
        let track = self.track(ev.pid, ev.tid);
        self.push_gpu_op(kind, name, track, &args, ts, dur);
    }

    /// A kernel, copy or fill, or a runtime or driver call (`cat` says which).
    #[inline]
    fn gpu_op(&mut self, ev: &RawEvent<'_>, cat: EventKind, ts: i64, dur: i64) {
        let name = self.name(ev.name.as_deref());
        let track = self.track(ev.pid, ev.tid);
        match cat {
            EventKind::Runtime | EventKind::Driver => {
                self.push_launch(cat, name, track, &ev.args, ts, dur)
            }
            _ => self.push_gpu_op(cat, name, track, &ev.args, ts, dur),
        }
    }

    /// A kernel, copy or fill from its parts.
    #[inline]
    fn push_gpu_op(
        &mut self,
        cat: EventKind,
        name: Sym,
        track: Track,
        a: &Args,
        ts: i64,
        dur: i64,
    ) {
        let ids = self.trace.track(track);
        let detail = GpuOpDetail {
            device: a.device.or_else(|| ids.pid.as_i64()),
            stream: a.stream.or_else(|| ids.tid.as_i64()),
            grid: a.grid.unwrap_or_default(),
            block: a.block.unwrap_or_default(),
            registers: a.registers,
            shared_memory: a.shared_memory,
            graph_id: a.graph_id,
            graph_node_id: a.graph_node_id,
            bytes: a.bytes,
        };
        let op = self.trace.gpu_op(NewGpuOp {
            name,
            ts_ns: ts,
            dur_ns: dur,
            track,
            correlation: a.correlation.and_then(NonZeroU64::new),
            external_id: a.external_id.and_then(NonZeroU64::new),
            detail,
        });
        let kind = match cat {
            EventKind::Kernel => GpuKind::Kernel,
            EventKind::Memcpy => GpuKind::Memcpy,
            _ => GpuKind::Memset,
        };
        match &mut self.range {
            Some(r) => r.ops[kind.index()].push(op),
            None => self.trace.gpu_ops_mut(kind).push(op),
        }
    }

    /// A runtime or driver call from its parts.
    #[inline]
    fn push_launch(
        &mut self,
        cat: EventKind,
        name: Sym,
        track: Track,
        a: &Args,
        ts: i64,
        dur: i64,
    ) {
        let launch = Launch {
            name,
            api: if cat == EventKind::Runtime {
                Api::Runtime
            } else {
                Api::Driver
            },
            ts_ns: ts,
            dur_ns: dur,
            track,
            correlation: a.correlation.and_then(NonZeroU64::new),
            external_id: a.external_id.and_then(NonZeroU64::new),
            cbid: a.cbid,
        };
        match &mut self.range {
            Some(r) => r.launches.push(launch),
            None => self.trace.launches.push(launch),
        }
    }

    /// The `B`/`E` events paired as the Trace Event Format pairs them (per thread, nested): each pair
    /// is the `X` event of the `B`'s fields; a dangling `B` or `E`, or an `E` before its `B`, is
    /// skipped with a warning.
    fn pair_begin_ends(&mut self) {
        use crate::trace_events::{self, OpenDurations};
        let events = std::mem::take(&mut self.begin_ends);
        let mut open: OpenDurations<usize> = OpenDurations::default();
        // (the `B`'s index, its duration): records are kept in the order of their `B`s, as `X`
        // events are in the order written.
        let mut pairs: Vec<(usize, i64)> = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if !e.end {
                open.begin(e.track, e.ts, i);
                continue;
            }
            match open.end(e.track) {
                None => self.warn_at(e.offset, trace_events::DANGLING_END.into()),
                Some((begin, _)) if e.ts < begin => {
                    self.warn_at(e.offset, trace_events::ends_before_begin(begin, e.ts));
                }
                Some((begin, b)) => pairs.push((b, e.ts - begin)),
            }
        }
        pairs.sort_unstable();
        for (b, dur) in pairs {
            self.begin_end_record(&events[b], dur);
        }
        let mut dangling: Vec<(i64, usize)> = open.dangling().collect();
        dangling.sort_by_key(|&(_, i)| i);
        for (ts, i) in dangling {
            self.warn_at(events[i].offset, trace_events::dangling_begin(ts));
        }
    }

    /// The record of a kept event `b` (a `B`, or an `X` of another producer's GPU category) that
    /// lasted `dur`, kept as its category says; another producer's GPU op only on a device's pid.
    fn begin_end_record(&mut self, b: &BeginEnd, dur: i64) {
        let (name, track, ts) = (b.name, b.track, b.ts);
        let mut args = std::borrow::Cow::Borrowed(&b.args);
        let kind = if b.foreign_gpu {
            let device = self.devices.device(&self.trace.track(track).pid);
            if let Some(d) = device {
                args.to_mut().device = b.args.device.or(Some(d));
            }
            match device {
                Some(_) => foreign_gpu_event_kind(self.trace.names.get(name.0)),
                None => EventKind::Other,
            }
        } else {
            b.kind
        };
        match kind {
            EventKind::Kernel | EventKind::Memcpy | EventKind::Memset => {
                self.push_gpu_op(kind, name, track, &args, ts, dur)
            }
            EventKind::Runtime | EventKind::Driver => {
                self.push_launch(kind, name, track, &b.args, ts, dur)
            }
            EventKind::CpuOp | EventKind::UserAnnotation | EventKind::GpuUserAnnotation => {
                let span = Span {
                    name,
                    ts_ns: ts,
                    dur_ns: dur,
                    track,
                    external_id: b.args.external_id.and_then(NonZeroU64::new),
                };
                self.push_span(kind, span, None);
            }
            _ => {
                *self
                    .trace
                    .counts
                    .other_complete
                    .entry(b.cat.clone())
                    .or_insert(0) += 1;
            }
        }
    }

    /// A CPU op (with the GEMM rows of its inputs, when recorded) or an annotation (`cat` says which).
    #[inline]
    fn span(&mut self, ev: &RawEvent<'_>, cat: EventKind, ts: i64, dur: i64) {
        let span = Span {
            name: self.name(ev.name.as_deref()),
            ts_ns: ts,
            dur_ns: dur,
            track: self.track(ev.pid, ev.tid),
            external_id: ev.args.external_id.and_then(NonZeroU64::new),
        };
        let gemm_rows = ev.input_dims.and_then(|dims| {
            let input = ev.name.as_deref().and_then(crate::profiles::gemm_input)?;
            super::event::input_rows(dims, input)
        });
        self.push_span(cat, span, gemm_rows);
    }

    /// A CPU op (with the GEMM rows of its inputs, when known) or an annotation (`cat` says which).
    #[inline]
    fn push_span(&mut self, cat: EventKind, span: Span, gemm_rows: Option<u32>) {
        let kind = match cat {
            EventKind::CpuOp => 0,
            EventKind::UserAnnotation => 1,
            _ => 2,
        };
        if kind == 0
            && let Some(rows) = gemm_rows
        {
            let cpu_op = match &self.range {
                Some(r) => r.spans[0].len(),
                None => self.trace.cpu_ops.len(),
            };
            self.trace.gemm_rows.push(GemmRows {
                cpu_op: cpu_op as u32,
                rows,
            });
        }
        self.keep_span(kind, span);
    }

    /// Keeps a span: 0 a CPU op, 1 a user annotation, 2 a GPU annotation, 3 a Python function
    /// ([`RangeRows::spans`]' order).
    #[inline]
    fn keep_span(&mut self, kind: usize, span: Span) {
        if let Some(r) = &mut self.range {
            r.spans[kind].push(span);
            return;
        }
        let t = &mut self.trace;
        match kind {
            0 => t.cpu_ops.push(span),
            1 => t.user_annotations.push(span),
            2 => t.gpu_user_annotations.push(span),
            _ => t.python_functions.push(span),
        }
    }

    /// A `python_function` event: counted, and kept when all frames are asked for or a step profile
    /// needs it.
    #[inline]
    fn python_function(&mut self, ev: &RawEvent<'_>, ts: i64, dur: i64) {
        self.python_events += 1;
        if crate::profiles::keep_python_frame(self.python_frames, ev.name.as_deref().unwrap_or(b""))
        {
            let span = Span {
                name: self.name(ev.name.as_deref()),
                ts_ns: ts,
                dur_ns: dur,
                track: self.track(ev.pid, ev.tid),
                external_id: None,
            };
            self.keep_span(3, span);
        }
    }

    /// One end of a CPU→GPU flow (`s` or `f`); one without an integer id is skipped with a warning.
    #[inline]
    fn flow(&mut self, ev: &RawEvent<'_>, ph_byte: u8, ts: i64, start: usize) {
        let id = ev.id.and_then(|t| {
            let t = t
                .strip_prefix(b"\"")
                .and_then(|t| t.strip_suffix(b"\""))
                .unwrap_or(t);
            parse_u64(t)
        });
        match id {
            Some(id) => {
                let flow = Flow {
                    id,
                    phase: if ph_byte == b's' {
                        FlowPhase::Start
                    } else {
                        FlowPhase::Finish
                    },
                    ts_ns: ts,
                    track: self.track(ev.pid, ev.tid),
                };
                self.trace.flows.push(flow);
            }
            None => self.warn(
                start,
                "a CPU→GPU flow event without an integer \"id\"; skipped".into(),
            ),
        }
    }

    fn count_phase(&mut self, ph: &[u8]) {
        // One-letter phases are counted in a fixed table; the map is built from it at the end.
        match ph {
            [b] if b.is_ascii() => self.phase_counts[usize::from(*b)] += 1,
            _ => {
                let p = String::from_utf8_lossy(ph).into_owned();
                *self.trace.counts.by_phase.entry(p).or_insert(0) += 1;
            }
        }
    }

    #[inline]
    fn name(&mut self, name: Option<&[u8]>) -> Sym {
        Sym(self.trace.names.intern(name.unwrap_or(b"")))
    }

    pub(super) fn finish(mut self) -> Trace {
        self.pair_begin_ends();
        for (b, dur) in std::mem::take(&mut self.foreign_unresolved) {
            self.begin_end_record(&b, dur);
        }
        for (b, &n) in self.phase_counts.0.iter().enumerate() {
            if n > 0 {
                let key = char::from(b as u8).to_string();
                *self.trace.counts.by_phase.entry(key).or_insert(0) += n;
            }
        }
        if self.python_events > 0 {
            *self
                .trace
                .counts
                .other_complete
                .entry("python_function".to_string())
                .or_insert(0) += self.python_events;
        }
        if self.timed {
            self.trace.time_bounds = Some((self.min_ts, self.max_end));
        }
        self.trace
    }
}

/// A pid/tid token as a value: an integer, or the text of a string (or of an odd number).
fn id_value(tok: &[u8]) -> IdValue {
    if tok.first() == Some(&b'"') {
        let mut c = Cursor::new(tok, 0);
        let text = c
            .string()
            .map(|s| String::from_utf8_lossy(&s).into_owned())
            .unwrap_or_default();
        IdValue::Str(text)
    } else {
        match parse_i64(tok) {
            Some(n) => IdValue::Num(n),
            None => IdValue::Str(String::from_utf8_lossy(tok).into_owned()),
        }
    }
}

#[path = "fold.rs"]
mod fold;
pub(super) use fold::Spare;

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
