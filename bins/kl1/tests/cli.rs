//! The two commands as a user runs them: the README's first command on the demo window, the refusal to
//! overwrite, errors on stderr with a failing exit status, and the generator.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/windows/demo")
}

fn bandwidth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kl1-bandwidth"))
        .args(args)
        .output()
        .expect("run kl1-bandwidth")
}

fn gen_window(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kl1-gen-window"))
        .args(args)
        .output()
        .expect("run kl1-gen-window")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
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
    let o = gen_window(&[
        "--out",
        win.to_str().expect("utf-8"),
        "--plain",
        "--jitter",
        "0",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("wrote 12 traces"),
        "{}",
        text(&o.stdout)
    );
    // Refuses to write over a window without --force.
    let o = gen_window(&["--out", win.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--force"), "{}", text(&o.stderr));
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
    let o = gen_window(&[
        "--out",
        tmp.path().join("g").to_str().expect("utf-8"),
        "--rate",
        "dense",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("NAME=GBPS"), "{}", text(&o.stderr));
    let o = gen_window(&[
        "--out",
        tmp.path().join("g").to_str().expect("utf-8"),
        "--rate",
        "warp=3",
    ]);
    assert!(
        text(&o.stderr).contains("no rate `warp`"),
        "{}",
        text(&o.stderr)
    );
}
