//! `provenance diff` of two pytest-benchmark result files: a verdict row per benchmark, from the saved
//! per-round data or the stated stats, comparable or not from the embedded records. The files are written
//! here in pytest-benchmark's shape (`--benchmark-json --benchmark-save-data`); the Python suite
//! (python/provenance/tests/test_pytest_benchmark.py) runs the same command on a real pytest-benchmark run.

#![allow(clippy::expect_used)]

use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

mod common;
use common::provenance_bin;

/// `provenance ARGS`, as printed.
fn provenance(args: &[&str]) -> Output {
    provenance_bin()
        .args(args)
        .output()
        .expect("run provenance")
}

fn record(flags: Value) -> Value {
    json!({"time_utc": "2026-12-06T00:00:00Z", "git": {"commit": "abc", "dirty": false},
           "gpus": [{"index": 0, "name": "NVIDIA H100", "driver_version": "550.54"}],
           "verdict": {"clean": false, "flags": flags}})
}

/// A result file: benchmark `fast` with per-round times `scale` × the rounds below (s), saved; benchmark
/// `slow` with stated stats only; each with `rec` as its record.
fn result(path: &Path, scale: f64, rec: &Value) {
    let rounds = [1.00e-3, 1.01e-3, 0.99e-3, 1.00e-3, 1.02e-3, 0.98e-3];
    let data: Vec<f64> = rounds.iter().map(|x| x * scale).collect();
    let mean = data.iter().sum::<f64>() / data.len() as f64;
    let doc = json!({
    "machine_info": {"node": "h"}, "commit_info": {"id": "abc"}, "version": "5.1.0",
    "datetime": "2026-12-06T00:00:00", "benchmarks": [
        {"group": null, "name": "test_fast", "fullname": "t.py::test_fast",
         "stats": {"min": 0.98e-3 * scale, "max": 1.02e-3 * scale, "mean": mean,
                   "stddev": 0.0141421356e-3 * scale, "rounds": 6, "data": data},
         "provenance": rec},
        {"group": "big", "name": "test_slow", "fullname": "t.py::test_slow",
         "stats": {"mean": 0.5, "stddev": 0.005, "rounds": 10}, "provenance": rec},
    ]});
    std::fs::write(path, doc.to_string()).expect("write");
}

fn rows(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON row"))
        .collect()
}

/// The rows of `provenance diff --json a b`, which must exit 0 (no gate).
fn judged(a: &str, b: &str) -> Vec<Value> {
    let out = provenance(&["diff", "--json", a, b]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rows(&out)
}

#[test]
fn each_benchmark_gets_a_verdict_from_its_rounds_or_its_stated_stats() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    let clean = record(json!([]));
    result(&a, 1.0, &clean);
    result(&b, 1.1, &clean);
    let (sa, sb) = (a.to_str().expect("utf-8"), b.to_str().expect("utf-8"));
    let r = judged(sa, sb);
    // fast: every round ×1.1, so Δ = +10 % exactly; 6 rounds of ±2 % noise: far from 0, slower.
    assert_eq!(
        (&r[0]["metric"], &r[0]["name"]),
        (&"benchmark".into(), &"t.py::test_fast".into())
    );
    assert_eq!(r[0]["verdict"], "slower");
    assert!((r[0]["delta_pct"].as_f64().expect("Δ") - 10.0).abs() < 1e-9);
    assert_eq!(
        (r[0]["n_old"].as_u64(), r[0]["comparable"].as_bool()),
        (Some(6), Some(true))
    );
    // slow: stated stats the same on both sides (mean 0.5 s, sd 1 %, 10 rounds): unchanged, and it says
    // where its numbers came from.
    assert_eq!(
        (&r[1]["verdict"], &r[1]["phase"]),
        (&"unchanged".into(), &"big".into())
    );
    assert!(
        r[1]["reasons"]
            .to_string()
            .contains("stated rounds, mean and stddev"),
        "{}",
        r[1]
    );
    // The gate: +10 % fails at 9.9, passes at 10.1 (×1.1 in floating point is not exactly +10 %).
    let gated = provenance(&["diff", sa, sb, "--fail-above", "9.9"]);
    let t = String::from_utf8_lossy(&gated.stdout);
    assert_eq!(gated.status.code(), Some(1), "{t}");
    assert!(t.contains("FAIL") && t.contains("t.py::test_fast"), "{t}");
    assert_eq!(
        provenance(&["diff", sa, sb, "--fail-above", "10.1"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn a_throttled_run_makes_its_benchmarks_not_comparable() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    result(&a, 1.0, &record(json!([])));
    let hot = record(json!([{"flag": "throttled", "evidence": "GPU 0: sw_thermal_slowdown seen"}]));
    result(&b, 1.0, &hot);
    let (sa, sb) = (a.to_str().expect("utf-8"), b.to_str().expect("utf-8"));
    let out = provenance(&["diff", "--json", sa, sb]);
    let r = rows(&out);
    assert!(r.iter().take(2).all(|x| x["comparable"] == false), "{r:?}");
    assert!(
        r[0]["reasons"]
            .to_string()
            .contains("NEW run flagged throttled"),
        "{}",
        r[0]
    );
    let gated = provenance(&["diff", sa, sb, "--fail-above", "50"]);
    assert_eq!(
        gated.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&gated.stdout)
    );
    let allowed = provenance(&["diff", sa, sb, "--fail-above", "50", "--allow-incomparable"]);
    assert_eq!(
        allowed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&allowed.stdout)
    );
    // A result file against a record: refused, naming both.
    let rec = tmp.path().join("rec.json");
    std::fs::write(&rec, record(json!([])).to_string()).expect("write");
    let mixed = provenance(&["diff", sa, rec.to_str().expect("utf-8")]);
    assert_eq!(mixed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("pytest-benchmark result"));
}

/// The gate's row (the last) of `provenance diff --json` with `args` after it, which must exit `code`; and
/// the last line of the same diff's text output.
fn gate_row_and_line(args: &[&str], code: i32) -> (Value, String) {
    let out = provenance(&[&["diff", "--json"][..], args].concat());
    let t = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(code), "{t}");
    let row = rows(&out).pop().expect("a gate row");
    let text = provenance(&[&["diff"][..], args].concat());
    assert_eq!(text.status.code(), Some(code));
    let last = String::from_utf8_lossy(&text.stdout)
        .lines()
        .last()
        .expect("a line")
        .to_owned();
    (row, last)
}

