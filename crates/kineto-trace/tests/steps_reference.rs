//! Links, steps and budgets of real traces against `testdata/reference/steps.json`, computed
//! independently by `testdata/reference/steps.py` (Python's json, Decimal times, brute-force
//! stabbing and segment-by-segment budgets).
//!
//! The traces are the shared corpus's (`../shared/traces`): without it these tests are listed as ignored
//! (and fail when KL1_REQUIRE_CORPUS is set).

// Helpers outside `#[test]` functions panic on purpose too: a bad reference is a failed test.
#![allow(clippy::expect_used)]

use kineto_trace::analysis::Analysis;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use kineto_trace::{Options, parse_file};
use serde_json::Value;
use std::path::{Path, PathBuf};

mod common;
use common::workspace;

fn reference() -> Vec<Value> {
    let p = workspace().join("testdata/reference/steps.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str::<Value>(&text)
        .expect("well-formed reference and trace")
        .as_array()
        .expect("well-formed reference and trace")
        .clone()
}

fn int(v: &Value) -> Option<i64> {
    v.as_i64()
}

/// Compares one trace with its reference entry; returns the differences.
fn check_case(root: &Path, case: &Value, rules: &Rules) -> Vec<String> {
    let rel = case["path"]
        .as_str()
        .expect("well-formed reference and trace");
    let pattern = StepPattern::new(
        case["pattern"]
            .as_str()
            .expect("well-formed reference and trace"),
    )
    .expect("well-formed reference and trace");
    let parsed =
        parse_file(&root.join(rel), &Options::default()).expect("well-formed reference and trace");
    let t = &parsed.trace;
    let a = Analysis::new(t, &pattern, rules);
    let mut diffs = Vec::new();
    let mut rounding = Vec::new();
    let mut eq = |what: String, got: Value, want: &Value| {
        if &got != want {
            diffs.push(format!(
                "{rel} [{}]: {what}: got {got}, reference {want}",
                pattern.as_str()
            ));
        }
    };

    // Links.
    let r = &a.links.report;
    let l = &case["links"];
    for (name, u) in [
        ("kernels_without_launch", &r.kernels_without_launch),
        ("memcpys_without_launch", &r.memcpys_without_launch),
        ("memsets_without_launch", &r.memsets_without_launch),
    ] {
        eq(format!("{name}.count"), u.count.into(), &l[name]["count"]);
        eq(
            format!("{name}.sum_ns"),
            u.sum_ns.into(),
            &l[name]["sum_ns"],
        );
    }
    eq(
        "graph_launches".into(),
        r.graph_launches.into(),
        &l["graph_launches"],
    );
    eq(
        "graph_kernels".into(),
        r.graph_kernels.into(),
        &l["graph_kernels"],
    );
    eq(
        "duplicate_correlations".into(),
        r.duplicate_correlations.into(),
        &l["duplicate_correlations"],
    );
    eq(
        "launches_without_gpu_op".into(),
        serde_json::to_value(&r.launches_without_gpu_op).expect("well-formed reference and trace"),
        &l["launches_without_gpu_op"],
    );
    eq(
        "kernels_outside".into(),
        a.steps.kernels_outside.into(),
        &case["kernels_outside"],
    );
    eq(
        "kernels_unlinked".into(),
        a.steps.kernels_unlinked.into(),
        &case["kernels_unlinked"],
    );
    eq(
        "same_stream_overlaps".into(),
        a.steps.same_stream_overlaps.into(),
        &case["same_stream_overlaps"],
    );

    // Steps.
    let want = case["steps"]
        .as_array()
        .expect("well-formed reference and trace");
    eq(
        "steps".into(),
        a.steps.steps.len().into(),
        &want.len().into(),
    );
    let budgets = a.budgets(t, rules);
    for ((s, b), w) in a.steps.steps.iter().zip(&budgets).zip(want) {
        let i = s.index;
        let mut field = |f: &str, got: Value| eq(format!("step {i} {f}"), got, &w[f]);
        field("index", s.index.into());
        field("name", s.name.clone().into());
        field("number", s.number.into());
        field("phase", s.phase.clone().into());
        field("rows", s.rows.into());
        field("requests", s.requests.into());
        field("cpu_lo_ns", s.cpu_lo_ns.into());
        field("cpu_hi_ns", s.cpu_hi_ns.into());
        field("lo_ns", s.lo_ns.into());
        field("hi_ns", s.hi_ns.into());
        field("period_ns", s.period_ns.into());
        field("kernels", s.kernels.len().into());
        field("memcpys", s.memcpys.len().into());
        field("memsets", s.memsets.len().into());
        field("kernel_sum_ns", s.kernel_sum_ns.into());
        field("kernel_union_ns", s.kernel_union_ns.into());
        field("same_stream_overlaps", s.same_stream_overlaps.into());

        // Budget.
        let wb = &w["budget"];
        if wb.is_null() {
            eq(
                format!("step {i} budget"),
                b.buckets.is_empty().into(),
                &true.into(),
            );
            continue;
        }
        eq(
            format!("step {i} span_ns"),
            b.span_ns.into(),
            &wb["span_ns"],
        );
        eq(
            format!("step {i} idle_ns"),
            b.idle_ns.into(),
            &wb["idle_ns"],
        );
        let excl_total: i64 = b.buckets.values().map(|v| v.exclusive_ns).sum();
        eq(
            format!("step {i} Σ exclusive + idle"),
            (excl_total + b.idle_ns).into(),
            &b.span_ns.into(),
        );
        let wbk = wb["buckets"]
            .as_object()
            .expect("well-formed reference and trace");
        eq(
            format!("step {i} bucket names"),
            serde_json::to_value(b.buckets.keys().collect::<Vec<_>>())
                .expect("well-formed reference and trace"),
            &serde_json::to_value(wbk.keys().collect::<Vec<_>>())
                .expect("well-formed reference and trace"),
        );
        for (name, v) in &b.buckets {
            let Some(wv) = wbk.get(name) else { continue };
            eq(
                format!("step {i} bucket {name} inclusive_ns"),
                v.inclusive_ns.into(),
                &wv["inclusive_ns"],
            );
            // Exclusive: the exact rational share, within 1 ns per segment where it was rounded.
            let (num, den) = wv["exclusive"]
                .as_str()
                .expect("well-formed reference and trace")
                .split_once('/')
                .expect("well-formed reference and trace");
            let (num, den): (i128, i128) = (
                num.parse().expect("well-formed reference and trace"),
                den.parse().expect("well-formed reference and trace"),
            );
            let rounded =
                i128::from(int(&wv["rounded_segments"]).expect("well-formed reference and trace"));
            let off = (i128::from(v.exclusive_ns) * den - num).abs();
            if off > rounded * den {
                rounding.push(format!(
                    "{rel}: step {i} bucket {name}: exclusive {} ns, exact {num}/{den}, more than {rounded} rounded ns apart",
                    v.exclusive_ns
                ));
            }
        }
        let fams = serde_json::to_value(
            b.families
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::json!({"count": v.count, "sum_ns": v.sum_ns, "union_ns": v.union_ns})))
                .collect::<serde_json::Map<_, _>>(),
        )
        .expect("well-formed reference and trace");
        eq(format!("step {i} families"), fams, &wb["families"]);
        eq(
            format!("step {i} unmatched.count"),
            b.unmatched.count.into(),
            &wb["unmatched"]["count"],
        );
        eq(
            format!("step {i} unmatched.sum_ns"),
            b.unmatched.sum_ns.into(),
            &wb["unmatched"]["sum_ns"],
        );
    }
    diffs.extend(rounding);
    diffs
}

