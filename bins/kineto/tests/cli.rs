//! The `kineto` binary as a user runs it.

use std::path::PathBuf;

mod common;
use common::{corpus, kineto};

/// A trace of the shared corpus (for tests ignored without it).
fn testdata(rel: &str) -> PathBuf {
    corpus::corpus_file(rel)
}

/// A rank of the generated demo window (testdata/windows/demo: 2,532 kernels each), for what any trace shows.
fn demo(rank: u32) -> PathBuf {
    common::testdata(&format!(
        "windows/demo/prof-short-b1.decode.rank{rank}.pt.trace.json.gz"
    ))
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn summary_json_has_the_documented_keys_and_counts() {
    let out = kineto()
        .args(["summary", "--json"])
        .arg(testdata("hta/trace_compare/base/base.json.gz"))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).expect("utf8");
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON object");
    for key in [
        "file",
        "sha256",
        "schema_version",
        "rank",
        "world_size",
        "events",
        "span_us",
        "kernels",
        "memcpy",
        "memset",
        "runtime",
        "cpu_ops",
        "user_annotations",
        "gpu_user_annotations",
        "flows",
        "profiler_steps",
        "salvaged",
        "warnings",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    // INVENTORY.csv: 33 events, 6 kernels, 6 memcpy, 6 memset, 5 runtime, rank 1, 2 steps.
    assert_eq!(v["events"], 33);
    assert_eq!(v["kernels"]["count"], 6);
    assert_eq!(v["memcpy"]["count"], 6);
    assert_eq!(v["memset"]["count"], 6);
    assert_eq!(v["runtime"]["count"], 5);
    assert_eq!(v["rank"], 1);
    assert_eq!(v["profiler_steps"], 2);
    assert_eq!(v["salvaged"], false);
    // sha256 of the file as stored, checked independently of the parser.
    use sha2::Digest;
    let bytes = std::fs::read(testdata("hta/trace_compare/base/base.json.gz")).expect("read");
    let want: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v["sha256"], want.as_str());
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn a_directory_expands_to_one_line_per_rank() {
    let out = kineto()
        .args(["summary", "--json"])
        .arg(testdata("param/dlrm_kineto"))
        .output()
        .expect("run");
    assert!(out.status.success());
    let ranks: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["rank"]
                .as_u64()
                .expect("rank")
        })
        .collect();
    assert_eq!(ranks, (0..8).collect::<Vec<u64>>());
}

#[test]
fn a_bad_file_fails_with_its_name_and_offset_and_the_others_still_print() {
    let dir = tempfile::tempdir().expect("tmp");
    let bad = dir.path().join("cut.json");
    std::fs::write(
        &bad,
        br#"{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X", "ts"#,
    )
    .expect("write");
    let out = kineto()
        .args(["summary", "--json"])
        .arg(&bad)
        .arg(demo(0))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut.json") && err.contains("truncated at byte 49"),
        "{err}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);

    let out = kineto()
        .args(["summary", "--json", "--salvage"])
        .arg(&bad)
        .output()
        .expect("run");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["salvaged"], true);
    assert_eq!(v["events"], 1);
    assert_eq!(v["salvage"]["cut_offset"], 49);
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn readable_output_names_the_numbers() {
    let out = kineto()
        .arg("summary")
        .arg(testdata("hta/triton_example/triton_example.json.gz"))
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("kernels") && text.contains("driver 1"),
        "{text}"
    );
}

/// `kineto … | head`: the reader goes away after one line; the program ends quietly with status 0.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = kineto()
        .args(["kernels", "--csv"])
        .arg(demo(0))
        .arg(demo(1))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read");
    assert!(first.starts_with("rank,kind,index,"), "{first}");
    // The reader is dropped here: the rest of the output meets a closed pipe.
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `kineto kernels --json | head -c N`: the reader goes away after N bytes. The write that meets the closed
/// pipe is then mostly serde_json's (a name, a float), whose error must still read as a closed pipe: status
/// 0, nothing on stderr about the pipe. Cut at several places, since which write flushes the buffer into the
/// closed pipe depends on how far the reader got.
#[test]
fn a_closed_pipe_under_json_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    for cut in [1usize, 70_000, 140_000, 210_000, 280_000, 350_000] {
        let mut child = kineto()
            .args(["kernels", "--json"])
            .arg(demo(0))
            .arg(demo(1))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut buf = vec![0u8; cut];
        stdout
            .read_exact(&mut buf)
            .expect("the listing is longer than the cut");
        drop(stdout);
        let out = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "cut at {cut}: {err}");
        assert!(
            !err.contains("Broken pipe") && !err.contains("panicked"),
            "cut at {cut}: {err}"
        );
    }
}

/// `kineto … > /dev/full`: one message naming stdout, status 1, no panic.
#[test]
fn a_full_disk_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // not on this system
    };
    for cmd in ["summary", "steps", "kernels", "budget"] {
        let out = kineto()
            .arg(cmd)
            .arg(demo(0))
            .stdout(full.try_clone().expect("dup"))
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("kineto: writing to stdout: "), "{cmd}: {err}");
        assert!(!err.contains("panicked"), "{cmd}: {err}");
    }
}

