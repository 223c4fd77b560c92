//! `kl1-gen-window` as a developer runs it: a plain window with known rates, the refusal to write over a
//! window without `--force`, bad `--rate` values, and a closed stdout.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::process::{Command, Output};

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
fn a_plain_window_is_written_and_not_written_over_without_force() {
    let tmp = tempfile::tempdir().expect("tmp");
    let win = tmp.path().join("w1");
    let w = win.to_str().expect("utf-8");
    let o = gen_window(&["--out", w, "--plain", "--jitter", "0"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("wrote 12 traces"),
        "{}",
        text(&o.stdout)
    );
    let manifest = std::fs::read(win.join("traces-manifest.json")).expect("manifest");
    let o = gen_window(&["--out", w]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains("already holds a window") && e.contains("pass --force"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(win.join("traces-manifest.json")).expect("manifest"),
        manifest,
        "a refused run changes nothing"
    );
    let o = gen_window(&["--out", w, "--plain", "--jitter", "0", "--force"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read(win.join("traces-manifest.json")).expect("manifest"),
        manifest,
        "the same plan writes the same window"
    );
}

#[test]
fn bad_rates_fail_with_a_message() {
    let tmp = tempfile::tempdir().expect("tmp");
    let g = tmp.path().join("g");
    let g = g.to_str().expect("utf-8");
    let o = gen_window(&["--out", g, "--rate", "dense"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("NAME=GBPS"), "{}", text(&o.stderr));
    let o = gen_window(&["--out", g, "--rate", "warp=3"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no rate `warp`"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_closed_stdout_is_quiet_success() {
    let tmp = tempfile::tempdir().expect("tmp");
    let g = tmp.path().join("g");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kl1-gen-window"))
        .args(["--out", g.to_str().expect("utf-8"), "--plain"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
}
