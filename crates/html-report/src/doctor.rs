//! The findings of `kineto doctor` as a page section, from the rows `kineto doctor --json` prints: the
//! ranked findings (time at stake, share, origin, steps, the fix, evidence, next command), then the trust warnings
//! apart. [`doctor_section`] adds it to any page (the report page opens with it); [`doctor_html`] is the
//! page `kineto doctor --html` writes.

use crate::page::{Cell, Page, Section, Table, esc};
use serde_json::Value;

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

/// The `kineto doctor --html` page: the findings section, the rows embedded as the tool's JSON.
pub fn doctor_html(rows: &[Value]) -> String {
    let mut page = Page::new("kineto doctor", Value::Array(rows.to_vec()));
    doctor_section(&mut page, rows);
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
        let html = doctor_html(&rows);
        assert!(html.contains("exposed_comm"));
        assert!(html.contains("data-v=\"30.0\""), "{html}");
        assert!(html.contains("comm &lt;b&gt;"));
        assert!(
            html.contains("overlap it (https://example.org/ddp)"),
            "{html}"
        );
        assert!(html.find("exposed_comm") < html.find("Trust warnings"));
        assert!(html.contains("salvaged"));
        let clean = doctor_html(&[]);
        assert!(clean.contains("No finding"));
    }
}
