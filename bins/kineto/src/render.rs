//! The listing machinery: one column list drives the table header and cells, the CSV header and
//! cells, and the JSON keys and values, so adding a column is one edit (as `gpu-monitor`'s `csv.rs`
//! does for samples). Rows are written one at a time to the output; no listing is built in memory.
//!
//! Times: a [`Kind::Time`] column is an absolute time on the trace clock. JSON writes it three ways
//! (`X_us` as f64, `X_ns` exact, `X_rel_us` from the trace's first event), CSV two (`X_us` and
//! `X_rel_us`, both exact three-decimal text), the table one (relative µs). A [`Kind::Dur`] column is
//! a duration: JSON `X_us` and `X_ns`, CSV `X_us`, table µs. CSV and table µs are exact decimal text
//! from integer ns; nothing is ever NaN or infinite.

use crate::out::escape;
use kineto_trace::{ns_to_us, ns_to_us_string};
use std::borrow::Cow;
use std::io::{self, Write};

/// Output form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Readable table.
    Table,
    /// One JSON object per line.
    Json,
    /// CSV with one header line.
    Csv,
}

/// What a column holds, which decides its keys in each format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Text, integer or boolean: one key, the column's name.
    Plain,
    /// A duration in ns: `NAME_us` (+ `NAME_ns` in JSON).
    Dur,
    /// An absolute time in ns: `NAME_us`, `NAME_rel_us` (+ `NAME_ns` in JSON); relative in tables.
    Time,
}

/// How a column shows in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// Not in the table.
    No,
    /// Right-aligned in `width` characters.
    Right(usize),
    /// Left-aligned in `width` characters, cut with `…` when longer.
    Left(usize),
    /// Last column: as long as it is (up to 160 characters).
    Rest,
}

/// A cell's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val<'a> {
    /// Absent: `null`, an empty CSV cell, `-` in a table.
    Null,
    /// Text.
    Str(Cow<'a, str>),
    /// An unsigned integer.
    U(u64),
    /// A signed integer (ns for `Dur` and `Time` columns).
    I(i64),
    /// A boolean.
    Bool(bool),
    /// A float (percentages, GB/s): finite by construction, `null` otherwise.
    F(f64),
}

impl<'a> Val<'a> {
    /// Text or null.
    pub fn text(s: Option<impl Into<Cow<'a, str>>>) -> Val<'a> {
        s.map_or(Val::Null, |s| Val::Str(s.into()))
    }
    /// Integer or null.
    pub fn u(v: Option<impl Into<u64>>) -> Val<'a> {
        v.map_or(Val::Null, |v| Val::U(v.into()))
    }
    /// ns or null.
    pub fn ns(v: Option<i64>) -> Val<'a> {
        v.map_or(Val::Null, Val::I)
    }
}

/// One column of a listing.
pub struct Col<R: ?Sized> {
    /// JSON key and CSV header (the base, for `Dur` and `Time`); empty for a table-only column.
    pub name: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// Table header.
    pub head: &'static str,
    /// Table placement.
    pub show: Show,
    /// The value of a row.
    pub get: for<'r> fn(&'r R) -> Val<'r>,
}

/// Per-trace context of the cells: the time relative times count from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ctx {
    /// The trace's first event, ns.
    pub t0_ns: i64,
}

/// The CSV header keys of a column list.
pub fn csv_keys<R: ?Sized>(cols: &[Col<R>]) -> Vec<String> {
    let mut out = Vec::new();
    for c in cols.iter().filter(|c| !c.name.is_empty()) {
        match c.kind {
            Kind::Plain => out.push(c.name.to_string()),
            Kind::Dur => out.push(format!("{}_us", c.name)),
            Kind::Time => {
                out.push(format!("{}_us", c.name));
                out.push(format!("{}_rel_us", c.name));
            }
        }
    }
    out
}

/// Writes the CSV header line.
pub fn csv_header<R: ?Sized>(w: &mut impl Write, cols: &[Col<R>]) -> io::Result<()> {
    writeln!(w, "{}", csv_keys(cols).join(","))
}

