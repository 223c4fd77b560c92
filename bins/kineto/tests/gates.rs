//! `kineto diff --fail-above` as a CI gate, and the one rule for ranks put side by side: a side that
//! lost a rank or shares nothing fails the gate; a threshold must be a finite percentage ≥ 0; two traces
//! of one rank are refused by every command; traces without a rank are kept apart by file; a listing is
//! told from a trace by its content, from a file or a pipe. Every trace is written here, each step's
//! gemm time chosen so the expected Δ % is the arithmetic in the test.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

mod common;
use common::{kineto, output, text};

/// A trace with one `ProfilerStep#k` per entry of `gemm_us`, each launching one cuBLAS GEMM of that many
/// µs (bucket `gemm`); `rank` and `world_size` go into `distributedInfo` when given.
fn trace(
    dir: &Path,
    name: &str,
    rank: Option<u64>,
    world: Option<u64>,
    gemm_us: &[u64],
) -> PathBuf {
    let mut events = Vec::new();
    for (k, us) in gemm_us.iter().enumerate() {
        let (step, kernel) = (1_000 * k as u64, 100_000 + 1_000 * k as u64);
        events.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": {step}, "dur": 500}}"#
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {}}}}}"#,
            step + 10,
            k + 1
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": {kernel}, "dur": {us}, "args": {{"device": 0, "stream": 7, "correlation": {}}}}}"#,
            k + 1
        ));
    }
    let mut info = Vec::new();
    if let Some(r) = rank {
        info.push(format!(r#""rank": {r}"#));
    }
    if let Some(w) = world {
        info.push(format!(r#""world_size": {w}"#));
    }
    let header = if info.is_empty() {
        String::new()
    } else {
        format!(r#""distributedInfo": {{{}}}, "#, info.join(", "))
    };
    let path = dir.join(name);
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(
        &path,
        format!(
            r#"{{"schemaVersion": 1, {header}"traceEvents": [{}]}}"#,
            events.join(",\n")
        ),
    )
    .expect("write trace");
    path
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Two ranks in OLD, one in NEW (the same gemm times): NEW lost rank 1, and the gate fails unless
/// missing ranks are allowed; the lost rank is named either way.
#[test]
fn a_rank_lost_in_new_fails_the_gate() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    trace(&old, "r0.json", Some(0), Some(2), &[100, 102]);
    trace(&old, "r1.json", Some(1), Some(2), &[100, 102]);
    trace(&new, "r0.json", Some(0), Some(2), &[100, 102]);
    let out = output(&["diff", s(&old), s(&new), "--fail-above", "5"]);
    let t = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{t}{}", text(&out.stderr));
    assert!(t.contains("only in OLD: rank 1"), "{t}");
    assert!(t.contains("FAIL") && t.contains("only in OLD"), "{t}");
    let allowed = output(&[
        "diff",
        s(&old),
        s(&new),
        "--fail-above",
        "5",
        "--allow-missing",
    ]);
    let t = text(&allowed.stdout);
    assert_eq!(allowed.status.code(), Some(0), "{t}");
    assert!(
        t.contains("PASS") && t.contains("only in OLD: rank 1"),
        "{t}"
    );
    // A rank NEW gained is a missing side too.
    let gained = output(&["diff", s(&new), s(&old), "--fail-above", "5"]);
    assert_eq!(gained.status.code(), Some(1), "{}", text(&gained.stdout));
}

/// Ranks 0 and 1 against ranks 2 and 3: nothing in common, nothing judged, so the gate cannot pass,
/// even with missing ranks allowed.
#[test]
fn a_diff_that_shares_nothing_fails_the_gate() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    trace(&old, "a.json", Some(0), Some(4), &[100]);
    trace(&old, "b.json", Some(1), Some(4), &[100]);
    trace(&new, "c.json", Some(2), Some(4), &[100]);
    trace(&new, "d.json", Some(3), Some(4), &[100]);
    for extra in [&[][..], &["--allow-missing"][..]] {
        let mut args = vec!["diff", s(&old), s(&new), "--fail-above", "5"];
        args.extend_from_slice(extra);
        let out = output(&args);
        let t = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {t}");
        assert!(t.contains("FAIL") && t.contains("nothing in common"), "{t}");
    }
}

/// `--fail-above` is a percentage: NaN, infinities and negative numbers are refused as usage errors.
#[test]
fn a_threshold_must_be_a_finite_percentage() {
    let tmp = tempfile::tempdir().expect("tmp");
    let a = trace(tmp.path(), "a.json", Some(0), None, &[100]);
    for bad in ["NaN", "nan", "inf", "-inf", "1e400", "-1", "-0.5"] {
        let out = output(&["diff", s(&a), s(&a), &format!("--fail-above={bad}")]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {e}");
        assert!(e.contains("finite") && e.contains('0'), "{bad}: {e}");
    }
    let ok = output(&["diff", s(&a), s(&a), "--fail-above", "0"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stdout));
}

/// Two traces claiming rank 0 are refused by `kineto ranks` and by `kineto diff` (traces or listings),
/// naming both files: never pooled into one row, never counted as two ranks.
#[test]
fn two_traces_of_one_rank_are_refused_naming_both() {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = tmp.path().join("run");
    trace(&run, "a.json", Some(0), Some(2), &[100]);
    trace(&run, "b.json", Some(0), Some(2), &[180]);
    let named = |e: &str| e.contains("a.json") && e.contains("b.json") && e.contains("rank 0");
    let out = output(&["ranks", s(&run)]);
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}{e}", text(&out.stdout));
    assert!(named(&e), "{e}");
    assert!(
        !text(&out.stdout).contains("2 ranks"),
        "{}",
        text(&out.stdout)
    );
    let other = tmp.path().join("other");
    trace(&other, "c.json", Some(0), Some(2), &[100]);
    for (old, new) in [(&run, &other), (&other, &run)] {
        let out = output(&["diff", s(old), s(new), "--fail-above", "5"]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}{e}", text(&out.stdout));
        assert!(named(&e), "{e}");
    }
    // The same from a listing: the rows of two files that both say rank 0.
    let mut rows = String::new();
    for f in ["a.json", "b.json"] {
        let b = output(&["budget", "--json", s(&run.join(f))]);
        assert!(b.status.success());
        rows.push_str(&text(&b.stdout));
    }
    let listing = tmp.path().join("old.jsonl");
    std::fs::write(&listing, rows).expect("write");
    let out = output(&["diff", s(&listing), s(&other)]);
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}{e}", text(&out.stdout));
    assert!(named(&e), "{e}");
}

/// Traces without a rank are kept apart by their file: `a.json` goes 100 → 180 µs (+80 %), `b.json`
/// 100 → 56 µs (−44 %); pooled, they would read (236 − 200) / 200 = +18 %, or 0 % averaged the other
/// way. Each is its own row, paired by file name across the two runs.
#[test]
fn traces_without_a_rank_are_kept_apart_by_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    trace(&old, "a.json", None, None, &[100]);
    trace(&old, "b.json", None, None, &[100]);
    trace(&new, "a.json", None, None, &[180]);
    trace(&new, "b.json", None, None, &[56]);
    let out = output(&["diff", s(&old), s(&new)]);
    let t = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{t}{}", text(&out.stderr));
    let gemm: Vec<&str> = t.lines().filter(|l| l.contains(" gemm ")).collect();
    assert_eq!(gemm.len(), 2, "{t}");
    assert!(
        gemm.iter()
            .any(|l| l.contains("a.json") && l.contains("+80.00")),
        "{t}"
    );
    assert!(
        gemm.iter()
            .any(|l| l.contains("b.json") && l.contains("-44.00")),
        "{t}"
    );
    // `kineto ranks` lists them as two ranks named by file.
    let r = output(&["ranks", s(&old)]);
    let t = text(&r.stdout);
    assert!(r.status.success() && t.contains("2 ranks"), "{t}");
}

/// A rank at or past its world size, and world sizes that differ, are warned about (the traces may
/// come from different runs); nothing is refused for it.
#[test]
fn ranks_of_different_runs_are_warned_about() {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = tmp.path().join("run");
    trace(&run, "a.json", Some(0), Some(2), &[100]);
    trace(&run, "b.json", Some(5), Some(8), &[100]);
    let out = output(&["ranks", s(&run)]);
    let e = text(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(e.contains("different world sizes"), "{e}");
    let out = output(&["diff", s(&run), s(&run)]);
    let e = text(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(e.contains("different world sizes"), "{e}");
    let lone = tmp.path().join("lone");
    trace(&lone, "c.json", Some(3), Some(2), &[100]);
    let out = output(&["ranks", s(&lone)]);
    let e = text(&out.stderr);
    assert!(e.contains("rank 3 is not below its world size 2"), "{e}");
}

/// `kineto diff OLD <(kineto budget --json T)`: the listing arrives through a pipe, without a name
/// that says JSON, and is told from a trace by its content.
#[test]
fn a_listing_from_a_pipe_is_read_as_a_listing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let t = trace(tmp.path(), "a.json", Some(0), Some(1), &[100, 104]);
    let listing = output(&["budget", "--json", s(&t)]);
    assert!(listing.status.success());
    for side in [["/dev/stdin", s(&t)], [s(&t), "/dev/stdin"]] {
        let mut child = kineto()
            .args(["diff", side[0], side[1], "--fail-above", "0.01"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(&listing.stdout)
            .expect("feed");
        let out = child.wait_with_output().expect("wait");
        let t = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{t}{}", text(&out.stderr));
        assert!(t.contains("PASS"), "{t}");
        assert!(
            t.lines()
                .any(|l| l.contains(" gemm ") && l.contains("+0.00")),
            "{t}"
        );
    }
}

/// Issue 42: a gate that compared only span and idle passed though every bucket moved 100×, because the
/// bucket values were strings (or their field was renamed) and were skipped as "not in the step". A number
/// the gate reads that cannot be read is an error naming the side, the row and the field (exit 2).
#[test]
fn a_bucket_value_that_cannot_be_read_fails_instead_of_passing() {
    let tmp = tempfile::tempdir().expect("tmp");
    // Span and idle equal on both sides; gemm 100 → 10 000 µs (+9 900 %), but written so it cannot be read.
    let row = |gemm: &str| {
        format!(
            r#"{{"file": "a.json", "rank": 0, "name": "ProfilerStep#1", "span_us": 20000.0, "idle_us": 10.0, "buckets": {{"gemm": {gemm}}}}}"#
        )
    };
    let cases = [
        (
            r#"{"exclusive_us": "100"}"#,
            r#"{"exclusive_us": "10000"}"#,
            "buckets.gemm.exclusive_us",
        ),
        (
            r#"{"excl_us": 100.0}"#,
            r#"{"excl_us": 10000.0}"#,
            "buckets.gemm.exclusive_us",
        ),
    ];
    for (old_gemm, new_gemm, field) in cases {
        let (old, new) = (tmp.path().join("old.jsonl"), tmp.path().join("new.jsonl"));
        std::fs::write(&old, row(old_gemm)).expect("write");
        std::fs::write(&new, row(new_gemm)).expect("write");
        let out = output(&["diff", s(&old), s(&new), "--fail-above", "5"]);
        let e = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{old_gemm}: {}{e}",
            text(&out.stdout)
        );
        assert!(e.contains("old.jsonl") && e.contains(field), "{e}");
    }
    // A renamed `buckets`, or a span that is not a number, is named alike (`span_ns` tells the listing).
    for (row, field) in [
        (
            r#"{"rank": 0, "span_ns": 20000000, "span_us": 20000.0, "idle_us": 10.0, "bucket_times": {}}"#,
            "no `buckets`",
        ),
        (
            r#"{"rank": 0, "span_ns": 20000000, "span_us": "20000", "idle_us": 10.0, "buckets": {}}"#,
            "`span_us` is a string",
        ),
    ] {
        let old = tmp.path().join("old.jsonl");
        std::fs::write(&old, row).expect("write");
        let out = output(&["diff", s(&old), s(&old), "--fail-above", "5"]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}{e}", text(&out.stdout));
        assert!(e.contains("old.jsonl: row 1: ") && e.contains(field), "{e}");
    }
}

fn json_rows(out: &Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

/// Two runs of rank 0 under `dir` (`old`, `new`): steps of 100, 102, 98, 101, 99, 100 µs (mean 100) and of
/// 120, 122, 118, 121, 119, 120 µs (mean 120), Δ = +20 % exactly, with a spread of ±2 µs a side.
fn slowdown_runs(dir: &Path) -> (PathBuf, PathBuf) {
    let (old, new) = (dir.join("old"), dir.join("new"));
    trace(
        &old,
        "r0.json",
        Some(0),
        Some(1),
        &[100, 102, 98, 101, 99, 100],
    );
    trace(
        &new,
        "r0.json",
        Some(0),
        Some(1),
        &[120, 122, 118, 121, 119, 120],
    );
    (old, new)
}

/// Issue 44: the verdict rows open `--json`, step time first, and the gate fails a significant slowdown
/// above PCT only. Old steps 100, 102, 98, 101, 99, 100 µs (mean 100); new 120, 122, 118, 121, 119, 120
/// (mean 120): Δ = +20 % exactly, and with a spread of ±2 µs the interval is far from 0.
#[test]
fn the_verdict_rows_come_first_and_gate_the_slowdown() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = slowdown_runs(tmp.path());
    let out = output(&["diff", s(&old), s(&new), "--json", "--fail-above", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rows = json_rows(&out);
    let first = &rows[0];
    assert_eq!(
        (&first["kind"], &first["metric"], &first["phase"]),
        (&"verdict".into(), &"step_time".into(), &"unphased".into())
    );
    assert_eq!(first["verdict"], "slower");
    assert!((first["delta_pct"].as_f64().expect("Δ") - 20.0).abs() < 1e-9);
    let (lo, hi) = (
        first["ci_low_pct"].as_f64().expect("lo"),
        first["ci_high_pct"].as_f64().expect("hi"),
    );
    assert!(lo > 15.0 && lo < 20.0 && hi > 20.0 && hi < 25.0, "{first}");
    assert_eq!(
        (first["n_old"].as_u64(), first["n_new"].as_u64()),
        (Some(6), Some(6))
    );
    assert_eq!(first["comparable"], true);
    assert!(
        first["reasons"][0]
            .as_str()
            .expect("a note")
            .contains("no provenance record"),
        "{first}"
    );
    // Then buckets, then the kernel (volta_sgemm_128x64_nn, normalised), then the per-bucket rows, the gate.
    let kinds: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["kind"].as_str().unwrap_or(""),
                r["metric"].as_str().unwrap_or("")
            )
        })
        .collect();
    let at = |k: &str| kinds.iter().position(|x| x == k).unwrap_or(usize::MAX);
    assert!(at("verdict step_time") < at("verdict bucket"), "{kinds:?}");
    assert!(at("verdict bucket") < at("verdict kernel"), "{kinds:?}");
    assert!(at("verdict kernel") < at("bucket gemm"), "{kinds:?}");
    let kernel = rows
        .iter()
        .find(|r| r["metric"] == "kernel")
        .expect("kernel row");
    assert_eq!(kernel["name"], "volta_sgemm_#_nn");
    let gate = rows.last().expect("gate");
    assert_eq!(
        (&gate["kind"], &gate["passed"]),
        (&"gate".into(), &false.into())
    );
    // +20 % is not above 25: pass. Faster (new → old) never fails.
    let out = output(&["diff", s(&old), s(&new), "--fail-above", "25"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = output(&["diff", s(&new), s(&old), "--fail-above", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // The text table names each run once, in its header.
    let t = text(&out.stdout);
    assert!(t.starts_with(&format!("OLD: {}", s(&new))), "{t}");
    assert_eq!(t.matches(s(&new)).count(), 1, "{t}");
}

/// Issue 44: comparability from the runs' provenance records. A throttled run, or another driver, makes
/// the runs not comparable: every row says so and the gate fails, unless --allow-incomparable.
#[test]
fn runs_judged_not_comparable_from_their_records_fail_the_gate() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    let steps = [100, 102, 98, 101, 99, 100];
    trace(&old, "r0.json", Some(0), Some(1), &steps);
    trace(&new, "r0.json", Some(0), Some(1), &steps);
    let record = |driver: &str, flags: &str| {
        format!(
            r#"{{"time_utc": "2026-12-06T00:00:00Z", "git": {{"commit": "abc", "dirty": false}},
                "gpus": [{{"index": 0, "name": "NVIDIA H100", "driver_version": "{driver}"}}],
                "verdict": {{"clean": false, "flags": [{flags}]}}}}"#
        )
    };
    std::fs::write(old.join("provenance.json"), record("550.54", "")).expect("write");
    let throttled = r#"{"flag": "throttled", "evidence": "GPU 0: hw_thermal_slowdown seen"}"#;
    std::fs::write(new.join("provenance.json"), record("550.54", throttled)).expect("write");
    let out = output(&["diff", s(&old), s(&new), "--json", "--fail-above", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rows = json_rows(&out);
    assert_eq!(rows[0]["verdict"], "unchanged", "{}", rows[0]);
    assert_eq!(rows[0]["comparable"], false);
    assert!(
        rows[0]["reasons"]
            .to_string()
            .contains("NEW run flagged throttled"),
        "{}",
        rows[0]
    );
    let gate = rows.last().expect("gate");
    assert!(
        gate["line"]
            .as_str()
            .expect("line")
            .contains("not comparable"),
        "{gate}"
    );
    let allowed = output(&[
        "diff",
        s(&old),
        s(&new),
        "--fail-above",
        "5",
        "--allow-incomparable",
    ]);
    let t = text(&allowed.stdout);
    assert_eq!(allowed.status.code(), Some(0), "{t}");
    assert!(t.contains("comparable: NO") && t.contains("PASS"), "{t}");
    // Each verdict row says it too, beside its call (the reasons once, in the header).
    let step_rows: Vec<&str> = t.lines().filter(|l| l.starts_with("step_time")).collect();
    assert!(!step_rows.is_empty(), "{t}");
    for l in step_rows {
        assert!(l.contains("NOT COMPARABLE (why: above)"), "{l}");
    }
    // Another driver, given with --provenance (the records beside the runs are then not read).
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    std::fs::write(&a, record("550.54", "")).expect("write");
    std::fs::write(&b, record("560.28", "")).expect("write");
    let out = output(&[
        "diff",
        s(&old),
        s(&new),
        "--provenance",
        s(&a),
        s(&b),
        "--fail-above",
        "5",
    ]);
    let t = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("comparable: NO") && t.contains("550.54 → 560.28"),
        "{t}"
    );
    assert!(!t.contains("throttled"), "{t}");
    // The same records: comparable.
    let out = output(&[
        "diff",
        s(&old),
        s(&new),
        "--provenance",
        s(&a),
        s(&a),
        "--fail-above",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// The CSV holds the same rows as the JSON under one header, verdict rows first; a margin that is not a
/// finite percentage ≥ 0 is refused; a wider margin turns the same +20 % into `unchanged`.
#[test]
fn the_csv_opens_with_the_verdict_rows_and_the_margin_is_checked() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = slowdown_runs(tmp.path());
    let out = output(&["diff", s(&old), s(&new), "--csv"]);
    let t = text(&out.stdout);
    let mut lines = t.lines();
    let header = lines.next().expect("header");
    assert!(
        header.starts_with(
            "kind,metric,name,place,phase,verdict,delta_pct,ci_low_pct,ci_high_pct,n_old,n_new"
        ),
        "{header}"
    );
    let first = lines.next().expect("row");
    assert!(
        first.starts_with("verdict,step_time,,rank 0,unphased,slower,20.000,"),
        "{first}"
    );
    assert!(t.lines().any(|l| l.starts_with("bucket,gemm,")), "{t}");
    for bad in ["-1", "nan", "inf"] {
        let out = output(&["diff", s(&old), s(&new), &format!("--margin={bad}")]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            text(&out.stderr).contains("--margin"),
            "{}",
            text(&out.stderr)
        );
    }
    // Margin 30 %: the interval (about +18 % to +22 %) lies inside ±30 %: unchanged, and the gate passes.
    let out = output(&[
        "diff",
        s(&old),
        s(&new),
        "--json",
        "--margin",
        "30",
        "--fail-above",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(json_rows(&out)[0]["verdict"], "unchanged");
}

/// Issue 44: two captures without step markers, one window each, the new one holding half the iterations.
/// The window's span halves, but the step time is `inconclusive` saying why — never "faster" — while the
/// GEMM's per-launch durations (100, 101 µs alternating in both) say it is `unchanged`.
#[test]
fn windows_of_different_work_are_judged_by_their_kernels() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    trace(&old, "r0.json", Some(0), Some(1), &[100, 101].repeat(6));
    trace(&new, "r0.json", Some(0), Some(1), &[100, 101].repeat(3));
    // A pattern no marker matches: each trace is one step over its whole GPU window.
    let args = [
        "--json",
        "--step-pattern",
        "^no such marker$",
        "--fail-above",
        "5",
    ];
    let out = output(&[&["diff", s(&old), s(&new)][..], &args].concat());
    let rows = json_rows(&out);
    let step = &rows[0];
    assert_eq!(
        (&step["metric"], &step["verdict"]),
        (&"step_time".into(), &"inconclusive".into())
    );
    assert!(step["delta_pct"].as_f64().expect("Δ") < -40.0, "{step}");
    assert!(
        step["reasons"].to_string().contains("without step markers"),
        "{step}"
    );
    let gemm = rows
        .iter()
        .find(|r| r["metric"] == "kernel")
        .expect("a kernel row");
    assert_eq!(
        (gemm["n_old"].as_u64(), gemm["n_new"].as_u64()),
        (Some(12), Some(6))
    );
    assert_eq!(gemm["verdict"], "unchanged", "{gemm}");
    assert_eq!(step["gated"], false);
    // The gate judges the kernels, not the windows: whichever capture held more work, it passes.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = output(&[&["diff", s(&new), s(&old)][..], &args].concat());
    assert_eq!(json_rows(&out)[0]["verdict"], "inconclusive");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// A capture without step markers: one GPU window of iterations, each launching a GEMM of `gemm_us[i]` µs
/// and a softmax of `softmax_us[i]` µs.
fn window_trace(dir: &Path, gemm_us: &[u64], softmax_us: &[u64]) -> PathBuf {
    let mut events = Vec::new();
    for (k, (g, sm)) in gemm_us.iter().zip(softmax_us).enumerate() {
        let t = 1_000 * k as u64;
        for (j, (name, us)) in [("volta_sgemm_128x64_nn", g), ("softmax_kernel<float>", sm)]
            .into_iter()
            .enumerate()
        {
            let corr = 2 * k + j + 1;
            events.push(format!(
                r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {corr}}}}}"#,
                t + 10 * j as u64
            ));
            events.push(format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {}, "dur": {us}, "args": {{"device": 0, "stream": 7, "correlation": {corr}}}}}"#,
                100_000 + t + 400 * j as u64
            ));
        }
    }
    std::fs::create_dir_all(dir).expect("dir");
    let path = dir.join("r0.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"schemaVersion": 1, "distributedInfo": {{"rank": 0, "world_size": 1}}, "traceEvents": [{}]}}"#,
            events.join(",\n")
        ),
    )
    .expect("write trace");
    path
}

