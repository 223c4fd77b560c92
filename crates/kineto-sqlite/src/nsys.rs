//! Nsight Systems SQLite (`nsys export --type sqlite`), export schema 3.0 and later.
//!
//! Where each number lives (NVIDIA's export schema reference and `nsys stats` report SQL; checked on
//! an nsys 2024.6.2 export, schema 3.16.1, on files built from the 3.17 schema, and on public exports
//! of schemas 3.0.0 to 3.25.0 and one older export without metadata or enum tables):
//! * kernels — `CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid,
//!   demangledName → StringIds, gridX/Y/Z, blockX/Y/Z, registersPerThread, static/dynamicSharedMemory,
//!   graphNodeId, graphId)`;
//! * copies — `CUPTI_ACTIVITY_KIND_MEMCPY(…, bytes, copyKind → ENUM_CUDA_MEMCPY_OPER, srcKind,
//!   dstKind → ENUM_CUDA_MEM_KIND)`, named `Memcpy HtoD (Pageable -> Device)` as Kineto names them;
//!   fills — `CUPTI_ACTIVITY_KIND_MEMSET(…, bytes, memKind)`, named `Memset (Device)`;
//! * runtime and driver calls — `CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId,
//!   nameId, eventClass → ENUM_NSYS_EVENT_CLASS)`, the `_vNNNN` suffix dropped from names, a call listed
//!   under both names with one correlation id (2022 exports) read once (in `nsys_calls.rs`);
//! * ranges — `NVTX_EVENTS` push/pop and start/end ranges (event types by name from
//!   `ENUM_NSYS_EVENT_TYPE`), name `text` else `textId → StringIds`, on the thread of `globalTid`;
//! * GPUs — `TARGET_INFO_GPU(id, name, smCount, totalMemory)` (schema 3.0–3.1: `deviceId`, with the SM
//!   count and memory in `TARGET_INFO_CUDA_GPU`); versions — `META_DATA_EXPORT` (3.0–3.1:
//!   `EXPORT_META_DATA`); an export without `ENUM_*` tables gets the ids every later export writes;
//!   CUDA-graph mode — `META_DATA_CAPTURE` `PROCESS_n:CUDA_GRAPH_TRACE_OPTIONS:MODE`; whole-graph
//!   replays — `CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, streamId, correlationId,
//!   graphId, globalPid)`.
//!
//! `globalTid` packs the process in bits 24–47 and the thread in bits 0–23 (NVIDIA's report SQL:
//! `(globalTid >> 24) & 0xFFFFFF`, `globalTid & 0xFFFFFF`); correlation ids are per process, so a
//! kernel links to the call with its `correlationId` in its `globalPid` (= `globalTid &
//! 0xFFFFFFFFFF000000`), as NVIDIA's own join does. Times are integer ns from the session start;
//! `TARGET_INFO_SESSION_START_TIME.utcEpochNs` is the header's `base_time_ns`.

use crate::db::{Db, get_int, get_str, get_text, get_time};
use kineto_trace::native::{TraceBuilder, kernel_name};
use kineto_trace::{
    DeviceProps, GRAPH_REPLAY_PREFIX, GpuKind, IdValue, NewGpuOp, Result, Span, SpanKind, Trace,
    TraceFormat,
};
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// A kernel row's (demangledName, mangledName, shortName) string ids.
type NameIds = (Option<i64>, Option<i64>, Option<i64>);

/// An `ENUM_*` table read as id → (name, label).
pub(crate) type EnumTable = FxHashMap<i64, (String, String)>;

pub(crate) const PID_MASK: i64 = 0xFFFF_FFFF_FF00_0000_u64 as i64;

pub(crate) fn pid_of(global: i64) -> i64 {
    (global >> 24) & 0xFF_FFFF
}

pub(crate) fn tid_of(global: i64) -> i64 {
    global & 0xFF_FFFF
}

