//! `kineto steps`, `kineto kernels` and `kineto budget` as a user runs them.

// Helpers outside `#[test]` functions panic on purpose too: a failed run is a failed test.
#![allow(clippy::expect_used)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

mod common;
use common::{corpus, json_lines, testdata};

const PATTERN: &str = r"step\[(?P<phase>[A-Z]+) bs=(?P<rows>\d+) reqs=(?P<requests>\d+)\]";

fn synthetic() -> PathBuf {
    testdata("synthetic/sglang_steps.json")
}

/// `kineto ARGS PATHS`, as printed.
fn run(args: &[&str], paths: &[PathBuf]) -> Output {
    common::kineto()
        .args(args)
        .args(paths)
        .output()
        .expect("run kineto")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout.clone()).expect("utf8");
    assert!(!s.contains("NaN") && !s.contains("inf"), "{s}");
    s
}

fn has_keys(v: &Value, keys: &[&str]) {
    for k in keys {
        assert!(v.get(k).is_some(), "missing `{k}` in {v}");
    }
}

#[test]
fn steps_json() {
    let out = run(
        &["steps", "--json", "--step-pattern", PATTERN],
        &[synthetic()],
    );
    let rows = json_lines(&ok(&out));
    assert_eq!(rows.len(), 3);
    for r in &rows {
        has_keys(
            r,
            &[
                "step",
                "name",
                "phase",
                "rows",
                "requests",
                "lo_us",
                "hi_us",
                "period_us",
                "kernels",
                "kernel_sum_us",
                "kernel_union_us",
            ],
        );
    }
    let r = &rows[0];
    assert_eq!(r["step"], 0);
    assert_eq!(r["name"], "step[DECODE bs=32 reqs=4]");
    assert_eq!(
        (
            r["phase"].as_str(),
            r["rows"].as_u64(),
            r["requests"].as_u64()
        ),
        (Some("DECODE"), Some(32), Some(4))
    );
    assert_eq!(
        (r["lo_us"].as_f64(), r["hi_us"].as_f64()),
        (Some(1000.0), Some(1210.0))
    );
    assert_eq!(r["period_us"].as_f64(), Some(300.0));
    assert_eq!(r["kernels"], 5);
    assert_eq!(
        (r["kernel_sum_us"].as_f64(), r["kernel_union_us"].as_f64()),
        (Some(260.0), Some(160.0))
    );
    assert_eq!(r["rank"], 3);
    assert!(rows[2]["lo_us"].is_null() && rows[2]["period_us"].is_null());
    // The step's budget totals are `steps` columns too (the values `budget_json` works out).
    assert_eq!(
        (r["span_us"].as_f64(), r["idle_us"].as_f64()),
        (Some(210.0), Some(50.0))
    );
    assert_eq!(
        (
            r["unmatched_kernels"].as_u64(),
            r["unmatched_sum_ns"].as_i64()
        ),
        (Some(1), Some(30_000))
    );
    // What did not link is told on stderr.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 kernels (5.000 µs) have no launch"), "{err}");
    assert!(
        err.contains("launch calls with no GPU activity: cudaLaunchKernel 1"),
        "{err}"
    );
}

