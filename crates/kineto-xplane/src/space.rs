//! An `XSpace` onto the trace model: which plane and line is GPU work, host work or an annotation,
//! and what each event's stats say (its kind, launch correlation, launch shape).
//!
//! - `/device:GPU:N` planes are GPU N (pid `N`, device `N`): their `Stream #S…` lines' events are
//!   kernels, copies and fills (told by the `kernel_details`, `memcpy_details`, `memset_details` stats
//!   and the `Memcpy…`/`Memset…` names; AMD's `__amd_rocclr_fill*`/`copy*` kernels as fills and
//!   copies), on stream `S`. Their other lines (`XLA Ops`, `XLA Modules`, `Steps`, `TensorFlow Ops`,
//!   name scopes, …) are derived from the stream events: GPU-side annotations, never more GPU work.
//! - `/host:…` planes are the host's threads (pid −1, the host process; tid the line's id): an event with
//!   a `correlation_id` stat is the runtime or driver call that launched the device event with that
//!   id; one with a `step_num` stat (`jax.profiler.StepTraceAnnotation`,
//!   `tf.profiler.experimental.Trace(…, step_num=…)`) is a step annotation named `NAME step_num=N`;
//!   the rest are CPU spans.
//! - Any other plane (TPU, custom planes, `Task Environment`): its timed events are counted, named in
//!   a note, not read as work. `Task Environment`'s `profile_start_time` is the epoch of line times
//!   that the profiler normalized to the profile's start.
//!
//! Times: a line's `timestamp_ns` plus the event's `offset_ps`, floored to ns; durations floored
//! to ns. What it is not: the decoding (`prost`, [`crate::proto`]).

use crate::encoded::{EncodedEvents, EventSource, Events};
use crate::proto::{EventData, StatValue, XEvent, XLine, XPlane, XSpace, XStat};
use kineto_trace::native::builder::KEEP_WARNINGS;
use kineto_trace::native::names::{blit_kind, copy_name};
use kineto_trace::native::{KernelNames, TraceBuilder, kernel_name};
use kineto_trace::{
    DeviceProps, GpuKind, IdValue, Launch, NewGpuOp, Span, SpanKind, Trace, TraceFormat, Track,
    Warning,
};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::cell::OnceCell;

/// The stat names this reader reads (xla/tsl/profiler/utils/xplane_schema.cc spells them).
mod stat {
    pub const CORRELATION: &str = "correlation_id";
    pub const KERNEL: &str = "kernel_details";
    pub const MEMCPY: &str = "memcpy_details";
    pub const MEMSET: &str = "memset_details";
    pub const MEMALLOC: &str = "memalloc_details";
    pub const MEMFREE: &str = "memfree_details";
    pub const STEP: &str = "step_num";
    pub const CORES: &str = "core_count";
    pub const MEMORY: &str = "memory_size";
    pub const PROFILE_START: &str = "profile_start_time";
}

/// The host's process in the model: XPlane names no OS process (one file is one host's profiler),
/// and −1 is never a GPU index, so the host's threads and the GPUs' streams stay apart while the
/// per-rank split ([`kineto_trace::split`]) copies the host's rows (step markers) to each GPU's rank.
const HOST_PROCESS: i64 = -1;

/// The plane whose stats say when the profile started.
const TASK_ENVIRONMENT: &str = "Task Environment";

/// A plane as read: its own fields (name, stats, metadata; `lines` left empty), its lines, and where
/// their events come from (held as the file encodes them, read from the file as they are mapped, or
/// none when decoded whole).
pub struct PlaneRead<'e> {
    pub plane: XPlane,
    pub lines: Vec<LineRead>,
    /// The plane's events, taken in the order of its lines.
    pub events: Box<dyn EventSource + 'e>,
}

/// A line as read: its own fields (`events` left empty) and its events.
pub struct LineRead {
    /// The line's byte offset in the file (0 when decoded whole).
    pub at: u64,
    pub line: XLine,
    pub events: Events,
}

/// An event that does not decode: its line's byte offset, its index in the line, the decoder's error.
pub type BadEvent = (u64, usize, prost::DecodeError);

/// The space's own fields' warnings and notes, and the epoch of its line times, read as the planes
/// are: the reading of every plane in file order, each once its metadata (written after its lines) is
/// read.
pub struct SpaceReader {
    r: Reader,
    /// `Task Environment`'s `profile_start_time`, once its first such plane is read (`Some(None)`:
    /// the plane has none).
    profile_start: Option<Option<u64>>,
    /// The latest line start of any plane.
    latest_line: Option<i64>,
}

