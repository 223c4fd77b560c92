//! The compact model a parsed trace is kept in.
//!
//! Only what analyses need is kept, in fixed-size records: names are interned to [`Sym`], (pid, tid)
//! pairs — numbers in most traces, strings such as `"stream 7"` or `"Spans"` in others — to [`Track`]
//! (a thread, or a device's stream: one row of the trace viewer), times are
//! integer nanoseconds on the trace's own clock (see [`Header::base_time_ns`]).

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::num::NonZeroU64;

mod encodings;
mod op_processes;
pub mod rows;
pub(crate) use op_processes::OpProcesses;
pub use rows::{Reader, Rows};

/// An interned string (a kernel, op or annotation name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub(crate) u32);

/// An interned (pid, tid) pair: a CPU thread, or a GPU device's stream. The default is the first
/// track of a trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Track(pub(crate) u32);

/// The pid and tid behind a [`Track`], as the trace wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct TrackIds {
    /// Process id (the device for GPU activities).
    pub pid: IdValue,
    /// Thread id (the stream for GPU activities).
    pub tid: IdValue,
}

/// A pid or tid as the trace wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum IdValue {
    /// A JSON integer.
    Num(i64),
    /// A JSON string, or a number that is not an `i64` kept as its text.
    Str(String),
}

impl IdValue {
    /// The value as an integer: the number itself, or the trailing integer of strings such as
    /// `"stream 7"` (old Kineto's GPU tids).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            IdValue::Num(n) => Some(*n),
            IdValue::Str(s) => {
                let digits = s.rsplit(' ').next()?;
                digits.parse().ok()
            }
        }
    }
}

impl std::fmt::Display for IdValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdValue::Num(n) => write!(f, "{n}"),
            IdValue::Str(s) => f.write_str(s),
        }
    }
}

/// Interns byte strings to dense ids; the text is kept once.
#[derive(Debug, Default, Clone)]
pub(crate) struct Interner {
    map: FxHashMap<Box<[u8]>, u32>,
    strings: Vec<String>,
}

impl Interner {
    #[inline]
    pub(crate) fn intern(&mut self, bytes: &[u8]) -> u32 {
        if let Some(&id) = self.map.get(bytes) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings
            .push(String::from_utf8_lossy(bytes).into_owned());
        self.map.insert(bytes.into(), id);
        id
    }

    pub(crate) fn get(&self, id: u32) -> &str {
        self.strings.get(id as usize).map_or("", String::as_str)
    }

    pub(crate) fn len(&self) -> usize {
        self.strings.len()
    }

    /// Interns every string of `other` (not frozen) in `other`'s id order, so that ids are handed out
    /// as if `other`'s strings had been interned here one by one; returns `other`'s id → this id.
    pub(crate) fn absorb(&mut self, other: &Interner) -> Vec<u32> {
        let mut keys: Vec<&[u8]> = vec![&[]; other.strings.len()];
        for (k, &id) in &other.map {
            if let Some(slot) = keys.get_mut(id as usize) {
                *slot = k;
            }
        }
        keys.into_iter().map(|k| self.intern(k)).collect()
    }

    /// Drops the lookup table once parsing is done: the id → text direction is all readers need.
    pub(crate) fn freeze(&mut self) {
        self.map = FxHashMap::default();
    }
}

/// What kind of GPU activity a [`GpuOp`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuKind {
    /// A kernel (`cat` `kernel`, or `Kernel` before 2022).
    Kernel,
    /// A copy (`gpu_memcpy`, or `Memcpy`).
    Memcpy,
    /// A fill (`gpu_memset`, or `Memset`).
    Memset,
}

impl GpuKind {
    /// Every kind, in [`GpuKind::index`]'s order.
    pub const ALL: [GpuKind; 3] = [GpuKind::Kernel, GpuKind::Memcpy, GpuKind::Memset];

