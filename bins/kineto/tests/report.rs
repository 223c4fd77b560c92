//! `kineto report` and `kineto diff` on a generated trace (the demo window's) and on real traces of the
//! shared corpus (ignored without it): the page embeds the very rows `kineto budget --json` prints, and
//! the diff's Δ % is the arithmetic on those rows.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

mod common;
use common::tool_json::embedded_json;
use common::{corpus, kineto};

/// A trace of the shared corpus (for tests ignored without it), or, for [`DEMO`], the generated one.
fn testdata(rel: &str) -> PathBuf {
    if rel == DEMO {
        return common::root().join(DEMO);
    }
    corpus::corpus_file(rel)
}

/// One rank of the generated demo window.
const DEMO: &str = "testdata/windows/demo/prof-short-b1.decode.rank0.pt.trace.json.gz";

const RANK0: &str = "param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz";
const RANK1: &str = "param/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json.gz";

fn budget_json(trace: &str) -> Vec<Value> {
    json_listing(&["budget", "--json"], &testdata(trace))
}

/// Runs `kineto`, which must succeed.
fn succeeds(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().expect("run kineto");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The JSON lines a listing of `trace` prints (it must succeed).
fn json_listing(args: &[&str], trace: &std::path::Path) -> Vec<Value> {
    let out = succeeds(kineto().args(args).arg(trace));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

#[test]
fn report_embeds_the_budget_rows_the_listing_prints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page_path = dir.path().join("r.html");
    let out = kineto()
        .args(["report", "--html"])
        .arg(&page_path)
        .arg(testdata(DEMO))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&page_path).expect("written");
    let e = embedded_json(&page);
    assert_eq!(e["budget"], Value::Array(budget_json(DEMO)));
    assert!(e["top"].as_array().is_some_and(|t| !t.is_empty()));
    assert!(page.contains("<svg"));
    // The page opens with the doctor's findings: the rows `kineto doctor --json` prints, embedded, and
    // their section before the budget's.
    let rows = json_listing(&["doctor", "--json"], &testdata(DEMO));
    assert_eq!(e["findings"], Value::Array(rows));
    let body = &page[page.find("<body").expect("a body")..];
    let findings = body
        .find("What to fix first")
        .expect("the findings section");
    let budget = body.find("<svg").expect("the budget chart");
    assert!(findings < budget, "the findings come first");
    // Not replaced without --overwrite; replaced with it.
    let again = kineto()
        .args(["report", "--html"])
        .arg(&page_path)
        .arg(testdata(DEMO))
        .output()
        .expect("run");
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--overwrite"));
    let forced = kineto()
        .args(["report", "--overwrite", "--html"])
        .arg(&page_path)
        .arg(testdata(DEMO))
        .output()
        .expect("run");
    assert!(forced.status.success());
}

/// The text of each cell of the first table after `heading` in `page`, row by row (header row left
/// out), with the page's escapes undone.
fn table_after(page: &str, heading: &str) -> Vec<Vec<String>> {
    let from = page.find(heading).expect("the heading") + heading.len();
    let table = &page[from..];
    let table = &table[..table.find("</table>").expect("a table after the heading")];
    table
        .split("<tr>")
        .filter(|r| r.contains("<td"))
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let c = &c[c.find('>').expect("a cell") + 1..];
                    c[..c.find("</td>").expect("a closed cell")]
                        .replace("&#39;", "'")
                        .replace("&quot;", "\"")
                        .replace("&lt;", "<")
                        .replace("&gt;", ">")
                        .replace("&amp;", "&")
                })
                .collect()
        })
        .collect()
}

/// Each phase's count in first-seen order, as the pages say it: `1 unknown, 5 decode`.
fn counted(phases: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for p in phases {
        match counts.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => counts.push((p, 1)),
        }
    }
    let said: Vec<String> = counts.iter().map(|(p, n)| format!("{n} {p}")).collect();
    said.join(", ")
}