/// `CUDA_MEMCPY_KIND_HTOD` → `HtoD`, `CUDA_MEMCPY_KIND_UVM_DTOH` → `UVM_DtoH`.
fn copy_short(enum_name: &str) -> String {
    let s = enum_name
        .strip_prefix("CUDA_MEMCPY_KIND_")
        .unwrap_or(enum_name);
    let (lead, core) = match s.rfind('_') {
        Some(i) => (&s[..=i], &s[i + 1..]),
        None => ("", s),
    };
    match core.split_once("TO") {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => format!("{lead}{a}to{b}"),
        _ => s.to_string(),
    }
}

/// `ENUM_CUDA_MEMCPY_OPER` as every export that has it writes it (schemas 3.0–3.25 agree), for the
/// exports without their enum tables: (id, name, label).
const MEMCPY_OPER: [(i64, &str, &str); 14] = [
    (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
    (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
    (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
    (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
    (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"),
    (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
    (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"),
    (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
    (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
    (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
    (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
    (11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"),
    (12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"),
    (13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"),
];

/// `ENUM_CUDA_MEM_KIND` likewise (nsys's numbering, not CUPTI's: 0 is pageable).
const MEM_KIND: [(i64, &str, &str); 8] = [
    (0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
    (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
    (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"),
    (3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"),
    (4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"),
    (5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"),
    (
        6,
        "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC",
        "Managed Static",
    ),
    (7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"),
];

/// `ENUM_NSYS_EVENT_TYPE`'s NVTX rows that the reader uses, the ranges and the marks, as nsys 2024.6
/// numbers them (34, 59 and 60 are the same in the 3.16.1 and 3.17.1 exports of testdata/native).
const NVTX_EVENT_TYPE: [(i64, &str, &str); 6] = [
    (34, "NvtxMark", "NvtxMark"),
    (59, "NvtxPushPopRange", "NvtxPushPopRange"),
    (60, "NvtxStartEndRange", "NvtxStartEndRange"),
    (65, "NvtxtMark", "NvtxtMark"),
    (70, "NvtxtPushPopRange", "NvtxtPushPopRange"),
    (71, "NvtxtStartEndRange", "NvtxtStartEndRange"),
];

/// [`enum_table`], or `known` when the export has no such table (some exports write none), with a note
/// naming the missing table when a table of `used_by` is there to read its ids: the ids are read as every
/// export that has the table numbers them. The note says what is missing, never a guess at the export's
/// age (a current export without CUDA tracing has no CUDA enum tables either, and needs none).
fn enum_or_known(
    d: &Db,
    b: &mut TraceBuilder,
    table: &str,
    used_by: &[&str],
    known: &[(i64, &str, &str)],
) -> Result<EnumTable> {
    if d.has(table) {
        return enum_table(d, table);
    }
    let users: Vec<&str> = used_by.iter().copied().filter(|t| d.has(t)).collect();
    if !users.is_empty() {
        b.note(format!(
            "no `{table}` table in this export: the ids of `{}` are read as the exports that have it number them",
            users.join("`, `")
        ));
    }
    Ok(known
        .iter()
        .map(|&(id, n, l)| (id, (n.to_string(), l.to_string())))
        .collect())
}

/// An `ENUM_*(id, name, label)` table as id → (name, label); empty when absent.
pub(crate) fn enum_table(d: &Db, table: &str) -> Result<EnumTable> {
    let mut out = FxHashMap::default();
    if !d.has(table) {
        return Ok(out);
    }
    d.each(table, &["id", "?name", "?label"], "", |i, r| {
        let id = get_int(r, 0).map_err(|m| d.row_err(table, i, m))?;
        let name = get_text(r, 1).map_err(|m| d.row_err(table, i, m))?;
        let label = get_text(r, 2).map_err(|m| d.row_err(table, i, m))?;
        if let Some(id) = id {
            let name = name.unwrap_or_default();
            let label = label.unwrap_or_else(|| name.clone());
            out.insert(id, (name, label));
        }
        Ok(())
    })?;
    Ok(out)
}

/// Reads an Nsight Systems export.
pub(crate) fn read(d: &Db) -> Result<Trace> {
    let mut b = TraceBuilder::new(TraceFormat::NsysSqlite);
    let strings = d.map("StringIds", "id", "value")?;
    read_versions(d, &mut b)?;
    read_capture_options(d, &mut b)?;
    read_gpus(d, &mut b)?;
    let launched = read_kernels(d, &mut b, &strings)?;
    let copy_kinds = enum_or_known(d, &mut b, "ENUM_CUDA_MEMCPY_OPER", &[MEMCPY], &MEMCPY_OPER)?;
    let mem_kinds = enum_or_known(
        d,
        &mut b,
        "ENUM_CUDA_MEM_KIND",
        &[MEMCPY, MEMSET],
        &MEM_KIND,
    )?;
    note_missing_cuda(d, &mut b);
    read_copies(d, &mut b, &copy_kinds, &mem_kinds)?;
    read_fills(d, &mut b, &mem_kinds)?;
    read_graph_replays(d, &mut b)?;
    crate::nsys_calls::read_calls(d, &mut b, &strings, &launched)?;
    read_nvtx_ranges(d, &mut b, &strings)?;
    read_diagnostics(d, &mut b)?;
    Ok(b.finish())
}

/// The CUPTI activity tables GPU work is read from: kernels, copies, fills.
const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";

/// A note when the export has none of the CUDA activity tables: nsys writes a table only when the capture
/// recorded rows for it, so the file holds no GPU work at all (CUDA tracing was off, or nothing ran on a
/// GPU), which an empty answer must not hide.
fn note_missing_cuda(d: &Db, b: &mut TraceBuilder) {
    if [KERNEL, MEMCPY, MEMSET].iter().all(|t| !d.has(t)) {
        b.note(format!(
            "no CUDA activity table in this export (`{KERNEL}`, `{MEMCPY}`, `{MEMSET}`): it holds no GPU \
             work (the capture traced no CUDA, or nothing ran on a GPU)"
        ));
    }
}

/// The `StringIds` value of a string id.
pub(crate) fn string_of(strings: &FxHashMap<i64, String>, id: Option<i64>) -> Option<&str> {
    id.and_then(|i| strings.get(&i)).map(String::as_str)
}

/// Rows naming string ids that `StringIds` does not hold (a cut or edited export): counted, and the ids
/// named, in one warning per table.
#[derive(Default)]
pub(crate) struct Dangling {
    rows: u64,
    ids: std::collections::BTreeSet<i64>,
}

impl Dangling {
    /// Counts a row whose string ids `ids` name nothing `strings` holds.
    pub(crate) fn add(&mut self, strings: &FxHashMap<i64, String>, ids: &[Option<i64>]) {
        let lost: Vec<i64> = ids
            .iter()
            .flatten()
            .copied()
            .filter(|i| !strings.contains_key(i))
            .collect();
        if !lost.is_empty() {
            self.rows += 1;
            self.ids.extend(lost);
        }
    }

    /// The warning: `table`, how many rows, which ids (the first 10), and `then` (what the rows became).
    pub(crate) fn warn(&self, b: &mut TraceBuilder, table: &str, then: &str) {
        if self.rows == 0 {
            return;
        }
        let mut ids: Vec<String> = self.ids.iter().take(10).map(i64::to_string).collect();
        if self.ids.len() > 10 {
            ids.push(format!("… {} in all", self.ids.len()));
        }
        b.warn(
            0,
            format!(
                "{table}: {} rows name string ids that `StringIds` does not hold ({}): {then}",
                self.rows,
                ids.join(", ")
            ),
        );
    }
}

/// The header's schema version and producer, from the export's metadata table.
fn read_versions(d: &Db, b: &mut TraceBuilder) -> Result<()> {
    let mut export: FxHashMap<String, String> = FxHashMap::default();
    // Exports of schema 3.0–3.1 name the table EXPORT_META_DATA (3.4 and later: META_DATA_EXPORT).
    for t in ["META_DATA_EXPORT", "EXPORT_META_DATA"] {
        if !d.has(t) {
            continue;
        }
        d.each(t, &["name", "value"], "", |i, r| {
            let k = get_text(r, 0).map_err(|m| d.row_err(t, i, m))?;
            let v = get_text(r, 1).map_err(|m| d.row_err(t, i, m))?;
            if let (Some(k), Some(v)) = (k, v) {
                export.entry(k).or_insert(v);
            }
            Ok(())
        })?;
    }
    b.header().format_version = export.get("EXPORT_SCHEMA_VERSION").cloned();
    b.header().producer = match (
        export.get("EXPORT_PRODUCT_NAME"),
        export.get("EXPORT_PRODUCT_VERSION"),
    ) {
        (Some(n), Some(v)) => Some(format!("{n} {v}")),
        (Some(n), None) => Some(n.clone()),
        (None, Some(v)) => Some(format!("Nsight Systems {v}")),
        (None, None) => None,
    };
    Ok(())
}

/// The CUDA-graph trace modes the capture used and the session's start time (the header's base time).
fn read_capture_options(d: &Db, b: &mut TraceBuilder) -> Result<()> {
    let mut modes: Vec<String> = Vec::new();
    if d.has("META_DATA_CAPTURE") {
        d.each("META_DATA_CAPTURE", &["name", "value"], "", |i, r| {
            let k = get_text(r, 0).map_err(|m| d.row_err("META_DATA_CAPTURE", i, m))?;
            let v = get_text(r, 1).map_err(|m| d.row_err("META_DATA_CAPTURE", i, m))?;
            if let (Some(k), Some(v)) = (k, v)
                && k.ends_with("CUDA_GRAPH_TRACE_OPTIONS:MODE")
                && !modes.contains(&v)
            {
                modes.push(v);
            }
            Ok(())
        })?;
    }
    if !modes.is_empty() {
        b.capture().graph_trace_mode = Some(modes.join(","));
    }
    if d.has("TARGET_INFO_SESSION_START_TIME") {
        d.each(
            "TARGET_INFO_SESSION_START_TIME",
            &["?utcEpochNs"],
            "LIMIT 1",
            |_, r| {
                b.header().base_time_ns = get_int(r, 0).ok().flatten();
                Ok(())
            },
        )?;
    }
    Ok(())
}

/// The header's GPUs, from `TARGET_INFO_GPU` (with `TARGET_INFO_CUDA_GPU` in early exports).
fn read_gpus(d: &Db, b: &mut TraceBuilder) -> Result<()> {
    let t = "TARGET_INFO_GPU";
    if !d.has(t) {
        return Ok(());
    }
    // Early exports (schema 3.0–3.1) key the GPU by `deviceId` and keep its SM count and memory in
    // TARGET_INFO_CUDA_GPU.
    let have = d.columns(t)?;
    let id = if have.contains("id") {
        "id"
    } else {
        "deviceId"
    };
    let cuda = if have.contains("smCount") {
        FxHashMap::default()
    } else {
        early_gpu_sizes(d)?
    };
    let order = format!("ORDER BY {}", crate::db::quote(id));
    d.each(
        t,
        &[id, "?name", "?smCount", "?totalMemory"],
        &order,
        |i, r| {
            let e = |m: String| d.row_err(t, i, m);
            let id = get_int(r, 0).map_err(e)?;
            if b.trace().header.devices.iter().any(|x| x.id == id) {
                return Ok(());
            }
            let (sms, mem) = id.and_then(|i| cuda.get(&i)).copied().unwrap_or_default();
            let props = DeviceProps {
                id,
                name: get_text(r, 1).map_err(e)?,
                num_sms: get_int(r, 2).map_err(e)?.or(sms).map(|v| v.max(0) as u64),
                total_global_mem: get_int(r, 3).map_err(e)?.or(mem).map(|v| v.max(0) as u64),
            };
            b.header().devices.push(props);
            Ok(())
        },
    )
}

/// Device id → (SM count, memory) from `TARGET_INFO_CUDA_GPU`, where early exports keep them; empty when
/// the table is absent.
fn early_gpu_sizes(d: &Db) -> Result<GpuSizes> {
    let mut cuda = GpuSizes::default();
    let c = "TARGET_INFO_CUDA_GPU";
    if d.has(c) {
        d.each(
            c,
            &["deviceId", "?numMultiprocessors", "?globalMemorySize"],
            "",
            |i, r| {
                let e = |m: String| d.row_err(c, i, m);
                if let Some(dev) = get_int(r, 0).map_err(e)? {
                    cuda.insert(dev, (get_int(r, 1).map_err(e)?, get_int(r, 2).map_err(e)?));
                }
                Ok(())
            },
        )?;
    }
    Ok(cuda)
}

/// Device id → (SM count, memory).
type GpuSizes = FxHashMap<i64, (Option<i64>, Option<i64>)>;

/// The columns of a GPU activity table: those every such table starts with ([`device_op`] reads them),
/// then `extra`.
fn gpu_cols(extra: &[&'static str]) -> Vec<&'static str> {
    let mut v = vec![
        "start",
        "end",
        "?deviceId",
        "?streamId",
        "?correlationId",
        "?globalPid",
    ];
    v.extend_from_slice(extra);
    v
}

/// Kernels, from `CUPTI_ACTIVITY_KIND_KERNEL`.
fn read_kernels(
    d: &Db,
    b: &mut TraceBuilder,
    strings: &FxHashMap<i64, String>,
) -> Result<crate::nsys_calls::Launched> {
    let table = KERNEL;
    let mut launched = crate::nsys_calls::Launched::default();
    if !d.has(table) {
        return Ok(launched);
    }
    let mut dangling = Dangling::default();
    let string = |id: Option<i64>| string_of(strings, id);
    let mut kernel_syms: FxHashMap<NameIds, kineto_trace::Sym> = FxHashMap::default();
    let cols = gpu_cols(&[
        "?demangledName",
        "?shortName",
        "?mangledName",
        "?gridX",
        "?gridY",
        "?gridZ",
        "?blockX",
        "?blockY",
        "?blockZ",
        "?registersPerThread",
        "?staticSharedMemory",
        "?dynamicSharedMemory",
        "?graphNodeId",
        "?graphId",
    ]);
    d.each(table, &cols, "", |i, r| {
        let e = |m: String| d.row_err(table, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        let (start, end) = (time(0)?, time(1)?);
        let (dev, stream) = (int(2)?, int(3)?);
        // Demangled, else the mangled symbol (demangled here), else the base name; named once
        // per distinct set of string ids, not per row.
        let ids = (int(6)?, int(8)?, int(7)?);
        dangling.add(strings, &[ids.0, ids.1, ids.2]);
        let sym = match kernel_syms.get(&ids) {
            Some(&s) => s,
            None => {
                let name = [string(ids.0), string(ids.1), string(ids.2)]
                    .into_iter()
                    .flatten()
                    .find(|s| !s.is_empty())
                    .map_or_else(
                        || "(unnamed kernel)".to_string(),
                        |s| kernel_name(s).into_owned(),
                    );
                let s = b.name(&name);
                kernel_syms.insert(ids, s);
                s
            }
        };
        let (correlation, global_pid) = (int(4)?, int(5)?);
        let mut op = device_op(b, sym, (start, end), (dev, stream), correlation, global_pid);
        let u = |v: Option<i64>| v.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32;
        op.detail.grid = [u(int(9)?), u(int(10)?), u(int(11)?)];
        op.detail.block = [u(int(12)?), u(int(13)?), u(int(14)?)];
        op.detail.registers = int(15)?.map(|v| u(Some(v)));
        op.detail.shared_memory = match (int(16)?, int(17)?) {
            (None, None) => None,
            (a, c) => Some(u(Some(a.unwrap_or(0).saturating_add(c.unwrap_or(0))))),
        };
        op.detail.graph_node_id = int(18)?.map(|v| v as u64);
        op.detail.graph_id = int(19)?.map(|v| v as u64);
        let in_graph = op.detail.graph_id.is_some_and(|g| g != 0);
        if let (Some(c), Some(p)) = (correlation, global_pid) {
            *launched.entry((p & PID_MASK, c)).or_default() |= in_graph;
        }
        b.gpu_op_of(GpuKind::Kernel, op, global_pid.map(pid_of))
            .map_err(e)
    })?;
    dangling.warn(
        b,
        table,
        "a kernel with none of its names (demangled, mangled, short) is named `(unnamed kernel)`",
    );
    Ok(launched)
}

/// Copies, from `CUPTI_ACTIVITY_KIND_MEMCPY`, named as Kineto names them.
fn read_copies(
    d: &Db,
    b: &mut TraceBuilder,
    copy_kinds: &EnumTable,
    mem_kinds: &EnumTable,
) -> Result<()> {
    let table = MEMCPY;
    if !d.has(table) {
        return Ok(());
    }
    let cols = gpu_cols(&["?bytes", "?copyKind", "?srcKind", "?dstKind"]);
    // Named once per (copy kind, source kind, destination kind), not per row.
    let mut copy_syms: FxHashMap<[Option<i64>; 3], kineto_trace::Sym> = FxHashMap::default();
    d.each(table, &cols, "", |i, r| {
        let e = |m: String| d.row_err(table, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        let (start, end) = (time(0)?, time(1)?);
        let (dev, stream) = (int(2)?, int(3)?);
        let kinds = [int(7)?, int(8)?, int(9)?];
        let sym = *copy_syms
            .entry(kinds)
            .or_insert_with(|| b.name(&copy_name(copy_kinds, mem_kinds, kinds)));
        let (correlation, global_pid) = (int(4)?, int(5)?);
        let mut op = device_op(b, sym, (start, end), (dev, stream), correlation, global_pid);
        op.detail.bytes = int(6)?.map(|v| v.max(0) as u64);
        b.gpu_op_of(GpuKind::Memcpy, op, global_pid.map(pid_of))
            .map_err(e)
    })
}

/// A copy's name as Kineto writes it, `Memcpy HtoD (Pageable -> Device)`, from its (copyKind, srcKind,
/// dstKind).
fn copy_name(copy_kinds: &EnumTable, mem_kinds: &EnumTable, kinds: [Option<i64>; 3]) -> String {
    let [kind, src, dst] = kinds;
    let short = match kind.and_then(|k| copy_kinds.get(&k)) {
        Some((n, _)) => copy_short(n),
        None => format!("other (copyKind {})", kind.unwrap_or(-1)),
    };
    let label = |k: Option<i64>| k.and_then(|k| mem_kinds.get(&k)).map(|(_, l)| l.as_str());
    match (label(src), label(dst)) {
        (Some(s), Some(t)) => format!("Memcpy {short} ({s} -> {t})"),
        _ => format!("Memcpy {short}"),
    }
}

/// Fills, from `CUPTI_ACTIVITY_KIND_MEMSET`.
fn read_fills(d: &Db, b: &mut TraceBuilder, mem_kinds: &EnumTable) -> Result<()> {
    let table = MEMSET;
    if !d.has(table) {
        return Ok(());
    }
    let cols = gpu_cols(&["?bytes", "?memKind"]);
    // Named once per memory kind, not per row.
    let mut fill_syms: FxHashMap<Option<i64>, kineto_trace::Sym> = FxHashMap::default();
    d.each(table, &cols, "", |i, r| {
        let e = |m: String| d.row_err(table, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        let (start, end) = (time(0)?, time(1)?);
        let (dev, stream) = (int(2)?, int(3)?);
        let mem_kind = int(7)?;
        let sym = *fill_syms.entry(mem_kind).or_insert_with(|| {
            b.name(&match mem_kind.and_then(|k| mem_kinds.get(&k)) {
                Some((_, l)) => format!("Memset ({l})"),
                None => "Memset".to_string(),
            })
        });
        let (correlation, global_pid) = (int(4)?, int(5)?);
        let mut op = device_op(b, sym, (start, end), (dev, stream), correlation, global_pid);
        op.detail.bytes = int(6)?.map(|v| v.max(0) as u64);
        b.gpu_op_of(GpuKind::Memset, op, global_pid.map(pid_of))
            .map_err(e)
    })
}

/// Whole-graph replays (graph-trace mode `Graph`), from `CUPTI_ACTIVITY_KIND_GRAPH_TRACE`: one row per
/// replay, no kernel rows inside; counted in the capture, with a note saying what is missing.
fn read_graph_replays(d: &Db, b: &mut TraceBuilder) -> Result<()> {
    let table = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
    let (mut replays, mut replay_ns) = (0u64, 0i64);
    if d.has(table) {
        let cols = gpu_cols(&["?graphId", "?graphExecId"]);
        d.each(table, &cols, "", |i, r| {
            let e = |m: String| d.row_err(table, i, m);
            let int = |c: usize| get_int(r, c).map_err(e);
            let time = |c: usize| get_time(r, c).map_err(e);
            let (start, end) = (time(0)?, time(1)?);
            let (dev, stream) = (int(2)?, int(3)?);
            let graph = int(6)?;
            let name = match graph {
                Some(g) => format!("{GRAPH_REPLAY_PREFIX} (graph {g})"),
                None => GRAPH_REPLAY_PREFIX.to_string(),
            };
            let sym = b.name(&name);
            let (correlation, global_pid) = (int(4)?, int(5)?);
            let mut op = device_op(b, sym, (start, end), (dev, stream), correlation, global_pid);
            op.detail.graph_id = graph.map(|g| g as u64);
            b.gpu_op_of(GpuKind::Kernel, op, global_pid.map(pid_of))
                .map_err(e)?;
            replays += 1;
            replay_ns = replay_ns.saturating_add(end - start);
            Ok(())
        })?;
    }
    b.capture().graph_replays = replays;
    b.capture().graph_replays_ns = replay_ns;
    if replays > 0 {
        b.note(format!(
            "captured in CUDA-graph `Graph` mode: {replays} graph replays are single rows (named `{GRAPH_REPLAY_PREFIX} (graph N)`) and the kernels inside them were not recorded, so per-kernel tables and budgets are incomplete; capture with `nsys profile --cuda-graph-trace=node` for every kernel"
        ));
    }
    Ok(())
}

/// NVTX ranges (the markers of this format) and marks, from `NVTX_EVENTS`.
fn read_nvtx_ranges(d: &Db, b: &mut TraceBuilder, strings: &FxHashMap<i64, String>) -> Result<()> {
    let table = "NVTX_EVENTS";
    if !d.has(table) {
        return Ok(());
    }
    let types = enum_or_known(d, b, "ENUM_NSYS_EVENT_TYPE", &[table], &NVTX_EVENT_TYPE)?;
    let range_ids: Vec<i64> = types
        .iter()
        .filter(|(_, (n, _))| {
            matches!(
                n.as_str(),
                "NvtxPushPopRange"
                    | "NvtxStartEndRange"
                    | "NvtxtPushPopRange"
                    | "NvtxtStartEndRange"
            )
        })
        .map(|(&id, _)| id)
        .collect();
    let mut open = 0u64;
    let mut tracks = crate::Tracks::default();
    let cols = [
        "start",
        "?end",
        "?eventType",
        "?text",
        "?textId",
        "?globalTid",
    ];
    d.each(table, &cols, "", |i, r| {
        let e = |m: String| d.row_err(table, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        let Some(kind) = int(2)? else { return Ok(()) };
        if !range_ids.contains(&kind) {
            if types.get(&kind).is_some_and(|(n, _)| n.ends_with("Mark")) {
                b.instant_mark("nvtx mark", time(0)?).map_err(e)?;
            }
            return Ok(());
        }
        let start = time(0)?;
        let Some(end) = int(1)? else {
            open += 1;
            return Ok(());
        };
        let text = get_str(r, 3).map_err(e)?;
        let name = match text {
            Some(t) => t,
            None => Cow::Borrowed(string_of(strings, int(4)?).unwrap_or("")),
        };
        let gt = int(5)?.unwrap_or(0);
        let sym = b.name(&name);
        let track = tracks.of(b, pid_of(gt), tid_of(gt));
        b.span(
            SpanKind::UserAnnotation,
            Span::at(sym, start, end - start, track),
        )
        .map_err(e)
    })?;
    if open > 0 {
        b.warn(
            0,
            format!("{table}: {open} NVTX ranges never ended (no end time); left out"),
        );
    }
    b.note_instant_marks("NVTX");
    Ok(())
}

/// The profiler's own warnings (buffer drops, lost events), from `DIAGNOSTIC_EVENT`.
fn read_diagnostics(d: &Db, b: &mut TraceBuilder) -> Result<()> {
    let table = "DIAGNOSTIC_EVENT";
    if !d.has(table) {
        return Ok(());
    }
    let levels = enum_table(d, "ENUM_DIAGNOSTIC_SEVERITY_LEVEL")?;
    d.each(table, &["?severity", "?text"], "", |i, r| {
        let e = |m: String| d.row_err(table, i, m);
        let sev = get_int(r, 0).map_err(e)?;
        let text = get_text(r, 1).map_err(e)?.unwrap_or_default();
        let level = sev
            .and_then(|s| levels.get(&s))
            .map(|(n, _)| n.to_ascii_uppercase());
        if level
            .as_deref()
            .is_some_and(|l| l.contains("WARN") || l.contains("ERROR"))
        {
            b.warn(0, format!("nsys diagnostic: {text}"));
        }
        Ok(())
    })
}

/// The op of a row of a `gpu_cols` table, from the columns they all start with: start, end, device,
/// stream, correlation id and global pid (the correlation's scope), on its device and stream's track.
fn device_op(
    b: &mut TraceBuilder,
    sym: kineto_trace::Sym,
    (start, end): (i64, i64),
    (dev, stream): (Option<i64>, Option<i64>),
    correlation: Option<i64>,
    global_pid: Option<i64>,
) -> NewGpuOp {
    let track = b.track(
        IdValue::Num(dev.unwrap_or(-1)),
        IdValue::Num(stream.unwrap_or(-1)),
    );
    let mut op = NewGpuOp::at(sym, start, end - start, track);
    op.detail.device = dev;
    op.detail.stream = stream;
    let scope = global_pid.unwrap_or(0) & PID_MASK;
    op.correlation = b.correlation(scope as u64, correlation.unwrap_or(0).max(0) as u64);
    op
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_as_nvidia_packs_them() {
        use crate::nsys_calls::api_name;
        assert_eq!(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_name("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(
            api_name("cudaGetDeviceProperties_v2_v12000"),
            "cudaGetDeviceProperties_v2"
        );
        assert_eq!(copy_short("CUDA_MEMCPY_KIND_HTOD"), "HtoD");
        assert_eq!(copy_short("CUDA_MEMCPY_KIND_PTOP"), "PtoP");
        assert_eq!(copy_short("CUDA_MEMCPY_KIND_UVM_DTOH"), "UVM_DtoH");
        // The sample export's thread: globalTid 281980910466508 is pid 30156, tid 30156.
        assert_eq!(pid_of(281_980_910_466_508), 30156);
        assert_eq!(tid_of(281_980_910_466_508), 30156);
        assert_eq!(281_980_910_466_508 & PID_MASK, 281_980_910_436_352);
    }
}
