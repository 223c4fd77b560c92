//! Streaming parser and compact model of PyTorch-profiler (Kineto) Chrome traces.
//!
//! What it is: a reader for the `.json` / `.json.gz` files `torch.profiler` writes, from the 2021
//! format (`Kernel`/`Runtime` categories, integer absolute microseconds) to the current one (3-decimal
//! relative microseconds with `baseTimeNanoseconds`), for CUDA, ROCm and MTIA captures. It keeps what
//! trace analyses need — kernels, copies, fills, runtime/driver launches, CPU ops, annotations, CPU→GPU
//! flows and the header — in fixed-size records with interned names and integer nanoseconds.
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
pub mod correlate;
mod error;
pub mod family;
pub mod interval;
mod model;
mod parse;
pub mod report;
mod scan;
mod source;
pub mod step;
pub mod summary;
pub mod template;
mod time;

pub use error::{Error, Result};
pub use model::{
    Api, Counts, Flow, FlowPhase, GpuKind, GpuOp, Header, IdValue, Launch, Salvage, Span, SpanKind,
    Sym, Trace, Track, TrackIds, Warning,
};
pub use parse::{Options, Parsed, parse_file, parse_reader};
pub use source::{Feed, hex};
pub use time::{ns_to_us, ns_to_us_string};

use std::path::{Path, PathBuf};

/// Expands the command line's trace arguments: a file stays itself; a directory becomes its trace
/// files (`*.json`, `*.json.gz`, any case of `.pt.trace.json[.gz]`), sorted by name, one per rank in
/// the usual layout.
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
                if path.is_file() && is_trace_name(&path) {
                    found.push(path);
                }
            }
            if found.is_empty() {
                return Err(Error::EmptyDir { dir: p.clone() });
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn is_trace_name(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    name.ends_with(".json") || name.ends_with(".json.gz")
}
