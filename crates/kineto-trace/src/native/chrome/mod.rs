//! Chrome-trace JSON in array form: `[ {event}, … ]`, possibly without its closing `]` (the Trace
//! Event Format allows a writer to stop without it), `ts`/`dur`/`pid`/`tid` as numbers or strings.
//!
//! Two kinds of writer are read (others' dialects: `crate::trace_events`; `B`/`E`: `phases`):
//! * events with Kineto's categories (`kernel`, `cuda_runtime`, `user_annotation`, …) and
//!   `args.correlation`: read as the Kineto parser reads them;
//! * `rpd2tracing` (rocmProfileData), with no `cat`: GPU ops carry the op type in `args.desc`
//!   (`KernelExecution`, `Task`, `Copy…`, `FillBuffer`) on a pid whose `process_name` is `GPU<n>`
//!   (pid = GPU, tid = queue); API calls and `UserMarker` ranges are on the process's threads; each
//!   API → op link is a flow pair (`cat: "api_op"`): the start near the end of the call (its end
//!   − 2 µs, or the op's start if earlier), the finish at the op's start on the GPU track.
//!
//! The legacy rocprof (v1/v2, `results.json`) writes the same events inside an object,
//! `{ "traceEvents":[{}, …], "otherData": {…} }` ([`Layout::RocprofObject`]): its processes are named
//! by `M` events (`GPU<n>`: kernels on queue tids, `COPY`: copies, `GPU Barriers<n>`: barrier
//! packets, `CPU HIP API`: the calls; ops elsewhere classed as its writer classes them, see
//! `rocprof_legacy::rocprof_role`), each call → op link is a flow pair `s` → `t` (`cat: "DataFlow"`: the start
//! inside the call, the finish at the op's start in whole µs), and each event has its exact times in
//! `args.BeginNs`/`args.EndNs`, which the model takes over the µs `ts`/`dur`.
//!
//! Times are µs text converted to ns digit by digit, as for Kineto: nothing is rounded on the way in
//! (a file whose writer rounded to whole µs stays at whole µs).
//!
//! The text is read from the stored stream through the Kineto parser's window (`crate::parse::window`),
//! an event at a time; what is kept is what the model keeps: an `X` event whose own fields settle what
//! it becomes goes into the model as read ([`ArrayReader::settled_now`]: most of a Kineto-category
//! array), and of the others the few fields their role, settled once the whole file is read, needs
//! ([`Item`]).
//!
//! What it is not: the Kineto parser (a Kineto object goes there; only the categories, `crate::category`,
//! and the input window are shared) or the stored bytes (`crate::stored`): it reads the content of a
//! [`Streamed`], which says whether the gzip was cut.

mod apart;
mod args;
mod flows;
mod items;
mod phases;
mod roles;
mod text;
#[cfg(test)]
mod window_tests;

use super::TraceBuilder;
use super::names::{KernelNames, copy_name};
use super::rocprof_legacy::{RocprofPid, rocprof_pid};
use crate::category::{EventKind, event_kind};
use crate::error::{Error, Result};
use crate::model::{
    Api, Flow, FlowPhase, GpuKind, IdValue, Launch, NewGpuOp, Span, SpanKind, Trace, TraceFormat,
    Track,
};
use crate::parse::window::Window;
use crate::stored::streamed::Streamed;
use crate::stored::whole::StoredFacts;
use crate::trace_events::{self, DevicePids, OpenDurations, check_unplaced};
use args::{Args, Odd, dims, int, small, text, uint};
use items::{Flag, Fresh, Held, Item, Items, More};
use roles::Tables;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::io::Read;
use std::num::NonZeroU64;
use std::path::Path;

#[derive(Deserialize)]
struct Ev<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

/// A pid/tid as a value: an integer (also from a string of digits), else its text.
fn id_value(v: Option<&RawValue>) -> IdValue {
    match v {
        None => IdValue::Str("null".into()),
        Some(v) => {
            let t = text(v);
            match t.trim().parse::<i64>() {
                Ok(n) => IdValue::Num(n),
                Err(_) => IdValue::Str(t.into_owned()),
            }
        }
    }
}

/// What an X event is, once every event has been seen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Gpu(GpuKind),
    Launch(Api),
    Span(SpanKind),
    Other,
}

