//! The sizes CUDA/HIP graphs were captured at, read from the traces of their capture, so that a step
//! that is one graph replay — which records no ops, hence no shapes — gets its tokens.
//!
//! * **Capture traces.** vLLM's graph-capture profiler (`graph_capture_rank_0.<ts>.pt.trace.json.gz`)
//!   writes one `capture_<num_tokens>_<MODE>` annotation (`capture_<num_tokens>_<prefix>_<MODE>` for a
//!   speculator's graphs) around each captured size; SGLang's per-batch capture traces are named
//!   `…_bs_<bs>_rank<r>.json.gz`. Each stream capture in them — the launch calls between a
//!   `cudaStreamBeginCapture` and its `cudaStreamEndCapture` on one thread — is one graph, of as many
//!   GPU ops as launches were captured.
//! * **`execution_details.json`** (TraceLens's classification of a capture directory):
//!   `[{"file", "batch_size", "mode"}]`, used for a capture trace without a size of its own, or alone
//!   when it names a single size.
//! * **Matching.** A replay's GPU ops (its kernels, copies and fills, all carrying the launch's
//!   correlation id) are counted, and the captures with that many ops give the size when they agree.
//!   Ambiguous or unmatched replays keep no count, and a note says why.

use crate::correlate::{Links, is_graph_launch, is_launch_api};
use crate::error::{Error, Result};
use crate::model::Trace;
use crate::step::{PhaseTokens, StepTokens, Steps};
use crate::tokens::TokenSource;
use regex::Regex;
use std::path::{Path, PathBuf};

/// What a capture's size counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureUnit {
    /// Tokens of the batch (vLLM's `num_tokens`, TraceLens's `batch_size`): the replay's query tokens,
    /// padding included.
    Tokens,
    /// Requests of a decode batch (SGLang's `bs`).
    Requests,
}

/// One captured graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphCapture {
    /// The capture trace (or `execution_details.json` entry) it was read from.
    pub file: String,
    /// The annotation naming it, else the file.
    pub label: String,
    /// The size it was captured at.
    pub size: u64,
    /// What the size counts.
    pub unit: CaptureUnit,
    /// The mode the capture names (`FULL`, `PIECEWISE`), if any.
    pub mode: Option<String>,
    /// Launch calls captured into the graph; `None` when only `execution_details.json` tells.
    pub ops: Option<u64>,
}

/// The graphs of one capture directory.
#[derive(Debug, Clone, Default)]
pub struct GraphCaptures {
    /// The directory.
    pub dir: PathBuf,
    /// The graphs, in file order.
    pub captures: Vec<GraphCapture>,
    /// What was read and what was left (a capture with no size), one line each.
    pub notes: Vec<String>,
}

/// The directory names a server writes its capture traces under, beside the trace: TraceLens's and
/// vLLM's layout, and SGLang's (`$SGLANG_TORCH_PROFILER_DIR/graph_capture_profile`).
pub const CAPTURE_DIRS: &[&str] = &["capture_traces", "graph_capture_profile"];

/// The capture directory beside a trace file, if there is one.
pub fn beside(trace: &Path) -> Option<PathBuf> {
    let dir = trace.parent()?;
    CAPTURE_DIRS
        .iter()
        .map(|d| dir.join(d))
        .find(|d| d.is_dir())
}

fn capture_label() -> Option<Regex> {
    Regex::new(r"^capture_(?P<n>\d+)_(?:[A-Za-z0-9]+_)?(?P<mode>[A-Z][A-Z_]*)$").ok()
}

fn bs_in_name() -> Option<Regex> {
    Regex::new(r"_bs_(?P<n>\d+)(?:_|\.)").ok()
}

