//! The one front door for reading a trace: [`parse_file`], [`parse_file_from`] and [`parse_raw`] read the
//! head of the stored stream, tell its format by content ([`detect`]) and hand the whole stream to the
//! reader of that format: the Kineto parser (`crate::parse`) or a vendor reader (`crate::native`), each
//! of which sees only its own format. [`Options`] and [`Parsed`], what every reader is asked and
//! answers, live here.
//!
//! What it is not: a reader of any format, nor of stored bytes: gzip, the sha256 and cut streams are
//! `crate::stored`'s; a vendor reader's rules (and the SQLite reader another crate installs) are
//! `crate::native`'s.

pub mod detect;

use crate::error::{Error, Result};
use crate::model::{Trace, TraceFormat};
use crate::native::{self, rocprof_csv};
use crate::parse::RANGE_BYTES;
use crate::stored::Feed;
use crate::stored::streamed::Streamed;
use crate::stored::whole::{StoredFacts, database_file, read_whole};
use detect::{LOOKED_FOR, Sniffed, read_head, sniff_stored};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
    pub stop: Option<Arc<AtomicBool>>,
    /// Keep every `python_function` event of a Kineto trace (the Python frames a `with_stack` profile
    /// records) in `Trace::python_functions`, for the doctor's "where the host was"; off, the default,
    /// only the frames a step profile needs are kept and the rest counted (a `with_stack` trace has
    /// millions, 32 bytes each in the model).
    pub python_frames: bool,
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
            python_frames: false,
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

impl Parsed {
    /// `trace`, read from `path` whose stored bytes `facts` describes.
    fn of(path: &Path, facts: StoredFacts, trace: Trace) -> Parsed {
        Parsed {
            path: path.to_path_buf(),
            sha256: facts.sha256,
            gzip: facts.gzip,
            json_bytes: facts.content_bytes,
            trace,
        }
    }
}

/// Parses one trace file, of any format read here: Kineto JSON, a Chrome-trace JSON array, rocprofv3
/// JSON or CSV, or (with an SQLite reader installed, see [`crate::native`]) Nsight Systems, rocpd and
/// RPD SQLite, (with an XPlane reader installed) JAX/TensorFlow XPlane protobuf, (with a Perfetto
/// reader installed) Perfetto protobuf — each plain or gzip, told by content, not by name. A directory is read as one
/// process's rocprofv3 CSV files.
///
/// The file is opened through tool-io ([`tool_io::open_input`]): a regular file only (a FIFO is refused
/// instead of blocking), and noted as an input of this run, so that no result of the run replaces it.
pub fn parse_file(path: &Path, opts: &Options) -> Result<Parsed> {
    if path.is_dir() {
        return read_dir(path, opts);
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
    stop: Arc<AtomicBool>,
}

impl<R: Read> Read for Stoppable<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            // Not `ErrorKind::Interrupted`, which readers retry.
            return Err(std::io::Error::other("interrupted"));
        }
        self.inner.read(buf)
    }
}

/// Parses a trace from the bytes of a file as stored — any format [`parse_file`] reads, plain or
/// gzip, told by content — read from `raw` (a socket, an archive member, memory), exactly as
/// [`parse_file`] reads a file: same feeds, hash and salvage. `name` is used in errors and as
/// [`Parsed::path`]. (A rocprofv3 CSV read this way is its one trace table alone.)
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

/// The dispatch: the format told by the stream's head, then the whole stream (head included) to its
/// reader. `file` is the stream's file on disk, when there is one.
fn parse_stored(
    name: &Path,
    mut raw: impl Read + Send + 'static,
    opts: &Options,
    file: Option<&Path>,
) -> Result<Parsed> {
    let head = read_head(&mut raw).map_err(|source| Error::Io {
        file: name.to_path_buf(),
        source,
    })?;
    let kind = sniff_stored(&head);
    let raw = std::io::Cursor::new(head).chain(raw);
    match (kind, file) {
        (Sniffed::KinetoObject | Sniffed::Unknown, _) => {
            crate::parse::parse_kineto(name, raw, opts, stored_len(file))
        }
        (Sniffed::Sqlite, _) => read_sqlite(name, raw, opts, file),
        (Sniffed::Rocprofv3Csv, Some(path)) => read_csv_set(path, opts),
        (Sniffed::XPlane, _) => read_protobuf(name, raw, opts, file, &XPLANE),
        (Sniffed::Perfetto, _) => read_protobuf(name, raw, opts, file, &PERFETTO),
        (Sniffed::Rocprofv3Json | Sniffed::Rocprofv3Csv, _) => {
            read_rocprof_streamed(name, kind, raw, opts, file)
        }
        (kind, _) => read_vendor_content(name, kind, raw, opts, file),
    }
}

