//! The listing machinery: a table's column list (`kineto-tables`, the one schema the CLI, Parquet and
//! Python share) drives the CSV header and cells and the JSON keys and values; a view ([`Cell`]s, in
//! `views.rs`) picks the columns the text table shows, with their headers and widths. Rows are written one
//! at a time to the output; no listing is built in memory.
//!
//! Times follow the schema's naming rule (`crate::ColInfo::keys`): a duration or time column
//! `X_ns` is written in JSON as `X_us` (f64) and `X_ns` (exact), plus `X_rel_us` (from the trace's first
//! event) for an absolute time; in CSV as `X_us` (and `X_rel_us`), exact three-decimal text from integer
//! ns; in the table as µs, relative for absolute times. Nothing is ever NaN or infinite: such a float is
//! null in JSON and an empty cell in CSV and the table.

pub mod budget;
pub mod notes;
pub mod summary;
pub mod views;

use crate::{Col, Unit, Val};
use kineto_trace::{ns_to_us, ns_to_us_string};
use std::borrow::Cow;
use std::io::{self, Write};
use tool_io::csv::text_cell;
use tool_io::terminal::escape;

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

/// Per-trace context of the cells: the time relative times count from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ctx {
    /// The trace's first event, ns.
    pub t0_ns: i64,
}

/// Where a shown column sits in the text table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Right-aligned in `width` characters.
    Right(usize),
    /// Left-aligned in `width` characters, cut with `…` when longer.
    Left(usize),
    /// Last column: what the terminal width ([`TEXT_WIDTH`]) leaves after the other columns (at least
    /// [`MIN_REST`] characters), cut with `…` when longer.
    Rest,
}

/// The columns every text table and note fits in: a terminal of 120 columns. The JSON and CSV forms keep
/// every value whole.
pub const TEXT_WIDTH: usize = 120;

/// The narrowest a table's last column gets, however wide the columns before it.
pub const MIN_REST: usize = 24;

/// How a shown column's value is written in the text table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// As the value is: text, integers, floats with three decimals, ns as µs; null is `-`.
    Plain,
    /// As [`Fmt::Plain`], null written as the given text.
    NullAs(&'static str),
    /// A float divided by 10⁹ with two decimals (bytes as GB).
    Giga,
    /// A kernel's name as people say it: the function's qualified name with its template arguments folded
    /// (`kineto_trace::template::display_name`; Itanium-mangled names read).
    Name,
}

/// One column of a text table: the schema column it shows, its header (` µs` is added for a duration or
/// time), its place and its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    /// The schema column's name.
    pub col: &'static str,
    /// The header.
    pub head: &'static str,
    /// Where it sits.
    pub place: Place,
    /// How its value is written.
    pub fmt: Fmt,
}

/// A column of the view, right-aligned.
pub const fn right(col: &'static str, head: &'static str, width: usize) -> Cell {
    Cell {
        col,
        head,
        place: Place::Right(width),
        fmt: Fmt::Plain,
    }
}

/// A column of the view, left-aligned and cut.
pub const fn left(col: &'static str, head: &'static str, width: usize) -> Cell {
    Cell {
        col,
        head,
        place: Place::Left(width),
        fmt: Fmt::Plain,
    }
}

/// The last column of the view, as long as it is.
pub const fn rest(col: &'static str, head: &'static str) -> Cell {
    Cell {
        col,
        head,
        place: Place::Rest,
        fmt: Fmt::Plain,
    }
}

impl Cell {
    /// The same cell with another format.
    pub const fn fmt(self, fmt: Fmt) -> Cell {
        Cell { fmt, ..self }
    }
}

/// A table's column list with the view its text table shows: everything a listing needs to write a row in
/// any [`Format`].
pub struct Listing<'c, R> {
    cols: &'c [Col<R>],
    shown: Vec<(&'c Col<R>, Cell)>,
    /// The width of the last column ([`Place::Rest`]).
    rest: usize,
}

