//! Reading a trace: the entry points, and the five parts they drive.
//!
//! - [`window`]: the refillable input window (one whole top-level value at a time);
//! - [`driver`]: the top-level object and `traceEvents`, refill-and-retry, truncation and salvage;
//! - [`event`]: one event's fields in one pass, and the event categories ([`event::event_kind`]);
//! - [`header`]: the top-level values other than `traceEvents`, kept only where used, with caps;
//! - [`builder`]: the compact model built as events are accepted.

mod builder;
mod driver;
pub(crate) mod event;
mod header;
mod window;

use crate::error::{Error, Result};
use crate::model::Trace;
use crate::native::Sniffed;
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

/// A parsed file: the trace plus facts about the file itself (the format is in
/// [`crate::Header::format`]).
#[derive(Debug)]
pub struct Parsed {
    /// The file as given.
    pub path: PathBuf,
    /// Lowercase hex sha256 of the stored bytes, when asked for.
    pub sha256: Option<String>,
    /// Whether the file was gzip.
    pub gzip: bool,
    /// Bytes of content read: JSON or CSV text (decompressed size for gzip), or the SQLite database.
    pub json_bytes: u64,
    /// The model.
    pub trace: Trace,
}

/// Parses one trace file, of any format read here: Kineto JSON, a Chrome-trace JSON array, rocprofv3
/// JSON or CSV, or (with an SQLite reader installed, see [`crate::native`]) Nsight Systems, rocpd and
/// RPD SQLite — each plain or gzip, told by content, not by name. A directory is read as one
/// process's rocprofv3 CSV files.
///
/// The file is opened through tool-io ([`tool_io::open_input`]): a regular file only (a FIFO is refused
/// instead of blocking), and noted as an input of this run, so that no result of the run replaces it.
pub fn parse_file(path: &Path, opts: &Options) -> Result<Parsed> {
    let io_err = |source| Error::Io {
        file: path.to_path_buf(),
        source,
    };
    if path.is_dir() {
        return crate::native::read_dir(path, opts);
    }
    let mut file = tool_io::open_input(path, "trace").map_err(|e| match e {
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
    let head = read_head(&mut file).map_err(io_err)?;
    let (_, content) = crate::native::detect::head(&head);
    let raw = std::io::Cursor::new(head).chain(file);
    match crate::native::sniff(&content) {
        Sniffed::KinetoObject | Sniffed::Unknown => {
            let input = Input::from_raw(raw, opts.sha256, opts.feed).map_err(io_err)?;
            parse_input(path, input, opts)
        }
        kind => crate::native::read_native(path, kind, raw, opts, Some(path)),
    }
}

/// Parses a trace from the bytes of a file as stored — any format [`parse_file`] reads, plain or
/// gzip, told by content — read from `raw` (a socket, an archive member, memory), exactly as
/// [`parse_file`] reads a file: same feeds, hash and salvage. `name` is used in errors and as
/// [`Parsed::path`]. (A rocprofv3 CSV read this way is its kernel-trace file alone.)
pub fn parse_raw(
    name: &Path,
    mut raw: impl Read + Send + 'static,
    opts: &Options,
) -> Result<Parsed> {
    let io_err = |source| Error::Io {
        file: name.to_path_buf(),
        source,
    };
    let head = read_head(&mut raw).map_err(io_err)?;
    let (_, content) = crate::native::detect::head(&head);
    let raw = std::io::Cursor::new(head).chain(raw);
    match crate::native::sniff(&content) {
        Sniffed::KinetoObject | Sniffed::Unknown => {
            let input = Input::from_raw(raw, opts.sha256, opts.feed).map_err(io_err)?;
            parse_input(name, input, opts)
        }
        kind => crate::native::read_native(name, kind, raw, opts, None),
    }
}

/// The first bytes of a stored stream, for telling its format.
fn read_head(raw: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(crate::native::detect::SNIFF);
    raw.take(crate::native::detect::SNIFF as u64)
        .read_to_end(&mut head)?;
    Ok(head)
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
