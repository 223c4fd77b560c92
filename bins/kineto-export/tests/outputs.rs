//! `--parquet DIR` against the inputs: a table file that is one of the traces being exported (a hard link or
//! a symlink to it) is never replaced, `--overwrite` or not; `--help` under the stdout policy.
#![allow(clippy::unwrap_used)] // Test helpers, outside `#[test]` functions.

use std::fs;
use std::path::Path;

mod common;
use common::kineto_export;
use common::stdout_policy::{to_a_closed_pipe, to_a_full_disk};

// A rank of the generated demo window: what it holds does not matter here.
const TRACE: &str = "../../testdata/windows/demo/prof-short-b1.decode.rank0.pt.trace.json.gz";

#[test]
fn a_table_file_that_is_an_input_trace_is_never_replaced() {
    for link in ["hard", "symlink"] {
        let d = tempfile::tempdir().unwrap();
        let trace = d.path().join("t.json.gz");
        fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(TRACE), &trace).unwrap();
        let before = fs::read(&trace).unwrap();
        // Where the export of `t.json.gz` (rank 0) writes its gpu_ops table.
        let table = d.path().join("ds/gpu_ops/rank=0/t.parquet");
        fs::create_dir_all(table.parent().unwrap()).unwrap();
        if link == "hard" {
            fs::hard_link(&trace, &table).unwrap();
        } else {
            std::os::unix::fs::symlink(&trace, &table).unwrap();
        }
        let o = kineto_export()
            .args(["--overwrite", "--parquet"])
            .arg(d.path().join("ds"))
            .arg(&trace)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{link}: {err}");
        assert!(
            err.contains("a result never replaces what the run reads"),
            "{link}: {err}"
        );
        assert_eq!(fs::read(&trace).unwrap(), before, "{link}");
    }
}

#[test]
fn help_on_a_full_disk_fails_with_one_message() {
    let full = to_a_full_disk(kineto_export().arg("--help"));
    assert_eq!(full.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&full.stderr).trim_end(),
        "kineto-export: writing to stdout: No space left on device (os error 28)"
    );
    let closed = to_a_closed_pipe(kineto_export().arg("--version"));
    assert_eq!(closed.status.code(), Some(0));
}