/// The gate's JSON row says why it fails: `reasons`, each as the text's `FAIL:` line gives it (joined by
/// `. `), in the gate's order (the slow rows, then comparability); a pass carries `reasons: []`.
#[test]
fn the_gate_row_carries_every_reason_the_text_gives() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b, hot) = (
        tmp.path().join("a.json"),
        tmp.path().join("b.json"),
        tmp.path().join("hot.json"),
    );
    let evidence = "GPU 0: sw_thermal_slowdown seen";
    result(&a, 1.0, &record(json!([])));
    result(&b, 1.1, &record(json!([])));
    result(
        &hot,
        1.0,
        &record(json!([{"flag": "throttled", "evidence": evidence}])),
    );
    let (sa, sb, sh) = (
        a.to_str().expect("utf-8"),
        b.to_str().expect("utf-8"),
        hot.to_str().expect("utf-8"),
    );
    // test_fast's rounds ×1.1: +10 %, significant, above 9.9; it is named by its place (`all`), phase (no
    // group: `unphased`), metric and fullname. test_slow's stated stats are the same: unchanged.
    let slower = "1 row(s) slower by more than 9.9 % (significant, or with no interval): \
                  all unphased benchmark t.py::test_fast";
    let (row, text) = gate_row_and_line(&[sa, sb, "--fail-above", "9.9"], 1);
    let line = format!("FAIL: {slower}");
    assert_eq!(
        row,
        json!({"kind": "gate", "passed": false, "line": line, "reasons": [slower]})
    );
    assert_eq!(text, line);
    // The same +10 % from a throttled OLD run: two reasons. Not comparable names each benchmark with its
    // row's reasons: test_slow's note on where its numbers came from, then the record's flag.
    let flag = format!("OLD run flagged throttled: {evidence}");
    let stated = "from the stated rounds, mean and stddev (no per-round data saved: pytest-benchmark \
                  keeps it when told to save its data)";
    let incomparable = format!(
        "the runs are not comparable: t.py::test_fast: {flag}; t.py::test_slow: {stated}; {flag} \
         (unless that is allowed)"
    );
    let (row, text) = gate_row_and_line(&[sh, sb, "--fail-above", "9.9"], 1);
    let line = format!("FAIL: {slower}. {incomparable}");
    assert_eq!(
        row,
        json!({"kind": "gate", "passed": false, "line": line, "reasons": [slower, incomparable]})
    );
    assert_eq!(text, line);
    // A pass: no reason, an empty list.
    let (row, text) = gate_row_and_line(&[sa, sb, "--fail-above", "10.1"], 0);
    let line = "PASS: 2 step time(s) compared, no row significantly slower by more than 10.1 %";
    assert_eq!(
        row,
        json!({"kind": "gate", "passed": true, "line": line, "reasons": []})
    );
    assert_eq!(text, line);
}

