//! The result: its data and its JSON form (the seed's keys and nesting). Written through tool-io; the human
//! summary is the `kl1-bandwidth` binary's.
//!
//! ```text
//! { "type": "kl1-bandwidth",
//!   "constants": { … },
//!   "windows": { "<window>": { "<cell:capture>": { "kind": "decode",
//!                                                  "ranks": { "0": { "file_sha256", "steps", "rows_hist",
//!                                                                    "mean", "per_step", …,
//!                                                                    "steps_dropped" } } } } },
//!   "skipped": { "<window>": ["<label>", …] } }
//! ```

use std::collections::BTreeMap;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::Error;
use crate::captures::CaptureKind;

/// The output's `type`.
pub const TYPE: &str = "kl1-bandwidth";

/// One rank of one capture.
#[derive(Debug, Clone, PartialEq)]
pub struct RankReport {
    /// The rank.
    pub rank: u64,
    /// The trace file, relative to the window, as the manifest gives it.
    pub file: String,
    /// Its sha256 (checked against the manifest).
    pub file_sha256: String,
    /// Steps analysed (the length of `per_step`).
    pub steps: usize,
    /// How many analysed steps had each row count, ascending rows.
    pub rows_hist: Vec<(u64, u64)>,
    /// The mean of every per-step key over the analysed steps that have it (e.g. a reconstruct shape only
    /// some steps launch). The seed counted a missing key as 0; see `docs/kl1-bandwidth.md`.
    pub mean: BTreeMap<String, f64>,
    /// For each key of `mean` that some analysed steps lack, how many steps have it (a key not listed is in
    /// every step).
    pub mean_steps: BTreeMap<String, u64>,
    /// One flat row per analysed step.
    pub per_step: Vec<BTreeMap<String, f64>>,
    /// The index of each analysed step (from its annotation), parallel to `per_step`.
    pub step_index: Vec<u64>,
    /// Kernels not launched inside any step annotation, and their total time.
    pub kernels_outside_steps: u64,
    /// Their total duration, ms.
    pub kernels_outside_steps_ms: f64,
    /// Kernels of the analysed steps that started before an earlier kernel on their stream ended
    /// (programmatic dependent launch; counted, never merged).
    pub same_stream_overlaps: u64,
    /// Step markers of the capture's kind not analysed, by reason ([`crate::steps::DropReason::as_str`]):
    /// the last step of the trace, a step whose next marker has no kernels, a marker with no kernels.
    pub steps_dropped: BTreeMap<String, u64>,
}

/// One capture of one window.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureReport {
    /// `cell:capture`.
    pub label: String,
    /// What it was analysed for.
    pub kind: CaptureKind,
    /// Its ranks, ascending.
    pub ranks: Vec<RankReport>,
}

/// One window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowReport {
    /// The window's directory name.
    pub name: String,
    /// Its known captures, in the table's order.
    pub captures: Vec<CaptureReport>,
    /// Labels in its manifest the analysis does not know.
    pub skipped: Vec<String>,
}

/// The whole result.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The constants block (spec-derived bytes, bandwidths and every key's label).
    pub constants: serde_json::Value,
    /// The windows, in the order given.
    pub windows: Vec<WindowReport>,
}

struct RowsHist<'a>(&'a [(u64, u64)]);

impl Serialize for RowsHist<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Ascending by rows as numbers (a string-keyed map would sort "10" before "2").
        s.collect_map(self.0.iter().map(|(r, n)| (r.to_string(), n)))
    }
}

impl Serialize for RankReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("file_sha256", &self.file_sha256)?;
        m.serialize_entry("steps", &self.steps)?;
        m.serialize_entry("rows_hist", &RowsHist(&self.rows_hist))?;
        m.serialize_entry("mean", &self.mean)?;
        m.serialize_entry("mean_steps", &self.mean_steps)?;
        m.serialize_entry("per_step", &self.per_step)?;
        m.serialize_entry("file", &self.file)?;
        m.serialize_entry("step_index", &self.step_index)?;
        m.serialize_entry("kernels_outside_steps", &self.kernels_outside_steps)?;
        m.serialize_entry("kernels_outside_steps_ms", &self.kernels_outside_steps_ms)?;
        m.serialize_entry("same_stream_overlaps", &self.same_stream_overlaps)?;
        m.serialize_entry("steps_dropped", &self.steps_dropped)?;
        m.end()
    }
}

