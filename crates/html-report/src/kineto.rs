//! The `kineto` report: per-step stacked bars of bucket time and idle, ranks side by side (stragglers), the
//! per-step spread of every bucket, a sortable top table, and a roofline chart when roofline JSON is given.
//!
//! Tolerant by design: the budget rows, the `top` output and the roofline output gain fields as the tools
//! grow, so every section renders what is present and says "not in this output" for what is not.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use step_stats::{OUTLIER_RULE, Spread, spread};

use crate::chart::{self, RoofPoint};
use crate::page::{Cell, Page, Source, Table, fmt_num};

/// What one kineto report is made of: the tool's outputs, each as its JSON.
#[derive(Debug, Clone, Copy, Default)]
pub struct KinetoInputs<'a> {
    /// The kineto budget listing as JSON: one object per step (per rank).
    pub budget: &'a [Value],
    /// The kineto top listing as JSON, if any (an array of rows, or an object holding one).
    pub top: Option<&'a Value>,
    /// Roofline output, if any: objects with `gbps`, `tflops`, `peak_gbps`, `peak_tflops`, `bytes_total`,
    /// `flops_total` per step, anywhere in the value.
    pub roofline: Option<&'a Value>,
}

impl KinetoInputs<'_> {
    /// The value embedded as the page's tool JSON: `{"budget": [...], "top": …, "roofline": …}`.
    pub fn embedded(&self) -> Value {
        json!({ "budget": self.budget, "top": self.top, "roofline": self.roofline })
    }
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn step_label(row: &Value, i: usize) -> String {
    for k in ["name", "step", "index"] {
        match row.get(k) {
            Some(Value::String(s)) => return s.clone(),
            Some(Value::Number(n)) => return format!("{k} {n}"),
            _ => {}
        }
    }
    format!("#{i}")
}

/// `rank N`, or `rank unknown` when the trace does not say (`null` or absent).
pub(crate) fn rank_name(row: &Value) -> String {
    match row.get("rank") {
        Some(Value::Number(n)) => format!("rank {n}"),
        Some(Value::String(s)) => format!("rank {s}"),
        _ => "rank unknown".to_owned(),
    }
}

fn rank_key(row: &Value) -> String {
    let rank = rank_name(row);
    let file = row.get("file").and_then(Value::as_str).unwrap_or("");
    let file = file.rsplit('/').next().unwrap_or(file);
    format!("{rank} ({file})")
}

