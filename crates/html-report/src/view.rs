//! What the kineto page's tables show: views over the tables of `kineto-tables`, each a list of column
//! names picked from one table's column list (never a column list of its own: a column's name, type, unit
//! and doc come from the schema), with the header a reader sees. [`table`] turns JSON rows (as `--json`
//! writes them) into a page table: a time column shown in one unit (µs or ms, chosen per column from its
//! largest value and stated in the header), its exact `_ns` value in `data-v`; a name shown whole or cut with
//! the whole name in its tooltip; every header's tooltip the column's doc.

use kineto_tables::{ColInfo, Table as Schema, Ty, Unit};
use serde_json::Value;

use crate::page::{Cell, Source, Table};

/// One column of a view: a column of the table's list, by name, and its header on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    /// The column's name in its table's list (`kineto-tables`).
    pub name: &'static str,
    /// The header shown (the unit is added to it for a time or a share).
    pub header: &'static str,
    /// Time columns of one group (not 0) share one unit, chosen from the largest value of any of them
    /// (a kernel's mean, median, min and max read side by side); group 0: the column chooses alone.
    pub unit_group: u8,
}

const fn pick(name: &'static str, header: &'static str) -> Pick {
    Pick {
        name,
        header,
        unit_group: 0,
    }
}

/// A pick whose unit is its group's (see [`Pick::unit_group`]).
const fn grouped(name: &'static str, header: &'static str, unit_group: u8) -> Pick {
    Pick {
        name,
        header,
        unit_group,
    }
}

/// The top kernels: the name first, then family, bucket, count, total, share, mean, median, min, max.
pub const TOP: &[Pick] = &[
    pick("name", "kernel"),
    pick("family", "family"),
    pick("bucket", "bucket"),
    pick("count", "count"),
    pick("total_ns", "total"),
    pick("pct", "share"),
    grouped("mean_ns", "mean", 1),
    grouped("median_ns", "median", 1),
    grouped("min_ns", "min", 1),
    grouped("max_ns", "max", 1),
];

/// A step's budget, before its bucket columns: which step, its span, idle, exposed communication.
pub const STEPS: &[Pick] = &[
    pick("step", "step"),
    pick("name", "name"),
    pick("kernels", "kernels"),
    pick("span_ns", "span"),
    pick("idle_ns", "idle"),
    pick("comm_exposed_ns", "exposed comm"),
];

/// Each step's phase and how it was found (`Step::phase`, `Step::phase_from`): the doctor page's phase
/// table; the step budget shows its last two beside the step's name.
pub const PHASES: &[Pick] = &[
    pick("step", "step"),
    pick("name", "name"),
    pick("phase", "phase"),
    pick("phase_from", "phase from"),
];

/// A bucket's column in the step budget (one per bucket, headed by the bucket's name).
pub const BUCKET_TIME: Pick = pick("exclusive_ns", "");

/// The roofline's steps: which step, its tokens, bytes, time, rates against the peaks.
pub const ROOFLINE: &[Pick] = &[
    pick("rank", "rank"),
    pick("step", "step"),
    pick("phase", "phase"),
    pick("requests", "requests"),
    pick("query_tokens", "query tokens"),
    pick("context_tokens", "context tokens"),
    pick("bytes_total", "bytes"),
    pick("span_ns", "span"),
    pick("busy_ns", "busy"),
    pick("gbps", "GB/s"),
    pick("pct_of_peak_gbps", "of peak GB/s"),
    pick("tflops", "TFLOP/s"),
    pick("pct_of_peak_tflops", "of peak TFLOP/s"),
    pick("intensity", "FLOP/B"),
    pick("bound", "bound"),
];

/// The columns of a GPU op the timeline draws (the step's ops, from `gpu_ops`).
pub const TIMELINE_OPS: &[Pick] = &[
    pick("kind", "kind"),
    pick("index", "index"),
    pick("name", "name"),
    pick("family", "family"),
    pick("bucket", "bucket"),
    pick("stream", "stream"),
    pick("ts_ns", "start"),
    pick("dur_ns", "duration"),
];

/// A time column's unit on the page: µs below 10 ms at the column's largest value, ms from there (so a
/// column reads as at most four digits before the point, and every row of it in the same unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
}

impl TimeUnit {
    /// The unit for values whose largest magnitude is `max_ns`.
    pub fn for_max_ns(max_ns: f64) -> TimeUnit {
        if max_ns >= 1e7 {
            TimeUnit::Ms
        } else {
            TimeUnit::Us
        }
    }
    /// ns per unit.
    pub fn ns(self) -> f64 {
        match self {
            TimeUnit::Us => 1e3,
            TimeUnit::Ms => 1e6,
        }
    }
    /// The unit's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Us => "µs",
            TimeUnit::Ms => "ms",
        }
    }
}

/// The column named `name` of `schema`, if it has one.
pub fn column(schema: Schema, name: &str) -> Option<ColInfo> {
    schema.columns().into_iter().find(|c| c.name == name)
}

/// The names of a view that its table lacks (none, when the view is right: a unit test checks).
pub fn unknown(schema: Schema, view: &[Pick]) -> Vec<&'static str> {
    view.iter()
        .filter(|p| column(schema, p.name).is_none())
        .map(|p| p.name)
        .collect()
}

/// A column as a page table shows it: its schema entry (type, unit, doc), the JSON key it is read
/// under in a row (a dotted path into nested objects: `buckets.gemm.exclusive_ns`), its header.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The column of the table's list (`None`: the list lacks it; the cells are read as they come).
    pub info: Option<ColInfo>,
    /// The key (or dotted path) in a row.
    pub key: String,
    /// The header, before its unit.
    pub header: String,
    /// [`Pick::unit_group`].
    pub unit_group: u8,
}

