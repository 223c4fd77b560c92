//! rocprofv3 CSV: one process's trace files, `<prefix>kernel_trace.csv` and the files beside it
//! with the same prefix (`hip_api_trace.csv`, `hsa_api_trace.csv`, `marker_api_trace.csv`,
//! `rccl_api_trace.csv`, `memory_copy_trace.csv`, `agent_info.csv`; `hip_runtime_trace.csv`,
//! `hsa_trace.csv` in early releases).
//!
//! Every column is found by its header name, folded (lower case, letters and digits only), so the
//! releases' differences — `Stream_Id` added, `Private_Segment_Size` replaced by `Scratch_Size`,
//! `Agent_Id` as `1` or `"Agent 1"`, `rocpd2csv`'s `Guid` column and re-cased names — read alike.
//! What each file is, is told by its columns, not its name ([`table_of`], the rule `read::detect`
//! tells the format by too): `Kernel_Name` the kernel trace, `Domain` + `Function` an API trace
//! (HIP, HSA, markers, RCCL by the domain), `Direction` a copy trace, `Agent_Type` the agent list.
//! Names only group files: a CSV belongs to the process with the longest prefix it starts with. A
//! set is read from its kernel trace; a run without one (`rocprofv3 --hip-trace`,
//! `--memory-copy-trace` …) from the API or copy trace given (in a directory, the process's first
//! by name), its calls and copies read alike and no kernels.
//!
//! Registers and shared memory as every rocprofv3 reader takes them (`super::rocprof_resources`):
//! `VGPR_Count` → registers; the dispatch's group segment → shared memory, the early
//! `Group_Segment_Size` or `rocpd`'s `Lds_Block_Size` (with its `Guid` column), not rocprofv3's own
//! later `LDS_Block_Size` (the symbol's static LDS rounded to 512 bytes).
//!
//! `Kernel_Name` is the full demangled signature; fills and copies that ran as the runtime's
//! `__amd_rocclr_*` kernels count as fills and copies. `memory_copy_trace.csv` has no byte count.
//!
//! The tables are read as their content streams: a set's files are read through once for the hash
//! and their headers, then each table's rows as the model is built (the tables' text is never held).
//!
//! What it is not: the stored bytes of the files (read, hashed and inflated by `crate::stored`), or the
//! Kineto parser's CSV of anything.

use super::TraceBuilder;
use super::builder::DispatchTally;
use super::names::{KernelNames, blit_kind, copy_name};
use super::rocprof_resources::{KernelResources, csv_columns};
use crate::error::{Error, Result};
use crate::model::{
    Api, DeviceProps, GpuKind, IdValue, Launch, NewGpuOp, Span, SpanKind, Trace, TraceFormat,
};
use crate::read::detect::fold;
use crate::stored::fill;
use crate::stored::streamed::{SetFiles, reopen_content};
use crate::stored::whole::StoredFacts;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::io::Read;
use std::path::{Path, PathBuf};

const KERNEL_TRACE: &str = "kernel_trace.csv";

/// The names rocprofv3 gives the trace tables this reader reads, each after its process's prefix
/// (`<prefix><name>`, plain or `.gz`): the kernel trace, the API traces (`hip_runtime_trace`,
/// `hip_compile_trace` and `hsa_trace` the early releases' names) and the copy trace. Names pick a
/// directory's trace files and a file's prefix; what a file holds is told by its columns
/// ([`table_of`]).
const TRACE_NAMES: [&str; 11] = [
    KERNEL_TRACE,
    "hip_api_trace.csv",
    "hip_runtime_trace.csv",
    "hip_compile_trace.csv",
    "hsa_api_trace.csv",
    "hsa_trace.csv",
    "marker_api_trace.csv",
    "rccl_api_trace.csv",
    "rocdecode_api_trace.csv",
    "rocjpeg_api_trace.csv",
    "memory_copy_trace.csv",
];

