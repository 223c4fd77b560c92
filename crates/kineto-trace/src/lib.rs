//! Streaming parser and compact model of PyTorch-profiler (Kineto) Chrome traces, and readers of the
//! vendors' own profiler formats into the same model.
//!
//! What it is: a reader for the `.json` / `.json.gz` files `torch.profiler` writes, from the 2021
//! format (`Kernel`/`Runtime` categories, integer absolute microseconds) to the current one (3-decimal
//! relative microseconds with `baseTimeNanoseconds`), for CUDA, ROCm and MTIA captures. It keeps what
//! trace analyses need — kernels, copies, fills, runtime/driver launches, CPU ops, annotations, CPU→GPU
//! flows and the header — in fixed-size records with interned names and integer nanoseconds (a GPU op
//! is 48 bytes; what its ops repeat — device, stream, launch shape, bytes — is kept once per distinct
//! value and read with [`Trace::detail`]). The
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
mod category;
pub mod correlate;
mod error;
pub mod family;
pub mod interval;
mod model;
pub mod native;
pub mod notes;
mod parse;
pub mod profiles;
pub mod ranks;
mod read;
mod scan;
pub mod session;
pub mod split;
pub mod step;
mod stored;
mod structural;
pub mod summary;
pub mod template;
mod time;
pub mod tokens;
mod trace_events;
mod words;

pub use error::{Error, Result};
pub use model::{
    Api, Capture, Counts, Detail, DeviceProps, Flow, FlowPhase, GRAPH_REPLAY_PREFIX, GemmRows,
    GpuKind, GpuOp, GpuOpDetail, Header, IdValue, Launch, MAX_DEVICES, NewGpuOp, Overruns,
    RankPart, Reader, Rows, Salvage, Span, SpanKind, Sym, Trace, TraceFormat, Track, TrackIds,
    Warning,
};
pub use parse::{RANGE_BYTES, parse_reader, tune_malloc};
pub use read::{Options, Parsed, parse_file, parse_file_from, parse_raw};
pub use session::{AnalysedTrace, Session, SessionConfig};
pub use stored::{Feed, hex};
pub use time::{MAX_ABS_NS, ns_to_us, ns_to_us_string};

use std::path::{Path, PathBuf};

/// Expands the command line's trace arguments: a file stays itself; a directory becomes its trace
/// files, sorted by name, one per rank in the usual layout: `*.json` (any case of
/// `.pt.trace.json`), SQLite exports (`*.sqlite`, `*.sqlite3`, `*.db`, `*.rpd`), XPlane protobuf
/// (`*.xplane.pb`: a JAX/TensorFlow `plugins/profile/<run>/`, one file per host), Perfetto protobuf
/// (`*.pftrace`, `*.perfetto-trace`), each optionally
/// `.gz`, and one rocprofv3 CSV set per process (its `*kernel_trace.csv`, or for a process traced
/// without kernels its first API or copy trace by name; the files beside it with the same prefix
/// are read with it).
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
            // rocprofv3 CSV traces: one file per process, the others of its set read with it.
            let (csv, mut found): (Vec<PathBuf>, Vec<PathBuf>) = found
                .into_iter()
                .partition(|f| native::is_trace_table_name(&native::lower_name(f)));
            found.extend(native::csv_trace_sets_among(&csv));
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
    native::check_one_read_per_set(&out)?;
    Ok(out)
}

/// Runs `work` on each path on a few worker threads and hands the results to `emit` (on the calling
/// thread) in the order of `paths`, each as soon as it and every earlier one are done.
///
/// Workers take the next path from a shared counter rather than splitting the list in halves (as a
/// parallel iterator does), so results finish nearly in order. Nearly is not a bound: one large or slow
/// file early in the list would let the other workers run on and every result after it wait in memory.
/// So a worker starts path `i` only once fewer than [`IN_ORDER_AHEAD`] × workers results are ahead of the
/// oldest one not yet emitted: at most that many results wait, however many ranks a run has and whatever
/// their sizes.
pub fn each_in_order<T: Send>(
    paths: &[PathBuf],
    work: impl Fn(&Path) -> T + Sync,
    mut emit: impl FnMut(T),
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len())
        .max(1);
    let ahead = IN_ORDER_AHEAD * workers;
    // How many results `emit` has taken; a worker waits on it before starting a path too far ahead.
    let emitted = (Mutex::new(0usize), Condvar::new());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, work, emitted) = (&next, &work, &emitted);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    {
                        // The worker holding the oldest pending path never waits here (i equals the
                        // count emitted), so the run cannot stall. A poisoned lock means the emitting
                        // thread panicked; the scope re-raises that, so the worker just stops waiting.
                        let mut done = emitted.0.lock().unwrap_or_else(|p| p.into_inner());
                        while i >= *done + ahead {
                            done = emitted.1.wait(done).unwrap_or_else(|p| p.into_inner());
                        }
                    }
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
            let before = due;
            while let Some(r) = waiting.remove(&due) {
                emit(r);
                due += 1;
            }
            if due != before {
                *emitted.0.lock().unwrap_or_else(|p| p.into_inner()) = due;
                emitted.1.notify_all();
            }
        }
    });
}

/// How far, in results per worker, [`each_in_order`] lets its workers run ahead of the oldest result not
/// yet emitted.
pub const IN_ORDER_AHEAD: usize = 2;

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
    let name = native::lower_name(p);
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    [
        ".json",
        ".sqlite",
        ".sqlite3",
        ".db",
        ".rpd",
        ".xplane.pb",
        ".pftrace",
        ".perfetto-trace",
    ]
    .iter()
    .any(|ext| name.ends_with(ext))
        || native::is_trace_table_name(name)
}

/// The files of one directory are of one format (SQLite exports count as one family here).
fn check_one_format(dir: &Path, files: &[PathBuf]) -> Result<()> {
    let mut first: Option<(&PathBuf, TraceFormat)> = None;
    for f in files {
        let Some(format) = read::format_of_file(f)? else {
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

    #[test]
    fn each_in_order_holds_a_bounded_number_of_results_behind_a_slow_first_path() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // Path 0 is slow; every other path is instant. Unbounded, the other workers would finish all 200
        // paths while path 0 runs. Counted: results made but not yet emitted, at their largest.
        let paths: Vec<PathBuf> = (0..200).map(|i| PathBuf::from(i.to_string())).collect();
        let (made, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let emitted = std::cell::Cell::new(0usize);
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        each_in_order(
            &paths,
            |p| {
                if p == Path::new("0") {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                made.fetch_add(1, Ordering::SeqCst)
            },
            |_| {
                let pending = made.load(Ordering::SeqCst) - emitted.get();
                peak.fetch_max(pending, Ordering::SeqCst);
                emitted.set(emitted.get() + 1);
            },
        );
        assert_eq!(emitted.get(), 200);
        // At most IN_ORDER_AHEAD × workers paths are started at or after the oldest pending one.
        assert!(
            peak.load(Ordering::SeqCst) <= IN_ORDER_AHEAD * workers.min(200),
            "{} results waited at once ({workers} workers)",
            peak.load(Ordering::SeqCst)
        );
    }
}