    /// Its place among kernels, copies and fills: the order of every per-kind table of the model
    /// (and of those kept beside it).
    pub fn index(self) -> usize {
        match self {
            GpuKind::Kernel => 0,
            GpuKind::Memcpy => 1,
            GpuKind::Memset => 2,
        }
    }
}

/// A kernel, copy or fill that ran on a GPU: its name, times, track and ids, with what else its record
/// says kept once per distinct value in the trace ([`GpuOpDetail`], read with [`Trace::detail`]). A
/// trace's ops repeat a handful of launch shapes, devices and streams, so a row is 48 bytes where the
/// whole record would be 160 (the model's rows are what a parse holds: `docs/parse-costs.md`), and
/// kept encoded ([`Rows`]) ~9–11.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuOp {
    /// Demangled name as Kineto wrote it.
    pub name: Sym,
    /// Start, ns on the trace clock.
    pub ts_ns: i64,
    /// Duration, ns (never negative: the parser rejects that).
    pub dur_ns: i64,
    /// (`pid`, `tid`): device and stream as the trace labels them.
    pub track: Track,
    /// `args.correlation`: the CUPTI id shared with the launching runtime/driver call (CUPTI numbers
    /// from 1; a 0 is kept as `None`).
    pub correlation: Option<NonZeroU64>,
    /// `args["External id"]` (`"external id"` in old traces); 0 means none there and is kept as `None`.
    pub external_id: Option<NonZeroU64>,
    /// The rest of the record: [`Trace::detail`]. An id into the table of the trace the op was read
    /// into: an op moved into another trace goes through that trace's [`Trace::gpu_op`].
    pub detail: Detail,
}

// Every parse holds a row per GPU op (docs/parse-costs.md: the model's share of a file): a field added
// here is paid on every kernel of every trace, so the size is checked when it is built.
const _: () = assert!(std::mem::size_of::<GpuOp>() == 48);

/// An interned [`GpuOpDetail`]: [`Trace::detail`] gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Detail(pub(crate) u32);

/// What a GPU op's record says beyond [`GpuOp`]'s fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GpuOpDetail {
    /// `args.device`, else the pid when it is an integer.
    pub device: Option<i64>,
    /// `args.stream`, else the integer in the tid.
    pub stream: Option<i64>,
    /// `args.grid`, `[x, y, z]` (kernels only; zeros when absent).
    pub grid: [u32; 3],
    /// `args.block`, `[x, y, z]` (kernels only; zeros when absent).
    pub block: [u32; 3],
    /// `args["registers per thread"]`.
    pub registers: Option<u32>,
    /// `args["shared memory"]`, bytes.
    pub shared_memory: Option<u32>,
    /// `args["graph id"]` (CUDA ≥ 12, Kineto ≥ 2026-02).
    pub graph_id: Option<u64>,
    /// `args["graph node id"]`.
    pub graph_node_id: Option<u64>,
    /// `args.bytes` (copies and fills).
    pub bytes: Option<u64>,
}

/// A GPU op as a reader hands it to the model: [`GpuOp`]'s fields and its detail whole (the model
/// interns the detail).
#[derive(Debug, Clone, PartialEq)]
pub struct NewGpuOp {
    /// [`GpuOp::name`].
    pub name: Sym,
    /// [`GpuOp::ts_ns`].
    pub ts_ns: i64,
    /// [`GpuOp::dur_ns`].
    pub dur_ns: i64,
    /// [`GpuOp::track`].
    pub track: Track,
    /// [`GpuOp::correlation`].
    pub correlation: Option<NonZeroU64>,
    /// [`GpuOp::external_id`].
    pub external_id: Option<NonZeroU64>,
    /// The record behind [`GpuOp::detail`], whole: the model interns it.
    pub detail: GpuOpDetail,
}

/// Interns [`GpuOpDetail`]s to dense ids, first seen first.
#[derive(Debug, Default, Clone)]
pub(crate) struct Details {
    map: FxHashMap<GpuOpDetail, u32>,
    list: Vec<GpuOpDetail>,
}