/// A vendor's text format read a window at a time: a Chrome-trace array or the legacy rocprof's object.
fn read_vendor_content(
    name: &Path,
    kind: Sniffed,
    raw: impl Read,
    opts: &Options,
    file_on_disk: Option<&Path>,
) -> Result<Parsed> {
    let stored_len = stored_len(file_on_disk);
    let layout = match kind {
        Sniffed::ChromeArray => native::chrome::Layout::Array,
        Sniffed::RocprofLegacyJson => native::chrome::Layout::RocprofObject,
        _ => {
            // Read to its end first, as every format is: a fault of the stored stream wins.
            Streamed::open(name, raw, opts.sha256, stored_len)?.finish()?;
            let message = match kind {
                Sniffed::Rocprofv3CsvNotTrace(what) => format!(
                    "{what}, not a trace by itself: give the trace beside it (its \
                     *kernel_trace.csv, *_api_trace.csv or *memory_copy_trace.csv) or their directory"
                ),
                _ => format!("not a trace this tool reads; looked for {LOOKED_FOR}"),
            };
            return Err(Error::Format {
                file: name.to_path_buf(),
                message,
            });
        }
    };
    let content = Streamed::open(name, raw, opts.sha256, stored_len)?;
    let (trace, facts) =
        native::chrome::read(name, content, layout, (opts.salvage, opts.python_frames))?;
    Ok(Parsed::of(name, facts, trace))
}

/// A protobuf format: its reader, if one is installed, and how to name it when none is.
struct Protobuf {
    reader: fn() -> Option<native::ProtobufRead>,
    /// What the file is.
    what: &'static str,
    /// The format's name.
    format: &'static str,
    /// The feature that builds the reader.
    feature: &'static str,
    /// Whether salvaging keeps what came before a cut (the reader's own stream cut inside a message,
    /// or a gzip stream cut between two).
    salvages: bool,
    /// What salvaging keeps of a file the reader refused, said after its error.
    unsalvaged: &'static str,
}

const XPLANE: Protobuf = Protobuf {
    reader: native::xplane_reader,
    what: "an XPlane protobuf (JAX/TensorFlow)",
    format: "XPlane",
    feature: "xplane",
    salvages: false,
    // The planes of an `XSpace` refer to each other (a GPU op's launch is on the host plane, a
    // plane's events name metadata written after them): the planes before a cut are no trace.
    unsalvaged: "salvaging keeps nothing of an XPlane file that does not decode: its planes are one message",
};

const PERFETTO: Protobuf = Protobuf {
    reader: native::perfetto_reader,
    what: "a Perfetto protobuf trace",
    format: "Perfetto",
    feature: "perfetto",
    salvages: true,
    unsalvaged: "salvaging keeps the packets before a cut, not a file with a packet that does not decode",
};

/// A protobuf reader's syntax error, with what `--salvage` kept when it was asked for.
fn unsalvaged(e: Error, opts: &Options, format: &Protobuf) -> Error {
    match e {
        Error::Syntax {
            file,
            offset,
            message,
        } if opts.salvage => Error::Syntax {
            file,
            offset,
            message: format!("{message} ({})", format.unsalvaged),
        },
        e => e,
    }
}

/// The stored size of the file a stream is read from, when it is one (it sets a gzip's cap, and a
/// large plain Kineto file's blocks in flight).
fn stored_len(file_on_disk: Option<&Path>) -> Option<u64> {
    file_on_disk
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
}

