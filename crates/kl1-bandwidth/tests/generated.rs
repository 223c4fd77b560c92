//! The analysis of generated windows against the generator's truth: every value the truth lists (GB/s of
//! every family, launch counts, spans, periods, idle time, family sums and unions) must be reported, to
//! floating-point rounding; GB/s must also sit within the plan's jitter of the rates asked for.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

mod common;

use std::collections::BTreeMap;

use common::*;
use kl1_bandwidth::labels::label_of;
use kl1_bandwidth::{Kl1Rules, Report, analyze};
use kl1_shapes::Spec;
use kl1_window_gen::{Plan, Rates, Truth};

/// Checks every analysed step of every trace against the truth; returns how many values were compared.
fn check_against_truth(report: &Report, truth: &Truth) -> usize {
    let mut compared = 0;
    let w = &report.windows[0];
    for t in &truth.traces {
        let cap = w
            .captures
            .iter()
            .find(|c| c.label == t.label)
            .unwrap_or_else(|| panic!("{} not reported", t.label));
        let rank = cap
            .ranks
            .iter()
            .find(|r| r.rank == t.rank)
            .unwrap_or_else(|| panic!("{} rank {} not reported", t.label, t.rank));
        let want: Vec<&kl1_window_gen::StepTruth> = t
            .steps
            .iter()
            .filter(|s| s.analysed && s.phase == cap.kind.as_str())
            .collect();
        let indices: Vec<u64> = want.iter().map(|s| s.index).collect();
        assert_eq!(
            rank.step_index, indices,
            "{} rank {}: analysed steps",
            t.label, t.rank
        );
        assert_eq!(rank.steps, want.len());
        for (row, st) in rank.per_step.iter().zip(&want) {
            for (key, &expected) in &st.expected {
                let got = row.get(key).copied().unwrap_or_else(|| {
                    panic!(
                        "{} rank {} step {}: `{key}` missing",
                        t.label, t.rank, st.index
                    )
                });
                assert!(
                    close(got, expected, 1e-9),
                    "{} rank {} step {}: `{key}` = {got}, truth {expected}",
                    t.label,
                    t.rank,
                    st.index
                );
                compared += 1;
            }
            // Σ exclusive + idle = hi − lo, for each of the three splits.
            for tag in ["sp1", "l2pf_apart", "no_l2pf"] {
                let total: f64 = row
                    .iter()
                    .filter(|(k, _)| k.starts_with(&format!("{tag}.")))
                    .map(|(_, v)| v)
                    .sum();
                assert!(
                    (total - st.span_ms).abs() < 1e-9,
                    "{} step {}: Σ {tag}.* = {total} ms, span {} ms",
                    t.label,
                    st.index,
                    st.span_ms
                );
            }
            // Every key says what kind of number it is.
            for key in row.keys() {
                assert!(
                    label_of(key).is_some(),
                    "`{key}` has no MEASURED/ESTIMATED/CLAIM label"
                );
            }
        }
    }
    compared
}

#[test]
fn the_demo_plan_reports_the_generated_truth() {
    let (_tmp, dir, truth) = generate(&Plan::demo());
    let report = analyze(&[dir], &Spec::builtin(), &Kl1Rules::builtin(), None).expect("analyse");
    let n = check_against_truth(&report, &truth);
    assert!(n > 1_000, "only {n} values compared");
    let w = &report.windows[0];
    // All six captures, both ranks, in the table's order.
    let labels: Vec<&str> = w.captures.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "prof-short-b1:decode",
            "prof-32k-b1:decode",
            "prof-150k-b1:decode",
            "prof-32k-b4:decode",
            "prof-32k-b1:prefill-early",
            "prof-150k-b1:prefill-late"
        ]
    );
    assert!(w.captures.iter().all(|c| c.ranks.len() == 2));
    assert!(w.skipped.is_empty());
}

