//! rocprofv3 JSON (`rocprofv3 --output-format json`): `{"rocprofiler-sdk-tool": [ process… ]}`.
//!
//! Per process (ROCm's rocprofiler-sdk `source/docs/rocprofv3-schema.json`, checked against a
//! rocprofv3 file of ROCm 7.0 written on 8 × MI350X):
//! * kernels — `buffer_records.kernel_dispatch[]`: `start_timestamp`, `end_timestamp` (ns, the
//!   tool's clock), `thread_id`, `correlation_id.internal` (the launching API call's) and `.external`,
//!   `dispatch_info.{agent_id.handle, queue_id.handle, kernel_id, workgroup_size, grid_size}`,
//!   `stream_id.handle` (newer releases);
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
//! What it is not: the stored bytes (gzip, the sha256: `crate::stored`) or the check that a file is rocprofv3
//! JSON (`crate::read::detect`); it takes the whole text.

use super::TraceBuilder;
use super::builder::DispatchTally;
use super::names::{blit_kind, copy_name, kernel_name};
use crate::error::{Error, Result};
use crate::model::{
    Api, DeviceProps, GpuKind, GpuOp, IdValue, Launch, Span, SpanKind, Trace, TraceFormat,
};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
struct Top {
    #[serde(rename = "rocprofiler-sdk-tool")]
    tool: Vec<Process>,
}

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

/// Reads a whole rocprofv3 JSON text. The records own their fields, so the text is let go before the model
/// is built: the peak is the text and the records, not the text, the records and the model.
pub(crate) fn read(name: &Path, bytes: Vec<u8>) -> Result<Trace> {
    let top: Top = serde_json::from_slice(&bytes).map_err(|e| Error::Native {
        file: name.to_path_buf(),
        at: format!("line {} column {}", e.line(), e.column()),
        message: format!("not rocprofv3 JSON: {e}"),
    })?;
    drop(bytes);
    let mut b = TraceBuilder::new(TraceFormat::Rocprofv3Json);
    b.header().producer = Some("rocprofv3 (rocprofiler-sdk)".into());
    let mut totals = Totals::default();
    for (index, p) in top.tool.iter().enumerate() {
        if b.header().format_version.is_none() {
            b.header().format_version = p.metadata.version.clone();
        }
        let device_of = gpu_agents(&mut b, p);
        let process = ProcessRecords {
            file: name,
            index,
            p,
            pid: p.metadata.pid.unwrap_or(index as i64),
            scope: index as u64,
            device_of,
        };
        process.dispatches(&mut b, &mut totals)?;
        process.copies(&mut b)?;
        process.api_calls(&mut b)?;
        process.rccl_calls(&mut b)?;
        process.markers(&mut b)?;
    }
    b.note_instant_marks("roctx");
    totals.dispatches.finish(&mut b);
    Ok(b.finish())
}

/// What the kernel dispatches of every process add up to.
#[derive(Default)]
struct Totals {
    dispatches: DispatchTally,
    /// Queue numbers by (process, agent, queue handle).
    queues: FxHashMap<(u64, u64, u64), u64>,
}