/// The files of two real runs of the criterion_bench example (tests/data/criterion-two-runs: each
/// benchmark's new/benchmark.json and new/sample.json as criterion 0.8 wrote them, and the provenance.json
/// `provenance::bench::record_benchmark` wrote beside them), on a loaded two-core machine, in a debug build.
fn criterion_runs() -> (String, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/criterion-two-runs");
    let s = |p: &str| dir.join(p).to_str().expect("utf-8").to_owned();
    (s("old"), s("new"))
}

/// Issue 44: a harness's results beside its records. Each criterion benchmark gets the verdict row its
/// per-sample times per iteration give; the numbers are criterion_expected.py's, worked out without the tool.
/// Both runs' records say the host was loaded past its cores and the build was a debug one: not comparable.
#[test]
fn two_real_criterion_runs_are_judged_per_benchmark_from_their_samples() {
    let (old, new) = criterion_runs();
    let got = judged(&old, &new);
    let expected: Vec<Value> = serde_json::from_str(include_str!("data/criterion_expected.json"))
        .expect("criterion_expected.json");
    assert_eq!(got.len(), expected.len(), "{got:?}");
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(
            (&g["kind"], &g["metric"], &g["name"], &g["phase"]),
            (
                &json!("verdict"),
                &json!("benchmark"),
                &e["name"],
                &json!("unphased")
            ),
            "{g}"
        );
        assert_eq!(
            (&g["verdict"], &g["n_old"], &g["n_new"]),
            (&e["verdict"], &e["n_old"], &e["n_new"])
        );
        for k in ["delta_pct", "ci_low_pct", "ci_high_pct"] {
            let (gv, ev) = (g[k].as_f64().expect(k), e[k].as_f64().expect(k));
            assert!(
                (gv - ev).abs() < 1e-6 * ev.abs().max(1.0),
                "{k}: {gv} against {ev}"
            );
        }
        assert_eq!(g["comparable"], false, "{g}");
        let reasons = g["reasons"].to_string();
        for flag in [
            "OLD run flagged host_load_above_cores",
            "NEW run flagged debug_build",
        ] {
            assert!(reasons.contains(flag), "{flag}: {reasons}");
        }
    }
    // The gate fails runs judged not comparable, unless allowed; both rows are inconclusive with an
    // interval, which no threshold fails.
    let gated = provenance(&["diff", &old, &new, "--fail-above", "5"]);
    let t = String::from_utf8_lossy(&gated.stdout);
    assert_eq!(gated.status.code(), Some(1), "{t}");
    assert!(
        t.contains("not comparable") && t.contains("(NOT COMPARABLE)"),
        "{t}"
    );
    // Inconclusive: the text says about how many more rounds would decide.
    assert!(t.contains("more round(s) a side would decide"), "{t}");
    let allowed = provenance(&[
        "diff",
        &old,
        &new,
        "--fail-above",
        "5",
        "--allow-incomparable",
    ]);
    assert_eq!(
        allowed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&allowed.stdout)
    );
}

/// One criterion benchmark's directory under `home`: `new/benchmark.json` naming it (in `group` when
/// given), `new/sample.json` with sample i running 10 · (i + 1) iterations of `per_iter[i]` ns each, and
/// `record` as its provenance.json when given.
fn criterion_bench(
    home: &Path,
    group: Option<&str>,
    name: &str,
    per_iter: &[f64],
    record: Option<&Value>,
) {
    let (dir, id) = match group {
        Some(g) => (
            home.join(g).join(name),
            json!({"group_id": g, "function_id": name,
            "value_str": null, "full_id": format!("{g}/{name}"), "directory_name": format!("{g}/{name}")}),
        ),
        None => (
            home.join(name),
            json!({"group_id": name, "function_id": null, "value_str": null,
            "full_id": name, "directory_name": name}),
        ),
    };
    std::fs::create_dir_all(dir.join("new")).expect("dir");
    let iters: Vec<f64> = (1..=per_iter.len()).map(|i| 10.0 * i as f64).collect();
    let times: Vec<f64> = iters.iter().zip(per_iter).map(|(n, t)| n * t).collect();
    let sample = json!({"sampling_mode": "Linear", "iters": iters, "times": times});
    std::fs::write(dir.join("new/benchmark.json"), id.to_string()).expect("write");
    std::fs::write(dir.join("new/sample.json"), sample.to_string()).expect("write");
    if let Some(r) = record {
        std::fs::write(dir.join("provenance.json"), r.to_string()).expect("write");
    }
}