/// What a rocprofv3 CSV table is, told by its folded header names: the one rule for telling a
/// file's format (`read::detect`) and the files of a set apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CsvTable {
    /// `agent_info.csv` (`Agent_Type`): the devices, no trace by itself.
    Agents,
    /// The kernel trace: `Kernel_Name`, `Start_Timestamp`, `End_Timestamp`, no `Counter_Name`
    /// (`counter_collection.csv` has the others too, one row per counter).
    Kernels,
    /// An API trace (HIP, HSA, markers, RCCL by its `Domain`): `Domain`, `Function` and the two
    /// times.
    Api,
    /// The copy trace: `Direction` and the two times.
    Copies,
    /// A `--stats` table (`*_stats.csv`: `Name`, `Calls`, `TotalDurationNs`): no trace by itself.
    Stats,
}

impl CsvTable {
    /// Whether rows of this table are a trace, read alone or as a set's anchor.
    pub(crate) fn is_trace(self) -> bool {
        matches!(self, CsvTable::Kernels | CsvTable::Api | CsvTable::Copies)
    }
}

/// The table whose folded header names `has` finds, if it is one rocprofv3 writes that is read
/// here.
pub(crate) fn table_of(has: impl Fn(&str) -> bool) -> Option<CsvTable> {
    let timed = has("starttimestamp") && has("endtimestamp");
    Some(if has("agenttype") {
        CsvTable::Agents
    } else if timed && has("kernelname") && !has("countername") {
        CsvTable::Kernels
    } else if timed && has("domain") && has("function") {
        CsvTable::Api
    } else if timed && has("direction") {
        CsvTable::Copies
    } else if has("name") && has("calls") && has("totaldurationns") {
        CsvTable::Stats
    } else {
        return None;
    })
}

/// True for a (lower-case) file name of a rocprofv3 kernel trace, plain or gzip.
pub(crate) fn is_kernel_trace_name(lower: &str) -> bool {
    lower
        .strip_suffix(".gz")
        .unwrap_or(lower)
        .ends_with(KERNEL_TRACE)
}

/// True for a (lower-case) file name of a rocprofv3 trace table read here ([`TRACE_NAMES`]).
pub(crate) fn is_trace_table_name(lower: &str) -> bool {
    trace_name_prefix(lower).is_some()
}

/// The prefix of a (lower-case) trace table's name: the name, `.gz` aside, before the longest of
/// [`TRACE_NAMES`] it ends with.
fn trace_name_prefix(lower: &str) -> Option<&str> {
    let plain = lower.strip_suffix(".gz").unwrap_or(lower);
    TRACE_NAMES
        .iter()
        .filter(|t| plain.ends_with(*t))
        .max_by_key(|t| t.len())
        .map(|t| &plain[..plain.len() - t.len()])
}

/// The trace files of a directory, one per process, sorted: each `<prefix>kernel_trace.csv`, and
/// for a process with none (rocprofv3 run without `--kernel-trace`) its first trace file by name.
pub(crate) fn csv_trace_sets(dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(csv_trace_sets_among(&list(dir)?))
}

/// [`csv_trace_sets`] among the files of a directory already listed.
pub(crate) fn csv_trace_sets_among(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = processes(files)
        .into_iter()
        .map(|(_, anchor)| anchor)
        .collect();
    out.sort();
    out
}

/// The processes among the files of a directory, as (prefix, the file a set is read from): each
/// kernel trace; then each prefix of the other trace files whose name starts with no kernel
/// trace's prefix (those belong to that kernel trace's set), with its first such file by name.
fn processes(files: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = files
        .iter()
        .filter(|p| is_kernel_trace_name(&lower_name(p)))
        .map(|p| (prefix_of(p), p.clone()))
        .collect();
    let kernel_sets = out.len();
    let mut others: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            let n = lower_name(p);
            is_trace_table_name(&n) && !is_kernel_trace_name(&n)
        })
        .collect();
    others.sort();
    for p in others {
        let n = lower_name(p);
        let n = n.strip_suffix(".gz").unwrap_or(&n);
        let prefix = prefix_of(p);
        let in_kernel_set = out[..kernel_sets]
            .iter()
            .any(|(q, _)| n.starts_with(q.as_str()));
        if !in_kernel_set && !out[kernel_sets..].iter().any(|(q, _)| *q == prefix) {
            out.push((prefix, p.clone()));
        }
    }
    out
}