/// rocprofv3 JSON, or a rocprofv3 trace CSV alone (a stream), read as its content streams: the
/// reader keeps its model, not the text. A read or gzip error wins over what the reader made of the
/// content before it, as when the content was read whole first.
fn read_rocprof_streamed(
    name: &Path,
    kind: Sniffed,
    raw: impl Read,
    opts: &Options,
    file_on_disk: Option<&Path>,
) -> Result<Parsed> {
    let mut content = Streamed::open(name, raw, opts.sha256, stored_len(file_on_disk))?;
    let json = kind == Sniffed::Rocprofv3Json;
    let trace = match json {
        true => native::rocprof_json::read(name, &mut content),
        false => rocprof_csv::read_one(name, &mut content),
    };
    let end = content.finish()?;
    // The whole JSON value is needed: a cut one is no trace, salvaged or not.
    if json && end.cut && !opts.salvage {
        return Err(Error::Truncated {
            file: name.to_path_buf(),
            offset: end.facts.content_bytes,
            events: 0,
        });
    }
    Ok(Parsed::of(name, end.facts, trace?))
}

/// A protobuf trace (XPlane, Perfetto) by the reader installed for it
/// ([`native::install_xplane_reader`], [`native::install_perfetto_reader`]), which reads the content as
/// a stream ([`native::ProtobufRead`]). The stored stream's own faults come first, then a cut gzip
/// stream, refused unless salvaging (a protobuf cut between two top-level messages reads as a whole
/// one), then the reader's answer; a file whose stream the reader refused is read again whole by the
/// format's whole-content reader when it has one, so that the error is that reader's.
fn read_protobuf(
    name: &Path,
    raw: impl Read,
    opts: &Options,
    file_on_disk: Option<&Path>,
    format: &Protobuf,
) -> Result<Parsed> {
    let stored_len = stored_len(file_on_disk);
    let mut content = Streamed::open(name, raw, opts.sha256, stored_len)?;
    let reader = (format.reader)();
    let first_look = match (reader.and_then(|r| r.plain), content.is_gzip()) {
        (Some(_), false) => file_on_disk.and_then(|file| first_look_at(file, opts)),
        _ => None,
    };
    let read = reader.map(|r| match (r.plain, first_look) {
        (Some(plain), Some(mut look)) => plain(&mut look, &mut content, name, opts.salvage),
        _ => (r.stream)(&mut content, name, opts.salvage),
    });
    let end = content.finish()?;
    if end.cut && !opts.salvage {
        return Err(Error::Truncated {
            file: name.to_path_buf(),
            offset: end.facts.content_bytes,
            events: 0,
        });
    }
    let (Some(reader), Some(read)) = (reader, read) else {
        return Err(Error::Format {
            file: name.to_path_buf(),
            message: format!(
                "{}; this build reads no {} (it was built without the `{}` feature)",
                format.what, format.format, format.feature
            ),
        });
    };
    let trace = match (read, reader.whole, file_on_disk) {
        (Ok(trace), _, _) => trace,
        (Err(_), Some(whole), Some(path)) => {
            let file = std::fs::File::open(path).map_err(|source| Error::Io {
                file: name.to_path_buf(),
                source,
            })?;
            whole(&read_whole(name, file, false, stored_len)?.bytes, name)
                .map_err(|e| unsalvaged(e, opts, format))?
        }
        (Err(e), _, _) => return Err(unsalvaged(e, opts, format)),
    };
    let trace = cut_stream(trace, &end, name, format)?;
    Ok(Parsed::of(name, end.facts, trace))
}

/// The stored file at `path` opened again for a protobuf reader's first look
/// ([`native::ProtobufRead::plain`]): through tool-io, as the read opened it (a regular file only: a
/// FIFO put at the path since is refused, not waited on), and stopped as the read is
/// ([`Options::stop`]). `None` when it cannot be opened so: the content is then read as a stream.
fn first_look_at(path: &Path, opts: &Options) -> Option<Box<dyn Read>> {
    let file = std::io::BufReader::with_capacity(1 << 16, tool_io::open_input(path, "trace").ok()?);
    Some(match &opts.stop {
        Some(stop) => Box::new(Stoppable {
            inner: file,
            stop: stop.clone(),
        }),
        None => Box::new(file),
    })
}