impl Details {
    #[inline]
    pub(crate) fn intern(&mut self, d: GpuOpDetail) -> Detail {
        if let Some(&id) = self.map.get(&d) {
            return Detail(id);
        }
        let id = self.list.len() as u32;
        self.list.push(d.clone());
        self.map.insert(d, id);
        Detail(id)
    }

    pub(crate) fn get(&self, d: Detail) -> Option<&GpuOpDetail> {
        self.list.get(d.0 as usize)
    }

    /// Interns every detail of `other` in `other`'s id order; returns `other`'s id → this id.
    pub(crate) fn absorb(&mut self, other: &Details) -> Vec<Detail> {
        other.list.iter().map(|d| self.intern(d.clone())).collect()
    }

    /// Drops the lookup table once the trace is built.
    pub(crate) fn freeze(&mut self) {
        self.map = FxHashMap::default();
    }
}

impl GpuOp {
    /// End, ns on the trace clock.
    pub fn end_ns(&self) -> i64 {
        self.ts_ns.saturating_add(self.dur_ns)
    }
}

/// Which API family a [`Launch`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `cuda_runtime` (or `Runtime`): cudaLaunchKernel, cudaGraphLaunch, hipLaunchKernel, …
    Runtime,
    /// `cuda_driver`: cuLaunchKernel (e.g. Triton), …
    Driver,
}

/// A runtime or driver API call on a CPU thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Launch {
    /// API name (`cudaLaunchKernel`, `cudaGraphLaunch`, …).
    pub name: Sym,
    /// Runtime or driver.
    pub api: Api,
    /// Start, ns.
    pub ts_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// (`pid`, `tid`): the calling thread.
    pub track: Track,
    /// `args.correlation` (0 kept as `None`).
    pub correlation: Option<NonZeroU64>,
    /// `args["External id"]`.
    pub external_id: Option<NonZeroU64>,
    /// `args.cbid`: the CUPTI callback id of the API.
    pub cbid: Option<u16>,
}

impl Launch {
    /// End, ns.
    pub fn end_ns(&self) -> i64 {
        self.ts_ns.saturating_add(self.dur_ns)
    }
}

/// Which kind of CPU-side or annotation span a [`Span`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// `cpu_op` (`Operator` in old traces): an aten op.
    CpuOp,
    /// `user_annotation`: `record_function` ranges, `ProfilerStep#N`, a server's step markers.
    UserAnnotation,
    /// `gpu_user_annotation` (`gpu_user_Annotation` before 2022): an annotation mirrored on a stream.
    GpuUserAnnotation,
}

/// An op or annotation: a named time range on a thread (or, for GPU annotations, a stream).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Name.
    pub name: Sym,
    /// Start, ns.
    pub ts_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// (`pid`, `tid`): the thread (device and stream for GPU annotations).
    pub track: Track,
    /// `args["External id"]`.
    pub external_id: Option<NonZeroU64>,
}

impl Span {
    /// End, ns.
    pub fn end_ns(&self) -> i64 {
        self.ts_ns.saturating_add(self.dur_ns)
    }
}

/// The activation rows of one GEMM op, from its `Input Dims`: the tokens it multiplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmRows {
    /// Index into `Trace::cpu_ops`.
    pub cpu_op: u32,
    /// Product of the activation input's dimensions but the last.
    pub rows: u32,
}

/// Which end of a CPU→GPU flow arrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowPhase {
    /// `ph: "s"`: at the launch.
    Start,
    /// `ph: "f"`: at the GPU activity.
    Finish,
}

/// One end of a CPU→GPU flow (`ac2g`, or `async_gpu` / `async_cpu_to_gpu` in old traces).
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// `id`: the correlation id of the launch and the activity.
    pub id: u64,
    /// Start or finish.
    pub phase: FlowPhase,
    /// Time, ns.
    pub ts_ns: i64,
    /// (`pid`, `tid`): the thread at the start, the device and stream at the finish.
    pub track: Track,
}