impl<'c, R> Listing<'c, R> {
    /// The listing of `cols` whose text table shows `view` (a cell naming no column shows nothing; the
    /// tests check every view names only columns of its table).
    pub fn new(cols: &'c [Col<R>], view: &[Cell]) -> Listing<'c, R> {
        let shown = view
            .iter()
            .filter_map(|v| cols.iter().find(|c| c.name == v.col).map(|c| (c, *v)))
            .collect();
        let rest = rest_width(view);
        Listing { cols, shown, rest }
    }

    /// The view's cells that name no column of the table (empty for a correct view).
    #[cfg(test)]
    pub fn unknown(cols: &[Col<R>], view: &[Cell]) -> Vec<&'static str> {
        view.iter()
            .filter(|v| !cols.iter().any(|c| c.name == v.col))
            .map(|v| v.col)
            .collect()
    }

    /// Writes the CSV header line.
    pub fn csv_header(&self, w: &mut impl Write) -> io::Result<()> {
        csv_header(w, self.cols)
    }

    /// Writes the text table's header line (indented two spaces, like the rows).
    pub fn table_header(&self, w: &mut impl Write) -> io::Result<()> {
        let cells: Vec<String> = self
            .shown
            .iter()
            .map(|(c, v)| {
                let head = if c.unit.is_ns() {
                    Cow::Owned(format!("{} µs", v.head))
                } else {
                    Cow::Borrowed(v.head)
                };
                placed(v.place, &head, self.rest)
            })
            .collect();
        writeln!(w, "  {}", cells.join(" ").trim_end())
    }

    /// Writes one text-table row: times relative to the trace's first event, names escaped.
    pub fn table_row(&self, w: &mut impl Write, row: &R, ctx: &Ctx) -> io::Result<()> {
        let cells: Vec<String> = self
            .shown
            .iter()
            .map(|(c, v)| {
                placed(
                    v.place,
                    &table_text(c, v.fmt, &(c.get)(row), ctx),
                    self.rest,
                )
            })
            .collect();
        writeln!(w, "  {}", cells.join(" ").trim_end())
    }

    /// Writes one row in `format` (the CSV and table headers are the caller's, once per listing and once
    /// per trace).
    pub fn row(&self, w: &mut impl Write, format: Format, row: &R, ctx: &Ctx) -> io::Result<()> {
        match format {
            Format::Table => self.table_row(w, row, ctx),
            Format::Csv => csv_row(w, self.cols, row, ctx),
            Format::Json => json_row(w, self.cols, row, ctx),
        }
    }
}

/// The CSV header keys of a column list.
pub fn csv_keys<'c, R: 'c>(cols: impl IntoIterator<Item = &'c Col<R>>) -> Vec<String> {
    cols.into_iter().flat_map(|c| c.keys().csv).collect()
}

/// Writes the CSV header line of a column list.
pub fn csv_header<R>(w: &mut impl Write, cols: &[Col<R>]) -> io::Result<()> {
    writeln!(w, "{}", csv_keys(cols).join(","))
}

/// A float with three decimals; empty when it is not finite.
fn three(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        String::new()
    }
}

/// A value as plain text: empty for null.
fn plain_text(v: &Val<'_>) -> String {
    match v {
        Val::Str(s) => s.as_deref().unwrap_or("").to_string(),
        Val::Bool(b) => b.map_or(String::new(), |b| b.to_string()),
        Val::U32(n) => n.map_or(String::new(), |n| n.to_string()),
        Val::U64(n) => n.map_or(String::new(), |n| n.to_string()),
        Val::I64(n) => n.map_or(String::new(), |n| n.to_string()),
        Val::F64(x) => x.map_or(String::new(), three),
    }
}

/// A duration or time as µs text, `minus` ns subtracted first: exact for integers, three decimals for
/// floats; empty for null.
fn us_text(v: &Val<'_>, minus: i64) -> String {
    match v {
        Val::I64(Some(ns)) => ns_to_us_string(ns.saturating_sub(minus)),
        Val::U64(Some(ns)) => ns_to_us_string((*ns as i64).saturating_sub(minus)),
        Val::F64(Some(ns)) => three((ns - minus as f64) / 1000.0),
        _ => String::new(),
    }
}

