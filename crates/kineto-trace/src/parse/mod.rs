//! Reading a trace: the entry points, and the five parts they drive.
//!
//! - [`window`]: the refillable input window (one whole top-level value at a time);
//! - [`driver`]: the top-level object and `traceEvents`, refill-and-retry, truncation and salvage;
//! - [`event`]: one event's fields in one pass, and the event categories ([`event::event_kind`]);
//! - [`header`]: the top-level values other than `traceEvents`, kept only where used, with caps;
//! - [`builder`]: the compact model built as events are accepted.

mod builder;
mod driver;
mod event;
mod header;
mod window;

use crate::error::{Error, Result};
use crate::model::Trace;
use crate::source::{Feed, Input};
use std::io::Read;
use std::path::{Path, PathBuf};

/// How to parse.
#[derive(Debug, Clone)]
pub struct Options {
    /// On a truncated input, keep every complete event before the cut and mark the trace salvaged,
    /// instead of failing.
    pub salvage: bool,
    /// Compute the sha256 of the file as stored (compressed bytes for `.gz`).
    pub sha256: bool,
    /// Where reading, inflating and hashing run.
    pub feed: Feed,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            salvage: false,
            sha256: true,
            feed: Feed::Threaded,
        }
    }
}

/// A parsed file: the trace plus facts about the file itself.
#[derive(Debug)]
pub struct Parsed {
    /// The file as given.
    pub path: PathBuf,
    /// Lowercase hex sha256 of the stored bytes, when asked for.
    pub sha256: Option<String>,
    /// Whether the file was gzip.
    pub gzip: bool,
    /// Bytes of JSON read (decompressed size for gzip).
    pub json_bytes: u64,
    /// The model.
    pub trace: Trace,
}

/// Parses one trace file.
///
/// The file is opened through tool-io ([`tool_io::open_input`]): a regular file only (a FIFO is refused
/// instead of blocking), and noted as an input of this run, so that no result of the run replaces it.
pub fn parse_file(path: &Path, opts: &Options) -> Result<Parsed> {
    let file = tool_io::open_input(path, "trace").map_err(|e| match e {
        tool_io::Error::Input { error, .. } => Error::Io {
            file: path.to_path_buf(),
            source: error,
        },
        tool_io::Error::InputNotRegular { kind, .. } => Error::NotAFile {
            file: path.to_path_buf(),
            message: format!("is {kind}, not a regular file"),
        },
        e => Error::Input(e),
    })?;
    let input = Input::from_raw(file, opts.sha256, opts.feed).map_err(|source| Error::Io {
        file: path.to_path_buf(),
        source,
    })?;
    parse_input(path, input, opts)
}

/// Parses a trace from the bytes of a file as stored — plain JSON or gzip, told by the magic bytes —
/// read from `raw` (a socket, an archive member, memory), exactly as [`parse_file`] reads a file:
/// same feeds, hash and salvage. `name` is used in errors and as [`Parsed::path`].
pub fn parse_raw(name: &Path, raw: impl Read + Send + 'static, opts: &Options) -> Result<Parsed> {
    let input = Input::from_raw(raw, opts.sha256, opts.feed).map_err(|source| Error::Io {
        file: name.to_path_buf(),
        source,
    })?;
    parse_input(name, input, opts)
}

fn parse_input(path: &Path, mut input: Input, opts: &Options) -> Result<Parsed> {
    let gzip = input.gzip;
    let (trace, json_bytes) = parse_reader(path, input.reader(), opts.salvage, gzip)?;
    let sha256 = input.finish().map(|d| crate::source::hex(&d));
    Ok(Parsed {
        path: path.to_path_buf(),
        sha256,
        gzip,
        json_bytes,
        trace,
    })
}

/// Parses JSON text from any reader; `name` is used in errors. Returns the trace and bytes read.
pub fn parse_reader(
    name: &Path,
    reader: &mut dyn Read,
    salvage: bool,
    gzip: bool,
) -> Result<(Trace, u64)> {
    driver::parse(name, reader, salvage, gzip)
}