/// The file format a trace was read from (told by content, never by name).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// PyTorch-profiler (Kineto) JSON: an object with `traceEvents`.
    #[default]
    Kineto,
    /// Chrome-trace JSON in array form (`[ {...}, … ]`), as `rpd2tracing` and other converters write it.
    ChromeArray,
    /// Nsight Systems SQLite export (`nsys export --type sqlite`).
    NsysSqlite,
    /// rocprofv3 JSON (`--output-format json`): `{"rocprofiler-sdk-tool": [...]}`.
    Rocprofv3Json,
    /// rocprofv3 CSV: a process's `*_kernel_trace.csv` (or, traced without kernels, its API and
    /// copy traces) and the files beside it.
    Rocprofv3Csv,
    /// rocpd SQLite (ROCm ≥ 7's default rocprofv3 output), read through its views.
    RocpdSqlite,
    /// RPD SQLite (rocmProfileData's tracer), schema 2 or 3.
    RpdSqlite,
    /// The JSON of the legacy rocprof (v1/v2, `--hip-trace`/`--sys-trace`, `results.json`): a
    /// Chrome-trace object whose first event is `{}`.
    RocprofLegacyJson,
    /// The XPlane protobuf (`*.xplane.pb`) the JAX, TensorFlow and XLA profilers write (read by the
    /// `kineto-xplane` crate).
    #[serde(rename = "xplane")]
    XPlane,
    /// A Perfetto protobuf trace (`.pftrace`, `.perfetto-trace`: `TracePacket`s; read by the
    /// `kineto-perfetto` crate).
    Perfetto,
}

impl TraceFormat {
    /// The name a user knows the format by.
    pub fn title(self) -> &'static str {
        match self {
            TraceFormat::Kineto => "Kineto JSON",
            TraceFormat::ChromeArray => "Chrome-trace JSON array",
            TraceFormat::NsysSqlite => "Nsight Systems SQLite",
            TraceFormat::Rocprofv3Json => "rocprofv3 JSON",
            TraceFormat::Rocprofv3Csv => "rocprofv3 CSV",
            TraceFormat::RocpdSqlite => "rocpd SQLite",
            TraceFormat::RpdSqlite => "RPD SQLite",
            TraceFormat::RocprofLegacyJson => "rocprof v1/v2 JSON",
            TraceFormat::XPlane => "XPlane protobuf",
            TraceFormat::Perfetto => "Perfetto protobuf",
        }
    }

    /// Whether a warning's `offset` is a byte of the file (the event-stream JSON formats) or 0 with the
    /// place named in its message (tables, CSV lines, and rocprofv3's JSON, whose warnings name the
    /// process and table they are about).
    pub fn has_byte_offsets(self) -> bool {
        matches!(
            self,
            TraceFormat::Kineto | TraceFormat::ChromeArray | TraceFormat::RocprofLegacyJson
        )
    }

    /// The key JSON output and Parquet metadata carry (`kineto`, `nsys_sqlite`, …).
    pub fn key(self) -> &'static str {
        match self {
            TraceFormat::Kineto => "kineto",
            TraceFormat::ChromeArray => "chrome_array",
            TraceFormat::NsysSqlite => "nsys_sqlite",
            TraceFormat::Rocprofv3Json => "rocprofv3_json",
            TraceFormat::Rocprofv3Csv => "rocprofv3_csv",
            TraceFormat::RocpdSqlite => "rocpd_sqlite",
            TraceFormat::RpdSqlite => "rpd_sqlite",
            TraceFormat::RocprofLegacyJson => "rocprof_legacy_json",
            TraceFormat::XPlane => "xplane",
            TraceFormat::Perfetto => "perfetto",
        }
    }
}

impl std::fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.title())
    }
}