fn run(root: &Path) -> usize {
    let rules = Rules::builtin();
    let mut n = 0;
    let mut diffs = Vec::new();
    for case in reference() {
        diffs.extend(check_case(root, &case, &rules));
        n += 1;
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    n
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn shared_corpus_matches_the_reference() {
    let root = common::corpus::required();
    let n = run(&root);
    assert!(n >= 30, "only {n} reference cases");
}

/// The cases the issue names, checked by value so that a change to the reference is noticed too.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn named_cases() {
    let root = common::corpus::required();
    let rules = Rules::builtin();
    let opts = Options::default();

    // Eight dlrm ranks: one ProfilerStep#10 each, every rank's kernels in it.
    let dlrm: Vec<PathBuf> = kineto_trace::expand_paths(&[root.join("param/dlrm_kineto")]).unwrap();
    assert_eq!(dlrm.len(), 8, "{dlrm:?}");
    for (rank, p) in dlrm.iter().enumerate() {
        let parsed = parse_file(p, &opts).unwrap();
        let a = Analysis::new(&parsed.trace, &StepPattern::default(), &rules);
        assert_eq!(parsed.trace.header.rank, Some(rank as u64));
        assert_eq!(a.steps.steps.len(), 1, "{}", p.display());
        let s = &a.steps.steps[0];
        assert_eq!((s.name.as_str(), s.number), ("ProfilerStep#10", Some(10)));
        // Every linked kernel was launched inside the one step.
        assert_eq!(a.steps.kernels_outside, 0);
        assert_eq!(
            s.kernels.len() as u64 + a.steps.kernels_unlinked,
            parsed.trace.kernels.len() as u64
        );
    }

    // CUDA graphs: 70 cudaGraphLaunch → 135 kernels, each in the step of its launch.
    let nq = root.join("hta/negative_queue_length_values_check/rank0.json.gz");
    {
        let parsed = parse_file(&nq, &opts).unwrap();
        let t = &parsed.trace;
        let a = Analysis::new(t, &StepPattern::default(), &rules);
        assert_eq!(a.links.report.graph_launches, 70);
        assert_eq!(a.links.report.graph_kernels, 135);
        let steps = a.kernel_steps(t);
        let mut in_steps = 0;
        for (k, l) in a.links.kernel_launch.iter().enumerate() {
            let Some(l) = l else { continue };
            let launch = t.launches.row(*l as usize);
            if t.name(launch.name) != "cudaGraphLaunch" {
                continue;
            }
            let s = steps[k].expect("every graph kernel is in a step") as usize;
            let st = &a.steps.steps[s];
            assert!(st.cpu_lo_ns <= launch.ts_ns && launch.ts_ns < st.cpu_hi_ns);
            in_steps += 1;
        }
        assert_eq!(in_steps, 135);
        // The graph launches are on the main thread, inside a ProfilerStep and a record_function.
        let l = a
            .links
            .kernel_launch
            .iter()
            .flatten()
            .find(|&&l| t.name(t.launches.row(l as usize).name) == "cudaGraphLaunch")
            .unwrap();
        let names: Vec<&str> = a
            .links
            .annotations(t, *l as usize)
            .map(|s| t.name(s.name))
            .collect();
        assert!(
            names.last().is_some_and(|n| n.starts_with("ProfilerStep#")),
            "{names:?}"
        );
    }

    // A step mirrored as gpu_user_annotation counts once (ROCm trace: ProfilerStep#1 on CPU and GPU).
    let amd = root.join("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
    let parsed = parse_file(&amd, &opts).unwrap();
    assert!(
        parsed
            .trace
            .gpu_user_annotations
            .iter()
            .any(|s| parsed.trace.name(s.name) == "ProfilerStep#1")
    );
    let a = Analysis::new(&parsed.trace, &StepPattern::default(), &rules);
    let names: Vec<&str> = a.steps.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["ProfilerStep#1", "ProfilerStep#2"]);
}

/// The shared vLLM decode trace: its one TraceLens-style marker is found by the built-in profiles,
/// with the token counts its name states, and the step holds the whole graph replay.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn vllm_decode_step_from_its_tracelens_marker() {
    let root = common::corpus::required();
    let path = root.join("serving/vllm_decode_full/graph_execution.json.gz");
    let p = parse_file(&path, &Options::default()).expect("parse");
    let a = Analysis::new(&p.trace, &StepPattern::builtin(), &Rules::builtin());
    let s = &a.steps;
    assert_eq!(s.steps.len(), 1);
    assert!(s.notes[0].contains("`tracelens`"), "{:?}", s.notes);
    let st = &s.steps[0];
    assert_eq!(
        st.name,
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"
    );
    let phase = |r, q, k, qq, qk| {
        Some(kineto_trace::step::PhaseTokens {
            requests: Some(r),
            query_tokens: Some(q),
            context_tokens: Some(k),
            query_sq_sum: Some(qq),
            query_context_sum: Some(qk),
        })
    };
    assert_eq!(
        st.tokens,
        Some(kineto_trace::step::StepTokens {
            prefill: phase(0, 0, 0, 0, 0),
            decode: phase(32, 32, 55086, 32, 55086),
            unphased: None,
        })
    );
    assert_eq!(
        st.tokens_from,
        [kineto_trace::tokens::TokenSource::Marker {
            profile: "tracelens".to_string()
        }]
    );
    assert_eq!(
        (st.phase.as_deref(), st.rows, st.requests),
        (Some("decode"), Some(32), Some(32))
    );
    // serving/INVENTORY.csv: 425 kernels and 9 copies in the trace, all launched in the step.
    assert_eq!((st.kernels.len(), st.memcpys.len()), (425, 9));
    assert_eq!((s.kernels_outside, s.kernels_unlinked), (0, 0));
}

