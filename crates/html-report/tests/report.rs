//! Every page embeds its input JSON unchanged, and every number in its tables is a number of that JSON
//! (`data-src="tool"`) or of the page's derived block (`data-src="derived"`); renderers survive inputs
//! missing every field; the kineto diff page of hand-made budgets shows the Δ worked out here.

// The helpers below are test code outside #[test] functions, which clippy.toml's test allowance misses.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use html_report::page::{DERIVED_JSON_ID, TOOL_JSON_ID};
use html_report::{KinetoInputs, MonitorInputs};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

/// The text of `<script type="application/json" id="ID">…</script>`.
fn block<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no #{id}")) + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    &html[start..end]
}

fn numbers(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Number(n) => out.push(n.as_f64().unwrap()),
        Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
        Value::Object(m) => m.values().for_each(|x| numbers(x, out)),
        _ => {}
    }
}

/// (data-src, data-v) of every numeric table cell.
fn cells(html: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("data-src=\"") {
        rest = &rest[i + 10..];
        let src = &rest[..rest.find('"').unwrap()];
        let j = rest.find("data-v=\"").unwrap() + 8;
        let v = &rest[j..j + rest[j..].find('"').unwrap()];
        out.push((src.to_owned(), v.parse().unwrap()));
    }
    out
}

/// The page's contract: the tool JSON round-trips and every table number is in one of the two blocks.
fn check_page(html: &str, input: &Value) -> usize {
    assert!(html.starts_with("<!DOCTYPE html>"));
    for fetch in ["src=\"http", "href=\"http", "<link", "url(http", "@import"] {
        assert!(!html.contains(fetch), "nothing is fetched: {fetch}");
    }
    let tool: Value = serde_json::from_str(block(html, TOOL_JSON_ID)).unwrap();
    assert_eq!(&tool, input, "embedded JSON equals the input");
    let derived: Value = serde_json::from_str(block(html, DERIVED_JSON_ID)).unwrap();
    let (mut t, mut d) = (Vec::new(), Vec::new());
    numbers(&tool, &mut t);
    numbers(&derived, &mut d);
    let cells = cells(html);
    for (src, v) in &cells {
        let pool = if src == "tool" { &t } else { &d };
        // Within 2 ulp: serde_json's default float reader (no `float_roundtrip`) may be 1 ulp off the text.
        let same = |x: &f64| (x - v).abs() <= 2.0 * f64::EPSILON * v.abs();
        assert!(
            pool.iter().any(same),
            "{src} number {v} is not in the {src} JSON"
        );
    }
    cells.len()
}

#[test]
fn kl1_page_from_the_demo_window() {
    let demo = root().join("testdata/windows/demo");
    let report = kl1_bandwidth::analyze(
        &[demo],
        &kl1_shapes::Spec::builtin(),
        &kl1_bandwidth::Kl1Rules::builtin(),
        None,
    )
    .unwrap();
    // The JSON exactly as the tool writes it to its --output file.
    let json: Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    let html = html_report::kl1_bandwidth_html(&json);
    let n = check_page(&html, &json);
    assert!(n > 500, "{n} numeric cells");
    // One chart per capture (6 in the demo window), each an inline SVG.
    assert_eq!(html.matches("<svg").count(), 6);
    // The GB10 references are named with their labels.
    assert!(html.contains("GB10 specified 273 GB/s (CLAIM)"));
    assert!(html.contains("ds4-read: measured read 231–234 GB/s (MEASURED)"));
    // The dense decode row of rank 0 of the first capture shows the tool's mean exactly.
    let mean = json
        .pointer("/windows/demo/prof-short-b1:decode/ranks/0/mean/dense.all.gbps")
        .unwrap();
    let needle =
        format!("<td>dense.all.gbps</td><td class=\"num\" data-src=\"tool\" data-v=\"{mean}\">");
    assert!(html.contains(&needle), "{needle}");
}

