//! The vendors' own profiler formats, read into the same [`Trace`] the Kineto parser fills, so that
//! every analysis works on them unchanged.
//!
//! - [`detect`]: which format a file is, by content (SQLite header, JSON shape, CSV header), gzip or not;
//! - [`builder`]: [`TraceBuilder`], the one way a reader fills the model (also used by the SQLite
//!   readers of the `kineto-sqlite` crate);
//! - `chrome`: Chrome-trace JSON arrays (`rpd2tracing` and other converters);
//! - `rocprof_json`, `rocprof_csv`: rocprofv3's JSON and CSV outputs;
//! - [`names`]: kernel names demangled and without AMD's `.kd` suffixes.
//!
//! The SQLite formats (Nsight Systems, rocpd, RPD) need the SQLite library, which lives in its own
//! crate so that a build without it stays possible: that crate installs its reader here once
//! ([`install_sqlite_reader`]) and [`crate::parse_file`] hands SQLite files to it. A build that never
//! installs one reports an SQLite file as a format this build does not read.

pub mod builder;
mod chrome;
pub mod detect;
pub mod names;
mod rocprof_csv;
mod rocprof_json;
mod rocprof_legacy;

pub use builder::{TraceBuilder, overruns};
pub use detect::{LOOKED_FOR, Sniffed, sniff, sniff_stored};
pub use names::{KernelNames, demangle, kernel_name};
pub(crate) use rocprof_csv::{csv_trace_sets, is_kernel_trace_name};

use crate::error::{Error, Result};
use crate::model::{Trace, TraceFormat};
use crate::parse::{Options, Parsed};
use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A reader of SQLite trace databases: `db` is a file SQLite can open (a temporary copy for gzip or
/// streamed input), `shown_as` names the trace in errors. It tells Nsight Systems, rocpd and RPD
/// apart by their tables and returns the trace with [`crate::Header::format`] set.
pub type SqliteRead = fn(db: &Path, shown_as: &Path) -> Result<Trace>;

static SQLITE: OnceLock<SqliteRead> = OnceLock::new();

/// Installs the SQLite reader (the `kineto-sqlite` crate's `install()` calls this). The first one
/// installed stays; later calls are ignored.
pub fn install_sqlite_reader(read: SqliteRead) {
    let _ = SQLITE.set(read);
}

/// Whether this process can read SQLite traces.
pub fn sqlite_reader_installed() -> bool {
    SQLITE.get().is_some()
}

/// A native file's stored bytes as read: content (inflated when gzip), whether it was gzip, the
/// sha256 of the stored bytes, and whether a gzip stream ended early.
struct Content {
    bytes: Vec<u8>,
    gzip: bool,
    sha256: Option<String>,
    cut_gzip: bool,
}

struct Hashing<R> {
    inner: R,
    hasher: Option<Sha256>,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// Reads a whole stored stream (hashing it as stored, inflating gzip). `stored_len`, the file's size when
/// known, sizes the buffer of a plain file once (growing it by doubling held up to 1.5× the text, and
/// both buffers while it moved).
fn read_content(
    name: &Path,
    raw: impl Read,
    hash: bool,
    stored_len: Option<u64>,
) -> Result<Content> {
    let io_err = |source| Error::Io {
        file: name.to_path_buf(),
        source,
    };
    let mut r = Hashing {
        inner: raw,
        hasher: hash.then(Sha256::new),
    };
    let mut magic = Vec::with_capacity(2);
    (&mut r).take(2).read_to_end(&mut magic).map_err(io_err)?;
    let gzip = magic == [0x1f, 0x8b];
    let mut bytes = Vec::new();
    let mut cut_gzip = false;
    let mut r = if gzip {
        let mut d = MultiGzDecoder::new(io::Cursor::new(magic).chain(r));
        match d.read_to_end(&mut bytes) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => cut_gzip = true,
            Err(e) => {
                return Err(Error::Gzip {
                    file: name.to_path_buf(),
                    offset: bytes.len() as u64,
                    message: e.to_string(),
                });
            }
        }
        d.into_inner().into_inner().1
    } else {
        bytes = magic;
        if let Some(n) = stored_len.and_then(|n| usize::try_from(n).ok()) {
            // One byte more, so that read_to_end sees the end without growing the buffer.
            bytes.reserve_exact((n + 1).saturating_sub(bytes.len()));
        }
        r.read_to_end(&mut bytes).map_err(io_err)?;
        r
    };
    // A cut gzip is hashed to the end of what is stored, like the Kineto path.
    io::copy(&mut r, &mut io::sink()).map_err(io_err)?;
    let sha256 = r.hasher.map(|h| crate::source::hex(&h.finalize()));
    Ok(Content {
        bytes,
        gzip,
        sha256,
        cut_gzip,
    })
}

/// Reads a native file whose first bytes said `kind` (not Kineto); `raw` is the whole stored stream.
pub(crate) fn read_native(
    name: &Path,
    kind: Sniffed,
    raw: impl Read,
    opts: &Options,
    file_on_disk: Option<&Path>,
) -> Result<Parsed> {
    if kind == Sniffed::Sqlite {
        return read_sqlite(name, raw, opts, file_on_disk);
    }
    if kind == Sniffed::Rocprofv3Csv
        && let Some(path) = file_on_disk
    {
        return rocprof_csv::read(path, opts);
    }
    let stored_len = file_on_disk
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.len());
    let mut c = read_content(name, raw, opts.sha256, stored_len)?;
    let json_bytes = c.bytes.len() as u64;
    let trace = match kind {
        Sniffed::ChromeArray => chrome::read(
            name,
            &c.bytes,
            chrome::Layout::Array,
            c.cut_gzip,
            opts.salvage,
        )?,
        Sniffed::RocprofLegacyJson => chrome::read(
            name,
            &c.bytes,
            chrome::Layout::RocprofObject,
            c.cut_gzip,
            opts.salvage,
        )?,
        Sniffed::Rocprofv3Json => {
            if c.cut_gzip && !opts.salvage {
                return Err(Error::Truncated {
                    file: name.to_path_buf(),
                    offset: c.bytes.len() as u64,
                    events: 0,
                });
            }
            rocprof_json::read(name, std::mem::take(&mut c.bytes))?
        }
        Sniffed::Rocprofv3Csv => rocprof_csv::read_one(name, &c.bytes)?,
        _ => {
            return Err(Error::Format {
                file: name.to_path_buf(),
                message: format!("not a trace this tool reads; looked for {LOOKED_FOR}"),
            });
        }
    };
    Ok(Parsed {
        path: name.to_path_buf(),
        sha256: c.sha256,
        gzip: c.gzip,
        json_bytes,
        trace,
    })
}