/// The CSV cells of a row, in [`csv_keys`] order (without the line end), appended to `cells`.
pub fn csv_cells<'c, R: 'c>(
    cols: impl IntoIterator<Item = &'c Col<R>>,
    row: &R,
    ctx: &Ctx,
    cells: &mut Vec<String>,
) {
    for c in cols {
        let v = (c.get)(row);
        match c.unit {
            Unit::Ns => cells.push(us_text(&v, 0)),
            Unit::TimeNs => {
                cells.push(us_text(&v, 0));
                cells.push(us_text(&v, ctx.t0_ns));
            }
            // Text through the workspace's one CSV cell rule; numbers are written by us and need none.
            _ if matches!(v, Val::Str(_)) => cells.push(text_cell(&plain_text(&v)).into_owned()),
            _ => cells.push(plain_text(&v)),
        }
    }
}

/// Writes one CSV row.
pub fn csv_row<R>(w: &mut impl Write, cols: &[Col<R>], row: &R, ctx: &Ctx) -> io::Result<()> {
    let mut cells = Vec::with_capacity(cols.len() + 4);
    csv_cells(cols, row, ctx, &mut cells);
    writeln!(w, "{}", cells.join(","))
}

// serde_json wraps the sink's error in its own; `io::Error::from` unwraps it again (an I/O error comes
// back as it was), so a closed pipe still reads as one to tool-io's stdout policy.
fn json_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *w, s).map_err(io::Error::from)
}

fn json_f64(w: &mut impl Write, x: Option<f64>) -> io::Result<()> {
    match x {
        Some(x) if x.is_finite() => serde_json::to_writer(&mut *w, &x).map_err(io::Error::from),
        _ => w.write_all(b"null"),
    }
}

fn json_val(w: &mut impl Write, v: &Val<'_>) -> io::Result<()> {
    fn int(w: &mut impl Write, n: Option<impl std::fmt::Display>) -> io::Result<()> {
        match n {
            Some(n) => write!(w, "{n}"),
            None => w.write_all(b"null"),
        }
    }
    match v {
        Val::Str(Some(s)) => json_str(w, s),
        Val::Str(None) => w.write_all(b"null"),
        Val::Bool(b) => int(w, *b),
        Val::U32(n) => int(w, *n),
        Val::U64(n) => int(w, *n),
        Val::I64(n) => int(w, *n),
        Val::F64(x) => json_f64(w, *x),
    }
}

/// A duration or time in µs, `minus` ns subtracted first.
fn json_us(w: &mut impl Write, v: &Val<'_>, minus: i64) -> io::Result<()> {
    match v {
        Val::I64(Some(ns)) => json_f64(w, Some(ns_to_us(ns.saturating_sub(minus)))),
        Val::F64(Some(ns)) => json_f64(w, Some((ns - minus as f64) / 1000.0)),
        _ => w.write_all(b"null"),
    }
}

