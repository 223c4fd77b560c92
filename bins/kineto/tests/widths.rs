//! Every text output of `kineto` fits a 120-column terminal: the tables by their views (names shortened the
//! way people say them, the last column sized to what is left), the header blocks and notes by wrapping
//! (on a terminal, or at the width `KL1_TEXT_WIDTH` gives). JSON and CSV lines are never wrapped.
//! Run on the generated traces a plain clone has: the server-shaped synthetic traces and the native samples.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::path::Path;

mod common;
use common::{kineto, testdata, text};

fn run(args: &[&str], trace: &Path, width: Option<&str>) -> (String, String) {
    let mut c = kineto();
    c.args(args).arg(trace);
    match width {
        Some(w) => c.env("KL1_TEXT_WIDTH", w),
        None => c.env_remove("KL1_TEXT_WIDTH"),
    };
    let out = c.output().expect("run kineto");
    (text(&out.stdout), text(&out.stderr))
}

fn widest(text: &str) -> (usize, String) {
    text.lines()
        .map(|l| (l.chars().count(), l.to_string()))
        .max()
        .unwrap_or_default()
}

const TRACES: [&str; 4] = [
    "synthetic/server_traces/vllm_v1_stack/vllm_v1_stack.json",
    "synthetic/server_traces/sglang_stack/sglang_stack.json",
    "synthetic/server_traces/graph_only/graph_only.json",
    "native/nsys_node_3.17.sqlite",
];

const COMMANDS: [&[&str]; 8] = [
    &["summary"],
    &["steps"],
    &["kernels"],
    &["budget"],
    &["top"],
    &["annotations"],
    &["ranks"],
    &["doctor"],
];

#[test]
fn every_text_line_fits_120_columns() {
    for t in TRACES {
        let trace = testdata(t);
        for cmd in COMMANDS {
            let (out, err) = run(cmd, &trace, Some("120"));
            for (what, text) in [("stdout", &out), ("stderr", &err)] {
                let (w, line) = widest(text);
                assert!(
                    w <= 120,
                    "kineto {cmd:?} {t}: {what} line of {w} columns: {line}"
                );
            }
        }
    }
}

#[test]
fn tables_fit_by_their_views_even_unwrapped() {
    // Into a pipe nothing is wrapped; the table rows themselves (after the header block) still fit.
    for t in TRACES {
        let trace = testdata(t);
        for cmd in [&["kernels"][..], &["top"], &["steps"], &["annotations"]] {
            let (out, _) = run(cmd, &trace, None);
            let rows = out.lines().filter(|l| {
                !l.starts_with("  note:") && !l.starts_with("  kernels ") && !l.contains("  rank ")
            });
            for l in rows {
                assert!(
                    l.chars().count() <= 120,
                    "kineto {cmd:?} {t}: a row of {} columns: {l}",
                    l.chars().count()
                );
            }
        }
    }
}

#[test]
fn json_lines_are_never_wrapped() {
    let trace = testdata(TRACES[0]);
    let (out, _) = run(&["kernels", "--json"], &trace, Some("40"));
    for l in out.lines() {
        serde_json::from_str::<serde_json::Value>(l).expect("one JSON object per line, whole");
    }
    assert!(out.lines().any(|l| l.chars().count() > 40));
}

#[test]
fn a_long_note_is_wrapped_without_losing_a_character() {
    // KL1_TEXT_WIDTH=60 wraps; 0 never wraps: the same words either way.
    let trace = testdata(TRACES[0]);
    let (_, narrow) = run(&["steps", "--json"], &trace, Some("60"));
    let (_, whole) = run(&["steps", "--json"], &trace, Some("0"));
    assert!(widest(&narrow).0 <= 60, "{narrow}");
    assert!(
        widest(&whole).0 > 60,
        "the notes are longer than 60 columns: {whole}"
    );
    // Every character but the spaces, in order (a path longer than the room is cut across lines).
    let text = |s: &str| s.split_whitespace().collect::<String>();
    assert_eq!(text(&narrow), text(&whole));
}
