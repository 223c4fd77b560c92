//! The seed's error cases, and the ones this port adds: each names the window, capture, rank and step it
//! is about.
#![allow(clippy::expect_used)] // Test helpers, outside `#[test]` functions.

mod common;

use common::*;
use kl1_bandwidth::{Error, Kl1Rules, analyze};
use kl1_shapes::Spec;
use serde_json::{Value, json};

fn run(dir: &std::path::Path) -> Result<kl1_bandwidth::Report, Error> {
    analyze(
        &[dir.to_path_buf()],
        &Spec::builtin(),
        &Kl1Rules::builtin(),
        None,
    )
}

const DECODE: &str = "prof-short-b1:decode";
const PREFILL: &str = "prof-32k-b1:prefill-early";

#[test]
fn an_existing_output_is_refused_and_the_write_is_atomic() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let report = run(&dir).expect("analyse");
    let out_dir = tempfile::tempdir().expect("tmp");
    let out = out_dir.path().join("kl1.json");
    std::fs::write(&out, "keep me").expect("write");
    match tool_io::Claim::new(&out, false) {
        Err(tool_io::Error::Exists { path }) => assert_eq!(path, out),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "keep me");
    let claim = tool_io::Claim::new(&out, true).expect("claim");
    let written = report.write(&claim).expect("overwrite");
    assert_eq!(written.path(), out, "replaced in place, not written beside");
    drop(claim);
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("read")).expect("json");
    assert_eq!(v["type"], "kl1-bandwidth");
    // Nothing but the output is left in the directory (the temporary file was renamed).
    let names: Vec<String> = std::fs::read_dir(out_dir.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["kl1.json"]);
}

fn set_file(dir: &std::path::Path, row: usize, file: &str) {
    let mut rows = manifest(dir);
    rows[row]["file"] = json!(file);
    write_manifest(dir, &rows);
}

fn manifest_error(r: Result<kl1_bandwidth::Report, Error>) -> String {
    match r {
        Err(Error::Manifest { window, reason }) => {
            assert_eq!(window, "win");
            reason
        }
        other => panic!("expected a manifest error, got {other:?}"),
    }
}

#[test]
fn a_path_leaving_the_window_is_an_error() {
    let (tmp, dir, _) = generate(&small_decode_plan());
    let inside = manifest(&dir)[0]["file"]
        .as_str()
        .expect("file")
        .to_string();
    // `..`
    std::fs::copy(dir.join(&inside), tmp.path().join("outside.json")).expect("copy");
    set_file(&dir, 0, "../outside.json");
    let e = manifest_error(run(&dir));
    assert!(e.contains("row 0") && e.contains("`..`"), "{e}");
    // Absolute.
    let abs = tmp.path().join("outside.json").display().to_string();
    set_file(&dir, 0, &abs);
    let e = manifest_error(run(&dir));
    assert!(e.contains("absolute"), "{e}");
    // Through a symlink inside the window pointing out of it.
    std::os::unix::fs::symlink(tmp.path().join("outside.json"), dir.join("link.json"))
        .expect("symlink");
    set_file(&dir, 0, "link.json");
    let e = manifest_error(run(&dir));
    assert!(e.contains("symlink"), "{e}");
    // A symlink that stays inside is fine.
    std::os::unix::fs::symlink(dir.join(&inside), dir.join("inner-link.json")).expect("symlink");
    set_file(&dir, 0, "inner-link.json");
    run(&dir).expect("a link inside the window is inside");
}

#[test]
fn a_sha256_that_differs_is_an_error() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let mut rows = manifest(&dir);
    rows[1]["sha256"] = json!("0".repeat(64));
    write_manifest(&dir, &rows);
    let e = manifest_error(run(&dir));
    assert!(
        e.contains("row 1") && e.contains("rank 1") && e.contains("sha256"),
        "{e}"
    );
}

