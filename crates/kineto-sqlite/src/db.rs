//! An SQLite trace database opened read-only: its tables and views, their columns by name, and
//! queries whose columns are chosen by name (a column the file lacks reads as NULL where it is
//! optional, and is an error naming the table and column where it is required).

use kineto_trace::{Error, Result};
use rusqlite::{Connection, OpenFlags, Row};
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};

/// An open database and the names of what it holds.
pub(crate) struct Db {
    pub(crate) conn: Connection,
    pub(crate) file: PathBuf,
    /// Tables and views, by name.
    names: FxHashSet<String>,
}

impl Db {
    /// Opens `path` read-only (a database in a read-only directory, or one nothing writes, is opened
    /// as immutable when a plain read-only open cannot be).
    pub(crate) fn open(path: &Path, shown_as: &Path) -> Result<Db> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let fail = |e: rusqlite::Error| Error::Native {
            file: shown_as.to_path_buf(),
            at: "opening".into(),
            message: format!("SQLite cannot read it: {e}"),
        };
        let conn = match Connection::open_with_flags(path, flags).and_then(|c| {
            c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
            Ok(c)
        }) {
            Ok(c) => c,
            Err(_) => {
                let uri = format!("file:{}?mode=ro&immutable=1", uri_path(path));
                Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
                    .map_err(fail)?
            }
        };
        let mut names = FxHashSet::default();
        {
            let mut st = conn
                .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
                .map_err(fail)?;
            let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(fail)?;
            for n in rows {
                names.insert(n.map_err(fail)?);
            }
        }
        Ok(Db {
            conn,
            file: shown_as.to_path_buf(),
            names,
        })
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

    pub(crate) fn sql_err(&self, table: &str, e: rusqlite::Error) -> Error {
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
            each(i, r)?;
            i += 1;
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
    use rusqlite::types::ValueRef;
    Ok(match r.get_ref(i).map_err(|e| e.to_string())? {
        ValueRef::Null => None,
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
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