/// On every generated server trace (testdata/synthetic/server_traces, whose expected.json the generator
/// wrote with each step's phase and how it was found), the doctor page's phase table and the report
/// page's step budget show each step's phase, `unknown` where none is known, and how it was found: the
/// text of the `phase_from` kind (`graph_replay` → `graph replay (…)`, `marker` → ``marker `…` ``).
#[test]
fn both_pages_show_each_steps_phase_and_how_it_was_found() {
    let root = common::testdata("synthetic/server_traces");
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("expected.json")).expect("expected.json"),
    )
    .expect("expected.json parses");
    let said = |kind: &str| match kind {
        "marker" => "marker `",
        "graph_replay" => "graph replay (",
        "attention_kernels" => "attention kernel `",
        "one_token_per_request" => "one query token per request (",
        other => panic!("a phase_from kind this test does not know: {other}"),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut inferred = 0;
    for (name, e) in expected.as_object().expect("an object per trace") {
        let trace = root.join(e["file"].as_str().expect("file"));
        let steps = e["steps"].as_array().expect("steps");
        let phases: Vec<String> = steps
            .iter()
            .map(|s| s["phase"].as_str().unwrap_or("unknown").to_owned())
            .collect();
        let doctor_page = dir.path().join(format!("{name}.doctor.html"));
        succeeds(
            kineto()
                .arg("doctor")
                .arg("--html")
                .arg(&doctor_page)
                .arg(&trace),
        );
        let report_page = dir.path().join(format!("{name}.report.html"));
        succeeds(
            kineto()
                .arg("report")
                .arg("--html")
                .arg(&report_page)
                .arg(&trace),
        );
        let doctor = std::fs::read_to_string(&doctor_page).expect("written");
        let report = std::fs::read_to_string(&report_page).expect("written");
        let file = trace.display().to_string();
        let short = file.rsplit('/').next().expect("a name");
        let doctor_heading = format!("rank unknown — {short}: {}</h3>", counted(&phases));
        assert!(
            doctor.contains(&doctor_heading),
            "{name}: no {doctor_heading:?}"
        );
        assert!(
            report.contains(&format!("Phases: {} (", counted(&phases))),
            "{name}"
        );
        for (page, heading) in [
            (&doctor, doctor_heading.as_str()),
            (&report, ": the step budget"),
        ] {
            let rows = table_after(page, heading);
            assert_eq!(rows.len(), steps.len(), "{name}: one row per step");
            for (i, (row, s)) in rows.iter().zip(steps).enumerate() {
                assert_eq!(row[0], i.to_string(), "{name}");
                assert_eq!(row[2], phases[i], "{name} step {i}");
                match s["phase_from"].as_str() {
                    None => assert_eq!(row[3], "–", "{name} step {i}"),
                    Some(kind) => {
                        assert!(
                            row[3].starts_with(said(kind)),
                            "{name} step {i}: {}",
                            row[3]
                        );
                        inferred += usize::from(kind != "marker");
                    }
                }
            }
        }
        // The doctor page embeds the phases it shows.
        let embedded_steps = &embedded_json(&doctor)["steps"];
        for (i, s) in steps.iter().enumerate() {
            assert_eq!(embedded_steps[i]["phase"], s["phase"], "{name} step {i}");
            assert_eq!(embedded_steps[i]["file"].as_str(), Some(file.as_str()));
        }
    }
    // graph_only's 5 steps, trtllm_modules' 3 and vllm_v1_graphs' 5, on each of the two pages.
    assert_eq!(inferred, 2 * (5 + 3 + 5));
}