#[test]
fn a_skipped_capture_is_still_hash_checked_and_listed() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let mut rows = manifest(&dir);
    let mut extra = rows[0].clone();
    extra["capture"] = json!("warmup");
    rows.push(extra.clone());
    write_manifest(&dir, &rows);
    let report = run(&dir).expect("analyse");
    assert_eq!(report.windows[0].skipped, ["prof-short-b1:warmup"]);
    let v: Value = serde_json::from_str(&report.to_json().expect("json")).expect("json");
    assert_eq!(v["skipped"]["win"], json!(["prof-short-b1:warmup"]));
    assert!(v["windows"]["win"].get("prof-short-b1:warmup").is_none());
    // The skipped row's file is hashed too.
    let last = rows.len() - 1;
    rows[last]["sha256"] = json!("f".repeat(64));
    write_manifest(&dir, &rows);
    let e = manifest_error(run(&dir));
    assert!(e.contains("warmup") && e.contains("sha256"), "{e}");
}

#[test]
fn a_duplicate_label_and_rank_is_an_error() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let mut rows = manifest(&dir);
    rows.push(rows[0].clone());
    write_manifest(&dir, &rows);
    let e = manifest_error(run(&dir));
    assert!(e.contains("already listed in row 0"), "{e}");
}

#[test]
fn a_malformed_row_names_itself() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let mut rows = manifest(&dir);
    rows[1].as_object_mut().expect("object").remove("sha256");
    write_manifest(&dir, &rows);
    let e = manifest_error(run(&dir));
    assert!(e.contains("row 1") && e.contains("sha256"), "{e}");
}

#[test]
fn a_rank_that_differs_from_the_trace_is_an_error() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let mut rows = manifest(&dir);
    rows[0]["rank"] = json!(1);
    rows[1]["rank"] = json!(0);
    write_manifest(&dir, &rows);
    match run(&dir) {
        Err(Error::Rank {
            label,
            rank,
            reason,
            ..
        }) => {
            assert_eq!((label.as_str(), rank), (DECODE, 0));
            assert!(reason.contains("rank 1"), "{reason}");
        }
        other => panic!("expected a rank error, got {other:?}"),
    }
}

#[test]
fn two_windows_with_one_name_are_an_error() {
    let (_a, dir_a, _) = generate(&small_decode_plan());
    let (_b, dir_b, _) = generate(&small_decode_plan());
    match analyze(
        &[dir_a, dir_b],
        &Spec::builtin(),
        &Kl1Rules::builtin(),
        None,
    ) {
        Err(Error::DuplicateWindow { name, .. }) => assert_eq!(name, "win"),
        other => panic!("expected DuplicateWindow, got {other:?}"),
    }
}

/// The window's key is the name it was given by (the seed's `Path(dir).name`), not the name of the
/// directory a symlink resolves to; a path with no name of its own (`…/sub/..`) falls back to the resolved
/// directory's name.
#[test]
fn a_window_is_keyed_by_the_name_it_was_given() {
    let (tmp, dir, _) = generate(&small_decode_plan());
    let link = tmp.path().join("run-0417");
    std::os::unix::fs::symlink(&dir, &link).expect("symlink");
    let report = run(&link).expect("analyse through the link");
    assert_eq!(report.windows[0].name, "run-0417");
    let v: Value = serde_json::from_str(&report.to_json().expect("json")).expect("json");
    assert!(v["windows"].get("run-0417").is_some(), "{}", v["windows"]);
    assert!(v["skipped"].get("run-0417").is_some());
    // Errors name the window the same way.
    let mut rows = manifest(&dir);
    rows[0]["sha256"] = json!("0".repeat(64));
    write_manifest(&dir, &rows);
    match run(&link) {
        Err(Error::Manifest { window, .. }) => assert_eq!(window, "run-0417"),
        other => panic!("expected a manifest error, got {other:?}"),
    }
    rehash(&dir);
    // The real directory and the link are two names: not a duplicate.
    let both = analyze(
        &[dir.clone(), link],
        &Spec::builtin(),
        &Kl1Rules::builtin(),
        None,
    )
    .expect("analyse both");
    assert_eq!(both.windows[1].name, "run-0417");
    // No name of its own: the resolved directory's.
    std::fs::create_dir(dir.join("sub")).expect("mkdir");
    let report = run(&dir.join("sub").join("..")).expect("analyse");
    assert_eq!(report.windows[0].name, "win");
}