/// The trace's top-level metadata: the values analyses read. Other top-level keys (`deviceProperties`,
/// the rest of `distributedInfo`, unknown ones) are validated and skipped, never kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Header {
    /// The file format the trace was read from.
    pub format: TraceFormat,
    /// The format's own version as the file states it: Kineto's `schemaVersion`, the nsys export
    /// schema (`3.16.1`), RPD's and rocpd's `schema_version`, rocprofv3's tool version.
    pub format_version: Option<String>,
    /// The program that wrote the file, as the file names it (`NVIDIA Nsight Systems 2024.6.2.25`).
    pub producer: Option<String>,
    /// `schemaVersion`.
    pub schema_version: Option<i64>,
    /// `distributedInfo.rank`.
    pub rank: Option<u64>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u64>,
    /// `baseTimeNanoseconds`: add to a `ts` in ns to get Unix-epoch ns (PyTorch ≥ 2.4 writes relative
    /// times). Absent in older traces, whose times are already absolute microseconds.
    pub base_time_ns: Option<i64>,
    /// `displayTimeUnit`.
    pub display_time_unit: Option<String>,
    /// `traceName`.
    pub trace_name: Option<String>,
    /// `deviceProperties`: the few fields a reader of GPU work needs (which GPU, how big), at most
    /// [`MAX_DEVICES`] entries; the rest of each entry is validated and skipped.
    pub devices: Vec<DeviceProps>,
    /// Set on each trace of a file that held several processes or GPUs ([`crate::split`]): which
    /// process and device of the file this trace is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<RankPart>,
}

/// One rank of a file that held several: a process and the GPU it drove.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankPart {
    /// The process id, as the file numbers processes (`None`: GPU ops the file gives no process for).
    pub process: Option<i64>,
    /// The GPU (`None`: GPU ops the file gives no device for).
    pub device: Option<i64>,
    /// How rows name it: `pid 4101 gpu 0`, or `rank 3 (pid 4101 gpu 0)` when the file says the rank.
    pub label: String,
    /// How many ranks the file held.
    pub of: usize,
}

/// Most `deviceProperties` entries kept (a node has at most a few dozen GPUs; more is not a real trace).
pub const MAX_DEVICES: usize = 256;

/// One `deviceProperties` entry, as far as it is read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeviceProps {
    /// `id`: the device index kernels carry in `args.device`.
    pub id: Option<i64>,
    /// `name` (empty on some ROCm traces).
    pub name: Option<String>,
    /// `numSms` (SMs on NVIDIA, CUs on AMD).
    pub num_sms: Option<u64>,
    /// `totalGlobalMem`, bytes.
    pub total_global_mem: Option<u64>,
}

/// Event counts by what the trace wrote, before any interpretation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Objects in `traceEvents` (for the native formats: the timed rows and records read).
    pub events: u64,
    /// `X` events of a category not kept in the model (for the native formats: timed rows of kinds
    /// the model does not keep, such as marks), by category (`python_function` — all of them, the few
    /// kept in `Trace::python_functions` included —, `Trace`, `cuda_sync`, `mtia_runtime`, …).
    pub other_complete: std::collections::BTreeMap<String, u64>,
    /// Events by `ph` (`X`, `M`, `i`, `s`, `f`, …).
    pub by_phase: std::collections::BTreeMap<String, u64>,
}

/// A problem that did not stop the parse; reported beside the result, never hidden.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// Byte offset in the (decompressed) JSON of the event concerned.
    pub offset: u64,
    /// What was wrong and what was done about it.
    pub message: String,
}

/// Where a salvaged parse stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Salvage {
    /// Byte offset in the (decompressed) JSON of the first event that was cut off.
    pub cut_offset: u64,
    /// Why the input ended there.
    pub reason: String,
}

/// Consecutive dispatches on one GPU queue where a dispatch ends after its successor started: the
/// AMD runtime records such overruns (up to about 0.5 µs) on the same hardware queue. Counted, never
/// added twice: busy time is an interval union.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Overruns {
    /// Dispatches that started before their predecessor on the queue ended.
    pub count: u64,
    /// The largest overrun (predecessor's end − this start), ns.
    pub max_ns: i64,
    /// Σ overrun, ns (the time a plain sum of durations counts twice).
    pub sum_ns: i64,
}

