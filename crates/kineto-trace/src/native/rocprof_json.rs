//! rocprofv3 JSON (`rocprofv3 --output-format json`): `{"rocprofiler-sdk-tool": [ process… ]}`.
//!
//! Per process (ROCm's rocprofiler-sdk `source/docs/rocprofv3-schema.json`, checked against a
//! rocprofv3 file of ROCm 7.0 written on 8 × MI350X):
//! * kernels — `buffer_records.kernel_dispatch[]`: `start_timestamp`, `end_timestamp` (ns, the
//!   tool's clock), `thread_id`, `correlation_id.internal` (the launching API call's) and `.external`,
//!   `dispatch_info.{agent_id.handle, queue_id.handle, kernel_id, workgroup_size, grid_size,
//!   group_segment_size}`, `stream_id.handle` (newer releases); registers from the kernel symbol's
//!   `arch_vgpr_count` and shared memory from the dispatch's `group_segment_size`
//!   ([`super::rocprof_resources`], the rule of every rocprofv3 form);
//! * names — `kernel_symbols[]` by `kernel_id`: `demangled_kernel_name` (`.kd` and ` [clone .kd]`
//!   removed), else `formatted_kernel_name`, else `kernel_name` demangled;
//! * API calls — `hip_api[]`, `hsa_api[]`, `rccl_api[]`, `marker_api[]`, named by
//!   `strings.buffer_records[kind].operations[operation]`; roctx ranges are `marker_api` records with
//!   their text in `strings.marker_api[{key: correlation, value}]`;
//! * copies — `memory_copy[]` with `bytes`, `src_agent_id`, `dst_agent_id`, the direction in the
//!   operation's name (`MEMORY_COPY_HOST_TO_DEVICE` …);
//! * GPUs — `agents[]` with `type == 2`: device index `gpu_index` (else `logical_node_type_id`),
//!   `product_name` (else `name`), `cu_count`, `mem_banks[].size_in_bytes`.
//!
//! Fills have no record of their own: they run as the runtime's `__amd_rocclr_fill*` kernels, and
//! some copies as `__amd_rocclr_copy*` kernels; those are counted as fills and copies
//! ([`super::names::blit_kind`]). Correlation ids are per process, so they are made unique per
//! process object.
//!
//! The text is read as it streams ([`read`]): the model is built as the records are read, and the
//! tables a record names (agents, kernel symbols, strings) are kept; a file that writes its records
//! before its tables has them held as numbers until the tables are read.
//!
//! What it is not: the stored bytes (gzip, the sha256, a cut stream: `crate::stored`) or the check that
//! a file is rocprofv3 JSON (`crate::read::detect`).

use super::TraceBuilder;
use super::builder::DispatchTally;
use crate::error::{Error, Result};
use crate::model::{DeviceProps, GpuKind, Trace, TraceFormat};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde::de::DeserializeSeed;
use std::io::{self, Read};
use std::path::Path;
use walk::{LineLengths, TopSeed};

mod rows;
mod walk;