/// A kernel name with terminal control sequences is escaped in tables and kept exact in JSON.
#[test]
fn control_characters_are_escaped_in_tables() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("ctl.json");
    std::fs::write(
        &path,
        r#"{"traceEvents": [
          {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 1, "args": {"correlation": 1}},
          {"ph": "X", "cat": "kernel", "name": "evil\u001b[2J\u0007kernel", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}
        ]}"#,
    )
    .expect("write");
    for cmd in ["kernels", "budget"] {
        let out = kineto().arg(cmd).arg(&path).output().expect("run");
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).expect("utf8");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{cmd}: {text}"
        );
        assert!(text.contains("evil\\u{1b}[2J\\u{7}kernel"), "{cmd}: {text}");
    }
    let out = kineto()
        .args(["kernels", "--json"])
        .arg(&path)
        .output()
        .expect("run");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["name"], "evil\u{1b}[2J\u{7}kernel");
}

/// `--csv` shows control characters (ESC, BEL, backspace, NUL, line ends), bidirectional overrides and line
/// separators from a kernel name as `\u{…}` escapes, stays valid RFC 4180 (one record per line, the cell
/// with a comma quoted), and guards a name a spreadsheet would run as a formula with a leading `'`; the
/// text table escapes the overrides and separators too; JSON keeps the name exact.
#[test]
fn csv_and_tables_escape_hostile_names() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("hostile.json");
    std::fs::write(
        &path,
        r#"{"traceEvents": [
          {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 1, "args": {"correlation": 1}},
          {"ph": "X", "cat": "kernel", "name": "\u202ec\u2066\u2028d,a\u001b[2J\u0007\b\u0000\r\nb", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 30, "dur": 1, "args": {"correlation": 2}},
          {"ph": "X", "cat": "kernel", "name": "=HYPERLINK(\"http://x\")", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 2}}
        ]}"#,
    )
    .expect("write");
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
    };
    let out = kineto()
        .args(["kernels", "--csv"])
        .arg(&path)
        .output()
        .expect("run");
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).expect("utf8");
    assert!(!csv.chars().any(unsafe_char), "{csv:?}");
    let rows: Vec<&str> = csv.lines().collect();
    // The header and one line per kernel: the escaped line ends start no record.
    assert_eq!(rows.len(), 3, "{csv}");
    // The name's cell, its escapes written out by hand, quoted for its comma.
    assert!(
        rows[1].contains(r#","\u{202e}c\u{2066}\u{2028}d,a\u{1b}[2J\u{7}\u{8}\u{0}\u{d}\u{a}b","#),
        "{}",
        rows[1]
    );
    // A formula is text: `'` first, the cell quoted for its `"`, each doubled.
    assert!(
        rows[2].contains(r#","'=HYPERLINK(""http://x"")","#),
        "{}",
        rows[2]
    );
    let table = kineto().arg("kernels").arg(&path).output().expect("run");
    let table = String::from_utf8(table.stdout).expect("utf8");
    assert!(!table.chars().any(unsafe_char), "{table:?}");
    assert!(
        table.contains(r"\u{202e}c\u{2066}\u{2028}d,a\u{1b}"),
        "{table}"
    );
    let out = kineto()
        .args(["kernels", "--json"])
        .arg(&path)
        .output()
        .expect("run");
    let first: serde_json::Value = serde_json::from_str(
        String::from_utf8(out.stdout)
            .expect("utf8")
            .lines()
            .next()
            .expect("a line"),
    )
    .expect("json");
    assert_eq!(
        first["name"],
        "\u{202e}c\u{2066}\u{2028}d,a\u{1b}[2J\u{7}\u{8}\u{0}\r\nb"
    );
}

/// Copies per direction in `summary --json`, against the trace's six `gpu_memcpy` events read with
/// Python's json: DtoD 1802240 B in 9 µs; HtoD 4 + 3895296 + 4 + 3895296 + 4 = 7790604 B in
/// 3 + 476 + 3 + 740 + 4 = 1226 µs.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn summary_reports_copies_per_direction() {
    let out = kineto()
        .args(["summary", "--json"])
        .arg(testdata("hta/trace_compare/base/base.json.gz"))
        .output()
        .expect("run");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let k = &v["memcpy"]["by_kind"];
    assert_eq!(k.as_object().map(|o| o.len()), Some(2), "{k}");
    assert_eq!(
        (
            k["DtoD"]["count"].as_u64(),
            k["DtoD"]["bytes"].as_u64(),
            k["DtoD"]["sum_ns"].as_i64()
        ),
        (Some(1), Some(1_802_240), Some(9_000))
    );
    assert_eq!(
        (
            k["HtoD"]["count"].as_u64(),
            k["HtoD"]["bytes"].as_u64(),
            k["HtoD"]["sum_ns"].as_i64()
        ),
        (Some(5), Some(7_790_604), Some(1_226_000))
    );
    // GB/s = bytes / ns.
    assert_eq!(k["DtoD"]["gbps"].as_f64(), Some(1_802_240.0 / 9_000.0));
    assert_eq!(k["HtoD"]["gbps"].as_f64(), Some(7_790_604.0 / 1_226_000.0));
    assert_eq!(v["memcpy"]["sum_us"].as_f64(), Some(1235.0));
}