#[test]
fn budget_json() {
    let out = run(
        &["budget", "--json", "--step-pattern", PATTERN],
        &[synthetic()],
    );
    let rows = json_lines(&ok(&out));
    assert_eq!(rows.len(), 3);
    for r in &rows {
        has_keys(
            r,
            &[
                "step",
                "span_us",
                "idle_us",
                "buckets",
                "families",
                "unmatched",
                "same_stream_overlaps",
            ],
        );
        // Σ exclusive + idle = span, in whole ns.
        let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
        let excl: i64 = r["buckets"]
            .as_object()
            .unwrap()
            .values()
            .map(|b| ns(&b["exclusive_us"]))
            .sum();
        assert_eq!(excl + ns(&r["idle_us"]), ns(&r["span_us"]), "{r}");
    }
    let r = &rows[0];
    assert_eq!(r["span_us"].as_f64(), Some(210.0));
    assert_eq!(r["idle_us"].as_f64(), Some(50.0));
    assert_eq!(r["buckets"]["gemm"]["exclusive_us"].as_f64(), Some(75.0));
    assert_eq!(r["buckets"]["gemm"]["inclusive_us"].as_f64(), Some(100.0));
    assert_eq!(r["families"]["nccl"]["count"], 1);
    assert_eq!(r["families"]["nccl"]["bucket"], "comm");
    assert_eq!(r["unmatched"]["bucket"], "unmatched");
    assert_eq!(r["families"]["nccl"]["sum_us"].as_f64(), Some(100.0));
    assert_eq!(r["families"]["nccl"]["union_us"].as_f64(), Some(100.0));
    assert_eq!(r["unmatched"]["count"], 1);
    assert_eq!(r["unmatched"]["sum_us"].as_f64(), Some(30.0));
    assert_eq!(rows[1]["same_stream_overlaps"], 1);
    // Step 1's copy ends at 1410 µs, after its last kernel (1360.001 µs): the budget window is wider than
    // the kernels' bounds, and each has its own name.
    assert_eq!(
        (
            rows[1]["hi_us"].as_f64(),
            rows[1]["window_hi_us"].as_f64(),
            rows[1]["span_us"].as_f64()
        ),
        (Some(1360.001), Some(1410.0), Some(110.0))
    );
    assert_eq!(
        rows[1]["buckets"]["elementwise"]["exclusive_us"].as_f64(),
        Some(15.001)
    );
}

#[test]
fn budget_csv_and_table() {
    let csv = ok(&run(
        &["budget", "--csv", "--step-pattern", PATTERN],
        &[synthetic()],
    ));
    let mut it = csv.lines();
    // The `steps` columns, then `kind` and `key`, then the `families` and `budget` columns a step's row
    // does not have.
    let header = "rank,step,step_number,name,phase,phase_from,rows,requests,prefill_requests,prefill_query_tokens,\
                  prefill_context_tokens,decode_requests,decode_query_tokens,decode_context_tokens,query_tokens,\
                  tokens_from,cpu_lo_us,cpu_lo_rel_us,cpu_hi_us,cpu_hi_rel_us,lo_us,lo_rel_us,hi_us,hi_rel_us,period_us,kernels,\
                  memcpys,memsets,kernel_sum_us,kernel_union_us,window_lo_us,window_lo_rel_us,window_hi_us,\
                  window_hi_rel_us,span_us,idle_us,comm_us,comm_overlapped_us,comm_exposed_us,\
                  comm_overlap_pct,unmatched_kernels,unmatched_sum_us,same_stream_overlaps,file,\
                  kind,key,bucket,count,sum_us,union_us,exclusive_us,inclusive_us";
    assert_eq!(it.next(), Some(header));
    let gemm = csv.lines().find(|l| l.contains(",bucket,gemm,")).unwrap();
    assert!(gemm.ends_with(",bucket,gemm,,,,,75.000,100.000"), "{gemm}");
    let nccl = csv.lines().find(|l| l.contains(",family,nccl,")).unwrap();
    assert!(
        nccl.ends_with(",family,nccl,comm,1,100.000,100.000,,"),
        "{nccl}"
    );
    // Every row has the header's 52 cells (the quoted name holds no comma here, but its brackets are kept).
    for l in csv.lines() {
        assert_eq!(l.split(',').count(), 52, "{l}");
    }
    let table = ok(&run(&["budget", "--step-pattern", PATTERN], &[synthetic()]));
    assert!(table.contains("exclusive time per bucket"), "{table}");
    // Listed as people say the name (no parameter list: `template::display_name`); whole in JSON and CSV.
    assert!(
        table.contains("µs  my_custom_kernel\n"),
        "unmatched names are listed: {table}"
    );
}