impl Shown {
    /// `p` of `schema`, read under its own name.
    pub fn of(schema: Schema, p: &Pick) -> Shown {
        Shown {
            info: column(schema, p.name),
            key: p.name.to_owned(),
            header: p.header.to_owned(),
            unit_group: p.unit_group,
        }
    }
}

/// Every pick of `view` over `schema`.
pub fn shown(schema: Schema, view: &[Pick]) -> Vec<Shown> {
    view.iter().map(|p| Shown::of(schema, p)).collect()
}

/// The value of `key` in a row, following dots into nested objects (`buckets.gemm.exclusive_ns`); a
/// key holding a dot itself is tried whole first.
pub fn get<'v>(row: &'v Value, key: &str) -> Option<&'v Value> {
    row.get(key)
        .or_else(|| key.split('.').try_fold(row, |v, k| v.get(k)))
}

/// The page table of `rows` through `cols`. A time column's unit is chosen from its largest value over
/// `rows`; a share's header says `%`; a name is a [`Cell::Name`]; a null text is `–`.
pub fn rows_table(cols: &[Shown], rows: &[&Value]) -> Table {
    let mut t = Table::new(&[], true);
    let mut units = Vec::new();
    let largest = |c: &Shown| {
        rows.iter()
            .filter_map(|r| get(r, &c.key).and_then(Value::as_f64))
            .fold(0.0, |m: f64, v| m.max(v.abs()))
    };
    for c in cols {
        let unit = c.info.filter(|i| i.unit.is_ns()).map(|_| {
            let max = match c.unit_group {
                0 => largest(c),
                g => cols
                    .iter()
                    .filter(|o| o.unit_group == g)
                    .map(largest)
                    .fold(0.0, f64::max),
            };
            TimeUnit::for_max_ns(max)
        });
        t.headers.push(match (c.info.map(|i| i.unit), unit) {
            (_, Some(u)) => format!("{} ({})", c.header, u.symbol()),
            (Some(Unit::Pct), _) => format!("{} (%)", c.header),
            _ => c.header.clone(),
        });
        t.titles.push(
            c.info
                .map_or_else(String::new, |i| format!("{}: {}", i.name, i.doc)),
        );
        units.push(unit);
    }
    for r in rows {
        t.rows.push(
            cols.iter()
                .zip(&units)
                .map(|(c, unit)| match (get(r, &c.key), unit) {
                    (Some(Value::Number(n)), Some(u)) => n
                        .as_f64()
                        .map_or(Cell::Missing, |x| Cell::Scaled(x, Source::Tool, u.ns())),
                    (Some(Value::Number(n)), None) => n
                        .as_f64()
                        .map_or(Cell::Missing, |x| Cell::Num(x, Source::Tool)),
                    (Some(Value::String(s)), _) if c.key == "name" => Cell::Name(s.clone()),
                    (Some(Value::String(s)), _) => Cell::text(s.clone()),
                    (Some(Value::Bool(b)), _) => Cell::text(b.to_string()),
                    _ if c.info.is_some_and(|i| i.ty == Ty::Str && i.nullable) => Cell::text("–"),
                    _ => Cell::Missing,
                })
                .collect(),
        );
    }
    t
}

/// The page table of `rows` through `view` over `schema`'s columns, each pick read under its name.
pub fn table(schema: Schema, view: &[Pick], rows: &[&Value]) -> Table {
    rows_table(&shown(schema, view), rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_view_picks_columns_of_its_table() {
        assert!(unknown(Schema::Top, TOP).is_empty());
        assert!(unknown(Schema::Steps, STEPS).is_empty());
        assert!(unknown(Schema::Steps, PHASES).is_empty());
        assert!(unknown(Schema::Budget, &[BUCKET_TIME]).is_empty());
        assert!(unknown(Schema::GpuOps, TIMELINE_OPS).is_empty());
        assert!(unknown(Schema::Roofline, ROOFLINE).is_empty());
        assert_eq!(unknown(Schema::Top, &[pick("max_us", "")]), vec!["max_us"]);
    }

    /// 12 345 678 ns is past 10 ms: the column is in ms (12.35), its cells' data-v the ns; 9 999 999 ns
    /// is not: µs (10000).
    #[test]
    fn one_unit_per_column_from_its_largest_value() {
        let a = json!({"name": "k<a>", "total_ns": 12_345_678, "count": 2, "pct": 50.0, "max_ns": 9_999_999});
        let b = json!({"name": "k2", "total_ns": 1_000, "count": 1, "pct": 50.0, "max_ns": 1_000});
        let t = table(Schema::Top, TOP, &[&a, &b]).html();
        assert!(t.contains(">total (ms)</th>"), "{t}");
        assert!(t.contains(">max (µs)</th>"), "{t}");
        assert!(t.contains(">share (%)</th>"), "{t}");
        assert!(t.contains("data-v=\"12345678.0\">12.35</td>"), "{t}");
        assert!(t.contains("data-v=\"1000.0\">0.001</td>"), "{t}");
        assert!(t.contains("data-v=\"9999999.0\">10000</td>"), "{t}");
        assert!(
            t.contains("<td class=\"name\" title=\"k&lt;a&gt;\">k&lt;a&gt;</td>"),
            "{t}"
        );
        assert!(t.contains("title=\"total_ns: Σ dur\""), "{t}");
        assert!(!t.contains("file"), "no file column: {t}");
    }
}