/// Quotes a CSV cell when it needs it (RFC 4180).
pub fn csv_quote(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

fn plain_text(v: &Val<'_>) -> String {
    match v {
        Val::Null => String::new(),
        Val::Str(s) => s.to_string(),
        Val::U(n) => n.to_string(),
        Val::I(n) => n.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::F(x) if x.is_finite() => format!("{x:.3}"),
        Val::F(_) => String::new(),
    }
}

fn us_text(v: &Val<'_>, minus: i64) -> String {
    match v {
        Val::I(ns) => ns_to_us_string(ns.saturating_sub(minus)),
        Val::U(ns) => ns_to_us_string((*ns as i64).saturating_sub(minus)),
        _ => String::new(),
    }
}

/// The CSV cells of a row, in [`csv_keys`] order (without the line end), appended to `cells`.
pub fn csv_cells<R: ?Sized>(cols: &[Col<R>], row: &R, ctx: &Ctx, cells: &mut Vec<String>) {
    for c in cols.iter().filter(|c| !c.name.is_empty()) {
        let v = (c.get)(row);
        match c.kind {
            Kind::Plain => cells.push(csv_quote(&plain_text(&v)).into_owned()),
            Kind::Dur => cells.push(us_text(&v, 0)),
            Kind::Time => {
                cells.push(us_text(&v, 0));
                cells.push(us_text(&v, ctx.t0_ns));
            }
        }
    }
}

/// Writes one CSV row.
pub fn csv_row<R: ?Sized>(
    w: &mut impl Write,
    cols: &[Col<R>],
    row: &R,
    ctx: &Ctx,
) -> io::Result<()> {
    let mut cells = Vec::with_capacity(cols.len() + 4);
    csv_cells(cols, row, ctx, &mut cells);
    writeln!(w, "{}", cells.join(","))
}

// serde_json wraps the sink's error in its own; `io::Error::from` unwraps it again (an I/O error comes
// back as it was), so a closed pipe still reads as one to tool-io's stdout policy.
fn json_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *w, s).map_err(io::Error::from)
}

fn json_val(w: &mut impl Write, v: &Val<'_>) -> io::Result<()> {
    match v {
        Val::Null => w.write_all(b"null"),
        Val::Str(s) => json_str(w, s),
        Val::U(n) => write!(w, "{n}"),
        Val::I(n) => write!(w, "{n}"),
        Val::Bool(b) => write!(w, "{b}"),
        Val::F(x) if x.is_finite() => serde_json::to_writer(&mut *w, x).map_err(io::Error::from),
        Val::F(_) => w.write_all(b"null"),
    }
}

fn json_us(w: &mut impl Write, v: &Val<'_>, minus: i64) -> io::Result<()> {
    match v {
        Val::I(ns) => json_val(w, &Val::F(ns_to_us(ns.saturating_sub(minus)))),
        _ => w.write_all(b"null"),
    }
}

/// Writes the members of a row's JSON object (`"k":v,…`, no braces), `first` telling whether a
/// comma is due before the first one.
pub fn json_members<R: ?Sized>(
    w: &mut impl Write,
    cols: &[Col<R>],
    row: &R,
    ctx: &Ctx,
    mut first: bool,
) -> io::Result<()> {
    let mut key = |w: &mut dyn Write, k: &str| -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        first = false;
        write!(w, "\"{k}\":")
    };
    for c in cols.iter().filter(|c| !c.name.is_empty()) {
        let v = (c.get)(row);
        match c.kind {
            Kind::Plain => {
                key(w, c.name)?;
                json_val(w, &v)?;
            }
            Kind::Dur | Kind::Time => {
                key(w, &format!("{}_us", c.name))?;
                json_us(w, &v, 0)?;
                key(w, &format!("{}_ns", c.name))?;
                json_val(w, &v)?;
                if c.kind == Kind::Time {
                    key(w, &format!("{}_rel_us", c.name))?;
                    json_us(w, &v, ctx.t0_ns)?;
                }
            }
        }
    }
    Ok(())
}

/// Writes one JSON line.
pub fn json_row<R: ?Sized>(
    w: &mut impl Write,
    cols: &[Col<R>],
    row: &R,
    ctx: &Ctx,
) -> io::Result<()> {
    w.write_all(b"{")?;
    json_members(w, cols, row, ctx, true)?;
    w.write_all(b"}\n")
}

/// A table cell's text, fitted to its column.
fn table_cell(show: Show, text: &str) -> String {
    let text = escape(text);
    match show {
        Show::No => String::new(),
        Show::Right(n) => format!("{text:>n$}"),
        Show::Left(n) => format!("{:<n$}", fit(&text, n)),
        Show::Rest => fit(&text, 160),
    }
}

/// A name cut to `width` characters for a table column.
pub fn fit(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        name.to_string()
    } else {
        let s: String = name.chars().take(width.saturating_sub(1)).collect();
        format!("{s}…")
    }
}

/// Writes the table's header line (indented two spaces, like the rows).
pub fn table_header<R: ?Sized>(w: &mut impl Write, cols: &[Col<R>]) -> io::Result<()> {
    let cells: Vec<String> = cols
        .iter()
        .filter(|c| c.show != Show::No)
        .map(|c| {
            let head = match c.kind {
                Kind::Plain => c.head.to_string(),
                Kind::Dur | Kind::Time => format!("{} µs", c.head),
            };
            table_cell(c.show, &head)
        })
        .collect();
    writeln!(w, "  {}", cells.join(" ").trim_end())
}