/// The step error of a run, as (label, rank, step, reason).
fn step_error(r: Result<kl1_bandwidth::Report, Error>) -> (String, u64, u64, String) {
    match r {
        Err(Error::Step {
            window,
            label,
            rank,
            step,
            reason,
        }) => {
            assert_eq!(window, "win");
            (label, rank, step, reason)
        }
        other => panic!("expected a step error, got {other:?}"),
    }
}

#[test]
fn mrow_launches_must_come_four_a_layer() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    edit_events(&dir, DECODE, 1, |ev| {
        let i = nth_kernel(ev, "exl3_mrow_kernel<", 0);
        ev.remove(i);
    });
    let (label, rank, step, reason) = step_error(run(&dir));
    assert_eq!((label.as_str(), rank, step), (DECODE, 1, 1000));
    assert!(
        reason.contains("159 mrow launches") && reason.contains("multiple of 4"),
        "{reason}"
    );
}

#[test]
fn a_template_k_that_differs_from_the_spec_is_an_error() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    edit_events(&dir, DECODE, 0, |ev| {
        // The 2nd launch of layer 0 of step 1001 (the 162nd mrow kernel in file order: 160 in step 1000).
        let i = nth_kernel(ev, "exl3_mrow_kernel<", 161);
        let name = ev[i]["name"]
            .as_str()
            .expect("name")
            .replace("exl3_mrow_kernel<4,", "exl3_mrow_kernel<3,");
        ev[i]["name"] = json!(name);
    });
    let (label, rank, step, reason) = step_error(run(&dir));
    assert_eq!((label.as_str(), rank, step), (DECODE, 0, 1001));
    assert!(
        reason.contains("wq_b") && reason.contains("K 3") && reason.contains("K 4"),
        "{reason}"
    );
}

#[test]
fn sparse_moe_layers_must_match_the_spec() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    edit_events(&dir, DECODE, 0, |ev| {
        for needle in [
            "exl3_smoe_down_kernel",
            "exl3_smoe_gu_kernel",
            "exl3_smoe_rot_kernel",
        ] {
            let i = nth_kernel(ev, needle, 0);
            ev.remove(i);
        }
    });
    let (_, _, step, reason) = step_error(run(&dir));
    assert_eq!(step, 1000);
    assert!(
        reason.contains("39 smoe layers") && reason.contains("40"),
        "{reason}"
    );
}

#[test]
fn a_gate_up_without_its_down_is_an_error() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    edit_events(&dir, DECODE, 0, |ev| {
        let i = nth_kernel(ev, "exl3_smoe_down_kernel", 3);
        ev.remove(i);
    });
    let (_, _, step, reason) = step_error(run(&dir));
    assert_eq!(step, 1000);
    // The next layer's rotation arrives while layer 3's gate|up still waits for its down kernel.
    assert!(
        reason.contains("MoE layer 3") && reason.contains("before the down kernel"),
        "{reason}"
    );
}