fn spread_cells(s: Option<&Spread>) -> Vec<Cell> {
    match s {
        None => (0..7).map(|_| Cell::Missing).collect(),
        Some(s) => vec![
            Cell::Num(s.count as f64, Source::Derived),
            Cell::Num(s.mean, Source::Derived),
            Cell::Num(s.min, Source::Derived),
            Cell::Num(s.p50, Source::Derived),
            Cell::Num(s.p90, Source::Derived),
            Cell::Num(s.max, Source::Derived),
            Cell::text(
                s.outliers
                    .iter()
                    .map(|o| format!("{} = {}", o.step, fmt_num(o.value)))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        ],
    }
}

/// Step labels without their common prefix up to its last `#` (`ProfilerStep#12` → `12`), and the prefix.
fn short_labels(steps: &[String]) -> (String, Vec<String>) {
    let Some(first) = steps.first() else {
        return (String::new(), Vec::new());
    };
    let Some(cut) = first.rfind('#').map(|i| i + 1) else {
        return (String::new(), steps.to_vec());
    };
    let prefix = &first[..cut];
    if steps.iter().all(|s| s.starts_with(prefix)) {
        (
            prefix.to_owned(),
            steps.iter().map(|s| s[cut..].to_owned()).collect(),
        )
    } else {
        (String::new(), steps.to_vec())
    }
}

/// Groups budget rows by rank (file + rank), in first-seen order.
fn by_rank(budget: &[Value]) -> Vec<(String, Vec<&Value>)> {
    let mut out: Vec<(String, Vec<&Value>)> = Vec::new();
    for row in budget {
        let k = rank_key(row);
        match out.iter_mut().find(|(r, _)| *r == k) {
            Some((_, rows)) => rows.push(row),
            None => out.push((k, vec![row])),
        }
    }
    out
}

/// Exclusive µs of `bucket` in a budget row (the field spelled `exclusive_us`, or a bare number).
fn bucket_us(row: &Value, bucket: &str) -> Option<f64> {
    let b = row.get("buckets")?.get(bucket)?;
    b.get("exclusive_us")
        .and_then(Value::as_f64)
        .or_else(|| b.as_f64())
}

/// The page for a kineto run.
pub fn render(inputs: &KinetoInputs<'_>) -> String {
    let mut page = Page::new(
        "kineto: step budget, top kernels, roofline",
        inputs.embedded(),
    );
    let mut derived = Map::new();
    budget_section(&mut page, inputs.budget, &mut derived);
    top_section(&mut page, inputs, &mut derived);
    roofline_section(&mut page, inputs.roofline, &mut derived);
    derived.insert("outlier_rule".into(), OUTLIER_RULE.into());
    page.derived(Value::Object(derived));
    page.finish()
}

fn budget_section(page: &mut Page, budget: &[Value], derived: &mut Map<String, Value>) {
    page.h2("Per-step budget: exclusive time per bucket and idle (µs, MEASURED)");
    if budget.is_empty() {
        page.absent("budget rows");
        return;
    }
    let ranks = by_rank(budget);
    // One bucket order for every rank, largest total first, so colours agree across the charts.
    let mut totals: BTreeMap<String, f64> = BTreeMap::new();
    for row in budget {
        for (b, _) in row
            .get("buckets")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            *totals.entry(b.clone()).or_default() += bucket_us(row, b).unwrap_or(0.0);
        }
    }
    let mut buckets: Vec<String> = totals.keys().cloned().collect();
    buckets.sort_by(|a, b| totals[b].total_cmp(&totals[a]));
    let mut with_idle = buckets.clone();
    with_idle.push("idle".into());
    let stack = |row: &Value| -> Vec<f64> {
        let mut v: Vec<f64> = buckets
            .iter()
            .map(|b| bucket_us(row, b).unwrap_or(0.0).max(0.0))
            .collect();
        v.push(num(row, "idle_us").unwrap_or(0.0).max(0.0));
        v
    };
    let y_max = budget
        .iter()
        .map(|r| num(r, "span_us").unwrap_or(0.0).max(stack(r).iter().sum()))
        .fold(0.0, f64::max);
    if ranks.len() > 1 {
        page.p("Ranks side by side on one time scale: a straggler's bars stand taller.");
    }
    page.raw("<div class=\"row\">");
    for (rank, rows) in &ranks {
        let steps: Vec<String> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| step_label(r, i))
            .collect();
        let (prefix, short) = short_labels(&steps);
        let values: Vec<Vec<f64>> = rows.iter().map(|r| stack(r)).collect();
        let x_desc = if prefix.is_empty() {
            "step".to_owned()
        } else {
            format!("step ({prefix}N)")
        };
        page.chart(chart::stacked(
            rank, &x_desc, "µs", &short, &with_idle, &values, y_max,
        ));
    }
    page.raw("</div>");

    if ranks.len() > 1 {
        page.h3("Step span per rank (µs, MEASURED); the slowest rank named");
        let mut headers: Vec<&str> = vec!["step"];
        headers.extend(ranks.iter().map(|(r, _)| r.as_str()));
        headers.push("slowest");
        let mut t = Table::new(&headers, true);
        let n = ranks.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
        for i in 0..n {
            let first = ranks
                .iter()
                .find_map(|(_, r)| r.get(i))
                .map_or_else(|| format!("#{i}"), |r| step_label(r, i));
            let mut row = vec![Cell::text(first)];
            let mut slowest: Option<(&str, f64)> = None;
            for (name, rows) in &ranks {
                let span = rows.get(i).and_then(|r| r.get("span_us"));
                if let Some(s) = span.and_then(Value::as_f64)
                    && slowest.is_none_or(|(_, m)| s > m)
                {
                    slowest = Some((name, s));
                }
                row.push(Cell::tool(span));
            }
            row.push(Cell::text(slowest.map(|s| s.0).unwrap_or("")));
            t.rows.push(row);
        }
        page.table(&t);
    }

    page.h3("Per-step spread of each bucket (µs)");
    page.p(&format!("Outlier rule: {OUTLIER_RULE}."));
    let mut t = Table::new(
        &[
            "rank",
            "bucket",
            "steps",
            "mean",
            "min",
            "p50",
            "p90",
            "max",
            "outlier steps",
        ],
        true,
    );
    let mut rows_json = Vec::new();
    for (rank, rows) in &ranks {
        let mut names: Vec<String> = vec!["span_us".into(), "idle_us".into()];
        names.extend(buckets.iter().cloned());
        for b in names {
            let vals: Vec<(String, f64)> = rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let v = if b.ends_with("_us") {
                        num(r, &b)
                    } else {
                        bucket_us(r, &b)
                    };
                    Some((step_label(r, i), v?))
                })
                .collect();
            let sp = spread(&vals);
            if sp.is_none() {
                continue;
            }
            let mut row = vec![Cell::text(rank.clone()), Cell::text(b.clone())];
            row.extend(spread_cells(sp.as_ref()));
            t.rows.push(row);
            rows_json.push(json!({"rank": rank, "bucket": b, "spread": sp}));
        }
    }
    page.table(&t);
    derived.insert("bucket_spreads".into(), Value::Array(rows_json));
}

/// The first array of objects in `v` (itself, or the first field holding one).
fn rows_of(v: &Value) -> Option<&Vec<Value>> {
    match v {
        Value::Array(a) if a.iter().all(Value::is_object) => Some(a),
        Value::Object(m) => m.values().find_map(rows_of),
        _ => None,
    }
}