/// A path's file name in lower case (rocprofv3's names are matched without case).
pub(crate) fn lower_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The directory a set's files are listed from: `file`'s own.
fn dir_of(file: &Path) -> &Path {
    file.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn list(dir: &Path) -> Result<Vec<PathBuf>> {
    let io_err = |source| Error::Io {
        file: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io_err)? {
        let p = e.map_err(io_err)?.path();
        if p.is_file() {
            out.push(p);
        }
    }
    Ok(out)
}

/// A trace file's prefix ([`trace_name_prefix`]); a file not named as one is its own whole name,
/// which no other file's set prefix equals (it is read alone).
fn prefix_of(file: &Path) -> String {
    let lower = lower_name(file);
    match trace_name_prefix(&lower) {
        Some(p) => p.to_string(),
        None => lower.strip_suffix(".gz").unwrap_or(&lower).to_string(),
    }
}

/// The set `file` belongs to: (its prefix, the file it is read from). A kernel trace is its own
/// set's, and a file not named as a trace table is alone (its prefix its whole name); another trace
/// file belongs to the process with the longest prefix its name starts with, read from that
/// process's kernel trace when it has one, else from `file` itself.
/// `procs` are the [`processes`] of `file`'s directory.
fn set_of(file: &Path, procs: &[(String, PathBuf)]) -> (String, PathBuf) {
    let n = lower_name(file);
    if is_kernel_trace_name(&n) || !is_trace_table_name(&n) {
        return (prefix_of(file), file.to_path_buf());
    }
    let n = n.strip_suffix(".gz").unwrap_or(&n);
    let Some((prefix, anchor)) = owner(n, procs) else {
        return (prefix_of(file), file.to_path_buf());
    };
    let anchor = match is_kernel_trace_name(&lower_name(anchor)) {
        true => anchor.clone(),
        false => file.to_path_buf(),
    };
    (prefix.clone(), anchor)
}

/// The process (set prefix and anchor, of [`processes`]) a file named `name` (lower case, no `.gz`)
/// belongs to: the longest prefix it starts with.
fn owner<'p>(name: &str, procs: &'p [(String, PathBuf)]) -> Option<&'p (String, PathBuf)> {
    procs
        .iter()
        .filter(|(q, _)| name.starts_with(q.as_str()))
        .max_by_key(|(q, _)| q.len())
}

/// The files of `file`'s set ([`set_of`]): the file it is read from first, then the CSV files
/// beside it that belong to it (longest matching prefix), sorted; no other kernel trace among them.
fn set_files(file: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    let files = list(dir_of(file))?;
    let procs = processes(&files);
    let (mine, anchor) = set_of(file, &procs);
    let mut out: Vec<PathBuf> = files
        .into_iter()
        .filter(|p| {
            let n = lower_name(p);
            let n = n.strip_suffix(".gz").unwrap_or(&n);
            if !n.ends_with(".csv")
                || is_kernel_trace_name(n)
                || !n.starts_with(&mine)
                || same_file(p, &anchor)
            {
                return false;
            }
            owner(n, &procs).is_some_and(|(q, _)| *q == mine)
        })
        .collect();
    out.sort();
    Ok((anchor, out))
}

