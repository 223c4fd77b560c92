//! Every subcommand on every native format: the files of testdata/native (built from the formats'
//! public schemas) and the real samples of the shared corpus (`../shared/traces/native`; without it
//! those tests are listed as ignored). Counts are checked against the independent ones
//! (testdata/native/counts.json and corpus_counts.json, Python sqlite3/json/csv) where a listing shows them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use serde_json::Value;

mod common;
use common::{corpus, json_lines, root, run};

/// (path under testdata/native, format key, a GPU the roofline names: from the file, or given).
const BUILT: &[(&str, &str, &str)] = &[
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
    ("rocpd_3.db", "rocpd_sqlite", "MI300X (from name)"),
    ("rpd_3.rpd", "rpd_sqlite", ""),
    (
        "rocprofv3_markers.json",
        "rocprofv3_json",
        "MI300X (from name)",
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
    ("chrome_array_open.json", "chrome_array", ""),
];

/// The same for the real samples, by their path under `../shared/traces/native`.
const CORPUS: &[(&str, &str, &str)] = &[
    (
        "nsys/nvfuser_test_matmul_nsys2024.6.sqlite",
        "nsys_sqlite",
        "H200 (from name)",
    ),
    ("rpd/matmul_result.rpd", "rpd_sqlite", ""),
    (
        "rocprofv3/mi350x_train_908_results.json.gz",
        "rocprofv3_json",
        "",
    ),
    ("rocprof-csv/kernel_trace.csv", "rocprofv3_csv", ""),
    ("rpd/matmul_result.rpd2tracing.json", "chrome_array", ""),
];

/// A native file to run the commands on: its path, its row of the independent counts, its format key
/// and the GPU the roofline names ("" where the file has no GPU table).
struct NativeFile {
    path: String,
    want: Value,
    format: &'static str,
    gpu: &'static str,
}

fn native(rel: &str) -> String {
    root()
        .join("testdata/native")
        .join(rel)
        .display()
        .to_string()
}

/// The files under `dir` listed in `table`, with their rows of the counts file `counts` (testdata/native).
fn native_files(
    dir: &std::path::Path,
    table: &[(&str, &'static str, &'static str)],
    counts: &str,
) -> Vec<NativeFile> {
    let text = std::fs::read_to_string(root().join("testdata/native").join(counts)).unwrap();
    let counts: Value = serde_json::from_str(&text).unwrap();
    table
        .iter()
        .map(|(rel, format, gpu)| NativeFile {
            path: dir.join(rel).display().to_string(),
            want: counts[*rel].clone(),
            format,
            gpu,
        })
        .collect()
}

/// The files built by make_native.py.
fn built() -> Vec<NativeFile> {
    native_files(&root().join("testdata/native"), BUILT, "counts.json")
}

/// The corpus's real samples (for tests ignored without the corpus).
fn corpus_samples() -> Vec<NativeFile> {
    native_files(&corpus::corpus_file("native"), CORPUS, "corpus_counts.json")
}

#[test]
fn summary_says_the_format_and_counts_what_python_counts() {
    summary_counts(&built());
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn summary_of_the_corpus_samples_counts_what_python_counts() {
    summary_counts(&corpus_samples());
}

fn summary_counts(files: &[NativeFile]) {
    for f in files {
        let (rel, want) = (&f.path, &f.want);
        let (code, out, err) = run(&["summary", "--json", rel]);
        assert_eq!(code, 0, "{rel}: {err}");
        // One summary per rank (a file of several processes or GPUs has several): the ops and calls of
        // the ranks add up to the file's; a marker range is on every GPU of its process, so is counted
        // per rank only for a file of one rank.
        let ranks = json_lines(&out);
        let sum = |get: &dyn Fn(&Value) -> i64| -> i64 { ranks.iter().map(get).sum() };
        let int = |v: &Value| v.as_i64().unwrap_or(0);
        for s in &ranks {
            assert_eq!(s["format"], f.format, "{rel}");
        }
        assert_eq!(
            sum(&|s| int(&s["kernels"]["count"])),
            int(&want["kernels"]),
            "{rel}"
        );
        assert_eq!(
            sum(&|s| int(&s["memcpy"]["count"])),
            int(&want["memcpys"]),
            "{rel}"
        );
        assert_eq!(
            sum(&|s| int(&s["memset"]["count"])),
            int(&want["memsets"]),
            "{rel}"
        );
        assert_eq!(
            sum(&|s| int(&s["memcpy"]["bytes"])),
            int(&want["memcpy_bytes"]),
            "{rel}"
        );
        if ranks.len() == 1 {
            assert_eq!(ranks[0]["user_annotations"], want["markers"], "{rel}");
        }
        let calls = sum(&|s| int(&s["runtime"]["count"]) + int(&s["driver"]["count"]));
        assert_eq!(calls, int(&want["launches"]), "{rel}");
        // The readable form names the format too.
        let (code, text, _) = run(&["summary", rel]);
        assert_eq!(code, 0);
        assert!(text.contains("  format          "), "{rel}: {text}");
    }
}

#[test]
fn steps_kernels_budget_top_annotations_run_on_every_format() {
    every_listing(&built());
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn steps_kernels_budget_top_annotations_run_on_the_corpus_samples() {
    every_listing(&corpus_samples());
}

fn every_listing(files: &[NativeFile]) {
    for f in files {
        let (rel, want, format) = (&f.path, &f.want, f.format);
        let path = rel.clone();
        let (code, out, err) = run(&["steps", "--json", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        let steps = json_lines(&out);
        let one_rank = steps.windows(2).all(|p| p[0]["file"] == p[1]["file"]);
        match want["steps"].as_array() {
            Some(w) if one_rank => {
                assert_eq!(steps.len(), w.len(), "{rel}");
                for (s, w) in steps.iter().zip(w) {
                    assert_eq!(s["name"], w["name"], "{rel}");
                    assert_eq!(s["kernels"], w["kernels"], "{rel}");
                }
            }
            // A file of several ranks: each rank has the steps of its process's markers, with its own
            // GPU's kernels; per step name they add up to the file's.
            Some(w) => {
                let by_name = |rows: &mut dyn Iterator<Item = &Value>| {
                    let mut m = std::collections::BTreeMap::<String, i64>::new();
                    for s in rows {
                        *m.entry(s["name"].as_str().unwrap_or("").to_string())
                            .or_default() += s["kernels"].as_i64().unwrap_or(0);
                    }
                    m
                };
                assert_eq!(by_name(&mut steps.iter()), by_name(&mut w.iter()), "{rel}");
            }
            // No markers: the whole GPU window is one step.
            None => assert_eq!(steps.len(), 1, "{rel}"),
        }
        assert!(
            err.contains("read as "),
            "{rel}: the note naming the format: {err}"
        );

        let (code, out, err) = run(&["kernels", "--json", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        assert_eq!(
            json_lines(&out).len() as i64,
            want["kernels"].as_i64().unwrap(),
            "{rel}"
        );

        let (code, out, err) = run(&["budget", "--json", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        assert_eq!(json_lines(&out).len(), steps.len(), "{rel}");
        let (code, table, _) = run(&["budget", &path]);
        assert_eq!(code, 0, "{rel}");
        // The table's first line names the file and its format.
        let title = match format {
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

        let (code, out, err) = run(&["top", "--json", "-n", "3", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        assert!(
            !json_lines(&out).is_empty() || want["kernels"] == 0,
            "{rel}"
        );

        let (code, out, err) = run(&["annotations", "--json", &path]);
        assert_eq!(code, 0, "{rel}: {err}");
        let rows = json_lines(&out);
        let total: i64 = rows.iter().map(|r| r["count"].as_i64().unwrap()).sum();
        let markers = want["markers"].as_i64().unwrap();
        if rows.windows(2).all(|p| p[0]["file"] == p[1]["file"]) {
            assert_eq!(total, markers, "{rel}");
        } else {
            // A range is on every GPU of its process: each rank has at most the file's, together at
            // least (the exact counts per rank: kineto-sqlite's two-rank tests).
            let mut per_rank = std::collections::BTreeMap::<String, i64>::new();
            for r in &rows {
                *per_rank.entry(r["file"].to_string()).or_default() += r["count"].as_i64().unwrap();
            }
            assert!(
                per_rank.values().all(|&n| n <= markers),
                "{rel}: {per_rank:?}"
            );
            assert!(total >= markers, "{rel}: {per_rank:?}");
        }
    }
}

#[test]
fn ranks_of_a_directory_of_one_format() {
    let (code, out, err) = run(&["ranks", "--json", &native("rocprofv3_csv_new")]);
    assert_eq!(code, 0, "{err}");
    let rows = json_lines(&out);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["ranks"] == 2), "{out}");
    // Every file, as a run of one rank.
    one_rank_runs(&built());
}

fn one_rank_runs(files: &[NativeFile]) {
    for f in files {
        let (code, _, err) = run(&["ranks", &f.path]);
        assert_eq!(code, 0, "{}: {err}", f.path);
    }
}

fn roofline_gpus(files: &[NativeFile]) {
    for f in files.iter().filter(|f| !f.gpu.is_empty()) {
        let (_, out, err) = run(&[
            "roofline",
            "--model",
            "testdata/models/llama-3.1-8b.json",
            &f.path,
        ]);
        assert!(
            out.contains(&format!("GPU {}", f.gpu)),
            "{}: {out}{err}",
            f.path
        );
    }
}

fn reports(files: &[NativeFile]) {
    let tmp = tempfile::tempdir().unwrap();
    for (i, f) in files.iter().enumerate() {
        let html = tmp.path().join(format!("r{i}.html"));
        let (code, _, err) = run(&["report", "--html", &html.display().to_string(), &f.path]);
        assert_eq!(code, 0, "{}: {err}", f.path);
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("id=\"tool-json\""), "{}", f.path);
    }
}

/// The corpus's real samples through ranks, roofline (the H200 named by the nsys file), report, and
/// diff of two formats of one run.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn ranks_roofline_report_and_diff_on_the_corpus_samples() {
    let files = corpus_samples();
    one_rank_runs(&files);
    roofline_gpus(&files);
    reports(&files);
    // Two formats of the same run: RPD and its rpd2tracing export (the times of the latter are
    // whole µs, so the budgets are close, not equal).
    let (code, out, err) = run(&["diff", &files[1].path, &files[4].path]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("memcpy"), "{out}");
}

#[test]
fn roofline_reads_the_gpu_from_the_files_own_gpu_table() {
    roofline_gpus(&built());
    // A format without a GPU table: the GPU is given.
    let (_, out, err) = run(&[
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
fn report_runs_on_native_formats() {
    reports(&built());
}

#[test]
fn graph_mode_is_reported_as_incomplete() {
    let (code, text, _) = run(&["summary", &native("nsys_graph_3.16.sqlite")]);
    assert_eq!(code, 0);
    assert!(text.contains("KERNELS INCOMPLETE"), "{text}");
    let (_, _, err) = run(&["budget", "--json", &native("nsys_graph_3.16.sqlite")]);
    assert!(
        err.contains("per-kernel tables and budgets are incomplete"),
        "{err}"
    );
    let (_, table, _) = run(&["budget", &native("nsys_graph_3.16.sqlite")]);
    assert!(table.contains("graph"), "{table}");
}

#[test]
fn a_mixed_directory_is_refused_naming_both_formats() {
    // An RPD database beside a Chrome-trace array.
    let tmp = tempfile::tempdir().unwrap();
    for f in ["rpd_3.rpd", "chrome_array_open.json"] {
        std::fs::copy(native(f), tmp.path().join(f)).unwrap();
    }
    let (code, _, err) = run(&["summary", &tmp.path().display().to_string()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("Chrome-trace JSON array") && err.contains("SQLite"),
        "{err}"
    );
}

/// `kineto ranks` on one Nsight Systems export of two processes on two GPUs (the 3.17 file) sees two
/// ranks, named by process and GPU; before, one file was one rank.
#[test]
fn ranks_of_one_file_of_two_processes() {
    let (code, out, err) = run(&["ranks", &native("nsys_node_3.17.sqlite")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().next(), Some("2 ranks"), "{out}");
    // Step 0 is on both (process 4101's prefill, process 4201's decode), step 1 on process 4101's alone.
    assert!(
        out.contains("step 0 `kl1.step#0 phase=prefill rows=64` on 2 ranks"),
        "{out}"
    );
    assert!(
        out.contains("step 1 `kl1.step#1 phase=decode rows=4 requests=4` on 1 ranks"),
        "{out}"
    );
    assert!(
        err.contains("nsys_node_3.17.sqlite#pid 4201 gpu 1"),
        "{err}"
    );
}

/// `kineto diff` compares one rank with one: a file of two ranks is refused (status 2), naming both, never
/// compared as the union of two GPUs' work.
#[test]
fn diff_refuses_a_file_of_two_ranks_naming_them() {
    let file = native("nsys_node_3.17.sqlite");
    let (code, _, err) = run(&["diff", &file, &native("rpd_3.rpd")]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("holds 2 ranks")
            && err.contains("#pid 4101 gpu 0")
            && err.contains("#pid 4201 gpu 1"),
        "{err}"
    );
}

/// A rocprofv3 run traced without kernels (`--hip-trace`: one `<pid>_hip_api_trace.csv`), given as
/// the file or its directory: read, its calls counted as runtime calls, no kernels (it was "not JSON"
/// and "no trace files").
#[test]
fn a_rocprofv3_hip_api_trace_alone_is_summarised() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("31_hip_api_trace.csv");
    std::fs::write(
        &file,
        "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n\
         \"HIP_COMPILER_API\",\"__hipRegisterFatBinary\",31,31,1,1000,1400\n\
         \"HIP_RUNTIME_API\",\"hipMalloc\",31,31,2,2000,2600\n\
         \"HIP_RUNTIME_API\",\"hipFree\",31,31,3,3000,3050\n",
    )
    .unwrap();
    for given in [&file, &tmp.path().to_path_buf()] {
        let (code, out, err) = run(&[
            "summary",
            "--json",
            "--no-sha256",
            &given.display().to_string(),
        ]);
        assert_eq!(code, 0, "{given:?}: {err}");
        let s: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(s["format"], "rocprofv3_csv");
        // 3 rows, each a HIP call: 3 runtime calls, no kernels, no copies.
        assert_eq!(s["runtime"]["count"], 3, "{out}");
        assert_eq!(s["kernels"]["count"], 0, "{out}");
        assert_eq!(s["memcpy"]["count"], 0, "{out}");
    }
}
