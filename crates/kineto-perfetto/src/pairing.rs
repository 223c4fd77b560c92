//! The packets' events read in file order, as their sequence's state and the clocks stand at each
//! packet: a slice's begin and end on one track made one slice, its name and category read from its
//! sequence's interned data, every time moved onto the trace clock; a render stage's name, queue,
//! launch shape and process likewise. What the model's rows need of the tracks waits for the end of
//! the file (a track's descriptor may come after its events, and the last one given for a uuid is the
//! one read): each event is logged ([`Logged`], names once in [`Names`]) in file order, as bytes
//! (`crate::log`), and `crate::events` maps the log onto the model once every descriptor is known;
//! or, when the descriptors were read first (a plain file's first look), each event is mapped as it
//! is paired ([`Sink`]).
//!
//! What it is not: the mapping onto the model (`crate::events`), the log's bytes (`crate::log`), the
//! sequence state (`crate::sequence`), the clocks (`crate::clock`).

use crate::clock::Clocks;
use crate::events::Mapper;
use crate::log::Log;
use crate::proto::{
    ComputeKernelLaunch, DebugAnnotation, GpuRenderStageEvent, TracePacket, TrackEvent,
};
use crate::sequence::{Admit, Sequence};
use kineto_trace::GpuKind;
use kineto_trace::native::rocprof_resources::{PERFETTO_LDS_BYTES, PERFETTO_VGPR_COUNT};
use rustc_hash::FxHashMap;

/// `TrackEvent.Type`.
const SLICE_BEGIN: i32 = 1;
const SLICE_END: i32 = 2;
const INSTANT: i32 = 3;
const COUNTER: i32 = 4;

/// Every distinct name and category once, by number.
#[derive(Default)]
pub struct Names {
    list: Vec<String>,
    index: FxHashMap<String, u32>,
}

impl Names {
    fn id(&mut self, name: String) -> u32 {
        if let Some(&id) = self.index.get(&name) {
            return id;
        }
        let id = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.list.push(name.clone());
        self.index.insert(name, id);
        id
    }

    pub fn get(&self, id: u32) -> &str {
        self.list.get(id as usize).map_or("", String::as_str)
    }
}

/// A packet's place, for warnings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct At {
    pub offset: u64,
    pub sequence: u32,
}

/// A slice's begin: its name and first category ([`Names`]), start, and links.
#[derive(Debug, PartialEq)]
pub struct Open {
    pub name: u32,
    pub category: u32,
    pub ts: i64,
    pub correlation: Option<u64>,
    pub submitted: Option<u64>,
    /// What its debug annotations say of the GPU op it may be.
    pub annotated: Annotated,
}

/// A GPU op's size and launch shape as rocprofv3 writes them in a slice's debug annotations
/// (rocprofiler-sdk `source/lib/output/generatePerfetto.cpp`, `TRACE_EVENT_BEGIN` of a memory copy
/// and of a kernel dispatch), each `None` when the slice has no such annotation. All are unsigned
/// integers there (`uint_value`: `uint64_t` bytes, `uint32_t` sizes and counts).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Annotated {
    /// `copy_bytes` (a copy's `bytes`).
    pub bytes: Option<u64>,
    /// `grid_size`: the grid's work-items, x·y·z (rocprofv3 writes the product, not the dimensions).
    pub grid: Option<u32>,
    /// `workgroup_size`: a workgroup's work-items, x·y·z.
    pub block: Option<u32>,
    /// `VGPR_Count`: the kernel's architected vector registers per work-item (its symbol's
    /// `arch_vgpr_count`; `Accum_VGPR_Count` and the per-wave `SGPR_Count` are not registers per
    /// thread in the model's sense, and not read).
    pub registers: Option<u32>,
    /// `LDS_Block_Size`: LDS bytes per workgroup (the dispatch's `group_segment_size`, static and
    /// dynamic together).
    pub shared: Option<u32>,
}