/// Issue 44's promise: two captures with no step markers, one window each, holding 9 and 5 iterations,
/// the softmax 20 % slower in the new one. The softmax: old 50, 55, 45, 50, 50, 55, 45, 50, 50 µs (mean
/// 450 / 9 = 50), new 1.2 × the first five, 60, 66, 54, 60, 60 (mean 300 / 5 = 60): Δ = +20 % exactly;
/// s² = 100 / 8 = 12.5 and 72 / 4 = 18, so a = 18 / (5 · 60²) = 0.001, b = 12.5 / (9 · 50²) ≈ 0.000556,
/// ν ≈ 8.4, t ≈ 2.29, half-width ≈ 2.29 · 0.0394 ≈ 0.090 around ln 1.2 ≈ 0.182: about [+9.6, +31.4] %,
/// `slower`. The GEMM (100, 101 alternating, means 100.44 and 100.4): `unchanged`. The window's span
/// shrinks with the work it held, yet the step time is `inconclusive`, saying why, and never `faster`.
#[test]
fn windows_of_five_and_nine_iterations_say_which_kernel_changed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    let gemm = |n: usize| -> Vec<u64> { (0..n).map(|i| 100 + (i % 2) as u64).collect() };
    let soft_old = [50, 55, 45, 50, 50, 55, 45, 50, 50];
    let soft_new: Vec<u64> = soft_old[..5].iter().map(|x| x * 6 / 5).collect();
    assert_eq!(soft_new, [60, 66, 54, 60, 60]);
    window_trace(&old, &gemm(9), &soft_old);
    window_trace(&new, &gemm(5), &soft_new);
    let out = output(&["diff", s(&old), s(&new), "--json", "--fail-above", "5"]);
    let rows = json_rows(&out);
    let step = &rows[0];
    assert_eq!(
        (&step["metric"], &step["verdict"], &step["gated"]),
        (&"step_time".into(), &"inconclusive".into(), &false.into())
    );
    assert!(step["delta_pct"].as_f64().expect("Δ") < 0.0, "{step}");
    assert!(
        step["reasons"].to_string().contains("without step markers"),
        "{step}"
    );
    assert!(
        rows.iter()
            .filter(|r| r["kind"] == "verdict" && r["metric"] != "kernel")
            .all(|r| r["verdict"] == "inconclusive" && r["gated"] == false),
        "{rows:?}"
    );
    let kernel = |name: &str| {
        rows.iter()
            .find(|r| r["metric"] == "kernel" && r["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {rows:?}"))
    };
    let soft = kernel("softmax_kernel");
    assert_eq!(
        (
            &soft["verdict"],
            soft["n_old"].as_u64(),
            soft["n_new"].as_u64()
        ),
        (&"slower".into(), Some(9), Some(5))
    );
    assert!(
        (soft["delta_pct"].as_f64().expect("Δ") - 20.0).abs() < 1e-9,
        "{soft}"
    );
    let (lo, hi) = (
        soft["ci_low_pct"].as_f64().expect("lo"),
        soft["ci_high_pct"].as_f64().expect("hi"),
    );
    assert!(
        (9.0..10.5).contains(&lo) && (30.5..32.5).contains(&hi),
        "{soft}"
    );
    assert_eq!(kernel("volta_sgemm_#_nn")["verdict"], "unchanged");
    // The gate fails on the kernel, not on the window.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let gate = rows.last().expect("gate");
    let line = gate["line"].as_str().expect("line");
    assert!(
        line.contains("kernel softmax_kernel") && !line.contains("step_time"),
        "{line}"
    );
    // The other way round the softmax is faster and the window, 9 iterations against 5, longer: it passes.
    let back = output(&["diff", s(&new), s(&old), "--json", "--fail-above", "5"]);
    assert_eq!(back.status.code(), Some(0), "{}", text(&back.stdout));
    assert_eq!(json_rows(&back)[0]["verdict"], "inconclusive");
}