#[test]
fn kineto_page_from_a_real_two_rank_budget() {
    let budget = html_report::parse_json_or_lines(&fixture("budget-dlrm.jsonl")).unwrap();
    assert_eq!(budget.len(), 2);
    let inputs = KinetoInputs {
        budget: &budget,
        top: None,
        roofline: None,
        ..KinetoInputs::default()
    };
    let html = html_report::kineto_html(&inputs);
    check_page(&html, &inputs.embedded());
    assert_eq!(
        html.matches("<svg").count(),
        2,
        "one stacked-bar chart per rank"
    );
    // Straggler view: rank 1's step spans 17981 µs against rank 0's 12542 µs.
    // Straggler view: rank 1's step spans 17981 µs against rank 0's 12542 µs (µs: below 10 ms? no —
    // 17.981 ms is past 10 ms, so the column is in ms).
    assert!(html.contains("<td>rank 1</td></tr>"), "slowest named");
    assert!(html.contains(">rank 1 (ms)</th>"), "one unit per column");
    assert!(
        html.contains("data-v=\"17981.0\">17.98</td>"),
        "µs value, shown in ms"
    );
    // Each trace's file is named once, in its heading, not on its rows.
    assert_eq!(
        html.matches("rank 1 — worker1_step_12.1694128201556.pt.trace.json.gz")
            .count(),
        1
    );
    assert!(html.contains("a per-kernel top list: not in this output."));
    assert!(html.contains("roofline numbers: not in this output."));
}

#[test]
fn kineto_page_with_roofline_and_top() {
    let budget = html_report::parse_json_or_lines(&fixture("budget-dlrm.jsonl")).unwrap();
    let roof: Value = serde_json::from_str(&fixture("roofline-hand.json")).unwrap();
    let top = json!({"kernels": [{"name": "gemm_a", "count": 3, "sum_us": 120.5}, {"name": "nccl", "count": 1, "sum_us": 900.0}]});
    let inputs = KinetoInputs {
        budget: &budget,
        top: Some(&top),
        roofline: Some(&roof),
        ..KinetoInputs::default()
    };
    let html = html_report::kineto_html(&inputs);
    check_page(&html, &inputs.embedded());
    assert_eq!(html.matches("<svg").count(), 3);
    // Ridge point = 100 TFLOP/s · 1000 / 273 GB/s = 366.3 FLOP/byte.
    assert!(html.contains("ridge point: 366.3 FLOP/byte"), "ridge");
    // GB/s per step: 1.2 GB / (10, 10.5, 20, 10.2, 9.9 ms) = 120, 114.29, 60, 117.65, 121.21; median 117.65;
    // |x − median| = 2.35, 3.36, 57.65, 0, 3.56 → MAD 3.36; only step 3 (57.65 > 10.08) is an outlier.
    let derived: Value = serde_json::from_str(block(&html, DERIVED_JSON_ID)).unwrap();
    let outliers = derived
        .pointer("/roofline_spread/gbps/outliers")
        .unwrap()
        .as_array()
        .unwrap();
    assert_eq!(outliers.len(), 1);
    assert_eq!(outliers[0]["step"], "step 3");
    let p50 = derived
        .pointer("/roofline_spread/gbps/p50")
        .unwrap()
        .as_f64()
        .unwrap();
    assert!((p50 - 1.2 / 0.0102).abs() < 1e-9);
    assert!(
        html.contains("<td class=\"name\" title=\"gemm_a\">gemm_a</td>"),
        "the top table lists the given rows"
    );
}