/// Writes the members of a row's JSON object (`"k":v,…`, no braces), `first` telling whether no member
/// precedes them. Dotted names nest one level (`bytes.weights` → `"bytes":{"weights":…}`; a table's
/// columns of one group are adjacent, which `kineto-tables` checks).
pub fn json_members<'c, R: 'c>(
    w: &mut impl Write,
    cols: impl IntoIterator<Item = &'c Col<R>>,
    row: &R,
    ctx: &Ctx,
    mut first: bool,
) -> io::Result<()> {
    // The group whose object is open, and whether a member was written in it.
    let mut open: Option<&str> = None;
    let mut inner_first = true;
    for c in cols {
        let (group, name) = match c.name.split_once('.') {
            Some((g, n)) => (Some(g), n),
            None => (None, c.name),
        };
        if group != open {
            if open.is_some() {
                w.write_all(b"}")?;
            }
            if let Some(g) = group {
                if !first {
                    w.write_all(b",")?;
                }
                first = false;
                write!(w, "\"{g}\":{{")?;
                inner_first = true;
            }
            open = group;
        }
        let comma = if open.is_some() {
            &mut inner_first
        } else {
            &mut first
        };
        let mut key = |w: &mut dyn Write, k: &str| -> io::Result<()> {
            if !*comma {
                w.write_all(b",")?;
            }
            *comma = false;
            write!(w, "\"{k}\":")
        };
        let v = (c.get)(row);
        match c.info().base() {
            None => {
                key(w, name)?;
                json_val(w, &v)?;
            }
            Some(_) => {
                // The name within its group, without `_ns`: the base of the conveniences.
                let base = name.strip_suffix("_ns").unwrap_or(name);
                key(w, &format!("{base}_us"))?;
                json_us(w, &v, 0)?;
                key(w, name)?;
                json_val(w, &v)?;
                if c.unit == Unit::TimeNs {
                    key(w, &format!("{base}_rel_us"))?;
                    json_us(w, &v, ctx.t0_ns)?;
                }
            }
        }
    }
    if open.is_some() {
        w.write_all(b"}")?;
    }
    Ok(())
}

/// Writes one JSON line.
pub fn json_row<R>(w: &mut impl Write, cols: &[Col<R>], row: &R, ctx: &Ctx) -> io::Result<()> {
    w.write_all(b"{")?;
    json_members(w, cols, row, ctx, true)?;
    w.write_all(b"}\n")
}

/// A value's text in a text-table cell: null as `-` (or the format's text), ns as µs (absolute times
/// relative to the trace's first event), floats with three decimals.
fn table_text<R>(c: &Col<R>, fmt: Fmt, v: &Val<'_>, ctx: &Ctx) -> String {
    if let Val::F64(Some(x)) = v
        && !x.is_finite()
    {
        return String::new();
    }
    if v.is_null() {
        return match fmt {
            Fmt::NullAs(s) => s.to_string(),
            _ => "-".to_string(),
        };
    }
    match (fmt, c.unit, v) {
        (Fmt::Giga, _, Val::F64(Some(x))) => format!("{:.2}", x / 1e9),
        (Fmt::Name, _, Val::Str(Some(s))) => kineto_trace::template::display_name(s).into_owned(),
        (_, Unit::Ns, _) => us_text(v, 0),
        (_, Unit::TimeNs, _) => us_text(v, ctx.t0_ns),
        _ => plain_text(v),
    }
}

/// A table cell's text, fitted to its place (`rest`: the last column's width).
fn placed(place: Place, text: &str, rest: usize) -> String {
    let text = escape(text);
    match place {
        Place::Right(n) => format!("{text:>n$}"),
        Place::Left(n) => format!("{:<n$}", fit(&text, n)),
        Place::Rest => fit(&text, rest),
    }
}

/// What [`TEXT_WIDTH`] leaves for a view's last column: the row's two-space indent, the other cells and
/// the spaces between them taken off, [`MIN_REST`] at least.
pub fn rest_width(view: &[Cell]) -> usize {
    let fixed: usize = view
        .iter()
        .map(|c| match c.place {
            Place::Right(n) | Place::Left(n) => n + 1,
            Place::Rest => 0,
        })
        .sum();
    TEXT_WIDTH.saturating_sub(2 + fixed).max(MIN_REST)
}

