//! Every subcommand on every native format: the files of testdata/native (built from the formats'
//! public schemas, and the shared samples copied with their licences). Counts are checked against the
//! independent ones (testdata/native/counts.json, Python sqlite3/json/csv) where a listing shows them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (path under testdata/native, format key, a GPU the roofline names: from the file, or given).
const FILES: &[(&str, &str, &str)] = &[
    (
        "nsys_node_3.17.sqlite",
        "nsys_sqlite",
        "H100 SXM (from name)",
    ),
    (
        "nsys_graph_3.16.sqlite",
        "nsys_sqlite",
        "H100 SXM (from name)",
    ),
    (
        "samples/nsys/nvfuser_test_matmul_nsys2024.6.sqlite",
        "nsys_sqlite",
        "H200 (from name)",
    ),
    ("rocpd_3.db", "rocpd_sqlite", "MI300X (from name)"),
    ("rpd_3.rpd", "rpd_sqlite", ""),
    ("samples/rpd/matmul_result.rpd", "rpd_sqlite", ""),
    (
        "rocprofv3_markers.json",
        "rocprofv3_json",
        "MI300X (from name)",
    ),
    (
        "samples/rocprofv3/mi350x_train_908_results.json.gz",
        "rocprofv3_json",
        "",
    ),
    (
        "rocprofv3_csv_old/7101_kernel_trace.csv",
        "rocprofv3_csv",
        "MI300X (from name)",
    ),
    (
        "rocprofv3_csv_new/7201_kernel_trace.csv",
        "rocprofv3_csv",
        "MI300X (from name)",
    ),
    ("samples/rocprof-csv/kernel_trace.csv", "rocprofv3_csv", ""),
    ("chrome_array_open.json", "chrome_array", ""),
    (
        "samples/rpd/matmul_result.rpd2tracing.json",
        "chrome_array",
        "",
    ),
];

fn native(rel: &str) -> String {
    root()
        .join("testdata/native")
        .join(rel)
        .display()
        .to_string()
}

