//! `provenance diff` of two pytest-benchmark result files: a verdict row per benchmark, from the saved
//! per-round data or the stated stats, comparable or not from the embedded records. The files are written
//! here in pytest-benchmark's shape (`--benchmark-json --benchmark-save-data`); the Python suite
//! (python/provenance/tests/test_pytest_benchmark.py) runs the same command on a real pytest-benchmark run.

#![allow(clippy::expect_used)]

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};

fn provenance(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_provenance"))
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

#[test]
fn each_benchmark_gets_a_verdict_from_its_rounds_or_its_stated_stats() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    let clean = record(json!([]));
    result(&a, 1.0, &clean);
    result(&b, 1.1, &clean);
    let (sa, sb) = (a.to_str().expect("utf-8"), b.to_str().expect("utf-8"));
    let out = provenance(&["diff", "--json", sa, sb]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = rows(&out);
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
