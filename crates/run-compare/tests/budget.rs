//! `kineto diff`'s comparison of hand-made budgets: each Δ, range and pairing worked out in the comments.

#![allow(clippy::unwrap_used)]

use run_compare::budget::{BudgetStep, compare, compare_json};
use serde_json::{Value, json};

fn step(rank: u64, name: &str, span: f64, gemm: f64) -> BudgetStep {
    BudgetStep {
        file: String::new(),
        rank: Some(rank),
        name: Some(name.to_owned()),
        phase: None,
        span_us: Some(span),
        idle_us: Some(span - gemm),
        buckets: vec![("gemm".to_owned(), gemm)],
    }
}

#[test]
fn hand_made_budgets() {
    // Old rank 0: gemm 100, 110 (mean 105, range 10); new: 130, 134 (mean 132, range 4).
    // Δ = (132 − 105) / 105 = +25.714 %; |27| > max(10, 4): exceeds the spread.
    // Span: old 200, 200; new 200, 206 → mean 203, Δ = +1.5 %, |3| ≤ 6: inside.
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
    let d = compare(&old, &new).unwrap();
    let keys: Vec<&str> = d.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        keys,
        vec!["span_us", "idle_us", "gemm"],
        "span, idle, buckets"
    );
    let row = |b: &str| {
        d.rows
            .iter()
            .find(|r| r.place == "rank 0" && r.key == b)
            .unwrap()
    };
    let gemm = &row("gemm").change;
    assert_eq!((gemm.old, gemm.new), (105.0, 132.0));
    assert!((gemm.delta_pct.unwrap() - 27.0 / 105.0 * 100.0).abs() < 1e-12);
    assert_eq!(gemm.exceeds_spread, Some(true));
    assert_eq!(
        row("gemm").new_samples,
        vec![("s1".to_owned(), 130.0), ("s2".to_owned(), 134.0)],
        "the samples are kept"
    );
    let span = &row("span_us").change;
    assert!((span.delta_pct.unwrap() - 1.5).abs() < 1e-12);
    assert_eq!(span.exceeds_spread, Some(false));
    // idle: old 100, 90 (mean 95, range 10); new 70, 72 (mean 71, range 2): Δ = −25.26 %, |24| > 10.
    let idle = &row("idle_us").change;
    assert_eq!((idle.old, idle.new), (95.0, 71.0));
    assert_eq!(d.only_in_old, vec!["rank 1"]);
    assert_eq!(d.only_in_new, vec!["rank 2"]);
    // --fail-above 20: gemm (+25.7 %) and idle (−25.3 %) fail; 26: none.
    let failing: Vec<&str> = d.failing(20.0).iter().map(|r| r.key.as_str()).collect();
    assert_eq!(failing, vec!["idle_us", "gemm"]);
    assert!(d.failing(26.0).is_empty());
}

#[test]
fn single_ranks_pair_whatever_their_numbers() {
    // One rank each (3 and 1): compared. gemm 100 → 150: +50 %.
    let d = compare(
        &[step(3, "s1", 200.0, 100.0)],
        &[step(1, "s1", 200.0, 150.0)],
    )
    .unwrap();
    assert!(d.only_in_old.is_empty() && d.only_in_new.is_empty());
    let gemm = d.rows.iter().find(|r| r.key == "gemm").unwrap();
    assert_eq!(gemm.place, "rank 3 → rank 1");
    assert_eq!(gemm.change.delta_pct, Some(50.0));
    assert_eq!(gemm.change.exceeds_spread, None, "one step: spread unknown");
}

#[test]
fn a_step_without_a_bucket_counts_zero_and_unranked_files_stay_apart() {
    // Rank 0: gemm 100 in s1 and none in s2: the mean over its steps is (100 + 0) / 2 = 50, not 100.
    let mut s2 = step(0, "s2", 200.0, 0.0);
    s2.buckets.clear();
    let old = vec![step(0, "s1", 200.0, 100.0), s2];
    let new = vec![step(0, "s1", 200.0, 50.0), step(0, "s2", 200.0, 50.0)];
    let d = compare(&old, &new).unwrap();
    let gemm = d.rows.iter().find(|r| r.key == "gemm").unwrap();
    assert_eq!((gemm.change.old, gemm.change.new), (50.0, 50.0));
    // Two files of one rank on one side are refused, naming both.
    let mut a = step(0, "s1", 200.0, 100.0);
    a.file = "run/a.json".into();
    let mut b = step(0, "s1", 200.0, 100.0);
    b.file = "run/b.json".into();
    let e = compare(&[a, b], &new).unwrap_err();
    assert!(e.starts_with("OLD: "), "{e}");
    assert!(e.contains("run/a.json") && e.contains("run/b.json"), "{e}");
    // Rankless files pair by file name, never pooled: x 100 → 180 (+80 %), y 100 → 56 (−44 %).
    let rankless = |file: &str, gemm: f64| BudgetStep {
        rank: None,
        file: file.into(),
        ..step(0, "s1", 200.0, gemm)
    };
    let d = compare(
        &[rankless("old/x.json", 100.0), rankless("old/y.json", 100.0)],
        &[rankless("new/y.json", 56.0), rankless("new/x.json", 180.0)],
    )
    .unwrap();
    let pct = |who: &str| {
        d.rows
            .iter()
            .find(|r| r.place == who && r.key == "gemm")
            .and_then(|r| r.change.delta_pct)
            .unwrap()
    };
    assert!((pct("file x.json") - 80.0).abs() < 1e-9);
    assert!((pct("file y.json") + 44.0).abs() < 1e-9);
    assert!(d.only_in_old.is_empty() && d.only_in_new.is_empty());
}

