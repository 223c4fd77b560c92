//! The vendors' own profiler formats, read into the same [`Trace`] the Kineto parser fills, so that
//! every analysis works on them unchanged. Each reader takes the content of a file of its format (the
//! front door, `crate::read`, told the format and `crate::stored` read the stored bytes) and returns the
//! model.
//!
//! What it is not: the dispatch (the front door's), the stored bytes (gzip, the sha256, a cut stream:
//! `crate::stored`), or the Kineto parser, whose types no reader here uses.
//!
//! - [`builder`]: [`TraceBuilder`], the one way a reader fills the model (also used by the SQLite
//!   readers of the `kineto-sqlite` crate);
//! - `chrome`: Chrome-trace JSON arrays (`rpd2tracing` and other converters) and the legacy rocprof's
//!   JSON object (its own rules in `rocprof_legacy`);
//! - `rocprof_json`, `rocprof_csv`: rocprofv3's JSON and CSV outputs;
//! - [`names`]: kernel names demangled and without AMD's `.kd` suffixes;
//! - [`protowire`]: the protobuf wire format read field by field from a stream, for the protobuf
//!   readers' crates;
//! - [`detect`]: the front door's format sniffing, named here too for the callers that know it here.
//!
//! The SQLite formats (Nsight Systems, rocpd, RPD) need the SQLite library, which lives in its own
//! crate so that a build without it stays possible: that crate installs its reader here once
//! ([`install_sqlite_reader`]) and the front door (`parse_file`) hands SQLite files to it. A build
//! that never installs one reports an SQLite file as a format this build does not read. The XPlane
//! protobuf of JAX and TensorFlow is read the same way, by the `kineto-xplane` crate
//! ([`install_xplane_reader`]), and Perfetto protobuf by the `kineto-perfetto` crate
//! ([`install_perfetto_reader`]), so that the protobuf library stays out of this crate.

pub mod builder;
pub(crate) mod chrome;
mod correlations;
pub mod names;
pub mod protowire;
pub(crate) mod rocprof_csv;
pub(crate) mod rocprof_json;
mod rocprof_legacy;
pub mod rocprof_resources;

pub use crate::read::detect;
pub use builder::{QueueKey, QueueRows, TraceBuilder};
pub use detect::{LOOKED_FOR, Sniffed, TRACES_HELP, sniff, sniff_stored};
pub use names::{KernelNames, api_of_call, demangle, kernel_name};
pub(crate) use rocprof_csv::{
    check_one_read_per_set, csv_trace_sets_among, is_trace_table_name, lower_name,
};

use crate::error::Result;
use crate::model::Trace;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// Whether serde's error `e`, reading `text`, may only mean that the text stops early: an end of
/// input, or an error right at its end. A number cut after its `-`, `.` or exponent's `e` is an
/// "invalid number" there, not an end of input, when serde reads past it unparsed (a `RawValue`, an
/// ignored field). What follows decides: a reader that can read on does (a true error is met again,
/// not at the end, once the text after it is read); at the end of the file the file was cut. serde's
/// position is a line (1-based) and the bytes before it on that line.
pub(crate) fn is_cut_json(e: &serde_json::Error, text: &[u8]) -> bool {
    if e.is_eof() {
        return true;
    }
    let line_start = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = 1 + text[..line_start].iter().filter(|&&b| b == b'\n').count();
    e.line() == line && e.column() == text.len() - line_start
}

/// A reader of SQLite trace databases: `db` is a file SQLite can open, `shown_as` names the trace in
/// errors. `private_copy`: `db` is a copy in a private directory (gzip or streamed input, or a file
/// that had a write-ahead log or rollback journal beside it, copied with it) that SQLite may write to
/// bring it to its committed state; otherwise it is the user's file with no log or journal beside it,
/// to be opened without writing anything. It tells Nsight Systems, rocpd and RPD apart by their tables
/// and returns the trace with [`crate::Header::format`] set.
pub type SqliteRead = fn(db: &Path, shown_as: &Path, private_copy: bool) -> Result<Trace>;

