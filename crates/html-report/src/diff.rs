//! Two runs compared: the `kineto diff` logic (per rank and bucket, old → new, Δ % and whether Δ exceeds the
//! per-step spread) and the page and plain-text rows for both it and `kl1_bandwidth::diff`.
//!
//! The kineto side compares the mean over steps of each bucket's exclusive time (and of the step span and
//! idle time), per rank. Ranks are matched by their rank number, not their file name, since two runs' files
//! are named differently. Nothing is dropped silently: ranks and buckets on one side only are listed.

use serde::Serialize;
use serde_json::{Value, json};
use step_stats::{Change, EXCEEDS_RULE, FAIL_RULE, spread};

use crate::page::{Cell, Page, Source, Table, fmt_num};

/// One bucket (or `span_us` / `idle_us`) of one rank in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KinetoDiffRow {
    /// `rank N`.
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
    /// `rank N[: bucket]` only in the old run.
    pub only_in_old: Vec<String>,
    /// … only in the new run.
    pub only_in_new: Vec<String>,
}

impl KinetoDiff {
    /// The rows that fail a fail-above-`pct` verdict (`step_stats::FAIL_RULE`); empty is a pass.
    pub fn failing(&self, pct: f64) -> Vec<&KinetoDiffRow> {
        self.rows
            .iter()
            .filter(|r| r.change.fails_above(pct))
            .collect()
    }
}

fn rank_of(row: &Value) -> String {
    crate::kineto::rank_name(row)
}

fn step_of(row: &Value, i: usize) -> String {
    row.get("name")
        .and_then(Value::as_str)
        .map_or_else(|| format!("#{i}"), str::to_owned)
}

/// Name (bucket, `span_us`, `idle_us`) → (step label, µs) of one rank.
type RankSeries = std::collections::BTreeMap<String, Vec<(String, f64)>>;

/// Per rank: name → (step label, µs) for span, idle and each bucket's exclusive time.
fn series(budget: &[Value]) -> Vec<(String, RankSeries)> {
    let mut out: Vec<(String, RankSeries)> = Vec::new();
    for row in budget {
        let rank = rank_of(row);
        let idx = match out.iter().position(|(r, _)| *r == rank) {
            Some(i) => i,
            None => {
                out.push((rank, Default::default()));
                out.len() - 1
            }
        };
        let map = &mut out[idx].1;
        let i = map.get("span_us").map_or(0, Vec::len);
        let step = step_of(row, i);
        for k in ["span_us", "idle_us"] {
            if let Some(v) = row.get(k).and_then(Value::as_f64) {
                map.entry(k.to_owned()).or_default().push((step.clone(), v));
            }
        }
        for (b, v) in row
            .get("buckets")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(us) = v.get("exclusive_us").and_then(Value::as_f64) {
                map.entry(b.clone()).or_default().push((step.clone(), us));
            }
        }
    }
    out
}

fn order(k: &str) -> (u8, &str) {
    match k {
        "span_us" => (0, k),
        "idle_us" => (1, k),
        _ => (2, k),
    }
}

/// Compares two kineto budget listings in JSON (one object per step).
pub fn kineto_diff(old: &[Value], new: &[Value]) -> KinetoDiff {
    let (o, n) = (series(old), series(new));
    let mut out = KinetoDiff {
        rows: Vec::new(),
        only_in_old: Vec::new(),
        only_in_new: Vec::new(),
    };
    // One rank on each side is one run against the other, whatever their numbers; otherwise ranks pair by
    // number.
    let single = o.len() == 1 && n.len() == 1;
    let pair = |rank: &String| -> Option<(String, &RankSeries)> {
        if single {
            let (orank, omap) = &o[0];
            let label = if orank == rank {
                rank.clone()
            } else {
                format!("{orank} → {rank}")
            };
            return Some((label, omap));
        }
        o.iter()
            .find(|(r, _)| r == rank)
            .map(|(_, m)| (rank.clone(), m))
    };
    for (rank, _) in &o {
        if !single && !n.iter().any(|(r, _)| r == rank) {
            out.only_in_old.push(rank.clone());
        }
    }
    for (nrank, nmap) in &n {
        let Some((rank, omap)) = pair(nrank) else {
            out.only_in_new.push(nrank.clone());
            continue;
        };
        for k in omap.keys().filter(|k| !nmap.contains_key(*k)) {
            out.only_in_old.push(format!("{rank}: {k}"));
        }
        let mut keys: Vec<&String> = nmap.keys().collect();
        keys.sort_by_key(|k| order(k));
        for k in keys {
            let Some(ov) = omap.get(k) else {
                out.only_in_new.push(format!("{rank}: {k}"));
                continue;
            };
            let (os, ns) = (spread(ov), spread(&nmap[k]));
            let (Some(om), Some(nm)) = (os.as_ref().map(|s| s.mean), ns.as_ref().map(|s| s.mean))
            else {
                continue;
            };
            out.rows.push(KinetoDiffRow {
                rank: rank.clone(),
                bucket: k.clone(),
                change: Change::between(om, nm, os, ns),
            });
        }
    }
    out
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
    fail_above: Option<f64>,
) -> String {
    let mut page = Page::new(title, tool);
    page.p(&format!("{EXCEEDS_RULE}. {FAIL_RULE}."));
    if let Some(p) = fail_above {
        let failing: Vec<String> = rows
            .iter()
            .filter(|r| r.2.fails_above(p))
            .map(|r| format!("{} {}", r.0, r.1))
            .collect();
        let verdict = if failing.is_empty() {
            format!("<p class=\"ok\">PASS: no row fails at a threshold of {p} %</p>")
        } else {
            format!(
                "<p class=\"flag\">FAIL: {} row(s) fail at a threshold of {p} %: {}</p>",
                failing.len(),
                crate::page::esc(&failing.join("; "))
            )
        };
        page.raw(&verdict);
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
    fail_above: Option<f64>,
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
        fail_above,
    )
}

/// The page for `kineto diff A B` (`diff` from [`kineto_diff`] on the same two budgets).
pub fn kineto_diff_page(
    old: &[Value],
    new: &[Value],
    diff: &KinetoDiff,
    fail_above: Option<f64>,
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
        fail_above,
    )
}
