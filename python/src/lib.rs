//! The native half of the `kineto_trace` Python module: parses Kineto traces with `kineto-trace`,
//! analyses them as `kineto` does, and hands tables to Python as Arrow C streams (the Arrow PyCapsule
//! interface), which pyarrow, polars and DuckDB import without copying the columns.
//!
//! What it is: a thin binding. The tables' columns are `kineto-tables`' column lists, made Arrow batches by
//! `kineto-parquet` (one schema for the CLI, the Parquet files and the Python tables; `docs/tables.md`),
//! the analysis is `kineto-trace`'s.
//! What it is not: the Python API users call; `python/kineto_trace/__init__.py` wraps these functions
//! into `read`, `read_ranks` and `Trace` with pyarrow tables.

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::SchemaRef;
use kineto_parquet::{Analysed, Table, fill_table, table_schema, top_batches};
use kineto_trace::analysis::{GroupBy, KernelGroup, top_tables};
use kineto_trace::summary::Summary;
use kineto_trace::{AnalysedTrace, Session, SessionConfig};
use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pyo3::create_exception!(
    kineto_trace,
    TraceError,
    PyException,
    "A trace could not be read. `path` names the file, `offset` the byte of the JSON text where the \
     fault is (decompressed bytes for .gz; None when not known)."
);

/// A parse error as a Python exception carrying the file and byte offset, as the CLI prints them.
fn trace_error(py: Python<'_>, e: kineto_trace::Error) -> PyErr {
    use kineto_trace::Error as E;
    let (path, offset): (Option<&Path>, Option<u64>) = match &e {
        E::Io { file, .. } | E::NotAFile { file, .. } | E::Captures { file, .. } => {
            (Some(file), None)
        }
        E::Gzip { file, offset, .. }
        | E::Syntax { file, offset, .. }
        | E::Event { file, offset, .. }
        | E::Truncated { file, offset, .. } => (Some(file), Some(*offset)),
        E::EmptyDir { dir } | E::MixedFormats { dir, .. } => (Some(dir), None),
        E::Format { file, .. } | E::Native { file, .. } | E::Limit { file, .. } => {
            (Some(file), None)
        }
        E::SeveralRanks { path, .. } => (Some(path), None),
        // Two traces of one rank (the rank rule of `kineto_trace::ranks`): the second is named.
        E::SameRank { second, .. } => (Some(second), None),
        // A rule file or step pattern is the caller's argument, not a trace: a ValueError.
        E::Rules { .. } | E::StepPattern { .. } | E::Input(_) => {
            return PyValueError::new_err(e.to_string());
        }
    };
    let err = TraceError::new_err(e.to_string());
    let value = err.value(py);
    // The name's exact bytes, as `os.fsdecode` gives them (never replacement characters for bytes that are not
    // UTF-8): `path` opens the file again.
    let path = path.map(Path::as_os_str);
    if let Err(set) = value
        .setattr("path", path)
        .and_then(|()| value.setattr("offset", offset))
    {
        return set;
    }
    err
}

/// The session of one call: `kineto budget`'s `--salvage`, `--rules`, `--step-pattern`, `--whole-trace`;
/// once `stop` is set, a parse under way fails at its next read.
fn session(
    salvage: bool,
    rules: Option<PathBuf>,
    step_pattern: Option<String>,
    whole_trace: bool,
    stop: &Arc<AtomicBool>,
) -> kineto_trace::Result<Session> {
    Session::new(SessionConfig {
        rules,
        step_pattern,
        whole_trace,
        parse: kineto_trace::Options {
            salvage,
            sha256: false,
            stop: Some(stop.clone()),
            ..kineto_trace::Options::default()
        },
        ..SessionConfig::default()
    })
}

/// Reads and analyses one trace through the session.
fn load(session: &Session, path: &Path) -> kineto_trace::Result<NativeTrace> {
    session.open(path).map(|t| NativeTrace { t })
}

