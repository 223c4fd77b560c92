//! The `kineto` report: the doctor's findings when given, then per-step stacked bars of bucket time and idle,
//! ranks side by side (stragglers), each rank's step budget and the per-step spread of every bucket, the
//! timeline of one chosen step, a sortable top table per trace, and a roofline chart when roofline JSON is
//! given. The tables are views over `kineto-tables`' columns ([`crate::view`]).
//!
//! Tolerant by design: the budget rows, the `top` output and the roofline output gain fields as the tools
//! grow, so every section renders what is present and says "not in this output" for what is not.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use step_stats::{OUTLIER_RULE, Spread, spread};

use crate::chart::{self, RoofPoint};
use crate::page::{Cell, Page, Section, Source, Table, fmt_num};
use crate::timeline::{self, Mark};
use crate::view::{self, Shown, TimeUnit};
use kineto_tables::Table as Schema;

/// What one kineto report is made of: the tool's outputs, each as its JSON.
#[derive(Debug, Clone, Copy, Default)]
pub struct KinetoInputs<'a> {
    /// The findings (`kineto doctor`'s), rendered apart: the page opens with them. `None`: the page
    /// opens with the budget.
    pub findings: Option<&'a Section>,
    /// The kineto budget listing as JSON: one object per step (per rank).
    pub budget: &'a [Value],
    /// The kineto top listing as JSON, if any (an array of rows, or an object holding one).
    pub top: Option<&'a Value>,
    /// Roofline output, if any: objects with `gbps`, `tflops`, `peak_gbps`, `peak_tflops`, `bytes_total`,
    /// `flops_total` per step, anywhere in the value.
    pub roofline: Option<&'a Value>,
    /// The timeline of one step per trace, if any: an array of objects with `file`, `rank`, `step`,
    /// `name`, `chosen` (why this step), `window_lo_ns`, `window_hi_ns`, `idle_gaps_ns` (`[[lo, hi], …]`,
    /// the budget's) and `ops` (the step's `gpu_ops` rows, [`crate::view::TIMELINE_OPS`]; at most
    /// [`crate::timeline_cap::OPS_CAP`], the longest, with `ops_cut` saying what was left off, or all of
    /// them, which the page caps itself); or `absent` (why a trace has none).
    pub timeline: Option<&'a Value>,
    /// Time ranges to mark on the timelines (the findings'); empty: none.
    pub marks: &'a [Mark],
}

