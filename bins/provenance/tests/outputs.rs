//! Output flags against inputs, a record name taken by the wrapped command, `--field` numbers kept exactly,
//! `--help` under the stdout policy, and control characters escaped in `show`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Output, Stdio};

mod common;
use common::stdout_policy::{to_a_closed_pipe, to_a_full_disk};
use common::{provenance_bin, provenance_in, text};

/// `provenance ARGS` in `dir` with no real GPU tools in reach ([`provenance_in`]), nothing on stdin.
fn provenance(dir: &Path, args: &[&str]) -> Output {
    provenance_in(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

const RUN: [&str; 5] = ["run", "--backend", "nvidia-smi", "--gpus", "all"];

fn run(dir: &Path, extra: &[&str]) -> Output {
    let mut args = RUN.to_vec();
    args.extend_from_slice(extra);
    provenance(dir, &args)
}

#[test]
fn show_never_replaces_the_record_it_shows_by_any_name() {
    let d = tempfile::tempdir().unwrap();
    let o = run(d.path(), &["-o", "r.json", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    std::os::unix::fs::symlink("r.json", d.path().join("link.json")).unwrap();
    fs::hard_link(d.path().join("r.json"), d.path().join("hard.json")).unwrap();
    let before = fs::read(d.path().join("r.json")).unwrap();
    for name in ["r.json", "./r.json", "link.json", "hard.json"] {
        let o = provenance(d.path(), &["show", "r.json", "--overwrite", "--html", name]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{name}: {err}");
        assert!(
            err.contains("a result never replaces what the run reads"),
            "{name}: {err}"
        );
        assert_eq!(fs::read(d.path().join("r.json")).unwrap(), before, "{name}");
    }
}

#[test]
fn run_never_writes_its_record_over_the_recording_it_replays() {
    let d = tempfile::tempdir().unwrap();
    let rec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/gpu-monitor/tests/fixtures/replay.jsonl");
    fs::copy(rec, d.path().join("rec.jsonl")).unwrap();
    let before = fs::read(d.path().join("rec.jsonl")).unwrap();
    let o = provenance(
        d.path(),
        &[
            "run",
            "--backend",
            "replay:rec.jsonl",
            "--overwrite",
            "-o",
            "rec.jsonl",
            "--",
            "true",
        ],
    );
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("a result never replaces what the run reads"),
        "{err}"
    );
    assert_eq!(fs::read(d.path().join("rec.jsonl")).unwrap(), before);
}

#[test]
fn a_record_name_taken_by_the_command_keeps_both_files() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &[
            "-o",
            "rec.json",
            "--",
            "sh",
            "-c",
            "echo theirs > rec.json; exit 4",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(4),
        "the command's status still: {err}"
    );
    assert_eq!(
        fs::read_to_string(d.path().join("rec.json")).unwrap(),
        "theirs\n"
    );
    let v: Value = serde_json::from_str(
        &fs::read_to_string(d.path().join("rec.1.json")).expect("the record beside"),
    )
    .unwrap();
    assert_eq!(v["command"]["exit_code"], 4);
    assert!(
        err.contains("rec.json was created by someone else during the run and is kept")
            && err.contains("rec.1.json"),
        "{err}"
    );
}

#[test]
fn field_numbers_are_kept_exactly_never_rounded() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &[
            "-o",
            "r.json",
            "-f",
            "id=123456789012345678901234567890",
            "-f",
            "big=18446744073709551615",
            "-f",
            "neg=-9223372036854775808",
            "-f",
            "x=0.1",
            "-f",
            "precise=0.30000000000000001",
            "-f",
            "nested={\"n\": 98765432109876543210}",
            "-f",
            "ok={\"n\": 2, \"s\": \"a\"}",
            "--",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let raw = fs::read_to_string(d.path().join("r.json")).unwrap();
    let v: Value = serde_json::from_str(&raw).unwrap();
    // User fields are top-level keys of the record.
    let f = &v;
    // Beyond what JSON numbers hold exactly here: kept as the text given.
    assert_eq!(f["id"], "123456789012345678901234567890");
    assert_eq!(f["precise"], "0.30000000000000001");
    assert_eq!(f["nested"], "{\"n\": 98765432109876543210}");
    // Held exactly: kept as numbers.
    assert_eq!(f["big"], Value::from(u64::MAX));
    assert_eq!(f["neg"], Value::from(i64::MIN));
    assert_eq!(f["x"], 0.1);
    assert_eq!(f["ok"]["n"], 2);
    assert!(
        !raw.contains("e+29") && !raw.contains("1.2345678901234568"),
        "{raw}"
    );
}

#[test]
fn show_escapes_control_characters_from_the_record() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &["-o", "r.json", "--", "true", "\u{1b}[2J", "a\nb"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let mut v: Value =
        serde_json::from_str(&fs::read_to_string(d.path().join("r.json")).unwrap()).unwrap();
    v["host"]["hostname"] = "box\u{1b}]0;owned\u{7}".into();
    v["gpus"] =
        serde_json::json!([{"index": 0, "name": "H100\r\u{1b}[31mFAKE", "uuid": "GPU-\u{9b}x"}]);
    fs::write(d.path().join("h.json"), serde_json::to_string(&v).unwrap()).unwrap();
    let o = provenance(d.path(), &["show", "h.json"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        !out.chars().any(|c| c.is_control() && c != '\n'),
        "a raw control character reached the terminal: {out:?}"
    );
    assert!(
        out.contains("\\u{1b}[2J") && out.contains("a\\u{a}b"),
        "{out}"
    );
    assert!(out.contains("H100\\u{d}\\u{1b}[31mFAKE"), "{out}");
}

#[test]
fn help_and_version_on_a_full_disk_fail_with_one_message() {
    for args in [&["--help"][..], &["--version"], &["run", "--help"]] {
        let full = to_a_full_disk(provenance_bin().args(args));
        let err = text(&full.stderr);
        assert_eq!(full.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err.trim_end(),
            "provenance: writing to stdout: No space left on device (os error 28)"
        );
        let closed = to_a_closed_pipe(provenance_bin().args(args));
        assert_eq!(closed.status.code(), Some(0));
        assert!(closed.stderr.is_empty());
    }
}

#[test]
fn an_interval_beyond_a_minute_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    for ms in ["60001", "18446744073709551615", "0"] {
        let o = run(
            d.path(),
            &["--interval-ms", ms, "-o", "r.json", "--", "true"],
        );
        assert_eq!(o.status.code(), Some(2), "{ms}: {}", text(&o.stderr));
        assert!(!d.path().join("r.json").exists());
    }
}