struct Ranks<'a>(&'a [RankReport]);

impl Serialize for Ranks<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|r| (r.rank.to_string(), r)))
    }
}

impl Serialize for CaptureReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("kind", self.kind.as_str())?;
        m.serialize_entry("ranks", &Ranks(&self.ranks))?;
        m.end()
    }
}

struct Captures<'a>(&'a [CaptureReport]);

impl Serialize for Captures<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|c| (c.label.as_str(), c)))
    }
}

struct Windows<'a>(&'a [WindowReport]);

impl Serialize for Windows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(
            self.0
                .iter()
                .map(|w| (w.name.as_str(), Captures(&w.captures))),
        )
    }
}

struct Skipped<'a>(&'a [WindowReport]);

impl Serialize for Skipped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|w| (w.name.as_str(), &w.skipped)))
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("type", TYPE)?;
        m.serialize_entry("constants", &self.constants)?;
        m.serialize_entry("windows", &Windows(&self.windows))?;
        m.serialize_entry("skipped", &Skipped(&self.windows))?;
        m.end()
    }
}

/// The first number in `v` that is not finite, as a JSON path. (`serde_json` holds only finite numbers,
/// but a `Value` built from an `f64` NaN becomes `null`; checking the source numbers is done where they are
/// made, and this is the last guard on the assembled constants.)
fn first_non_finite(v: &serde_json::Value, path: &str) -> Option<String> {
    match v {
        serde_json::Value::Number(n) => n
            .as_f64()
            .filter(|x| !x.is_finite())
            .map(|_| path.to_string()),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| first_non_finite(x, &format!("{path}[{i}]"))),
        serde_json::Value::Object(o) => o
            .iter()
            .find_map(|(k, x)| first_non_finite(x, &format!("{path}.{k}"))),
        _ => None,
    }
}

impl Report {
    /// Checks every number is finite: per-step rows were checked as they were made (with the step named);
    /// this catches the means and the constants.
    pub fn check_finite(&self) -> Result<(), Error> {
        if let Some(p) = first_non_finite(&self.constants, "constants") {
            return Err(Error::Output {
                reason: format!("`{p}` is not a finite number"),
            });
        }
        for w in &self.windows {
            for c in &w.captures {
                for r in &c.ranks {
                    let bad = r
                        .mean
                        .iter()
                        .find(|(_, v)| !v.is_finite())
                        .map(|(k, v)| (format!("mean.{k}"), *v))
                        .or_else(|| {
                            r.per_step.iter().enumerate().find_map(|(i, row)| {
                                row.iter()
                                    .find(|(_, v)| !v.is_finite())
                                    .map(|(k, v)| (format!("per_step[{i}].{k}"), *v))
                            })
                        });
                    if let Some((field, value)) = bad {
                        return Err(Error::Output {
                            reason: format!(
                                "window {} {} rank {}: `{field}` is {value}, not a finite number",
                                w.name, c.label, r.rank
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The JSON text, pretty-printed, ending in a newline. Fails on a non-finite number.
    pub fn to_json(&self) -> Result<String, Error> {
        self.check_finite()?;
        let mut s = serde_json::to_string_pretty(self).map_err(|e| Error::Output {
            reason: e.to_string(),
        })?;
        s.push('\n');
        Ok(s)
    }

    /// Writes the JSON to a claimed result file (tool-io: atomic, mode from the umask or the replaced file's,
    /// fsynced). Fails on a non-finite number, naming the window, capture, rank and key. Returns where the
    /// bytes went (beside the name when a file appeared there during the run; see [`tool_io::Written`]).
    pub fn write(&self, claim: &tool_io::Claim) -> Result<tool_io::Written, Error> {
        self.check_finite()?;
        Ok(claim.write_json(self)?)
    }
}