/// Two of the paths are files of one set (one process: `kernel_trace.csv` and the `hip_api_trace.csv`
/// beside it, or a file and its directory): each is read with the whole set, so the process would be
/// counted twice, as two ranks. An error naming both, not a silent double count. Each directory is
/// listed once, however many of its files are given.
pub(crate) fn check_one_read_per_set(paths: &[PathBuf]) -> Result<()> {
    let mut procs_of: FxHashMap<PathBuf, Vec<(String, PathBuf)>> = FxHashMap::default();
    let mut first_of: FxHashMap<(PathBuf, String), &PathBuf> = FxHashMap::default();
    for p in paths {
        if !is_trace_table_name(&lower_name(p)) || !p.is_file() {
            continue;
        }
        let dir = dir_of(p);
        // A path that names the directory however it was given (`d`, `./d`, `d/../d`).
        let key = std::fs::canonicalize(dir).unwrap_or(dir.to_path_buf());
        let procs = match procs_of.entry(key.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(processes(&list(dir)?)),
        };
        let (prefix, _) = set_of(p, procs);
        if let Some(first) = first_of.insert((key, prefix), p) {
            return Err(Error::Format {
                file: p.clone(),
                message: format!(
                    "a file of the same rocprofv3 CSV set (one process) as {}: each is read with the \
                     whole set, so the process would count twice; give one file of the set, or \
                     their directory",
                    first.display()
                ),
            });
        }
    }
    Ok(())
}

/// The same directory entry: `a` listed beside `b`, `b` as given (a relative path, `./x`).
fn same_file(a: &Path, b: &Path) -> bool {
    a.file_name() == b.file_name()
}

/// One CSV table: folded header → column; its rows are read as they are iterated (byte records from
/// the content as it streams, never the whole table).
struct Table<'r> {
    file: PathBuf,
    cols: FxHashMap<String, usize>,
    rows: Rows<'r>,
}

/// Where a table's rows are read from.
enum Rows<'r> {
    /// A file of a set, its content opened again for each pass over its rows.
    File,
    /// A stream, past its header: its rows can be read once.
    Once(RefCell<Option<csv::Reader<Box<dyn Read + 'r>>>>),
}

/// The UTF-8 byte-order mark some tools write first: not part of the header's first name.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A CSV reader of `content`, a byte-order mark at its start skipped.
fn csv_reader<'r>(mut content: impl Read + 'r) -> csv::Reader<Box<dyn Read + 'r>> {
    let mut head = [0u8; 3];
    // A read error is the stream's, reported where its reading ends; the reader goes on with what came.
    let (n, _) = fill(&mut content, &mut head);
    let skip = if head[..n] == *BOM { n } else { 0 };
    let rest = std::io::Cursor::new(head[skip..n].to_vec()).chain(content);
    csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(Box::new(rest) as Box<dyn Read + 'r>)
}

/// The folded header names of a CSV table, by column.
fn header_cols<R: Read>(file: &Path, r: &mut csv::Reader<R>) -> Result<FxHashMap<String, usize>> {
    let head = r.byte_headers().map_err(|e| csv_err(file, e))?;
    Ok(head
        .iter()
        .enumerate()
        .map(|(i, h)| (fold(&String::from_utf8_lossy(h)), i))
        .collect())
}

