//! Output flags against inputs and against each other, a result name taken during the run, `--help` under
//! the stdout policy, and control characters from a recording escaped in the readable summary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::fs;
use std::path::Path;
use std::process::{Output, Stdio};

mod common;
use common::stdout_policy::{to_a_closed_pipe, to_a_full_disk};
use common::{fixture, gpu_monitor, text};

/// `gpu-monitor ARGS` run in `dir` with nothing on stdin.
fn monitor(args: &[&str], dir: &Path) -> Output {
    gpu_monitor()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn no_output_replaces_the_recording_being_replayed_by_any_name() {
    let d = tempfile::tempdir().unwrap();
    fs::copy(fixture("replay.jsonl"), d.path().join("rec.jsonl")).unwrap();
    std::os::unix::fs::symlink("rec.jsonl", d.path().join("link.jsonl")).unwrap();
    fs::hard_link(d.path().join("rec.jsonl"), d.path().join("hard.jsonl")).unwrap();
    let before = fs::read(d.path().join("rec.jsonl")).unwrap();
    for name in ["rec.jsonl", "./rec.jsonl", "link.jsonl", "hard.jsonl"] {
        for flag in ["--output", "--html"] {
            let out = monitor(
                &[
                    "--backend",
                    "replay:rec.jsonl",
                    "-q",
                    "--overwrite",
                    flag,
                    name,
                ],
                d.path(),
            );
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{flag} {name}: {err}");
            assert!(
                err.contains("a result never replaces what the run reads"),
                "{flag} {name}: {err}"
            );
            assert_eq!(
                fs::read(d.path().join("rec.jsonl")).unwrap(),
                before,
                "{flag} {name}"
            );
        }
    }
}

#[test]
fn one_file_for_two_outputs_is_said_as_such() {
    let d = tempfile::tempdir().unwrap();
    let replay = format!("replay:{}", fixture("replay.jsonl").display());
    for extra in [&[][..], &["--overwrite"]] {
        let mut args = vec![
            "--backend",
            &replay,
            "-q",
            "--output",
            "s.csv",
            "--html",
            "s.csv",
        ];
        args.extend_from_slice(extra);
        let out = monitor(&args, d.path());
        let err = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0));
        assert!(
            err.contains("already claimed by this run for another result")
                && !err.contains("another run"),
            "{err}"
        );
    }
    assert!(!d.path().join("s.csv").exists());
}

#[test]
fn a_dangling_symlink_is_not_called_an_existing_file() {
    let d = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("gone/s.csv", d.path().join("s.csv")).unwrap();
    let replay = format!("replay:{}", fixture("replay.jsonl").display());
    let out = monitor(
        &[
            "--backend",
            &replay,
            "-q",
            "--overwrite",
            "--output",
            "s.csv",
        ],
        d.path(),
    );
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        err.contains("symbolic link to gone/s.csv, which does not exist")
            && !err.contains("pass --overwrite"),
        "{err}"
    );
}

#[test]
fn a_sample_file_name_taken_by_the_command_keeps_both_files() {
    let d = tempfile::tempdir().unwrap();
    let replay = format!("replay:{}", fixture("replay-ours.csv").display());
    let out = monitor(
        &[
            "--backend",
            &replay,
            "--output",
            "s.csv",
            "--",
            "sh",
            "-c",
            "echo theirs > s.csv",
        ],
        d.path(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        fs::read_to_string(d.path().join("s.csv")).unwrap(),
        "theirs\n"
    );
    let ours =
        fs::read_to_string(d.path().join("s.1.csv")).expect("the samples were written beside");
    assert!(ours.starts_with("# t_s,index"), "{ours}");
    assert!(
        err.contains("s.csv was created by someone else during the run and is kept")
            && err.contains("s.1.csv"),
        "{err}"
    );
    // The HTML page likewise.
    let out = monitor(
        &[
            "--backend",
            &replay,
            "-q",
            "--html",
            "m.html",
            "--",
            "sh",
            "-c",
            "echo theirs > m.html",
        ],
        d.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        fs::read_to_string(d.path().join("m.html")).unwrap(),
        "theirs\n"
    );
    assert!(
        fs::read_to_string(d.path().join("m.1.html"))
            .unwrap()
            .contains("<html")
    );
}

#[test]
fn help_and_version_on_a_full_disk_fail_with_one_message() {
    for args in [&["--help"][..], &["--version"]] {
        let full = to_a_full_disk(gpu_monitor().args(args));
        let err = text(&full.stderr);
        assert_eq!(full.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err.trim_end(),
            "gpu-monitor: writing to stdout: No space left on device (os error 28)"
        );
        let closed = to_a_closed_pipe(gpu_monitor().args(args));
        assert_eq!(closed.status.code(), Some(0));
        assert!(closed.stderr.is_empty());
    }
}

#[test]
fn control_characters_in_a_recording_are_escaped_in_the_readable_summary() {
    let d = tempfile::tempdir().unwrap();
    let rec = fs::read_to_string(fixture("replay.jsonl"))
        .unwrap()
        .replace("GPU-rec-0001", "GPU-\\u001b[2J\\u001b]0;owned\\u0007");
    fs::write(d.path().join("rec.jsonl"), rec).unwrap();
    let out = monitor(&["--backend", "replay:rec.jsonl", "-q"], d.path());
    let err = text(&out.stderr);
    assert!(err.contains("GPU-\\u{1b}[2J"), "{err}");
    assert!(
        !err.chars().any(|c| c.is_control() && c != '\n'),
        "a raw control character reached the terminal: {err:?}"
    );
}