/// Issue 44: criterion results whose answer is known. `g/scaled` takes 1.2 × the old time per iteration in
/// every sample: Δ = +20 % exactly, significant (`slower`), the interval holding 20; `steady` takes the
/// same times: Δ = 0, its interval inside ±2 % (`unchanged`: spread ≈ 1 %, 10 samples a side), but its new
/// run was throttled: not comparable; `scaled`'s new run has no record: compared, with a note; `extra` is in
/// the new run only.
#[test]
fn criterion_results_with_a_known_factor_get_the_known_verdicts() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    let base = [
        100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 102.0, 98.0, 100.0, 100.0,
    ];
    let scaled: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
    let clean = record(json!([]));
    let hot = record(json!([{"flag": "throttled", "evidence": "GPU 0: hw_thermal_slowdown seen"}]));
    criterion_bench(&old, Some("g"), "scaled", &base, Some(&clean));
    criterion_bench(&old, None, "steady", &base, Some(&clean));
    criterion_bench(&new, Some("g"), "scaled", &scaled, None);
    criterion_bench(&new, None, "steady", &base, Some(&hot));
    criterion_bench(&new, None, "extra", &base, Some(&clean));
    let (o, n) = (old.to_str().expect("utf-8"), new.to_str().expect("utf-8"));
    let got = judged(o, n);
    let row = |name: &str| got.iter().find(|r| r["name"] == name).expect(name).clone();
    let s = row("g/scaled");
    assert_eq!(
        (&s["verdict"], &s["phase"], &s["n_old"]),
        (&json!("slower"), &json!("g"), &json!(10))
    );
    assert!(
        (s["delta_pct"].as_f64().expect("Δ") - 20.0).abs() < 1e-9,
        "{s}"
    );
    let (lo, hi) = (
        s["ci_low_pct"].as_f64().expect("lo"),
        s["ci_high_pct"].as_f64().expect("hi"),
    );
    assert!(lo > 0.0 && lo < 20.0 && hi > 20.0, "{s}");
    assert_eq!(s["comparable"], true);
    assert!(
        s["reasons"]
            .to_string()
            .contains("no provenance record for NEW"),
        "{s}"
    );
    let st = row("steady");
    assert_eq!(
        (&st["verdict"], &st["phase"]),
        (&json!("unchanged"), &json!("unphased"))
    );
    assert!(st["delta_pct"].as_f64().expect("Δ").abs() < 1e-9, "{st}");
    assert_eq!(st["comparable"], false);
    assert!(
        st["reasons"]
            .to_string()
            .contains("NEW run flagged throttled"),
        "{st}"
    );
    assert!(
        got.iter()
            .any(|r| r["kind"] == "only_in_new" && r["what"] == "extra"),
        "{got:?}"
    );
    // The gate: the +20 % fails a 5 % threshold; with 25 %, the throttled run and `extra` still fail it
    // until both are allowed.
    let gate = |extra: &[&str]| {
        let out = provenance(&[&["diff", o, n, "--fail-above"][..], extra].concat());
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, t) = gate(&["5", "--allow-missing", "--allow-incomparable"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("g/scaled"), "{t}");
    let (code, t) = gate(&["25", "--allow-missing"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("not comparable"), "{t}");
    let (code, t) = gate(&["25", "--allow-incomparable"]);
    assert_eq!(code, Some(1), "{t}");
    // … and its gate row says so: `extra`, the one benchmark in the new run only.
    let (row, text) = gate_row_and_line(&[o, n, "--fail-above", "25", "--allow-incomparable"], 1);
    let missing = "1 only in NEW (the old run lacks it): extra";
    assert_eq!(row["reasons"], json!([missing]), "{row}");
    assert_eq!(text, format!("FAIL: {missing}"));
    let (code, t) = gate(&["25", "--allow-missing", "--allow-incomparable"]);
    assert_eq!(code, Some(0), "{t}");
}

/// A criterion result that cannot be read is named with its directory and field; a directory holding only
/// records (divan keeps no result files) says so; a directory against a file is refused.
#[test]
fn unreadable_or_absent_criterion_results_are_named() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    criterion_bench(&old, None, "b", &[1.0, 2.0, 3.0], None);
    criterion_bench(&new, None, "b", &[1.0, 2.0, 3.0], None);
    let sample = new.join("b/new/sample.json");
    std::fs::write(&sample, r#"{"iters": [10, 0, 30], "times": [10, 20, 30]}"#).expect("write");
    let (o, n) = (old.to_str().expect("utf-8"), new.to_str().expect("utf-8"));
    let out = provenance(&["diff", o, n]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!(
            "{n}/b: new/sample.json: iters[1]: 0 is not a count"
        )),
        "{e}"
    );
    let divan = tmp.path().join("divan");
    std::fs::create_dir_all(divan.join("sum_1000")).expect("dir");
    std::fs::write(
        divan.join("sum_1000/provenance.json"),
        record(json!([])).to_string(),
    )
    .expect("write");
    let out = provenance(&["diff", o, divan.to_str().expect("utf-8")]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("no criterion results") && e.contains("divan keeps no result files"),
        "{e}"
    );
    let out = provenance(&["diff", o, sample.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a directory"));
}