/// How the profiler captured the GPU work, where that changes what the rows mean; empty for Kineto.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Capture {
    /// CUDA-graph tracing mode the profiler recorded (nsys `CUDA_GRAPH_TRACE_OPTIONS:MODE`: `Graph`
    /// or `Node`), per process where they differ, joined by `,`.
    pub graph_trace_mode: Option<String>,
    /// Whole-graph replays kept as one GPU op each (in `Trace::kernels`, named
    /// [`GRAPH_REPLAY_PREFIX`]…): the kernels inside them were not recorded, so per-kernel tables and
    /// budgets of this trace are incomplete.
    pub graph_replays: u64,
    /// Σ duration of those replays, ns.
    pub graph_replays_ns: i64,
    /// Same-queue overruns, counted by readers of AMD formats (rocprofv3, rocpd, RPD).
    pub queue_overruns: Option<Overruns>,
    /// What the reader did that someone reading the rows should know, one line each.
    pub notes: Vec<String>,
}

impl Capture {
    /// False when some GPU work is in the trace only as whole-graph replays.
    pub fn kernels_complete(&self) -> bool {
        self.graph_replays == 0
    }
}

/// The name of a whole-graph replay kept as one GPU op starts with this (then the graph id).
pub const GRAPH_REPLAY_PREFIX: &str = "CUDA graph replay";

/// A parsed trace: the compact model of one trace file, whatever its format.
#[derive(Debug, Default)]
pub struct Trace {
    /// Top-level metadata.
    pub header: Header,
    /// How the GPU work was captured (graph mode, queue overruns, reader notes).
    pub capture: Capture,
    /// Kernels (kept encoded, as every table of ops, calls and spans: [`Rows`]): in file order from
    /// the Kineto parser; from every other reader by start, then end, equal times in file order
    /// (`native::TraceBuilder::finish`, which sorts the spans too, longer first at equal starts).
    pub kernels: Rows<GpuOp>,
    /// Copies, in the order of [`Trace::kernels`].
    pub memcpys: Rows<GpuOp>,
    /// Fills, in the order of [`Trace::kernels`].
    pub memsets: Rows<GpuOp>,
    /// Runtime and driver API calls, in the order of [`Trace::kernels`].
    pub launches: Rows<Launch>,
    /// `cpu_op` events (kept encoded: [`Rows`]).
    pub cpu_ops: Rows<Span>,
    /// `user_annotation` events.
    pub user_annotations: Rows<Span>,
    /// `gpu_user_annotation` events.
    pub gpu_user_annotations: Rows<Span>,
    /// The `python_function` events a step profile needs: a server's step function or a whole model's
    /// forward ([`crate::profiles::keep_python_event`]); the rest are only counted
    /// (`Counts::other_complete["python_function"]` counts all).
    pub python_functions: Rows<Span>,
    /// The input rows of GEMM `cpu_op`s recorded with `record_shapes` ([`crate::profiles::GEMM_OPS`]),
    /// in file order. 8 bytes each.
    pub gemm_rows: Vec<GemmRows>,
    /// CPU→GPU flow ends.
    pub flows: Vec<Flow>,
    /// Raw counts.
    pub counts: Counts,
    /// Earliest start and latest end of any timed event (`X`, `i`, `s`, `f`; not metadata), ns.
    pub time_bounds: Option<(i64, i64)>,
    /// Problems that did not stop the parse (the first 100; `warnings_total` counts all).
    pub warnings: Vec<Warning>,
    /// All warnings, including those past the first 100.
    pub warnings_total: u64,
    /// Set when the input was cut and salvage was asked for.
    pub salvaged: Option<Salvage>,
    pub(crate) names: Interner,
    pub(crate) tracks: Vec<TrackIds>,
    pub(crate) details: Details,
    /// Per GPU-op kind (kernels, copies, fills), the process each op ran for, parallel to the ops: filled
    /// by the readers of files that hold several processes (nsys, rocpd, RPD, Perfetto), empty otherwise.
    pub(crate) op_processes: [OpProcesses; 3],
    /// The rank a reader found for a process, by process id.
    pub(crate) process_ranks: Vec<(i64, u64)>,
}