impl Default for SpaceReader {
    fn default() -> Self {
        SpaceReader {
            r: Reader {
                b: TraceBuilder::new(TraceFormat::XPlane),
                kernels: KernelNames::default(),
                blit_fills: 0,
                blit_copies: 0,
                idle_gpus: Vec::new(),
                unread: Vec::new(),
            },
            profile_start: None,
            latest_line: None,
        }
    }
}

impl SpaceReader {
    /// One plane, into the trace by its name.
    pub fn plane(&mut self, p: PlaneRead) -> Result<(), BadEvent> {
        let plane = &p.plane;
        let name = text(&plane.name).into_owned();
        if let Some(latest) = p.lines.iter().map(|l| l.line.timestamp_ns).max() {
            self.latest_line = Some(self.latest_line.map_or(latest, |l| l.max(latest)));
        }
        if self.profile_start.is_none() && plane.name == TASK_ENVIRONMENT.as_bytes() {
            let start = Plane::new(plane)
                .stat(&plane.stats, stat::PROFILE_START)
                .and_then(|v| v.as_u64());
            self.profile_start = Some(start);
        }
        if let Some(gpu) = name
            .strip_prefix("/device:GPU:")
            .and_then(|n| n.parse().ok())
        {
            self.r.device_plane(p, gpu)
        } else if name.starts_with("/host:") {
            self.r.host_plane(p)
        } else {
            self.r.unread_plane(p, &name)
        }
    }

    /// The trace, with the space's own fields (`space`'s `planes` are not read here): the errors and
    /// warnings the profiler recorded come first among the warnings, as they are the space's.
    pub fn finish(mut self, space: &XSpace) -> Trace {
        self.r.b.header().base_time_ns = self.profile_epoch();
        self.r.finish_notes(space);
        let mut t = self.r.b.finish();
        let mut first: Vec<Warning> = Vec::new();
        for (what, texts) in [("error", &space.errors), ("warning", &space.warnings)] {
            for t in texts {
                first.push(Warning {
                    offset: 0,
                    message: format!("the profiler recorded this {what}: {}", text(t)),
                });
            }
        }
        t.warnings_total += first.len() as u64;
        first.append(&mut t.warnings);
        first.truncate(KEEP_WARNINGS);
        t.warnings = first;
        t
    }

    /// `Task Environment`'s `profile_start_time` when the lines' times count from it (the profiler
    /// normalizes them so; then they are far below it), else `None`: the times are already epoch ns.
    fn profile_epoch(&self) -> Option<i64> {
        let start = i64::try_from(self.profile_start??).ok()?;
        (self.latest_line? < start / 2).then_some(start)
    }
}

/// Reads every plane of `space`, decoded whole, into a trace.
pub fn read_space(mut space: XSpace) -> Trace {
    let mut r = SpaceReader::default();
    for mut plane in std::mem::take(&mut space.planes) {
        let lines = std::mem::take(&mut plane.lines)
            .into_iter()
            .map(|mut line| LineRead {
                at: 0,
                events: Events::Decoded(std::mem::take(&mut line.events)),
                line,
            })
            .collect();
        // Decoded already: nothing left to fail.
        let _ = r.plane(PlaneRead {
            plane,
            lines,
            events: Box::new(EncodedEvents::default()),
        });
    }
    r.finish(&space)
}

struct Reader {
    b: TraceBuilder,
    kernels: KernelNames,
    /// AMD runtime fill and copy kernels counted as fills and copies.
    blit_fills: u64,
    blit_copies: u64,
    /// GPU planes with no event (a GPU visible to the process but not used).
    idle_gpus: Vec<String>,
    /// Planes not read as work, with their timed events.
    unread: Vec<(String, u64)>,
}