/// The timeline of a step built by hand: window 1000‥1100 ns; stream 7 runs a (1000‥1030, gemm) and b
/// (1040‥1060, gemm), stream 3 runs c (1010‥1020, comm) and a copy (1070‥1100, memcpy); the union
/// leaves one gap, 1060‥1070. Lanes in stream order: stream 3 first. Relative to 1000: c at 10 for 10,
/// the copy at 70 for 30, a at 0 for 30, b at 40 for 20. A mark 1050‥1065 falls inside; one at
/// 5000‥6000 outside, and is said to be.
#[test]
fn timeline_of_a_hand_made_step() {
    let op = |name: &str, bucket: &str, stream: i64, ts: i64, dur: i64| {
        json!({"kind": "kernel", "name": name, "bucket": bucket, "family": null, "stream": stream,
               "ts_ns": ts, "dur_ns": dur})
    };
    let timeline = json!([{
        "file": "t.json", "rank": 0, "step": 2, "name": "ProfilerStep#2", "chosen": "given",
        "window_lo_ns": 1000, "window_hi_ns": 1100, "idle_gaps_ns": [[1060, 1070]],
        "ops": [op("a", "gemm", 7, 1000, 30), op("c", "comm", 3, 1010, 10), op("b", "gemm", 7, 1040, 20),
                op("Memcpy HtoD", "memcpy", 3, 1070, 30)],
    }]);
    let marks = [
        html_report::Mark {
            file: "t.json".into(),
            finding: "launch_bound_idle".into(),
            lo_ns: 1050,
            hi_ns: 1065,
            label: "launch-bound".into(),
        },
        html_report::Mark {
            file: "t.json".into(),
            finding: "launch_bound_idle".into(),
            lo_ns: 5000,
            hi_ns: 6000,
            label: "elsewhere".into(),
        },
        html_report::Mark {
            file: "other.json".into(),
            finding: "exposed_comm".into(),
            lo_ns: 1000,
            hi_ns: 1001,
            label: "not ours".into(),
        },
    ];
    let budget = [
        json!({"file": "t.json", "rank": 0, "step": 2, "name": "ProfilerStep#2", "span_ns": 100,
                         "idle_ns": 10, "buckets": {"gemm": {"exclusive_ns": 45}, "comm": {"exclusive_ns": 5},
                         "memcpy": {"exclusive_ns": 30}}}),
    ];
    let inputs = KinetoInputs {
        budget: &budget,
        timeline: Some(&timeline),
        marks: &marks,
        ..KinetoInputs::default()
    };
    let html = html_report::kineto_html(&inputs);
    check_page(&html, &inputs.embedded());
    let derived: Value = serde_json::from_str(block(&html, DERIVED_JSON_ID)).unwrap();
    let t = &derived["timelines"][0];
    assert_eq!(t["lanes"], json!(["stream 3", "stream 7"]));
    assert_eq!(t["span_ns"], 100);
    // [lane, start, duration, bucket index, ops, name index]; buckets in order of first sight.
    let buckets = t["buckets"].as_array().unwrap();
    let b = |n: &str| buckets.iter().position(|x| x == n).unwrap();
    let names = t["names"].as_array().unwrap();
    let bars: Vec<(i64, i64, i64, usize, String)> = t["bars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v[0].as_i64().unwrap(),
                v[1].as_i64().unwrap(),
                v[2].as_i64().unwrap(),
                v[3].as_u64().unwrap() as usize,
                names[v[5].as_u64().unwrap() as usize]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        bars,
        vec![
            (0, 10, 10, b("comm"), "c".to_owned()),
            (0, 70, 30, b("memcpy"), "Memcpy HtoD".to_owned()),
            (1, 0, 30, b("gemm"), "a".to_owned()),
            (1, 40, 20, b("gemm"), "b".to_owned()),
        ]
    );
    assert_eq!(t["gaps"], json!([[60, 10]]));
    // [mark lane, start, duration, label]; one lane, the finding's.
    assert_eq!(t["marks"], json!([[0, 50, 15, "launch-bound"]]));
    assert_eq!(t["mark_lanes"], json!(["launch_bound_idle"]));
    assert_eq!(
        (t["view_lo_ns"].as_i64(), t["view_hi_ns"].as_i64()),
        (Some(0), Some(100))
    );
    assert!(
        html.contains("4 GPU ops on 2 streams; idle 0.010 µs in 1 gap"),
        "statement"
    );
    assert!(html.contains("Every op is drawn (4 bars)."));
    assert!(html.contains("1 finding mark of this trace lies outside this step."));
    assert!(html.contains("data-lanes=\"2\" data-bars=\"4\""));
    // The legend names the step's buckets with the budget chart's colours, and the finding marked with
    // its count and time in this step (the mark outside is not counted there).
    assert!(html.contains("</i>memcpy</span>"));
    assert!(
        html.contains("</i>launch_bound_idle (1 mark, 0.015 µs)</span>"),
        "mark legend"
    );
}

