//! The findings of `kineto doctor` as a page section, from the rows `kineto doctor --json` prints: the
//! ranked findings (time at stake, share, origin, steps, the fix, evidence, next command), then the trust warnings
//! apart. [`doctor_section`] adds it to any page (the report page opens with it); [`doctor_html`] is the
//! page `kineto doctor --html` writes, which then shows each step's phase and how it was found (the
//! doctor compares steps like with like); the report page shows them in its step budget.

use crate::page::{Cell, Page, Section, Table, esc};
use crate::view::{self, Shown};
use kineto_tables::Table as Schema;
use serde_json::{Value, json};

fn text(row: &Value, key: &str) -> String {
    match row.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

/// One finding as people read it first: a headline (what, where, how much), a bar of its share of
/// the analysed span, the fix, and the evidence folded under it.
fn finding_card(r: &Value) -> String {
    let share = r.get("share_pct").and_then(Value::as_f64).unwrap_or(0.0);
    let at_stake = r
        .get("time_at_stake_us")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let rank = r.get("rank").and_then(Value::as_u64);
    let place = rank.map_or_else(|| text(r, "file"), |x| format!("rank {x}"));
    let headline = format!(
        "{}: {} µs at stake, {:.1} % of the analysed span — {place}, steps {}",
        text(r, "finding"),
        crate::page::fmt_num(at_stake),
        share,
        text(r, "step_list")
    );
    let (change, source) = (text(r, "fix"), text(r, "fix_source"));
    let fix = if source.is_empty() {
        esc(&change)
    } else {
        format!("{} (<a href=\"{}\">source</a>)", esc(&change), esc(&source))
    };
    let evidence = text(r, "evidence");
    format!(
        "<div class=\"finding\"><p><b>{}</b></p>\
         <div style=\"background:#eee;height:6px;max-width:40em\"><div style=\"background:#c0392b;height:6px;width:{:.1}%\"></div></div>\
         <p>Fix: {fix}</p>\
         <details><summary>evidence</summary><p title=\"{}\">{}</p><p>next: <code>{}</code></p></details></div>",
        esc(&headline),
        share.clamp(0.0, 100.0),
        esc(&evidence),
        esc(&kineto_tables::evidence_display(&evidence)),
        esc(&text(r, "next"))
    )
}

/// The fix of a finding row and, where the catalogue has one, its source.
fn fix(row: &Value) -> String {
    let (change, source) = (text(row, "fix"), text(row, "fix_source"));
    if source.is_empty() {
        change
    } else {
        format!("{change} ({source})")
    }
}

/// Adds the findings and the trust warnings of `rows` (the `doctor` table's JSON rows) to `page` (a page
/// or a section placed whole on one).
pub fn doctor_section(page: &mut Section, rows: &[Value]) {
    let kind = |r: &Value, k: &str| r.get("kind").and_then(Value::as_str) == Some(k);
    let findings: Vec<&Value> = rows.iter().filter(|r| kind(r, "finding")).collect();
    let trust: Vec<&Value> = rows.iter().filter(|r| kind(r, "trust")).collect();
    page.h2("What to fix first");
    if findings.is_empty() {
        page.p("No finding: no rule found time at stake above its threshold (docs/doctor.md).");
    } else {
        page.p(
            "Ranked by time at stake: the time each pattern occupies, an upper bound on what fixing it \
             can recover (MEASURED from the trace; ESTIMATED where set against a model's roofline). \
             Findings may overlap: each is an upper bound on its own.",
        );
        for r in &findings {
            page.raw(&finding_card(r));
        }
        page.h3("Every finding's numbers");
        let mut t = Table::new(
            &[
                "finding",
                "rank",
                "time at stake µs",
                "share %",
                "origin",
                "steps",
                "fix",
                "evidence",
                "next",
            ],
            true,
        );
        for r in findings {
            let rank = r.get("rank").and_then(Value::as_u64);
            t.rows.push(vec![
                Cell::text(text(r, "finding")),
                rank.map_or_else(
                    || Cell::text(text(r, "file")),
                    |x| Cell::tool(Some(&Value::from(x))),
                ),
                Cell::tool(r.get("time_at_stake_us")),
                Cell::tool(r.get("share_pct")),
                Cell::text(text(r, "origin")),
                Cell::text(text(r, "step_list")),
                Cell::text(fix(r)),
                Cell::text(text(r, "evidence")),
                Cell::text(text(r, "next")),
            ]);
        }
        page.table(&t);
    }
    page.h3("Trust warnings");
    if trust.is_empty() {
        page.p("None: nothing the readers reported casts doubt on these numbers.");
    } else {
        let mut t = Table::new(&["warning", "file", "evidence", "next"], false);
        for r in trust {
            t.rows.push(vec![
                Cell::text(text(r, "finding")),
                Cell::text(text(r, "file")),
                Cell::text(text(r, "evidence")),
                Cell::text(text(r, "next")),
            ]);
        }
        page.table(&t);
    }
}

/// A step row's phase as the pages say it: the marker's or the inferred one, `unknown` where neither
/// says (`phase` null: the doctor then compares the step only with steps of unknown phase).
pub(crate) fn phase_text(row: &Value) -> String {
    match row.get("phase") {
        Some(Value::String(p)) => p.clone(),
        _ => "unknown".to_owned(),
    }
}

/// How many of `steps` are of each phase, in first-seen order: `1 unknown, 5 decode`.
pub(crate) fn phase_counts(steps: &[&Value]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for s in steps {
        let p = phase_text(s);
        match counts.iter_mut().find(|(q, _)| *q == p) {
            Some((_, n)) => *n += 1,
            None => counts.push((p, 1)),
        }
    }
    counts
        .iter()
        .map(|(p, n)| format!("{n} {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// In a table of `rows` through `cols`, the `phase` column's empty cells say `unknown` (the column
/// machinery writes a null text as `–`, which would read as "not applicable").
pub(crate) fn say_unknown_phases(t: &mut Table, cols: &[Shown], rows: &[&Value]) {
    let Some(at) = cols.iter().position(|c| c.key == "phase") else {
        return;
    };
    for (cells, row) in t.rows.iter_mut().zip(rows) {
        if let Some(c) = cells.get_mut(at) {
            *c = Cell::text(phase_text(row));
        }
    }
}

/// Each trace's steps with their phase and how it was found, from `steps` (the `steps` table's rows,
/// [`view::PHASES`] and `file`, `rank`).
pub fn phases_section(page: &mut Section, steps: &[Value]) {
    page.h2("Each step's phase");
    if steps.is_empty() {
        page.absent("steps");
        return;
    }
    page.p(
        "The marker's phase where the step marker states it, else inferred from the trace (a graph \
         replay with no eager attention, attention kernels of one phase only, one query token per \
         request); unknown where nothing shows it. The doctor compares steps of one phase only \
         (docs/doctor.md §Phases).",
    );
    let cols = view::shown(Schema::Steps, view::PHASES);
    for (_, rows) in crate::kineto::by_rank(steps) {
        page.h3(&format!(
            "{}: {}",
            crate::kineto::trace_heading(rows[0]),
            phase_counts(&rows)
        ));
        let mut t = view::rows_table(&cols, &rows);
        say_unknown_phases(&mut t, &cols, &rows);
        crate::kineto::table_of_steps(page, &t, rows.len());
    }
}

/// The `kineto doctor --html` page: the findings section, then each step's phase; embedded as the
/// tool's JSON, `{"findings": rows, "steps": steps}` (the doctor's rows as `--json` prints them, the
/// steps' phase columns).
pub fn doctor_html(rows: &[Value], steps: &[Value]) -> String {
    let mut page = Page::new("kineto doctor", json!({"findings": rows, "steps": steps}));
    doctor_section(&mut page, rows);
    phases_section(&mut page, steps);
    page.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn findings_then_warnings_and_a_clean_run_says_so() {
        let rows = vec![
            json!({"kind": "finding", "finding": "exposed_comm", "file": "a.json", "rank": 1,
                   "time_at_stake_us": 30.0, "share_pct": 42.5, "origin": "MEASURED",
                   "step_list": "0", "evidence": "comm <b>", "next": "kineto budget a.json",
                   "fix": "overlap it", "fix_source": "https://example.org/ddp"}),
            json!({"kind": "trust", "finding": "salvaged", "file": "a.json", "evidence": "cut",
                   "next": "kineto summary a.json"}),
        ];
        let html = doctor_html(&rows, &[]);
        assert!(html.contains("exposed_comm"));
        assert!(html.contains("data-v=\"30.0\""), "{html}");
        assert!(html.contains("comm &lt;b&gt;"));
        assert!(
            html.contains("overlap it (https://example.org/ddp)"),
            "{html}"
        );
        assert!(html.find("exposed_comm") < html.find("Trust warnings"));
        assert!(html.contains("salvaged"));
        let clean = doctor_html(&[], &[]);
        assert!(clean.contains("No finding"));
    }

    /// Two steps of one trace: a marker's phase and one nothing states, which the page calls unknown
    /// (not `–`); the heading counts them in first-seen order.
    #[test]
    fn each_step_shows_its_phase_and_an_unstated_one_is_unknown() {
        let steps = vec![
            json!({"file": "t.json", "rank": null, "step": 0, "name": "execute_model",
                   "phase": null, "phase_from": null}),
            json!({"file": "t.json", "rank": null, "step": 1, "name": "execute_model",
                   "phase": "decode", "phase_from": "marker `vllm`"}),
        ];
        let html = doctor_html(&[], &steps);
        assert!(html.contains("Each step&#39;s phase"), "{html}");
        assert!(
            html.contains("rank unknown — t.json: 1 unknown, 1 decode"),
            "{html}"
        );
        assert!(html.contains("<td>unknown</td>"), "{html}");
        assert!(
            html.contains("<td>decode</td><td>marker `vllm`</td>"),
            "{html}"
        );
        assert!(html.find("Trust warnings") < html.find("Each step"));
    }
}