impl Table<'_> {
    /// The rows, with their line numbers (the header is line 1).
    fn records(&self) -> Box<dyn Iterator<Item = Result<(usize, csv::ByteRecord)>> + '_> {
        let reader = match &self.rows {
            Rows::File => match reopen_content(&self.file) {
                Ok(content) => csv_reader(content),
                Err(e) => return Box::new(std::iter::once(Err(e))),
            },
            Rows::Once(cell) => match cell.borrow_mut().take() {
                Some(r) => r,
                None => {
                    return Box::new(std::iter::once(Err(Error::Native {
                        file: self.file.clone(),
                        at: "CSV".into(),
                        message: "its rows were read once already, from a stream".into(),
                    })));
                }
            },
        };
        Box::new(reader.into_byte_records().map(|r| {
            r.map(|rec| {
                let line = rec.position().map_or(0, |p| p.line() as usize);
                (line, rec)
            })
            .map_err(|e| csv_err(&self.file, e))
        }))
    }

    fn has(&self, col: &str) -> bool {
        self.cols.contains_key(col)
    }

    fn get<'r>(&self, row: &'r csv::ByteRecord, col: &str) -> Option<&'r str> {
        let v = std::str::from_utf8(row.get(*self.cols.get(col)?)?)
            .ok()?
            .trim();
        (!v.is_empty()).then_some(v)
    }

    fn err(&self, line: usize, message: String) -> Error {
        Error::Native {
            file: self.file.clone(),
            at: format!("line {line}"),
            message,
        }
    }

    /// An integer cell.
    fn int(&self, row: &csv::ByteRecord, col: &str, line: usize) -> Result<Option<i64>> {
        match self.get(row, col) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| self.err(line, format!("column {col} is `{v}`, not an integer"))),
        }
    }

    fn need(&self, row: &csv::ByteRecord, col: &str, line: usize) -> Result<i64> {
        self.int(row, col, line)?
            .ok_or_else(|| self.err(line, format!("no value in column {col}")))
    }
}

fn csv_err(file: &Path, e: csv::Error) -> Error {
    Error::Native {
        file: file.to_path_buf(),
        at: e
            .position()
            .map_or("CSV".to_string(), |p| format!("line {}", p.line())),
        message: format!("not CSV: {e}"),
    }
}

/// `1`, `"Agent 1"`: the number in an agent column.
fn agent_number(v: &str) -> Option<i64> {
    v.rsplit(' ').next()?.parse().ok()
}

/// Reads the set `file` belongs to (with the files beside it; read from its kernel trace when it
/// has one, [`set_files`]): every file read through once in name order (hashed, its header read),
/// then each table's rows read from its file again as the model is built.
pub(crate) fn read_set(file: &Path, hash: bool) -> Result<(Trace, StoredFacts)> {
    let (anchor, siblings) = set_files(file)?;
    let mut files = vec![anchor.clone()];
    files.extend(siblings);
    files.sort();
    let mut stored = SetFiles::new(hash);
    let mut tables = Vec::new();
    for f in files {
        let cols =
            stored.read_through(&f, |content| header_cols(&f, &mut csv_reader(content)))??;
        let table = Table {
            file: f,
            cols,
            rows: Rows::File,
        };
        tables.push((table.file == anchor, table));
    }
    let trace = build(&anchor, tables)?;
    Ok((trace, stored.finish()))
}

/// Reads a trace CSV (kernel, API or copy trace) alone, from its content as it streams (a stream:
/// no files beside it).
pub(crate) fn read_one(name: &Path, content: impl Read) -> Result<Trace> {
    let mut reader = csv_reader(content);
    let cols = header_cols(name, &mut reader)?;
    let table = Table {
        file: name.to_path_buf(),
        cols,
        rows: Rows::Once(RefCell::new(Some(reader))),
    };
    build(name, vec![(true, table)])
}

