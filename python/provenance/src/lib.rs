//! The native half of the `kl1_provenance` Python module: the `provenance` crate's record, started and
//! finished from a Python benchmark.
//!
//! What it is: a thin binding. The probes, the GPU monitor, the verdict, the record's JSON and the claimed
//! result file are the crate's (and `tool-io`'s); Python hands over only what only the interpreter knows —
//! its own and torch's versions, the script's repository — as [`provenance::InterpreterVersions`] and
//! [`provenance::Provenance::repo_dir`]. Every blocking call (`start`, `finish`, writing a claim) runs with
//! the GIL released, and no Python code ever runs on the monitor's threads: they are the crate's own.
//! What it is not: the API users call; `python/provenance/kl1_provenance/__init__.py` wraps these into
//! `Provenance` and `claim_output`.

use provenance::gpu_monitor::{self, BackendChoice, GpuSelection};
use provenance::{Claim, InterpreterVersions, Probe, Provenance, Running};
use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

pyo3::create_exception!(
    kl1_provenance,
    OutputError,
    PyException,
    "A result file could not be claimed or written. `path` names the file; the message says why (it exists, \
     another run holds its name, it is not a regular file, a number in the value is not finite, …)."
);

/// A `tool-io` error as [`OutputError`] with `path` set to the file it names: its exact bytes, as `os.fsdecode`
/// gives them (a name that is not UTF-8 keeps its bytes as surrogates, never replacement characters).
fn output_error(py: Python<'_>, path: &std::path::Path, e: impl std::fmt::Display) -> PyErr {
    let err = OutputError::new_err(e.to_string());
    if let Err(set) = err.value(py).setattr("path", path.as_os_str()) {
        return set;
    }
    err
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A Python value as JSON, keys in the order the dict holds them (a result written through a claim keeps
/// the order the script built it in). Numbers are kept as given, NaN and infinity included: the crate's and
/// tool-io's own checks refuse those, naming where they are, so the rule has one home.
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl serde::Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Int(i) => s.serialize_i64(*i),
            Json::UInt(u) => s.serialize_u64(*u),
            Json::Float(x) => s.serialize_f64(*x),
            Json::Str(t) => s.serialize_str(t),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut m = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// The deepest a field's value may nest lists and dicts. The record holds its fields at its top level, so a
/// record nests one level more; its readers (`provenance show` and `diff`, serde_json's) read 127 levels, and
/// 100 leaves room for the record inside a result file (`{"provenance": record}`). docs/provenance.md.
const FIELD_MAX_DEPTH: usize = 100;

/// The deepest a result written by `Claim.write_json` may nest lists and dicts: the deepest serde_json, the
/// reader of every tool here, reads. docs/provenance.md.
const RESULT_MAX_DEPTH: usize = 127;

/// Why a Python value cannot become JSON, and where in it (a path from the value's name).
enum NotJson {
    /// An integer beyond 64 bits: JSON as written here would round it.
    BigInt { path: String, text: String },
    /// A key that is not a string, or a value of another type.
    Type { path: String, what: String },
    /// Lists and dicts nested deeper than `limit`.
    TooDeep { path: String, limit: usize },
    /// A list or dict that holds itself (at any depth): endless as JSON.
    Cycle { path: String },
}

/// `path` cut to its first 80 characters, for a message: a path 100 levels deep is long, and its start says
/// which value it is.
fn path_shown(path: &str) -> String {
    match path.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &path[..cut]),
        None => path.to_owned(),
    }
}

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotJson::BigInt { path, text } => write!(
                f,
                "{path}: the integer {text} does not fit 64 bits and would be rounded; pass it as a string"
            ),
            NotJson::Type { path, what } => write!(
                f,
                "{path}: {what} is not JSON (give str, int, float, bool, None, or lists and dicts of them)"
            ),
            NotJson::TooDeep { path, limit } => write!(
                f,
                "{}: lists and dicts nested more than {limit} deep; at most {limit} are accepted here \
                 (docs/provenance.md)",
                path_shown(path)
            ),
            NotJson::Cycle { path } => write!(
                f,
                "{}: a list or dict that contains itself is not JSON (it would never end)",
                path_shown(path)
            ),
        }
    }
}

