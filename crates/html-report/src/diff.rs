//! The page and plain-text cells of a comparison of two runs (`kineto diff`, `kl1-bandwidth diff`). The
//! comparison itself, rows, Δ % and the gate, is `run_compare`'s; this module only renders it.

use run_compare::verdict::Judged;
use run_compare::verdict_rows::{Comparability, UNPHASED, VerdictRow};
use run_compare::{Change, Comparison, EXCEEDS_RULE, FAIL_RULE, Gate, MISSING_RULE, Verdict};
use serde_json::{Value, json};

use crate::page::{Cell, Page, Section, Source, Table, esc, fmt_num};

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

/// A verdict as plain-text cells for a terminal table (`kineto diff`, `provenance diff` of benchmark
/// results): Δ % (`+20.00`) and its interval (`[+18.10, +21.93]`), `–` where there is none.
pub fn judged_cells(j: &Judged) -> [String; 2] {
    let interval = match (j.ci_low_pct, j.ci_high_pct) {
        (Some(lo), Some(hi)) => format!("[{lo:+.2}, {hi:+.2}]"),
        _ => "–".to_owned(),
    };
    [
        j.delta_pct
            .map_or_else(|| "–".to_owned(), |d| format!("{d:+.2}")),
        interval,
    ]
}

/// One row of the page's table: the phase (`None` for a comparison without phases), where, the number,
/// and its change.
type PageRow<'a> = (Option<&'a str>, String, String, &'a Change);