#[test]
fn kernels_csv_quotes_names() {
    let csv = ok(&run(
        &["kernels", "--csv", "--step-pattern", PATTERN],
        &[synthetic()],
    ));
    let rows: Vec<&str> = csv.lines().collect();
    assert!(
        rows[0].starts_with(
            "rank,kind,index,step,name,family,bucket,matched,how,ts_us,ts_rel_us,dur_us"
        )
    );
    assert_eq!(rows.len(), 1 + 10);
    let fill = rows.iter().find(|l| l.contains("FillFunctor")).unwrap();
    // The name has commas, so it is quoted; the kernel is in step 0, launched by the graph launch.
    assert!(
        fill.contains(
            ",0,\"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>"
        ),
        "{fill}"
    );
    // Matched by a rule; absolute µs, then µs from the trace's first event (the 90 µs annotation),
    // then the duration.
    assert!(fill.contains(",fill,memory,rule,rule "), "{fill}");
    assert!(fill.contains(",1100.000,1010.000,20.000,"), "{fill}");
    // The graph launch at 150 µs (60 µs from the first event) on thread 10; grid 1x1x1, block 128x1x1.
    assert!(
        fill.contains(",cudaGraphLaunch,150.000,60.000,10,step[DECODE bs=32 reqs=4],"),
        "{fill}"
    );
    // Then registers and shared memory (the synthetic trace gives neither), bytes (a kernel has
    // none), no same-stream overlap and `file`, the last column.
    assert!(fill.contains(",1,1,1,128,1,1,,,,false,"), "{fill}");
    assert!(fill.ends_with("sglang_steps.json"), "{fill}");
    let json = ok(&run(
        &["kernels", "--json", "--step-pattern", PATTERN],
        &[synthetic()],
    ));
    let v = json_lines(&json);
    assert_eq!(v.len(), 10);
    let orphan = v.iter().find(|k| k["name"] == "orphan_kernel").unwrap();
    assert!(orphan["step"].is_null() && orphan["launch"].is_null());
    assert_eq!(orphan["bucket"], "unmatched");
    // Exact ns alongside the µs.
    assert_eq!(
        (orphan["ts_ns"].as_i64(), orphan["dur_ns"].as_i64()),
        (Some(1_500_000), Some(5_000))
    );
    for k in &v {
        has_keys(k, &["ts_us", "dur_us", "ts_ns", "dur_ns"]);
    }
}