/// The graphs one capture trace holds: one per stream capture, sized by the `capture_N_MODE`
/// annotation around it or the file's `_bs_N`; `detail` is the directory's entry for the file.
pub fn in_trace(
    trace: &Trace,
    file: &str,
    detail: Option<(u64, Option<String>)>,
) -> Vec<GraphCapture> {
    let label_re = capture_label();
    let bs_re = bs_in_name();
    let from_file = bs_re
        .as_ref()
        .and_then(|r| r.captures(file))
        .and_then(|c| c["n"].parse::<u64>().ok());
    // Capture sessions: Begin → End on one thread.
    // Decoded whole: a capture directory's files are a graph capture's few calls each.
    let mut calls: Vec<(usize, crate::model::Launch)> = trace.launches.iter().enumerate().collect();
    calls.sort_by_key(|(i, l)| (l.track, l.ts_ns, *i));
    let mut out = Vec::new();
    let mut open: Option<(crate::model::Track, i64, u64)> = None;
    for (_, l) in &calls {
        let name = trace.name(l.name);
        if name.contains("StreamBeginCapture") {
            open = Some((l.track, l.ts_ns, 0));
        } else if name.contains("StreamEndCapture") {
            if let Some((t, begin, ops)) = open.take()
                && t == l.track
            {
                // The innermost `capture_N_MODE` annotation on the thread around the capture.
                let label = trace
                    .user_annotations
                    .iter()
                    .filter(|a| a.track == t && a.ts_ns <= begin && begin < a.end_ns())
                    .filter_map(|a| {
                        let n = trace.name(a.name);
                        let c = label_re.as_ref()?.captures(n)?;
                        Some((
                            a.ts_ns,
                            n.to_string(),
                            c["n"].parse::<u64>().ok()?,
                            c["mode"].to_string(),
                        ))
                    })
                    .max_by_key(|x| x.0);
                let (label, size, unit, mode) = match (label, from_file, &detail) {
                    (Some((_, n, size, mode)), _, _) => (n, size, CaptureUnit::Tokens, Some(mode)),
                    (None, Some(bs), _) => (file.to_string(), bs, CaptureUnit::Requests, None),
                    (None, None, Some((size, mode))) => {
                        (file.to_string(), *size, CaptureUnit::Tokens, mode.clone())
                    }
                    (None, None, None) => continue,
                };
                out.push(GraphCapture {
                    file: file.to_string(),
                    label,
                    size,
                    unit,
                    mode,
                    ops: Some(ops),
                });
            }
        } else if let Some((t, _, ops)) = open.as_mut()
            && *t == l.track
            && is_launch_api(name)
            && !is_graph_launch(name)
        {
            *ops += 1;
        }
    }
    out
}

