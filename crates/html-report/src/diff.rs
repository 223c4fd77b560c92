//! The page and plain-text cells of a comparison of two runs (`kineto diff`, `kl1-bandwidth diff`). The
//! comparison itself, rows, Δ % and the gate, is `run_compare`'s; this module only renders it.

use run_compare::{Change, Comparison, EXCEEDS_RULE, FAIL_RULE, Gate, MISSING_RULE, Verdict};
use serde_json::{Value, json};

use crate::page::{Cell, Page, Source, Table, fmt_num};

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

/// The rows of a comparison as the page lists them: (where, number, change).
fn page_rows(diff: &Comparison) -> Vec<(String, String, &Change)> {
    diff.rows
        .iter()
        .map(|r| (r.place.clone(), r.key.clone(), &r.change))
        .collect()
}

/// The page for `kl1-bandwidth diff OLD NEW` (`diff` from `kl1_bandwidth::diff::diff` on the same two files).
pub fn kl1_diff_page(old: &Value, new: &Value, diff: &Comparison, gate: Option<Gate>) -> String {
    diff_page(
        "kl1-bandwidth diff",
        json!({"old": old, "new": new}),
        // Old and new are the reports' own `mean` values.
        Source::Tool,
        page_rows(diff),
        &diff.only_in_old,
        &diff.only_in_new,
        gate.map(|g| diff.verdict(g)).as_ref(),
    )
}

/// The page for `kineto diff A B`: `old` and `new` the two `kineto budget --json` listings, `diff` their
/// comparison (`run_compare::budget::compare_json` on the same two).
pub fn kineto_diff_page(
    old: &[Value],
    new: &[Value],
    diff: &Comparison,
    gate: Option<Gate>,
) -> String {
    diff_page(
        "kineto diff",
        json!({"old": old, "new": new}),
        // Old and new are means over steps, computed by run_compare, not read from the listings.
        Source::Derived,
        page_rows(diff),
        &diff.only_in_old,
        &diff.only_in_new,
        gate.map(|g| diff.verdict(g)).as_ref(),
    )
}