/// Whole-trace idle (no kernel, copy or fill running between the first and last of them) against
/// `testdata/reference/gpu_idle.json`: `gpu_work` is HTA's temporal-breakdown definition computed
/// exactly (Python json, Decimal) over kernels, copies and fills; `exact` is the same over every
/// event HTA puts on a stream (it also counts `cuda_sync` events). kineto equals `gpu_work` on
/// every trace, and `exact` wherever a trace has nothing else on a stream. HTA's own numbers are
/// stored beside them; they differ from `exact` only by HTA's float64 sums (the script redoes
/// them: `hta_arithmetic_idle_us`).
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn whole_trace_idle_matches_htas_definition() {
    let root = common::corpus::required();
    let p = workspace().join("testdata/reference/gpu_idle.json");
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(&p).expect("reference")).expect("json");
    let rules = Rules::builtin();
    let mut same_as_hta_definition = 0;
    let cases = reference.as_array().expect("list");
    for case in cases {
        let rel = case["path"].as_str().expect("path");
        let parsed = parse_file(&root.join(rel), &Options::default()).expect("parse");
        let t = &parsed.trace;
        let a = Analysis::new(t, &StepPattern::whole_trace(), &rules);
        let b = a.budgets(t, &rules);
        let work = &case["gpu_work"];
        let (idle, span) = match b.first() {
            Some(b) => (b.idle_ns, b.span_ns),
            None => (0, 0),
        };
        assert_eq!(idle, work["idle_ns"].as_i64().unwrap_or(0), "{rel}: idle");
        assert_eq!(span, work["span_ns"].as_i64().unwrap_or(0), "{rel}: span");
        // Where HTA sees only kernels, copies and fills on the streams, its definition is ours.
        let only_gpu_work = case["exact"]["categories"].as_array().is_some_and(|c| {
            c.iter().all(|c| {
                [
                    "kernel",
                    "Kernel",
                    "gpu_memcpy",
                    "Memcpy",
                    "gpu_memset",
                    "Memset",
                ]
                .contains(&c.as_str().unwrap_or(""))
            })
        });
        if only_gpu_work {
            assert_eq!(case["exact"]["idle_ns"], work["idle_ns"], "{rel}");
            same_as_hta_definition += 1;
        }
        // Σ exclusive + idle = span with the memcpy and memset buckets.
        for x in &b {
            let excl: i64 = x.buckets.values().map(|v| v.exclusive_ns).sum();
            assert_eq!(excl + x.idle_ns, x.span_ns, "{rel}");
        }
    }
    assert!(cases.len() >= 40, "{}", cases.len());
    // 29 of the 40: the other 11 also carry `cuda_sync` events or cpu_ops with a stream, which HTA
    // counts as GPU time, or (large_integer_trace) no event with a stream at all.
    assert_eq!((same_as_hta_definition, cases.len()), (29, 40));
}