static SQLITE: OnceLock<SqliteRead> = OnceLock::new();

/// Installs the SQLite reader (the `kineto-sqlite` crate's `install()` calls this). The first one
/// installed stays; later calls are ignored.
pub fn install_sqlite_reader(read: SqliteRead) {
    let _ = SQLITE.set(read);
}

/// A reader of a protobuf trace format (XPlane, Perfetto), installed by its own crate so that the
/// protobuf library stays out of this one: `stream` reads the content (inflated when gzip) from
/// `content` message by message, keeping only what the model keeps; `shown_as` names it in errors.
/// `whole`, when the format has one, reads the same content held whole: the front door calls it on
/// a file whose stream `stream` refused, with the file read again, so that the error names the fault
/// as the decoder of the whole message does (a format whose stream reader names its faults exactly
/// leaves it `None`). `plain`, when the format has one, reads a plain (not gzip) file's content as
/// `stream` does, after a first look at the same file opened again (a format whose records refer to
/// tables written after them reads the tables first, and need not hold the records until then); a
/// gzip file, or content with no file, goes to `stream`.
#[derive(Clone, Copy)]
pub struct ProtobufRead {
    /// Reads the content as a stream; with `salvage`, a stream cut inside a top-level message keeps
    /// what came before the cut (marked salvaged) where the format allows it.
    pub stream: fn(content: &mut dyn Read, shown_as: &Path, salvage: bool) -> Result<Trace>,
    /// Reads the content held whole, for the error of a stream `stream` refused.
    pub whole: Option<WholeRead>,
    /// Reads a plain file's content, with a first look at the file.
    pub plain: Option<PlainRead>,
}

/// A reader of a plain protobuf file's content (`content`, read once as [`ProtobufRead::stream`]
/// reads it: the front door hashes it), after a first look at the same file (`first_look`: opened
/// again by the front door, a regular file only, stopped as the read is).
pub type PlainRead = fn(
    first_look: &mut dyn Read,
    content: &mut dyn Read,
    shown_as: &Path,
    salvage: bool,
) -> Result<Trace>;

/// A reader of a protobuf format's content held whole (`bytes`); `shown_as` names it in errors.
pub type WholeRead = fn(bytes: &[u8], shown_as: &Path) -> Result<Trace>;

/// The reader of XPlane protobuf (`*.xplane.pb`, JAX/TensorFlow/XLA): the `kineto-xplane` crate's.
pub type XPlaneRead = ProtobufRead;

static XPLANE: OnceLock<XPlaneRead> = OnceLock::new();

/// Installs the XPlane reader (the `kineto-xplane` crate's `install()` calls this). The first one
/// installed stays; later calls are ignored.
pub fn install_xplane_reader(read: XPlaneRead) {
    let _ = XPLANE.set(read);
}

/// The XPlane reader installed, if one is.
pub(crate) fn xplane_reader() -> Option<XPlaneRead> {
    XPLANE.get().copied()
}

/// The reader of Perfetto protobuf traces (`.pftrace`, a stream of `TracePacket`s): the
/// `kineto-perfetto` crate's, installed the same way.
pub type PerfettoRead = ProtobufRead;

static PERFETTO: OnceLock<PerfettoRead> = OnceLock::new();

/// Installs the Perfetto reader (the `kineto-perfetto` crate's `install()` calls this). The first one
/// installed stays; later calls are ignored.
pub fn install_perfetto_reader(read: PerfettoRead) {
    let _ = PERFETTO.set(read);
}

/// The Perfetto reader installed, if one is.
pub(crate) fn perfetto_reader() -> Option<PerfettoRead> {
    PERFETTO.get().copied()
}

/// Whether this process can read SQLite traces.
pub fn sqlite_reader_installed() -> bool {
    SQLITE.get().is_some()
}

/// The SQLite reader installed, if one is.
pub(crate) fn sqlite_reader() -> Option<SqliteRead> {
    SQLITE.get().copied()
}