/// The RPD op types (`rocpd_op.opType` as `rpd2tracing` writes it in `args.desc`).
fn rpd_op_kind(desc: &str) -> Option<GpuKind> {
    match desc {
        "KernelExecution" | "Task" => Some(GpuKind::Kernel),
        "FillBuffer" => Some(GpuKind::Memset),
        d if d.starts_with("Copy") => Some(GpuKind::Memcpy),
        _ => None,
    }
}

/// True for HIP/HSA/CUDA/NCCL API names (`hipLaunchKernel`, `hsa_signal_wait`, `cuLaunchKernel`),
/// also the runtime's internal entry points with leading underscores (`__hipPushCallConfiguration`).
fn api_like(name: &str) -> bool {
    let word = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let name = name.trim_start_matches('_');
    word && ["hip", "hsa_", "cuda", "cu", "nccl", "rccl"]
        .iter()
        .any(|p| name.starts_with(p) && name.len() > p.len())
}

/// Where the event array is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// The whole file is the array.
    Array,
    /// The legacy rocprof's `{ "traceEvents": [...], … }` (see the module doc).
    RocprofObject,
}

/// Reads a Chrome-trace event array, laid out as `layout` says, from the content of a stored stream,
/// a window at a time: the trace and the facts of the stored stream. An error of the stream (a corrupt
/// gzip, an I/O error, the inflate cap) is reported in place of any error of the events, as when the
/// content was read whole first.
pub(crate) fn read<R: Read>(
    name: &Path,
    content: Streamed<R>,
    layout: Layout,
    (salvage, python_frames): (bool, bool),
) -> Result<(Trace, StoredFacts)> {
    read_in(name, content, layout, (salvage, python_frames), TEXT_WINDOW)
}

/// [`read`] through a window of `window` bytes at first (smaller in tests, where the window's end
/// falls inside events).
fn read_in<R: Read>(
    name: &Path,
    mut content: Streamed<R>,
    layout: Layout,
    (salvage, python_frames): (bool, bool),
    window: usize,
) -> Result<(Trace, StoredFacts)> {
    let mut r = ArrayReader::new(name, layout == Layout::RocprofObject, python_frames);
    let read = {
        let mut w = Window::over_reader(&mut content, window);
        r.read_text(&mut w, salvage)
    };
    // The stream read to its end: its fault, if any, wins over the events' own error.
    let end = content.finish()?;
    r.check_end(read?, end.cut, end.facts.content_bytes, salvage)?;
    r.check_is_trace()?;
    trace_events::refuse_xla(name, &r.devices)?;
    r.drop_dangling_begins();
    r.settle_roles();
    r.rename_rocprof_ops();
    flows::link_by_flows(&mut r.items, r.b.trace(), r.emitted_correlation).map_err(|message| {
        Error::Format {
            file: name.to_path_buf(),
            message,
        }
    })?;
    let mut trace = r.emit()?;
    check_unplaced(name, &mut trace)?;
    Ok((trace, end.facts))
}

/// Bytes of text the window starts with (it grows for an event larger than this; events are a few
/// hundred bytes): not the Kineto parser's 4 MiB, since the window is held beside every item read so
/// far. 256 KiB: bench-native's Chrome array and legacy rocprof files' high-water marks once read were
/// 832 and 1,012 KiB lower than with 1 MiB (MEASURED, 2026-12-07, `docs/parse-costs.md`).
const TEXT_WINDOW: usize = 1 << 18;

/// The event times of an event the model keeps, ns.
struct Times {
    /// Start: rocprof's `args.BeginNs` when given (with `EndNs`, in order), else `ts`.
    ts: i64,
    dur: i64,
    /// The event's own `ts` and `ts + dur` (see [`Held::flow_ts`], [`Held::flow_end`]).
    flow_ts: i64,
    flow_end: i64,
}

/// How the event array ended.
struct ArrayEnd {
    /// Its `]` was read.
    closed: bool,
    /// The legacy rocprof's object ends before its closing `}`: every event was read.
    tail_cut: bool,
}

