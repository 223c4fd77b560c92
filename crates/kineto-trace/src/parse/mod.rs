//! Reading a trace: the entry points, and the five parts they drive.
//!
//! - [`window`]: the refillable input window (one whole top-level value at a time);
//! - [`driver`]: the top-level object and `traceEvents`, refill-and-retry, truncation and salvage;
//! - [`event`]: one event's fields in one pass, and the event categories ([`event::event_kind`]);
//! - [`header`]: the top-level values other than `traceEvents`, kept only where used, with caps;
//! - [`builder`]: the compact model built as events are accepted;
//! - [`ranges`] and [`blocks`]: one file on every core (ranges of `traceEvents` parsed on workers,
//!   proved and folded in by the serial parser; the input read, inflated and hashed beside them).

mod blocks;
mod builder;
mod driver;
pub(crate) mod event;
mod header;
mod ranges;
mod window;

pub use ranges::RANGE_BYTES;

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
    /// Threads that parse ranges of one Kineto file's `traceEvents` (with [`Feed::Threaded`]; the
    /// reader, the hasher and the serial parser that proves and folds in their ranges run beside
    /// them). `1` is the serial parse alone. `0`, the default, is the machine's available
    /// parallelism shared among the Kineto parses running at that moment in this process, so that
    /// files parsed side by side ([`crate::each_in_order`]) each read serially. Whatever the count,
    /// the result — trace, errors, warnings, salvage — is the serial parse's.
    pub threads: usize,
    /// Bytes per block (and range) of the parallel parse ([`RANGE_BYTES`] by default; tests make
    /// it small so that small files split too).
    pub range_bytes: usize,
    /// Once this flag is set, the file's reads fail ("interrupted") and the parse ends with an error
    /// naming the file: how a host that parses on a worker thread (the Python module, on Ctrl-C) stops
    /// it within one read. `None`: never stopped. Only the file [`parse_file`] opens is watched (not a
    /// rocprofv3 CSV's companion files).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            salvage: false,
            sha256: true,
            feed: Feed::Threaded,
            threads: 0,
            range_bytes: RANGE_BYTES,
            stop: None,
        }
    }
}

/// glibc malloc arenas a program that parses on many threads is held to ([`limit_malloc_arenas`]).
const MALLOC_ARENAS: i32 = 4;

/// Holds glibc's malloc to 4 arenas, unless `MALLOC_ARENA_MAX` in the environment already says how
/// many; elsewhere than Linux with glibc, nothing.
///
/// For a program's `main`, before its threads start: the setting is the whole process's, so a
/// library never calls it on its host's behalf (the Python module does not). Why: glibc gives a new
/// thread an arena of its own while there are fewer than 8 per core, and an arena keeps memory after
/// the ranges parsed in it are folded in: on 16 workers a 310 MB trace's parse peaked at 78–80 MiB,
/// 0.26–0.27 of the file, against 70.4 MiB on 2 workers; with 4 arenas, 72.4–72.7 MiB, 0.245 (MEASURED,
/// `--threads 16 --no-sha256`, 2026-12-06). The workers call malloc about 150 times per MiB of JSON
/// (MEASURED, a uprobe on 2 workers), so four arenas should not be a lock they queue on (ESTIMATED:
/// not measured on 16 cores).
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt takes two integers and changes only the allocator's tuning, which glibc
        // guards itself; it holds no pointer of ours.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}

/// Kineto parses under way in this process, for sharing cores among them (see [`Options::threads`]).
static PARSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts one parse under way while alive.
struct Running;

impl Running {
    fn start() -> Running {
        PARSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        PARSES.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The range workers for this parse: as asked, or the cores shared among the parses under way.
fn range_threads(opts: &Options) -> usize {
    if opts.feed != Feed::Threaded {
        return 1;
    }
    match opts.threads {
        0 => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let running = PARSES.load(std::sync::atomic::Ordering::Relaxed).max(1);
            (cores / running).max(1)
        }
        n => n,
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
    if path.is_dir() {
        return crate::native::read_dir(path, opts);
    }
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
    match &opts.stop {
        Some(stop) => {
            let file = Stoppable {
                inner: file,
                stop: stop.clone(),
            };
            parse_stored(path, file, opts, Some(path))
        }
        None => parse_stored(path, file, opts, Some(path)),
    }
}

/// A reader whose reads fail once `stop` is set ([`Options::stop`]).
struct Stoppable<R> {
    inner: R,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<R: Read> Read for Stoppable<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            // Not `ErrorKind::Interrupted`, which readers retry.
            return Err(std::io::Error::other("interrupted"));
        }
        self.inner.read(buf)
    }
}

/// Parses a trace from the bytes of a file as stored — any format [`parse_file`] reads, plain or
/// gzip, told by content — read from `raw` (a socket, an archive member, memory), exactly as
/// [`parse_file`] reads a file: same feeds, hash and salvage. `name` is used in errors and as
/// [`Parsed::path`]. (A rocprofv3 CSV read this way is its kernel-trace file alone.)
pub fn parse_raw(name: &Path, raw: impl Read + Send + 'static, opts: &Options) -> Result<Parsed> {
    parse_stored(name, raw, opts, None)
}

/// Parses the file at `path` from `raw`, a reader over its bytes as stored that the caller opened (one
/// whose reads it can stop, say): as [`parse_file`] reads it, the files beside it included (a rocprofv3
/// CSV's copy and agent files), which [`parse_raw`] cannot know of.
pub fn parse_file_from(
    path: &Path,
    raw: impl Read + Send + 'static,
    opts: &Options,
) -> Result<Parsed> {
    parse_stored(path, raw, opts, Some(path))
}

fn parse_stored(
    name: &Path,
    mut raw: impl Read + Send + 'static,
    opts: &Options,
    file: Option<&Path>,
) -> Result<Parsed> {
    let io_err = |source| Error::Io {
        file: name.to_path_buf(),
        source,
    };
    let head = read_head(&mut raw).map_err(io_err)?;
    let (_, content) = crate::native::detect::head(&head);
    let raw = std::io::Cursor::new(head).chain(raw);
    match crate::native::sniff(&content) {
        Sniffed::KinetoObject | Sniffed::Unknown => parse_kineto(name, raw, opts),
        kind => crate::native::read_native(name, kind, raw, opts, file),
    }
}

/// The first bytes of a stored stream, for telling its format.
fn read_head(raw: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(crate::native::detect::SNIFF);
    raw.take(crate::native::detect::SNIFF as u64)
        .read_to_end(&mut head)?;
    Ok(head)
}

/// A Kineto trace (or bytes no other reader takes) as stored: serially, or in ranges on every core.
fn parse_kineto(path: &Path, raw: impl Read + Send + 'static, opts: &Options) -> Result<Parsed> {
    let _running = Running::start();
    let threads = range_threads(opts);
    if threads > 1 {
        return ranges::parse(
            path,
            raw,
            opts.salvage,
            opts.sha256,
            threads,
            opts.range_bytes,
        );
    }
    let input = Input::from_raw(raw, opts.sha256, opts.feed).map_err(|source| Error::Io {
        file: path.to_path_buf(),
        source,
    })?;
    parse_input(path, input, opts)
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