impl NotJson {
    /// As a Python exception: `TypeError` for a value of another type, `ValueError` for a big integer, a
    /// value nested too deep or one that contains itself.
    fn into_py(self) -> PyErr {
        match self {
            NotJson::Type { .. } => PyTypeError::new_err(self.to_string()),
            NotJson::BigInt { .. } | NotJson::TooDeep { .. } | NotJson::Cycle { .. } => {
                PyValueError::new_err(self.to_string())
            }
        }
    }
}

fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr().map(|r| r.to_string()).unwrap_or_default()
}

/// A Python value as [`Json`]: dicts with string keys, lists and tuples, strings, integers that fit 64 bits,
/// floats, booleans and None (subclasses too: numpy's float64 is a float). Anything else is refused naming
/// where it is (`path`, as `$.runs[1].tps`), so a field or result is never written as something other than
/// what was given. Lists and dicts nested deeper than `max_depth`, or holding themselves, are refused too:
/// the conversion recurses once per level, so the bound is also what keeps it (and serialising and dropping
/// the result) within the native stack, where a 20,000-deep list crashed the interpreter.
fn to_json(obj: &Bound<'_, PyAny>, path: &str, max_depth: usize) -> Result<Json, NotJson> {
    JsonWalk {
        max_depth,
        open: Vec::new(),
    }
    .value(obj, path)
}

/// One conversion's state: the lists and dicts being converted, outermost first (their addresses: a value
/// met again among them holds itself).
struct JsonWalk {
    max_depth: usize,
    open: Vec<usize>,
}

impl JsonWalk {
    fn value(&mut self, obj: &Bound<'_, PyAny>, path: &str) -> Result<Json, NotJson> {
        let not_json = |what: String| NotJson::Type {
            path: path.to_owned(),
            what,
        };
        if obj.is_none() {
            return Ok(Json::Null);
        }
        // bool before int: a Python bool is an int.
        if let Ok(b) = obj.cast::<PyBool>() {
            return Ok(Json::Bool(b.is_true()));
        }
        if obj.is_instance_of::<PyInt>() {
            if let Ok(i) = obj.extract::<i64>() {
                return Ok(Json::Int(i));
            }
            if let Ok(u) = obj.extract::<u64>() {
                return Ok(Json::UInt(u));
            }
            return Err(NotJson::BigInt {
                path: path.to_owned(),
                text: repr(obj),
            });
        }
        if obj.is_instance_of::<PyFloat>() {
            return obj
                .extract::<f64>()
                .map(Json::Float)
                .map_err(|_| not_json(format!("the float {}", repr(obj))));
        }
        if let Ok(s) = obj.cast::<PyString>() {
            return s
                .extract::<String>()
                .map(Json::Str)
                .map_err(|_| not_json("a string that is not valid Unicode".to_owned()));
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            self.enter(obj, path)?;
            // Taken before any of it is converted: a key's `__repr__` (run for an error) cannot change the
            // dict while it is walked.
            let pairs: Vec<_> = d.iter().collect();
            let mut entries = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                let key: String = k
                    .extract()
                    .map_err(|_| not_json(format!("the key {}", repr(&k))))?;
                let inner = self.value(&v, &format!("{path}.{key}"))?;
                entries.push((key, inner));
            }
            self.open.pop();
            return Ok(Json::Object(entries));
        }
        // The items as the list or tuple holds them, not through `__iter__`, which a subclass may make endless.
        let items = if let Ok(l) = obj.cast::<PyList>() {
            l.iter().collect::<Vec<_>>()
        } else if let Ok(t) = obj.cast::<PyTuple>() {
            t.iter().collect()
        } else {
            let type_name = obj
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            return Err(not_json(format!("a {type_name} ({})", repr(obj))));
        };
        self.enter(obj, path)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.push(self.value(item, &format!("{path}[{i}]"))?);
        }
        self.open.pop();
        Ok(Json::Array(out))
    }

    /// Opens the list or dict `obj` at `path`: refused when it is one of those it is inside, or one level too
    /// deep.
    fn enter(&mut self, obj: &Bound<'_, PyAny>, path: &str) -> Result<(), NotJson> {
        let id = obj.as_ptr() as usize;
        if self.open.contains(&id) {
            return Err(NotJson::Cycle {
                path: path.to_owned(),
            });
        }
        if self.open.len() == self.max_depth {
            return Err(NotJson::TooDeep {
                path: path.to_owned(),
                limit: self.max_depth,
            });
        }
        self.open.push(id);
        Ok(())
    }
}

