//! Two runs compared: the `kineto diff` logic (per rank and bucket, old → new, Δ % and whether Δ exceeds the
//! per-step spread) and the page and plain-text rows for both it and `kl1_bandwidth::diff`.
//!
//! The kineto side compares the mean over steps of each bucket's exclusive time (a step without the
//! bucket counts 0, as in its budget), of the step span and of the idle time, per rank. Ranks are matched
//! by their rank number, not their file name, since two runs' files are named differently; traces without
//! a rank are kept apart by file and matched by file name; two files of one side claiming the same rank
//! are refused (`kineto_trace::ranks`, the rule every tool follows). Nothing is dropped silently: ranks
//! on one side only are listed, and fail a gate ([`step_stats::MISSING_RULE`]).

use serde::Serialize;
use serde_json::{Value, json};
use step_stats::{Change, EXCEEDS_RULE, FAIL_RULE, Gate, MISSING_RULE, Verdict, spread};

use crate::page::{Cell, Page, Source, Table, fmt_num};

/// One bucket (or `span_us` / `idle_us`) of one rank in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KinetoDiffRow {
    /// `rank N` (`rank 3 → rank 1` for two lone ranks), or `file NAME` for traces without a rank.
    pub rank: String,
    /// Bucket name, or `span_us` / `idle_us`.
    pub bucket: String,
    /// Mean over steps, old → new, with Δ % and the spread test.
    #[serde(flatten)]
    pub change: Change,
}

/// Two kineto budgets compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KinetoDiff {
    /// Rows: per rank (in the new run's order), span and idle first, then buckets by name.
    pub rows: Vec<KinetoDiffRow>,
    /// `rank N` (or `file NAME`) only in the old run, and `…: span_us` / `idle_us` a rank lacks.
    pub only_in_old: Vec<String>,
    /// … only in the new run.
    pub only_in_new: Vec<String>,
}

impl KinetoDiff {
    /// The rows that fail a fail-above-`pct` verdict (`step_stats::FAIL_RULE`).
    pub fn failing(&self, pct: f64) -> Vec<&KinetoDiffRow> {
        self.rows
            .iter()
            .filter(|r| r.change.fails_above(pct))
            .collect()
    }

    /// The gate's verdict: failing rows, and what is on one side only (`step_stats::MISSING_RULE`).
    pub fn verdict(&self, gate: Gate) -> Verdict {
        Verdict::judge(
            gate,
            self.rows
                .iter()
                .map(|r| (format!("{}: {}", r.rank, r.bucket), &r.change)),
            &self.only_in_old,
            &self.only_in_new,
        )
    }
}

/// Who a budget row is: its rank, or its file when it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unit {
    Rank(u64),
    File(String),
}

impl Unit {
    fn of(row: &Value) -> Unit {
        match row.get("rank").and_then(Value::as_u64) {
            Some(r) => Unit::Rank(r),
            None => Unit::File(file_of(row).to_owned()),
        }
    }

    fn label(&self) -> String {
        match self {
            Unit::Rank(r) => format!("rank {r}"),
            Unit::File(f) => format!("file {f}"),
        }
    }
}

fn file_of(row: &Value) -> &str {
    row.get("file").and_then(Value::as_str).unwrap_or("")
}

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

fn step_of(row: &Value, i: usize) -> String {
    row.get("name")
        .and_then(Value::as_str)
        .map_or_else(|| format!("#{i}"), str::to_owned)
}

/// Name (bucket, `span_us`, `idle_us`) → (step label, µs) of one rank, every bucket with a value (0 when
/// absent) for every step.
type RankSeries = std::collections::BTreeMap<String, Vec<(String, f64)>>;

/// One rank's steps: (step label, span, idle, bucket → exclusive µs).
type Steps = Vec<(String, Option<f64>, Option<f64>, Vec<(String, f64)>)>;