impl GraphCaptures {
    /// Reads a capture directory: `execution_details.json` if present, and every trace file in it.
    /// A file that cannot be read is an error naming it.
    pub fn read_dir(dir: &Path) -> Result<GraphCaptures> {
        let io = |source| Error::Io {
            file: dir.to_path_buf(),
            source,
        };
        let details_path = dir.join("execution_details.json");
        let details = if details_path.is_file() {
            read_details(&details_path)?
        } else {
            Vec::new()
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                (n.ends_with(".json") || n.ends_with(".json.gz")) && n != "execution_details.json"
            })
            .collect();
        files.sort();
        let mut out = GraphCaptures {
            dir: dir.to_path_buf(),
            ..GraphCaptures::default()
        };
        let opts = crate::Options {
            sha256: false,
            ..crate::Options::default()
        };
        let mut seen: Vec<String> = Vec::new();
        for path in &files {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let detail = details
                .iter()
                .find(|d| d.0 == name)
                .map(|d| (d.1, d.2.clone()));
            let parsed = crate::parse_file(path, &opts)?;
            let found = in_trace(&parsed.trace, &name, detail);
            if found.is_empty() {
                out.notes.push(format!(
                    "{}: no graph capture with a size (no stream capture under a `capture_N_MODE` annotation, no `_bs_N` in the name, no execution_details.json entry)",
                    path.display()
                ));
            }
            out.captures.extend(found);
            seen.push(name);
        }
        // Entries whose trace is not here still say which sizes were captured.
        for (file, size, mode) in details {
            if !seen.contains(&file) {
                out.captures.push(GraphCapture {
                    label: file.clone(),
                    file,
                    size,
                    unit: CaptureUnit::Tokens,
                    mode,
                    ops: None,
                });
            }
        }
        Ok(out)
    }

    /// The capture a replay of `ops` GPU ops is, when the captures say so unambiguously: those of as
    /// many ops, all of one size; or, when no capture counts its ops, the one size they all name.
    pub fn for_replay(&self, ops: u64) -> std::result::Result<&GraphCapture, String> {
        let counted: Vec<&GraphCapture> =
            self.captures.iter().filter(|c| c.ops.is_some()).collect();
        let uncounted = counted.is_empty();
        let cands: Vec<&GraphCapture> = if uncounted {
            self.captures.iter().collect()
        } else {
            counted.into_iter().filter(|c| c.ops == Some(ops)).collect()
        };
        let Some(first) = cands.first() else {
            return Err(format!("no capture of {ops} ops"));
        };
        if cands
            .iter()
            .all(|c| (c.size, c.unit) == (first.size, first.unit))
        {
            Ok(first)
        } else {
            let mut sizes: Vec<u64> = cands.iter().map(|c| c.size).collect();
            sizes.sort_unstable();
            sizes.dedup();
            let sizes = sizes
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            Err(if uncounted {
                format!("captures of sizes {sizes}, with no op counts to tell them apart")
            } else {
                format!("captures of sizes {sizes} all have {ops} ops")
            })
        }
    }

    /// Gives each step without query tokens whose GPU work is one graph replay the size of that
    /// graph's capture; notes say how many steps matched and why the others did not (nothing when
    /// every step has its query tokens already).
    pub fn apply(&self, trace: &Trace, links: &Links, steps: &mut Steps) {
        let mut matched = 0u64;
        let mut unmatched: Vec<String> = Vec::new();
        let mut several = 0u64;
        let mut needed = 0u64;
        for st in &mut steps.steps {
            if st.tokens.and_then(|t| t.query_tokens()).is_some() {
                continue;
            }
            needed += 1;
            let mut calls = trace.launches.reader();
            let mut graphs: Vec<u32> = st
                .kernels
                .iter()
                .filter_map(|&k| links.kernel_launch[k as usize])
                .filter(|&l| is_graph_launch(trace.name(calls.row(l as usize).name)))
                .collect();
            graphs.sort_unstable();
            graphs.dedup();
            match graphs.as_slice() {
                [] => {}
                [l] => {
                    let ops = u64::from(links.launch_gpu_ops[*l as usize]);
                    match self.for_replay(ops) {
                        Ok(c) => {
                            let mut t: StepTokens = st.tokens.unwrap_or_default();
                            match c.unit {
                                CaptureUnit::Tokens => {
                                    let mut p = t.unphased.unwrap_or_default();
                                    p.query_tokens = Some(c.size);
                                    t.unphased = Some(p);
                                }
                                CaptureUnit::Requests => {
                                    let d = t.decode.unwrap_or_default();
                                    t.decode = Some(PhaseTokens {
                                        requests: d.requests.or(Some(c.size)),
                                        ..d
                                    });
                                }
                            }
                            st.tokens = Some(t);
                            st.tokens_from.push(TokenSource::GraphCapture {
                                label: c.label.clone(),
                                size: c.size,
                                ops,
                            });
                            matched += 1;
                        }
                        Err(why) => {
                            if unmatched.len() < 5 {
                                unmatched.push(format!("step {}: {why}", st.index));
                            }
                        }
                    }
                }
                _ => several += 1,
            }
        }
        // The captured sizes may decide a phase the replay alone did not (only a matched capture
        // gave a step tokens: otherwise `find_steps`' inference stands as it is).
        if matched > 0 {
            crate::step::infer_phases(trace, links, &mut steps.steps, steps.profile.as_deref());
        }
        if needed == 0 {
            return;
        }
        let dir = self.dir.display();
        let mut note = format!(
            "graph captures in {dir} ({} graphs): {matched} steps' replay matched a capture",
            self.captures.len()
        );
        if !unmatched.is_empty() {
            note.push_str(&format!("; not matched: {}", unmatched.join("; ")));
        }
        if several > 0 {
            note.push_str(&format!(
                "; {several} steps replay several graphs (piecewise), no size taken"
            ));
        }
        steps.notes.push(note);
        steps.notes.extend(self.notes.iter().cloned());
    }
}

