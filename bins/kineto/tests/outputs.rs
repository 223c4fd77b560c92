//! Output flags against inputs: `--overwrite` replaces an earlier result, never a file the same run reads
//! (a trace, a file inside a directory of ranks, a rule file, a model config), whatever name it is given;
//! and `--help`/`--version` follow the stdout policy.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::fs;
use std::path::Path;
use std::process::Output;

mod common;
use common::stdout_policy::{to_a_closed_pipe, to_a_full_disk};
use common::{kineto, root};

// Two ranks of the generated demo window: what the traces hold does not matter here.
const TRACE: &str = "testdata/windows/demo/prof-short-b1.decode.rank0.pt.trace.json.gz";
const OTHER: &str = "testdata/windows/demo/prof-short-b1.decode.rank1.pt.trace.json.gz";
const MODEL: &str = "testdata/models/gpt-oss-20b.json";

/// `kineto ARGS` run in `dir`.
fn kineto_in(args: &[&std::ffi::OsStr], dir: &Path) -> Output {
    kineto().args(args).current_dir(dir).output().unwrap()
}

/// A scratch directory holding copies of the inputs: `ranks/t.json.gz`, `other.json.gz`, `model.json`,
/// `rules.toml`, and other names for the trace (a symlink, a hard link).
fn scratch() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir(d.path().join("ranks")).unwrap();
    fs::copy(root().join(TRACE), d.path().join("ranks/t.json.gz")).unwrap();
    fs::copy(root().join(OTHER), d.path().join("other.json.gz")).unwrap();
    fs::copy(root().join(MODEL), d.path().join("model.json")).unwrap();
    fs::copy(
        root().join("crates/kineto-trace/rules/default.toml"),
        d.path().join("rules.toml"),
    )
    .unwrap();
    std::os::unix::fs::symlink("ranks/t.json.gz", d.path().join("link.json.gz")).unwrap();
    fs::hard_link(
        d.path().join("ranks/t.json.gz"),
        d.path().join("hard.json.gz"),
    )
    .unwrap();
    d
}

fn contents(d: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for rel in [
        "ranks/t.json.gz",
        "other.json.gz",
        "model.json",
        "rules.toml",
    ] {
        v.push((rel.to_owned(), fs::read(d.join(rel)).unwrap()));
    }
    v
}

#[test]
fn no_output_flag_replaces_an_input_of_the_same_run_by_any_name() {
    let d = scratch();
    let before = contents(d.path());
    let os = |s: &str| std::ffi::OsString::from(s);
    // (the command, the output named as one of the inputs)
    let trace_names = [
        "ranks/t.json.gz",
        "./ranks/t.json.gz",
        "link.json.gz",
        "hard.json.gz",
    ];
    let mut cases: Vec<Vec<std::ffi::OsString>> = Vec::new();
    for out in trace_names {
        cases.push(vec![
            os("report"),
            os("--overwrite"),
            os("--html"),
            os(out),
            os("ranks/t.json.gz"),
        ]);
        // The trace as a file of a directory of ranks.
        cases.push(vec![
            os("report"),
            os("--overwrite"),
            os("--html"),
            os(out),
            os("ranks"),
        ]);
        cases.push(vec![
            os("roofline"),
            os("--overwrite"),
            os("--model"),
            os("model.json"),
            os("--html"),
            os(out),
            os("ranks/t.json.gz"),
        ]);
        cases.push(vec![
            os("diff"),
            os("--overwrite"),
            os("--html"),
            os(out),
            os("ranks/t.json.gz"),
            os("other.json.gz"),
        ]);
        cases.push(vec![
            os("diff"),
            os("--overwrite"),
            os("--html"),
            os(out),
            os("other.json.gz"),
            os("ranks"),
        ]);
    }
    // The small inputs: a model config, a rule file.
    cases.push(vec![
        os("roofline"),
        os("--overwrite"),
        os("--model"),
        os("model.json"),
        os("--html"),
        os("model.json"),
        os("ranks/t.json.gz"),
    ]);
    cases.push(vec![
        os("report"),
        os("--overwrite"),
        os("--model"),
        os("model.json"),
        os("--html"),
        os("model.json"),
        os("ranks/t.json.gz"),
    ]);
    cases.push(vec![
        os("report"),
        os("--overwrite"),
        os("--rules"),
        os("rules.toml"),
        os("--html"),
        os("rules.toml"),
        os("ranks/t.json.gz"),
    ]);
    for args in cases {
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let out = kineto_in(&refs, d.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{args:?} succeeded: it replaced its own input\n{err}"
        );
        assert!(
            err.contains("a result never replaces what the run reads"),
            "{args:?}: {err}"
        );
        assert_eq!(contents(d.path()), before, "{args:?} changed an input");
    }
    // The rule is about identity, not about refusing --overwrite: a copy is another file.
    fs::copy(d.path().join("ranks/t.json.gz"), d.path().join("copy.html")).unwrap();
    let out = kineto_in(
        &[
            "report".as_ref(),
            "--overwrite".as_ref(),
            "--html".as_ref(),
            "copy.html".as_ref(),
            "ranks/t.json.gz".as_ref(),
        ],
        d.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        fs::read_to_string(d.path().join("copy.html"))
            .unwrap()
            .contains("<html")
    );
}

#[test]
fn a_dangling_symlink_is_named_as_such_not_as_an_existing_file() {
    let d = scratch();
    std::os::unix::fs::symlink("nowhere/page.html", d.path().join("page.html")).unwrap();
    for overwrite in [false, true] {
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["report".as_ref(), "--html".as_ref(), "page.html".as_ref()];
        if overwrite {
            args.push("--overwrite".as_ref());
        }
        args.push("ranks/t.json.gz".as_ref());
        let out = kineto_in(&args, d.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains("is a symbolic link to nowhere/page.html, which does not exist")
                && !err.contains("pass --overwrite"),
            "{err}"
        );
    }
}

/// `kineto ARGS > /dev/full`, and `kineto ARGS | (close at once)`.
fn to_full_and_to_a_closed_pipe(args: &[&str]) -> (Output, Output) {
    (
        to_a_full_disk(kineto().args(args)),
        to_a_closed_pipe(kineto().args(args)),
    )
}

#[test]
fn help_and_version_on_a_full_disk_fail_with_one_message_and_a_closed_pipe_is_quiet() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["-h"],
        &["budget", "--help"],
        &["help"],
    ] {
        let (full, closed) = to_full_and_to_a_closed_pipe(args);
        let err = String::from_utf8_lossy(&full.stderr);
        assert_eq!(full.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err.trim_end(),
            "kineto: writing to stdout: No space left on device (os error 28)",
            "{args:?}"
        );
        assert_eq!(closed.status.code(), Some(0), "{args:?}");
        assert!(
            closed.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&closed.stderr)
        );
    }
    // A usage error is still clap's message on stderr and exit 2.
    let bad = kineto().arg("--no-such-flag").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--no-such-flag"));
}
