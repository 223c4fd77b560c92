//! An SQLite trace database opened read-only: its tables and views, their columns by name, and
//! queries whose columns are chosen by name (a column the file lacks reads as NULL where it is
//! optional, and is an error naming the table and column where it is required).
//!
//! **What is read is what SQLite would commit, and nothing is written beside the file.** The file is
//! opened `immutable=1`: SQLite reads the main file alone, takes no lock and creates no `-shm` or
//! `-journal`. That is its committed state only when no write-ahead log or rollback journal is beside
//! it, so a file that has one is handed over as a private copy made with it (`kineto-trace`'s stored
//! layer does this and hashes the log or journal after the file), which is first opened for writing
//! where it lies ([`settle`]) so that SQLite itself rolls a hot journal back or folds the log in.
//!
//! **The file's own SQL is bounded.** Tables may be views (rocpd's are), and a view runs the file's
//! SQL: a recursive one never ends. Every statement's SQLite steps are counted against a budget per
//! file ([`STEPS_PER_BYTE`] for each byte of the database, at least [`STEP_FLOOR`]), so are the rows
//! the queries yield ([`ROWS_PER_BYTE`], at least [`ROW_FLOOR`]: an endless view's rows would each
//! become a kernel in memory), and SQLite's heap is capped ([`HEAP_LIMIT`]); past any the read stops with [`Error::Limit`] naming the file and
//! the table. Steps, not seconds: the answer must not depend on the machine or its load.

use kineto_trace::{Error, Result};
use rusqlite::{Connection, OpenFlags, Row};
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// SQLite steps (virtual-machine instructions) a file's queries may take, per byte of the database.
/// Measured: at most 0.64 per byte (an RPD, an Nsight Systems export and a rocpd file of 200,000
/// kernels each, 7–16 MB, read through rocpd's views; the corpus's files take less).
pub(crate) const STEPS_PER_BYTE: u64 = 100;

/// SQLite steps any file's queries may take, however small it is: about a second of SQLite's work.
pub(crate) const STEP_FLOOR: u64 = 100_000_000;

/// Rows a file's queries may yield in all, per byte of the database: no stored row takes less than a
/// byte, and the readers read each table once (rocpd's views yield a row per stored event).
const ROWS_PER_BYTE: u64 = 1;

/// Rows any file's queries may yield, however small it is.
const ROW_FLOOR: u64 = 1_000_000;

/// SQLite steps between two looks at the budget.
const STEPS_PER_LOOK: u64 = 100_000;

/// The most heap SQLite may hold in this process (all files read at once): a query that needs more
/// fails with SQLite's "out of memory" instead of taking the host's. Reading holds a page cache of a
/// few MB per file; sorts beyond their cache spill to temporary files.
pub(crate) const HEAP_LIMIT: i64 = 1 << 30;

/// An open database and the names of what it holds.
pub(crate) struct Db {
    pub(crate) conn: Connection,
    pub(crate) file: PathBuf,
    /// Tables and views, by name.
    names: FxHashSet<String>,
    /// The SQLite steps this file's queries may take.
    step_budget: u64,
    /// The rows they may yield in all, and those yielded so far.
    row_budget: u64,
    rows: std::cell::Cell<u64>,
    /// Set once they took them (every statement is interrupted from then on).
    over_budget: Arc<AtomicBool>,
}