/// Reads and analyses one trace file as the ranks it holds (one per process and GPU of a file of
/// several: [`Session::open_ranks`]).
fn load_ranks(session: &Session, path: &Path) -> kineto_trace::Result<Vec<NativeTrace>> {
    Ok(session
        .open_ranks(path)?
        .into_iter()
        .map(|t| NativeTrace { t })
        .collect())
}

/// Runs `work` on a helper thread with the GIL released, while this thread checks for signals every
/// 50 ms: Ctrl-C raises its `KeyboardInterrupt` at once, not when every trace is parsed. Signals are only
/// seen on the main thread, as Python delivers them there.
///
/// On Ctrl-C the work is told to stop and is not waited for: a parse stops at its next read, but a format
/// read whole before it is parsed (a rocprofv3 CSV set, an SQLite export) checks no flag while it is parsed,
/// and a 40 MB CSV kept Ctrl-C waiting 2.4 s (issue 42). So the work owns what it uses (`'static`), ends on
/// its own thread, and its result is dropped there.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce(&Arc<AtomicBool>) -> T + Send + 'static,
) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    py.detach(|| {
        release_freed_memory();
        let (done_tx, done) = std::sync::mpsc::channel::<T>();
        let stop_for_work = stop.clone();
        std::thread::Builder::new()
            .name("kineto_trace read".into())
            .spawn(move || {
                // The caller may have gone (Ctrl-C): the result is then dropped here.
                let _ = done_tx.send(work(&stop_for_work));
            })
            .map_err(|e| {
                PyRuntimeError::new_err(format!("could not start a thread to read: {e}"))
            })?;
        let tick = std::time::Duration::from_millis(50);
        loop {
            match done.recv_timeout(tick) {
                Ok(out) => return Ok(out),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
                // The sender went without sending: the work panicked.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(PyRuntimeError::new_err("a worker thread panicked"));
                }
            }
        }
    })
}

/// Hands the pages that freed memory holds back to the system (glibc's `malloc_trim`), before a call
/// parses more. An interpreter reads batch after batch of traces; what a dropped batch freed stays in
/// the malloc arenas of the threads that parsed it, and the next batch did not reuse all of it, so peak
/// RSS grew batch by batch (batches of 64 ranks: 842, 1,064, 1,185, 1,219 MiB; with the trim 837, 846,
/// 849, 849 MiB, docs/scale.md). The CLIs need none of this: they exit after one read.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only returns free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// One parsed and analysed trace.
#[pyclass(frozen, module = "kineto_trace._native")]
struct NativeTrace {
    t: AnalysedTrace,
}

/// Record batches not yet handed to Python: taken once by `__arrow_c_stream__`.
#[pyclass(frozen, module = "kineto_trace._native")]
struct ArrowStream {
    batches: Mutex<Option<(SchemaRef, Vec<RecordBatch>)>>,
}

impl ArrowStream {
    fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> ArrowStream {
        ArrowStream {
            batches: Mutex::new(Some((schema, batches))),
        }
    }
}

#[pymethods]
impl ArrowStream {
    /// The Arrow PyCapsule stream protocol. The batches move into the consumer; a second call is an
    /// error. A requested schema is ignored, as the protocol allows: the schema is the table's.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        drop(requested_schema);
        let taken = self
            .batches
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a thread failed while holding this stream"))?
            .take();
        let (schema, batches) =
            taken.ok_or_else(|| PyValueError::new_err("this Arrow stream was already consumed"))?;
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        // The capsule holds the struct itself: a consumer reads it through the capsule pointer and
        // moves it out (its release set to null), so dropping it here afterwards releases nothing.
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

fn arrow_err(e: kineto_parquet::Error) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

#[pymethods]
impl NativeTrace {
    /// The file as given: its exact bytes, as `os.fsdecode` gives them.
    #[getter]
    fn path(&self) -> &std::ffi::OsStr {
        self.t.parsed.path.as_os_str()
    }