/// Per-step GB/s within the jitter band of the rate asked for: each kernel lasts bytes/rate × (1 + j·u),
/// |u| ≤ 1, so any ratio of sums of bytes to sums of such durations is within [1/(1+j), 1/(1−j)] of the rate.
#[test]
fn reported_gbps_sit_within_the_jitter_of_the_rates() {
    let mut plan = Plan::demo();
    plan.rates = Rates {
        dense: 201.0,
        lm_head: 222.0,
        router: 99.0,
        mhc: 77.0,
        smoe: 166.0,
        tf_gu: 188.0,
        tf_down: 177.0,
        reconstruct: 144.0,
        l2pf: 205.0,
    };
    plan.jitter = 0.05;
    plan.gzip = false;
    let (_tmp, dir, _truth) = generate(&plan);
    let report = analyze(&[dir], &Spec::builtin(), &Kl1Rules::builtin(), None).expect("analyse");
    let r = plan.rates;
    let j = plan.jitter;
    let mut checked = 0;
    let within =
        |got: f64, rate: f64| got >= rate / (1.0 + j) - 1e-9 && got <= rate / (1.0 - j) + 1e-9;
    for c in &report.windows[0].captures {
        for rank in &c.ranks {
            for row in &rank.per_step {
                let mut expect: BTreeMap<String, f64> = BTreeMap::new();
                for key in row.keys() {
                    let rate = if key.starts_with("dense.") && key.ends_with(".gbps") {
                        match key.as_str() {
                            "dense.lm_head.gbps" => Some(r.lm_head),
                            "dense.router.gbps" => Some(r.router),
                            "dense.hc_prenorm.gbps" => Some(r.mhc),
                            _ => Some(r.dense),
                        }
                    } else if key == "smoe.gbps_if_uniform" {
                        Some(r.smoe)
                    } else if key.ends_with(".gu_gbps_if_uniform") {
                        Some(r.tf_gu)
                    } else if key.ends_with(".down_gbps_if_uniform") {
                        Some(r.tf_down)
                    } else if key.starts_with("reconstruct.") && key.ends_with(".gbps") {
                        Some(r.reconstruct)
                    } else {
                        None
                    };
                    if let Some(rate) = rate {
                        expect.insert(key.clone(), rate);
                    }
                }
                for (key, rate) in expect {
                    let got = row[&key];
                    assert!(
                        within(got, rate),
                        "{} rank {}: {key} = {got}, rate {rate} ± {j}",
                        c.label,
                        rank.rank
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 150, "only {checked} rates checked");
}

/// Without jitter every family's GB/s is the rate asked for, up to the rounding of durations to whole ns.
#[test]
fn without_jitter_the_rates_come_back() {
    let mut plan = small_decode_plan();
    plan.captures.push(small_prefill_plan().captures.remove(0));
    plan.jitter = 0.0;
    let (_tmp, dir, _) = generate(&plan);
    let report = analyze(&[dir], &Spec::builtin(), &Kl1Rules::builtin(), None).expect("analyse");
    let r = plan.rates;
    let w = &report.windows[0];
    let decode = &w.captures[0].ranks[0].mean;
    let prefill = &w.captures[1].ranks[0].mean;
    for (got, rate) in [
        (decode["dense.all.gbps"], r.dense),
        (decode["dense.wq_b.gbps"], r.dense),
        (decode["dense.lm_head.gbps"], r.lm_head),
        (decode["dense.router.gbps"], r.router),
        (decode["dense.hc_prenorm.gbps"], r.mhc),
        (decode["smoe.gbps_if_uniform"], r.smoe),
        (prefill["tf.full.gu_gbps_if_uniform"], r.tf_gu),
        (prefill["tf.suffix.down_gbps_if_uniform"], r.tf_down),
        (prefill["reconstruct.all.gbps"], r.reconstruct),
    ] {
        assert!(close(got, rate, 1e-4), "{got} vs {rate}");
    }
}

#[test]
fn analysis_is_deterministic_and_ranks_agree_on_structure() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let a = analyze(
        std::slice::from_ref(&dir),
        &Spec::builtin(),
        &Kl1Rules::builtin(),
        None,
    )
    .expect("analyse");
    let b = analyze(&[dir], &Spec::builtin(), &Kl1Rules::builtin(), None).expect("analyse");
    assert_eq!(a.to_json().expect("json"), b.to_json().expect("json"));
    let ranks = &a.windows[0].captures[0].ranks;
    // Both ranks launch the same kernels: same keys, same launch counts.
    assert_eq!(
        ranks[0].mean.keys().collect::<Vec<_>>(),
        ranks[1].mean.keys().collect::<Vec<_>>()
    );
    assert_eq!(ranks[0].mean["dense.all.launches"], 160.0); // 4 a layer × 40 layers
    assert_eq!(ranks[0].mean["dense.router.launches"], 40.0);
    assert_eq!(ranks[0].mean["dense.hc_prenorm.launches"], 81.0); // 2 a layer + the head's
    // Each MoE layer's down kernel starts 1.5 µs before gate|up ends (PDL): one overlap a layer a step.
    assert_eq!(ranks[0].same_stream_overlaps, 2 * 40);
    assert_eq!(ranks[0].rows_hist, vec![(1, 1), (2, 1)]);
    assert_eq!(ranks[0].kernels_outside_steps, 0);
    // The third step is the trace's last: no period, dropped and counted.
    assert_eq!(
        ranks[0].steps_dropped,
        BTreeMap::from([("last step of the trace".to_string(), 1)])
    );
}

/// A step followed by an empty step marker has no period (kineto-trace measures it to the next marker's
/// first kernel): it is dropped, and counted by reason in the rank's `steps_dropped`. The empty marker is a
/// decode marker too, and is counted as well (issue 15 item 24: it used to vanish).
#[test]
fn a_step_before_an_empty_marker_is_dropped_and_counted() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    for rank in 0..2 {
        edit_events(&dir, "prof-short-b1:decode", rank, |events| {
            let marks: Vec<&serde_json::Value> = events
                .iter()
                .filter(|e| {
                    e["cat"] == "user_annotation"
                        && e["name"]
                            .as_str()
                            .is_some_and(|n| n.starts_with("kl1.step#"))
                })
                .collect();
            let end0 =
                marks[0]["ts"].as_f64().expect("ts") + marks[0]["dur"].as_f64().expect("dur");
            let start1 = marks[1]["ts"].as_f64().expect("ts");
            assert!(start1 - end0 > 0.01, "no gap between the first two markers");
            let mut empty = marks[0].clone();
            empty["name"] = serde_json::json!("kl1.step#99 phase=decode rows=1 requests=1");
            empty["ts"] = serde_json::json!(end0 + (start1 - end0) / 4.0);
            empty["dur"] = serde_json::json!((start1 - end0) / 4.0);
            empty["args"] = serde_json::json!({});
            events.push(empty);
        });
    }
    let report = analyze(&[dir], &Spec::builtin(), &Kl1Rules::builtin(), None).expect("analyse");
    for r in &report.windows[0].captures[0].ranks {
        // Of steps 1000, 1001, 1002 only 1001 has a period now.
        assert_eq!(r.step_index, vec![1001], "rank {}", r.rank);
        assert_eq!(
            r.steps_dropped,
            BTreeMap::from([
                ("last step of the trace".to_string(), 1),
                ("marker has no kernels".to_string(), 1),
                ("next marker has no kernels".to_string(), 1),
            ]),
            "rank {}",
            r.rank
        );
    }
    let v: serde_json::Value =
        serde_json::from_str(&report.to_json().expect("json")).expect("json");
    assert_eq!(
        v["windows"]["win"]["prof-short-b1:decode"]["ranks"]["1"]["steps_dropped"],
        serde_json::json!({
            "last step of the trace": 1,
            "marker has no kernels": 1,
            "next marker has no kernels": 1
        })
    );
}

/// The demo window in testdata is exactly what the generator writes today (regenerate it with
/// `cargo xtask gen-window` when the generator, spec or rules change).
#[test]
fn the_demo_window_is_up_to_date() {
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/windows/demo");
    let committed = manifest(&demo);
    let (_tmp, dir, _) = generate(&Plan::demo());
    let fresh = manifest(&dir);
    let stale = committed.iter().zip(&fresh).filter(|(a, b)| a != b).count();
    assert!(
        committed.len() == fresh.len() && stale == 0,
        "testdata/windows/demo: {stale} of {} traces differ from what the generator writes: run \
         `cargo xtask gen-window`",
        fresh.len()
    );
    let truth = |d: &std::path::Path| {
        std::fs::read_to_string(d.join(kl1_window_gen::TRUTH_FILE)).expect("truth file")
    };
    assert!(
        truth(&demo) == truth(&dir),
        "testdata/windows/demo/generator-truth.json is stale: run `cargo xtask gen-window`"
    );
}

mod properties {
    use super::*;
    use kl1_bandwidth::Prefill;
    use kl1_window_gen::write_window;
    use proptest::prelude::*;

    fn tiny() -> (Spec, Kl1Rules) {
        let spec = Spec::from_file(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tiny-spec.toml"),
        )
        .expect("tiny spec");
        let rules = Kl1Rules::builtin()
            .with_prefill(Prefill {
                full_layers: 1,
                suffix_rows: 128,
                min_rows: 1024,
            })
            .expect("prefill");
        (spec, rules)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

        /// Whatever the rates, jitter, seed, rows and requests, the analysis reports the truth.
        #[test]
        fn any_plan_reports_its_truth(
            rates in prop::array::uniform9(20.0f64..400.0),
            jitter in 0.0f64..0.3,
            seed in any::<u64>(),
            decode_rows in prop::collection::vec((1u64..40, 1u64..8), 2..5),
            prefill_rows in prop::collection::vec(1u64..6000, 1..3),
            head_gemm in any::<bool>(),
        ) {
            let (spec, rules) = tiny();
            let mut plan = small_decode_plan();
            plan.rates = Rates {
                dense: rates[0], lm_head: rates[1], router: rates[2], mhc: rates[3], smoe: rates[4],
                tf_gu: rates[5], tf_down: rates[6], reconstruct: rates[7], l2pf: rates[8],
            };
            plan.jitter = jitter;
            plan.seed = seed;
            plan.captures[0].steps = decode_rows
                .iter()
                .map(|&(rows, req)| decode(rows, req.min(rows)))
                .collect();
            plan.captures[0].lm_head_gemm = head_gemm;
            let mut steps: Vec<_> = prefill_rows.iter().map(|&r| prefill(r)).collect();
            steps.push(prefill(4096)); // at least one analysed chunk
            steps.push(decode(1, 1));
            plan.captures.push(capture("prof-150k-b1", "prefill-late", steps));
            let tmp = tempfile::tempdir().expect("tmp");
            let dir = tmp.path().join("win");
            let truth = write_window(&spec, &rules, &plan, &dir, false).expect("generate");
            let report = analyze(&[dir], &spec, &rules, None).expect("analyse");
            let n = check_against_truth(&report, &truth);
            prop_assert!(n > 50);
        }
    }
}

/// Issue 15 item 20: a key some steps lack is averaged over the steps that have it, and `mean_steps` says how
/// many did. (The seed filled it with 0: one missing LM-head kernel halved the LM head's mean GB/s.)
#[test]
fn a_key_missing_from_a_step_is_averaged_over_the_steps_that_have_it() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    edit_events(&dir, "prof-short-b1:decode", 0, |events| {
        let i = nth_kernel(events, "exl3_mrow_head_kernel", 0);
        events.remove(i);
    });
    let report = analyze(&[dir], &Spec::builtin(), &Kl1Rules::builtin(), None).expect("analyse");
    let ranks = &report.windows[0].captures[0].ranks;
    let r0 = &ranks[0];
    assert_eq!(r0.steps, 2);
    assert!(!r0.per_step[0].contains_key("dense.lm_head.gbps"));
    let only = r0.per_step[1]["dense.lm_head.gbps"];
    assert!(only > 100.0, "{only}");
    // The mean of the one step that has it, not (0 + only) / 2.
    assert_eq!(r0.mean["dense.lm_head.gbps"], only);
    // Every key that exists only when the head kernel ran: its GB/s block, its family's totals, its bucket.
    let head_keys = [
        "dense.lm_head.gbps",
        "dense.lm_head.launches",
        "dense.lm_head.mb_per_step",
        "dense.lm_head.us_per_step",
        "family_sum_ms.mrow_head",
        "family_union_ms.mrow_head",
        "l2pf_apart.lm_head",
        "no_l2pf.lm_head",
        "sp1.lm_head",
    ];
    assert_eq!(
        r0.mean_steps,
        head_keys
            .iter()
            .map(|k| (k.to_string(), 1))
            .collect::<BTreeMap<_, _>>()
    );
    // A key every step has is still the plain mean.
    let d = (r0.per_step[0]["dense.all.gbps"] + r0.per_step[1]["dense.all.gbps"]) / 2.0;
    assert!(close(r0.mean["dense.all.gbps"], d, 1e-12));
    // Rank 1 was not edited: every key in every step, nothing listed.
    assert!(ranks[1].mean_steps.is_empty());
    let v: serde_json::Value =
        serde_json::from_str(&report.to_json().expect("json")).expect("json");
    assert_eq!(
        v["windows"]["win"]["prof-short-b1:decode"]["ranks"]["0"]["mean_steps"]["dense.lm_head.gbps"],
        serde_json::json!(1)
    );
}

/// Drops ` requests=N` from every step marker of (label, rank).
fn strip_requests(dir: &std::path::Path, label: &str, rank: u64) {
    edit_events(dir, label, rank, |events| {
        for e in events.iter_mut() {
            if let Some(n) = e["name"].as_str()
                && n.starts_with("kl1.step#")
                && let Some(at) = n.find(" requests=")
            {
                let cut = n[..at].to_string();
                e["name"] = serde_json::json!(cut);
            }
        }
    });
}

/// Issue 15 item 22: a prefill marker needs no `requests`; the numbers are those of the markers with it.
#[test]
fn prefill_markers_without_requests_are_analysed() {
    let (_tmp, dir, _) = generate(&small_prefill_plan());
    let with = analyze(
        std::slice::from_ref(&dir),
        &Spec::builtin(),
        &Kl1Rules::builtin(),
        None,
    )
    .expect("analyse");
    for rank in 0..2 {
        strip_requests(&dir, "prof-32k-b1:prefill-early", rank);
    }
    let without = analyze(&[dir], &Spec::builtin(), &Kl1Rules::builtin(), None)
        .expect("prefill markers without requests");
    let (a, b) = (
        &with.windows[0].captures[0],
        &without.windows[0].captures[0],
    );
    for (ra, rb) in a.ranks.iter().zip(&b.ranks) {
        assert_eq!(ra.per_step, rb.per_step);
        assert!(!rb.per_step.is_empty());
    }
}

/// Issue 15 item 22: a `--step-pattern` whose `requests` group is optional (or absent) is accepted; decode
/// steps without it lose only the keys that need it.
#[test]
fn an_optional_requests_group_is_accepted_and_only_its_keys_go() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    for rank in 0..2 {
        strip_requests(&dir, "prof-short-b1:decode", rank);
    }
    let optional = r"kl1\.step#(?P<step>\d+) phase=(?P<phase>decode|prefill) rows=(?P<rows>\d+)(?: requests=(?P<requests>\d+))?";
    let absent = r"kl1\.step#(?P<step>\d+) phase=(?P<phase>decode|prefill) rows=(?P<rows>\d+)";
    for pattern in [optional, absent] {
        let rules = Kl1Rules::builtin()
            .with_step_pattern(pattern)
            .expect("a pattern with an optional or no requests group");
        let report =
            analyze(std::slice::from_ref(&dir), &Spec::builtin(), &rules, None).expect("analyse");
        for r in &report.windows[0].captures[0].ranks {
            assert_eq!(r.steps, 2, "{pattern}");
            for row in &r.per_step {
                assert!(!row.contains_key("smoe.requests"));
                assert!(!row.contains_key("smoe.gbps_if_6_per_request"));
                assert!(row["smoe.gbps_if_uniform"] > 0.0);
                assert!(row["dense.all.gbps"] > 0.0);
            }
        }
    }
}