/// Debug annotations of a name read by [`annotate`] that were not read.
#[derive(Debug, Default)]
pub struct AnnotationFaults {
    /// Named by an iid not interned on their sequence (whatever their name).
    pub unnamed: u64,
    /// Of a read name, holding no unsigned integer, or one too large for its field.
    pub odd: u64,
}

/// A render stage as its sequence resolved it.
#[derive(Debug, PartialEq)]
pub struct Stage {
    pub name: u32,
    pub kind: GpuKind,
    pub device: i64,
    pub queue: i64,
    pub ts: i64,
    pub dur: i64,
    pub event_id: Option<u64>,
    pub launch: Option<LaunchShape>,
    pub process: Option<i64>,
}

/// A compute launch's grid, block, registers per thread and shared memory.
pub type LaunchShape = ([u32; 3], [u32; 3], Option<u32>, Option<u32>);

/// What an instant or a counter value is counted as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tally {
    Instant,
    CounterValue,
}

impl Tally {
    /// Its name in the trace's counts.
    pub fn label(self) -> &'static str {
        match self {
            Tally::Instant => "perfetto instant",
            Tally::CounterValue => "perfetto counter value",
        }
    }
}

/// One event of the file, in file order.
#[derive(Debug, PartialEq)]
pub enum Logged {
    /// A whole slice on track `uuid`; `thread` its sequence's thread descriptor at its end.
    Slice {
        uuid: u64,
        open: Open,
        end: i64,
        thread: Option<(i64, i64)>,
        at: At,
    },
    /// A render stage; `after_event`: its packet's track event was logged just before it (and the
    /// stage is not read when that one fails).
    Stage {
        stage: Stage,
        at: At,
        after_event: bool,
    },
    /// An instant or counter value, counted under `what`.
    Counted { what: Tally, ts: i64, at: At },
    /// A packet whose event could not be read.
    Skipped { message: String, at: At },
}

/// Where the events go as they are paired.
enum Sink {
    /// Logged, to be mapped once every track descriptor is known ([`crate::events::map`]).
    Log(Log),
    /// Mapped at once: every track descriptor was read first.
    Map(Box<Mapper>),
}

/// The state carried from packet to packet.
pub struct Pairing {
    pub clocks: Clocks,
    /// Boxed: a packet takes its sequence out of the map and puts it back, and a `Sequence` is
    /// ~300 bytes to move each way.
    sequences: FxHashMap<u32, Box<Sequence>>,
    /// Open slices per track uuid.
    open: FxHashMap<u64, Vec<Open>>,
    pub names: Names,
    sink: Sink,
    /// Events given to the sink so far.
    given: usize,
    /// Ends with no begin on their track.
    pub unmatched_ends: u64,
    /// Packets skipped for lack of incremental state; packets of zstd-compressed packets.
    pub skipped: u64,
    pub zstd: u64,
    pub annotation_faults: AnnotationFaults,
}

impl Pairing {
    pub fn new(clocks: Clocks) -> Pairing {
        Pairing {
            clocks,
            sequences: FxHashMap::default(),
            open: FxHashMap::default(),
            names: Names::default(),
            sink: Sink::Log(Log::default()),
            given: 0,
            unmatched_ends: 0,
            skipped: 0,
            zstd: 0,
            annotation_faults: AnnotationFaults::default(),
        }
    }

    /// A pairing whose events are mapped by `mapper` as they are paired (every track descriptor of
    /// the file known), not logged.
    pub fn mapping(clocks: Clocks, mapper: Mapper) -> Pairing {
        Pairing {
            sink: Sink::Map(Box::new(mapper)),
            ..Pairing::new(clocks)
        }
    }

    /// The events logged (none when they were mapped as paired).
    pub fn take_log(&mut self) -> Log {
        match &mut self.sink {
            Sink::Log(log) => std::mem::take(log),
            Sink::Map(_) => Log::default(),
        }
    }