/// The model of a set's tables; `anchor` (flagged `true`) is the kernel trace, or, in a set without
/// one, the API or copy trace the set is read from.
fn build(anchor: &Path, tables: Vec<(bool, Table<'_>)>) -> Result<Trace> {
    let mut b = TraceBuilder::new(TraceFormat::Rocprofv3Csv);
    b.header().producer = Some("rocprofv3 (rocprofiler-sdk)".into());
    let Some(at) = tables.iter().position(|(k, _)| *k) else {
        return Err(Error::Format {
            file: anchor.to_path_buf(),
            message: "no kernel trace".into(),
        });
    };
    let without_kernels = table_of(|c| tables[at].1.has(c))
        .is_some_and(|t| matches!(t, CsvTable::Api | CsvTable::Copies));
    if without_kernels {
        b.header().format_version = Some("API or copy trace columns (no kernel_trace)".into());
        b.note(
            "no kernel_trace.csv in this set: rocprofv3 was not asked to trace kernel \
             dispatches, so the trace has none"
                .into(),
        );
        let others = tables.into_iter().map(|(_, t)| (false, t)).collect();
        let set = SetTables::sort(&mut b, others, false)?;
        let pid = set.process_id(anchor);
        set.copy_rows(&mut b)?;
        set.api_rows(&mut b, pid)?;
        b.note_instant_marks("roctx");
        return Ok(b.finish());
    }
    let mut others = tables;
    let (_, kt) = others.remove(at);
    check_kernel_header(&mut b, &kt)?;
    let set = SetTables::sort(&mut b, others, true)?;
    let pid = set.process_id(anchor);
    let totals = set.kernel_rows(&mut b, &kt)?;
    set.copy_rows(&mut b)?;
    set.api_rows(&mut b, pid)?;
    b.note_instant_marks("roctx");
    totals.finish(&mut b);
    Ok(b.finish())
}

/// The kernel trace has the columns a kernel row needs; the header says which release's columns.
fn check_kernel_header(b: &mut TraceBuilder, kt: &Table<'_>) -> Result<()> {
    for col in ["kernelname", "starttimestamp", "endtimestamp"] {
        if !kt.has(col) {
            return Err(kt.err(
                1,
                format!("the header has no {col} column: not a rocprofv3 kernel trace"),
            ));
        }
    }
    b.header().format_version = Some(
        if kt.has("streamid") {
            "kernel_trace columns with Stream_Id"
        } else {
            "kernel_trace columns without Stream_Id"
        }
        .into(),
    );
    Ok(())
}

/// The GPUs of an agent list: a GPU's device index is its position among the GPU agents by logical
/// node; each is added to the header, and found by its node and logical node ids in `device_of`.
fn gpu_agents(b: &mut TraceBuilder, t: &Table, device_of: &mut FxHashMap<i64, i64>) -> Result<()> {
    let mut gpus = Vec::new();
    for (i, rec) in t.records().enumerate() {
        let (line, row) = rec?;
        if t.get(&row, "agenttype")
            .is_some_and(|v| v.eq_ignore_ascii_case("GPU"))
        {
            let logical = t.int(&row, "logicalnodeid", line)?;
            let node = t.int(&row, "nodeid", line)?;
            let name = t
                .get(&row, "productname")
                .or_else(|| t.get(&row, "name"))
                .map(str::to_string);
            let cus: Option<u64> = t.get(&row, "cucount").and_then(|v| v.parse().ok());
            gpus.push((
                logical.or(node).unwrap_or(i as i64),
                node,
                logical,
                name,
                cus,
            ));
        }
    }
    gpus.sort_by_key(|g| g.0);
    for (dev, (_, node, logical, name, cus)) in gpus.into_iter().enumerate() {
        let dev = dev as i64;
        for id in [node, logical].into_iter().flatten() {
            device_of.insert(id, dev);
        }
        b.header().devices.push(DeviceProps {
            id: Some(dev),
            name,
            num_sms: cus,
            total_global_mem: None,
        });
    }
    Ok(())
}

/// The files of a set beside its kernel trace, told by their columns, and the devices its agent list
/// names.
struct SetTables<'r> {
    /// Device index by agent id (empty without `agent_info.csv`).
    device_of: FxHashMap<i64, i64>,
    api_tables: Vec<Table<'r>>,
    copy_tables: Vec<Table<'r>>,
}