#[test]
fn a_gate_up_without_a_grid_is_an_error() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    edit_events(&dir, DECODE, 1, |ev| {
        // Layer 2 of step 1001 (40 layers in step 1000).
        let i = nth_kernel(ev, "exl3_smoe_gu_kernel", 42);
        let args = ev[i]["args"].as_object_mut().expect("args");
        assert!(args.remove("grid").is_some());
    });
    let r = run(&dir);
    let msg = r
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default();
    let (label, rank, step, reason) = step_error(r);
    assert_eq!((label.as_str(), rank, step), (DECODE, 1, 1001));
    assert!(
        reason.contains("MoE layer 2")
            && reason.contains("gate|up kernel `")
            && reason.contains("exl3_smoe_gu_kernel")
            && reason.contains("has no grid"),
        "{reason}"
    );
    // The message names window, capture, rank and step.
    assert!(
        msg.starts_with("window win: prof-short-b1:decode rank 1: step 1001: "),
        "{msg}"
    );
}

#[test]
fn prefill_layers_must_match_the_spec() {
    let (_tmp, dir, _) = generate(&small_prefill_plan());
    edit_events(&dir, PREFILL, 1, |ev| {
        for needle in ["tf_moe_down_kernel", "tf_moe_gate_up_kernel"] {
            let i = nth_kernel(ev, needle, 5);
            ev.remove(i);
        }
    });
    let (label, rank, step, reason) = step_error(run(&dir));
    assert_eq!((label.as_str(), rank, step), (PREFILL, 1, 1000));
    assert!(reason.contains("39 tf layers"), "{reason}");
}

#[test]
fn a_reconstruct_without_template_k_is_an_error() {
    let (_tmp, dir, _) = generate(&small_prefill_plan());
    edit_events(&dir, PREFILL, 0, |ev| {
        let i = nth_kernel(ev, "reconstruct_kernel<", 0);
        let name = ev[i]["name"]
            .as_str()
            .expect("name")
            .replace("reconstruct_kernel<4,", "reconstruct_kernel<0,");
        ev[i]["name"] = json!(name);
    });
    let (_, _, step, reason) = step_error(run(&dir));
    assert_eq!(step, 1000);
    assert!(reason.contains("without a template K"), "{reason}");
}

#[test]
fn a_trace_without_complete_steps_is_an_error() {
    let mut plan = small_decode_plan();
    plan.captures[0].steps.truncate(1); // one step: no next step, so no period
    let (_tmp, dir, _) = generate(&plan);
    match run(&dir) {
        Err(Error::Rank {
            window,
            label,
            rank,
            reason,
        }) => {
            assert_eq!((window.as_str(), label.as_str(), rank), ("win", DECODE, 0));
            assert!(reason.contains("no complete decode steps"), "{reason}");
        }
        other => panic!("expected a rank error, got {other:?}"),
    }
}

#[test]
fn a_non_finite_number_is_an_error_naming_step_and_field() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    edit_events(&dir, DECODE, 1, |ev| {
        let i = nth_kernel(ev, "exl3_mrow_head_kernel", 1); // step 1001's head
        ev[i]["dur"] = json!(0.0);
    });
    match run(&dir) {
        Err(Error::NonFinite {
            window,
            label,
            rank,
            step,
            field,
            value,
        }) => {
            assert_eq!(
                (window.as_str(), label.as_str(), rank, step),
                ("win", DECODE, 1, 1001)
            );
            assert_eq!(field, "dense.lm_head.gbps");
            assert!(value.is_infinite());
        }
        other => panic!("expected NonFinite, got {other:?}"),
    }
}

#[test]
fn unmatched_kernels_are_counted_not_dropped() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let mut dur_ms = 0.0;
    edit_events(&dir, DECODE, 0, |ev| {
        let i = nth_kernel(ev, "cunn_SoftMaxForward", 0);
        dur_ms = ev[i]["dur"].as_f64().expect("dur") / 1e3;
        ev[i]["name"] = json!("void kl1_sampler_nobody_named_kernel<1>(float*)");
    });
    let report = run(&dir).expect("analyse");
    let row = &report.windows[0].captures[0].ranks[0].per_step[0];
    assert!(close(row["family_sum_ms.unmatched"], dur_ms, 1e-9));
    assert!(row.contains_key("sp1.unmatched"));
    assert!(
        !row.contains_key("family_sum_ms.torch_native") || row["family_sum_ms.torch_native"] > 0.0
    );
}

