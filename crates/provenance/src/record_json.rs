//! Reading records as JSON: the accessors `provenance diff` and `provenance show` share.
//!
//! Records are read as JSON rather than as [`crate::Record`] so that records of older schema versions and the
//! Python tool's records (whose keys this crate kept) are read too: a missing key is simply "unknown".

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

use crate::{Error, RESERVED_KEYS};

/// Reads a record file as JSON (a regular file of at most [`tool_io::caps::RECORD`] bytes). Accepts a record at the top level or under a `provenance` key (how a benchmark
/// usually embeds it in its result file).
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let p = dir.path().join("result.json");
/// std::fs::write(&p, r#"{"tokens_per_s": 1.5, "provenance": {"time_utc": "t", "git": {}}}"#)?;
/// let r = provenance::record_json::read_record(&p)?;
/// assert_eq!(r["time_utc"], "t");
/// assert!(provenance::record_json::read_record(std::path::Path::new("/dev/zero")).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_record(path: &Path) -> Result<Value, Error> {
    record_of(path, read_json(path)?)
}

/// The JSON of a record's file (a record, or a result holding one), read as [`read_record`] reads it:
/// regular files only, capped (a FIFO must not hang `show`, nor `/dev/zero` grow without bound).
pub fn read_json(path: &Path) -> Result<Value, Error> {
    let text = tool_io::read_input(path, "record", tool_io::caps::RECORD)?;
    serde_json::from_slice(&text).map_err(|e| Error::NotARecord {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// The record in `v`, the JSON of `path` ([`read_json`]): `v` itself, or the `provenance` a result holds;
/// refused when it is neither, or of a schema this build does not know.
pub fn record_of(path: &Path, v: Value) -> Result<Value, Error> {
    let v = match v {
        Value::Object(mut m)
            if !m.contains_key("time_utc") && m.get("provenance").is_some_and(Value::is_object) =>
        {
            m.remove("provenance").unwrap_or(Value::Null)
        }
        other => other,
    };
    if !v.is_object() {
        return Err(Error::NotARecord {
            path: path.to_owned(),
            message: "not a JSON object".to_owned(),
        });
    }
    if v.get("time_utc").is_none() && v.get("git").is_none() {
        return Err(Error::NotARecord {
            path: path.to_owned(),
            message: "no time_utc or git key: neither a provenance record nor a result holding one"
                .to_owned(),
        });
    }
    check_schema_version(path, &v)?;
    Ok(v)
}

/// A record of a schema this build does not know is refused, not read as if it were one it knows: its
/// keys may mean other things. No `schema_version` is a record from before the version was written (read
/// as version 1, whose keys it has).
fn check_schema_version(path: &Path, v: &Value) -> Result<(), Error> {
    let Some(version) = v.get("schema_version") else {
        return Ok(());
    };
    let refuse = |message: String| {
        Err(Error::NotARecord {
            path: path.to_owned(),
            message,
        })
    };
    match version.as_u64() {
        Some(n) if n >= 1 && n <= u64::from(crate::SCHEMA_VERSION) => Ok(()),
        Some(n) if n > u64::from(crate::SCHEMA_VERSION) => refuse(format!(
            "schema_version {n}: written by a newer provenance (this one reads versions 1 to {})",
            crate::SCHEMA_VERSION
        )),
        _ => refuse(format!(
            "schema_version {version}: not a schema version (a whole number from 1)"
        )),
    }
}

/// Whether a record holds nothing a comparison could read: no key but its times and version, or only
/// empty values (`"git": {}`). Two such records compared say nothing about a changed number, so a diff of
/// them is refused rather than passed.
pub fn holds_nothing_to_compare(v: &Value) -> bool {
    fn empty(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::Object(m) => m.values().all(empty),
            Value::Array(a) => a.iter().all(empty),
            Value::String(s) => s.is_empty(),
            _ => false,
        }
    }
    v.as_object().is_none_or(|m| {
        m.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "time_utc" | "finished_utc" | "schema_version"))
            .all(|(_, v)| empty(v))
    })
}

/// The value at `path` (object keys, or array indices written as numbers); `null` reads as absent.
///
/// ```
/// use provenance::record_json::{at, num, text};
/// let r = serde_json::json!({"during": {"gpus": [{"n_samples": 5}]}, "git": {"commit": null}});
/// assert_eq!(num(&r, &["during", "gpus", "0", "n_samples"]), Some(5.0));
/// assert_eq!(at(&r, &["git", "commit"]), None);
/// assert_eq!(text(at(&r, &["git", "commit"])), "unknown");
/// ```
pub fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = match cur {
            Value::Object(m) => m.get(*key)?,
            Value::Array(a) => a.get(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    (!cur.is_null()).then_some(cur)
}

/// The number at `path`, if there is one.
pub fn num(v: &Value, path: &[&str]) -> Option<f64> {
    at(v, path)?.as_f64()
}

/// A value for display: strings bare, everything else as compact JSON, absent as `unknown`.
pub fn text(v: Option<&Value>) -> String {
    match v {
        None => "unknown".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Per-GPU summaries of `during`: this crate's `during.gpus[]`, or the seed's flat single-GPU summary.
pub fn during_gpus(r: &Value) -> Vec<(String, &Value)> {
    let Some(d) = at(r, &["during"]) else {
        return Vec::new();
    };
    if let Some(Value::Array(gpus)) = d.get("gpus") {
        return by_index(gpus);
    }
    if d.get("n_samples").is_some() {
        vec![("0".to_owned(), d)]
    } else {
        Vec::new()
    }
}

/// Identity entries of the GPUs in use (`gpus[]`), by index.
pub fn identity_gpus(r: &Value) -> Vec<(String, &Value)> {
    match at(r, &["gpus"]) {
        Some(Value::Array(gpus)) => by_index(gpus),
        _ => Vec::new(),
    }
}

/// Per-GPU objects keyed by their `index` field (their position when it is missing), so that the
/// same GPU is compared across records even when the lists differ in order or length.
pub fn by_index(gpus: &[Value]) -> Vec<(String, &Value)> {
    gpus.iter()
        .enumerate()
        .map(|(i, g)| {
            let key = g
                .get("index")
                .map_or_else(|| i.to_string(), |x| text(Some(x)));
            (key, g)
        })
        .collect()
}

/// The raised verdict flags as `(flag, evidence)`.
pub fn flags(r: &Value) -> Vec<(String, String)> {
    match at(r, &["verdict", "flags"]) {
        Some(Value::Array(fs)) => fs
            .iter()
            .map(|f| {
                (
                    text(f.get("flag")),
                    f.get("evidence").map(|e| text(Some(e))).unwrap_or_default(),
                )
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Top-level keys of the Python tool's record that name software versions (written by ours too when a Python
/// interpreter gives them: [`crate::InterpreterVersions`]).
pub const PYTHON_VERSION_KEYS: [&str; 4] = crate::INTERPRETER_KEYS;

/// The user's own top-level fields.
pub fn user_fields(r: &Value) -> BTreeSet<String> {
    match r {
        Value::Object(m) => m
            .keys()
            .filter(|k| !RESERVED_KEYS.contains(&k.as_str()))
            .cloned()
            .collect(),
        _ => BTreeSet::new(),
    }
}