/// `execution_details.json`: (file, batch_size, mode) per entry; an entry without a file or an integer
/// `batch_size` is an error naming its index.
fn read_details(path: &Path) -> Result<Vec<(String, u64, Option<String>)>> {
    let text = tool_io::read_input_string(path, "graph capture details", tool_io::caps::CONFIG)?;
    let bad = |message: String| Error::Captures {
        file: path.to_path_buf(),
        message,
    };
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let list = v
        .as_array()
        .ok_or_else(|| bad("expected a list of {file, batch_size, mode}".to_string()))?;
    let mut out = Vec::new();
    for (i, e) in list.iter().enumerate() {
        let file = e
            .get("file")
            .and_then(|f| f.as_str())
            .ok_or_else(|| bad(format!("entry {i}: no \"file\" string")))?;
        // TraceLens writes `null` when it could not infer the size: such a capture has none.
        match e.get("batch_size") {
            Some(serde_json::Value::Null) | None => continue,
            Some(b) => {
                let size = b
                    .as_u64()
                    .ok_or_else(|| bad(format!("entry {i}: \"batch_size\" is not an integer")))?;
                let mode = e.get("mode").and_then(|m| m.as_str()).map(str::to_string);
                out.push((file.to_string(), size, mode));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_execution_details_name_the_entry() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let details = dir.path().join("execution_details.json");
        for (text, want) in [
            ("{", "not JSON"),
            (r#"{"file": "a"}"#, "expected a list"),
            (r#"[{"batch_size": 8}]"#, "entry 0: no \"file\" string"),
            (
                r#"[{"file": "a", "batch_size": 8}, {"file": "b", "batch_size": "8"}]"#,
                "entry 1: \"batch_size\" is not an integer",
            ),
        ] {
            std::fs::write(&details, text).unwrap_or_else(|e| panic!("{e}"));
            let e = GraphCaptures::read_dir(dir.path())
                .err()
                .map(|e| e.to_string());
            let e = e.unwrap_or_default();
            assert!(
                e.contains("execution_details.json") && e.contains(want),
                "{text}: {e}"
            );
        }
        // A `null` size is TraceLens's "could not infer": no capture, no error.
        std::fs::write(
            &details,
            r#"[{"file": "a", "batch_size": null, "mode": "FULL"}]"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let c = GraphCaptures::read_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.captures.is_empty());
        // Entries alone: one size is every replay's; two sizes name neither.
        std::fs::write(
            &details,
            r#"[{"file": "a", "batch_size": 32, "mode": "FULL"}]"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let c = GraphCaptures::read_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.for_replay(421).map(|c| c.size), Ok(32));
        std::fs::write(
            &details,
            r#"[{"file": "a", "batch_size": 32}, {"file": "b", "batch_size": 64}]"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let c = GraphCaptures::read_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let e = c.for_replay(421).map(|c| c.size).unwrap_err();
        assert!(e.contains("sizes 32, 64"), "{e}");
        // A capture trace that is not a trace is that file's error.
        std::fs::write(dir.path().join("graph_capture_rank_0.json"), "not json")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = GraphCaptures::read_dir(dir.path())
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("graph_capture_rank_0.json")),
            "{e:?}"
        );
    }
}