#[test]
fn a_bucket_one_run_never_had_is_zero_in_each_of_its_steps() {
    // Old rank 0 (2 steps) has copy 3, 5 (mean 4, range 2); the new rank 0 (3 steps) never ran a copy:
    // 0, 0, 0 (mean 0, range 0). Δ = (0 − 4) / 4 = −100 %; |−4| > max(2, 0).
    let mut s1 = step(0, "s1", 200.0, 100.0);
    s1.buckets.push(("copy".into(), 3.0));
    let mut s2 = step(0, "s2", 200.0, 100.0);
    s2.buckets.push(("copy".into(), 5.0));
    let new: Vec<BudgetStep> = ["s1", "s2", "s3"]
        .iter()
        .map(|n| step(0, n, 200.0, 100.0))
        .collect();
    let d = compare(&[s1, s2], &new).unwrap();
    let copy = d.rows.iter().find(|r| r.key == "copy").unwrap();
    assert_eq!((copy.change.old, copy.change.new), (4.0, 0.0));
    assert_eq!(copy.change.delta_pct, Some(-100.0));
    assert_eq!(copy.change.exceeds_spread, Some(true));
    assert_eq!(copy.new_samples.len(), 3);
    // The span and idle, by contrast, are numbers a step has or lacks: a rank without an idle time lists it.
    let mut no_idle = new.clone();
    for s in &mut no_idle {
        s.idle_us = None;
    }
    let d = compare(&new, &no_idle).unwrap();
    assert_eq!(d.only_in_old, vec!["rank 0: idle_us"]);
}

#[test]
fn listing_rows_read_as_the_listing_writes_them() {
    // A `kineto budget --json` row: the fields the comparison reads, the others ignored.
    let row = json!({"file": "t/a.json", "rank": 2, "step": 0, "name": "ProfilerStep#3",
        "span_us": 120.5, "idle_us": 20.0, "phase": "decode",
        "buckets": {"gemm": {"exclusive_us": 80.0, "inclusive_us": 90.0}}});
    let s = BudgetStep::from_json(&row).unwrap();
    assert_eq!(
        s,
        BudgetStep {
            file: "t/a.json".into(),
            rank: Some(2),
            name: Some("ProfilerStep#3".into()),
            phase: Some("decode".into()),
            span_us: Some(120.5),
            idle_us: Some(20.0),
            buckets: vec![("gemm".into(), 80.0)],
        }
    );
    // No name: steps are labelled by position within their rank; no rank: the trace is its file.
    let bare = json!({"file": "t/b.json", "span_us": 1.0, "idle_us": 0.0, "buckets": {}});
    let s = BudgetStep::from_json(&bare).unwrap();
    assert_eq!((s.rank, s.name.as_deref(), s.phase), (None, None, None));
    let rows: Vec<Value> = vec![bare.clone(), bare];
    let d = compare_json(&rows, &rows).unwrap();
    let span = d.rows.iter().find(|r| r.key == "span_us").unwrap();
    assert_eq!(span.place, "file t/b.json");
    assert_eq!(
        span.old_samples,
        vec![("#0".to_owned(), 1.0), ("#1".to_owned(), 1.0)]
    );
}

/// Issue 42: a number the comparison reads that is absent, renamed or not a number is an error naming the
/// side, the row and the field, never a bucket silently left out of the step.
#[test]
fn a_number_that_cannot_be_read_is_named() {
    let good = json!({"rank": 0, "span_us": 5.0, "idle_us": 1.0,
        "buckets": {"gemm": {"exclusive_us": 4.0}}});
    let cases = [
        (
            json!({"rank": 0, "span_us": 5.0, "idle_us": 1.0,
            "buckets": {"gemm": {"exclusive_us": "400"}}}),
            "row 2: `buckets.gemm.exclusive_us` is a string (\"400\"), not a number",
        ),
        (
            json!({"rank": 0, "span_us": 5.0, "idle_us": 1.0,
            "buckets": {"gemm": {"excl_us": 400.0}}}),
            "row 2: no `buckets.gemm.exclusive_us`",
        ),
        (
            json!({"rank": 0, "span_us": 5.0, "idle_us": 1.0, "bucket_times": {}}),
            "row 2: no `buckets`",
        ),
        (
            json!({"rank": 0, "span_us": null, "idle_us": 1.0, "buckets": {}}),
            "row 2: `span_us` is null, not a number",
        ),
        (
            json!({"rank": 0, "span_us": 5.0, "buckets": {}}),
            "row 2: no `idle_us`",
        ),
    ];
    for (bad, said) in cases {
        let rows = vec![good.clone(), bad];
        let e = compare_json(&rows, std::slice::from_ref(&good)).unwrap_err();
        assert!(e.starts_with("OLD: ") && e.contains(said), "{e}");
        let e = compare_json(std::slice::from_ref(&good), &rows).unwrap_err();
        assert!(e.starts_with("NEW: ") && e.contains(said), "{e}");
    }
}