fn diff_page(
    title: &str,
    tool: Value,
    values: Source,
    rows: Vec<PageRow<'_>>,
    (only_old, only_new): (&[String], &[String]),
    verdict: Option<&Verdict>,
    lead: Option<(&Section, Value)>,
) -> String {
    let mut page = Page::new(title, tool);
    let lead_json = lead.map(|(section, rows)| {
        page.section("verdict", section);
        rows
    });
    page.p(&format!("{EXCEEDS_RULE}. {FAIL_RULE}. {MISSING_RULE}."));
    if let Some(v) = verdict {
        let class = if v.passed() { "ok" } else { "flag" };
        page.raw(&format!(
            "<p class=\"{class}\">{}</p>",
            crate::page::esc(&v.line())
        ));
    }
    page.h2("Old → new (sortable: click a header)");
    // Phases are compared like with like: with phases, each row says its own.
    let phased = rows.iter().any(|r| r.0.is_some());
    let headers = [
        "phase",
        "where",
        "number",
        "old",
        "new",
        "Δ %",
        "old range",
        "new range",
        "Δ exceeds spread",
    ];
    let mut t = Table::new(&headers[usize::from(!phased)..], true);
    let mut derived = Vec::new();
    for (phase, place, key, c) in &rows {
        let range = |s: &Option<step_stats::Spread>| {
            s.as_ref()
                .map_or(Cell::Missing, |s| Cell::Num(s.range(), Source::Derived))
        };
        let mut cells = Vec::with_capacity(headers.len());
        if phased {
            cells.push(Cell::text(phase.unwrap_or(UNPHASED)));
        }
        cells.extend([
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
        t.rows.push(cells);
        derived.push(json!({"phase": phase, "where": place, "key": key, "change": c, "old_range": c.old_spread.as_ref().map(|s| s.range()), "new_range": c.new_spread.as_ref().map(|s| s.range())}));
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
    page.derived(match lead_json {
        Some(v) => json!({"verdicts": v, "rows": derived}),
        None => json!({"rows": derived}),
    });
    page.finish()
}

/// The rows of a comparison as the page lists them: (phase, where, number, change).
fn page_rows<'a>(phase: Option<&'a str>, diff: &'a Comparison) -> Vec<PageRow<'a>> {
    diff.rows
        .iter()
        .map(|r| (phase, r.place.clone(), r.key.clone(), &r.change))
        .collect()
}

/// The page for `kl1-bandwidth diff OLD NEW` (`diff` from `kl1_bandwidth::diff::diff` on the same two files).
pub fn kl1_diff_page(old: &Value, new: &Value, diff: &Comparison, gate: Option<Gate>) -> String {
    diff_page(
        "kl1-bandwidth diff",
        json!({"old": old, "new": new}),
        // Old and new are the reports' own `mean` values.
        Source::Tool,
        page_rows(None, diff),
        (&diff.only_in_old, &diff.only_in_new),
        gate.map(|g| diff.verdict(g)).as_ref(),
        None,
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
        page_rows(None, diff),
        (&diff.only_in_old, &diff.only_in_new),
        gate.map(|g| diff.verdict(g)).as_ref(),
        None,
    )
}

/// What `kineto diff` judged: its verdict rows, the runs' comparability and the gate's line.
pub struct Verdicts<'a> {
    /// The verdict rows, in the diff's order.
    pub rows: &'a [VerdictRow],
    /// Whether the runs can be compared, and why.
    pub comparability: &'a Comparability,
    /// The gate's `PASS: …` / `FAIL: …` line, with `--fail-above`.
    pub gate_line: Option<(bool, String)>,
    /// The equivalence margin, %.
    pub margin_pct: f64,
}

/// Rows the interval chart draws at most (the table lists every row).
const CHART_ROWS: usize = 60;

/// The page for `kineto diff A B` with its verdict: first whether the runs can be compared and why, the gate,
/// each verdict row's interval as a bar against zero and the verdict table; then the per-bucket comparison
/// of each phase (`phases`: `run_compare::verdict_rows::PhaseDiff`'s, never pooled), each row naming its
/// phase, and what is in one run only (`only`: old, new).
pub fn kineto_verdict_page(
    old: &[Value],
    new: &[Value],
    phases: &[(String, Comparison)],
    only: (&[String], &[String]),
    v: &Verdicts<'_>,
) -> String {
    let mut s = Section::default();
    s.h2("Verdict");
    let c = v.comparability;
    let (class, said) = if c.comparable {
        ("ok", "The runs can be compared.")
    } else {
        (
            "flag",
            "The runs are NOT comparable: a verdict below may reflect the setup, not the change.",
        )
    };
    s.raw(&format!("<p class=\"{class}\">{}</p>", esc(said)));
    if !c.reasons.is_empty() {
        let items: String = c
            .reasons
            .iter()
            .map(|r| format!("<li>{}</li>", esc(r)))
            .collect();
        s.raw(&format!("<ul>{items}</ul>"));
    }
    if let Some((passed, line)) = &v.gate_line {
        let class = if *passed { "ok" } else { "flag" };
        s.raw(&format!("<p class=\"{class}\">{}</p>", esc(line)));
    }
    s.p(run_compare::verdict::METHOD);
    s.raw(&interval_chart(v.rows, v.margin_pct));
    s.table(&verdict_table(v.rows));
    diff_page(
        "kineto diff",
        json!({"old": old, "new": new}),
        Source::Derived,
        phases
            .iter()
            .flat_map(|(phase, c)| page_rows(Some(phase), c))
            .collect(),
        only,
        None,
        Some((&s, json!(v.rows))),
    )
}

/// How a verdict row is named on the page: `rank 0 · decode · step_time`, `… · kernel · NAME`.
fn row_label(r: &VerdictRow) -> String {
    r.label_with(" · ")
}

fn verdict_table(rows: &[VerdictRow]) -> Table {
    let mut t = Table::new(
        &[
            "what",
            "verdict",
            "Δ %",
            "low %",
            "high %",
            "n old",
            "n new",
            "comparable",
            "why",
        ],
        true,
    );
    let num = |x: Option<f64>| {
        x.filter(|x| x.is_finite())
            .map_or(Cell::Missing, |x| Cell::Num(x, Source::Derived))
    };
    for r in rows {
        let j = &r.judged;
        t.rows.push(vec![
            Cell::Name(row_label(r)),
            Cell::text(j.verdict.as_str()),
            num(j.delta_pct),
            num(j.ci_low_pct),
            num(j.ci_high_pct),
            Cell::Num(j.n_old as f64, Source::Derived),
            Cell::Num(j.n_new as f64, Source::Derived),
            Cell::text(if r.comparable { "yes" } else { "NO" }),
            Cell::text(j.reasons.join("; ")),
        ]);
    }
    t
}

/// Each row's interval as a bar against zero (the ±margin band shaded), its estimate as a dot (hollow
/// without an interval); an interval past the scale is cut with an arrow.
fn interval_chart(rows: &[VerdictRow], margin_pct: f64) -> String {
    let drawn = &rows[..rows.len().min(CHART_ROWS)];
    if drawn.is_empty() {
        return String::new();
    }
    let finite = |x: Option<f64>| x.filter(|x| x.is_finite());
    let reach = drawn
        .iter()
        .flat_map(|r| {
            [
                finite(r.judged.ci_low_pct),
                finite(r.judged.ci_high_pct),
                finite(r.judged.delta_pct),
            ]
        })
        .flatten()
        .fold(2.0 * margin_pct.max(1.0), |m, x| m.max(x.abs()))
        .min(200.0);
    let (label_w, plot_w, row_h) = (360.0, 400.0, 18.0);
    let x = |pct: f64| label_w + plot_w / 2.0 + pct.clamp(-reach, reach) / reach * (plot_w / 2.0);
    let height = row_h * (drawn.len() as f64 + 1.5);
    let mut svg = format!(
        "<svg class=\"intervals\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" \
         role=\"img\" aria-label=\"each change's interval against zero\">",
        label_w + plot_w + 10.0
    );
    svg.push_str(&format!(
        "<rect x=\"{:.1}\" y=\"0\" width=\"{:.1}\" height=\"{height}\" fill=\"#e8f4e8\"/>\
         <line x1=\"{z:.1}\" x2=\"{z:.1}\" y1=\"0\" y2=\"{height}\" stroke=\"#555\"/>\
         <text x=\"{z:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">0 (±{} % shaded; scale ±{} %)</text>",
        x(-margin_pct),
        x(margin_pct) - x(-margin_pct),
        height - 4.0,
        fmt_num(margin_pct),
        fmt_num(reach),
        z = x(0.0),
    ));
    for (i, r) in drawn.iter().enumerate() {
        let y = row_h * (i as f64 + 0.75);
        let colour = match r.judged.verdict {
            run_compare::verdict::Call::Slower => "#c0392b",
            run_compare::verdict::Call::Faster => "#1e8449",
            run_compare::verdict::Call::Unchanged => "#555",
            run_compare::verdict::Call::Inconclusive => "#b9770e",
        };
        svg.push_str(&format!(
            "<text x=\"0\" y=\"{:.1}\" font-size=\"11\">{}</text>",
            y + 4.0,
            esc(&row_label(r).chars().take(56).collect::<String>())
        ));
        if let (Some(lo), Some(hi)) = (finite(r.judged.ci_low_pct), finite(r.judged.ci_high_pct)) {
            svg.push_str(&format!(
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"4\">\
                 <title>{}: [{lo:+.2} %, {hi:+.2} %]</title></line>",
                x(lo),
                x(hi),
                esc(&row_label(r))
            ));
            // An end past the scale: an arrow at that edge, pointing out (one a side, however many ends).
            let mut edges: Vec<f64> = [lo, hi]
                .iter()
                .filter(|e| e.abs() > reach)
                .map(|e| e.signum())
                .collect();
            edges.dedup();
            for dir in edges {
                svg.push_str(&format!(
                    "<path d=\"M{:.1} {y:.1} l{:.1} -4 l0 8 z\" fill=\"{colour}\"/>",
                    x(dir * reach) + dir * 6.0,
                    -dir * 6.0
                ));
            }
        }
        if let Some(d) = finite(r.judged.delta_pct) {
            let fill = if r.judged.ci_low_pct.is_some() {
                colour
            } else {
                "white"
            };
            svg.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{colour}\"/>",
                x(d)
            ));
        }
    }
    svg.push_str("</svg>");
    if rows.len() > drawn.len() {
        svg.push_str(&format!(
            "<p>The chart draws the first {} of {} rows; the table lists them all.</p>",
            drawn.len(),
            rows.len()
        ));
    }
    svg
}