/// One Chrome-trace array read into the model: the events in file order first (an X event settled by
/// its own fields into the model, the others kept as [`Item`]s; flows into the model), then the roles
/// that depend on the whole file, then the held items into the model.
struct ArrayReader<'a> {
    file: &'a Path,
    /// The legacy rocprof's object ([`Layout::RocprofObject`]).
    rocprof: bool,
    /// Keep every `python_function` event ([`crate::Options::python_frames`]).
    python_frames: bool,
    b: TraceBuilder,
    kernel_names: KernelNames,
    /// What each legacy rocprof process holds, by its `process_name`.
    rocprof_pids: FxHashMap<IdValue, RocprofPid>,
    /// Processes named `GPU…` (rpd2tracing).
    gpu_pids: Vec<IdValue>,
    /// An event carried an RPD op type in `args.desc` (rpd2tracing), and one carried the legacy
    /// rocprof's `args.BeginNs`: an object opening with `{}` and only the first is rpd2tracing's
    /// `--format object` ([`ArrayReader::rocprof_rules`]).
    rpd_ops: bool,
    begin_ns: bool,
    /// The pids that are devices, for other producers' GPU categories.
    devices: DevicePids,
    items: Items,
    /// Events read so far.
    index: u64,
    /// The largest correlation id of the items built into the model as read
    /// ([`ArrayReader::emit_now`]): the ids the flow links give are above it.
    emitted_correlation: u64,
    /// The tables a held item's row may be in ([`ArrayReader::hold`]).
    held_tables: Tables,
    /// The open `B` events: the item each became (`None`: a category counted only).
    durations: OpenDurations<(u64, Option<usize>)>,
    /// Events with a `"ph"`, and the first non-empty object without one (its text).
    with_phase: u64,
    first_without_phase: Option<Vec<u8>>,
}