impl Reader {
    /// A GPU's plane: its properties, its stream lines as GPU ops, its other lines as annotations.
    fn device_plane(&mut self, read: PlaneRead, gpu: i64) -> Result<(), BadEvent> {
        let (plane, lines, mut encoded) = (&read.plane, read.lines, read.events);
        let p = Plane::new(plane);
        if lines.iter().all(|l| l.events.is_empty()) {
            self.idle_gpus.push(text(&plane.name).into_owned());
            return Ok(());
        }
        let prop = |name| p.stat(&plane.stats, name).and_then(|v| v.as_u64());
        self.b.header().devices.push(DeviceProps {
            id: Some(gpu),
            name: None,
            num_sms: prop(stat::CORES),
            total_global_mem: prop(stat::MEMORY),
        });
        for LineRead { at, line, events } in lines {
            let line = &line;
            let line_name = line_name(line);
            match stream_of(&line_name) {
                Some(stream) => {
                    let track = self.b.track(IdValue::Num(gpu), IdValue::Num(stream));
                    events
                        .each(&mut *encoded, |i, ev| {
                            let place =
                                || format!("{} line {line_name:?} event {i}", text(&plane.name));
                            if let Err(e) = self.gpu_event(&p, line, ev, (gpu, stream, track)) {
                                self.b.warn(0, format!("{}: {e}; skipped", place()));
                            }
                        })
                        .map_err(|(i, e)| (at, i, e))?;
                }
                None => {
                    let track = self
                        .b
                        .track(IdValue::Num(gpu), IdValue::Str(line_name.clone()));
                    events
                        .each(&mut *encoded, |i, ev| {
                            let name = p.event_name(ev);
                            let res = times(line, ev).and_then(|(ts, dur)| {
                                let sym = self.b.name(name);
                                self.b.span(
                                    SpanKind::GpuUserAnnotation,
                                    Span::at(sym, ts, dur, track),
                                )
                            });
                            self.warn_skipped(res, plane, &line_name, i);
                        })
                        .map_err(|(i, e)| (at, i, e))?;
                }
            }
        }
        Ok(())
    }

    /// One event of a GPU stream: a kernel, copy or fill, or a memory event counted apart.
    fn gpu_event(
        &mut self,
        p: &Plane,
        line: &XLine,
        ev: &XEvent,
        (gpu, stream, track): (i64, i64, Track),
    ) -> Result<(), String> {
        let (ts, dur) = times(line, ev)?;
        let raw_name = p.event_name(ev);
        let details = |name| p.event_stat(ev, name).map(|v| v.text());
        let kind = if let Some(k) = details(stat::KERNEL) {
            let kind = blit_kind(&kernel_name(raw_name)).unwrap_or(GpuKind::Kernel);
            match kind {
                GpuKind::Memset => self.blit_fills += 1,
                GpuKind::Memcpy => self.blit_copies += 1,
                GpuKind::Kernel => {}
            }
            (kind, k)
        } else if let Some(d) = details(stat::MEMCPY) {
            (GpuKind::Memcpy, d)
        } else if let Some(d) = details(stat::MEMSET) {
            (GpuKind::Memset, d)
        } else if details(stat::MEMALLOC).is_some()
            || details(stat::MEMFREE).is_some()
            || raw_name.starts_with("MemAlloc")
            || raw_name.starts_with("MemFree")
        {
            return self
                .b
                .other("xplane GPU memory event", ts, ts.saturating_add(dur));
        } else if raw_name.starts_with("Memcpy") {
            (GpuKind::Memcpy, String::new())
        } else if raw_name.starts_with("Memset") {
            (GpuKind::Memset, String::new())
        } else {
            // An event on a stream with no details stat (older XLA): GPU work, a kernel.
            (GpuKind::Kernel, String::new())
        };
        let (kind, details) = kind;
        let name = match kind {
            GpuKind::Memcpy if raw_name.starts_with("Memcpy") => {
                self.b.name(&copy_name(copy_direction(raw_name)))
            }
            _ => self.kernels.sym(&mut self.b, raw_name),
        };
        let mut op = NewGpuOp::at(name, ts, dur, track);
        op.detail.device = Some(gpu);
        op.detail.stream = Some(stream);
        op.correlation = self.correlation(p, ev);
        let shape = LaunchDetails::parse(&details);
        if kind == GpuKind::Kernel {
            (op.detail.grid, op.detail.block) = (shape.grid, shape.block);
            (op.detail.registers, op.detail.shared_memory) = (shape.registers, shape.shared_memory);
        } else {
            op.detail.bytes = shape.bytes;
        }
        self.b.gpu_op_of(kind, op, Some(HOST_PROCESS))
    }

    /// The correlation of an event's `correlation_id` stat (one id space per file: one process).
    fn correlation(&mut self, p: &Plane, ev: &XEvent) -> Option<std::num::NonZeroU64> {
        let raw = p.event_stat(ev, stat::CORRELATION)?.as_u64()?;
        self.b.correlation(0, raw)
    }