impl<'r> SetTables<'r> {
    /// Sorts the files of a set but its kernel trace, by their columns ([`table_of`]): agent list
    /// (read here), API traces, copy traces; the rest (statistics, counters) are not read. Without
    /// an agent list a note says what device numbers are, when the set has GPU rows (`kernels`: it
    /// has a kernel trace; else its copy traces).
    fn sort(
        b: &mut TraceBuilder,
        others: Vec<(bool, Table<'r>)>,
        kernels: bool,
    ) -> Result<SetTables<'r>> {
        let mut device_of: FxHashMap<i64, i64> = FxHashMap::default();
        let mut api_tables = Vec::new();
        let mut copy_tables = Vec::new();
        for (_, t) in others {
            match table_of(|c| t.has(c)) {
                Some(CsvTable::Agents) => gpu_agents(b, &t, &mut device_of)?,
                Some(CsvTable::Api) => api_tables.push(t),
                Some(CsvTable::Copies) => copy_tables.push(t),
                Some(CsvTable::Kernels | CsvTable::Stats) | None => {}
            }
        }
        let beside = match (kernels, copy_tables.is_empty()) {
            (true, _) => Some("the kernel trace"),
            (false, false) => Some("the copy trace"),
            (false, true) => None,
        };
        if let (true, Some(beside)) = (device_of.is_empty(), beside) {
            b.note(format!(
                "no agent_info.csv beside {beside}: device numbers are rocprofv3's agent ids"
            ));
        }
        Ok(SetTables {
            device_of,
            api_tables,
            copy_tables,
        })
    }

    /// The device of an agent: its GPU index, or the agent id itself when there is no agent list.
    fn device(&self, agent: Option<i64>) -> Option<i64> {
        agent.map(|a| self.device_of.get(&a).copied().unwrap_or(a))
    }

    /// The process: from the API files, else the prefix's digits.
    fn process_id(&self, anchor: &Path) -> i64 {
        let prefix_pid: Option<i64> = prefix_of(anchor)
            .trim_end_matches('_')
            .rsplit(['/', '_'])
            .next()
            .and_then(|d| d.parse().ok());
        self.api_tables
            .iter()
            // A stream's rows are read once, as the model is built.
            .filter(|t| matches!(t.rows, Rows::File))
            .find_map(|t| {
                let (_, r) = t.records().next()?.ok()?;
                t.get(&r, "processid")?.parse().ok()
            })
            .or(prefix_pid)
            .unwrap_or(0)
    }

    /// The kernel trace's rows: GPU ops (runtime fill and copy kernels as fills and copies), each on its
    /// queue for the overruns.
    fn kernel_rows(&self, b: &mut TraceBuilder, kt: &Table) -> Result<DispatchTally> {
        let mut totals = DispatchTally::default();
        let mut kernel_names = KernelNames::default();
        let (registers, shared) = csv_columns(|c| kt.has(c));
        for rec in kt.records() {
            let (line, row) = rec?;
            let raw = kt
                .cols
                .get("kernelname")
                .and_then(|&c| row.get(c))
                .unwrap_or(b"");
            let sym = kernel_names.sym(b, String::from_utf8_lossy(raw).trim());
            let kind = blit_kind(b.trace().name(sym)).unwrap_or(GpuKind::Kernel);
            let row = &row;
            let start = kt.need(row, "starttimestamp", line)?;
            let end = kt.need(row, "endtimestamp", line)?;
            let agent = kt.get(row, "agentid").and_then(agent_number);
            let dev = self.device(agent);
            let queue = kt.int(row, "queueid", line)?.unwrap_or(0);
            let stream = kt.int(row, "streamid", line)?.unwrap_or(queue);
            let track = b.track(IdValue::Num(dev.unwrap_or(-1)), IdValue::Num(stream));
            let mut op = NewGpuOp::at(sym, start, end - start, track);
            op.detail.device = dev;
            op.detail.stream = Some(stream);
            op.correlation =
                b.correlation(0, kt.int(row, "correlationid", line)?.unwrap_or(0) as u64);
            let dim = |c: &str| -> Result<u32> {
                Ok(kt
                    .int(row, c, line)?
                    .unwrap_or(0)
                    .clamp(0, i64::from(u32::MAX)) as u32)
            };
            op.detail.grid = [dim("gridsizex")?, dim("gridsizey")?, dim("gridsizez")?];
            op.detail.block = [
                dim("workgroupsizex")?,
                dim("workgroupsizey")?,
                dim("workgroupsizez")?,
            ];
            let resource = |c: Option<&str>| -> Result<Option<u32>> {
                let Some(c) = c else { return Ok(None) };
                let Some(v) = kt.int(row, c, line)? else {
                    return Ok(None);
                };
                u32::try_from(v)
                    .map(Some)
                    .map_err(|_| kt.err(line, format!("column {c} is {v}, not a 32-bit count")))
            };
            KernelResources {
                arch_vgprs: resource(registers)?,
                group_segment_bytes: resource(shared)?,
            }
            .set_on(&mut op.detail);
            let queue = [0, agent.unwrap_or(-1) as u64, queue as u64];
            totals.add(kind, queue, start, end);
            b.gpu_op(kind, op).map_err(|m| kt.err(line, m))?;
        }
        Ok(totals)
    }

