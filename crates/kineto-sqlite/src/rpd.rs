//! RPD SQLite (ROCm/rocmProfileData's tracer, `runTracer.sh`), schema 2 and 3
//! (`rocpd_metadata.schema_version`; v3 adds `rocpd_api.category_id`/`domain_id`, keeps argument
//! text in `rocpd_ustring`, and drops columns of `rocpd_op` and `rocpd_kernelapi`).
//!
//! * GPU ops — `rocpd_op(id, gpuId, queueId, start, end, description_id, opType_id → rocpd_string)`,
//!   ns. The op type says what it is: `KernelExecution` and **`Task`** (the kernels of a HIP-graph
//!   launch, which RPD's own `kernel` view leaves out because they have no `rocpd_kernelapi` row) are
//!   kernels; `Copy…` copies; `FillBuffer` fills. A kernel is named by its description (demangled
//!   here when the tracer left it mangled), an op without one by its type.
//! * launches — `rocpd_api(id, pid, tid, start, end, apiName_id, args_id)` linked to ops by
//!   `rocpd_api_ops(api_id, op_id)`: the call's id is the correlation id of every op it enqueued
//!   (one `hipGraphLaunch` → hundreds of `Task` ops). Grid and workgroup come from
//!   `rocpd_kernelapi`, copy sizes from `rocpd_copyapi.size`, through the same link.
//! * ranges — `rocpd_api` rows named `UserMarker` (roctx push/pop), their text in `args`;
//!   zero-length ones are marks.
//! * streams — an op's `queueId` (the hardware queue it ran on; ops carry no stream id).
//!   No GPU table: devices are `gpuId` only.
//!
//! Ids are large offsets (about 2³² × session), not 1..N; row order by id is not start order.
//!
//! Each table is read once. The ops are read before the calls (the names, tracks and correlation ids
//! are numbered in the order the builder first sees them, ops first); an op's process is its call's
//! `pid`, so the ops get theirs once `rocpd_api` has been read (`CallProcesses`), by the correlation
//! id an op shares with its call — not from a first pass over `rocpd_api` for its `pid`s.

use crate::db::{Db, get_int, get_quantity, get_time};
use kineto_trace::native::names::{blit_kind, copy_name};
use kineto_trace::native::{KernelNames, QueueRows, TraceBuilder};
use kineto_trace::{Api, GpuKind, Launch, NewGpuOp, Result, Trace, TraceFormat};
use rustc_hash::FxHashMap;
use std::num::NonZeroU64;

/// What an RPD op type is.
fn op_kind(op_type: &str) -> Option<GpuKind> {
    match op_type {
        "KernelExecution" | "Task" => Some(GpuKind::Kernel),
        "FillBuffer" => Some(GpuKind::Memset),
        t if t.starts_with("Copy") => Some(GpuKind::Memcpy),
        _ => None,
    }
}

/// The tables every RPD file has (rpd_tracer creates them all at start, `rocpd_op` with them): without
/// `rocpd_string` no op has a type or a name, without `rocpd_api` no op its launch.
const RPD_TABLES: [&str; 2] = ["rocpd_string", "rocpd_api"];

/// Reads an RPD database.
pub(crate) fn read(d: &Db) -> Result<Trace> {
    for t in RPD_TABLES {
        if !d.has(t) {
            return Err(kineto_trace::Error::Native {
                file: d.file.clone(),
                at: format!("table {t}"),
                message: format!(
                    "an RPD file (it has `rocpd_op`) without its `{t}` table: every RPD file has `rocpd_op`, {}; \
                     the file is cut or not written by rpd_tracer",
                    RPD_TABLES.map(|t| format!("`{t}`")).join(", ")
                ),
            });
        }
    }
    let mut b = TraceBuilder::new(TraceFormat::RpdSqlite);
    b.header().producer = Some("rocmProfileData (rpd_tracer)".into());
    b.header().format_version = d.rocpd_schema_version()?;
    let strings = d.map("rocpd_string", "id", "string")?;
    // Schema 3 keeps argument text apart; schema 2 in rocpd_string.
    let ustrings = d.map("rocpd_ustring", "id", "string")?;
    let links = OpLinks {
        api_of: api_of_ops(d)?,
        geometry: kernel_geometry(d)?,
        copy_size: copy_sizes(d, &mut b)?,
    };
    let odd_links = read_ops(d, &mut b, &strings, &links)?;
    // Freed before the calls are read: the model's rows grow while the links are no longer needed.
    drop(links);
    let processes = read_calls(d, &mut b, &strings, &ustrings)?;
    b.set_op_processes(|kind, place, op| {
        processes.of_op(op.correlation, odd_links.get(&(kind, place)).copied())
    })
    .map_err(|message| kineto_trace::Error::Native {
        file: d.file.clone(),
        at: "table rocpd_api".into(),
        message,
    })?;
    Ok(b.finish())
}