pub use kineto_trace::notes::fit;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::col;

    struct R {
        name: String,
        ts: i64,
        dur: Option<i64>,
        bytes: f64,
    }

    #[rustfmt::skip]
    fn cols<'a>() -> &'a [Col<R>] {
        &[
            col!("name", Str, None, "a name", |r| r.name.as_str()),
            col!("ts_ns", I64, TimeNs, "a time", |r| r.ts),
            col!("dur_ns", I64?, Ns, "a duration", |r| r.dur),
            col!("bytes.weights", F64, Bytes, "a nested float", |r| r.bytes),
            col!("bytes.kv_ns", I64?, Ns, "a nested duration", |r| r.dur),
        ]
    }

    const VIEW: &[Cell] = &[
        left("name", "name", 6),
        right("ts_ns", "ts", 10),
        right("dur_ns", "dur", 8),
        right("bytes.weights", "GB", 5).fmt(Fmt::Giga),
    ];

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut v = Vec::new();
        f(&mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn one_column_list_drives_every_format() {
        let r = R {
            name: "a,\"b\"\u{1b}".into(),
            ts: 1_717_171_717_171_717_123,
            dur: Some(1_501),
            bytes: 2.5e9,
        };
        let ctx = Ctx {
            t0_ns: 1_717_171_717_171_000_000,
        };
        let l = Listing::new(cols(), VIEW);
        assert!(Listing::unknown(cols(), VIEW).is_empty());
        assert_eq!(
            text(|w| l.csv_header(w)),
            "name,ts_us,ts_rel_us,dur_us,bytes.weights,bytes.kv_us\n"
        );
        // The ESC shown as an escape in CSV as in the table (`tool_io::csv`); exact only in JSON.
        assert_eq!(
            text(|w| l.row(w, Format::Csv, &r, &ctx)),
            "\"a,\"\"b\"\"\\u{1b}\",1717171717171717.123,717.123,1.501,2500000000.000,1.501\n"
        );
        let line = text(|w| l.row(w, Format::Json, &r, &ctx));
        assert!(
            line.ends_with(
                ",\"bytes\":{\"weights\":2500000000.0,\"kv_us\":1.501,\"kv_ns\":1501}}\n"
            ),
            "{line}"
        );
        let j: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(j["ts_ns"], 1_717_171_717_171_717_123i64);
        assert_eq!(j["ts_rel_us"], 717.123);
        assert_eq!(j["dur_ns"], 1_501);
        assert_eq!(j["dur_us"], 1.501);
        assert_eq!(j["name"], "a,\"b\"\u{1b}");
        assert_eq!(
            text(|w| l.table_header(w)),
            "  name        ts µs   dur µs    GB\n"
        );
        // Relative time, escaped and fitted name, bytes as GB.
        assert_eq!(
            text(|w| l.table_row(w, &r, &ctx)),
            "  a,\"b\"…    717.123    1.501  2.50\n"
        );
        let none = R {
            name: String::new(),
            ts: 0,
            dur: None,
            bytes: f64::NAN,
        };
        let line = text(|w| l.row(w, Format::Json, &none, &ctx));
        assert!(line.contains("\"dur_us\":null,\"dur_ns\":null"), "{line}");
        assert!(line.contains("\"weights\":null"), "{line}");
        assert!(text(|w| l.row(w, Format::Csv, &none, &ctx)).ends_with(",,,\n"));
        // A null duration shows `-`; a float that is not finite shows nothing.
        assert!(text(|w| l.table_row(w, &none, &ctx)).ends_with("       -\n"));
    }

    #[test]
    fn a_view_naming_no_column_is_found() {
        let view = [right("nope", "nope", 4)];
        assert_eq!(Listing::unknown(cols(), &view), vec!["nope"]);
    }

    /// A writer whose reader has gone: every write fails as a closed pipe does (the other renderers'
    /// tests use it too).
    pub(super) struct ClosedPipe;

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
            bytes: 1.0,
        };
        for v in [Val::F64(Some(1.5)), Val::Str(Some(Cow::Borrowed("gemm")))] {
            let e = json_val(&mut ClosedPipe, &v).unwrap_err();
            assert!(tool_io::stdout::is_closed_pipe(&e), "{v:?}: {e:?}");
        }
        let e = json_row(&mut ClosedPipe, cols(), &r, &Ctx::default()).unwrap_err();
        assert!(tool_io::stdout::is_closed_pipe(&e), "{e:?}");
    }
}