    /// `distributedInfo.rank`, or None.
    #[getter]
    fn rank(&self) -> Option<u64> {
        self.t.parsed.trace.header.rank
    }

    /// `distributedInfo.world_size`, or None.
    #[getter]
    fn world_size(&self) -> Option<u64> {
        self.t.parsed.trace.header.world_size
    }

    /// Kernels in the trace: the first rows of the `gpu_ops` table, which lists kernels, then copies,
    /// then fills.
    #[getter]
    fn kernel_count(&self) -> usize {
        self.t.parsed.trace.kernels.len()
    }

    /// Whether the file was cut short and only the complete events before the cut were kept.
    #[getter]
    fn salvaged(&self) -> bool {
        self.t.parsed.trace.salvaged.is_some()
    }

    /// One of the per-trace tables (`gpu_ops`, `steps`, `budget`, `families`, `annotations`) as an
    /// Arrow stream; built with the GIL released.
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<ArrowStream> {
        let (table, schema) = exported_schema(name)?;
        let batches = py.detach(|| {
            let file = self.t.file();
            let a = Analysed::of(&file, &self.t);
            let mut out = Vec::new();
            fill_table(
                table,
                &a,
                kineto_parquet::Limits::default().batch_rows,
                &mut |b| {
                    out.push(b);
                    Ok(())
                },
            )
            .map(|_| out)
        });
        Ok(ArrowStream::new(schema, batches.map_err(arrow_err)?))
    }

    /// Kernels grouped by `name`, `family` or `bucket`, most total time first, over the whole trace
    /// or per step (`kineto top [--per-step]`); the first `n` groups of each (all when `None`).
    #[pyo3(signature = (by, per_step, n=None))]
    fn top(
        &self,
        py: Python<'_>,
        by: &str,
        per_step: bool,
        n: Option<usize>,
    ) -> PyResult<ArrowStream> {
        let by = match by {
            "name" => GroupBy::Name,
            "family" => GroupBy::Family,
            "bucket" => GroupBy::Bucket,
            other => {
                return Err(PyValueError::new_err(format!(
                    "by = `{other}`: expected `name`, `family` or `bucket`"
                )));
            }
        };
        let batches = py.detach(|| {
            let tables: Vec<(Option<u32>, Vec<KernelGroup>)> = top_tables(
                self.t.trace(),
                &self.t.analysis,
                self.t.rules(),
                by,
                per_step,
            )
            .into_iter()
            .map(|(step, mut g)| {
                g.truncate(n.unwrap_or(usize::MAX));
                (step.map(|i| i as u32), g)
            })
            .collect();
            top_batches(&self.t.file(), self.rank(), &tables)
        });
        Ok(ArrowStream::new(
            kineto_parquet::schema_of(kineto_tables::top_columns()),
            batches.map_err(arrow_err)?,
        ))
    }