/// Per rank (or rankless file): name → (step label, µs) for span, idle and each bucket's exclusive time.
/// Refused when two files claim one rank.
fn series(budget: &[Value]) -> Result<Vec<(Unit, RankSeries)>, String> {
    // Every (file, rank) pair the rows show, in order: the claims the rank rule judges.
    let mut claims: Vec<(&str, u64)> = Vec::new();
    for row in budget {
        if let Some(r) = row.get("rank").and_then(Value::as_u64) {
            let c = (file_of(row), r);
            if !claims.contains(&c) {
                claims.push(c);
            }
        }
    }
    kineto_trace::ranks::check_ranks(claims.iter().map(|&(f, r)| kineto_trace::ranks::RankClaim {
        file: std::path::Path::new(f),
        rank: Some(r),
        world_size: None,
    }))
    .map_err(|e| e.to_string())?;
    let mut units: Vec<(Unit, Steps)> = Vec::new();
    for row in budget {
        let unit = Unit::of(row);
        let idx = match units.iter().position(|(u, _)| *u == unit) {
            Some(i) => i,
            None => {
                units.push((unit, Vec::new()));
                units.len() - 1
            }
        };
        let steps = &mut units[idx].1;
        let buckets = row
            .get("buckets")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(b, v)| Some((b.clone(), v.get("exclusive_us")?.as_f64()?)))
            .collect();
        steps.push((
            step_of(row, steps.len()),
            row.get("span_us").and_then(Value::as_f64),
            row.get("idle_us").and_then(Value::as_f64),
            buckets,
        ));
    }
    Ok(units
        .into_iter()
        .map(|(unit, steps)| {
            let mut map = RankSeries::new();
            for (step, span, idle, _) in &steps {
                for (k, v) in [("span_us", span), ("idle_us", idle)] {
                    if let Some(v) = v {
                        map.entry(k.to_owned())
                            .or_default()
                            .push((step.clone(), *v));
                    }
                }
            }
            // A step without a bucket had none of its work: 0 µs, so the mean is over every step.
            let mut names: Vec<&String> = steps
                .iter()
                .flat_map(|s| s.3.iter().map(|(b, _)| b))
                .collect();
            names.sort();
            names.dedup();
            for b in names {
                let values = steps
                    .iter()
                    .map(|(step, _, _, buckets)| {
                        let v = buckets
                            .iter()
                            .find(|(n, _)| n == b)
                            .map_or(0.0, |(_, v)| *v);
                        (step.clone(), v)
                    })
                    .collect();
                map.insert(b.clone(), values);
            }
            (unit, map)
        })
        .collect())
}

fn order(k: &str) -> (u8, &str) {
    match k {
        "span_us" => (0, k),
        "idle_us" => (1, k),
        _ => (2, k),
    }
}

/// The zeros of a rank's steps: a bucket it never ran.
fn zeros(map: &RankSeries) -> Vec<(String, f64)> {
    map.get("span_us")
        .map(|v| v.iter().map(|(s, _)| (s.clone(), 0.0)).collect())
        .unwrap_or_default()
}

