//! The `kl1-bandwidth` report: GB/s per family per capture and rank against the GPU's specified, claimed and
//! measured read bandwidths, and each family's per-step spread with the outlier steps named.

use serde_json::{Value, json};

use kl1_bandwidth::spread::{OUTLIER_RULE, RankSeries, Spread, key_spreads, rank_series};

use crate::chart::{self, Reference, Strip};
use crate::page::{Cell, Page, Source, Table, fmt_num};

fn is_gbps(key: &str) -> bool {
    key.contains("gbps")
}

/// The GPU's reference bandwidths from the report's `constants.gpu` (tolerant of a missing table).
fn references(report: &Value) -> (Vec<Reference>, Option<f64>, Table) {
    let gpu = report.pointer("/constants/gpu");
    let name = gpu
        .and_then(|g| g.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("GPU");
    let spec = gpu
        .and_then(|g| g.get("spec_gbps"))
        .or_else(|| report.pointer("/constants/gb10_spec_gbps"))
        .and_then(Value::as_f64);
    let mut refs = Vec::new();
    let mut table = Table::new(
        &["reference", "label", "low GB/s", "high GB/s", "source"],
        false,
    );
    if let Some(s) = spec {
        let label = gpu
            .and_then(|g| g.get("spec_label"))
            .and_then(Value::as_str)
            .unwrap_or("CLAIM");
        refs.push(Reference {
            label: format!("{name} specified {s} GB/s ({label})"),
            low: s,
            high: s,
        });
        table.rows.push(vec![
            Cell::text(format!("{name} specified")),
            Cell::text(label),
            Cell::Num(s, Source::Tool),
            Cell::Num(s, Source::Tool),
            Cell::text(
                gpu.and_then(|g| g.get("spec_source"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
        ]);
    }
    for rb in gpu
        .and_then(|g| g.get("read_bandwidths"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(low), Some(high)) = (
            rb.get("low_gbps").and_then(Value::as_f64),
            rb.get("high_gbps").and_then(Value::as_f64),
        ) else {
            continue;
        };
        let id = rb.get("id").and_then(Value::as_str).unwrap_or("read");
        let label = rb.get("label").and_then(Value::as_str).unwrap_or("");
        let kind = if label == "MEASURED" {
            "measured"
        } else {
            "claimed"
        };
        let range = if high > low {
            format!("{low}–{high}")
        } else {
            format!("{low}")
        };
        refs.push(Reference {
            label: format!("{id}: {kind} read {range} GB/s ({label})"),
            low,
            high,
        });
        table.rows.push(vec![
            Cell::text(format!("{id} ({kind} read)")),
            Cell::text(label),
            Cell::Num(low, Source::Tool),
            Cell::Num(high, Source::Tool),
            Cell::text(format!(
                "{} — {}",
                rb.get("note").and_then(Value::as_str).unwrap_or(""),
                rb.get("source").and_then(Value::as_str).unwrap_or("")
            )),
        ]);
    }
    (refs, spec, table)
}

/// The per-step spread table (one row per rank and GB/s number) and each row's derived numbers.
struct SpreadRows {
    table: Table,
    derived: Vec<Value>,
}

impl SpreadRows {
    fn new() -> SpreadRows {
        SpreadRows {
            table: Table::new(
                &[
                    "window",
                    "capture",
                    "rank",
                    "number",
                    "mean (tool)",
                    "% of spec",
                    "steps",
                    "min",
                    "p50",
                    "p90",
                    "max",
                    "outlier steps",
                ],
                true,
            ),
            derived: Vec::new(),
        }
    }

    /// The row of `key` of rank `r`: the tool's mean, its share of the spec bandwidth, the spread `sp`.
    fn push(&mut self, r: &RankSeries<'_>, key: &str, sp: Option<&Spread>, spec: Option<f64>) {
        let mean = r.mean.get(key).and_then(Value::as_f64);
        let pct = match (mean, spec) {
            (Some(m), Some(s)) if s > 0.0 => Some(m / s * 100.0),
            _ => None,
        };
        let mut row = vec![
            Cell::text(r.window),
            Cell::text(r.capture),
            Cell::text(r.rank),
            Cell::text(key.to_owned()),
            Cell::tool(r.mean.get(key)),
            pct.map_or(Cell::Missing, |p| {
                Cell::NumNote(p, Source::Derived, "%".into())
            }),
        ];
        match sp {
            Some(s) => {
                row.push(Cell::Num(s.count as f64, Source::Derived));
                for v in [s.min, s.p50, s.p90, s.max] {
                    row.push(Cell::Num(v, Source::Derived));
                }
                row.push(Cell::text(
                    s.outliers
                        .iter()
                        .map(|o| format!("step {} = {}", o.step, fmt_num(o.value)))
                        .collect::<Vec<_>>()
                        .join("; "),
                ));
            }
            None => row.extend((0..6).map(|_| Cell::Missing)),
        }
        self.table.rows.push(row);
        self.derived.push(json!({
            "window": r.window, "capture": r.capture, "rank": r.rank, "key": key,
            "pct_of_spec": pct, "spread": sp,
        }));
    }
}

/// The GB/s numbers of a capture's ranks, in order of first appearance: the chart's categories.
fn gbps_keys(ranks: &[&RankSeries<'_>]) -> Vec<String> {
    let mut cats: Vec<String> = Vec::new();
    for r in ranks {
        for k in r.mean.keys().filter(|k| is_gbps(k)) {
            if !cats.contains(k) {
                cats.push(k.clone());
            }
        }
    }
    cats
}

/// One rank's strip of the capture's chart (its means and per-step dots, outliers marked), adding its rows
/// to the spread table.
fn rank_strip(
    r: &RankSeries<'_>,
    cats: &[String],
    spec: Option<f64>,
    rows: &mut SpreadRows,
) -> Strip {
    let spreads = key_spreads(r, is_gbps);
    let mut strip = Strip {
        name: format!("rank {}", r.rank),
        steps: Vec::new(),
        means: Vec::new(),
    };
    for (ci, key) in cats.iter().enumerate() {
        if let Some(m) = r.mean.get(key).and_then(Value::as_f64) {
            strip.means.push((ci, m));
        }
        let sp = spreads.iter().find(|(k, _)| k == key).map(|(_, s)| s);
        for (label, v) in r.values(key) {
            let out = sp.is_some_and(|s| s.outliers.iter().any(|o| o.step == label));
            strip.steps.push((ci, v, out));
        }
        rows.push(r, key, sp, spec);
    }
    strip
}

/// The chart of each capture (one strip per rank), in the report's order, filling the spread table.
fn capture_charts(
    page: &mut Page,
    series: &[RankSeries<'_>],
    refs: &[Reference],
    spec: Option<f64>,
    rows: &mut SpreadRows,
) {
    let mut captures: Vec<(&str, &str)> = Vec::new();
    for s in series {
        if !captures.contains(&(s.window, s.capture)) {
            captures.push((s.window, s.capture));
        }
    }
    for (window, capture) in captures {
        let ranks: Vec<_> = series
            .iter()
            .filter(|s| s.window == window && s.capture == capture)
            .collect();
        let cats = gbps_keys(&ranks);
        let strips: Vec<Strip> = ranks
            .iter()
            .map(|r| rank_strip(r, &cats, spec, rows))
            .collect();
        if cats.is_empty() {
            page.h3(&format!("{window} / {capture}"));
            page.absent("GB/s numbers for this capture");
            continue;
        }
        let names: Vec<String> = cats
            .iter()
            .map(|c| c.strip_suffix(".gbps").unwrap_or(c).to_owned())
            .collect();
        page.chart(chart::strip(
            &format!("{window} / {capture}: GB/s per family"),
            "GB/s",
            &names,
            &strips,
            refs,
        ));
    }
}

/// The windows the report skipped, and why, as it says.
fn skipped_section(page: &mut Page, report: &Value) {
    let skipped: Vec<String> = report
        .get("skipped")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .flat_map(|(w, list)| {
            list.as_array()
                .into_iter()
                .flatten()
                .map(move |s| format!("{w}: {}", s.as_str().unwrap_or(&s.to_string())))
        })
        .collect();
    if !skipped.is_empty() {
        page.h2("Skipped");
        for s in skipped {
            page.p(&s);
        }
    }
}

/// The page for one `kl1-bandwidth` JSON report (the result file it writes).
pub fn render(report: &Value) -> String {
    let mut page = Page::new(
        "kl1-bandwidth: achieved GB/s per kernel family",
        report.clone(),
    );
    page.p(
        "GB/s = ESTIMATED bytes (from the model's shapes) / MEASURED kernel time (from the trace). Bars: the \
         tool's per-rank mean; dots: one per step; red crosses: outlier steps.",
    );
    let (refs, spec, ref_table) = references(report);
    page.h2("Reference bandwidths of the GPU");
    if ref_table.rows.is_empty() {
        page.absent("the GPU's reference bandwidths (constants.gpu)");
    } else {
        page.table(&ref_table);
    }
    let series = match rank_series(report) {
        Ok(s) => s,
        Err(e) => {
            page.h2("Captures");
            page.absent(&format!("captures ({e})"));
            return page.finish();
        }
    };
    let mut rows = SpreadRows::new();
    page.h2("GB/s per family, per capture and rank");
    if series.is_empty() {
        page.absent("captures");
    }
    capture_charts(&mut page, &series, &refs, spec, &mut rows);
    page.h2("Per-step spread (sortable: click a header)");
    page.p(&format!(
        "Outlier rule: {OUTLIER_RULE}. Percentiles interpolate linearly (numpy's default)."
    ));
    if rows.table.rows.is_empty() {
        page.absent("per-step GB/s");
    } else {
        page.table(&rows.table);
    }
    skipped_section(&mut page, report);
    page.derived(json!({ "outlier_rule": OUTLIER_RULE, "rows": rows.derived }));
    page.finish()
}