    /// `kineto summary --json` of this trace.
    fn summary_json(&self) -> PyResult<String> {
        serde_json::to_string(&Summary::of(&self.t.parsed))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }
}

/// Parses and analyses one trace.
#[pyfunction]
#[pyo3(signature = (path, salvage=false, rules=None, step_pattern=None, whole_trace=false))]
fn read(
    py: Python<'_>,
    path: PathBuf,
    salvage: bool,
    rules: Option<PathBuf>,
    step_pattern: Option<String>,
    whole_trace: bool,
) -> PyResult<NativeTrace> {
    interruptible(py, move |stop| {
        session(salvage, rules, step_pattern, whole_trace, stop).and_then(|s| load(&s, &path))
    })?
    .map_err(|e| trace_error(py, e))
}

/// Parses and analyses every trace under `paths` (files, or directories of per-rank traces), in
/// parallel with the GIL released; returns them in the order of the expanded paths. One unreadable
/// trace fails the call: a rank is never dropped silently. Two traces of one rank fail it too (the
/// rank rule, `kineto_trace::ranks`); ranks that look like other runs are warned about
/// (`RuntimeWarning`). Ctrl-C stops it between files and inside a parse.
#[pyfunction]
#[pyo3(signature = (paths, salvage=false, rules=None, step_pattern=None, whole_trace=false))]
fn read_ranks(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    salvage: bool,
    rules: Option<PathBuf>,
    step_pattern: Option<String>,
    whole_trace: bool,
) -> PyResult<Vec<NativeTrace>> {
    let (traces, warnings) = interruptible(py, move |stop| {
        let session = session(salvage, rules, step_pattern, whole_trace, stop)?;
        let files = session.expand(&paths)?;
        let mut out = Vec::with_capacity(files.len());
        let mut first_err = None;
        // Once one trace failed the call (or Ctrl-C stopped it), the traces not yet started are not parsed
        // for nothing.
        let failed = AtomicBool::new(false);
        session.each(
            &files,
            |p| {
                if failed.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                    return None;
                }
                let r = load_ranks(&session, p);
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                Some(r)
            },
            |r| match r {
                Some(Ok(ranks)) => out.extend(ranks),
                Some(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                None => {}
            },
        );
        if let Some(e) = first_err {
            return Err(e);
        }
        let warnings = Session::check_ranks(out.iter().map(|t: &NativeTrace| &t.t.parsed))?;
        Ok((out, warnings))
    })?
    .map_err(|e| trace_error(py, e))?;
    for w in warnings {
        let msg = std::ffi::CString::new(w.to_string().replace('\0', " "))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        PyErr::warn(
            py,
            py.get_type::<pyo3::exceptions::PyRuntimeWarning>().as_any(),
            &msg,
            1,
        )?;
    }
    Ok(traces)
}

/// The Arrow schema of one of the per-trace tables (`gpu_ops`, `steps`, `budget`, `families`,
/// `annotations`), as a stream of no batches: the columns `table()` gives, without a trace.
#[pyfunction]
fn schema(name: &str) -> PyResult<ArrowStream> {
    let schema = exported_schema(name)?.1;
    Ok(ArrowStream::new(schema, Vec::new()))
}

/// The trace files `paths` name, as `kineto` and `read_ranks` expand them (a directory → its rank
/// files, sorted; a directory without one, or of mixed formats, is an error). Each is its exact bytes, as
/// `os.fsdecode` gives them (as `os.listdir` of a str does), never a lossy rendering.
#[pyfunction]
fn expand_paths(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Vec<std::ffi::OsString>> {
    Session::new(SessionConfig::default())
        .and_then(|s| s.expand(&paths))
        .map(|v| v.into_iter().map(PathBuf::into_os_string).collect())
        .map_err(|e| trace_error(py, e))
}

/// A table `table()` and `schema()` make, by name, with its Arrow schema.
fn exported_schema(name: &str) -> PyResult<(Table, SchemaRef)> {
    let exported = |t: &Table| Table::EXPORTED.contains(t);
    Table::from_name(name)
        .filter(exported)
        .and_then(|t| table_schema(t).map(|s| (t, s)))
        .ok_or_else(|| {
            let names: Vec<&str> = Table::EXPORTED.iter().map(|t| t.name()).collect();
            PyValueError::new_err(format!("no table `{name}`; tables: {}", names.join(", ")))
        })
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Nsight Systems, rocpd and RPD SQLite, JAX/TensorFlow XPlane and Perfetto, as `kineto` reads them.
    kineto_sqlite::install();
    kineto_xplane::install();
    kineto_perfetto::install();
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(read_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(expand_paths, m)?)?;
    m.add_class::<NativeTrace>()?;
    m.add_class::<ArrowStream>()?;
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SCHEMA_VERSION", kineto_parquet::SCHEMA_VERSION)?;
    let tables: Vec<&str> = Table::EXPORTED.iter().map(|t| t.name()).collect();
    m.add("TABLES", tables)?;
    Ok(())
}