fn kineto(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kineto"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn lines(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn counts() -> Value {
    let text = std::fs::read_to_string(root().join("testdata/native/counts.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn summary_says_the_format_and_counts_what_python_counts() {
    let counts = counts();
    for (rel, format, _) in FILES {
        let (code, out, err) = kineto(&["summary", "--json", &native(rel)]);
        assert_eq!(code, 0, "{rel}: {err}");
        let s = &lines(&out)[0];
        assert_eq!(s["format"], *format, "{rel}");
        let want = &counts[rel];
        assert_eq!(s["kernels"]["count"], want["kernels"], "{rel}");
        assert_eq!(s["memcpy"]["count"], want["memcpys"], "{rel}");
        assert_eq!(s["memset"]["count"], want["memsets"], "{rel}");
        assert_eq!(s["memcpy"]["bytes"], want["memcpy_bytes"], "{rel}");
        assert_eq!(s["user_annotations"], want["markers"], "{rel}");
        let calls =
            s["runtime"]["count"].as_i64().unwrap() + s["driver"]["count"].as_i64().unwrap();
        assert_eq!(calls, want["launches"].as_i64().unwrap(), "{rel}");
        // The readable form names the format too.
        let (code, text, _) = kineto(&["summary", &native(rel)]);
        assert_eq!(code, 0);
        assert!(text.contains("  format          "), "{rel}: {text}");
    }
}

#[test]
fn steps_kernels_budget_top_annotations_run_on_every_format() {
    let counts = counts();
    for (rel, format, _) in FILES {
        let want = &counts[rel];
        let path = native(rel);
        let (code, out, err) = kineto(&["steps", "--json", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        let steps = lines(&out);
        match want["steps"].as_array() {
            Some(w) => {
                assert_eq!(steps.len(), w.len(), "{rel}");
                for (s, w) in steps.iter().zip(w) {
                    assert_eq!(s["name"], w["name"], "{rel}");
                    assert_eq!(s["kernels"], w["kernels"], "{rel}");
                }
            }
            // No markers: the whole GPU window is one step.
            None => assert_eq!(steps.len(), 1, "{rel}"),
        }
        assert!(
            err.contains("read as "),
            "{rel}: the note naming the format: {err}"
        );

        let (code, out, err) = kineto(&["kernels", "--json", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        assert_eq!(
            lines(&out).len() as i64,
            want["kernels"].as_i64().unwrap(),
            "{rel}"
        );

        let (code, out, err) = kineto(&["budget", "--json", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        assert_eq!(lines(&out).len(), steps.len(), "{rel}");
        let (code, table, _) = kineto(&["budget", &path]);
        assert_eq!(code, 0, "{rel}");
        // The table's first line names the file and its format.
        let title = match *format {
            "nsys_sqlite" => "Nsight Systems SQLite",
            "rocpd_sqlite" => "rocpd SQLite",
            "rpd_sqlite" => "RPD SQLite",
            "rocprofv3_json" => "rocprofv3 JSON",
            "rocprofv3_csv" => "rocprofv3 CSV",
            _ => "Chrome-trace JSON array",
        };
        assert!(
            table.lines().next().unwrap().contains(title),
            "{rel}: {table}"
        );

        let (code, out, err) = kineto(&["top", "--json", "-n", "3", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        assert!(!lines(&out).is_empty() || want["kernels"] == 0, "{rel}");

        let (code, out, err) = kineto(&["annotations", "--json", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        let total: i64 = lines(&out)
            .iter()
            .map(|r| r["count"].as_i64().unwrap())
            .sum();
        assert_eq!(total, want["markers"].as_i64().unwrap(), "{rel}");
    }
}

#[test]
fn ranks_of_a_directory_of_one_format() {
    let (code, out, err) = kineto(&["ranks", "--json", &native("rocprofv3_csv_new")]);
    assert_eq!(code, 0, "{err}");
    let rows = lines(&out);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["ranks"] == 2), "{out}");
    // Every file, as a run of one rank.
    for (rel, _, _) in FILES {
        let (code, _, err) = kineto(&["ranks", &native(rel)]);
        assert_eq!(code, 0, "{rel}: {err}");
    }
}

#[test]
fn roofline_reads_the_gpu_from_the_files_own_gpu_table() {
    for (rel, _, gpu) in FILES.iter().filter(|f| !f.2.is_empty()) {
        let (_, out, err) = kineto(&[
            "roofline",
            "--model",
            "testdata/models/llama-3.1-8b.json",
            &native(rel),
        ]);
        assert!(out.contains(&format!("GPU {gpu}")), "{rel}: {out}{err}");
    }
    // A format without a GPU table: the GPU is given.
    let (_, out, err) = kineto(&[
        "roofline",
        "--model",
        "testdata/models/llama-3.1-8b.json",
        "--gpu",
        "MI300X",
        &native("rpd_3.rpd"),
    ]);
    assert!(out.contains("GPU MI300X (from given)"), "{out}{err}");
}

#[test]
fn report_and_diff_run_on_native_formats() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (rel, _, _)) in FILES.iter().enumerate() {
        let html = tmp.path().join(format!("r{i}.html"));
        let (code, _, err) = kineto(&[
            "report",
            "--html",
            &html.display().to_string(),
            &native(rel),
        ]);
        assert_eq!(code, 0, "{rel}: {err}");
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("id=\"tool-json\""), "{rel}");
    }
    // Two formats of the same run: RPD and its rpd2tracing export (the times of the latter are
    // whole µs, so the budgets are close, not equal).
    let (code, out, err) = kineto(&[
        "diff",
        &native("samples/rpd/matmul_result.rpd"),
        &native("samples/rpd/matmul_result.rpd2tracing.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("memcpy"), "{out}");
}

#[test]
fn graph_mode_is_reported_as_incomplete() {
    let (code, text, _) = kineto(&["summary", &native("nsys_graph_3.16.sqlite")]);
    assert_eq!(code, 0);
    assert!(text.contains("KERNELS INCOMPLETE"), "{text}");
    let (_, _, err) = kineto(&["budget", "--json", &native("nsys_graph_3.16.sqlite")]);
    assert!(
        err.contains("per-kernel tables and budgets are incomplete"),
        "{err}"
    );
    let (_, table, _) = kineto(&["budget", &native("nsys_graph_3.16.sqlite")]);
    assert!(table.contains("graph"), "{table}");
}

#[test]
fn a_mixed_directory_is_refused_naming_both_formats() {
    let (code, _, err) = kineto(&["summary", &native("samples/rpd")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("Chrome-trace JSON array") && err.contains("SQLite"),
        "{err}"
    );
}
