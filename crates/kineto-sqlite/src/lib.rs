//! Readers of the SQLite trace databases GPU profilers write, into `kineto-trace`'s [`Trace`] model:
//!
//! - **Nsight Systems** (`nsys export --type sqlite`, schema 3.16 and later): [`nsys`];
//! - **rocpd** (ROCm ≥ 7's default rocprofv3 output), read through its views: [`rocpd`];
//! - **RPD** (rocmProfileData's tracer), schema 2 and 3: [`rpd`].
//!
//! Which one a database is, its tables tell ([`read`]); columns are selected by name, never by
//! position, and absent tables mean nothing of that kind was captured. Files are opened read-only and immutable, in the state SQLite would commit, their own SQL
//! bounded (`db`).
//!
//! What it is not: a general SQLite layer, or a reader of the JSON formats (those are in
//! `kineto-trace` itself, which needs no SQLite). It is its own crate because SQLite is a C library
//! built from source (`rusqlite`'s `bundled` feature; the system one is older than `libsqlite3-sys`
//! accepts): a build without this crate still reads every other format. A binary calls [`install`]
//! once, after which `kineto_trace::parse_file` reads SQLite files too.

mod db;
pub mod nsys;
mod nsys_calls;
pub mod rocpd;
pub mod rpd;

use kineto_trace::native::TraceBuilder;
use kineto_trace::{Error, IdValue, Result, Trace, Track};
use rustc_hash::FxHashMap;
use std::path::Path;

/// The builder's tracks of numeric (pid, tid) pairs, remembered by the two integers: a row's track is
/// found without making and hashing the model's `IdValue`s, and the last one without any hashing (rows
/// of one thread or stream come in runs).
#[derive(Default)]
pub(crate) struct Tracks {
    last: Option<((i64, i64), Track)>,
    seen: FxHashMap<(i64, i64), Track>,
}

impl Tracks {
    /// The track of (`pid`, `tid`), interned in `b` the first time.
    pub(crate) fn of(&mut self, b: &mut TraceBuilder, pid: i64, tid: i64) -> Track {
        if let Some((ids, t)) = self.last
            && ids == (pid, tid)
        {
            return t;
        }
        let t = *self
            .seen
            .entry((pid, tid))
            .or_insert_with(|| b.track(IdValue::Num(pid), IdValue::Num(tid)));
        self.last = Some(((pid, tid), t));
        t
    }
}

/// Makes `kineto_trace::parse_file` (and everything built on it) read SQLite trace databases.
pub fn install() {
    kineto_trace::native::install_sqlite_reader(read);
}

/// Reads an SQLite trace database: Nsight Systems, rocpd or RPD, told by its tables. `db` is the
/// file to open (read-only, immutable), `shown_as` the name errors use; `private_copy` as
/// [`kineto_trace::native::SqliteRead`] says (a copy SQLite may first bring to its committed state).
pub fn read(db: &Path, shown_as: &Path, private_copy: bool) -> Result<Trace> {
    let d = db::Db::open(db, shown_as, private_copy)?;
    if d.has("rocpd_op") {
        rpd::read(&d)
    } else if d.has("rocpd_info_agent") || d.has_prefix("rocpd_kernel_dispatch") {
        rocpd::read(&d)
    } else if d.has("StringIds")
        && (d.has("META_DATA_EXPORT")
            || d.has("EXPORT_META_DATA")
            || d.has_prefix("CUPTI_ACTIVITY_KIND_")
            || d.has("TARGET_INFO_GPU"))
    {
        nsys::read(&d)
    } else {
        Err(Error::Format {
            file: shown_as.to_path_buf(),
            message: "an SQLite database, but not a trace this tool reads: looked for Nsight Systems \
                      (StringIds with CUPTI_ACTIVITY_KIND_* or META_DATA_EXPORT), rocpd (rocpd_info_agent, \
                      rocpd_kernel_dispatch) and RPD (rocpd_op) tables"
                .into(),
        })
    }
}