impl Db {
    /// Opens `path` read-only and immutable, with its SQL bounded; a `private_copy` is first brought to
    /// its committed state ([`settle`]). See the module's text.
    pub(crate) fn open(path: &Path, shown_as: &Path, private_copy: bool) -> Result<Db> {
        let fail = |e: rusqlite::Error| Error::Native {
            file: shown_as.to_path_buf(),
            at: "opening".into(),
            message: format!("SQLite cannot read it: {e}"),
        };
        if private_copy {
            settle(path).map_err(fail)?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let uri = format!("file:{}?mode=ro&immutable=1", uri_path(path));
        let mut conn = Connection::open_with_flags(uri, flags).map_err(fail)?;
        conn.query_row(
            &format!("PRAGMA hard_heap_limit = {HEAP_LIMIT}"),
            [],
            |_| Ok(()),
        )
        .map_err(fail)?;
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let step_budget = STEP_FLOOR.max(bytes.saturating_mul(STEPS_PER_BYTE));
        let over_budget = Arc::new(AtomicBool::new(false));
        let over = over_budget.clone();
        let mut steps = 0u64;
        conn.progress_handler(
            STEPS_PER_LOOK as i32,
            Some(move || {
                steps += STEPS_PER_LOOK;
                if steps > step_budget {
                    over.store(true, Ordering::Relaxed);
                }
                steps > step_budget
            }),
        )
        .map_err(fail)?;
        let mut db = Db {
            conn,
            file: shown_as.to_path_buf(),
            names: FxHashSet::default(),
            step_budget,
            row_budget: ROW_FLOOR.max(bytes.saturating_mul(ROWS_PER_BYTE)),
            rows: std::cell::Cell::new(0),
            over_budget,
        };
        // The first read of the file: where one that is not a database (or is cut) is told.
        db.names = db.table_names().map_err(fail)?;
        Ok(db)
    }

    /// The names of the tables and views.
    fn table_names(&self) -> rusqlite::Result<FxHashSet<String>> {
        let mut st = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")?;
        let rows = st.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect()
    }

    /// Whether a table or view of this name exists.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Whether a table or view whose name starts with `prefix` exists.
    pub(crate) fn has_prefix(&self, prefix: &str) -> bool {
        self.names.iter().any(|n| n.starts_with(prefix))
    }

    /// The columns of a table or view.
    pub(crate) fn columns(&self, table: &str) -> Result<FxHashSet<String>> {
        let mut st = self
            .conn
            .prepare(&format!("PRAGMA table_info({})", quote(table)))
            .map_err(|e| self.sql_err(table, e))?;
        let cols = st
            .query_map([], |r| r.get::<_, String>(1))
            .map_err(|e| self.sql_err(table, e))?
            .collect::<rusqlite::Result<FxHashSet<String>>>()
            .map_err(|e| self.sql_err(table, e))?;
        Ok(cols)
    }

    /// An error of SQLite's while reading `table`: a bound passed ([`Error::Limit`]), or SQLite's own.
    pub(crate) fn sql_err(&self, table: &str, e: rusqlite::Error) -> Error {
        if self.over_budget.load(Ordering::Relaxed) {
            return Error::Limit {
                file: self.file.clone(),
                message: format!(
                    "table {table}: the file's own SQL ran past its budget of {} SQLite steps \
                     ({STEPS_PER_BYTE} per byte of the database, at least {STEP_FLOOR}); is it a view \
                     that recurses or joins without end? Refused",
                    self.step_budget
                ),
            };
        }
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OutOfMemory) {
            return Error::Limit {
                file: self.file.clone(),
                message: format!(
                    "table {table}: SQLite needed more than its {HEAP_LIMIT} bytes of heap (shared by \
                     the files read at once); is it a view that grows without end? Refused"
                ),
            };
        }
        Error::Native {
            file: self.file.clone(),
            at: format!("table {table}"),
            message: format!("SQLite: {e}"),
        }
    }

    pub(crate) fn row_err(&self, table: &str, row: u64, message: String) -> Error {
        Error::Native {
            file: self.file.clone(),
            at: format!("table {table}, row {row} (0-based, in table order)"),
            message,
        }
    }