    /// The mapper the events went to as they were paired ([`Pairing::mapping`]), if they did.
    pub fn take_mapper(&mut self) -> Option<Mapper> {
        match std::mem::replace(&mut self.sink, Sink::Log(Log::default())) {
            Sink::Map(m) => Some(*m),
            Sink::Log(log) => {
                self.sink = Sink::Log(log);
                None
            }
        }
    }

    /// An event paired, to the sink.
    fn give(&mut self, logged: Logged) {
        match &mut self.sink {
            Sink::Log(log) => log.push(&logged),
            Sink::Map(m) => m.logged(&self.names, logged),
        }
        self.given += 1;
    }

    /// Slices begun and never ended.
    pub fn open_slices(&self) -> usize {
        self.open.values().map(Vec::len).sum()
    }

    /// One packet, at byte `offset`: its sequence's state, then its events.
    pub fn packet(&mut self, offset: u64, p: &TracePacket) {
        let at = At {
            offset,
            sequence: p.trusted_packet_sequence_id.unwrap_or(0),
        };
        // Taken out of the map while the packet is read, so that the packet's events can use it
        // beside the rest of the state.
        let mut seq = self.sequences.remove(&at.sequence).unwrap_or_default();
        if seq.admit(p) == Admit::Skip {
            self.skipped += 1;
        } else {
            if p.zstd_compressed_packets.is_some() {
                self.zstd += 1;
            }
            if let Err(message) = self.events(p, &seq, at) {
                self.give(Logged::Skipped { message, at });
            }
        }
        self.sequences.insert(at.sequence, seq);
    }

    /// One admitted packet's clock snapshot and events.
    fn events(&mut self, p: &TracePacket, seq: &Sequence, at: At) -> Result<(), String> {
        if let Some(s) = &p.clock_snapshot {
            self.clocks.observe(at.sequence, s);
        }
        let given = self.given;
        if let Some(e) = &p.track_event {
            let ts = self.time(p, seq, at)?;
            self.track_event(e, ts, seq, at)?;
        }
        if let Some(e) = &p.gpu_render_stage_event {
            let ts = self.time(p, seq, at)?;
            let stage = render_stage(e, ts, seq, &mut self.names)?;
            let after_event = self.given > given;
            self.give(Logged::Stage {
                stage,
                at,
                after_event,
            });
        }
        Ok(())
    }

    /// The packet's timestamp on the trace clock.
    fn time(&mut self, p: &TracePacket, seq: &Sequence, at: At) -> Result<i64, String> {
        let raw = p.timestamp.ok_or("no timestamp")?;
        let clock = p
            .timestamp_clock_id
            .or(seq.default_clock)
            .unwrap_or(self.clocks.trace_clock);
        self.clocks.on_trace_clock(at.sequence, clock, raw)
    }

    /// One track event: a begin kept open, an end or complete event logged as a slice, an instant or
    /// counter value logged to be counted.
    fn track_event(
        &mut self,
        e: &TrackEvent,
        ts: i64,
        seq: &Sequence,
        at: At,
    ) -> Result<(), String> {
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
        let slice = |open, end| Logged::Slice {
            uuid,
            open,
            end,
            thread: seq.thread,
            at,
        };
        let counted = |what| Logged::Counted { what, ts, at };
        let logged = match (kind, complete_us) {
            (_, Some(us)) => {
                let open = self.opened(e, ts, seq)?;
                slice(open, ts.saturating_add(us.saturating_mul(1_000)))
            }
            (Some(SLICE_BEGIN), None) => {
                let open = self.opened(e, ts, seq)?;
                self.open.entry(uuid).or_default().push(open);
                return Ok(());
            }
            (Some(SLICE_END), None) => match self.open.get_mut(&uuid).and_then(Vec::pop) {
                Some(mut open) => {
                    // An end's annotations are the slice's too (trace_processor merges them);
                    // the begin's, when both give one, are kept.
                    let faults = &mut self.annotation_faults;
                    annotate(&e.debug_annotations, seq, &mut open.annotated, faults);
                    slice(open, ts)
                }
                None => {
                    self.unmatched_ends += 1;
                    return Err("a slice end with no begin on its track".into());
                }
            },
            (Some(INSTANT), None) => counted(Tally::Instant),
            (Some(COUNTER), None) => counted(Tally::CounterValue),
            (other, None) => return Err(format!("track event of type {other:?}, not read")),
        };
        self.give(logged);
        Ok(())
    }