/// On an absolute-time trace the µs start of a kernel is past 2^53 ns and f64 rounds it; `ts_ns`
/// and `dur_ns` are exact, and the CSV's µs text is exact too.
#[test]
fn kernels_carry_exact_ns_on_absolute_times() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absolute.json");
    std::fs::write(
        &path,
        r#"{"schemaVersion": 1, "traceEvents": [
          {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1717171717171000.000, "dur": 100},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1717171717171010.000, "dur": 1, "args": {"correlation": 1}},
          {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1717171717171717.123, "dur": 1.501, "args": {"device": 0, "stream": 7, "correlation": 1}}
        ]}"#,
    )
    .unwrap();
    let v = json_lines(&ok(&run(
        &["kernels", "--json"],
        std::slice::from_ref(&path),
    )));
    assert_eq!(v.len(), 1);
    let k = &v[0];
    let ts_ns: i64 = 1_717_171_717_171_717_123;
    assert_eq!(k["ts_ns"].as_i64(), Some(ts_ns));
    assert_eq!(k["dur_ns"].as_i64(), Some(1_501));
    assert_eq!(k["step"], 0);
    // The f64 µs cannot hold the last ns digits.
    let ts_us = k["ts_us"].as_f64().unwrap();
    assert_ne!((ts_us * 1000.0) as i64, ts_ns);
    let csv = ok(&run(&["kernels", "--csv"], &[path]));
    let row = csv.lines().nth(1).unwrap();
    // Absolute and relative (from the step marker at …171000.000) start, exact, then the duration.
    assert!(
        row.contains(",1717171717171717.123,717.123,1.501,"),
        "{row}"
    );
    assert_eq!(k["ts_rel_us"].as_f64(), Some(717.123));
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn several_ranks_in_order() {
    let out = run(&["steps", "--json"], &[shared("param/dlrm_kineto")]);
    let rows = json_lines(&ok(&out));
    assert_eq!(
        rows.iter().map(|r| r["rank"].as_u64()).collect::<Vec<_>>(),
        (0..8).map(Some).collect::<Vec<_>>()
    );
    assert!(rows.iter().all(|r| r["name"] == "ProfilerStep#10"));
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn bad_rules_and_patterns_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad-rules.toml");
    std::fs::write(
        &bad,
        "[families]\ngemm = \"gemm\"\n[[rule]]\nfamily = \"gemm\"\npattern = 'gemm('\n",
    )
    .unwrap();
    let out = run(
        &["budget", "--rules", bad.to_str().unwrap()],
        &[synthetic()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad-rules.toml:5: rule 1: invalid pattern `gemm(`"),
        "{err}"
    );

    let out = run(&["steps", "--step-pattern", "step["], &[synthetic()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("step pattern `step[`"));

    let missing = testdata("synthetic/no-such-trace.json");
    let out = run(&["steps"], &[missing]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-trace.json"));

    let out = run(&["steps", "--json", "--csv"], &[synthetic()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--json and --csv together are refused"
    );
}

/// A file or folder of the shared corpus (for tests ignored without it: `tests/corpus/build.rs`).
fn shared(rel: &str) -> PathBuf {
    corpus::corpus_file(rel)
}

/// `kineto annotations` on the vLLM capture trace against a plain `json.load` with Decimal durations
/// (run once, values written here): 26 `user_annotation` events in 4 names (serving/INVENTORY.csv:
/// 26), one GPU mirror.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn annotations_of_the_vllm_capture() {
    let p = shared(
        "serving/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
    );
    let rows = json_lines(&ok(&run(&["annotations", "--json"], &[p])));
    let by = |name: &str| rows.iter().find(|r| r["name"] == name).expect(name).clone();
    let cap = by("capture_32_FULL");
    assert_eq!(
        (cap["count"].as_u64(), cap["total_ns"].as_i64()),
        (Some(1), Some(58_406_933))
    );
    assert_eq!(
        (
            cap["gpu_count"].as_u64(),
            cap["gpu_total_ns"].as_i64().map(|n| n > 0)
        ),
        (Some(1), Some(true))
    );
    let g = by("## Call CompiledFxGraph f4ii27ddivzklxr54hd45chngp247rp2ytmjxpq3f55wet4szuh7 ##");
    // 41659.228 µs over 23 ranges: mean 1811.2707… µs, 1811.271 µs rounded to the ns.
    assert_eq!(
        (
            g["count"].as_u64(),
            g["total_ns"].as_i64(),
            g["mean_ns"].as_i64()
        ),
        (Some(23), Some(41_659_228), Some(1_811_271))
    );
    assert_eq!(
        rows.iter()
            .map(|r| r["count"].as_u64().unwrap())
            .sum::<u64>(),
        26
    );
    // Most CPU time first.
    assert_eq!(rows[0]["name"], "capture_32_FULL");
}

/// The vLLM decode trace without `--step-pattern`: one step from its TraceLens marker, with tokens.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn steps_of_the_vllm_decode_trace_without_a_pattern() {
    let p = shared("serving/vllm_decode_full/graph_execution.json.gz");
    let out = run(&["steps", "--json"], &[p]);
    let rows = json_lines(&ok(&out));
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (
            r["decode_requests"].as_u64(),
            r["decode_query_tokens"].as_u64(),
            r["decode_context_tokens"].as_u64()
        ),
        (Some(32), Some(32), Some(55086))
    );
    assert_eq!(r["kernels"], 425);
    assert!(String::from_utf8_lossy(&out.stderr).contains("built-in `tracelens` markers"));
}

/// No marker and a pattern that matches nothing: one whole-window step, never an empty table, and
/// a note naming the annotations there are.
#[test]
fn a_pattern_that_matches_nothing_says_so() {
    let out = run(
        &["budget", "--json", "--step-pattern", "iteration"],
        &[synthetic()],
    );
    let rows = json_lines(&ok(&out));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["name"], "(whole trace)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("step pattern `iteration` matched no annotation; most frequent annotations: `forward` ×1"), "{err}");
    let table = ok(&run(
        &["steps", "--step-pattern", "iteration"],
        &[synthetic()],
    ));
    assert!(
        table.contains("(whole trace)") && table.contains("matched no annotation"),
        "{table}"
    );
}

/// `kineto top --by name --json -n 0` against `testdata/reference/top.py`'s plain aggregation
/// (Python json, Decimal durations, `statistics`): every group, every field.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn top_by_name_matches_a_plain_aggregation() {
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(testdata("reference/top.json")).expect("reference"),
    )
    .expect("json");
    let mut checked = 0;
    for case in reference.as_array().expect("list") {
        let rel = case["path"].as_str().expect("path");
        let path = common::root().join(rel);
        let got = json_lines(&ok(&run(
            &["top", "--by", "name", "--json", "-n", "0"],
            &[path],
        )));
        let want = case["rows"].as_array().expect("rows");
        assert_eq!(got.len(), want.len(), "{rel}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g["name"], w["name"], "{rel}: order");
            for k in ["count", "total_ns", "min_ns", "max_ns"] {
                assert_eq!(g[k], w[k], "{rel} {}: {k}", w["name"]);
            }
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            for (gk, wk, scale) in [
                ("mean_us", "mean_ns", 1e-3),
                ("median_us", "median_ns", 1e-3),
                ("stddev_us", "stddev_ns", 1e-3),
                ("pct", "pct", 1.0),
            ] {
                let (a, b) = (g[gk].as_f64().expect(gk), w[wk].as_f64().expect(wk) * scale);
                assert!(close(a, b), "{rel} {}: {gk} {a} vs {b}", w["name"]);
            }
            assert_eq!(
                g["total_us"].as_f64(),
                Some(w["total_ns"].as_f64().expect("ns") / 1000.0)
            );
            has_keys(
                g,
                &[
                    "name", "count", "total_us", "mean_us", "min_us", "max_us", "pct",
                ],
            );
            checked += 1;
        }
    }
    assert!(checked >= 3 + 73, "{checked}");
}