/// Comm/compute overlap over the whole trace against `testdata/reference/comm_overlap.json`: HTA's
/// `get_comm_comp_overlap` definition computed exactly (Python json, Decimal, brute-force
/// intersection), and HTA's own percentage (rounded to 0.01 by HTA) beside it.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn comm_overlap_matches_htas_definition() {
    let root = common::corpus::required();
    let p = workspace().join("testdata/reference/comm_overlap.json");
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(&p).expect("reference")).expect("json");
    let rules = Rules::builtin();
    let cases = reference.as_array().expect("list");
    assert_eq!(cases.len(), 9);
    for case in cases {
        let rel = case["path"].as_str().expect("path");
        let parsed = parse_file(&root.join(rel), &Options::default()).expect("parse");
        let a = Analysis::new(&parsed.trace, &StepPattern::whole_trace(), &rules);
        let b = &a.budgets(&parsed.trace, &rules)[0];
        let want = &case["exact"];
        assert_eq!(
            b.comm.comm_ns,
            want["comm_ns"].as_i64().expect("ns"),
            "{rel}"
        );
        assert_eq!(
            b.comm.overlapped_ns,
            want["overlapped_ns"].as_i64().expect("ns"),
            "{rel}"
        );
        assert_eq!(b.comm.exposed_ns, b.comm.comm_ns - b.comm.overlapped_ns);
        let pct = b.comm.pct().expect("comm");
        let hta = case["hta_pct"].as_f64().expect("pct");
        assert!(
            (pct - hta).abs() <= 0.005 + 1e-9,
            "{rel}: {pct} vs HTA {hta}"
        );
    }
}