/// The page opens with the findings when given, else with the budget; nothing stands in their place.
#[test]
fn findings_open_the_page() {
    let budget = html_report::parse_json_or_lines(&fixture("budget-dlrm.jsonl")).unwrap();
    let mut findings =
        html_report::Section::new(json!([{"finding": "exposed_comm", "time_at_stake_us": 5667.5}]));
    findings.h2("Findings");
    let mut t = html_report::page::Table::new(&["finding", "time at stake (µs)"], true);
    t.rows.push(vec![
        html_report::page::Cell::text("exposed_comm"),
        html_report::page::Cell::Num(5667.5, html_report::page::Source::Tool),
    ]);
    findings.table(&t);
    let inputs = KinetoInputs {
        budget: &budget,
        findings: Some(&findings),
        ..KinetoInputs::default()
    };
    let html = html_report::kineto_html(&inputs);
    check_page(&html, &inputs.embedded());
    let first_h2 = |h: &str| {
        h[h.find("<h2>").unwrap()..]
            .chars()
            .take(40)
            .collect::<String>()
    };
    assert!(
        first_h2(&html).starts_with("<h2>Findings</h2>"),
        "{}",
        first_h2(&html)
    );
    let without = html_report::kineto_html(&KinetoInputs {
        budget: &budget,
        ..KinetoInputs::default()
    });
    assert!(
        first_h2(&without).starts_with("<h2>Per-step budget"),
        "{}",
        first_h2(&without)
    );
    assert!(!without.contains("Findings"));
}

#[test]
fn monitor_and_provenance_pages() {
    let samples = html_report::parse_json_or_lines(&fixture("monitor-samples.jsonl")).unwrap();
    let summary: Value = serde_json::from_str(&fixture("monitor-summary.json")).unwrap();
    let inputs = MonitorInputs {
        samples: &samples,
        summary: Some(&summary),
        command: Some((0.5, 3.5)),
    };
    let html = html_report::gpu_monitor_html(&inputs);
    check_page(&html, &inputs.embedded());
    assert_eq!(
        html.matches("<svg").count(),
        4,
        "clocks, power, utilisation, temperature"
    );
    assert!(html.contains("command start") && html.contains("command end"));
    // The fixture's masks are 4 (sw_power_cap), 0x20 (sw_thermal_slowdown) and 1 (gpu_idle).
    for reason in ["throttle: sw_power_cap", "throttle: sw_thermal_slowdown"] {
        assert!(html.contains(reason), "{reason}");
    }

    let record: Value = serde_json::from_str(&fixture("provenance-record.json")).unwrap();
    let html = html_report::provenance_html(&record);
    check_page(&html, &record);
    assert!(html.contains("not a clean run"));
    for flag in record["verdict"]["flags"].as_array().unwrap() {
        assert!(html.contains(&format!("<td>{}</td>", flag["flag"].as_str().unwrap())));
    }
    // A record from before `during.timeline`: the page says what is missing instead of drawing nothing.
    assert!(html.contains("per-sample readings (a record from before `during.timeline`"));
    assert_eq!(html.matches("<svg").count(), 0);

    // With the monitor's readings kept in the record, the same four charts as gpu-monitor's page, and the
    // thinning stated when there was any.
    let mut with = record.clone();
    with["during"]["timeline"] = json!({"samples": samples, "every": 2});
    let html = html_report::provenance_html(&with);
    check_page(&html, &with);
    assert_eq!(
        html.matches("<svg").count(),
        4,
        "clocks, power, utilisation, temperature"
    );
    assert!(html.contains("command start") && html.contains("command end"));
    assert!(html.contains(&format!(
        "One reading of each GPU in every 2 the monitor took is drawn ({} readings",
        samples.len()
    )));
}

