//! Every subcommand on the XPlane protobuf files (JAX/TensorFlow): the ones of testdata/native/xplane
//! written by `xplane_counts.py` and the shared corpus's real one (without the corpus that test is
//! listed as ignored); counts against the script's independent protobuf walker (counts.json).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use serde_json::Value;
use std::path::PathBuf;

mod common;
use common::{corpus, field_one_starts, gzip_cut_after, json_lines, root, run};

fn xplane_dir() -> PathBuf {
    root().join("testdata/native/xplane")
}

fn counts() -> Value {
    serde_json::from_str(&std::fs::read_to_string(xplane_dir().join("counts.json")).unwrap())
        .unwrap()
}

/// summary, steps, kernels, budget, top, annotations and report on `path`, against `want`.
fn every_command(path: &str, want: &Value) {
    let (code, out, err) = run(&["summary", "--json", path]);
    assert_eq!(code, 0, "{path}: {err}");
    // One summary per rank: a file of several GPU planes is one rank per GPU. Ops and calls add up
    // to the file's; the host's step annotations are copied to every rank.
    let ranks = json_lines(&out);
    assert_eq!(
        ranks.len(),
        want["devices"].as_array().unwrap().len(),
        "{path}: ranks"
    );
    let sum = |get: &dyn Fn(&Value) -> i64| -> i64 { ranks.iter().map(get).sum() };
    let int = |v: &Value| v.as_i64().unwrap_or(0);
    assert_eq!(
        sum(&|s| int(&s["kernels"]["count"])),
        int(&want["kernels"]),
        "{path}"
    );
    assert_eq!(
        sum(&|s| int(&s["memcpy"]["count"])),
        int(&want["memcpys"]),
        "{path}"
    );
    assert_eq!(
        sum(&|s| int(&s["memset"]["count"])),
        int(&want["memsets"]),
        "{path}"
    );
    let calls = sum(&|s| int(&s["runtime"]["count"]) + int(&s["driver"]["count"]));
    assert_eq!(calls, int(&want["launches"]), "{path}");
    let steps = want["step_annotations"].as_array().unwrap().len() as i64;
    for s in &ranks {
        assert_eq!(s["format"], "xplane", "{path}");
        assert_eq!(int(&s["user_annotations"]), steps, "{path}");
    }

    let (code, out, err) = run(&["kernels", "--json", path]);
    assert_eq!(code, 0, "{path}: {err}");
    assert_eq!(
        json_lines(&out).len() as i64,
        want["kernels"].as_i64().unwrap(),
        "{path}"
    );
    for cmd in ["steps", "budget", "top", "annotations"] {
        let (code, _, err) = run(&[cmd, "--json", path]);
        assert_eq!(code, 0, "{cmd} {path}: {err}");
    }
    let (code, table, _) = run(&["budget", path]);
    assert_eq!(code, 0);
    assert!(
        table.lines().next().unwrap().contains("XPlane protobuf"),
        "{path}: {table}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("r.html");
    let (code, _, err) = run(&["report", "--html", &html.display().to_string(), path]);
    assert_eq!(code, 0, "{path}: {err}");
}

#[test]
fn every_command_reads_the_generated_xplane_files() {
    let want = counts();
    for name in ["multi_gpu.xplane.pb", "copies_steps.xplane.pb"] {
        every_command(&xplane_dir().join(name).display().to_string(), &want[name]);
    }
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn every_command_reads_the_real_jax_file() {
    let name = "jax_te_fused_attn_934987a2fc2f.xplane.pb";
    let path = corpus::corpus_file(&format!("native/xplane/{name}"));
    every_command(
        &path.display().to_string(),
        &counts()[&format!("corpus/{name}")],
    );
}

#[test]
fn a_profile_run_directory_of_two_hosts_is_two_ranks_or_more() {
    // plugins/profile/<run>/ holds one <host>.xplane.pb per host.
    let tmp = tempfile::tempdir().unwrap();
    for host in ["host0", "host1"] {
        std::fs::copy(
            xplane_dir().join("copies_steps.xplane.pb"),
            tmp.path().join(format!("{host}.xplane.pb")),
        )
        .unwrap();
    }
    let (code, out, err) = run(&["ranks", "--json", &tmp.path().display().to_string()]);
    assert_eq!(code, 0, "{err}");
    let rows = json_lines(&out);
    assert!(!rows.is_empty(), "{out}");
    assert!(
        rows.iter().all(|r| r["ranks"].as_i64().unwrap() >= 2),
        "{out}"
    );
}

#[test]
fn a_cut_xplane_file_is_an_error_naming_its_byte() {
    let path = xplane_dir()
        .join("truncated.xplane.pb")
        .display()
        .to_string();
    let at = counts()["truncated.xplane.pb"]["fault_offset"]
        .as_i64()
        .unwrap();
    let (code, _, err) = run(&["summary", &path]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("truncated.xplane.pb: byte {at}: ")),
        "{err}"
    );
    // `--salvage` keeps nothing of it (its planes are one message), and says so.
    let (code, _, err) = run(&["summary", "--salvage", &path]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("truncated.xplane.pb: byte {at}: "))
            && err.contains("salvaging keeps nothing of an XPlane file"),
        "{err}"
    );
}

/// A gzip copy of an XPlane file cut between two planes (a sync flush after the first, then
/// nothing): to protobuf a whole `XSpace` of one plane, but salvaging keeps nothing of XPlane (its
/// planes refer to each other), so with `--salvage` too it is an error, which says so.
#[test]
fn a_gzip_xplane_cut_between_planes_is_an_error_salvaged_or_not() {
    let whole = std::fs::read(xplane_dir().join("multi_gpu.xplane.pb")).unwrap();
    // The second plane's start: the first plane's end.
    let first_plane_end = field_one_starts(&whole)[1];
    let tmp = tempfile::tempdir().unwrap();
    let gz = tmp.path().join("cut.xplane.pb.gz");
    std::fs::write(&gz, gzip_cut_after(&whole[..first_plane_end])).unwrap();
    let gz = gz.display().to_string();
    let (code, _, err) = run(&["summary", &gz]);
    assert_ne!(code, 0, "{err}");
    let (code, _, err) = run(&["summary", "--salvage", &gz]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("salvaging keeps nothing of an XPlane file"),
        "{err}"
    );
}

/// The built-in `xla_step` profile: a host event with a `step_num` stat (what JAX's
/// `StepTraceAnnotation("train", step_num=3)` writes; xplane_counts.py puts one in multi_gpu, listed in
/// counts.json's `step_annotations`) is each rank's step, numbered by its stat, with no pattern given.
#[test]
fn an_xla_step_annotation_is_the_step_of_every_rank() {
    let want = counts();
    let marks = want["multi_gpu.xplane.pb"]["step_annotations"]
        .as_array()
        .unwrap();
    assert_eq!(marks, &[Value::from("train step_num=3")]);
    let (code, out, err) = run(&[
        "steps",
        "--json",
        "testdata/native/xplane/multi_gpu.xplane.pb",
    ]);
    assert_eq!(code, 0, "{err}");
    let steps = json_lines(&out);
    // Two GPU planes, two ranks, the host's one annotation copied to each.
    assert_eq!(steps.len(), 2, "{out}");
    for s in &steps {
        assert_eq!(s["name"], "train step_num=3", "{s}");
        assert_eq!(s["step_number"], 3, "{s}");
    }
    assert!(
        err.contains("steps from the built-in `xla_step` markers (1 found)"),
        "{err}"
    );
}
