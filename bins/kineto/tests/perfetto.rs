//! Every subcommand on the Perfetto protobuf files of testdata/native/perfetto (written by
//! `perfetto_counts.py`); counts against the script's independent wire walker (counts.json).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use serde_json::Value;
use std::path::PathBuf;

mod common;
use common::{field_one_starts, gzip_cut_after, json_lines, root, run};

fn perfetto_dir() -> PathBuf {
    root().join("testdata/native/perfetto")
}

fn counts() -> Value {
    serde_json::from_str(&std::fs::read_to_string(perfetto_dir().join("counts.json")).unwrap())
        .unwrap()
}

#[test]
fn every_command_reads_the_generated_perfetto_files() {
    let all = counts();
    for name in [
        "rocprofv3_layout.pftrace",
        "gpu_stages.pftrace",
        "rocprofv3_annotations.pftrace",
        // Its first packets hold a track descriptor alone (no sequence id, no timestamp): told as
        // Perfetto by the packets that follow.
        "descriptors_first.pftrace",
    ] {
        let want = &all[name];
        let path = perfetto_dir().join(name).display().to_string();
        let (code, out, err) = run(&["summary", "--json", &path]);
        assert_eq!(code, 0, "{path}: {err}");
        // One process in each file (GPU ops recorded as that process's): one rank.
        let ranks = json_lines(&out);
        assert_eq!(ranks.len(), 1, "{path}: {out}");
        let s = &ranks[0];
        assert_eq!(s["format"], "perfetto", "{path}");
        let int = |v: &Value| v.as_i64().unwrap_or(0);
        assert_eq!(int(&s["kernels"]["count"]), int(&want["kernels"]), "{path}");
        assert_eq!(int(&s["memcpy"]["count"]), int(&want["memcpys"]), "{path}");
        let calls = int(&s["runtime"]["count"]) + int(&s["driver"]["count"]);
        assert_eq!(calls, int(&want["launches"]), "{path}");
        assert_eq!(int(&s["cpu_ops"]), int(&want["cpu_ops"]), "{path}");
        let (code, out, err) = run(&["kernels", "--json", &path]);
        assert_eq!(code, 0, "{path}: {err}");
        assert_eq!(
            json_lines(&out).len() as i64,
            int(&want["kernels"]),
            "{path}"
        );
        for cmd in ["steps", "budget", "top", "annotations", "ranks"] {
            let (code, _, err) = run(&[cmd, "--json", &path]);
            assert_eq!(code, 0, "{cmd} {path}: {err}");
        }
        let (code, table, _) = run(&["budget", &path]);
        assert_eq!(code, 0);
        assert!(
            table.lines().next().unwrap().contains("Perfetto protobuf"),
            "{path}: {table}"
        );
        let tmp = tempfile::tempdir().unwrap();
        let html = tmp.path().join("r.html");
        let (code, _, err) = run(&["report", "--html", &html.display().to_string(), &path]);
        assert_eq!(code, 0, "{path}: {err}");
    }
}

#[test]
fn the_profiler_steps_of_a_perfetto_file_are_steps() {
    // rocprofv3_layout.pftrace holds ProfilerStep#0 and ProfilerStep#1 (roctx ranges).
    let path = perfetto_dir()
        .join("rocprofv3_layout.pftrace")
        .display()
        .to_string();
    let (code, out, err) = run(&["steps", "--json", &path]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_lines(&out).len(), 2, "{out}");
}

#[test]
fn a_cut_perfetto_file_is_an_error_naming_its_byte() {
    let path = perfetto_dir()
        .join("truncated.pftrace")
        .display()
        .to_string();
    let at = counts()["truncated.pftrace"]["fault_offset"]
        .as_i64()
        .unwrap();
    let (code, _, err) = run(&["summary", &path]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("truncated.pftrace: byte {at}: ")),
        "{err}"
    );
}

/// `--salvage` on a recording cut inside its last packet keeps every packet before it: the packets
/// are written one after another, so those are whole. rocprofv3_layout.pftrace's last packet ends
/// ProfilerStep#1 (after both kernels and the copy ended), so the cut copy keeps the whole file's
/// kernels and copies, and that step's range is open (a warning). Without `--salvage` it is an error.
#[test]
fn salvage_keeps_the_packets_before_a_cut_perfetto_packet() {
    let whole = std::fs::read(perfetto_dir().join("rocprofv3_layout.pftrace")).unwrap();
    let starts = field_one_starts(&whole);
    // More than one packet, so that the last can be cut.
    assert!(starts.len() > 1);
    let last = *starts.last().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cut = tmp.path().join("cut.pftrace");
    std::fs::write(&cut, &whole[..last + 3]).unwrap();
    let cut = cut.display().to_string();
    let (code, _, err) = run(&["summary", "--no-sha256", &cut]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains(&format!("byte {last}: ")), "{err}");
    let (code, out, err) = run(&["summary", "--json", "--no-sha256", "--salvage", &cut]);
    assert_eq!(code, 0, "{err}");
    let s = &json_lines(&out)[0];
    let want = &counts()["rocprofv3_layout.pftrace"];
    assert_eq!(s["salvaged"], true, "{out}");
    assert_eq!(s["salvage"]["cut_offset"], last as u64, "{out}");
    assert_eq!(s["kernels"]["count"], want["kernels"], "{out}");
    assert_eq!(s["memcpy"]["count"], want["memcpys"], "{out}");
    assert!(
        s["warnings"]
            .to_string()
            .contains("slices begun and never ended"),
        "{out}"
    );
    // A gzip copy cut exactly after the packet before the last (a sync flush, then nothing: the
    // gzip stream ends early, its content between two packets): to the packet reader a whole file,
    // so salvaging marks it at the end of what inflated; without `--salvage` it is truncated.
    let gz = tmp.path().join("cut.pftrace.gz");
    std::fs::write(&gz, gzip_cut_after(&whole[..last])).unwrap();
    let gz = gz.display().to_string();
    let (code, _, err) = run(&["summary", "--no-sha256", &gz]);
    assert_ne!(code, 0, "{err}");
    let (code, out, err) = run(&["summary", "--json", "--no-sha256", "--salvage", &gz]);
    assert_eq!(code, 0, "{err}");
    let s = &json_lines(&out)[0];
    assert_eq!(s["salvaged"], true, "{out}");
    assert_eq!(s["salvage"]["cut_offset"], last as u64, "{out}");
    assert_eq!(s["kernels"]["count"], want["kernels"], "{out}");
}