/// Compares two kineto budget listings in JSON (one object per step). An error when one side has two
/// files claiming the same rank.
pub fn kineto_diff(old: &[Value], new: &[Value]) -> Result<KinetoDiff, String> {
    let (o, n) = (
        series(old).map_err(|e| format!("OLD: {e}"))?,
        series(new).map_err(|e| format!("NEW: {e}"))?,
    );
    let mut out = KinetoDiff {
        rows: Vec::new(),
        only_in_old: Vec::new(),
        only_in_new: Vec::new(),
    };
    // One rank on each side is one run against the other, whatever their numbers. Otherwise ranks pair
    // by number, and rankless traces by file name when exactly one on each side has it.
    let single = o.len() == 1 && n.len() == 1;
    let unique_base = |side: &[(Unit, RankSeries)], name: &str| {
        let mut m = side
            .iter()
            .enumerate()
            .filter(|(_, (u, _))| matches!(u, Unit::File(f) if base_name(f) == name));
        match (m.next(), m.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    };
    let partner = |k: usize| -> Option<usize> {
        if single {
            return Some(0);
        }
        match &n[k].0 {
            Unit::Rank(r) => o.iter().position(|(u, _)| *u == Unit::Rank(*r)),
            Unit::File(f) => {
                let name = base_name(f);
                let i = unique_base(&o, name)?;
                unique_base(&n, name).map(|_| i)
            }
        }
    };
    let pairs: Vec<Option<usize>> = (0..n.len()).map(partner).collect();
    for (i, (unit, _)) in o.iter().enumerate() {
        if !pairs.contains(&Some(i)) {
            out.only_in_old.push(unit.label());
        }
    }
    for (k, (nunit, nmap)) in n.iter().enumerate() {
        let Some(i) = pairs[k] else {
            out.only_in_new.push(nunit.label());
            continue;
        };
        let (ounit, omap) = &o[i];
        let label = match (ounit, nunit) {
            (a, b) if a == b => a.label(),
            (Unit::File(a), Unit::File(b)) if base_name(a) == base_name(b) && !single => {
                format!("file {}", base_name(b))
            }
            (a, b) => format!("{} → {}", a.label(), b.label()),
        };
        let mut keys: Vec<&String> = omap.keys().chain(nmap.keys()).collect();
        keys.sort_by_key(|k| order(k));
        keys.dedup();
        for k in keys {
            let bucket = order(k).0 == 2;
            let (ov, nv) = match (omap.get(k), nmap.get(k)) {
                (Some(a), Some(b)) => (a.clone(), b.clone()),
                (Some(a), None) if bucket => (a.clone(), zeros(nmap)),
                (None, Some(b)) if bucket => (zeros(omap), b.clone()),
                (Some(_), None) => {
                    out.only_in_old.push(format!("{label}: {k}"));
                    continue;
                }
                _ => {
                    out.only_in_new.push(format!("{label}: {k}"));
                    continue;
                }
            };
            let (os, ns) = (spread(&ov), spread(&nv));
            let (Some(om), Some(nm)) = (os.as_ref().map(|s| s.mean), ns.as_ref().map(|s| s.mean))
            else {
                continue;
            };
            out.rows.push(KinetoDiffRow {
                rank: label.clone(),
                bucket: k.clone(),
                change: Change::between(om, nm, os, ns),
            });
        }
    }
    Ok(out)
}

/// A change as plain-text cells for a terminal table: old, new, Δ %, per-step ranges (old / new), and
/// "yes" / "no" / "?" for "Δ exceeds the spread".
pub fn change_cells(c: &Change) -> [String; 5] {
    let range = |s: &Option<step_stats::Spread>| {
        s.as_ref()
            .map_or_else(|| "–".to_owned(), |s| fmt_num(s.range()))
    };
    [
        fmt_num(c.old),
        fmt_num(c.new),
        c.delta_pct
            .map_or_else(|| "∞".to_owned(), |d| format!("{d:+.2}")),
        format!("{} / {}", range(&c.old_spread), range(&c.new_spread)),
        match c.exceeds_spread {
            Some(true) => "yes".into(),
            Some(false) => "no".into(),
            None => "?".into(),
        },
    ]
}

fn diff_page(
    title: &str,
    tool: Value,
    values: Source,
    rows: Vec<(String, String, &Change)>,
    only_old: &[String],
    only_new: &[String],
    verdict: Option<&Verdict>,
) -> String {
    let mut page = Page::new(title, tool);
    page.p(&format!("{EXCEEDS_RULE}. {FAIL_RULE}. {MISSING_RULE}."));
    if let Some(v) = verdict {
        let class = if v.passed() { "ok" } else { "flag" };
        page.raw(&format!(
            "<p class=\"{class}\">{}</p>",
            crate::page::esc(&v.line())
        ));
    }
    page.h2("Old → new (sortable: click a header)");
    let mut t = Table::new(
        &[
            "where",
            "number",
            "old",
            "new",
            "Δ %",
            "old range",
            "new range",
            "Δ exceeds spread",
        ],
        true,
    );
    let mut derived = Vec::new();
    for (place, key, c) in &rows {
        let range = |s: &Option<step_stats::Spread>| {
            s.as_ref()
                .map_or(Cell::Missing, |s| Cell::Num(s.range(), Source::Derived))
        };
        t.rows.push(vec![
            Cell::text(place.clone()),
            Cell::text(key.clone()),
            Cell::Num(c.old, values),
            Cell::Num(c.new, values),
            c.delta_pct
                .map_or_else(|| Cell::text("∞"), |d| Cell::Num(d, Source::Derived)),
            range(&c.old_spread),
            range(&c.new_spread),
            Cell::text(match c.exceeds_spread {
                Some(true) => "yes",
                Some(false) => "no",
                None => "unknown (< 2 steps)",
            }),
        ]);
        derived.push(json!({"where": place, "key": key, "change": c, "old_range": c.old_spread.as_ref().map(|s| s.range()), "new_range": c.new_spread.as_ref().map(|s| s.range())}));
    }
    if t.rows.is_empty() {
        page.absent("numbers present in both runs");
    } else {
        page.table(&t);
    }
    for (what, list) in [
        ("only in the old run", only_old),
        ("only in the new run", only_new),
    ] {
        if !list.is_empty() {
            page.h3(what);
            page.p(&list.join("; "));
        }
    }
    page.derived(json!({"rows": derived}));
    page.finish()
}

/// The page for `kl1-bandwidth diff OLD NEW` (`diff` from `kl1_bandwidth::diff::diff` on the same two files).
pub fn kl1_diff_page(
    old: &Value,
    new: &Value,
    diff: &kl1_bandwidth::diff::Diff,
    gate: Option<Gate>,
) -> String {
    let rows = diff
        .rows
        .iter()
        .map(|r| {
            (
                format!("{}/{}/rank {}", r.window, r.capture, r.rank),
                r.key.clone(),
                &r.change,
            )
        })
        .collect();
    diff_page(
        "kl1-bandwidth diff",
        json!({"old": old, "new": new}),
        // Old and new are the reports' own `mean` values.
        Source::Tool,
        rows,
        &diff.only_in_old,
        &diff.only_in_new,
        gate.map(|g| diff.verdict(g)).as_ref(),
    )
}

/// The page for `kineto diff A B` (`diff` from [`kineto_diff`] on the same two budgets).
pub fn kineto_diff_page(
    old: &[Value],
    new: &[Value],
    diff: &KinetoDiff,
    gate: Option<Gate>,
) -> String {
    let rows = diff
        .rows
        .iter()
        .map(|r| (r.rank.clone(), r.bucket.clone(), &r.change))
        .collect();
    diff_page(
        "kineto diff",
        json!({"old": old, "new": new}),
        // Old and new are means over steps computed here.
        Source::Derived,
        rows,
        &diff.only_in_old,
        &diff.only_in_new,
        gate.map(|g| diff.verdict(g)).as_ref(),
    )
}
