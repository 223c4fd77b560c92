//! Helpers shared by the integration tests: generating windows, editing their traces, re-hashing.
#![allow(dead_code, clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::path::{Path, PathBuf};

use kl1_bandwidth::{CaptureKind, Kl1Rules};
use kl1_shapes::Spec;
use kl1_window_gen::{CapturePlan, Plan, Rates, StepPlan, Truth, write_window};
use serde_json::Value;

/// A fresh directory holding a window generated from `plan` with the built-in spec and rules.
pub fn generate(plan: &Plan) -> (tempfile::TempDir, PathBuf, Truth) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("win");
    let truth = write_window(&Spec::builtin(), &Kl1Rules::builtin(), plan, &dir, false)
        .expect("generate window");
    (tmp, dir, truth)
}

pub fn decode(rows: u64, requests: u64) -> StepPlan {
    StepPlan {
        phase: CaptureKind::Decode,
        rows,
        requests,
    }
}

pub fn prefill(rows: u64) -> StepPlan {
    StepPlan {
        phase: CaptureKind::Prefill,
        rows,
        requests: 1,
    }
}

pub fn capture(cell: &str, capture: &str, steps: Vec<StepPlan>) -> CapturePlan {
    CapturePlan {
        cell: cell.to_string(),
        capture: capture.to_string(),
        context: 32_768,
        steps,
        lm_head_gemm: false,
    }
}

/// A small plain-JSON plan: one decode capture of three steps (two analysed).
pub fn small_decode_plan() -> Plan {
    Plan {
        captures: vec![capture(
            "prof-short-b1",
            "decode",
            vec![decode(1, 1), decode(2, 1), decode(1, 1)],
        )],
        rates: Rates::default(),
        jitter: 0.03,
        seed: 7,
        gzip: false,
    }
}

/// A small plain-JSON plan: one prefill capture (one analysed chunk, one under the cut, a decode tail).
pub fn small_prefill_plan() -> Plan {
    Plan {
        captures: vec![capture(
            "prof-32k-b1",
            "prefill-early",
            vec![prefill(2048), prefill(512), decode(1, 1)],
        )],
        rates: Rates::default(),
        jitter: 0.03,
        seed: 11,
        gzip: false,
    }
}

pub fn manifest(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("traces-manifest.json")).expect("manifest");
    serde_json::from_str(&text).expect("manifest json")
}

pub fn write_manifest(dir: &Path, rows: &[Value]) {
    std::fs::write(
        dir.join("traces-manifest.json"),
        serde_json::to_string_pretty(rows).expect("json"),
    )
    .expect("write manifest");
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    kineto_trace::hex(&sha2::Sha256::digest(bytes))
}

/// Recomputes the manifest's sha256 of every file.
pub fn rehash(dir: &Path) {
    let mut rows = manifest(dir);
    for r in &mut rows {
        let file = r["file"].as_str().expect("file").to_string();
        let bytes = std::fs::read(dir.join(&file)).expect("read trace");
        r["sha256"] = Value::String(sha256_hex(&bytes));
    }
    write_manifest(dir, &rows);
}

/// The file of (label, rank) in the manifest.
pub fn file_of(dir: &Path, label: &str, rank: u64) -> PathBuf {
    let rows = manifest(dir);
    let r = rows
        .iter()
        .find(|r| {
            format!(
                "{}:{}",
                r["cell"].as_str().unwrap_or(""),
                r["capture"].as_str().unwrap_or("")
            ) == label
                && r["rank"].as_u64() == Some(rank)
        })
        .expect("row");
    dir.join(r["file"].as_str().expect("file"))
}

/// Edits the events of a plain-JSON trace, then re-hashes the manifest.
pub fn edit_events(dir: &Path, label: &str, rank: u64, f: impl FnOnce(&mut Vec<Value>)) {
    let path = file_of(dir, label, rank);
    let text = std::fs::read_to_string(&path).expect("plain json trace");
    let mut v: Value = serde_json::from_str(&text).expect("trace json");
    let events = v["traceEvents"].as_array_mut().expect("traceEvents");
    f(events);
    std::fs::write(&path, serde_json::to_string(&v).expect("json")).expect("write trace");
    rehash(dir);
}

/// True for a kernel event whose name contains `needle`.
pub fn is_kernel(e: &Value, needle: &str) -> bool {
    e["cat"] == "kernel" && e["name"].as_str().is_some_and(|n| n.contains(needle))
}

/// Index of the `nth` kernel event (0-based, file order) whose name contains `needle`.
pub fn nth_kernel(events: &[Value], needle: &str, nth: usize) -> usize {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| is_kernel(e, needle))
        .nth(nth)
        .map(|(i, _)| i)
        .expect("kernel")
}

/// Relative closeness.
pub fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
}