/// The GPU agents of a process (`type == 2`): device index by agent handle, each device's identity
/// added to the header once.
fn gpu_agents(b: &mut TraceBuilder, p: &Process) -> FxHashMap<u64, i64> {
    let mut device_of: FxHashMap<u64, i64> = FxHashMap::default();
    for a in p.agents.iter().filter(|a| a.kind == 2) {
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

/// One process object's records, with what reading them needs.
struct ProcessRecords<'a> {
    file: &'a Path,
    /// Its place in the file's process list.
    index: usize,
    p: &'a Process,
    pid: i64,
    /// Correlation ids are made unique per process object.
    scope: u64,
    device_of: FxHashMap<u64, i64>,
}

impl<'a> ProcessRecords<'a> {
    /// A bad record, `what[i]` of this process.
    fn bad(&self, what: &str, i: usize, message: String) -> Error {
        Error::Native {
            file: self.file.to_path_buf(),
            at: format!("process {}, {what}[{i}]", self.index),
            message,
        }
    }

    /// An operation's name: `strings.buffer_records[kind].operations[op]`.
    fn op_name(&self, kind: usize, op: usize) -> Option<&'a str> {
        self.p
            .strings
            .buffer_records
            .get(kind)?
            .operations
            .get(op)
            .map(String::as_str)
    }

    /// A record kind's name (`MARKER_CORE_API` …).
    fn kind_name(&self, kind: usize) -> &'a str {
        self.p
            .strings
            .buffer_records
            .get(kind)
            .map_or("", |k| &k.kind)
    }

    /// The kernel dispatches: GPU ops (runtime fill and copy kernels as fills and copies), each on its
    /// queue for the overruns.
    fn dispatches(&self, b: &mut TraceBuilder, totals: &mut Totals) -> Result<()> {
        let names: FxHashMap<u64, &Symbol> = self
            .p
            .kernel_symbols
            .iter()
            .map(|s| (s.kernel_id, s))
            .collect();
        let mut sym_of: FxHashMap<u64, (crate::model::Sym, GpuKind)> = FxHashMap::default();
        for (i, d) in self.p.buffer_records.kernel_dispatch.iter().enumerate() {
            let info = &d.dispatch_info;
            // Named (and classified) once per kernel symbol, not per dispatch.
            let (sym, kind) = *sym_of.entry(info.kernel_id).or_insert_with(|| {
                let text = match names.get(&info.kernel_id) {
                    Some(s) => kernel_name(symbol_name(s)).into_owned(),
                    None => format!("kernel_id {}", info.kernel_id),
                };
                (b.name(&text), blit_kind(&text).unwrap_or(GpuKind::Kernel))
            });
            let device = self.device_of.get(&info.agent_id.handle).copied();
            let stream = d
                .stream_id
                .as_ref()
                .map_or(info.queue_id.handle, |s| s.handle) as i64;
            let track = b.track(IdValue::Num(device.unwrap_or(-1)), IdValue::Num(stream));
            let mut op = GpuOp::at(
                sym,
                d.start_timestamp,
                d.end_timestamp - d.start_timestamp,
                track,
            );
            op.device = device;
            op.stream = Some(stream);
            op.correlation = b.correlation(self.scope, d.correlation_id.internal);
            op.external_id = std::num::NonZeroU64::new(d.correlation_id.external);
            op.grid = [info.grid_size.x, info.grid_size.y, info.grid_size.z];
            op.block = [
                info.workgroup_size.x,
                info.workgroup_size.y,
                info.workgroup_size.z,
            ];
            let n = totals.queues.len() as u64;
            let q = *totals
                .queues
                .entry((self.scope, info.agent_id.handle, info.queue_id.handle))
                .or_insert(n);
            totals
                .dispatches
                .add(kind, q, d.start_timestamp, d.end_timestamp);
            b.gpu_op(kind, op)
                .map_err(|m| self.bad("kernel_dispatch", i, m))?;
        }
        Ok(())
    }

    /// The memory copies, named by their direction, on the destination's device (else the source's).
    fn copies(&self, b: &mut TraceBuilder) -> Result<()> {
        for (i, c) in self.p.buffer_records.memory_copy.iter().enumerate() {
            let direction = self.op_name(c.kind, c.operation).unwrap_or("MEMORY_COPY");
            let text = copy_name(direction);
            let device = self
                .device_of
                .get(&c.dst_agent_id.handle)
                .or_else(|| self.device_of.get(&c.src_agent_id.handle))
                .copied();
            let stream = c.stream_id.as_ref().map_or(0, |s| s.handle) as i64;
            let sym = b.name(&text);
            let track = b.track(IdValue::Num(device.unwrap_or(-1)), IdValue::Num(stream));
            let mut op = GpuOp::at(
                sym,
                c.start_timestamp,
                c.end_timestamp - c.start_timestamp,
                track,
            );
            op.device = device;
            op.stream = Some(stream);
            op.correlation = b.correlation(self.scope, c.correlation_id.internal);
            op.external_id = std::num::NonZeroU64::new(c.correlation_id.external);
            op.bytes = c.bytes;
            b.gpu_op(GpuKind::Memcpy, op)
                .map_err(|m| self.bad("memory_copy", i, m))?;
        }
        Ok(())
    }

    /// The HIP (runtime) and HSA (driver) calls.
    fn api_calls(&self, b: &mut TraceBuilder) -> Result<()> {
        let records = &self.p.buffer_records;
        for (list, what, api) in [
            (&records.hip_api, "hip_api", Api::Runtime),
            (&records.hsa_api, "hsa_api", Api::Driver),
        ] {
            for (i, r) in list.iter().enumerate() {
                let text = self.op_name(r.kind, r.operation).unwrap_or("?").to_string();
                let sym = b.name(&text);
                let track = b.track(IdValue::Num(self.pid), IdValue::Num(r.thread_id));
                let correlation = b.correlation(self.scope, r.correlation_id.internal);
                let mut l = Launch::at(
                    sym,
                    api,
                    r.start_timestamp,
                    r.end_timestamp - r.start_timestamp,
                    track,
                    correlation,
                );
                l.external_id = std::num::NonZeroU64::new(r.correlation_id.external);
                b.launch(l).map_err(|m| self.bad(what, i, m))?;
            }
        }
        Ok(())
    }

    /// The RCCL calls, as CPU ops.
    fn rccl_calls(&self, b: &mut TraceBuilder) -> Result<()> {
        for (i, r) in self.p.buffer_records.rccl_api.iter().enumerate() {
            let text = self.op_name(r.kind, r.operation).unwrap_or("?").to_string();
            let sym = b.name(&text);
            let track = b.track(IdValue::Num(self.pid), IdValue::Num(r.thread_id));
            let s = Span::at(
                sym,
                r.start_timestamp,
                r.end_timestamp - r.start_timestamp,
                track,
            );
            b.span(SpanKind::CpuOp, s)
                .map_err(|m| self.bad("rccl_api", i, m))?;
        }
        Ok(())
    }

    /// The roctx markers: ranges (named by their message), instants (counted), ranges never closed (left
    /// out, with a warning).
    fn markers(&self, b: &mut TraceBuilder) -> Result<()> {
        let messages: FxHashMap<u64, &str> = self
            .p
            .strings
            .marker_api
            .iter()
            .map(|kv| (kv.key, kv.value.as_str()))
            .collect();
        let mut open_ranges = 0u64;
        for (i, r) in self.p.buffer_records.marker_api.iter().enumerate() {
            let text = messages
                .get(&r.correlation_id.internal)
                .copied()
                .or_else(|| self.op_name(r.kind, r.operation))
                .unwrap_or("?")
                .to_string();
            if r.end_timestamp == 0 && r.start_timestamp > 0 {
                open_ranges += 1;
                continue;
            }
            let res = if r.end_timestamp == r.start_timestamp {
                // No track for an instant: a thread with only instants has no row on it.
                b.instant_mark(
                    &format!("{} mark", self.kind_name(r.kind)),
                    r.start_timestamp,
                )
            } else {
                let track = b.track(IdValue::Num(self.pid), IdValue::Num(r.thread_id));
                b.marker_range(&text, r.start_timestamp, r.end_timestamp, track)
            };
            res.map_err(|m| self.bad("marker_api", i, m))?;
        }
        if open_ranges > 0 {
            b.warn(
                0,
                format!(
                    "process {}: {open_ranges} roctx ranges were never closed (no end time); left out",
                    self.index
                ),
            );
        }
        Ok(())
    }
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
        assert!(read(Path::new("r.json"), whole).is_ok());
        for list in ["kernel_dispatch", "memory_copy", "hip_api", "marker_api"] {
            for field in ["start_timestamp", "end_timestamp"] {
                let mut v = sample();
                let records = &mut v["rocprofiler-sdk-tool"][0]["buffer_records"][list];
                let first = records[0].as_object_mut();
                let removed = first.and_then(|r| r.remove(field));
                assert!(removed.is_some(), "{list}: {field}");
                let text = serde_json::to_vec_pretty(&v).unwrap_or_default();
                let e = match read(Path::new("r.json"), text) {
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
}