    /// A slice's begin: its name and first category by their interned ids when they have them.
    fn opened(&mut self, e: &TrackEvent, ts: i64, seq: &Sequence) -> Result<Open, String> {
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
        let mut annotated = Annotated::default();
        annotate(
            &e.debug_annotations,
            seq,
            &mut annotated,
            &mut self.annotation_faults,
        );
        Ok(Open {
            name: self.names.id(name),
            category: self.names.id(category),
            ts,
            correlation,
            submitted,
            annotated,
        })
    }
}

/// Which [`Annotated`] field a debug annotation of this name fills: rocprofv3's names, exactly as
/// `generatePerfetto.cpp` writes them (rocm-systems `projects/rocprofiler-sdk`).
#[derive(Clone, Copy)]
pub(crate) enum Field {
    Bytes,
    Grid,
    Block,
    Registers,
    Shared,
}

/// The annotations read, by name: the one list `field_of` and the warning on the ones not read use.
pub(crate) const READ: [(&[u8], Field); 5] = [
    (b"copy_bytes", Field::Bytes),
    (b"grid_size", Field::Grid),
    (b"workgroup_size", Field::Block),
    (PERFETTO_VGPR_COUNT, Field::Registers),
    (PERFETTO_LDS_BYTES, Field::Shared),
];