/// The mean over steps of one bucket's exclusive µs in a budget listing.
fn bucket_mean(rows: &[Value], bucket: &str) -> f64 {
    let v: Vec<f64> = rows
        .iter()
        .filter_map(|r| r["buckets"][bucket]["exclusive_us"].as_f64())
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn diff_of_two_ranks_is_the_arithmetic_on_their_listings() {
    let (a, b) = (budget_json(RANK0), budget_json(RANK1));
    let out = kineto()
        .arg("diff")
        .arg(testdata(RANK0))
        .arg(testdata(RANK1))
        .args(["--fail-above", "5"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // Each bucket's Δ % = (new − old) / old × 100 over the two listings' per-step means, to 2 decimals.
    let mut failing = 0;
    for bucket in ["gemm", "embedding", "comm", "elementwise"] {
        let (old, new) = (bucket_mean(&a, bucket), bucket_mean(&b, bucket));
        let pct = (new - old) / old * 100.0;
        let line = text
            .lines()
            .find(|l| l.contains(&format!(" {bucket} ")))
            .unwrap_or_else(|| panic!("no row for {bucket} in\n{text}"));
        assert!(
            line.contains(&format!("{pct:+.2}")),
            "{bucket}: {pct:+.2} not in {line}"
        );
        // One step a rank: no interval, so a slowdown of more than 5 % fails the gate (docs/verdict.md).
        if pct > 5.0 {
            failing += 1;
        }
    }
    assert!(
        failing > 0,
        "rank 1 is slower than rank 0 by more than 5 % somewhere: {text}"
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL"));
}

#[test]
fn a_trace_against_its_own_listing_does_not_move() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listing = dir.path().join("old.jsonl");
    let rows: Vec<String> = budget_json(DEMO).iter().map(Value::to_string).collect();
    std::fs::write(&listing, rows.join("\n") + "\n").expect("write");
    let page = dir.path().join("d.html");
    let out = kineto()
        .arg("diff")
        .arg(&listing)
        .arg(testdata(DEMO))
        .args(["--fail-above", "0.01", "--html"])
        .arg(&page)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("PASS"));
    for l in text.lines().filter(|l| l.starts_with("rank")).skip(1) {
        assert!(l.contains("+0.00"), "{l}");
    }
    assert!(
        std::fs::read_to_string(&page)
            .expect("page")
            .contains("kineto diff")
    );
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn report_with_a_model_embeds_the_rows_kineto_roofline_prints() {
    let vllm = testdata("serving/vllm_decode_full/graph_execution.json.gz");
    let model = common::testdata("models/gpt-oss-20b.json");
    let out = kineto()
        .args(["roofline", "--json", "--model"])
        .arg(&model)
        .arg(&vllm)
        .output()
        .expect("run kineto roofline");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    assert_eq!(want.len(), 1, "the trace has one decode step");

    let dir = tempfile::tempdir().expect("tempdir");
    let page_path = dir.path().join("r.html");
    let out = kineto()
        .args(["report", "--html"])
        .arg(&page_path)
        .arg("--model")
        .arg(&model)
        .arg(&vllm)
        .output()
        .expect("run kineto report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&page_path).expect("the page");
    assert_eq!(embedded_json(&page)["roofline"], Value::Array(want));
    // The budget bars and the roofline chart.
    assert_eq!(page.matches("<svg").count(), 2);

    // The roofline reads the trace the budget reads: a trace cut short (its last 40 bytes, after the last
    // kernel) is salvaged for both, not refused by a second, unsalvaged read.
    let mut text = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&vllm).expect("open")),
        &mut text,
    )
    .expect("gunzip");
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() - 40]).expect("write");
    let out = kineto()
        .args(["report", "--overwrite", "--salvage", "--html"])
        .arg(&page_path)
        .arg("--model")
        .arg(&model)
        .arg(&cut)
        .output()
        .expect("run kineto report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&page_path).expect("the page");
    assert_eq!(
        embedded_json(&page)["roofline"].as_array().map(Vec::len),
        Some(1)
    );

    // Model options without a model are refused, not ignored.
    let out = kineto()
        .args(["report", "--overwrite", "--tp", "2", "--html"])
        .arg(&page_path)
        .arg(&vllm)
        .output()
        .expect("run kineto report");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --model CONFIG.json"));
}

/// `kineto report` over two ranks reads each trace once and hands the doctor those readings: its findings
/// are `kineto doctor --json`'s on the same traces (the straggler among them, which needs both ranks), and
/// the timeline's marks are the findings' time in the drawn step — for a finding found only in that step,
/// Σ of its marks is its time at stake; a step-level finding (straggler) marks the step's window.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn report_marks_the_doctors_findings_on_the_timeline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page_path = dir.path().join("r.html");
    let ranks = testdata("param/dlrm_kineto");
    succeeds(
        kineto()
            .args(["report", "--html"])
            .arg(&page_path)
            .arg(&ranks),
    );
    let e = embedded_json(&std::fs::read_to_string(&page_path).expect("written"));
    let rows = json_listing(&["doctor", "--json"], &ranks);
    assert_eq!(e["findings"], Value::Array(rows.clone()));
    let findings: Vec<&Value> = rows.iter().filter(|r| r["kind"] == "finding").collect();
    assert!(
        findings.iter().any(|f| f["finding"] == "straggler"),
        "{findings:?}"
    );
    let marks = e["marks"].as_array().expect("marks");
    let timelines = e["timeline"].as_array().expect("timelines");
    let mut checked = 0;
    for f in &findings {
        let file = f["file"].as_str().expect("file");
        let id = f["finding"].as_str().expect("finding");
        let tl = timelines
            .iter()
            .find(|t| t["file"] == file)
            .expect("a timeline per trace");
        let step = tl["step"].as_u64().expect("step");
        let of: Vec<&Value> = marks
            .iter()
            .filter(|m| m["file"] == file && m["finding"] == id)
            .collect();
        // `step_list` is runs: `0-3,5`.
        let steps: Vec<u64> = f["step_list"]
            .as_str()
            .expect("step_list")
            .split(',')
            .flat_map(|run| {
                let (a, b) = run.split_once('-').unwrap_or((run, run));
                let n = |x: &str| x.parse::<u64>().expect("a step index");
                n(a)..=n(b)
            })
            .collect();
        assert_eq!(steps.len() as u64, f["steps"].as_u64().expect("steps"));
        if !steps.contains(&step) {
            assert!(of.is_empty(), "{id} {file}: marks off its steps");
            continue;
        }
        let dur = |m: &Value| m["hi_ns"].as_i64().expect("hi") - m["lo_ns"].as_i64().expect("lo");
        if id == "straggler" {
            let window = (tl["window_lo_ns"].as_i64(), tl["window_hi_ns"].as_i64());
            assert_eq!(of.len(), 1, "{of:?}");
            assert_eq!((of[0]["lo_ns"].as_i64(), of[0]["hi_ns"].as_i64()), window);
        } else if steps == [step] {
            let sum: i64 = of.iter().map(|m| dur(m)).sum();
            assert_eq!(
                sum,
                f["time_at_stake_ns"].as_i64().expect("ns"),
                "{id} {file}"
            );
        }
        // Each mark says its finding and its own duration.
        for m in &of {
            let label = m["label"].as_str().expect("label");
            assert!(
                label.starts_with(&format!("{id} ")) && label.ends_with(" µs"),
                "{label}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 5, "{checked} findings checked");
}

/// A trace of one step of `n` kernels on one stream, kernel `i` lasting 1 + (i mod 10) µs, each launched
/// from the step's thread (correlation ids from 1: 0 is none): a step too long for a page to hold every op.
fn many_kernels(dir: &std::path::Path, n: usize) -> PathBuf {
    let mut events = vec![format!(
        r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": {}}}"#,
        1000 + 12 * n
    )];
    for i in 0..n {
        let ts = 1000 + 12 * i;
        events.push(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 1, "args": {{"correlation": {}}}}}"#,
            ts - 5,
            i + 1
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>)", "pid": 0, "tid": 7, "ts": {ts}, "dur": {}, "args": {{"device": 0, "stream": 7, "correlation": {}}}}}"#,
            1 + i % 10,
            i + 1
        ));
    }
    let path = dir.join(format!("many{n}.json"));
    std::fs::write(
        &path,
        format!("{{\"traceEvents\": [{}]}}", events.join(",\n")),
    )
    .expect("write");
    path
}