/// A kernel launch's (grid, workgroup).
type Geometry = ([u32; 3], [u32; 3]);

/// What an op learns from the API call that enqueued it.
struct OpLinks {
    /// Op id → its API call's id (the first, should a tracer link more than one).
    api_of: IdMap,
    /// API call id → a kernel launch's (grid, workgroup).
    geometry: FxHashMap<i64, Geometry>,
    /// API call id → a copy's size in bytes.
    copy_size: FxHashMap<i64, u64>,
}

/// Id → id, as a sorted list: 16 bytes an entry where a hash map of millions of ops took twice that
/// and more while it grew (the table is in id order already, so the sort is a check).
struct IdMap(Vec<(i64, i64)>);

impl IdMap {
    /// The map of `pairs`, the first pair of a key kept (stable sort).
    fn first_wins(mut pairs: Vec<(i64, i64)>) -> IdMap {
        if !pairs.is_sorted_by_key(|&(k, _)| k) {
            pairs.sort_by_key(|&(k, _)| k);
        }
        pairs.dedup_by_key(|&mut (k, _)| k);
        IdMap(pairs)
    }

    /// The value of `key`, looked for first at `*next` (the place after the key found last: ops are
    /// read in id order, as the map is kept, so that is the place of the next one), else by a binary
    /// search; `*next` then follows the key found.
    fn get_from(&self, key: i64, next: &mut usize) -> Option<i64> {
        let at = match self.0.get(*next) {
            Some(&(k, _)) if k == key => *next,
            _ => self.0.binary_search_by_key(&key, |&(k, _)| k).ok()?,
        };
        *next = at + 1;
        Some(self.0[at].1)
    }
}

/// Which process made each API call, gathered as `rocpd_api` is read, for the ops its calls enqueued
/// (an op ran for its call's process): by the correlation id the builder gave the call's id, which
/// the op linked to it has too. Of several rows of one id, the last with a `pid` counts.
#[derive(Default)]
struct CallProcesses {
    /// Correlation id − 1 → 1 + the place of its call's pid in `pids` (0: none known): 4 bytes a call,
    /// where a map of call id → pid took 16.
    of_correlation: Vec<u32>,
    /// The pids, each once (a file has a few), and their places.
    pids: Vec<i64>,
    places: FxHashMap<i64, u32>,
    /// Call id → pid for the ids that are no correlation id (0 or negative: rpd_tracer writes none,
    /// but a link may name one, and its op then has no correlation to go by).
    of_odd_id: FxHashMap<i64, i64>,
}

impl CallProcesses {
    /// A row of call `id` made by `pid`; `correlation` is the id's (none: no op or call was given one).
    fn add(&mut self, id: i64, correlation: Option<NonZeroU64>, pid: i64) {
        if let Some(c) = correlation {
            let place = match self.places.get(&pid) {
                Some(&p) => p,
                None => {
                    self.pids.push(pid);
                    let p = self.pids.len() as u32;
                    self.places.insert(pid, p);
                    p
                }
            };
            let slot = (c.get() - 1) as usize;
            if self.of_correlation.len() <= slot {
                self.of_correlation.resize(slot + 1, 0);
            }
            self.of_correlation[slot] = place;
        } else if id <= 0 {
            self.of_odd_id.insert(id, pid);
        }
    }

    /// The process of an op of `correlation`, or (none) linked to the call `odd_call` whose id is no
    /// correlation id.
    fn of_op(&self, correlation: Option<NonZeroU64>, odd_call: Option<i64>) -> Option<i64> {
        match correlation {
            Some(c) => {
                let place = *self.of_correlation.get((c.get() - 1) as usize)?;
                place.checked_sub(1).map(|p| self.pids[p as usize])
            }
            None => self.of_odd_id.get(&odd_call?).copied(),
        }
    }
}