/// A salvaged read (`end.cut`: the gzip stream ended early) whose content ended between two
/// top-level messages: to its reader a whole file, so it is marked salvaged here, at the end of what
/// inflated; or, for a format whose messages before a cut are no trace, an error.
fn cut_stream(
    mut trace: Trace,
    end: &crate::stored::streamed::Finished,
    name: &Path,
    format: &Protobuf,
) -> Result<Trace> {
    if !end.cut || trace.salvaged.is_some() {
        return Ok(trace);
    }
    let at = end.facts.content_bytes;
    let what = format!("the gzip stream ends early, after {at} bytes of content");
    if !format.salvages {
        return Err(Error::Syntax {
            file: name.to_path_buf(),
            offset: at,
            message: format!("{what} ({})", format.unsalvaged),
        });
    }
    trace.salvaged = Some(crate::model::Salvage {
        cut_offset: at,
        reason: format!("{what}, between two of its {} messages", format.format),
    });
    Ok(trace)
}

/// An SQLite database, by the reader installed ([`native::install_sqlite_reader`]).
fn read_sqlite(
    name: &Path,
    raw: impl Read,
    opts: &Options,
    file_on_disk: Option<&Path>,
) -> Result<Parsed> {
    let Some(read) = native::sqlite_reader() else {
        return Err(Error::Format {
            file: name.to_path_buf(),
            message:
                "an SQLite database (Nsight Systems, rocpd or RPD); this build reads no SQLite \
                      (it was built without the `sqlite` feature)"
                    .into(),
        });
    };
    let db = database_file(name, raw, opts.sha256, file_on_disk)?;
    let trace = read(&db.path, name, db.private_copy)?;
    Ok(Parsed::of(name, db.facts, trace))
}

/// The rocprofv3 CSV set `file` belongs to: its kernel trace (or, in a set without one, `file`) and
/// the files beside it with their prefix.
fn read_csv_set(file: &Path, opts: &Options) -> Result<Parsed> {
    let (trace, facts) = rocprof_csv::read_set(file, opts.sha256)?;
    Ok(Parsed::of(file, facts, trace))
}

/// Reads a directory given as one trace: the rocprofv3 CSV files of one process.
fn read_dir(dir: &Path, opts: &Options) -> Result<Parsed> {
    let sets = rocprof_csv::csv_trace_sets(dir)?;
    match sets.as_slice() {
        [one] => read_csv_set(one, opts),
        [] => Err(Error::Format {
            file: dir.to_path_buf(),
            message:
                "a directory with no rocprofv3 CSV trace (*kernel_trace.csv, *_api_trace.csv, \
                 *memory_copy_trace.csv); give a trace file, or \
                      pass the directory where ranks are read"
                    .into(),
        }),
        many => Err(Error::Format {
            file: dir.to_path_buf(),
            message: format!(
                "a directory of {} processes' rocprofv3 CSV files; give one, or pass the directory \
                 where ranks are read",
                many.len()
            ),
        }),
    }
}

/// The format of a file by its first bytes, for checking that a directory's files agree.
pub(crate) fn format_of_file(path: &Path) -> Result<Option<TraceFormat>> {
    let io_err = |source| Error::Io {
        file: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io_err)?;
    let head = read_head(&mut f).map_err(io_err)?;
    Ok(match sniff_stored(&head) {
        Sniffed::KinetoObject => Some(TraceFormat::Kineto),
        Sniffed::ChromeArray => Some(TraceFormat::ChromeArray),
        Sniffed::RocprofLegacyJson => Some(TraceFormat::RocprofLegacyJson),
        Sniffed::Rocprofv3Json => Some(TraceFormat::Rocprofv3Json),
        Sniffed::Rocprofv3Csv => Some(TraceFormat::Rocprofv3Csv),
        // The three SQLite formats are told apart by their tables; one family for this check.
        Sniffed::Sqlite => Some(TraceFormat::NsysSqlite),
        Sniffed::XPlane => Some(TraceFormat::XPlane),
        Sniffed::Perfetto => Some(TraceFormat::Perfetto),
        Sniffed::Rocprofv3CsvNotTrace(_) | Sniffed::Unknown => None,
    })
}