    /// A host plane: each line a thread; launches, step annotations and CPU spans.
    fn host_plane(&mut self, read: PlaneRead) -> Result<(), BadEvent> {
        let (plane, lines, mut encoded) = (&read.plane, read.lines, read.events);
        let p = Plane::new(plane);
        for LineRead { at, line, events } in lines {
            let line = &line;
            let line_name = line_name(line);
            // A host line's id is its thread's id: the same thread's lines of two host planes (TraceMe
            // ranges on `/host:CPU`, CUPTI's API calls on `/host:CUPTI`) are one track.
            let track = self
                .b
                .track(IdValue::Num(HOST_PROCESS), IdValue::Num(line.id));
            events
                .each(&mut *encoded, |i, ev| {
                    let res = times(line, ev)
                        .and_then(|(ts, dur)| self.host_event(&p, ev, ts, dur, track));
                    self.warn_skipped(res, plane, &line_name, i);
                })
                .map_err(|(i, e)| (at, i, e))?;
        }
        Ok(())
    }

    /// One host event: a launch when it carries a correlation id, a step annotation when it carries
    /// a step number, else a CPU span.
    fn host_event(
        &mut self,
        p: &Plane,
        ev: &XEvent,
        ts: i64,
        dur: i64,
        track: Track,
    ) -> Result<(), String> {
        let name = p.event_name(ev);
        if let Some(correlation) = self.correlation(p, ev) {
            let api = kineto_trace::native::api_of_call(name);
            let sym = self.b.name(name);
            return self
                .b
                .launch(Launch::at(sym, api, ts, dur, track, Some(correlation)));
        }
        if let Some(step) = p.event_stat(ev, stat::STEP) {
            return self.b.marker_range(
                &format!("{name} step_num={}", step.text()),
                ts,
                ts.saturating_add(dur),
                track,
            );
        }
        let sym = self.b.name(name);
        self.b.span(SpanKind::CpuOp, Span::at(sym, ts, dur, track))
    }

    /// A plane that is neither a GPU nor the host: its timed events counted, named in a note.
    fn unread_plane(&mut self, read: PlaneRead, plane_name: &str) -> Result<(), BadEvent> {
        let mut timed = 0;
        let (lines, mut encoded) = (read.lines, read.events);
        for (i, LineRead { at, line, events }) in lines.into_iter().enumerate() {
            let line = &line;
            events
                .each(&mut *encoded, |_, ev| {
                    let res = times(line, ev).and_then(|(ts, dur)| {
                        self.b
                            .other("xplane other plane", ts, ts.saturating_add(dur))
                    });
                    match res {
                        Ok(()) => timed += 1,
                        Err(e) => self
                            .b
                            .warn(0, format!("{plane_name} line {i}: {e}; skipped")),
                    }
                })
                .map_err(|(i, e)| (at, i, e))?;
        }
        if timed > 0 {
            self.unread.push((plane_name.to_owned(), timed));
        }
        Ok(())
    }

    fn warn_skipped(&mut self, res: Result<(), String>, plane: &XPlane, line: &str, i: usize) {
        if let Err(e) = res {
            self.b.warn(
                0,
                format!(
                    "{} line {line:?} event {i}: {e}; skipped",
                    text(&plane.name)
                ),
            );
        }
    }

    /// The notes on what was read otherwise than one row per event.
    fn finish_notes(&mut self, space: &XSpace) {
        if !space.hostnames.is_empty() {
            let hosts: Vec<_> = space.hostnames.iter().map(|h| text(h)).collect();
            self.b.note(format!("XPlane of host {}", hosts.join(", ")));
        }
        if self.blit_fills + self.blit_copies > 0 {
            self.b.note(format!(
                "{} runtime fill kernels (__amd_rocclr_fill*) counted as fills, {} runtime copy kernels \
                 (__amd_rocclr_copy*) as copies",
                self.blit_fills, self.blit_copies
            ));
        }
        if !self.idle_gpus.is_empty() {
            self.b.note(format!(
                "{} GPU planes without events: {}",
                self.idle_gpus.len(),
                self.idle_gpus.join(", ")
            ));
        }
        for (plane, events) in std::mem::take(&mut self.unread) {
            self.b.note(format!(
                "{events} events of plane {plane:?} counted, not read as GPU or host work"
            ));
        }
    }
}

/// A plane's metadata, for naming events and reading stats.
struct Plane<'a> {
    plane: &'a XPlane,
    /// Stat metadata id by name.
    stat_ids: FxHashMap<Cow<'a, str>, i64>,
    /// Each event metadata's name as text, made when an event's name is first asked for (a plane
    /// read only for its stats, or one without events, makes none): once per metadata, not once
    /// per event that names it, which was 14 % of the bench file's read (`docs/parse-costs.md`).
    event_names: OnceCell<FxHashMap<i64, Cow<'a, str>>>,
}