fn scalar_table(rows: &[Value], sortable: bool) -> Table {
    let mut cols: Vec<String> = Vec::new();
    for r in rows {
        for (k, v) in r.as_object().into_iter().flatten() {
            if !v.is_object() && !v.is_array() && !cols.contains(k) {
                cols.push(k.clone());
            }
        }
    }
    let headers: Vec<&str> = cols.iter().map(String::as_str).collect();
    let mut t = Table::new(&headers, sortable);
    for r in rows {
        t.rows.push(
            cols.iter()
                .map(|c| match r.get(c) {
                    Some(Value::Number(n)) => n
                        .as_f64()
                        .map_or(Cell::Missing, |x| Cell::Num(x, Source::Tool)),
                    Some(Value::String(s)) => Cell::text(s.clone()),
                    Some(Value::Bool(b)) => Cell::text(b.to_string()),
                    _ => Cell::Missing,
                })
                .collect(),
        );
    }
    t
}

fn top_section(page: &mut Page, inputs: &KinetoInputs<'_>, derived: &mut Map<String, Value>) {
    page.h2("Top kernels (sortable: click a header)");
    if let Some(rows) = inputs.top.and_then(rows_of) {
        page.table(&scalar_table(rows, true));
        return;
    }
    page.absent("a per-kernel top list");
    // The budget rows name families with count and time per step: their sums over steps stand in.
    let mut fam: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
    for row in inputs.budget {
        for (f, v) in row
            .get("families")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let e = fam.entry((rank_key(row), f.clone())).or_default();
            e.0 += num(v, "count").unwrap_or(0.0);
            e.1 += num(v, "sum_us").unwrap_or(0.0);
        }
    }
    if fam.is_empty() {
        return;
    }
    page.p("Families summed over the budget's steps (sums computed here from the budget rows):");
    let mut t = Table::new(&["rank", "family", "kernels", "Σ µs"], true);
    let mut list: Vec<_> = fam.into_iter().collect();
    list.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
    let mut js = Vec::new();
    for ((rank, f), (count, sum)) in list {
        t.rows.push(vec![
            Cell::text(rank.clone()),
            Cell::text(f.clone()),
            Cell::Num(count, Source::Derived),
            Cell::Num(sum, Source::Derived),
        ]);
        js.push(json!({"rank": rank, "family": f, "count": count, "sum_us": sum}));
    }
    page.table(&t);
    derived.insert("family_sums".into(), Value::Array(js));
}

/// Every object in `v` that has both `gbps` and `tflops`, in document order.
fn roof_rows(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) if m.contains_key("gbps") && m.contains_key("tflops") => {
            out.push(v.clone())
        }
        Value::Object(m) => m.values().for_each(|x| roof_rows(x, out)),
        Value::Array(a) => a.iter().for_each(|x| roof_rows(x, out)),
        _ => {}
    }
}

fn roofline_section(page: &mut Page, roofline: Option<&Value>, derived: &mut Map<String, Value>) {
    page.h2("Roofline: achieved GB/s and TFLOP/s per step against the GPU's roofs");
    let mut rows = Vec::new();
    if let Some(r) = roofline {
        roof_rows(r, &mut rows);
    }
    if rows.is_empty() {
        page.absent("roofline numbers");
        return;
    }
    let labelled: Vec<(String, &Value)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (step_label(r, i), r))
        .collect();
    let values = |k: &str| -> Vec<(String, f64)> {
        labelled
            .iter()
            .filter_map(|(l, r)| Some((l.clone(), num(r, k)?)))
            .collect()
    };
    let sp_gbps = spread(&values("gbps"));
    let sp_tflops = spread(&values("tflops"));
    let outlier = |l: &str| {
        [&sp_gbps, &sp_tflops].iter().any(|s| {
            s.as_ref()
                .is_some_and(|s| s.outliers.iter().any(|o| o.step == l))
        })
    };
    let points: Vec<RoofPoint> = labelled
        .iter()
        .filter_map(|(l, r)| {
            let intensity = num(r, "flops_total")? / num(r, "bytes_total")?;
            Some(RoofPoint {
                label: l.clone(),
                intensity,
                tflops: num(r, "tflops")?,
                outlier: outlier(l),
            })
        })
        .collect();
    let peak = |k: &str| rows.iter().find_map(|r| num(r, k));
    match (peak("peak_gbps"), peak("peak_tflops")) {
        (Some(g), Some(t)) => page.chart(chart::roofline("roofline", &points, g, t)),
        _ => page.absent("the GPU's peak GB/s and TFLOP/s (no roof to draw)"),
    }
    page.p(&format!(
        "Spread of the achieved numbers over the steps; outlier rule: {OUTLIER_RULE}."
    ));
    let mut t = Table::new(
        &[
            "number",
            "steps",
            "mean",
            "min",
            "p50",
            "p90",
            "max",
            "outlier steps",
        ],
        true,
    );
    for (name, sp) in [("GB/s", &sp_gbps), ("TFLOP/s", &sp_tflops)] {
        let mut row = vec![Cell::text(name)];
        row.extend(spread_cells(sp.as_ref()));
        t.rows.push(row);
    }
    page.table(&t);
    page.h3("Per-step roofline numbers");
    page.table(&scalar_table(&rows, true));
    derived.insert(
        "roofline_spread".into(),
        json!({"gbps": sp_gbps, "tflops": sp_tflops}),
    );
}