impl Trace {
    /// The text of an interned name.
    pub fn name(&self, s: Sym) -> &str {
        self.names.get(s.0)
    }

    /// What op `op`'s record says beyond its name, times, track and ids.
    pub fn detail(&self, op: &GpuOp) -> &GpuOpDetail {
        static NONE: GpuOpDetail = GpuOpDetail {
            device: None,
            stream: None,
            grid: [0; 3],
            block: [0; 3],
            registers: None,
            shared_memory: None,
            graph_id: None,
            graph_node_id: None,
            bytes: None,
        };
        self.details.get(op.detail).unwrap_or(&NONE)
    }

    /// Adds `op` to the model's table of `kind` (its detail interned).
    pub fn push_gpu_op(&mut self, kind: GpuKind, op: NewGpuOp) {
        let op = self.gpu_op(op);
        self.gpu_ops_mut(kind).push(op);
    }

    /// `op` as a row of this trace (its detail interned here).
    pub fn gpu_op(&mut self, op: NewGpuOp) -> GpuOp {
        GpuOp {
            name: op.name,
            ts_ns: op.ts_ns,
            dur_ns: op.dur_ns,
            track: op.track,
            correlation: op.correlation,
            external_id: op.external_id,
            detail: self.details.intern(op.detail),
        }
    }

    /// The pid and tid behind a [`Track`].
    pub fn track(&self, t: Track) -> &TrackIds {
        static NONE: TrackIds = TrackIds {
            pid: IdValue::Num(0),
            tid: IdValue::Num(0),
        };
        self.tracks.get(t.0 as usize).unwrap_or(&NONE)
    }

    /// Number of distinct tracks.
    pub fn track_count(&self) -> usize {
        self.tracks.len()
    }

    /// Number of distinct names interned.
    pub fn distinct_names(&self) -> usize {
        self.names.len()
    }

    /// Looks a name up without interning it.
    pub fn find_name(&self, text: &str) -> Option<Sym> {
        (0..self.names.len() as u32)
            .find(|&i| self.names.get(i) == text)
            .map(Sym)
    }

    /// The GEMM ops recorded with their input shapes, each with its activation rows
    /// ([`Trace::gemm_rows`]), decoded once.
    pub fn gemm_ops(&self) -> Vec<(Span, u32)> {
        self.gemm_rows
            .iter()
            .filter_map(|g| Some((self.cpu_ops.get(g.cpu_op as usize)?, g.rows)))
            .collect()
    }

    /// The distinct names of the CPU ops and user annotations, in one pass (spans are decoded as they
    /// are read): `record_function` ranges land among one or the other by the PyTorch version, and
    /// step markers are looked for among both.
    pub fn range_names(&self) -> FxHashSet<Sym> {
        self.user_annotations
            .iter()
            .chain(self.cpu_ops.iter())
            .map(|s| s.name)
            .collect()
    }

    /// Every span of one kind.
    pub fn spans(&self, kind: SpanKind) -> &Rows<Span> {
        match kind {
            SpanKind::CpuOp => &self.cpu_ops,
            SpanKind::UserAnnotation => &self.user_annotations,
            SpanKind::GpuUserAnnotation => &self.gpu_user_annotations,
        }
    }

    /// Every GPU op of one kind.
    pub fn gpu_ops(&self, kind: GpuKind) -> &Rows<GpuOp> {
        match kind {
            GpuKind::Kernel => &self.kernels,
            GpuKind::Memcpy => &self.memcpys,
            GpuKind::Memset => &self.memsets,
        }
    }

    /// The table of GPU ops of one kind, to add to.
    pub(crate) fn gpu_ops_mut(&mut self, kind: GpuKind) -> &mut Rows<GpuOp> {
        match kind {
            GpuKind::Kernel => &mut self.kernels,
            GpuKind::Memcpy => &mut self.memcpys,
            GpuKind::Memset => &mut self.memsets,
        }
    }
}