impl<'a> Plane<'a> {
    fn new(plane: &'a XPlane) -> Plane<'a> {
        let stat_ids = plane
            .stat_metadata
            .iter()
            .map(|(&id, m)| (text(&m.name), id))
            .collect();
        Plane {
            plane,
            stat_ids,
            event_names: OnceCell::new(),
        }
    }

    /// The event's name: its metadata's name, else its display name ("" without metadata).
    fn event_name(&self, ev: &XEvent) -> &str {
        let names = self.event_names.get_or_init(|| {
            self.plane
                .event_metadata
                .iter()
                .map(|(&id, m)| {
                    let name = if m.name.is_empty() {
                        &m.display_name
                    } else {
                        &m.name
                    };
                    (id, text(name))
                })
                .collect()
        });
        names.get(&ev.metadata_id).map_or("", |n| n)
    }

    /// The stat `name` among `stats`.
    fn stat<'s>(&'s self, stats: &'s [XStat], name: &str) -> Option<Value<'s>> {
        let id = *self.stat_ids.get(name)?;
        let s = stats.iter().find(|s| s.metadata_id == id)?;
        Some(match s.value.as_ref()? {
            StatValue::Double(d) => Value::Double(*d),
            StatValue::Uint64(u) => Value::Uint(*u),
            StatValue::Int64(i) => Value::Int(*i),
            StatValue::Str(t) | StatValue::Bytes(t) => Value::Text(text(t)),
            StatValue::Ref(r) => Value::Text(
                self.plane
                    .stat_metadata
                    .get(&i64::try_from(*r).ok()?)
                    .map_or(Cow::Borrowed(""), |m| text(&m.name)),
            ),
        })
    }

    /// The stat `name` of an event: its own, else its metadata's.
    fn event_stat<'s>(&'s self, ev: &'s XEvent, name: &str) -> Option<Value<'s>> {
        self.stat(&ev.stats, name).or_else(|| {
            let m = self.plane.event_metadata.get(&ev.metadata_id)?;
            self.stat(&m.stats, name)
        })
    }
}

/// A stat's value.
enum Value<'a> {
    Double(f64),
    Uint(u64),
    Int(i64),
    Text(Cow<'a, str>),
}

impl Value<'_> {
    fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Uint(u) => Some(*u),
            Value::Int(i) => u64::try_from(*i).ok(),
            Value::Double(_) | Value::Text(_) => None,
        }
    }

    fn text(&self) -> String {
        match self {
            Value::Double(d) => d.to_string(),
            Value::Uint(u) => u.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Text(t) => t.to_string(),
        }
    }
}

/// What a `kernel_details`, `memcpy_details` or `memset_details` text says: `key:value` words
/// (CUPTI: `regs:32 static_shared:0 dynamic_shared:1024 grid:1,1,1 block:128,1,1 …`; ROCm:
/// `grid:32,16,2 block:256,1,1 private_mem:0 group_mem:16384 …`; copies and fills: `size:N` or
/// `num_bytes:N`).
#[derive(Debug, Default, PartialEq)]
struct LaunchDetails {
    grid: [u32; 3],
    block: [u32; 3],
    registers: Option<u32>,
    shared_memory: Option<u32>,
    bytes: Option<u64>,
}

impl LaunchDetails {
    fn parse(details: &str) -> LaunchDetails {
        let mut d = LaunchDetails::default();
        let mut shared: Option<u32> = None;
        for (key, value) in details.split_whitespace().filter_map(|w| w.split_once(':')) {
            let num = || value.parse::<u32>().ok();
            match key {
                "grid" => d.grid = dims(value),
                "block" => d.block = dims(value),
                "regs" => d.registers = num(),
                "static_shared" | "dynamic_shared" | "group_mem" => {
                    shared = Some(shared.unwrap_or(0).saturating_add(num().unwrap_or(0)));
                }
                "size" | "num_bytes" => d.bytes = value.parse().ok(),
                _ => {}
            }
        }
        d.shared_memory = shared;
        d
    }
}

/// `x,y,z` (missing ones 0).
fn dims(v: &str) -> [u32; 3] {
    let mut out = [0; 3];
    for (o, p) in out.iter_mut().zip(v.split(',')) {
        *o = p.trim().parse().unwrap_or(0);
    }
    out
}