#[test]
fn a_missing_manifest_is_an_io_error_naming_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    match run(tmp.path()) {
        Err(Error::File(tool_io::Error::Input { what, path, .. })) => {
            assert_eq!(what, "manifest");
            assert!(path.ends_with("traces-manifest.json"));
        }
        other => panic!("expected an input error, got {other:?}"),
    }
}

/// Every cause is said once: the message includes it, and it is not also returned as a source (the CLI
/// prints the source chain).
#[test]
fn an_io_error_says_the_os_message_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    let e = run(tmp.path()).expect_err("no manifest");
    let msg = e.to_string();
    assert!(msg.contains("traces-manifest.json"), "{msg}");
    assert_eq!(msg.matches("No such file").count(), 1, "{msg}");
    assert!(std::error::Error::source(&e).is_none(), "{e:?}");
}

/// A trace changed after the manifest was written is a sha256 mismatch, even when the change also breaks
/// the parse (a cut gzip stream).
#[test]
fn a_cut_trace_is_a_sha256_mismatch_not_a_parse_error() {
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/windows/demo");
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("cut");
    std::fs::create_dir(&dir).expect("mkdir");
    for e in std::fs::read_dir(&demo).expect("ls demo") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), dir.join(e.file_name())).expect("copy");
    }
    let rows = manifest(&dir);
    let file = rows[0]["file"].as_str().expect("file").to_string();
    let bytes = std::fs::read(dir.join(&file)).expect("read");
    std::fs::write(dir.join(&file), &bytes[..bytes.len() / 2]).expect("cut");
    match run(&dir) {
        Err(Error::Manifest { window, reason }) => {
            assert_eq!(window, "cut");
            assert!(
                reason.contains("row 0")
                    && reason.contains(&file)
                    && reason.contains("sha256")
                    && reason.contains("differs from the manifest"),
                "{reason}"
            );
        }
        other => panic!("expected a sha256 mismatch, got {other:?}"),
    }
}

/// A trace that was listed cut (its sha256 is the manifest's) is a parse error, without the parser's
/// advice to pass `--salvage`, which this command does not have; the parser's message is said once.
#[test]
fn a_trace_listed_cut_is_a_parse_error_without_a_salvage_hint() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    let path = file_of(&dir, DECODE, 1);
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("cut");
    rehash(&dir);
    let e = run(&dir).expect_err("cut");
    let msg = e.to_string();
    match &e {
        Error::Trace { label, rank, .. } => assert_eq!((label.as_str(), *rank), (DECODE, 1)),
        other => panic!("expected a parse error, got {other:?}"),
    }
    assert!(
        msg.starts_with("window win: prof-short-b1:decode rank 1: "),
        "{msg}"
    );
    assert!(msg.contains("truncated at byte"), "{msg}");
    assert!(!msg.contains("salvage"), "{msg}");
    assert!(std::error::Error::source(&e).is_none(), "{e:?}");
}