impl KinetoInputs<'_> {
    /// The value embedded as the page's tool JSON: `{"budget": [...], "top": …, "roofline": …,
    /// "timeline": …, "marks": […], "marks_left_off": n, "findings": …}` (the findings' JSON, `null` without
    /// findings). Of each trace's marks, only the widest [`timeline::DRAW_CAP`] (those a timeline can
    /// draw) are embedded; `marks_left_off` counts the others, which the timeline's statement describes.
    pub fn embedded(&self) -> Value {
        let (held, left_off) = crate::timeline_cap::widest_marks(self.marks, timeline::DRAW_CAP);
        json!({
            "budget": self.budget,
            "top": self.top,
            "roofline": self.roofline,
            "timeline": self.timeline,
            "marks": held,
            "marks_left_off": left_off,
            "findings": self.findings.map(Section::json),
        })
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

/// A spread's cells; with a time unit, its µs values are shown in that unit (`data-v` the µs value).
fn spread_cells(s: Option<&Spread>, unit: impl Into<Option<TimeUnit>>) -> Vec<Cell> {
    let div = unit.into().map_or(1.0, |u| u.ns() / 1e3);
    let v = |x: f64| Cell::Scaled(x, Source::Derived, div);
    match s {
        None => (0..7).map(|_| Cell::Missing).collect(),
        Some(s) => vec![
            Cell::Num(s.count as f64, Source::Derived),
            v(s.mean),
            v(s.min),
            v(s.p50),
            v(s.p90),
            v(s.max),
            Cell::text(
                s.outliers
                    .iter()
                    .map(|o| format!("{} = {}", o.step, fmt_num(o.value / div)))
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
pub(crate) fn by_rank(budget: &[Value]) -> Vec<(String, Vec<&Value>)> {
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
        "kineto: step budget, timeline, top kernels, roofline",
        inputs.embedded(),
    );
    let mut derived = Map::new();
    if let Some(f) = inputs.findings {
        page.section("findings", f);
    }
    let buckets = bucket_order(inputs.budget);
    budget_section(&mut page, inputs.budget, &buckets, &mut derived);
    timeline_section(&mut page, inputs, &buckets, &mut derived);
    top_section(&mut page, inputs, &mut derived);
    roofline_section(&mut page, inputs.roofline, &mut derived);
    derived.insert("outlier_rule".into(), OUTLIER_RULE.into());
    page.derived(Value::Object(derived));
    page.finish()
}

/// Every bucket of the budget, largest total first: one order (and so one colour each) for every chart.
fn bucket_order(budget: &[Value]) -> Vec<String> {
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
    buckets
}

/// A bucket's colour on every chart of the page (the stacked bars' series colour).
fn bucket_color(buckets: &[String], b: &str) -> String {
    let c = match buckets.iter().position(|x| x == b) {
        Some(i) => chart::color(i),
        None => plotters::style::RGBColor(119, 119, 119),
    };
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// `rank N — file` for a heading: the trace's file named once, not on every row.
pub(crate) fn trace_heading(row: &Value) -> String {
    let file = row.get("file").and_then(Value::as_str).unwrap_or("");
    let short = file.rsplit('/').next().unwrap_or(file);
    format!("{} — {short}", rank_name(row))
}

/// One rank's steps (its `by_rank` key and budget rows).
type RankRows<'a> = (String, Vec<&'a Value>);

fn budget_section(
    page: &mut Page,
    budget: &[Value],
    buckets: &[String],
    derived: &mut Map<String, Value>,
) {
    page.h2("Per-step budget: exclusive time per bucket and idle (MEASURED)");
    if budget.is_empty() {
        page.absent("budget rows");
        return;
    }
    let ranks = by_rank(budget);
    budget_charts(page, budget, &ranks, buckets);
    if ranks.len() > 1 {
        span_per_rank_table(page, budget, &ranks);
    }
    let mut rows_json = Vec::new();
    for (key, rows) in &ranks {
        rank_budget_tables(page, key, rows, buckets, &mut rows_json);
    }
    derived.insert("bucket_spreads".into(), Value::Array(rows_json));
}

/// Stacked bars of each rank's steps (buckets, then idle), every rank on one time scale.
fn budget_charts(page: &mut Page, budget: &[Value], ranks: &[RankRows<'_>], buckets: &[String]) {
    let mut with_idle = buckets.to_vec();
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
    for (rank, rows) in ranks {
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
}

/// Each step's span per rank (steps by position in each rank's list), the slowest rank named.
fn span_per_rank_table(page: &mut Page, budget: &[Value], ranks: &[RankRows<'_>]) {
    page.h3("Step span per rank (MEASURED); the slowest rank named");
    let spans: Vec<f64> = budget.iter().filter_map(span_ns).collect();
    let unit = TimeUnit::for_max_ns(spans.iter().fold(0.0, |m: f64, v| m.max(*v)));
    let mut headers: Vec<String> = vec!["step".into()];
    headers.extend(
        ranks
            .iter()
            .map(|(_, rows)| format!("{} ({})", rank_name(rows[0]), unit.symbol())),
    );
    headers.push("slowest".into());
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&headers, true);
    t.titles = std::iter::once("the step (by position in each rank's list)".to_owned())
        .chain(ranks.iter().map(|(k, _)| format!("span_ns of {k}")))
        .collect();
    let n = ranks.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    for i in 0..n {
        let first = ranks
            .iter()
            .find_map(|(_, r)| r.get(i))
            .map_or_else(|| format!("#{i}"), |r| step_label(r, i));
        let mut row = vec![Cell::text(first)];
        let mut slowest: Option<(String, f64)> = None;
        for (_, rows) in ranks {
            let span = rows.get(i).and_then(|r| span_ns(r));
            if let Some(s) = span
                && slowest.as_ref().is_none_or(|(_, m)| s > *m)
            {
                slowest = Some((rank_name(rows[0]), s));
            }
            row.push(span_cell(rows.get(i).copied(), unit));
        }
        row.push(Cell::text(slowest.map(|s| s.0).unwrap_or_default()));
        t.rows.push(row);
    }
    page.table(&t);
}

/// One rank's step budget table (folded past 30 steps) and the spread of its span, idle and each bucket,
/// whose derived numbers go to `rows_json`.
fn rank_budget_tables(
    page: &mut Page,
    key: &str,
    rows: &[&Value],
    buckets: &[String],
    rows_json: &mut Vec<Value>,
) {
    page.h3(&format!("{}: the step budget", trace_heading(rows[0])));
    page.p(&format!(
        "Phases: {} (docs/doctor.md §Phases).",
        crate::doctor::phase_counts(rows)
    ));
    // Each step's phase and how it was found beside its name, its span, idle and exposed comm, then
    // every bucket's exclusive time.
    let mut cols = view::shown(Schema::Steps, view::STEPS);
    let name_at = cols
        .iter()
        .position(|c| c.key == "name")
        .map_or(0, |i| i + 1);
    let phase = view::shown(Schema::Steps, view::PHASES)
        .into_iter()
        .filter(|c| c.key.starts_with("phase"));
    cols.splice(name_at..name_at, phase);
    let bucket = view::column(Schema::Budget, view::BUCKET_TIME.name);
    for b in buckets {
        cols.push(Shown {
            info: bucket,
            key: format!("buckets.{b}.{}", view::BUCKET_TIME.name),
            header: b.clone(),
            unit_group: 0,
        });
    }
    let mut t = view::rows_table(&cols, rows);
    crate::doctor::say_unknown_phases(&mut t, &cols, rows);
    table_of_steps(page, &t, rows.len());
    page.p(&format!(
        "Spread over the steps (outlier rule: {OUTLIER_RULE}):"
    ));
    let spreads = rank_spreads(key, rows, buckets, rows_json);
    // One unit for the table's times, from its largest (µs values; ×1000 to ns).
    let max = spreads
        .iter()
        .fold(0.0, |m: f64, (_, s)| m.max(s.max.abs()));
    let unit = TimeUnit::for_max_ns(max * 1e3);
    let u = unit.symbol();
    let mut t = Table::new(
        &[
            "quantity",
            "steps",
            &format!("mean ({u})"),
            &format!("min ({u})"),
            &format!("median ({u})"),
            &format!("p90 ({u})"),
            &format!("max ({u})"),
            "outlier steps",
        ],
        true,
    );
    for (label, sp) in &spreads {
        let mut row = vec![Cell::text(label.clone())];
        row.extend(spread_cells(Some(sp), unit));
        t.rows.push(row);
    }
    page.table(&t);
}

/// A table of `steps` steps, folded under a summary past 30 of them (the page stays readable).
pub(crate) fn table_of_steps(page: &mut Section, t: &Table, steps: usize) {
    if steps > 30 {
        page.raw(&format!(
            "<details><summary>{steps} steps: show the table</summary>"
        ));
        page.table(t);
        page.raw("</details>");
    } else {
        page.table(t);
    }
}

/// The spread over one rank's steps of its span, idle and each bucket (label, spread), each also added to
/// `rows_json` with its rank and bucket.
fn rank_spreads(
    key: &str,
    rows: &[&Value],
    buckets: &[String],
    rows_json: &mut Vec<Value>,
) -> Vec<(String, Spread)> {
    let mut names: Vec<(String, String)> = vec![
        ("span_us".into(), "step span".into()),
        ("idle_us".into(), "idle".into()),
    ];
    names.extend(buckets.iter().map(|b| (b.clone(), b.clone())));
    let mut spreads = Vec::new();
    for (b, label) in names {
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
        if let Some(sp) = spread(&vals) {
            rows_json.push(json!({"rank": key, "bucket": b, "spread": sp}));
            spreads.push((label, sp));
        }
    }
    spreads
}

/// A budget row's span in ns (`span_ns`, or `span_us` of older listings × 1000).
fn span_ns(r: &Value) -> Option<f64> {
    num(r, "span_ns").or_else(|| num(r, "span_us").map(|u| u * 1e3))
}

/// A row's span in `unit`, its exact tool value in `data-v` (`span_ns`, else `span_us`).
fn span_cell(r: Option<&Value>, unit: TimeUnit) -> Cell {
    match r {
        Some(r) => match (num(r, "span_ns"), num(r, "span_us")) {
            (Some(ns), _) => Cell::Scaled(ns, Source::Tool, unit.ns()),
            (None, Some(us)) => Cell::Scaled(us, Source::Tool, unit.ns() / 1e3),
            _ => Cell::Missing,
        },
        None => Cell::Missing,
    }
}

/// The timeline of the chosen step, one per trace: lanes per stream, ops coloured as the budget charts
/// colour their buckets.
fn timeline_section(
    page: &mut Page,
    inputs: &KinetoInputs<'_>,
    buckets: &[String],
    derived: &mut Map<String, Value>,
) {
    let Some(list) = inputs.timeline.and_then(Value::as_array) else {
        return;
    };
    page.h2("Timeline of one step (MEASURED): one lane per stream, ops coloured by bucket");
    page.raw(timeline::STYLE);
    page.raw(
        "<p class=\"hint\">Hover a bar for its kernel, bucket, stream, start and duration. Times are \
         from the step's first op start. Above the streams, one lane per finding of the doctor marks \
         the time it counts in this step (a step-level finding: the step's window); hover a mark for \
         its finding and duration.</p>",
    );
    let colors = |b: &str| bucket_color(buckets, b);
    let order = timeline::finding_order(inputs.marks);
    let mut layouts = Vec::new();
    for t in list {
        let file = t.get("file").and_then(Value::as_str).unwrap_or("");
        let marks: Vec<&Mark> = inputs.marks.iter().filter(|m| m.file == file).collect();
        if let Some(l) = timeline::section(page, t, layouts.len(), &colors, &marks, &order) {
            layouts.push(l);
        }
    }
    page.raw(timeline::SCRIPT);
    derived.insert("timelines".into(), Value::Array(layouts));
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
    page.h2("Top kernels (MEASURED; click a header to sort)");
    if let Some(rows) = inputs.top.and_then(rows_of) {
        // One table per trace, its file and rank in the heading.
        let mut traces: Vec<(String, Vec<&Value>)> = Vec::new();
        for r in rows {
            let k = trace_heading(r);
            match traces.iter_mut().find(|(t, _)| *t == k) {
                Some((_, v)) => v.push(r),
                None => traces.push((k, vec![r])),
            }
        }
        page.p(
            "Kernels grouped by name over the whole trace, most total time first; share is of all \
             kernels' Σ dur. Hover a header for the column's definition, a name for the whole name.",
        );
        for (heading, rows) in &traces {
            if traces.len() > 1 || !heading.ends_with(" — ") {
                page.h3(heading);
            }
            page.table(&view::table(Schema::Top, view::TOP, rows));
        }
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
        row.extend(spread_cells(sp.as_ref(), None));
        t.rows.push(row);
    }
    page.table(&t);
    page.h3("Per-step roofline numbers");
    if rows.iter().any(|r| r.get("span_ns").is_some()) {
        let rows: Vec<&Value> = rows.iter().collect();
        page.table(&view::table(Schema::Roofline, view::ROOFLINE, &rows));
    } else {
        // Rows from elsewhere (a hand-made file): every key they have.
        page.table(&scalar_table(&rows, true));
    }
    derived.insert(
        "roofline_spread".into(),
        json!({"gbps": sp_gbps, "tflops": sp_tflops}),
    );
}