/// `(value, reason)` from Python as a probe: a value, or the reason there is none.
fn probe<T>(value: Option<T>, reason: Option<String>, what: &str) -> Probe<T> {
    match value {
        Some(v) => Probe::Value(v),
        None => Probe::unavailable(reason.unwrap_or_else(|| format!("{what}: not given"))),
    }
}

/// One record: set up and started by [`start`], ended by `finish`.
#[pyclass(frozen, module = "kl1_provenance._native")]
struct Recording {
    running: Mutex<Option<Running>>,
}

impl Drop for Recording {
    fn drop(&mut self) {
        // Dropped unfinished (the Python object collected): the monitor is stopped on a thread of its own, so
        // the interpreter, which holds the GIL while it collects, does not wait for the stop.
        let running = self
            .running
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(running) = running {
            std::thread::spawn(move || drop(running));
        }
    }
}

#[pymethods]
impl Recording {
    /// Adds a user field during the run (`ValueError` for one of the record's own keys or a non-finite number).
    fn field(&self, key: String, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = to_json(value, &key, FIELD_MAX_DEPTH).map_err(NotJson::into_py)?;
        let mut guard = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let running = guard
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("the record is finished"))?;
        running.field(key, v).map_err(value_error)
    }

    /// GPU samples the monitor has taken so far (all GPUs together).
    fn gpu_samples(&self) -> usize {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map_or(0, Running::gpu_samples)
    }

    /// Stops the monitor, reads `after`, judges, and returns the record as JSON text (keys in the documented
    /// order). `interrupted`: what interrupted the region, if something did. The GIL is released meanwhile.
    #[pyo3(signature = (interrupted=None))]
    fn finish(&self, py: Python<'_>, interrupted: Option<String>) -> PyResult<String> {
        let running = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut running =
            running.ok_or_else(|| PyRuntimeError::new_err("the record is finished already"))?;
        py.detach(move || {
            if let Some(why) = interrupted {
                running.mark_interrupted(why);
            }
            let record = running.finish();
            serde_json::to_string(&record)
        })
        .map_err(value_error)
    }
}

/// Sets up a record and starts it: the static part, `before`, then the GPU monitor, with the GIL released.
///
/// `versions` and `reasons` are the interpreter's: `python`, `torch`, `cuda`, `cudnn` (a value, or None with
/// the reason in `reasons`), and `gpu_name` when the interpreter has torch to ask (absent from both: the
/// record's `gpu_name` is the first GPU in use's).
#[pyfunction]
#[pyo3(signature = (*, interval_ms, fields, versions, reasons, repo_dir=None, backend=None, gpus=None,
    nvidia_smi=None, windows_load=true))]