/// The ops linked to a call whose id is no correlation id (0 or negative), by (kind, place in the
/// order added): that call's id, for [`CallProcesses::of_op`].
type OddLinks = FxHashMap<(GpuKind, usize), i64>;

/// Op → its API call (the first, should a tracer link more than one), from `rocpd_api_ops`.
fn api_of_ops(d: &Db) -> Result<IdMap> {
    let mut api_of = Vec::new();
    if d.has("rocpd_api_ops") {
        d.each(
            "rocpd_api_ops",
            &["api_id", "op_id"],
            "ORDER BY id",
            |i, r| {
                let e = |m: String| d.row_err("rocpd_api_ops", i, m);
                if let (Some(a), Some(o)) = (get_int(r, 0).map_err(e)?, get_int(r, 1).map_err(e)?) {
                    api_of.push((o, a));
                }
                Ok(())
            },
        )?;
    }
    Ok(IdMap::first_wins(api_of))
}

/// API call → a kernel launch's (grid, workgroup), from `rocpd_kernelapi`.
fn kernel_geometry(d: &Db) -> Result<FxHashMap<i64, Geometry>> {
    let mut geometry: FxHashMap<i64, Geometry> = FxHashMap::default();
    let t = "rocpd_kernelapi";
    if !d.has(t) {
        return Ok(geometry);
    }
    let cols = [
        "api_ptr_id",
        "?gridX",
        "?gridY",
        "?gridZ",
        "?workgroupX",
        "?workgroupY",
        "?workgroupZ",
    ];
    d.each(t, &cols, "", |i, r| {
        let e = |m: String| d.row_err(t, i, m);
        let u = |c: usize| -> Result<u32> {
            Ok(get_int(r, c)
                .map_err(e)?
                .unwrap_or(0)
                .clamp(0, i64::from(u32::MAX)) as u32)
        };
        if let Some(api) = get_int(r, 0).map_err(e)? {
            geometry.insert(api, ([u(1)?, u(2)?, u(3)?], [u(4)?, u(5)?, u(6)?]));
        }
        Ok(())
    })?;
    Ok(geometry)
}

/// API call → a copy's size, from `rocpd_copyapi`, with a note counting the calls that have none.
fn copy_sizes(d: &Db, b: &mut TraceBuilder) -> Result<FxHashMap<i64, u64>> {
    let mut copy_size: FxHashMap<i64, u64> = FxHashMap::default();
    let mut sizeless = 0u64;
    if d.has("rocpd_copyapi") {
        let t = "rocpd_copyapi";
        d.each(t, &["api_ptr_id", "?size"], "", |i, r| {
            let e = |m: String| d.row_err(t, i, m);
            let Some(api) = get_int(r, 0).map_err(e)? else {
                return Ok(());
            };
            match get_quantity(r, 1).map_err(e)? {
                Some(size) => {
                    copy_size.insert(api, size.max(0) as u64);
                }
                None => sizeless += 1,
            }
            Ok(())
        })?;
    }
    if sizeless > 0 {
        b.note(format!(
            "{sizeless} copy calls in rocpd_copyapi have no size (NULL or empty text): their copies are read without a byte count"
        ));
    }
    Ok(copy_size)
}

/// What reading `rocpd_op` counted, for the notes.
#[derive(Default)]
struct OpTally {
    /// Op type → rows of types that are not GPU work.
    other_types: FxHashMap<String, u64>,
    /// Kernels that are HIP-graph `Task` ops.
    tasks: u64,
    /// Kernels named by a mangled symbol.
    mangled: u64,
    /// Runtime fill kernels read as fills.
    fills: u64,
    /// Runtime copy kernels read as copies.
    copy_kernels: u64,
    /// Ops whose `opType_id` names no `rocpd_string` row: of no known type.
    dangling_types: u64,
}