/// The stream of a GPU line named `Stream #S` (XLA adds `(MemcpyH2D,…)` after it on some lines).
fn stream_of(line_name: &str) -> Option<i64> {
    let rest = line_name.strip_prefix("Stream #")?;
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// A copy's direction word, for [`copy_name`], from XLA's event name (`MemcpyH2D`, `MemcpyD2H`,
/// `MemcpyD2D`, `MemcpyP2P`).
fn copy_direction(name: &str) -> &str {
    match name.strip_prefix("Memcpy").map(|s| s.get(..3).unwrap_or(s)) {
        Some("H2D") => "HostToDevice",
        Some("D2H") => "DeviceToHost",
        Some("D2D") => "DeviceToDevice",
        Some("P2P") => "PeerToPeer",
        Some("H2H") => "HostToHost",
        _ => name,
    }
}

/// A line's name (its display name when it has no name).
fn line_name(line: &XLine) -> String {
    if line.name.is_empty() {
        text(&line.display_name)
    } else {
        text(&line.name)
    }
    .into_owned()
}

/// An event's start and duration, ns: the line's start plus the event's offset (absent: 0, as
/// protobuf 3 leaves a zero out), floored from ps. An aggregate (`num_occurrences`) has no time.
fn times(line: &XLine, ev: &XEvent) -> Result<(i64, i64), String> {
    let offset_ps = match ev.data {
        Some(EventData::OffsetPs(o)) => o,
        None => 0,
        Some(EventData::NumOccurrences(n)) => {
            return Err(format!("an aggregate of {n} occurrences, with no time"));
        }
    };
    let ts = line
        .timestamp_ns
        .checked_add(offset_ps.div_euclid(1000))
        .ok_or_else(|| {
            format!(
                "start out of range (line {} ns + {offset_ps} ps)",
                line.timestamp_ns
            )
        })?;
    let dur = ev.duration_ps.div_euclid(1000);
    TraceBuilder::check(ts, ts.saturating_add(dur))?;
    Ok((ts, dur))
}

/// A protobuf text field: UTF-8, or read lossily.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_details_of_cupti_and_rocm() {
        let cupti = LaunchDetails::parse(
            "regs:32 static_shared:48 dynamic_shared:1024 grid:4,2,1 block:128,1,1 occ_pct:50",
        );
        assert_eq!(cupti.grid, [4, 2, 1]);
        assert_eq!(cupti.block, [128, 1, 1]);
        assert_eq!(cupti.registers, Some(32));
        assert_eq!(cupti.shared_memory, Some(48 + 1024));
        let rocm = LaunchDetails::parse(
            " grid:3072,1,1 block:256,1,1 private_mem:0 group_mem:16384 occ_pct:0",
        );
        assert_eq!(
            (rocm.grid, rocm.block, rocm.shared_memory),
            ([3072, 1, 1], [256, 1, 1], Some(16384))
        );
        assert_eq!(
            LaunchDetails::parse("kind_src:device size:4096 async:1").bytes,
            Some(4096)
        );
        assert_eq!(LaunchDetails::parse(""), LaunchDetails::default());
    }

    #[test]
    fn an_aggregate_has_no_time_and_offsets_floor_to_ns() {
        let line = XLine {
            timestamp_ns: 1_000,
            ..Default::default()
        };
        let aggregate = XEvent {
            data: Some(EventData::NumOccurrences(4)),
            ..Default::default()
        };
        assert!(
            times(&line, &aggregate)
                .unwrap_err()
                .contains("aggregate of 4")
        );
        // −1 ps floors to −1 ns; 1,999 ps to 1 ns.
        let early = XEvent {
            data: Some(EventData::OffsetPs(-1)),
            duration_ps: 1_999,
            ..Default::default()
        };
        assert_eq!(times(&line, &early), Ok((1_000 - 1, 1)));
        // An offset left out (protobuf 3 omits a zero) is 0.
        assert_eq!(times(&line, &XEvent::default()), Ok((1_000, 0)));
    }

    #[test]
    fn stream_lines_and_copy_directions() {
        assert_eq!(stream_of("Stream #2"), Some(2));
        assert_eq!(stream_of("Stream #14(MemcpyH2D,Compute)"), Some(14));
        assert_eq!(stream_of("XLA Ops"), None);
        assert_eq!(copy_direction("MemcpyH2D"), "HostToDevice");
        assert_eq!(copy_direction("MemcpyP2P"), "PeerToPeer");
        assert_eq!(copy_direction("MemcpyOther"), "MemcpyOther");
    }
}