fn read_sqlite(
    name: &Path,
    mut raw: impl Read,
    opts: &Options,
    file_on_disk: Option<&Path>,
) -> Result<Parsed> {
    let Some(read) = SQLITE.get() else {
        return Err(Error::Format {
            file: name.to_path_buf(),
            message:
                "an SQLite database (Nsight Systems, rocpd or RPD); this build reads no SQLite \
                      (it was built without the `sqlite` feature)"
                    .into(),
        });
    };
    let io_err = |source| Error::Io {
        file: name.to_path_buf(),
        source,
    };
    let mut magic = Vec::with_capacity(2);
    (&mut raw).take(2).read_to_end(&mut magic).map_err(io_err)?;
    let gzip = magic == [0x1f, 0x8b];
    let mut raw = Hashing {
        inner: io::Cursor::new(magic).chain(raw),
        hasher: opts.sha256.then(Sha256::new),
    };
    // A plain file is opened where it is (read-only); anything else is copied to a temporary file.
    let (db, size, _tmp): (PathBuf, u64, Option<tempfile::TempPath>) = match file_on_disk {
        Some(p) if !gzip => {
            let size = io::copy(&mut raw, &mut io::sink()).map_err(io_err)?;
            (p.to_path_buf(), size, None)
        }
        _ => {
            let mut tmp = tempfile::Builder::new()
                .prefix("kineto-sqlite-")
                .tempfile()
                .map_err(io_err)?;
            let size = if gzip {
                let mut d = MultiGzDecoder::new(&mut raw);
                io::copy(&mut d, tmp.as_file_mut()).map_err(|e| Error::Gzip {
                    file: name.to_path_buf(),
                    offset: 0,
                    message: format!("{e} (an SQLite database cannot be read from a cut gzip)"),
                })?
            } else {
                io::copy(&mut raw, tmp.as_file_mut()).map_err(io_err)?
            };
            io::copy(&mut raw, &mut io::sink()).map_err(io_err)?;
            tmp.as_file_mut().flush().map_err(io_err)?;
            let path = tmp.into_temp_path();
            (path.to_path_buf(), size, Some(path))
        }
    };
    let sha256 = raw.hasher.map(|h| crate::source::hex(&h.finalize()));
    let trace = read(&db, name)?;
    Ok(Parsed {
        path: name.to_path_buf(),
        sha256,
        gzip,
        json_bytes: size,
        trace,
    })
}

/// Reads a directory given as one trace: the rocprofv3 CSV files of one process.
pub(crate) fn read_dir(dir: &Path, opts: &Options) -> Result<Parsed> {
    let sets = csv_trace_sets(dir)?;
    match sets.as_slice() {
        [one] => rocprof_csv::read(one, opts),
        [] => Err(Error::Format {
            file: dir.to_path_buf(),
            message:
                "a directory with no rocprofv3 CSV (*kernel_trace.csv); give a trace file, or \
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
    let mut f = std::fs::File::open(path).map_err(|source| Error::Io {
        file: path.to_path_buf(),
        source,
    })?;
    let mut raw = Vec::with_capacity(detect::SNIFF);
    (&mut f)
        .take(detect::SNIFF as u64)
        .read_to_end(&mut raw)
        .map_err(|source| Error::Io {
            file: path.to_path_buf(),
            source,
        })?;
    let (_, content) = detect::head(&raw);
    Ok(match sniff(&content) {
        Sniffed::KinetoObject => Some(TraceFormat::Kineto),
        Sniffed::ChromeArray => Some(TraceFormat::ChromeArray),
        Sniffed::RocprofLegacyJson => Some(TraceFormat::RocprofLegacyJson),
        Sniffed::Rocprofv3Json => Some(TraceFormat::Rocprofv3Json),
        Sniffed::Rocprofv3Csv => Some(TraceFormat::Rocprofv3Csv),
        // The three SQLite formats are told apart by their tables; one family for this check.
        Sniffed::Sqlite => Some(TraceFormat::NsysSqlite),
        Sniffed::Unknown => None,
    })
}