#[allow(clippy::too_many_arguments)]
fn start(
    py: Python<'_>,
    interval_ms: u64,
    fields: &Bound<'_, PyDict>,
    versions: &Bound<'_, PyDict>,
    reasons: &Bound<'_, PyDict>,
    repo_dir: Option<PathBuf>,
    backend: Option<String>,
    gpus: Option<String>,
    nvidia_smi: Option<PathBuf>,
    windows_load: bool,
) -> PyResult<Recording> {
    gpu_monitor::check_interval_ms(interval_ms).map_err(PyValueError::new_err)?;
    let text = |key: &str| -> PyResult<(Option<String>, Option<String>)> {
        let value = match versions.get_item(key)? {
            Some(v) if !v.is_none() => Some(v.str()?.extract::<String>()?),
            _ => None,
        };
        let reason = match reasons.get_item(key)? {
            Some(r) if !r.is_none() => Some(r.str()?.extract::<String>()?),
            _ => None,
        };
        Ok((value, reason))
    };
    let (python, why) = text("python")?;
    let python = probe(python, why, "python");
    let (torch, why) = text("torch")?;
    let torch = probe(torch, why, "torch");
    let (cuda, why) = text("cuda")?;
    let cuda = probe(cuda, why, "cuda");
    let cudnn_value = match versions.get_item("cudnn")? {
        Some(v) if !v.is_none() => Some(v.extract::<u64>().map_err(|_| {
            PyTypeError::new_err(format!(
                "cudnn: expected torch.backends.cudnn.version()'s integer, got {}",
                v.repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?),
        _ => None,
    };
    let (_, why) = text("cudnn")?;
    let cudnn = probe(cudnn_value, why, "cudnn");
    let gpu_name = match text("gpu_name")? {
        (None, None) => None,
        (value, why) => Some(probe(value, why, "gpu_name")),
    };

    let mut config = Provenance::new().monitor().clone();
    config.interval_ms = interval_ms;
    if let Some(b) = backend {
        config.backend = b.parse::<BackendChoice>().map_err(value_error)?;
    }
    if let Some(g) = gpus {
        config.gpus = g.parse::<GpuSelection>().map_err(value_error)?;
    }
    if nvidia_smi.is_some() {
        config.nvidia_smi = nvidia_smi;
    }
    let mut prov = Provenance::new()
        .monitor_config(config)
        .windows_load(windows_load)
        .interpreter(InterpreterVersions {
            python,
            torch,
            cuda,
            cudnn,
            gpu_name,
        });
    if let Some(dir) = repo_dir {
        prov = prov.repo_dir(dir);
    }
    for (k, v) in fields.iter() {
        let key: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("field names are strings"))?;
        let value = to_json(&v, &key, FIELD_MAX_DEPTH).map_err(NotJson::into_py)?;
        prov = prov.field(key, value).map_err(value_error)?;
    }
    let running = py.detach(move || prov.start());
    Ok(Recording {
        running: Mutex::new(Some(running)),
    })
}

/// Checks a user field as the record will (`ValueError` for one of the record's own keys or NaN, `TypeError`
/// for a value that is not JSON), so a bad field fails where it is given, not at `start()`.
#[pyfunction]
fn check_field(key: String, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let v = to_json(value, &key, FIELD_MAX_DEPTH).map_err(NotJson::into_py)?;
    Provenance::new()
        .field(key, v)
        .map(drop)
        .map_err(value_error)
}

/// A result file reserved before the work (`tool_io::Claim`): held until this object is collected.
#[pyclass(frozen, module = "kl1_provenance._native")]
struct NativeClaim {
    claim: Claim,
}

#[pymethods]
impl NativeClaim {
    /// The claimed path, absolute.
    #[getter]
    fn path(&self) -> PathBuf {
        self.claim.path().to_owned()
    }

    /// Writes `data` atomically (temporary file beside it, fsync, rename); returns where it went (beside
    /// the name when a file appeared there meanwhile, which is kept).
    fn write_bytes(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<PathBuf> {
        let claim = &self.claim;
        py.detach(|| claim.write_bytes(&data))
            .map(|w| w.path().to_owned())
            .map_err(|e| output_error(py, claim.path(), e))
    }

    /// Writes `value` as pretty JSON (refusing NaN and infinity with their path), atomically.
    fn write_json(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
        // Nothing is written when the value is not JSON: the error names the file and where in the value.
        let v = to_json(value, "$", RESULT_MAX_DEPTH).map_err(|e| {
            output_error(
                py,
                self.claim.path(),
                format!("{}: {e}; nothing was written", self.claim.path().display()),
            )
        })?;
        let claim = &self.claim;
        py.detach(|| claim.write_json(&v))
            .map(|w| w.path().to_owned())
            .map_err(|e| output_error(py, claim.path(), e))
    }
}

/// Reserves a result file before the work: an existing file is refused unless `overwrite`, anything but a
/// regular file always, a name another run holds too. Raises [`OutputError`] naming the file; touches
/// nothing it refuses.
#[pyfunction]
#[pyo3(signature = (path, overwrite=false))]
fn claim_output(py: Python<'_>, path: PathBuf, overwrite: bool) -> PyResult<NativeClaim> {
    // The error's `path` is the file the message names: absolute, as the claim makes it.
    let given = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
    py.detach(move || provenance::claim_output(&path, overwrite))
        .map(|claim| NativeClaim { claim })
        .map_err(|e| output_error(py, &given, e))
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(start, m)?)?;
    m.add_function(wrap_pyfunction!(claim_output, m)?)?;
    m.add_function(wrap_pyfunction!(check_field, m)?)?;
    m.add_class::<Recording>()?;
    m.add_class::<NativeClaim>()?;
    m.add("OutputError", m.py().get_type::<OutputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SCHEMA_VERSION", provenance::SCHEMA_VERSION)?;
    m.add("RESERVED_KEYS", provenance::RESERVED_KEYS.to_vec())?;
    Ok(())
}