/// Writes one table row: times relative to the trace's first event, names escaped.
pub fn table_row<R: ?Sized>(
    w: &mut impl Write,
    cols: &[Col<R>],
    row: &R,
    ctx: &Ctx,
) -> io::Result<()> {
    let cells: Vec<String> = cols
        .iter()
        .filter(|c| c.show != Show::No)
        .map(|c| {
            let v = (c.get)(row);
            let text = match (c.kind, &v) {
                (_, Val::Null) => "-".to_string(),
                (Kind::Plain, _) => plain_text(&v),
                (Kind::Dur, _) => us_text(&v, 0),
                (Kind::Time, _) => us_text(&v, ctx.t0_ns),
            };
            table_cell(c.show, &text)
        })
        .collect();
    writeln!(w, "  {}", cells.join(" ").trim_end())
}

/// Writes one row in `format` (the CSV and table headers are the caller's, once per listing and
/// once per trace).
pub fn row<R: ?Sized>(
    w: &mut impl Write,
    format: Format,
    cols: &[Col<R>],
    row: &R,
    ctx: &Ctx,
) -> io::Result<()> {
    match format {
        Format::Table => table_row(w, cols, row, ctx),
        Format::Csv => csv_row(w, cols, row, ctx),
        Format::Json => json_row(w, cols, row, ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct R {
        name: String,
        ts: i64,
        dur: Option<i64>,
    }

    const COLS: &[Col<R>] = &[
        Col {
            name: "name",
            kind: Kind::Plain,
            head: "name",
            show: Show::Left(6),
            get: |r| Val::Str(Cow::Borrowed(&r.name)),
        },
        Col {
            name: "ts",
            kind: Kind::Time,
            head: "ts",
            show: Show::Right(10),
            get: |r| Val::I(r.ts),
        },
        Col {
            name: "dur",
            kind: Kind::Dur,
            head: "dur",
            show: Show::Right(8),
            get: |r| Val::ns(r.dur),
        },
    ];

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    /// A writer whose reader has gone: every write fails as a closed pipe does.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }

    #[test]
    fn a_closed_pipe_under_a_float_or_a_name_stays_a_closed_pipe() {
        // `kineto … --json | head -1`: the write that meets the closed pipe may be a float or a name
        // (serde_json writes those); the error must still read as a closed pipe, so the program ends
        // quietly with 0 rather than "Broken pipe" and 1.
        let r = R {
            name: "gemm".into(),
            ts: 0,
            dur: Some(1),
        };
        for v in [Val::F(1.5), Val::Str(Cow::Borrowed("gemm"))] {
            let e = json_val(&mut ClosedPipe, &v).unwrap_err();
            assert!(tool_io::stdout::is_closed_pipe(&e), "{v:?}: {e:?}");
        }
        let e = json_row(&mut ClosedPipe, COLS, &r, &Ctx::default()).unwrap_err();
        assert!(tool_io::stdout::is_closed_pipe(&e), "{e:?}");
    }

    #[test]
    fn one_column_list_drives_every_format() {
        let r = R {
            name: "a,\"b\"\u{1b}".into(),
            ts: 1_717_171_717_171_717_123,
            dur: Some(1_501),
        };
        let ctx = Ctx {
            t0_ns: 1_717_171_717_171_000_000,
        };
        assert_eq!(
            text(|w| csv_header(w, COLS)),
            "name,ts_us,ts_rel_us,dur_us\n"
        );
        assert_eq!(
            text(|w| csv_row(w, COLS, &r, &ctx)),
            "\"a,\"\"b\"\"\u{1b}\",1717171717171717.123,717.123,1.501\n"
        );
        let j: serde_json::Value =
            serde_json::from_str(&text(|w| json_row(w, COLS, &r, &ctx))).unwrap();
        assert_eq!(j["ts_ns"], 1_717_171_717_171_717_123i64);
        assert_eq!(j["ts_rel_us"], 717.123);
        assert_eq!(j["dur_ns"], 1_501);
        assert_eq!(j["dur_us"], 1.501);
        assert_eq!(j["name"], "a,\"b\"\u{1b}");
        assert_eq!(
            text(|w| table_header(w, COLS)),
            "  name        ts µs   dur µs\n"
        );
        // Relative time, escaped and fitted name.
        assert_eq!(
            text(|w| table_row(w, COLS, &r, &ctx)),
            "  a,\"b\"…    717.123    1.501\n"
        );
        let none = R {
            name: String::new(),
            ts: 0,
            dur: None,
        };
        assert!(
            text(|w| json_row(w, COLS, &none, &ctx)).contains("\"dur_us\":null,\"dur_ns\":null")
        );
        assert!(text(|w| csv_row(w, COLS, &none, &ctx)).ends_with(",\n"));
    }
}