fn field_of(name: &[u8]) -> Option<Field> {
    READ.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// The fields of `into` still empty filled from the annotations of a read name (plain, or interned in
/// the sequence's `debug_annotation_names`); one whose value is not an unsigned integer that fits is
/// not read, and counted in `faults`, as is one named by an iid its sequence has not interned.
fn annotate(
    annotations: &[DebugAnnotation],
    seq: &Sequence,
    into: &mut Annotated,
    faults: &mut AnnotationFaults,
) {
    for a in annotations {
        let name = match (&a.name, a.name_iid) {
            (Some(n), _) => n.as_slice(),
            (None, Some(iid)) => match seq.annotation_names.get(&iid) {
                Some(n) => n.as_bytes(),
                None => {
                    faults.unnamed += 1;
                    continue;
                }
            },
            (None, None) => continue,
        };
        let Some(field) = field_of(name) else {
            continue;
        };
        // A signed value that is not negative is the same number: a producer may write either.
        let value = a
            .uint_value
            .or_else(|| a.int_value.and_then(|i| u64::try_from(i).ok()));
        let Some(value) = value else {
            faults.odd += 1;
            continue;
        };
        let narrow =
            |slot: &mut Option<u32>, faults: &mut AnnotationFaults| match u32::try_from(value) {
                Ok(v) => {
                    slot.get_or_insert(v);
                }
                Err(_) => faults.odd += 1,
            };
        match field {
            Field::Bytes => {
                into.bytes.get_or_insert(value);
            }
            Field::Grid => narrow(&mut into.grid, faults),
            Field::Block => narrow(&mut into.block, faults),
            Field::Registers => narrow(&mut into.registers, faults),
            Field::Shared => narrow(&mut into.shared, faults),
        }
    }
}

/// One render-stage event: GPU work on its GPU's queue, as its sequence names it.
fn render_stage(
    e: &GpuRenderStageEvent,
    ts: i64,
    seq: &Sequence,
    names: &mut Names,
) -> Result<Stage, String> {
    let dur = i64::try_from(e.duration.unwrap_or(0)).map_err(|_| "duration out of range")?;
    let stage = e.stage_iid.and_then(|iid| seq.stages.get(&iid));
    let name = render_stage_name(e, seq)?;
    let kind =
        if e.kernel_iid.is_some() || e.launch.is_some() || stage.is_some_and(|s| s.category == 2) {
            GpuKind::Kernel
        } else {
            stage.map_or(GpuKind::Kernel, |s| kind_of_stage(&s.name))
        };
    let queue = e
        .hw_queue_iid
        .and_then(|q| i64::try_from(q).ok())
        .or_else(|| e.hw_queue_id.map(i64::from))
        .unwrap_or(0);
    let launch = e.launch.as_ref().map(|launch| {
        let dims = |d: &Option<crate::proto::Dim3>| {
            d.as_ref().map_or([0; 3], |d| {
                [d.x.unwrap_or(1), d.y.unwrap_or(1), d.z.unwrap_or(1)]
            })
        };
        let (registers, shared) = launch_resources(launch, seq);
        (
            dims(&launch.grid_size),
            dims(&launch.workgroup_size),
            registers,
            shared,
        )
    });
    Ok(Stage {
        name: names.id(name),
        kind,
        device: i64::from(e.gpu_id.unwrap_or(0)),
        queue,
        ts,
        dur,
        event_id: e.event_id,
        launch,
        process: e
            .context
            .and_then(|c| seq.contexts.get(&c))
            .map(|&pid| i64::from(pid)),
    })
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
fn launch_resources(launch: &ComputeKernelLaunch, seq: &Sequence) -> (Option<u32>, Option<u32>) {
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

    #[test]
    fn stages_are_copies_or_fills_by_name() {
        assert_eq!(kind_of_stage("Blit"), GpuKind::Memcpy);
        assert_eq!(kind_of_stage("Buffer fill"), GpuKind::Memset);
        assert_eq!(kind_of_stage("render"), GpuKind::Kernel);
    }

    fn annotation(name: Result<u64, &str>, uint: Option<u64>, int: Option<i64>) -> DebugAnnotation {
        let (name_iid, name) = match name {
            Ok(iid) => (Some(iid), None),
            Err(n) => (None, Some(n.as_bytes().to_vec())),
        };
        DebugAnnotation {
            name_iid,
            name,
            uint_value: uint,
            int_value: int,
        }
    }

    #[test]
    fn annotations_are_read_by_name_plain_or_interned_first_given_kept() {
        let mut seq = Sequence::default();
        seq.annotation_names.insert(3, "copy_bytes".into());
        seq.annotation_names.insert(5, "grid_size".into());
        let list = [
            annotation(Ok(3), Some(1 << 40), None),
            // Read already: the first is kept.
            annotation(Err("copy_bytes"), Some(7), None),
            annotation(Ok(5), None, Some(4_096)),
            annotation(Err("workgroup_size"), Some(u64::from(u32::MAX) + 1), None),
            annotation(Err("VGPR_Count"), None, Some(-1)),
            // A string (no integer): not read.
            annotation(Err("LDS_Block_Size"), None, None),
            annotation(Ok(9), Some(1), None),
            annotation(Err("SGPR_Count"), Some(32), None),
        ];
        let (mut a, mut faults) = (Annotated::default(), AnnotationFaults::default());
        annotate(&list, &seq, &mut a, &mut faults);
        let want = Annotated {
            bytes: Some(1 << 40),
            grid: Some(4_096),
            ..Annotated::default()
        };
        assert_eq!(a, want);
        // workgroup_size too large, VGPR_Count negative, LDS_Block_Size a string; iid 9 unknown.
        assert_eq!((faults.odd, faults.unnamed), (3, 1));
    }

    #[test]
    fn names_are_kept_once() {
        let mut n = Names::default();
        let a = n.id("gemm".into());
        let b = n.id("copy".into());
        assert_eq!((n.id("gemm".into()), n.get(b)), (a, "copy"));
        assert_eq!(n.list.len(), 2);
    }
}