    /// Runs `SELECT cols FROM table tail`, the columns in the order given: a column marked
    /// optional (`?` prefix) that the table lacks reads as NULL; a required one is an error; `=expr`
    /// is an SQL expression used as it is.
    /// `each` gets every row with its 0-based index.
    pub(crate) fn each(
        &self,
        table: &str,
        cols: &[&str],
        tail: &str,
        mut each: impl FnMut(u64, &Row<'_>) -> Result<()>,
    ) -> Result<()> {
        let have = self.columns(table)?;
        let mut exprs = Vec::with_capacity(cols.len());
        for c in cols {
            if let Some(expr) = c.strip_prefix('=') {
                exprs.push(expr.to_string());
                continue;
            }
            let (optional, name) = match c.strip_prefix('?') {
                Some(n) => (true, n),
                None => (false, *c),
            };
            if have.contains(name) {
                exprs.push(quote(name));
            } else if optional {
                exprs.push("NULL".to_string());
            } else {
                return Err(Error::Native {
                    file: self.file.clone(),
                    at: format!("table {table}"),
                    message: format!(
                        "no column `{name}` (its columns: {})",
                        sorted(&have).join(", ")
                    ),
                });
            }
        }
        let sql = format!("SELECT {} FROM {} {tail}", exprs.join(", "), quote(table));
        let mut st = self
            .conn
            .prepare(&sql)
            .map_err(|e| self.sql_err(table, e))?;
        let mut rows = st.query([]).map_err(|e| self.sql_err(table, e))?;
        let mut i = 0u64;
        while let Some(r) = rows.next().map_err(|e| self.sql_err(table, e))? {
            self.count_row(table)?;
            each(i, r)?;
            i += 1;
        }
        Ok(())
    }

    /// One more row yielded, within the file's row budget.
    fn count_row(&self, table: &str) -> Result<()> {
        let n = self.rows.get() + 1;
        self.rows.set(n);
        if n > self.row_budget {
            return Err(Error::Limit {
                file: self.file.clone(),
                message: format!(
                    "table {table}: the file's queries yielded more than {} rows ({ROWS_PER_BYTE} per \
                     byte of the database, at least {ROW_FLOOR}), more than it can hold; is it a view \
                     that recurses or joins without end? Refused",
                    self.row_budget
                ),
            });
        }
        Ok(())
    }

    /// Whether any row of `table` meets `condition` (SQL).
    pub(crate) fn any(&self, table: &str, condition: &str) -> Result<bool> {
        self.conn
            .query_row(
                &format!(
                    "SELECT EXISTS(SELECT 1 FROM {} WHERE {condition})",
                    quote(table)
                ),
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n != 0)
            .map_err(|e| self.sql_err(table, e))
    }

    /// `SELECT count(*) FROM table`.
    pub(crate) fn count(&self, table: &str) -> Result<u64> {
        self.conn
            .query_row(&format!("SELECT count(*) FROM {}", quote(table)), [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.sql_err(table, e))
    }

    /// A two-column table as a map (`StringIds(id, value)`, `rocpd_string(id, string)`).
    pub(crate) fn map(
        &self,
        table: &str,
        key: &str,
        value: &str,
    ) -> Result<FxHashMap<i64, String>> {
        let mut out = FxHashMap::default();
        if !self.has(table) {
            return Ok(out);
        }
        self.each(table, &[key, value], "", |i, r| {
            let k: Option<i64> = r
                .get(0)
                .map_err(|e| self.row_err(table, i, e.to_string()))?;
            let v: Option<String> = get_text(r, 1).map_err(|e| self.row_err(table, i, e))?;
            if let (Some(k), Some(v)) = (k, v) {
                out.insert(k, v);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The `schema_version` of a `rocpd_metadata(tag, value)` table (RPD and rocpd files both write one),
    /// its last row's should there be several; `None` when the table or the tag is absent.
    pub(crate) fn rocpd_schema_version(&self) -> Result<Option<String>> {
        let t = "rocpd_metadata";
        let mut version = None;
        if self.has(t) {
            self.each(t, &["tag", "value"], "", |i, r| {
                let tag = get_text(r, 0).map_err(|m| self.row_err(t, i, m))?;
                if tag.as_deref() == Some("schema_version") {
                    version = get_text(r, 1).map_err(|m| self.row_err(t, i, m))?;
                }
                Ok(())
            })?;
        }
        Ok(version)
    }
}

/// A text cell, also when SQLite holds it as a number or blob (older tracers are loose with types).
pub(crate) fn get_text(r: &Row<'_>, i: usize) -> std::result::Result<Option<String>, String> {
    Ok(get_str(r, i)?.map(Cow::into_owned))
}

/// [`get_text`], borrowed from the row where the cell is UTF-8 text (the common case): what a reader
/// looks up or interns needs no copy of its own.
pub(crate) fn get_str<'r>(
    r: &'r Row<'_>,
    i: usize,
) -> std::result::Result<Option<Cow<'r, str>>, String> {
    use rusqlite::types::ValueRef;
    Ok(match r.get_ref(i).map_err(|e| e.to_string())? {
        ValueRef::Null => None,
        ValueRef::Integer(n) => Some(Cow::Owned(n.to_string())),
        ValueRef::Real(f) => Some(Cow::Owned(f.to_string())),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t)),
    })
}

/// An integer cell (NULL → `None`); a text cell of digits is read as its number, anything else is an
/// error naming the value.
pub(crate) fn get_int(r: &Row<'_>, i: usize) -> std::result::Result<Option<i64>, String> {
    use rusqlite::types::ValueRef;
    match r.get_ref(i).map_err(|e| e.to_string())? {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(n) => Ok(Some(n)),
        ValueRef::Real(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Ok(Some(f as i64)),
        ValueRef::Text(t) => {
            let s = String::from_utf8_lossy(t);
            let s = s.trim();
            if let Some(hex) = s.strip_prefix("0x") {
                return i64::from_str_radix(hex, 16)
                    .map(Some)
                    .map_err(|_| format!("`{s}` is not an integer"));
            }
            s.parse()
                .map(Some)
                .map_err(|_| format!("`{s}` is not an integer"))
        }
        other => Err(format!("{other:?} is not an integer")),
    }
}

/// A time cell (ns): [`get_int`], except that NULL is an error naming the column. A time the file does
/// not hold is never read as 0: one NULL start would make a 1 µs kernel last from the clock's origin.
pub(crate) fn get_time(r: &Row<'_>, i: usize) -> std::result::Result<i64, String> {
    get_int(r, i)?.ok_or_else(|| {
        let column = r.as_ref().column_name(i).unwrap_or("?");
        format!("`{column}` is NULL: a row without its time cannot be placed on the timeline")
    })
}

/// An optional quantity (a byte count, a size): [`get_int`], except that an empty text cell is no
/// value. Tracers that bind `''` for "unknown" leave it in integer columns, which SQLite stores as
/// text without complaint.
pub(crate) fn get_quantity(r: &Row<'_>, i: usize) -> std::result::Result<Option<i64>, String> {
    if let rusqlite::types::ValueRef::Text(t) = r.get_ref(i).map_err(|e| e.to_string())?
        && t.iter().all(u8::is_ascii_whitespace)
    {
        return Ok(None);
    }
    get_int(r, i)
}

fn sorted(s: &FxHashSet<String>) -> Vec<String> {
    let mut v: Vec<String> = s.iter().cloned().collect();
    v.sort();
    v
}

/// Brings a private copy to the state SQLite would commit, as SQLite does on opening a database to
/// write it: a hot journal rolled back, a write-ahead log folded into the file and removed (`journal_mode
/// = DELETE` checkpoints it), so that the immutable open that follows finds it all in the file. Only
/// the copy and what SQLite makes beside it in its private directory are written.
fn settle(path: &Path) -> rusqlite::Result<()> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(path, flags)?;
    c.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))?;
    c.close().map_err(|(_, e)| e)
}

/// An identifier quoted for SQL.
pub(crate) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A path for an SQLite `file:` URI (RFC 3986 percent-encoding of what a URI reserves).
fn uri_path(path: &Path) -> String {
    let s = path.to_string_lossy();
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'%' | b'?' | b'#' | b' ' | 0x80.. => out.push_str(&format!("%{b:02X}")),
            _ => out.push(b as char),
        }
    }
    out
}