    /// The copy traces' rows, named by their direction, on the GPU side of the copy.
    fn copy_rows(&self, b: &mut TraceBuilder) -> Result<()> {
        for t in &self.copy_tables {
            for rec in t.records() {
                let (line, row) = rec?;
                let row = &row;
                let start = t.need(row, "starttimestamp", line)?;
                let end = t.need(row, "endtimestamp", line)?;
                let text = copy_name(t.get(row, "direction").unwrap_or("MEMORY_COPY"));
                let dst = self.device(t.get(row, "destinationagentid").and_then(agent_number));
                let src = self.device(t.get(row, "sourceagentid").and_then(agent_number));
                // The GPU side: CPU agents are not in the GPU list (with agent_info.csv).
                let gpu = |d: Option<i64>| {
                    d.filter(|d| {
                        self.device_of.is_empty() || self.device_of.values().any(|v| v == d)
                    })
                };
                let dev = gpu(dst).or(gpu(src));
                let stream = t.int(row, "streamid", line)?.unwrap_or(0);
                let sym = b.name(&text);
                let track = b.track(IdValue::Num(dev.unwrap_or(-1)), IdValue::Num(stream));
                let mut op = NewGpuOp::at(sym, start, end - start, track);
                op.detail.device = dev;
                op.detail.stream = Some(stream);
                op.correlation =
                    b.correlation(0, t.int(row, "correlationid", line)?.unwrap_or(0) as u64);
                b.gpu_op(GpuKind::Memcpy, op).map_err(|m| t.err(line, m))?;
            }
        }
        Ok(())
    }

    /// The API traces' rows by domain: roctx markers, RCCL calls (as CPU ops), HSA (driver) and HIP
    /// (runtime) calls; `pid` where a row names none.
    fn api_rows(&self, b: &mut TraceBuilder, pid: i64) -> Result<()> {
        for t in &self.api_tables {
            for rec in t.records() {
                let (line, row) = rec?;
                let row = &row;
                let domain = t.get(row, "domain").unwrap_or("").to_ascii_uppercase();
                let function = t.get(row, "function").unwrap_or("?");
                let start = t.need(row, "starttimestamp", line)?;
                let end = t.need(row, "endtimestamp", line)?;
                let row_pid = t.int(row, "processid", line)?.unwrap_or(pid);
                let tid = t.int(row, "threadid", line)?.unwrap_or(0);
                let corr = t.int(row, "correlationid", line)?.unwrap_or(0) as u64;
                let sym = b.name(function);
                let track = b.track(IdValue::Num(row_pid), IdValue::Num(tid));
                let res = if domain.starts_with("MARKER") {
                    b.marker(function, start, end, track, "roctx mark")
                } else if domain.starts_with("RCCL") {
                    b.span(SpanKind::CpuOp, Span::at(sym, start, end - start, track))
                } else {
                    let api = if domain.starts_with("HSA") {
                        Api::Driver
                    } else {
                        Api::Runtime
                    };
                    let correlation = b.correlation(0, corr);
                    b.launch(Launch::at(sym, api, start, end - start, track, correlation))
                };
                res.map_err(|m| t.err(line, m))?;
            }
        }
        Ok(())
    }
}