#[test]
fn every_renderer_survives_empty_and_odd_inputs() {
    for v in [
        json!({}),
        json!([]),
        json!(null),
        json!({"windows": 3}),
        json!({"windows": {"w": {"c": {"ranks": {"0": {"mean": {"x.gbps": "no"}, "per_step": [{"x.gbps": null}]}}}}}}),
        json!({"verdict": 1, "during": {"gpus": [1, {"clocks.sm": 2}]}}),
    ] {
        let html = html_report::kl1_bandwidth_html(&v);
        assert!(html.contains("not in this output"), "{v}");
        html_report::provenance_html(&v);
        let rows = [v.clone(), json!({"buckets": {"gemm": 5}, "span_us": "x"})];
        let inputs = KinetoInputs {
            budget: &rows,
            top: Some(&v),
            roofline: Some(&json!([{"gbps": 1, "tflops": 1}])),
            timeline: Some(
                &json!([v.clone(), {"window_lo_ns": 5, "window_hi_ns": 1, "ops": [v.clone(), {"ts_ns": "a"}], "idle_gaps_ns": [[1], "x"]}]),
            ),
            ..KinetoInputs::default()
        };
        html_report::kineto_html(&inputs);
        let inputs = MonitorInputs {
            samples: &rows,
            summary: Some(&v),
            command: None,
        };
        html_report::gpu_monitor_html(&inputs);
    }
    let html = html_report::kineto_html(&KinetoInputs::default());
    assert!(html.contains("budget rows: not in this output."));
}

fn step(rank: u32, name: &str, span: f64, gemm: f64) -> Value {
    json!({"rank": rank, "name": name, "span_us": span, "idle_us": span - gemm,
           "buckets": {"gemm": {"exclusive_us": gemm, "inclusive_us": gemm}}})
}

fn gate(pct: f64) -> step_stats::Gate {
    step_stats::Gate {
        fail_above: step_stats::Threshold::new(pct).unwrap(),
        allow_missing: false,
    }
}

#[test]
fn kineto_diff_page_of_hand_made_budgets() {
    // The comparison's arithmetic is run-compare's (its tests/budget.rs works these rows out); here, the
    // page and the text cells of it. Old rank 0: gemm 100, 110 (mean 105, range 10); new: 130, 134
    // (mean 132, range 4): Δ = (132 − 105) / 105 = +25.714 %, |27| > max(10, 4).
    let old = vec![
        step(0, "s1", 200.0, 100.0),
        step(0, "s2", 200.0, 110.0),
        step(1, "s1", 50.0, 5.0),
    ];
    let new = vec![
        step(0, "s1", 200.0, 130.0),
        step(0, "s2", 206.0, 134.0),
        step(2, "s1", 50.0, 5.0),
    ];
    let d = run_compare::budget::compare_json(&old, &new).unwrap();
    let gemm = &d
        .rows
        .iter()
        .find(|r| r.place == "rank 0" && r.key == "gemm")
        .unwrap()
        .change;
    let cells = html_report::change_cells(gemm);
    assert_eq!(
        cells,
        [
            "105".to_owned(),
            "132".into(),
            "+25.71".into(),
            "10 / 4".into(),
            "yes".into()
        ]
    );
    let html = html_report::kineto_diff_page(&old, &new, &d, Some(gate(20.0)));
    check_page(&html, &json!({"old": old, "new": new}));
    // --fail-above 20: gemm (+25.7 %) and idle (old 100, 90 → new 70, 72: −25.3 %) fail.
    assert!(
        html.contains("FAIL: 2 row(s) moved by more than 20 % outside their spread"),
        "{html}"
    );
    // Ranks 1 (lost) and 2 (gained) fail the gate too, named.
    assert!(html.contains("1 only in OLD (the new run lost it): rank 1"));
}