/// `top -n 2 --per-step --by bucket` on the synthetic trace: two rows per step at most, keyed by
/// step; the first step's buckets by Σ dur (gemm 100, comm 100, unmatched 30, memory 20,
/// elementwise 10 µs).
#[test]
fn top_per_step() {
    let rows = json_lines(&ok(&run(
        &[
            "top",
            "--per-step",
            "--by",
            "bucket",
            "-n",
            "2",
            "--json",
            "--step-pattern",
            PATTERN,
        ],
        &[synthetic()],
    )));
    let s0: Vec<&Value> = rows.iter().filter(|r| r["step"] == 0).collect();
    assert_eq!(s0.len(), 2);
    assert_eq!(
        (s0[0]["name"].as_str(), s0[1]["name"].as_str()),
        (Some("comm"), Some("gemm"))
    );
    // 100 of 260 µs.
    assert!((s0[0]["pct"].as_f64().unwrap() - 100.0 * 100.0 / 260.0).abs() < 1e-9);
}

/// `top --by name`'s `family` and `bucket` are those `kineto kernels` gives each kernel of the name (the
/// per-kernel listing, another path through the rules): one family for every name of the synthetic trace,
/// `unmatched` for a name no rule matched (where `kernels` has null); `--by bucket` groups families that
/// differ, so its `family` is null where a bucket holds two.
#[test]
fn top_names_family_and_bucket() {
    let kernels = json_lines(&ok(&run(
        &["kernels", "--json", "--step-pattern", PATTERN],
        &[synthetic()],
    )));
    let mut of_name: std::collections::BTreeMap<
        String,
        std::collections::BTreeSet<(String, String)>,
    > = Default::default();
    for k in &kernels {
        let family = k["family"].as_str().unwrap_or("unmatched").to_owned();
        let bucket = k["bucket"].as_str().expect("bucket").to_owned();
        of_name
            .entry(k["name"].as_str().expect("name").to_owned())
            .or_default()
            .insert((family, bucket));
    }
    let top = json_lines(&ok(&run(
        &[
            "top",
            "--by",
            "name",
            "-n",
            "0",
            "--json",
            "--step-pattern",
            PATTERN,
        ],
        &[synthetic()],
    )));
    assert_eq!(top.len(), of_name.len());
    for row in &top {
        let want = &of_name[row["name"].as_str().expect("name")];
        assert_eq!(want.len(), 1, "{row}");
        let (f, b) = want.iter().next().expect("one");
        assert_eq!(row["family"].as_str(), Some(f.as_str()), "{row}");
        assert_eq!(row["bucket"].as_str(), Some(b.as_str()), "{row}");
    }
    let buckets = json_lines(&ok(&run(
        &[
            "top",
            "--by",
            "bucket",
            "-n",
            "0",
            "--json",
            "--step-pattern",
            PATTERN,
        ],
        &[synthetic()],
    )));
    for row in &buckets {
        let b = row["name"].as_str().expect("name");
        let families: std::collections::BTreeSet<&String> = of_name
            .values()
            .flatten()
            .filter(|(_, kb)| kb == b)
            .map(|(f, _)| f)
            .collect();
        assert_eq!(row["bucket"].as_str(), Some(b), "{row}");
        match families.len() {
            1 => assert_eq!(
                row["family"].as_str(),
                families.into_iter().next().map(String::as_str)
            ),
            _ => assert!(row["family"].is_null(), "{row}"),
        }
    }
}

