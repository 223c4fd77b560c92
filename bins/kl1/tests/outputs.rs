//! Output flags against inputs (`--overwrite` never replaces the window's manifest, one of its traces, the
//! spec or the rule file, by any name), two outputs on one file, `--help`/`--version` under the stdout
//! policy, and control characters from a manifest escaped on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::stdout_policy::{to_a_closed_pipe, to_a_full_disk};
use common::{demo, kl1_bandwidth};

/// `kl1-bandwidth ARGS` run in `dir`.
fn bandwidth(args: &[&str], dir: &Path) -> Output {
    kl1_bandwidth()
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A copy of the demo window as `w/`, with `spec.toml` and `rules.toml` beside it.
fn scratch() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let w = d.path().join("w");
    fs::create_dir(&w).unwrap();
    for e in fs::read_dir(demo()).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), w.join(e.file_name())).unwrap();
    }
    let root = common::root();
    let spec = fs::read_dir(root.join("crates/kl1-shapes/specs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "toml") && !p.ends_with("gpus.toml"))
        .unwrap();
    fs::copy(spec, d.path().join("spec.toml")).unwrap();
    fs::copy(
        root.join("crates/kl1-bandwidth/rules/kl1.toml"),
        d.path().join("rules.toml"),
    )
    .unwrap();
    d
}

fn snapshot(d: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(d.join("w"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let b = fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    for f in ["spec.toml", "rules.toml"] {
        v.push((d.join(f), fs::read(d.join(f)).unwrap()));
    }
    v.sort();
    v
}

#[test]
fn no_output_replaces_the_manifest_a_trace_the_spec_or_the_rules_by_any_name() {
    let d = scratch();
    let trace = "w/prof-32k-b4.decode.rank0.pt.trace.json.gz";
    std::os::unix::fs::symlink("w/traces-manifest.json", d.path().join("m-link.json")).unwrap();
    fs::hard_link(d.path().join(trace), d.path().join("t-hard.json.gz")).unwrap();
    let before = snapshot(d.path());
    let victims = [
        "w/traces-manifest.json",
        "./w/traces-manifest.json",
        "m-link.json",
        trace,
        "t-hard.json.gz",
    ];
    let mut cases: Vec<Vec<&str>> = Vec::new();
    for v in victims {
        cases.push(vec!["--window", "w", "--overwrite", "--output", v]);
        cases.push(vec![
            "--window",
            "w",
            "--overwrite",
            "--output",
            "out.json",
            "--html",
            v,
        ]);
    }
    cases.push(vec![
        "--window",
        "w",
        "--overwrite",
        "--spec",
        "spec.toml",
        "--output",
        "spec.toml",
    ]);
    cases.push(vec![
        "--window",
        "w",
        "--overwrite",
        "--rules",
        "rules.toml",
        "--output",
        "o.json",
        "--html",
        "rules.toml",
    ]);
    for args in cases {
        let o = bandwidth(&args, d.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded\n{err}");
        assert!(
            err.contains("a result never replaces what the run reads"),
            "{args:?}: {err}"
        );
        assert_eq!(snapshot(d.path()), before, "{args:?} changed an input");
    }
}

#[test]
fn one_file_for_two_outputs_is_said_as_such() {
    let d = scratch();
    let o = bandwidth(
        &["--window", "w", "--output", "r.json", "--html", "r.json"],
        d.path(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("already claimed by this run for another result")
            && !err.contains("another run"),
        "{err}"
    );
    assert!(!d.path().join("r.json").exists());
    let o = bandwidth(
        &[
            "--window",
            "w",
            "--overwrite",
            "--output",
            "r.json",
            "--html",
            "./r.json",
        ],
        d.path(),
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("already claimed by this run"));
}

#[test]
fn control_characters_from_the_manifest_and_the_window_name_are_escaped() {
    let d = scratch();
    let hostile = d.path().join("w\u{1b}[2J");
    fs::rename(d.path().join("w"), &hostile).unwrap();
    // An unknown capture is listed by name: give it one that would clear the screen.
    let mpath = hostile.join("traces-manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&mpath).unwrap()).unwrap();
    let mut extra = m[0].clone();
    extra["cell"] = "evil\u{1b}]0;title\u{7}".into();
    extra["capture"] = "cap\rture".into();
    m.as_array_mut().unwrap().push(extra);
    fs::write(&mpath, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let o = bandwidth(&["--window", "w\u{1b}[2J", "--output", "r.json"], d.path());
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    for text in [&out, &err] {
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "a raw control character reached the terminal: {text:?}"
        );
    }
    assert!(out.contains("window w\\u{1b}[2J"), "{out}");
    assert!(
        out.contains("evil\\u{1b}]0;title\\u{7}:cap\\u{d}ture"),
        "{out}"
    );
}

#[test]
fn help_and_version_on_a_full_disk_fail_with_one_message() {
    for args in [&["--help"][..], &["--version"], &["diff", "--help"]] {
        let full = to_a_full_disk(kl1_bandwidth().args(args));
        let err = String::from_utf8_lossy(&full.stderr);
        assert_eq!(full.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err.trim_end(),
            "kl1-bandwidth: writing to stdout: No space left on device (os error 28)"
        );
        let closed = to_a_closed_pipe(kl1_bandwidth().args(args));
        assert_eq!(closed.status.code(), Some(0), "{args:?}");
        assert!(closed.stderr.is_empty());
    }
}