/// The page of a step of many ops holds at most `OPS_CAP` (20 000) of them, the longest, and says so: a
/// step of 30 000 and one of 60 000 make pages of about the same size (before: twice), and the cut is
/// stated as computed by hand.
#[test]
fn a_step_of_many_ops_makes_a_bounded_page_that_says_what_was_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page_of = |n: usize| {
        let page = dir.path().join(format!("p{n}.html"));
        succeeds(
            kineto()
                .args(["report", "--html"])
                .arg(&page)
                .arg(many_kernels(dir.path(), n)),
        );
        std::fs::read_to_string(&page).expect("written")
    };
    let (small, big) = (page_of(30_000), page_of(60_000));
    assert!(
        (big.len() as f64) < 1.1 * small.len() as f64,
        "{} vs {} bytes",
        big.len(),
        small.len()
    );
    let e = embedded_json(&small);
    let t = &e["timeline"][0];
    assert_eq!(t["ops"].as_array().expect("ops").len(), 20_000);
    // Each of the 10 durations 3000 times: 10..5 µs (18 000 ops) and 2000 of the 4 µs ones are kept; left off
    // are 1000 ops of 4 µs and 3000 each of 3, 2 and 1 µs: 10 000 ops, 4000 + 3000 × 6 = 22 000 µs.
    assert_eq!(
        t["ops_cut"],
        serde_json::json!({"count": 10_000, "longest_ns": 4000, "total_ns": 22_000_000})
    );
    assert!(
        t["ops"]
            .as_array()
            .expect("ops")
            .iter()
            .all(|o| o["dur_ns"].as_i64() >= Some(4000)),
        "the longest are kept"
    );
    assert!(
        small.contains(
            "Only the 20000 longest of the step&#39;s 30000 ops are drawn (a page holds at most 20000): \
             the 10000 left off last at most 4 µs each, 22000 µs in all"
        ),
        "the page says what was cut (its text HTML-escaped)"
    );
    assert!(big.contains("Only the 20000 longest of the step&#39;s 60000 ops are drawn"));
    // The 29 999 idle gaps between the ops likewise (the widest 20 000 held, the rest counted), and the
    // findings' marks: the widest 4000 of the trace held (as many as a timeline draws), the rest counted.
    assert_eq!(t["idle_gaps_ns"].as_array().expect("gaps").len(), 20_000);
    assert_eq!(t["idle_gaps_cut"]["count"], 9_999);
    let marks = e["marks"].as_array().expect("marks").len();
    assert!(marks <= 4000, "{marks}");
    assert!(
        e["marks_left_off"].as_u64() > Some(0),
        "{}",
        e["marks_left_off"]
    );
}