/// A process object: its tables and its records. Read whole only when a file writes it as an array
/// (serde's other form of a struct); as an object it is read as it streams (`walk.rs`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Process {
    metadata: Metadata,
    agents: Vec<Agent>,
    strings: Strings,
    kernel_symbols: Vec<Symbol>,
    buffer_records: Records,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metadata {
    pid: Option<i64>,
    version: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Handle {
    handle: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Agent {
    id: Handle,
    #[serde(rename = "type")]
    kind: i64,
    gpu_index: Option<i64>,
    logical_node_type_id: Option<i64>,
    name: Option<String>,
    product_name: Option<String>,
    cu_count: Option<u64>,
    mem_banks: Vec<MemBank>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MemBank {
    size_in_bytes: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Strings {
    buffer_records: Vec<KindNames>,
    marker_api: Vec<KeyValue>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct KindNames {
    kind: String,
    operations: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct KeyValue {
    key: u64,
    value: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Symbol {
    kernel_id: u64,
    kernel_name: String,
    formatted_kernel_name: String,
    demangled_kernel_name: String,
    /// The kernel's architected VGPRs (newer releases): its dispatches' registers
    /// ([`super::rocprof_resources`]).
    arch_vgpr_count: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Records {
    kernel_dispatch: Vec<Dispatch>,
    hip_api: Vec<ApiRecord>,
    hsa_api: Vec<ApiRecord>,
    marker_api: Vec<ApiRecord>,
    rccl_api: Vec<ApiRecord>,
    memory_copy: Vec<Copy>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Correlation {
    internal: u64,
    external: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Dim3 {
    x: u32,
    y: u32,
    z: u32,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DispatchInfo {
    agent_id: Handle,
    queue_id: Handle,
    kernel_id: u64,
    workgroup_size: Dim3,
    grid_size: Dim3,
    /// LDS bytes per workgroup, static and dynamic: the dispatch's shared memory
    /// ([`super::rocprof_resources`]).
    group_segment_size: Option<u32>,
}

// The records' times are required (a record without one is an error naming its line and column, never
// a 0-ns op at time 0); their other fields default when absent.

#[derive(Deserialize)]
struct Dispatch {
    #[serde(default)]
    correlation_id: Correlation,
    start_timestamp: i64,
    end_timestamp: i64,
    #[serde(default)]
    dispatch_info: DispatchInfo,
    #[serde(default)]
    stream_id: Option<Handle>,
}

#[derive(Deserialize)]
struct ApiRecord {
    #[serde(default)]
    kind: usize,
    #[serde(default)]
    operation: usize,
    #[serde(default)]
    thread_id: i64,
    #[serde(default)]
    correlation_id: Correlation,
    start_timestamp: i64,
    end_timestamp: i64,
}

#[derive(Deserialize)]
struct Copy {
    #[serde(default)]
    kind: usize,
    #[serde(default)]
    operation: usize,
    #[serde(default)]
    correlation_id: Correlation,
    start_timestamp: i64,
    end_timestamp: i64,
    #[serde(default)]
    src_agent_id: Handle,
    #[serde(default)]
    dst_agent_id: Handle,
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(default)]
    stream_id: Option<Handle>,
}

/// Reads a rocprofv3 JSON text from its content as it streams. The tables (agents, kernel symbols,
/// strings, metadata) are kept as read; a record list is built into the model as it is read when the
/// tables it needs came before it and every list built before it in the model's order was built, and
/// otherwise held as numbers (ids, times: never text) until they can be, at the latest at the end of
/// its process object. The model is the one reading the whole text gave: rows added in the same order,
/// and a text error wins over a row the model refused (reported once the whole text parsed).
pub(crate) fn read(name: &Path, content: impl Read) -> Result<Trace> {
    let mut reading = Reading::new(name);
    let mut lines = LineLengths::of(content);
    let mut de = serde_json::Deserializer::from_reader(io::BufReader::with_capacity(
        TEXT_WINDOW,
        &mut lines,
    ));
    let parsed = TopSeed(&mut reading)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    drop(de);
    parsed.map_err(|e| {
        let (line, column) = lines.position_of(&e);
        let what = e.to_string();
        let what = what
            .strip_suffix(&format!(" at line {} column {}", e.line(), e.column()))
            .unwrap_or(&what);
        Error::Native {
            file: name.to_path_buf(),
            at: format!("line {line} column {column}"),
            message: format!("not rocprofv3 JSON: {what} at line {line} column {column}"),
        }
    })?;
    reading.finish()
}

/// Bytes of text read at a time.
const TEXT_WINDOW: usize = 1 << 16;

/// The model as it is built, and what the whole file adds up to.
struct Reading<'f> {
    file: &'f Path,
    b: TraceBuilder,
    totals: Totals,
    /// The first row the model refused; nothing is built after it.
    refused: Option<Error>,
}

impl<'f> Reading<'f> {
    fn new(file: &'f Path) -> Reading<'f> {
        let mut b = TraceBuilder::new(TraceFormat::Rocprofv3Json);
        b.header().producer = Some("rocprofv3 (rocprofiler-sdk)".into());
        Reading {
            file,
            b,
            totals: Totals::default(),
            refused: None,
        }
    }

    fn finish(mut self) -> Result<Trace> {
        if let Some(e) = self.refused {
            return Err(e);
        }
        self.b.note_instant_marks("roctx");
        self.totals.dispatches.finish(&mut self.b);
        Ok(self.b.finish())
    }
}

/// What the kernel dispatches of every process add up to.
#[derive(Default)]
struct Totals {
    dispatches: DispatchTally,
}

/// A process object's record lists, in the order the model is built from them (the order the whole
/// text was read in: its names, tracks and correlations are numbered in that order).
#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    KernelDispatch,
    MemoryCopy,
    HipApi,
    HsaApi,
    RcclApi,
    MarkerApi,
}

const BUILD_ORDER: [List; 6] = [
    List::KernelDispatch,
    List::MemoryCopy,
    List::HipApi,
    List::HsaApi,
    List::RcclApi,
    List::MarkerApi,
];

impl List {
    /// Its key in `buffer_records`.
    fn key(self) -> &'static str {
        match self {
            List::KernelDispatch => "kernel_dispatch",
            List::MemoryCopy => "memory_copy",
            List::HipApi => "hip_api",
            List::HsaApi => "hsa_api",
            List::RcclApi => "rccl_api",
            List::MarkerApi => "marker_api",
        }
    }

    fn place(self) -> usize {
        BUILD_ORDER.iter().position(|&l| l == self).unwrap_or(0)
    }
}

/// A GPU agent's device index by agent handle, and the kernel symbols by id (their place in the table).
struct Lookups {
    device_of: FxHashMap<u64, i64>,
    symbol_at: FxHashMap<u64, usize>,
    /// Named (and classified) once per kernel symbol, not per dispatch, with its architected VGPRs.
    sym_of: FxHashMap<u64, (crate::model::Sym, GpuKind, Option<u32>)>,
}

/// One process object as read so far: its tables, the lists held until they can be built, and where
/// its building is.
#[derive(Default)]
struct ProcessRead {
    /// Its place in the file's process list.
    index: usize,
    metadata: Option<Metadata>,
    agents: Option<Vec<Agent>>,
    strings: Option<Strings>,
    kernel_symbols: Option<Vec<Symbol>>,
    /// `buffer_records` was read to its end: a list not in it is empty.
    records_read: bool,
    /// Lists read to their end, by [`List::place`].
    read: [bool; 6],
    /// Lists read before they could be built.
    held: Records,
    /// Lists built, a prefix of [`BUILD_ORDER`].
    built: usize,
    /// Once building began (the GPU agents added to the header).
    lookups: Option<Lookups>,
    /// roctx ranges never closed.
    open_ranges: u64,
    /// The roctx messages by correlation id (their place in `strings.marker_api`), once a marker is
    /// built.
    message_at: Option<FxHashMap<u64, usize>>,
}

/// What to do with a list's records as they are read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Build,
    Hold,
    /// A row was refused before: the model is not built further, only the text checked.
    Drop,
}

impl ProcessRead {
    fn new(index: usize) -> ProcessRead {
        ProcessRead {
            index,
            ..ProcessRead::default()
        }
    }

    /// A process read whole (written as an array): all its tables and lists at hand.
    fn whole(index: usize, p: Process) -> ProcessRead {
        ProcessRead {
            index,
            metadata: Some(p.metadata),
            agents: Some(p.agents),
            strings: Some(p.strings),
            kernel_symbols: Some(p.kernel_symbols),
            records_read: true,
            read: [true; 6],
            held: p.buffer_records,
            ..ProcessRead::default()
        }
    }

    /// The tables `list` needs were read (the agents are added to the header before any row).
    fn tables_for(&self, list: List) -> bool {
        self.agents.is_some()
            && match list {
                List::KernelDispatch => self.kernel_symbols.is_some(),
                List::MemoryCopy => self.strings.is_some(),
                _ => self.strings.is_some() && self.metadata.is_some(),
            }
    }

    fn mode(&self, r: &Reading, list: List) -> Mode {
        if r.refused.is_some() {
            Mode::Drop
        } else if BUILD_ORDER.get(self.built) == Some(&list) && self.tables_for(list) {
            Mode::Build
        } else {
            Mode::Hold
        }
    }

    /// Builds the lists next in order that can be: read (or known absent) and with their tables read;
    /// at the end of the process object (`all`), every list left, with the tables it has.
    fn advance(&mut self, r: &mut Reading, all: bool) {
        while let Some(&list) = BUILD_ORDER.get(self.built) {
            let settled = all || self.records_read || self.read[list.place()];
            if !settled || !(all || self.tables_for(list)) {
                break;
            }
            self.build_held(r, list);
            self.built += 1;
        }
    }

    /// The end of the process object: every list built, the version the first to give one.
    fn finish(mut self, r: &mut Reading) {
        self.lookups(&mut r.b);
        self.advance(r, true);
        let version = self.metadata.and_then(|m| m.version);
        if r.b.header().format_version.is_none() {
            r.b.header().format_version = version;
        }
    }

    /// The lookups, made (and the GPU agents added to the header) the first time.
    fn lookups(&mut self, b: &mut TraceBuilder) -> &mut Lookups {
        let (agents, symbols) = (&self.agents, &self.kernel_symbols);
        self.lookups.get_or_insert_with(|| Lookups {
            device_of: gpu_agents(b, agents.as_deref().unwrap_or_default()),
            symbol_at: symbols
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, s)| (s.kernel_id, i))
                .collect(),
            sym_of: FxHashMap::default(),
        })
    }

    fn held_api(&mut self, list: List) -> &mut Vec<ApiRecord> {
        let h = &mut self.held;
        match list {
            List::HipApi => &mut h.hip_api,
            List::HsaApi => &mut h.hsa_api,
            List::RcclApi => &mut h.rccl_api,
            _ => &mut h.marker_api,
        }
    }

    /// A held list, built (and let go).
    fn build_held(&mut self, r: &mut Reading, list: List) {
        match list {
            List::KernelDispatch => {
                for (i, d) in std::mem::take(&mut self.held.kernel_dispatch)
                    .iter()
                    .enumerate()
                {
                    self.dispatch(r, i, d);
                }
            }
            List::MemoryCopy => {
                for (i, c) in std::mem::take(&mut self.held.memory_copy)
                    .iter()
                    .enumerate()
                {
                    self.copy(r, i, c);
                }
            }
            _ => {
                for (i, a) in std::mem::take(self.held_api(list)).iter().enumerate() {
                    self.api_record(r, list, i, a);
                }
            }
        }
        self.list_built(r, list);
    }

    /// After a list's last row: the roctx ranges never closed, said once per process.
    fn list_built(&mut self, r: &mut Reading, list: List) {
        if list == List::MarkerApi && self.open_ranges > 0 && r.refused.is_none() {
            let message = format!(
                "process {}: {} roctx ranges were never closed (no end time); left out",
                self.index, self.open_ranges
            );
            r.b.warn(0, message);
        }
    }

    /// A list read to its end (built as read, or held).
    fn list_read(&mut self, r: &mut Reading, list: List, mode: Mode) {
        self.read[list.place()] = true;
        if mode == Mode::Build {
            self.list_built(r, list);
            self.built += 1;
        }
        self.advance(r, false);
    }

    /// A bad row, `what[i]` of this process: the first is the file's error.
    fn refuse(&self, r: &mut Reading, what: &str, i: usize, message: String) {
        if r.refused.is_none() {
            r.refused = Some(Error::Native {
                file: r.file.to_path_buf(),
                at: format!("process {}, {what}[{i}]", self.index),
                message,
            });
        }
    }

    /// The process id its CPU rows are on.
    fn pid(&self) -> i64 {
        let pid = self.metadata.as_ref().and_then(|m| m.pid);
        pid.unwrap_or(self.index as i64)
    }

    /// Correlation ids are made unique per process object.
    fn scope(&self) -> u64 {
        self.index as u64
    }

    /// An operation's name: `strings.buffer_records[kind].operations[op]`.
    fn op_name(&self, kind: usize, op: usize) -> Option<&str> {
        let names = self.strings.as_ref()?.buffer_records.get(kind)?;
        names.operations.get(op).map(String::as_str)
    }

    /// A record kind's name (`MARKER_CORE_API` …).
    fn kind_name(&self, kind: usize) -> &str {
        let names = self
            .strings
            .as_ref()
            .and_then(|s| s.buffer_records.get(kind));
        names.map_or("", |k| &k.kind)
    }
}

/// The GPU agents of a process (`type == 2`): device index by agent handle, each device's identity
/// added to the header once.
fn gpu_agents(b: &mut TraceBuilder, agents: &[Agent]) -> FxHashMap<u64, i64> {
    let mut device_of: FxHashMap<u64, i64> = FxHashMap::default();
    for a in agents.iter().filter(|a| a.kind == 2) {
        let Some(dev) = a.gpu_index.or(a.logical_node_type_id) else {
            continue;
        };
        device_of.insert(a.id.handle, dev);
        if !b.trace().header.devices.iter().any(|d| d.id == Some(dev)) {
            let mem: u64 = a.mem_banks.iter().filter_map(|m| m.size_in_bytes).sum();
            let props = DeviceProps {
                id: Some(dev),
                name: a.product_name.clone().or_else(|| a.name.clone()),
                num_sms: a.cu_count,
                total_global_mem: (mem > 0).then_some(mem),
            };
            b.header().devices.push(props);
        }
    }
    device_of
}

/// A kernel symbol's name as written: demangled, else formatted, else the mangled name.
fn symbol_name(s: &Symbol) -> &str {
    if !s.demangled_kernel_name.is_empty() {
        s.demangled_kernel_name.as_str()
    } else if !s.formatted_kernel_name.is_empty() {
        s.formatted_kernel_name.as_str()
    } else {
        s.kernel_name.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> serde_json::Value {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/native/rocprofv3_markers.json");
        let text = std::fs::read(p).unwrap_or_else(|e| panic!("{e}"));
        serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_record_without_its_time_is_refused_naming_its_place_never_read_as_time_0() {
        // The sample reads whole as it is.
        let whole = serde_json::to_vec(&sample()).unwrap_or_default();
        assert!(read(Path::new("r.json"), &whole[..]).is_ok());
        for list in ["kernel_dispatch", "memory_copy", "hip_api", "marker_api"] {
            for field in ["start_timestamp", "end_timestamp"] {
                let mut v = sample();
                let records = &mut v["rocprofiler-sdk-tool"][0]["buffer_records"][list];
                let first = records[0].as_object_mut();
                let removed = first.and_then(|r| r.remove(field));
                assert!(removed.is_some(), "{list}: {field}");
                let text = serde_json::to_vec_pretty(&v).unwrap_or_default();
                let e = match read(Path::new("r.json"), &text[..]) {
                    Ok(_) => panic!("{list} without {field} was read"),
                    Err(e) => e.to_string(),
                };
                assert!(
                    e.starts_with("r.json: line ")
                        && e.contains(&format!("missing field `{field}`")),
                    "{e}"
                );
            }
        }
    }

    /// The sample's process with its keys in `order` (the rest after them, as they were).
    fn reordered(order: &[&str]) -> Vec<u8> {
        let mut v = sample();
        let p = v["rocprofiler-sdk-tool"][0].take();
        let mut out = serde_json::Map::new();
        let obj = p.as_object().cloned().unwrap_or_default();
        for k in order {
            if let Some(x) = obj.get(*k) {
                out.insert(k.to_string(), x.clone());
            }
        }
        for (k, x) in obj {
            out.entry(k).or_insert(x);
        }
        v["rocprofiler-sdk-tool"][0] = serde_json::Value::Object(out);
        serde_json::to_vec(&v).unwrap_or_default()
    }

    fn model(text: &[u8]) -> String {
        match read(Path::new("r.json"), text) {
            Ok(t) => format!("{t:?}"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn records_before_the_tables_they_name_read_as_after_them() {
        // serde_json's map keeps keys sorted, so `reordered` decides the order in the text.
        let tables_first = reordered(&["metadata", "agents", "strings", "kernel_symbols"]);
        let records_first = reordered(&["buffer_records", "kernel_symbols", "agents"]);
        let text = String::from_utf8_lossy(&records_first).into_owned();
        assert!(text.find("\"buffer_records\"") < text.find("\"kernel_symbols\""));
        let want = model(&tables_first);
        assert_eq!(model(&records_first), want);
        // The kernels were named by their symbols (ids 1, 3, 4, 2 in the sample), not `kernel_id N`.
        let trace = read(Path::new("r.json"), &records_first[..]).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = trace.kernels.iter().map(|k| trace.name(k.name)).collect();
        assert!(
            names.contains(&"void at::native::reduce_kernel<512, 1>(int)"),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n.starts_with("kernel_id")),
            "{names:?}"
        );
    }

    #[test]
    fn a_text_error_after_a_refused_row_is_the_error() {
        let mut v = sample();
        let records = &mut v["rocprofiler-sdk-tool"][0]["buffer_records"];
        // The first kernel ends before it starts: a row the model refuses.
        let start = records["kernel_dispatch"][0]["start_timestamp"]
            .as_i64()
            .unwrap_or(0);
        records["kernel_dispatch"][0]["end_timestamp"] = (start - 5).into();
        let refused = serde_json::to_vec(&v).unwrap_or_default();
        match read(Path::new("r.json"), &refused[..]) {
            Err(e) => assert!(
                e.to_string().contains("kernel_dispatch[0]: ends before"),
                "{e}"
            ),
            Ok(_) => panic!("a kernel ending before it starts was read"),
        }
        // The same text with a string for the last marker's time, later in the text.
        let markers = &mut v["rocprofiler-sdk-tool"][0]["buffer_records"]["marker_api"];
        let last = markers.as_array().map_or(0, |m| m.len() - 1);
        markers[last]["start_timestamp"] = "x".into();
        let text = serde_json::to_vec(&v).unwrap_or_default();
        match read(Path::new("r.json"), &text[..]) {
            Err(e) => assert!(e.to_string().contains("invalid type: string \"x\""), "{e}"),
            Ok(_) => panic!("a string time was read"),
        }
    }

    /// The error's `line L column C` of reading `text`.
    fn error_place(text: &str) -> String {
        match read(Path::new("r.json"), text.as_bytes()) {
            Err(Error::Native { at, .. }) => at,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("{text} was read"),
        }
    }

    #[test]
    fn an_error_after_a_byte_looked_at_is_placed_before_that_byte_as_reading_whole_does() {
        // A key given twice: placed at the `:` after it (its index, on line 1: the column).
        let twice = r#"{"rocprofiler-sdk-tool": [], "rocprofiler-sdk-tool": []}"#;
        let colon = twice.rfind(':').unwrap_or(0);
        assert_eq!(error_place(twice), format!("line 1 column {colon}"));
        // A number where a list belongs, ended by a new line: placed at the end of its line, as the
        // byte looked at (the new line) is.
        let number = "{\"rocprofiler-sdk-tool\": [{\"agents\": 5\n}]}";
        let end_of_line = number.find('\n').unwrap_or(0);
        assert_eq!(error_place(number), format!("line 1 column {end_of_line}"));
        // A map where a list belongs: at its `{`, on line 2 after 2 spaces.
        let map = "{\"rocprofiler-sdk-tool\":\n  {}}";
        assert_eq!(error_place(map), "line 2 column 2");
        // A field missing: after the `}` that closed its record (nothing looked at past it).
        let missing = r#"{"rocprofiler-sdk-tool": [{"buffer_records": {"hip_api": [{"end_timestamp": 1}]}}]}"#;
        let closed = missing.find("1}").unwrap_or(0) + 2;
        assert_eq!(error_place(missing), format!("line 1 column {closed}"));
    }
}
