//! Streaming parser and compact model of PyTorch-profiler (Kineto) Chrome traces, and readers of the
//! vendors' own profiler formats into the same model.
//!
//! What it is: a reader for the `.json` / `.json.gz` files `torch.profiler` writes, from the 2021
//! format (`Kernel`/`Runtime` categories, integer absolute microseconds) to the current one (3-decimal
//! relative microseconds with `baseTimeNanoseconds`), for CUDA, ROCm and MTIA captures. It keeps what
//! trace analyses need — kernels, copies, fills, runtime/driver launches, CPU ops, annotations, CPU→GPU
//! flows and the header — in fixed-size records with interned names and integer nanoseconds. The
//! [`native`] module reads rocprofv3 JSON and CSV and Chrome-trace JSON arrays into that model, and is
//! the seam where the `kineto-sqlite` crate plugs in Nsight Systems, rocpd and RPD SQLite.
//!
//! What it is not: a general JSON library, a trace viewer, or anything that knows about GPUs at run
//! time, model shapes or provenance. Those live in other crates of the workspace and build on this one.
//!
//! The key design decision is **event-at-a-time parsing from a refillable window** (see `scan`): the
//! file is never held whole, never turned into a DOM, and each event is decoded in one pass that
//! skips (but still validates) what the model does not keep. Running off the end of the window is an
//! ordinary outcome of every scanning function, so refilling is a retry of one event, and truncation
//! at the end of input is detected exactly where it happens — which is what makes `salvage` possible.
#![deny(missing_docs)]

pub mod analysis;
pub mod budget;
pub mod capture;
pub mod correlate;
mod error;
pub mod family;
pub mod interval;
mod model;
pub mod native;
mod parse;
pub mod profiles;
pub mod ranks;
mod scan;
mod source;
pub mod step;
pub mod summary;
pub mod template;
mod time;
pub mod tokens;
mod words;

pub use error::{Error, Result};
pub use model::{
    Api, Capture, Counts, DeviceProps, Flow, FlowPhase, GRAPH_REPLAY_PREFIX, GemmRows, GpuKind,
    GpuOp, Header, IdValue, Launch, MAX_DEVICES, Overruns, Salvage, Span, SpanKind, Sym, Trace,
    TraceFormat, Track, TrackIds, Warning,
};
pub use parse::{
    Options, Parsed, RANGE_BYTES, parse_file, parse_file_from, parse_raw, parse_reader,
};
pub use source::{Feed, hex};
pub use time::{MAX_ABS_NS, ns_to_us, ns_to_us_string};

use std::path::{Path, PathBuf};

/// Expands the command line's trace arguments: a file stays itself; a directory becomes its trace
/// files, sorted by name, one per rank in the usual layout: `*.json` (any case of
/// `.pt.trace.json`), SQLite exports (`*.sqlite`, `*.sqlite3`, `*.db`, `*.rpd`), each optionally
/// `.gz`, and one rocprofv3 CSV set per process (its `*kernel_trace.csv`; the files beside it with
/// the same prefix are read with it).
///
/// An entry named like a trace that is not a regular file (or a symlink to one) is an error naming it
/// ([`Error::NotAFile`]): a dangling or looping symlink, a directory, a FIFO. Skipping it would drop a
/// rank without a word. The files of one directory must be of one format (told by content;
/// [`Error::MixedFormats`] otherwise): an RPD file beside its `rpd2tracing` JSON is one run twice,
/// not two ranks.
pub fn expand_paths(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in args {
        if p.is_dir() {
            let rd = std::fs::read_dir(p).map_err(|source| Error::Io {
                file: p.clone(),
                source,
            })?;
            let mut found: Vec<PathBuf> = Vec::new();
            for entry in rd {
                let entry = entry.map_err(|source| Error::Io {
                    file: p.clone(),
                    source,
                })?;
                let path = entry.path();
                if is_trace_name(&path) {
                    check_trace_entry(&path)?;
                    found.push(path);
                }
            }
            if found.is_empty() {
                return Err(Error::EmptyDir { dir: p.clone() });
            }
            found.sort();
            check_one_format(p, &found)?;
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Runs `work` on each path on a few worker threads and hands the results to `emit` (on the calling
/// thread) in the order of `paths`, each as soon as it and every earlier one are done.
///
/// Workers take the next path from a shared counter rather than splitting the list in halves (as a
/// parallel iterator does), so results finish nearly in order and few wait for an earlier rank: memory
/// stays at about one trace per worker, however many ranks a run has.
pub fn each_in_order<T: Send>(
    paths: &[PathBuf],
    work: impl Fn(&Path) -> T + Sync,
    mut emit: impl FnMut(T),
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len())
        .max(1);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, work) = (&next, &work);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    if tx.send((i, work(path))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting = std::collections::BTreeMap::new();
        let mut due = 0;
        for (i, r) in rx {
            waiting.insert(i, r);
            while let Some(r) = waiting.remove(&due) {
                emit(r);
                due += 1;
            }
        }
    });
}

/// A directory entry named like a trace must be a regular file, or a symlink to one.
fn check_trace_entry(path: &Path) -> Result<()> {
    let not = |message: String| Error::NotAFile {
        file: path.to_path_buf(),
        message,
    };
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(not(format!(
            "named like a trace but {}",
            if m.is_dir() {
                "a directory"
            } else {
                "not a regular file (a FIFO, socket or device)"
            }
        ))),
        Err(e) => {
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            if !link {
                return Err(Error::Io {
                    file: path.to_path_buf(),
                    source: e,
                });
            }
            let target = std::fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            Err(not(if e.kind() == std::io::ErrorKind::NotFound {
                format!("a symbolic link to {target}, which does not exist")
            } else {
                format!("a symbolic link to {target} that cannot be followed: {e}")
            }))
        }
    }
}

fn is_trace_name(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    [".json", ".sqlite", ".sqlite3", ".db", ".rpd"]
        .iter()
        .any(|ext| name.ends_with(ext))
        || native::is_kernel_trace_name(name)
}

/// The files of one directory are of one format (SQLite exports count as one family here).
fn check_one_format(dir: &Path, files: &[PathBuf]) -> Result<()> {
    let mut first: Option<(&PathBuf, TraceFormat)> = None;
    for f in files {
        let Some(format) = native::format_of_file(f)? else {
            continue;
        };
        match first {
            None => first = Some((f, format)),
            Some((a, fa)) if fa != format => {
                let title = |t: TraceFormat| match t {
                    TraceFormat::NsysSqlite => "an SQLite database".to_string(),
                    t => t.title().to_string(),
                };
                return Err(Error::MixedFormats {
                    dir: dir.to_path_buf(),
                    first: a.clone(),
                    first_format: title(fa),
                    other: f.clone(),
                    other_format: title(format),
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_in_order_emits_in_path_order_whatever_finishes_first() {
        let paths: Vec<PathBuf> = (0..24).map(|i| PathBuf::from(i.to_string())).collect();
        let mut seen = Vec::new();
        each_in_order(
            &paths,
            |p| {
                let i: u64 = p.to_string_lossy().parse().unwrap_or(0);
                // Earlier paths take longer, so later ones finish first.
                std::thread::sleep(std::time::Duration::from_millis(24 - i));
                i
            },
            |i| seen.push(i),
        );
        assert_eq!(seen, (0..24).collect::<Vec<u64>>());
        let mut none = Vec::new();
        each_in_order(&[], |_| 0u8, |x| none.push(x));
        assert!(none.is_empty());
    }
}