impl<'a> ArrayReader<'a> {
    fn new(file: &'a Path, rocprof: bool, python_frames: bool) -> ArrayReader<'a> {
        ArrayReader {
            file,
            rocprof,
            python_frames,
            b: TraceBuilder::new(if rocprof {
                TraceFormat::RocprofLegacyJson
            } else {
                TraceFormat::ChromeArray
            }),
            kernel_names: KernelNames::default(),
            rocprof_pids: FxHashMap::default(),
            gpu_pids: Vec::new(),
            rpd_ops: false,
            begin_ns: false,
            devices: DevicePids::default(),
            items: Items::default(),
            index: 0,
            emitted_correlation: 0,
            held_tables: Tables::default(),
            durations: OpenDurations::default(),
            with_phase: 0,
            first_without_phase: None,
        }
    }

    fn bad(&self, at: u64, message: String) -> Error {
        Error::Syntax {
            file: self.file.to_path_buf(),
            offset: at,
            message,
        }
    }

    /// One event, `text` at offset `start`: counted by phase; a process name noted; a flow end into
    /// the model; an `X` event (or a `B` one, ended by its `E`) kept as an [`Item`]; other timed events
    /// counted.
    fn event(&mut self, ev: Ev<'_>, start: u64, text: &[u8]) -> Result<()> {
        let this = self.index;
        let file = self.file;
        let ev_err = |message: String| Error::Event {
            file: file.to_path_buf(),
            offset: start,
            index: this,
            message,
        };
        self.index += 1;
        let ph = ev.ph.as_deref().unwrap_or("");
        self.b.count(if ph.is_empty() { "(none)" } else { ph });
        if ev.ph.is_none() {
            self.without_phase(start, text);
            return Ok(());
        }
        self.with_phase += 1;
        let args = args::read(ev.args);
        if ph == "M" {
            self.process_name(&ev, &args);
            return Ok(());
        }
        if ph == "b" {
            return self.async_begin(&ev, &args, &ev_err);
        }
        if !trace_events::TIMED_PHASES.contains(&ph) {
            return Ok(());
        }
        let Some(t) = times(&ev, &args, ph, self.rocprof, &ev_err)? else {
            return Ok(());
        };
        let track = self.b.track(id_value(ev.pid), id_value(ev.tid));
        // rocprof ends its flows with a `t` (a step, in the Trace Event Format) and writes no `f`.
        if ph == "s" || ph == "f" || (self.rocprof && ph == "t") {
            self.flow_end(&ev, ph, t.ts, track, start);
            return Ok(());
        }
        match ph {
            "X" if ev.cat.as_deref() == Some("python_function") => {
                self.python_function(&ev, t, track).map_err(ev_err)
            }
            "X" => match self.complete(&ev, &args, t, track).map_err(ev_err)? {
                Some(fresh) if self.settled_now(fresh.held()) => self.emit_now(fresh, start),
                Some(fresh) => {
                    self.hold(fresh, start);
                    Ok(())
                }
                None => Ok(()),
            },
            "B" => {
                let ts = t.ts;
                let fresh = self.complete(&ev, &args, t, track).map_err(ev_err)?;
                let item = fresh.map(|mut fresh| {
                    fresh.edit().set(Flag::Open, true);
                    self.hold(fresh, start)
                });
                self.durations.begin(track, ts, (start, item));
                Ok(())
            }
            "E" => {
                self.end_duration(track, t.ts, start);
                Ok(())
            }
            _ => self
                .b
                .other(&format!("\"{ph}\" event"), t.ts, t.ts)
                .map_err(ev_err),
        }
    }

    /// An `X` event of Kineto's `python_function` category, read as the Kineto parser reads it:
    /// counted under its category, and kept as a Python frame when
    /// [`crate::profiles::keep_python_frame`] says so (never an annotation).
    fn python_function(
        &mut self,
        ev: &Ev<'_>,
        t: Times,
        track: Track,
    ) -> std::result::Result<(), String> {
        self.b
            .other("python_function", t.ts, t.ts.saturating_add(t.dur))?;
        let name = ev.name.as_deref().unwrap_or("");
        if crate::profiles::keep_python_frame(self.python_frames, name.as_bytes()) {
            let name = self.b.name(name);
            self.b.python_function(Span::at(name, t.ts, t.dur, track))?;
        }
        Ok(())
    }

    /// A `process_name` metadata event: what a legacy rocprof process holds, or an rpd2tracing GPU.
    fn process_name(&mut self, ev: &Ev<'_>, args: &Args<'_>) {
        if ev.name.as_deref() == Some("process_name")
            && let Some(n) = args.name.as_deref()
        {
            if self.rocprof
                && let Some(k) = rocprof_pid(n)
            {
                self.rocprof_pids.insert(id_value(ev.pid), k);
            }
            if n.trim().to_ascii_uppercase().starts_with("GPU") {
                self.gpu_pids.push(id_value(ev.pid));
            }
            self.devices.process_name(id_value(ev.pid), n);
        }
    }

    /// One end of a flow, into the model (where [`flows::link_by_flows`] reads it); one without an
    /// integer id is skipped with a warning.
    fn flow_end(&mut self, ev: &Ev<'_>, ph: &str, ts: i64, track: Track, start: u64) {
        let id = ev.id.and_then(|v| text(v).trim().parse::<u64>().ok());
        match id {
            Some(id) => {
                let phase = if ph == "s" {
                    FlowPhase::Start
                } else {
                    FlowPhase::Finish
                };
                self.b.flow(Flow {
                    id,
                    phase,
                    ts_ns: ts,
                    track,
                });
            }
            None => self.b.warn(
                start,
                "a flow event without an integer \"id\"; skipped".into(),
            ),
        }
    }

    /// An `X` (or `B`) event: its role as far as its own fields tell ([`first_role`]), named, as an
    /// [`Item`] (an event of another category is counted only: `None`).
    fn complete(
        &mut self,
        ev: &Ev<'_>,
        args: &Args<'_>,
        t: Times,
        track: Track,
    ) -> std::result::Result<Option<Fresh>, String> {
        let cat = ev
            .cat
            .as_deref()
            .map_or(EventKind::Other, |c| event_kind(c.as_bytes()));
        let raw_name = ev.name.as_deref().unwrap_or("");
        let desc_kind = args.desc.as_deref().and_then(rpd_op_kind);
        self.rpd_ops |= desc_kind.is_some();
        self.begin_ns |= args.begin_ns.is_some();
        // Another producer's GPU category: a GPU op if its pid is a device, which a `process_name`
        // anywhere in the file may say ([`ArrayReader::settle_roles`]).
        let foreign_cat = ev
            .cat
            .as_deref()
            .filter(|c| trace_events::foreign_gpu_category(c));
        let (role, decided) = match foreign_cat {
            Some(_) => (Role::Gpu(trace_events::foreign_gpu_kind(raw_name)), false),
            None => first_role(cat, ev.cat.is_some(), desc_kind),
        };
        let sym = match role {
            Role::Gpu(GpuKind::Kernel) => self.kernel_names.sym(&mut self.b, raw_name),
            // An RPD copy named by its op type (`CopyDeviceToHost`) gets the direction word the
            // summary reads.
            Role::Gpu(GpuKind::Memcpy)
                if desc_kind.is_some() && args.desc.as_deref() == Some(raw_name) =>
            {
                self.b.name(&copy_name(raw_name))
            }
            _ => self.b.name(raw_name),
        };
        if role == Role::Other {
            let c = ev.cat.as_deref().unwrap_or("").to_string();
            return self
                .b
                .other(&c, t.ts, t.ts.saturating_add(t.dur))
                .map(|_| None);
        }
        let mut odd = Odd::default();
        let odd_args = if args.not_object {
            Some("args".to_string())
        } else {
            args.duplicate.clone()
        };
        let device = int(args.device, &mut odd, Odd::DEVICE)
            .or(int(args.dev_id, &mut odd, Odd::DEVICE))
            .or(int(args.gpu_id, &mut odd, Odd::DEVICE));
        let correlation =
            uint(args.correlation, &mut odd, Odd::CORRELATION).and_then(NonZeroU64::new);
        let more = More {
            external_id: uint(args.external_id, &mut odd, Odd::EXTERNAL_ID)
                .and_then(NonZeroU64::new),
            device,
            stream: int(args.stream, &mut odd, Odd::STREAM).or(int(
                args.stream_id,
                &mut odd,
                Odd::STREAM,
            )),
            bytes: uint(args.bytes, &mut odd, Odd::BYTES),
            grid: dims(args.grid, &mut odd, Odd::GRID),
            block: dims(args.block, &mut odd, Odd::BLOCK),
            registers: small(args.registers, &mut odd, Odd::REGISTERS),
            shared_memory: small(args.shared_memory, &mut odd, Odd::SHARED_MEMORY),
            graph_id: uint(args.graph_id, &mut odd, Odd::GRAPH_ID),
            graph_node_id: uint(args.graph_node_id, &mut odd, Odd::GRAPH_NODE_ID),
            odd,
            odd_args,
            foreign_cat: foreign_cat.map(Box::from),
            ..More::default()
        };
        let mut fresh = Fresh::new(role, sym, track, t.ts, t.dur);
        let mut it = fresh.edit();
        it.set(Flag::Decided, decided);
        it.set(Flag::ApiLike, api_like(raw_name));
        it.set(
            Flag::OnDevice,
            args.dev_id.is_some() || args.gpu_id.is_some(),
        );
        it.set_correlation(correlation);
        it.keep(more, t.flow_ts, t.flow_end);
        Ok(Some(fresh))
    }

    /// Whether nothing later in the file can change what an `X` event's item becomes, so that it goes
    /// into the model now rather than being held to the end (a Kineto-category array's items were most
    /// of its read's peak): a role its own fields decided, in an array (the legacy rocprof's rules,
    /// and which rules an object is read by, are known only at its end), nothing odd to warn of (the
    /// warnings keep their order: those of the read, then those of the held items in file order), and
    /// no flow able to change it: a span, or a GPU op with its correlation (a flow lands only on an op
    /// without one; a call stays held, since a flow may leave it).
    ///
    /// Nor may an item held earlier end in its table: rows of equal times keep file order through the
    /// model's stable sort by time only when each table's rows go in in file order.
    fn settled_now(&self, it: Held<'_>) -> bool {
        !self.rocprof
            && it.is(Flag::Decided)
            && !it.has_odd()
            && !self.held_tables.meets(Tables::of_role(it.role))
            && match it.role {
                Role::Span(_) => true,
                Role::Gpu(_) => it.correlation().is_some(),
                Role::Launch(_) | Role::Other => false,
            }
    }

    /// An item held to the end: the tables its row may be in noted ([`ArrayReader::settled_now`]).
    fn hold(&mut self, fresh: Fresh, offset: u64) -> usize {
        self.held_tables.add(roles::tables_of(fresh.held()));
        self.items.push(fresh, offset)
    }

    /// An item [`ArrayReader::settled_now`] says is settled, into the model: its correlation above
    /// every id [`flows::link_by_flows`] may give.
    fn emit_now(&mut self, fresh: Fresh, offset: u64) -> Result<()> {
        let (it, more) = fresh.into_item();
        let held = Held::of_taken(&it, &more);
        if let Some(c) = held.correlation() {
            self.emitted_correlation = self.emitted_correlation.max(c.get());
        }
        self.emit_item(&it, more, offset)
    }

    /// An array may stop without its `]` (noted); the legacy rocprof's object may not, and a cut gzip
    /// stream is cut whatever the layout: an error, or the trace salvaged when asked.
    /// `content_bytes`: the length of the text.
    fn check_end(
        &mut self,
        end: ArrayEnd,
        cut_gzip: bool,
        content_bytes: u64,
        salvage: bool,
    ) -> Result<()> {
        let array_cut = self.rocprof && !end.closed;
        if !end.closed && !self.rocprof && self.index > 0 && self.b.trace().salvaged.is_none() {
            self.b.note(
                "the event array has no closing `]` (allowed by the Trace Event Format)".into(),
            );
        }
        if (cut_gzip || array_cut || end.tail_cut) && self.b.trace().salvaged.is_none() {
            if !salvage {
                return Err(Error::Truncated {
                    file: self.file.to_path_buf(),
                    offset: content_bytes,
                    events: self.index,
                });
            }
            let reason = if cut_gzip {
                "the gzip stream ends early"
            } else if array_cut {
                "the file ends inside the event array (no closing `]`)"
            } else {
                "the file ends after the event array, inside the trace object (every event was read)"
            };
            self.b.trace_salvaged(content_bytes, reason.into());
        }
        Ok(())
    }

    /// The items into the model, in file order, a chunk at a time: each chunk is freed once its rows
    /// are in the model.
    fn emit(mut self) -> Result<Trace> {
        if self.rocprof && !self.rocprof_rules() {
            // rpd2tracing's object form: sniffed as the legacy rocprof's (it opens with `{}`
            // too), read by the rules of the array it wraps, and named as what it is.
            let h = self.b.header();
            h.format = TraceFormat::ChromeArray;
            h.format_version = Some("in rpd2tracing's object form".into());
        }
        for chunk in std::mem::take(&mut self.items).into_chunks() {
            for (offset, it, more) in chunk.into_items() {
                self.emit_item(&it, more, offset)?;
            }
        }
        Ok(self.b.finish())
    }

    /// One item (its event at byte `offset`) into the model, as its role says; a row the model
    /// refuses is an error at that byte.
    fn emit_item(&mut self, it: &Item, more: More, offset: u64) -> Result<()> {
        self.item_row(it, more, offset)
            .map_err(|message| Error::Native {
                file: self.file.to_path_buf(),
                at: format!("byte {offset}"),
                message,
            })
    }

    /// [`ArrayReader::emit_item`]'s row; the odd `args` fields its role reads warned of.
    fn item_row(&mut self, it: &Item, more: More, offset: u64) -> std::result::Result<(), String> {
        let rocprof_rules = self.rocprof_rules();
        let b = &mut self.b;
        let reads = match it.role {
            Role::Gpu(_) => Odd::ALL,
            Role::Launch(_) | Role::Span(_) => Odd::LINKS,
            Role::Other => Odd::default(),
        };
        let held = Held::of_taken(it, &more);
        let (device, stream, dur, correlation) =
            (held.device(), held.stream(), held.dur(), held.correlation());
        args::warn_odd(b, offset, more.odd, more.odd_args.as_deref(), reads);
        match it.role {
            Role::Gpu(kind) => {
                let ids = b.trace().track(it.track).clone();
                let mut op = NewGpuOp::at(it.name, it.ts, dur, it.track);
                // A rocprof pid is a section (6 + n for device n), not a device.
                op.detail.device = device.or(match self.rocprof_pids.get(&ids.pid) {
                    Some(&RocprofPid::Kernels(n)) => Some(n),
                    _ if rocprof_rules => None,
                    _ => ids.pid.as_i64(),
                });
                op.detail.stream = stream.or_else(|| ids.tid.as_i64());
                op.correlation = correlation;
                op.external_id = more.external_id;
                op.detail.bytes = more.bytes;
                op.detail.grid = more.grid;
                op.detail.block = more.block;
                op.detail.registers = more.registers;
                op.detail.shared_memory = more.shared_memory;
                op.detail.graph_id = more.graph_id;
                op.detail.graph_node_id = more.graph_node_id;
                b.gpu_op(kind, op)
            }
            Role::Launch(api) => b.launch(Launch {
                name: it.name,
                api,
                ts_ns: it.ts,
                dur_ns: dur,
                track: it.track,
                correlation,
                external_id: more.external_id,
                cbid: None,
            }),
            Role::Span(kind) => b.span(
                kind,
                Span {
                    name: it.name,
                    ts_ns: it.ts,
                    dur_ns: dur,
                    track: it.track,
                    external_id: more.external_id,
                },
            ),
            // Another producer's GPU category off any device, or the legacy rocprof's barrier
            // packets: counted, not kept.
            Role::Other => b.other(
                more.foreign_cat
                    .as_deref()
                    .unwrap_or("rocprof barrier packet"),
                it.ts,
                it.ts.saturating_add(dur),
            ),
        }
    }
}

/// The times of a timed event (`None`: an instant without `ts`, skipped): `ts` and `dur` as µs text,
/// checked; for the legacy rocprof's `X` events, its exact `args.BeginNs`/`EndNs` when both are
/// integers in order (its `ts`/`dur` are whole µs).
fn times(
    ev: &Ev<'_>,
    args: &Args<'_>,
    ph: &str,
    rocprof: bool,
    ev_err: &impl Fn(String) -> Error,
) -> Result<Option<Times>> {
    let ts = match ev.ts {
        None if matches!(ph, "X" | "B" | "E" | "s" | "f") => {
            return Err(ev_err(format!("a \"{ph}\" event with no \"ts\"")));
        }
        None => return Ok(None),
        Some(v) => crate::time::us_to_ns(text(v).trim().as_bytes())
            .ok_or_else(|| ev_err(format!("\"ts\" is not a time in µs: {}", v.get())))?,
    };
    let dur = match ev.dur {
        None if ph == "X" => return Err(ev_err("an \"X\" event with no \"dur\"".into())),
        None => 0,
        Some(v) => crate::time::us_to_ns(text(v).trim().as_bytes())
            .ok_or_else(|| ev_err(format!("\"dur\" is not a time in µs: {}", v.get())))?,
    };
    if dur < 0 {
        return Err(ev_err(format!("negative \"dur\" ({dur} ns)")));
    }
    TraceBuilder::check(ts, ts.saturating_add(dur)).map_err(ev_err)?;
    let (flow_ts, flow_end) = (ts, ts.saturating_add(dur));
    // The legacy rocprof's `BeginNs`/`EndNs`, or a converter's `start_ns`/`end_ns`.
    let exact = |v: Option<&RawValue>| v.and_then(args::int_text);
    let (t0, t1) = match rocprof {
        true => (exact(args.begin_ns), exact(args.end_ns)),
        false => (exact(args.start_ns), exact(args.stop_ns)),
    };
    let (ts, dur) = match (t0, t1) {
        (Some(t0), Some(t1))
            if ph == "X" && t1 >= t0 && (rocprof || trace_events::same_clock(ts, dur, t0, t1)) =>
        {
            TraceBuilder::check(t0, t1).map_err(ev_err)?;
            (t0, t1 - t0)
        }
        _ => (ts, dur),
    };
    Ok(Some(Times {
        ts,
        dur,
        flow_ts,
        flow_end,
    }))
}

/// An `X` event's role by its own fields, and whether that is final: a Kineto category decides; an
/// event of another category is `Other` unless `args.desc` names an RPD op type; an RPD op type decides;
/// the rest are annotations until the whole file is seen ([`ArrayReader::settle_roles`]).
fn first_role(cat: EventKind, has_cat: bool, desc_kind: Option<GpuKind>) -> (Role, bool) {
    match cat {
        EventKind::Kernel => (Role::Gpu(GpuKind::Kernel), true),
        EventKind::Memcpy => (Role::Gpu(GpuKind::Memcpy), true),
        EventKind::Memset => (Role::Gpu(GpuKind::Memset), true),
        EventKind::Runtime => (Role::Launch(Api::Runtime), true),
        EventKind::Driver => (Role::Launch(Api::Driver), true),
        EventKind::CpuOp => (Role::Span(SpanKind::CpuOp), true),
        EventKind::UserAnnotation => (Role::Span(SpanKind::UserAnnotation), true),
        EventKind::GpuUserAnnotation => (Role::Span(SpanKind::GpuUserAnnotation), true),
        // An `X` one is read apart (`ArrayReader::python_function`); a `B` one is counted, as the
        // Kineto parser counts it.
        EventKind::PythonFunction => (Role::Other, true),
        EventKind::Flow | EventKind::Other if has_cat && desc_kind.is_none() => (Role::Other, true),
        _ => match desc_kind {
            Some(k) => (Role::Gpu(k), true),
            None => (Role::Span(SpanKind::UserAnnotation), false),
        },
    }
}