/// `kineto ranks` on the 8 dlrm ranks: the step's spans are those of `testdata/reference/steps.py`
/// (ProfilerStep#10, ranks 0‥7: 13009, 18467, 11350, 17511, 16589, 16392, 11410, 10967 µs). Sorted:
/// 10967 11350 11410 13009 16392 16589 17511 18467 → min 10967 (rank 7), median (13009 + 16392) / 2
/// = 14700.5, max 18467 (rank 1), 3766.5 µs over the median.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn ranks_side_by_side() {
    let dir = shared("param/dlrm_kineto");
    let rows = json_lines(&ok(&run(&["ranks", "--json"], &[dir])));
    let span = rows
        .iter()
        .find(|r| r["quantity"] == "span")
        .expect("span row");
    assert_eq!(
        (span["step_key"].as_str(), span["ranks"].as_u64()),
        (Some("10"), Some(8))
    );
    assert_eq!(
        (span["min_ns"].as_i64(), span["max_ns"].as_i64()),
        (Some(10_967_000), Some(18_467_000))
    );
    assert_eq!(span["median_us"].as_f64(), Some(14_700.5));
    assert_eq!(span["median_ns"].as_f64(), Some(14_700_500.0));
    assert_eq!(span["max_over_median_us"].as_f64(), Some(3_766.5));
    assert_eq!(
        (span["min_rank"].as_str(), span["max_rank"].as_str()),
        (Some("7"), Some("1"))
    );
    // Idle per rank (same reference): 6419 6349 7046 6979 8887 9121 7051 8308 → min rank 1, max rank 5.
    let idle = rows
        .iter()
        .find(|r| r["quantity"] == "idle")
        .expect("idle row");
    assert_eq!(
        (idle["min_ns"].as_i64(), idle["max_ns"].as_i64()),
        (Some(6_349_000), Some(9_121_000))
    );
    assert_eq!(
        (idle["min_rank"].as_str(), idle["max_rank"].as_str()),
        (Some("1"), Some("5"))
    );
    let table = ok(&run(&["ranks"], &[shared("param/dlrm_kineto")]));
    assert!(
        table.contains("slowest rank 1 at 18467.000 µs, 3766.500 µs (25.6 %) over the median"),
        "{table}"
    );
}

/// How each kernel got its family shows in `kernels` and `top`: a rule, a fallback word of the
/// function name (`mylib::tile_xmma_loop`: the word `xmma`), or nothing.
#[test]
fn how_matched_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("how.json");
    std::fs::write(
        &path,
        r#"{"traceEvents": [
          {"ph": "X", "cat": "kernel", "name": "void mylib::tile_xmma_loop(int)", "pid": 0, "tid": 7, "ts": 0, "dur": 5, "args": {"device": 0, "stream": 7}},
          {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7}},
          {"ph": "X", "cat": "kernel", "name": "zzz_qqq", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7}}
        ]}"#,
    )
    .unwrap();
    let k = json_lines(&ok(&run(
        &["kernels", "--json"],
        std::slice::from_ref(&path),
    )));
    let m: Vec<&str> = k.iter().map(|r| r["matched"].as_str().unwrap()).collect();
    assert_eq!(m, ["fallback", "rule", "unmatched"]);
    assert!(k[0]["how"].as_str().unwrap().contains("xmma"), "{}", k[0]);
    let t = json_lines(&ok(&run(&["top", "--json", "--by", "name"], &[path])));
    let by = |n: &str| t.iter().find(|r| r["name"] == n).unwrap()["matched"].clone();
    assert_eq!(by("void mylib::tile_xmma_loop(int)"), "fallback");
    assert_eq!(by("zzz_qqq"), "unmatched");
}
