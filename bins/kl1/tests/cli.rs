//! The command as a user runs it: the README's first command on the demo window, the refusal to
//! overwrite, errors on stderr with a failing exit status, and the file and stdout rules of
//! issue 15 (items 1, 2, 4, 5, 8, 11) on real special files.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::stdout_policy::to_a_full_disk;
use common::tool_json::embedded_json;
use common::{demo, kl1_bandwidth, text};

/// `kl1-bandwidth ARGS`, as printed.
fn bandwidth(args: &[&str]) -> Output {
    kl1_bandwidth()
        .args(args)
        .output()
        .expect("run kl1-bandwidth")
}

#[test]
fn the_readme_command_analyses_the_demo_window() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("kl1.json");
    let demo = demo();
    let o = bandwidth(&[
        "--window",
        demo.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("window demo"), "{stdout}");
    assert!(
        stdout.contains("prof-150k-b1:prefill-late (prefill)"),
        "{stdout}"
    );
    assert!(stdout.contains("sMoE if uniform"), "{stdout}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("read")).expect("json");
    assert_eq!(v["type"], "kl1-bandwidth");
    let caps = v["windows"]["demo"].as_object().expect("demo window");
    assert_eq!(caps.len(), 6);
    let r0 = &v["windows"]["demo"]["prof-32k-b4:decode"]["ranks"]["0"];
    assert_eq!(v["windows"]["demo"]["prof-32k-b4:decode"]["kind"], "decode");
    assert_eq!(r0["file_sha256"].as_str().map(str::len), Some(64));
    assert!(
        r0["mean"]["dense.all.gbps"]
            .as_f64()
            .is_some_and(|g| g > 100.0 && g < 273.0)
    );
    assert_eq!(
        r0["per_step"].as_array().map(Vec::len),
        r0["steps"].as_u64().map(|n| n as usize)
    );
    assert!(
        v["constants"]["field_labels"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
}

#[test]
fn an_existing_output_is_refused_unless_overwrite() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("kl1.json");
    std::fs::write(&out, "keep").expect("write");
    let demo = demo();
    let args = [
        "--window",
        demo.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ];
    let o = bandwidth(&args);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("exists; pass --overwrite"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "keep");
    let mut args = args.to_vec();
    args.extend(["--overwrite", "--quiet"]);
    let o = bandwidth(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    assert!(
        std::fs::read_to_string(&out)
            .expect("read")
            .contains("\"kl1-bandwidth\"")
    );
}

#[test]
fn errors_name_the_window_capture_rank_and_fail() {
    let tmp = tempfile::tempdir().expect("tmp");
    let win = tmp.path().join("w1");
    let mut plan = kl1_window_gen::Plan::demo();
    plan.gzip = false;
    plan.jitter = 0.0;
    let truth = kl1_window_gen::write_window(
        &kl1_shapes::Spec::builtin(),
        &kl1_bandwidth::Kl1Rules::builtin(),
        &plan,
        &win,
        false,
    )
    .expect("generate");
    assert_eq!(truth.traces.len(), 12);
    // A wrong sha256 in the manifest.
    let mpath = win.join("traces-manifest.json");
    let mut rows: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&mpath).expect("read")).expect("json");
    rows[3]["sha256"] = Value::String("a".repeat(64));
    std::fs::write(&mpath, serde_json::to_string(&rows).expect("json")).expect("write");
    let out = tmp.path().join("o.json");
    let o = bandwidth(&[
        "--window",
        win.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains("window w1") && e.contains("row 3") && e.contains("prof-32k-b1:decode rank 1"),
        "{e}"
    );
    assert!(!out.exists(), "no output is written on an error");
}

/// The OS's message is printed once: in the error, not again as a "caused by" line.
#[test]
fn an_error_says_its_cause_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("o.json");
    let missing = tmp.path().join("no-such-window");
    let o = bandwidth(&[
        "--window",
        missing.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(e.contains("no-such-window"), "{e}");
    assert_eq!(e.matches("No such file").count(), 1, "{e}");
    assert!(!e.contains("caused by"), "{e}");
}

#[test]
fn bad_options_fail_with_a_message() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("o.json");
    let demo = demo();
    let o = bandwidth(&[
        "--window",
        demo.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
        "--step-pattern",
        r"kl1\.step#(?P<step>\d+)",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no named group `phase`"),
        "{}",
        text(&o.stderr)
    );
}

// ---- issue 15: outputs and inputs -----------------------------------------------------------------

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo")
        .arg(p)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", p.display());
}

/// Runs kl1-bandwidth, killing it (and failing) if it has not finished within 60 s: a hang is a failure,
/// not a stuck test run.
fn bandwidth_within_60s(args: &[&str]) -> Output {
    let mut child = kl1_bandwidth()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("kl1-bandwidth {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Item 1: `--output /dev/null --overwrite` (or a FIFO) is refused before the analysis, and left as it is.
#[cfg(unix)]
#[test]
fn a_device_or_fifo_output_is_refused_even_with_overwrite() {
    use std::os::unix::fs::FileTypeExt;
    let tmp = tempfile::tempdir().expect("tmp");
    let fifo = tmp.path().join("out.json");
    mkfifo(&fifo);
    let demo = demo();
    for (target, kind) in [
        (Path::new("/dev/null"), "is a character device"),
        (fifo.as_path(), "is a FIFO"),
    ] {
        let o = bandwidth_within_60s(&[
            "--window",
            demo.to_str().expect("utf-8"),
            "--output",
            target.to_str().expect("utf-8"),
            "--overwrite",
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        let e = text(&o.stderr);
        assert!(e.contains(kind) && e.contains("not a regular file"), "{e}");
        assert!(o.stdout.is_empty(), "refused before the analysis");
    }
    assert!(
        std::fs::metadata("/dev/null")
            .expect("stat")
            .file_type()
            .is_char_device()
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .expect("stat")
            .file_type()
            .is_fifo()
    );
}

/// Item 2: a new result has the umask's mode (not 0600); an overwritten one keeps its mode.
#[cfg(unix)]
#[test]
fn results_follow_the_umask_and_keep_an_old_files_mode() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    let reference = tmp.path().join("reference");
    std::fs::File::create(&reference).expect("create");
    let umask_mode = std::fs::metadata(&reference)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    let demo = demo();
    let out = tmp.path().join("new.json");
    let o = bandwidth(&[
        "--window",
        demo.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&out), umask_mode, "{:o}", mode(&out));
    let old = tmp.path().join("old.json");
    std::fs::write(&old, "old").expect("write");
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let o = bandwidth(&[
        "--window",
        demo.to_str().expect("utf-8"),
        "--output",
        old.to_str().expect("utf-8"),
        "--overwrite",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(mode(&old), 0o644, "{:o}", mode(&old));
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "no temporary or claim file left: {names:?}");
}

/// Item 4: `kl1-bandwidth … | head -0`: the reader is gone before the summary; quiet exit 0, no panic, and
/// the result file is complete.
#[test]
fn a_closed_stdout_pipe_ends_quietly_with_success() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("kl1.json");
    let demo = demo();
    let mut child = kl1_bandwidth()
        .args([
            "--window",
            demo.to_str().expect("utf-8"),
            "--output",
            out.to_str().expect("utf-8"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Close the read end at once: the summary is written after the analysis, into a pipe with no reader.
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("wait");
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(e.is_empty(), "{e}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("read")).expect("json");
    assert_eq!(v["type"], "kl1-bandwidth");
}

/// Item 4: `kl1-bandwidth … > /dev/full`: one message naming stdout, exit 1, no panic.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error_naming_stdout() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("kl1.json");
    let demo = demo();
    let o = to_a_full_disk(kl1_bandwidth().args([
        "--window",
        demo.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ]));
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("kl1-bandwidth: writing to stdout: "), "{e}");
    assert!(out.exists(), "the result was written before the summary");
}

/// A window directory whose manifest is `make(path)`.
fn window_with_manifest(tmp: &Path, make: impl FnOnce(&Path)) -> PathBuf {
    let w = tmp.join("w");
    std::fs::create_dir_all(&w).expect("mkdir");
    make(&w.join("traces-manifest.json"));
    w
}

/// Item 8: a FIFO manifest is refused at once (it used to hang forever); `/dev/zero` is refused without
/// being read (it used to grow memory without bound); so are a FIFO rule file and a `/dev/zero` spec.
#[cfg(unix)]
#[test]
fn special_file_inputs_are_refused_not_read() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("o.json");
    let out = out.to_str().expect("utf-8");
    let fifo_window = window_with_manifest(&tmp.path().join("a"), mkfifo);
    let zero_window = window_with_manifest(&tmp.path().join("b"), |p| {
        std::os::unix::fs::symlink("/dev/zero", p).expect("symlink")
    });
    for (w, kind) in [
        (&fifo_window, "is a FIFO"),
        (&zero_window, "is a character device"),
    ] {
        let o = bandwidth_within_60s(&["--window", w.to_str().expect("utf-8"), "--output", out]);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(
            e.contains("manifest") && e.contains("traces-manifest.json"),
            "{e}"
        );
        assert!(e.contains(kind), "{e}");
    }
    let fifo_rules = tmp.path().join("rules.toml");
    mkfifo(&fifo_rules);
    let demo = demo();
    let demo = demo.to_str().expect("utf-8");
    let o = bandwidth_within_60s(&[
        "--window",
        demo,
        "--output",
        out,
        "--rules",
        fifo_rules.to_str().expect("utf-8"),
    ]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("rule file") && e.contains("is a FIFO"), "{e}");
    let o = bandwidth_within_60s(&["--window", demo, "--output", out, "--spec", "/dev/zero"]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("model spec /dev/zero: is a character device"),
        "{e}"
    );
    assert!(!Path::new(out).exists());
}

/// Item 11: a manifest `[]` is an error, not an empty result with exit 0.
#[test]
fn an_empty_manifest_is_an_error() {
    let tmp = tempfile::tempdir().expect("tmp");
    let w = window_with_manifest(tmp.path(), |p| std::fs::write(p, "[]").expect("write"));
    let out = tmp.path().join("o.json");
    let o = bandwidth(&[
        "--window",
        w.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("window w") && e.contains("lists no traces"),
        "{e}"
    );
    assert!(!out.exists());
}

/// Item 5 (for this tool too): a result name another run has claimed is refused before the analysis.
#[test]
fn a_result_name_claimed_by_another_run_is_refused_at_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("kl1.json");
    let claim = tool_io::Claim::new(&out, false).expect("claim");
    let demo = demo();
    let o = bandwidth(&[
        "--window",
        demo.to_str().expect("utf-8"),
        "--output",
        out.to_str().expect("utf-8"),
    ]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("being written by another run"), "{e}");
    assert!(o.stdout.is_empty());
    drop(claim);
    assert!(!out.exists());
}

/// The tool's JSON a page embeds.
#[test]
fn html_embeds_the_result_and_diff_compares_two_results() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (out, page) = (tmp.path().join("kl1.json"), tmp.path().join("kl1.html"));
    let demo = demo();
    let s = |p: &Path| p.to_str().expect("utf-8").to_owned();
    let o = bandwidth(&[
        "--window",
        &s(&demo),
        "--output",
        &s(&out),
        "--html",
        &s(&page),
        "--quiet",
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("read")).expect("json");
    let html = std::fs::read_to_string(&page).expect("page");
    assert_eq!(
        embedded_json(&html),
        result,
        "the page's numbers are the result's"
    );
    assert!(html.contains("<svg"));

    // A result against itself: every number moves by 0 %, exit 0.
    let d = bandwidth(&["diff", &s(&out), &s(&out), "--fail-above", "0.1"]);
    assert_eq!(d.status.code(), Some(0), "{}", text(&d.stderr));
    let t = text(&d.stdout);
    assert!(t.contains("PASS"), "{t}");
    assert!(t.contains("dense.all.gbps"));

    // A copy with one rank's dense GB/s mean 10 % higher: Δ = +10.00 % on exactly that number.
    let mut newer = result.clone();
    let cell =
        &mut newer["windows"]["demo"]["prof-32k-b4:decode"]["ranks"]["0"]["mean"]["dense.all.gbps"];
    let old = cell.as_f64().expect("a number");
    *cell = serde_json::json!(old * 1.1);
    let new_path = tmp.path().join("new.json");
    std::fs::write(&new_path, serde_json::to_string(&newer).expect("json")).expect("write");
    let d = bandwidth(&["diff", &s(&out), &s(&new_path), "--fail-above", "5"]);
    let t = text(&d.stdout);
    let line = t
        .lines()
        .find(|l| l.contains("prof-32k-b4:decode/rank 0") && l.contains("dense.all.gbps "))
        .unwrap_or_else(|| panic!("no row in\n{t}"));
    assert!(line.contains("+10.00"), "{line}");
    // The per-step spread of a 6-step rank is known; whether 10 % leaves it decides the verdict, and the
    // exit status must agree with the printed verdict.
    let failed = t.contains("FAIL:");
    assert_eq!(d.status.code(), Some(if failed { 1 } else { 0 }), "{t}");
    // An unreadable side is an error (2), not a pass.
    let bad = bandwidth(&["diff", &s(&out), &s(&tmp.path().join("missing.json"))]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `diff --fail-above` is a gate: a result that lost a rank or a capture, or shares nothing with the old
/// one, fails it (unless missing ones are allowed, and never when nothing is shared); a threshold that is
/// NaN, infinite or negative is refused.
#[test]
fn the_diff_gate_fails_on_what_is_missing_and_refuses_odd_thresholds() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("kl1.json");
    let s = |p: &Path| p.to_str().expect("utf-8").to_owned();
    let o = bandwidth(&["--window", &s(&demo()), "--output", &s(&out), "--quiet"]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("read")).expect("json");
    let write = |name: &str, v: &Value| {
        let p = tmp.path().join(name);
        std::fs::write(&p, serde_json::to_string(v).expect("json")).expect("write");
        p
    };
    let captures = result["windows"]["demo"].as_object().expect("captures");
    assert!(captures.len() >= 2, "the demo window has several captures");
    let lost_capture = {
        let mut v = result.clone();
        let first = captures.keys().next().expect("a capture").clone();
        v["windows"]["demo"]
            .as_object_mut()
            .expect("map")
            .remove(&first);
        write("lost-capture.json", &v)
    };
    let lost_rank = {
        let mut v = result.clone();
        let (cap, _) = captures
            .iter()
            .find(|(_, c)| c["ranks"].as_object().is_some_and(|r| r.len() >= 2))
            .expect("a capture with two ranks");
        v["windows"]["demo"][cap]["ranks"]
            .as_object_mut()
            .expect("ranks")
            .remove("1");
        write("lost-rank.json", &v)
    };
    let nothing = write(
        "nothing.json",
        &serde_json::json!({"windows": {"other": {}}}),
    );
    for new in [&lost_capture, &lost_rank] {
        let d = bandwidth(&["diff", &s(&out), &s(new), "--fail-above", "5"]);
        let t = text(&d.stdout);
        assert_eq!(d.status.code(), Some(1), "{}: {t}", new.display());
        assert!(t.contains("FAIL") && t.contains("only in OLD"), "{t}");
        let allowed = bandwidth(&[
            "diff",
            &s(&out),
            &s(new),
            "--fail-above",
            "5",
            "--allow-missing",
        ]);
        assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed.stdout));
    }
    let d = bandwidth(&[
        "diff",
        &s(&out),
        &s(&nothing),
        "--fail-above",
        "5",
        "--allow-missing",
    ]);
    let t = text(&d.stdout);
    assert_eq!(d.status.code(), Some(1), "{t}{}", text(&d.stderr));
    assert!(t.contains("nothing in common"), "{t}");
    for bad in ["NaN", "inf", "-1", "1e400"] {
        let d = bandwidth(&["diff", &s(&out), &s(&out), &format!("--fail-above={bad}")]);
        let e = text(&d.stderr);
        assert_eq!(d.status.code(), Some(2), "{bad}: {e}");
        assert!(e.contains("finite"), "{bad}: {e}");
    }
}
