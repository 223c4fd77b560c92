//! The Kineto parser: a Kineto trace's JSON text (as the front door, `crate::read`, hands it the stored
//! stream) into the model, and the parts it drives.
//!
//! What it is not: the reader of any other format (`native/`), nor of the stored bytes (gzip and
//! the sha256 are `crate::stored`'s); it never tells formats apart (the front door did).
//!
//! - [`window`]: the refillable input window (one whole top-level value at a time);
//! - [`driver`]: the top-level object and `traceEvents`, refill-and-retry, truncation and salvage;
//! - [`event`]: one event's fields in one pass (the categories are [`crate::category`]'s);
//! - [`header`]: the top-level values other than `traceEvents`, kept only where used, with caps;
//! - [`builder`]: the compact model built as events are accepted;
//! - [`ranges`] and [`blocks`]: one file on every core (ranges of `traceEvents` parsed on workers,
//!   proved and folded in by the serial parser; the input read, inflated and hashed beside them).

mod blocks;
mod builder;
mod driver;
mod event;
mod header;
mod ranges;
pub(crate) mod window;

pub use ranges::RANGE_BYTES;

use crate::error::{Error, Result};
use crate::model::Trace;
use crate::read::{Options, Parsed};
use crate::stored::Feed;
use crate::stored::feed::Input;
use std::io::Read;
use std::path::Path;

/// glibc malloc arenas a program that parses on many threads is held to ([`tune_malloc`]).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_ARENAS: i32 = 4;

/// The size from which glibc maps each block apart and unmaps it when freed ([`tune_malloc`]): glibc's
/// own starting value, held there.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_MMAP_THRESHOLD: i32 = 128 * 1024;

/// Tunes glibc's malloc for a program that parses large traces, each setting unless the environment
/// already sets it (its `MALLOC_…` variable or `GLIBC_TUNABLES`); elsewhere than Linux with glibc, nothing.
///
/// For a program's `main`, before its threads start: the settings are the whole process's, so a
/// library never calls this on its host's behalf (the Python module does not).
///
/// - **4 arenas** (`MALLOC_ARENA_MAX`): glibc gives a new thread an arena of its own while there are
///   fewer than 8 per core, and an arena keeps memory after the ranges parsed in it are folded in: on
///   16 workers a 310 MB trace's parse peaked at 78–80 MiB, 0.26–0.27 of the file, against 70.4 MiB on
///   2 workers; with 4 arenas, 72.4–72.7 MiB, 0.245 (MEASURED, `--threads 16 --no-sha256`,
///   2026-12-06). The workers call malloc about 150 times per MiB of JSON (MEASURED, a uprobe on 2
///   workers), so four arenas should not be a lock they queue on (ESTIMATED: not measured on 16 cores).
/// - **A fixed mmap threshold of 128 KiB** (`MALLOC_MMAP_THRESHOLD_`): glibc raises its threshold to
///   the size of each mapped block freed (up to 32 MiB), after which blocks that size are carved from
///   the heap, and freeing them returns nothing to the system. A reader that frees its held rows while
///   it builds the model (the Chrome-array reader frees its items a chunk at a time) then peaks at
///   both: bench-native's 112 MB Chrome array peaked at 28,332–28,616 KiB, 27,344–27,360 KiB with the
///   threshold held (MEASURED, 2026-12-07, `MALLOC_MMAP_THRESHOLD_=131072` in the environment). Its
///   cost: a one-thread Kineto parse of 372 MB takes 3.6 % more user time (0.688 s against 0.664 s,
///   means of 5 runs; the hashed parse on 2 threads unchanged; MEASURED, `docs/parse-costs.md`).
pub fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (env, tunable, param, value) in [
        (
            "MALLOC_ARENA_MAX",
            "arena_max",
            libc::M_ARENA_MAX,
            MALLOC_ARENAS,
        ),
        (
            "MALLOC_MMAP_THRESHOLD_",
            "mmap_threshold",
            libc::M_MMAP_THRESHOLD,
            MALLOC_MMAP_THRESHOLD,
        ),
    ] {
        let tuned = std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains(tunable));
        if std::env::var_os(env).is_none() && !tuned {
            // SAFETY: mallopt takes two integers and changes only the allocator's tuning, which glibc
            // guards itself; it holds no pointer of ours.
            unsafe {
                libc::mallopt(param, value);
            }
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

/// A Kineto trace (or bytes no other reader takes) as stored: serially, or in ranges on every core.
/// `stored_bytes`: the size of the file `raw` reads, when there is one.
pub(crate) fn parse_kineto(
    path: &Path,
    raw: impl Read + Send + 'static,
    opts: &Options,
    stored_bytes: Option<u64>,
) -> Result<Parsed> {
    let _running = Running::start();
    let threads = range_threads(opts);
    if threads > 1 {
        return ranges::parse(
            path,
            raw,
            (opts.salvage, opts.python_frames),
            opts.sha256,
            threads,
            opts.range_bytes,
            stored_bytes,
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
    let (trace, json_bytes) =
        driver::parse(path, input.reader(), opts.salvage, gzip, opts.python_frames)?;
    let sha256 = input.finish().map(|d| crate::stored::hex(&d));
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
    driver::parse(name, reader, salvage, gzip, false)
}