#[test]
fn rule_tables_the_analysis_cannot_use_are_refused() {
    let base = kl1_bandwidth::KL1_RULES_TOML;
    let p = std::path::Path::new("test.toml");
    // A family the analysis reads by name is missing (its rule and its entry removed).
    let start = base
        .find("[[rule]]\nfamily = \"smoe_fused\"")
        .expect("rule");
    let end = start + base[start..].find("\n\n").expect("end");
    let text = base[..start].to_string() + &base[end..];
    let text = text.replace("smoe_fused = \"routed_moe\"\n", "");
    let e = Kl1Rules::from_toml_str(&text, p)
        .expect_err("missing family")
        .to_string();
    assert!(e.contains("`smoe_fused` is not defined"), "{e}");
    // A reserved bucket.
    let text = base.replace("torch_native = \"other\"", "torch_native = \"idle\"");
    let e = Kl1Rules::from_toml_str(&text, p)
        .expect_err("reserved")
        .to_string();
    assert!(e.contains("reserved"), "{e}");
    // kineto-trace's own checks: a shadowed rule.
    let text = base.replace(
        "pattern = '^void exl3_mrow_kernel<'",
        "pattern = '^void exl3_mrow_head_kernel<'",
    );
    let e = Kl1Rules::from_toml_str(&text, p)
        .expect_err("shadowed")
        .to_string();
    assert!(e.contains("test.toml"), "{e}");
    // A step pattern without the groups the analysis needs.
    let e = Kl1Rules::builtin()
        .with_step_pattern(r"kl1\.step#(?P<step>\d+) phase=(?P<phase>\w+)")
        .expect_err("no rows")
        .to_string();
    assert!(e.contains("`rows`"), "{e}");
}

#[test]
fn prefill_structure_beyond_the_spec_is_refused() {
    let (_tmp, dir, _) = generate(&small_prefill_plan());
    let rules = Kl1Rules::builtin()
        .with_prefill(kl1_bandwidth::Prefill {
            full_layers: 41,
            suffix_rows: 128,
            min_rows: 1024,
        })
        .expect("prefill");
    let e = analyze(&[dir], &Spec::builtin(), &rules, None).expect_err("41 > 40");
    assert!(e.to_string().contains("full_layers"), "{e}");
}

/// Sets `rows=` of step 1001's marker on `rank` of `label` to `rows` (text, so past u64 too).
fn set_marker_rows(dir: &std::path::Path, label: &str, rank: u64, rows: &str) {
    edit_events(dir, label, rank, |ev| {
        let mut edited = 0;
        for e in ev.iter_mut() {
            let Some(name) = e["name"].as_str() else {
                continue;
            };
            if name.starts_with("kl1.step#1001 ") {
                let at = name.find("rows=").expect("a rows group") + "rows=".len();
                let end = at + name[at..].find(' ').unwrap_or(name.len() - at);
                let renamed = format!("{}{rows}{}", &name[..at], &name[end..]);
                e["name"] = json!(renamed);
                edited += 1;
            }
        }
        assert!(edited > 0, "no step 1001 marker");
    });
}

/// `rows=2^64 − 1` is an integer, but no decode step ran that many rows: the shared expert's reads alone
/// (ceil(rows / 8) runs a layer, the part of the estimate that is no upper bound) would need 7.9e19 GB/s.
/// The physics gate refuses it, naming the rows, the rate and the GPU's bandwidth; the 2 rows of the
/// same step pass it.
#[test]
fn rows_no_step_can_have_fail_the_physics_gate() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    set_marker_rows(&dir, DECODE, 0, "18446744073709551615");
    let (l, rank, step, reason) = step_error(run(&dir));
    assert_eq!((l.as_str(), rank, step), (DECODE, 0, 1001), "{reason}");
    assert!(
        reason.contains("rows = 18446744073709551615")
            && reason.contains("above the GB10's 273 GB/s")
            && reason.contains("physics gate"),
        "{reason}"
    );
    let (_tmp, dir, _) = generate(&small_decode_plan());
    set_marker_rows(&dir, DECODE, 0, "2");
    assert!(run(&dir).is_ok());
}

/// `rows` past u64 is out of range, and said so: not "gives no `rows`".
#[test]
fn rows_past_u64_are_out_of_range() {
    let (_tmp, dir, _) = generate(&small_decode_plan());
    set_marker_rows(&dir, DECODE, 0, "123456789012345678901234567890");
    let (l, rank, step, reason) = step_error(run(&dir));
    assert_eq!((l.as_str(), rank, step), (DECODE, 0, 1001), "{reason}");
    assert!(reason.contains("out of range"), "{reason}");
    assert!(
        reason.contains("123456789012345678901234567890"),
        "{reason}"
    );
}