/// GPU ops, from `rocpd_op`, with their launch's correlation, geometry and copy size; then the notes
/// on what they held and the queues' overruns. Their processes are set once the calls are read: the
/// ops linked to a call whose id is no correlation id are returned.
fn read_ops(
    d: &Db,
    b: &mut TraceBuilder,
    strings: &FxHashMap<i64, String>,
    links: &OpLinks,
) -> Result<OddLinks> {
    let t = "rocpd_op";
    let cols = [
        "id",
        "start",
        "end",
        "?gpuId",
        "?queueId",
        "?description_id",
        "?opType_id",
    ];
    let mut tally = OpTally::default();
    let mut queue_rows = QueueRows::default();
    let mut kernel_names = KernelNames::default();
    let mut tracks = crate::Tracks::default();
    // What each (description, type) pair of string ids is, decided at its first row.
    let mut classes: FxHashMap<(Option<i64>, Option<i64>), OpClass> = FxHashMap::default();
    let mut next_link = 0;
    let mut odd_links = OddLinks::default();
    d.each(t, &cols, "", |i, r| {
        let e = |m: String| d.row_err(t, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        let id = int(0)?.unwrap_or(-1);
        let (start, end) = (time(1)?, time(2)?);
        let (gpu, queue) = (int(3)?, int(4)?.unwrap_or(0));
        let ids = (int(5)?, int(6)?);
        let class = classes
            .entry(ids)
            .or_insert_with(|| OpClass::of(b, &mut kernel_names, strings, ids));
        let (kind, sym) = match class.counted(&mut tally) {
            Ok(gpu) => gpu,
            Err(other) => return b.other(other, start, end).map_err(e),
        };
        let api = links.api_of.get_from(id, &mut next_link);
        let track = tracks.of(b, gpu.unwrap_or(-1), queue);
        let mut op = NewGpuOp::at(sym, start, end - start, track);
        op.detail.device = gpu;
        op.detail.stream = Some(queue);
        op.correlation = api.and_then(|a| b.correlation(0, a.max(0) as u64));
        if let Some((grid, block)) = api.and_then(|a| links.geometry.get(&a)) {
            op.detail.grid = *grid;
            op.detail.block = *block;
        }
        if kind == GpuKind::Memcpy {
            op.detail.bytes = api.and_then(|a| links.copy_size.get(&a)).copied();
        }
        if kind == GpuKind::Kernel {
            queue_rows.add([0, gpu.unwrap_or(-1) as u64, queue as u64], start, end);
        }
        if let Some(a) = api.filter(|&a| a <= 0) {
            odd_links.insert((kind, b.trace().gpu_ops(kind).len()), a);
        }
        b.gpu_op(kind, op).map_err(e)
    })?;
    note_ops(b, &tally);
    b.capture().queue_overruns = Some(queue_rows.overruns());
    Ok(odd_links)
}

/// What an op of one (description, type) pair of string ids is: its kind and name, and what it counts
/// for in the [`OpTally`].
struct OpClass {
    /// The kind (a runtime blit kernel's as what it does) and name; `None`: not GPU work.
    gpu: Option<(GpuKind, kineto_trace::Sym)>,
    /// The op type, the key of [`OpTally::other_types`] when it is not GPU work.
    op_type: String,
    /// What an op that is not GPU work is counted under: `RPD op <type>`.
    other_label: String,
    /// A HIP-graph `Task` kernel; one named by a mangled symbol; a runtime blit kernel.
    task: bool,
    mangled: bool,
    blit: bool,
    /// Whether the type id names no string.
    dangling_type: bool,
}

impl OpClass {
    fn of(
        b: &mut TraceBuilder,
        kernel_names: &mut KernelNames,
        strings: &FxHashMap<i64, String>,
        (desc_id, type_id): (Option<i64>, Option<i64>),
    ) -> OpClass {
        let desc = desc_id
            .and_then(|s| strings.get(&s))
            .map_or("", String::as_str);
        let looked_up = type_id.map(|s| strings.get(&s));
        let op_type = looked_up.flatten().map_or("", String::as_str);
        let kind = op_kind(op_type);
        let is_kernel = kind == Some(GpuKind::Kernel);
        let mut blit = false;
        let gpu = kind.map(|kind| {
            let sym = match kind {
                GpuKind::Kernel if desc.is_empty() => b.name(op_type),
                GpuKind::Kernel => kernel_names.sym(b, desc),
                GpuKind::Memcpy => b.name(&copy_name(op_type)),
                GpuKind::Memset => b.name(op_type),
            };
            match blit_kind(b.trace().name(sym)).filter(|_| is_kernel) {
                Some(k) => {
                    blit = true;
                    (k, sym)
                }
                None => (kind, sym),
            }
        });
        OpClass {
            gpu,
            op_type: op_type.to_string(),
            other_label: format!("RPD op {op_type}"),
            task: is_kernel && op_type == "Task",
            mangled: is_kernel && desc.starts_with("_Z"),
            blit,
            dangling_type: looked_up == Some(None),
        }
    }

    /// Counts one op of this class in `tally`: its kind and name, or (not GPU work) the label it is
    /// counted under.
    fn counted(
        &self,
        tally: &mut OpTally,
    ) -> std::result::Result<(GpuKind, kineto_trace::Sym), &str> {
        tally.dangling_types += u64::from(self.dangling_type);
        let Some((kind, sym)) = self.gpu else {
            match tally.other_types.get_mut(&self.op_type) {
                Some(n) => *n += 1,
                None => {
                    tally.other_types.insert(self.op_type.clone(), 1);
                }
            }
            return Err(&self.other_label);
        };
        tally.tasks += u64::from(self.task);
        tally.mangled += u64::from(self.mangled);
        if self.blit {
            match kind {
                GpuKind::Memset => tally.fills += 1,
                _ => tally.copy_kernels += 1,
            }
        }
        Ok((kind, sym))
    }
}

/// The notes on what `rocpd_op` held: graph tasks, mangled names, runtime blit kernels, other op types.
fn note_ops(b: &mut TraceBuilder, tally: &OpTally) {
    let OpTally {
        other_types,
        tasks,
        mangled,
        fills,
        copy_kernels,
        dangling_types,
    } = tally;
    if *dangling_types > 0 {
        b.warn(
            0,
            format!(
                "rocpd_op: {dangling_types} ops have an `opType_id` that names no `rocpd_string` row: their type \
                 (kernel, copy or fill) is unknown, so they are counted as other ops, not GPU work"
            ),
        );
    }
    if *tasks > 0 {
        b.note(format!(
            "{tasks} kernels are HIP-graph `Task` ops (RPD's own `kernel` view leaves them out; counted here)"
        ));
    }
    if *mangled > 0 {
        b.note(format!(
            "{mangled} kernels were named by mangled symbols in the file; demangled"
        ));
    }
    if fills + copy_kernels > 0 {
        b.note(format!(
            "{fills} runtime fill kernels (__amd_rocclr_fill*) counted as fills, {copy_kernels} runtime copy kernels (__amd_rocclr_copy*) as copies"
        ));
    }
    if !other_types.is_empty() {
        let mut v: Vec<String> = other_types
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        v.sort();
        b.note(format!(
            "RPD ops of other types counted, not GPU work: {}",
            v.join(", ")
        ));
    }
}

/// API calls, from `rocpd_api`: launches, roctx ranges and marks (`UserMarker`), and the tracer's own
/// overhead rows (counted apart, with a note); and the process of every call an op may be linked to.
fn read_calls(
    d: &Db,
    b: &mut TraceBuilder,
    strings: &FxHashMap<i64, String>,
    ustrings: &FxHashMap<i64, String>,
) -> Result<CallProcesses> {
    let args_text = |id: Option<i64>| -> Option<&str> {
        let id = id?;
        ustrings
            .get(&id)
            .or_else(|| strings.get(&id))
            .map(String::as_str)
    };
    let t = "rocpd_api";
    let cols = [
        "id",
        "start",
        "end",
        "?pid",
        "?tid",
        "?apiName_id",
        "?args_id",
        "?domain_id",
    ];
    let mut overhead = 0u64;
    let mut processes = CallProcesses::default();
    let mut tracks = crate::Tracks::default();
    // What each (name, domain) pair of string ids is, decided at its first row.
    let mut classes: FxHashMap<(Option<i64>, Option<i64>), CallClass> = FxHashMap::default();
    d.each(t, &cols, "", |i, r| {
        let e = |m: String| d.row_err(t, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        // Id and pid first: of a row with several bad cells, theirs is told, as when the pids had a
        // pass of their own.
        let (id, pid) = (int(0)?, int(3)?);
        let (start, end) = (time(1)?, time(2)?);
        let tid = int(4)?.unwrap_or(0);
        let (name_id, domain_id) = (int(5)?, int(7)?);
        let class = *classes
            .entry((name_id, domain_id))
            .or_insert_with(|| CallClass::of(b, strings, name_id, domain_id));
        let raw_id = id.unwrap_or(0).max(0) as u64;
        // A launch hands out its id's correlation; another row only finds one an op was given.
        let correlation = match class {
            CallClass::Call(..) => b.correlation(0, raw_id),
            CallClass::Overhead | CallClass::Marker => b.correlation_seen(0, raw_id),
        };
        if let (Some(id), Some(pid)) = (id, pid) {
            processes.add(id, correlation, pid);
        }
        let pid = pid.unwrap_or(0);
        let (sym, api) = match class {
            CallClass::Overhead => {
                overhead += 1;
                return b.other("rpd_tracer overhead", start, end).map_err(e);
            }
            CallClass::Marker => {
                let track = tracks.of(b, pid, tid);
                let text = args_text(int(6)?).unwrap_or("");
                return b
                    .marker(text, start, end, track, "UserMarker mark")
                    .map_err(e);
            }
            CallClass::Call(sym, api) => (sym, api),
        };
        let track = tracks.of(b, pid, tid);
        b.launch(Launch::at(sym, api, start, end - start, track, correlation))
            .map_err(e)
    })?;
    b.note_instant_marks("UserMarker");
    if overhead > 0 {
        b.note(format!(
            "{overhead} rocpd_api rows are rpd_tracer's own overhead records (its table writes, activity callbacks and flushes): counted as `rpd_tracer overhead`, not as API calls"
        ));
    }
    Ok(processes)
}

/// What a `rocpd_api` row of one (name, domain) pair of string ids is.
#[derive(Clone, Copy)]
enum CallClass {
    /// The tracer's own overhead record ([`is_tracer_overhead`]).
    Overhead,
    /// A roctx range or mark (`UserMarker`), its text in the row's `args`.
    Marker,
    /// A HIP call (an HSA one, `hsa_*`, is driver-level), named.
    Call(kineto_trace::Sym, Api),
}

impl CallClass {
    fn of(
        b: &mut TraceBuilder,
        strings: &FxHashMap<i64, String>,
        name_id: Option<i64>,
        domain_id: Option<i64>,
    ) -> CallClass {
        let api_name = name_id
            .and_then(|s| strings.get(&s))
            .map_or("", String::as_str);
        let domain = domain_id.and_then(|s| strings.get(&s)).map(String::as_str);
        if is_tracer_overhead(api_name, domain) {
            return CallClass::Overhead;
        }
        if api_name == "UserMarker" {
            return CallClass::Marker;
        }
        let api = if api_name.starts_with("hsa_") {
            Api::Driver
        } else {
            Api::Runtime
        };
        CallClass::Call(b.name(api_name), api)
    }
}

/// Whether a `rocpd_api` row is one the tracer writes about itself (`Logger::createOverheadRecord`):
/// schema 3 files it under the domain `rpd_tracer`; schema 2 has no domain, and its overhead rows are
/// named as its `createOverheadRecord` calls name them: after the tracer's own functions
/// (`OpTable::writeRows`, `hcc_activity_callback`), which no HIP, HSA or roctx entry point is (those are
/// C functions, never `::`-qualified); `rpdflush` (`Logger::rpdflush`, a C entry point of the tracer's
/// own, not of HIP); and `BLOCKING`, the time a full table's `insert` (`StringTable`, `ApiTable`) waited
/// for its writer.
fn is_tracer_overhead(api_name: &str, domain: Option<&str>) -> bool {
    match domain {
        Some(d) => d == "rpd_tracer",
        None => {
            api_name.contains("::")
                || api_name.ends_with("_activity_callback")
                || matches!(api_name, "rpdflush" | "BLOCKING")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Schema 2 (no domain): the tracer's records are named after its C++ methods, its activity
    /// callbacks and its flush (rocmProfileData's `createOverheadRecord` calls); HIP, HSA and roctx
    /// names are not. Schema 3: the domain alone decides.
    #[test]
    fn the_tracers_own_records_are_overhead_and_calls_are_not() {
        for name in [
            "OpTable::writeRows",
            "RocprofDataSource::buffer_callback",
            "hcc_activity_callback",
            "rpdflush",
            "BLOCKING",
        ] {
            assert!(is_tracer_overhead(name, None), "{name}");
        }
        for name in [
            "hipMemcpyAsync",
            "hsa_queue_create",
            "UserMarker",
            "run_to_completion",
        ] {
            assert!(!is_tracer_overhead(name, None), "{name}");
        }
        assert!(is_tracer_overhead("anything", Some("rpd_tracer")));
        assert!(!is_tracer_overhead("rpdflush", Some("hip")));
    }
}