/// A budget listing of `prefill` steps (spans `prefill`) and `decode` steps (spans `decode`), rank 0,
/// idle 10 µs and gemm the rest of each step.
fn phased_listing(path: &Path, prefill: &[f64], decode: &[f64]) {
    let mut lines = Vec::new();
    for (phase, spans) in [("prefill", prefill), ("decode", decode)] {
        for (i, span) in spans.iter().enumerate() {
            lines.push(format!(
                r#"{{"file": "t.json", "rank": 0, "name": "{phase}#{i}", "phase": "{phase}", "span_us": {span}, "idle_us": 10.0, "buckets": {{"gemm": {{"exclusive_us": {}}}}}}}"#,
                span - 10.0
            ));
        }
    }
    std::fs::write(path, lines.join("\n")).expect("write listing");
}

/// Issue 44: phases are compared like with like, never pooled. Old: 4 prefill steps of 1000–1003 µs and 4
/// decode steps of 100–103 µs; new: 3 prefill steps of 1000–1002 and 12 decode steps of 100–103. Pooled,
/// the mean span would fall from (4006 + 406) / 8 = 551.5 to (3003 + 1218) / 15 ≈ 281.4 µs, "faster" by
/// 49 % for nothing; per phase, prefill's mean moves 1001.5 → 1001 (−0.05 %) and decode's not at all:
/// `unchanged` both, and the gate passes at 0 %.
#[test]
fn a_prefill_and_decode_pair_is_never_pooled() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old.jsonl"), tmp.path().join("new.jsonl"));
    let decode = [100.0, 101.0, 102.0, 103.0];
    phased_listing(&old, &[1000.0, 1001.0, 1002.0, 1003.0], &decode);
    phased_listing(&new, &[1000.0, 1001.0, 1002.0], &decode.repeat(3));
    let out = output(&["diff", s(&old), s(&new), "--json", "--fail-above", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let rows = json_rows(&out);
    let steps: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["metric"] == "step_time").collect();
    let by_phase: Vec<(&str, &str, u64, u64)> = steps
        .iter()
        .map(|r| {
            (
                r["phase"].as_str().expect("phase"),
                r["verdict"].as_str().expect("verdict"),
                r["n_old"].as_u64().expect("n"),
                r["n_new"].as_u64().expect("n"),
            )
        })
        .collect();
    assert_eq!(
        by_phase,
        [
            ("prefill", "unchanged", 4, 3),
            ("decode", "unchanged", 4, 12)
        ]
    );
    let prefill = steps[0]["delta_pct"].as_f64().expect("Δ");
    assert!(
        (prefill - 100.0 * (1001.0 / 1001.5 - 1.0)).abs() < 1e-9,
        "{prefill}"
    );
    assert!(steps[1]["delta_pct"].as_f64().expect("Δ").abs() < 1e-9);
    assert!(rows.iter().all(|r| r["verdict"] != "faster"), "{rows:?}");
    // The per-bucket rows too: each phase's own, none over both.
    let buckets: Vec<(&str, f64)> = rows
        .iter()
        .filter(|r| r["kind"] == "bucket" && r["metric"] == "gemm")
        .map(|r| {
            (
                r["phase"].as_str().expect("phase"),
                r["old"].as_f64().expect("old"),
            )
        })
        .collect();
    // gemm = span − 10: prefill (4006 − 40) / 4 = 991.5, decode (406 − 40) / 4 = 91.5.
    assert_eq!(buckets, [("prefill", 991.5), ("decode", 91.5)]);
    // Each bucket row carries the interval of its own verdict row (phase, rank and bucket alike).
    for phase in ["prefill", "decode"] {
        let of = |kind: &str, key: &str| {
            rows.iter()
                .find(|r| r["kind"] == kind && r["phase"] == phase && r[key] == "gemm")
                .unwrap_or_else(|| panic!("{kind} {phase}: {rows:?}"))
        };
        let (bucket, verdict) = (of("bucket", "metric"), of("verdict", "name"));
        assert!(bucket["ci_low_pct"].is_f64(), "{bucket}");
        assert_eq!(
            (&bucket["ci_low_pct"], &bucket["ci_high_pct"]),
            (&verdict["ci_low_pct"], &verdict["ci_high_pct"])
        );
    }
    // The page's bucket table likewise: a phase column, a row of each phase.
    let page = tmp.path().join("d.html");
    let out = output(&["diff", s(&old), s(&new), "--html", s(&page)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).expect("page");
    // The verdict first: whether the runs can be compared and why (no records: not checked), each
    // interval as a bar against zero.
    let verdict = html.find("<h2>Verdict</h2>").expect("a verdict section");
    assert!(
        html[verdict..].contains("The runs can be compared."),
        "{html}"
    );
    assert!(
        html.contains("no provenance record for OLD and NEW"),
        "{html}"
    );
    assert!(html.contains("<svg class=\"intervals\""), "{html}");
    let table = &html[html.find("Old → new").expect("the bucket table")..];
    assert!(table.contains(">phase</th>"), "{table}");
    for phase in ["prefill", "decode"] {
        assert!(
            table.contains(&format!(">{phase}</td>")),
            "{phase}: {table}"
        );
    }
}

/// A kernel name in one run only is a row of its own kind in `--json` and `--csv` (`kernel_only_in_old`),
/// as in the text table, and does not fail the gate: the old window launched a softmax the new one does
/// not; the GEMM (100, 101 alternating in both) is unchanged.
#[test]
fn a_kernel_in_one_run_only_is_listed_in_every_format_and_not_gated() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    window_trace(&old, &[100, 101, 100, 101, 100, 101], &[50; 6]);
    trace(
        &new,
        "r0.json",
        Some(0),
        Some(1),
        &[100, 101, 100, 101, 100, 101],
    );
    let args = ["--step-pattern", "^no such marker$", "--fail-above", "5"];
    let out = output(&[&["diff", s(&old), s(&new), "--json"][..], &args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let rows = json_rows(&out);
    assert!(
        rows.iter().any(|r| r["kind"] == "kernel_only_in_old"
            && r["what"] == "kernel softmax_kernel (unphased)"),
        "{rows:?}"
    );
    let csv = output(&[&["diff", s(&old), s(&new), "--csv"][..], &args].concat());
    let t = text(&csv.stdout);
    assert!(
        t.lines()
            .any(|l| l.starts_with("kernel_only_in_old,,kernel softmax_kernel (unphased),")),
        "{t}"
    );
    let table = output(&[&["diff", s(&old), s(&new)][..], &args].concat());
    let t = text(&table.stdout);
    assert!(
        t.contains("only in OLD (not gated): kernel softmax_kernel (unphased)"),
        "{t}"
    );
}