#[test]
fn kl1_diff_page_of_a_report_against_itself() {
    let r = json!({"windows": {"w": {"c": {"ranks": {"0": {"mean": {"a.gbps": 2.0},
        "per_step": [{"a.gbps": 1.0}, {"a.gbps": 3.0}]}}}}}});
    let d = kl1_bandwidth::diff::diff(&r, &r, kl1_bandwidth::spread::is_headline_key).unwrap();
    let html = html_report::kl1_diff_page(&r, &r, &d, Some(gate(1.0)));
    check_page(&html, &json!({"old": r, "new": r}));
    assert!(
        html.contains("PASS: 1 row(s) compared, none moved by more than 1 %"),
        "{html}"
    );
}

#[test]
fn kineto_verdict_page_opens_with_the_verdict_and_why_the_runs_cannot_be_compared() {
    // Rank 0's decode span 200, 201, 202, 199 → 240, 241, 242, 239 (+20 %, slower), gemm 100 each; and a
    // prefill phase of 1000 µs steps (gemm 900) in both. The verdict rows are run-compare's (its tests work
    // them out); the page draws them first, then each phase's bucket rows on their own, never pooled.
    let side = |base: f64| -> Vec<Value> {
        let mut steps: Vec<Value> = (0..4)
            .map(|i| {
                let mut s = step(0, &format!("d{i}"), base + [0.0, 1.0, 2.0, -1.0][i], 100.0);
                s["phase"] = json!("decode");
                s
            })
            .collect();
        steps.extend((0..3).map(|i| {
            let mut s = step(0, &format!("p{i}"), 1000.0, 900.0);
            s["phase"] = json!("prefill");
            s
        }));
        steps
    };
    let (old, new) = (side(200.0), side(240.0));
    let typed = |rows: &[Value]| run_compare::budget::BudgetStep::listing(rows).unwrap();
    let method = run_compare::verdict::Method::default();
    let phased =
        run_compare::verdict_rows::budget_verdicts(&typed(&old), &typed(&new), method).unwrap();
    assert_eq!(
        phased.rows[0].judged.verdict,
        run_compare::verdict::Call::Slower
    );
    let comparability = run_compare::verdict_rows::Comparability {
        comparable: false,
        reasons: vec!["NEW run flagged throttled: GPU 0: <hw_slowdown>".into()],
    };
    let html = html_report::kineto_verdict_page(
        &old,
        &new,
        &phased.phases,
        (&phased.only_in_old[..], &phased.only_in_new[..]),
        &html_report::Verdicts {
            rows: &phased.rows,
            comparability: &comparability,
            gate_line: Some((false, "FAIL: the runs are not comparable".into())),
            margin_pct: 2.0,
        },
    );
    check_page(&html, &json!({"old": old, "new": new}));
    let verdict = html.find("<h2>Verdict</h2>").expect("a verdict section");
    let buckets = html.find("Old → new").expect("the bucket table");
    assert!(verdict < buckets);
    assert!(html.contains("The runs are NOT comparable"));
    // The reason, escaped; the gate; one bar per row against zero.
    assert!(html.contains("GPU 0: &lt;hw_slowdown&gt;"), "{html}");
    assert!(html.contains("FAIL: the runs are not comparable"));
    assert!(html.contains("<svg class=\"intervals\""));
    assert_eq!(
        html.matches("stroke-width=\"4\"").count(),
        phased
            .rows
            .iter()
            .filter(|r| r.judged.ci_low_pct.is_some())
            .count()
    );
    // The bucket table, per phase: decode's gemm 100 → 100 and prefill's 900 → 900, each its own row.
    // Pooled, gemm would be one row of mean (4 · 100 + 3 · 900) / 7 ≈ 442.857 a side.
    let table = &html[buckets..];
    assert!(table.contains(">phase</th>"), "{table}");
    let derived: Value = serde_json::from_str(block(&html, DERIVED_JSON_ID)).unwrap();
    let gemm: Vec<(String, f64)> = derived["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["key"] == "gemm")
        .map(|r| {
            (
                r["phase"].as_str().unwrap().to_owned(),
                r["change"]["old"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        gemm,
        [("decode".to_owned(), 100.0), ("prefill".to_owned(), 900.0)]
    );
}
