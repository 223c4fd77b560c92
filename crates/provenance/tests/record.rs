//! Whole records: GPU data through a fake `nvidia-smi`, seed-compatible keys, unavailable probes, NaN refusal,
//! user fields.
// Helpers outside #[test] functions panic on failure too; clippy.toml's test allowance covers only the tests.
#![allow(clippy::expect_used)]

mod common;

use common::{BUSY_POWER_CAPPED, IDLE, fake_nvidia_smi, smi_config};
use provenance::{Check, Error, Provenance, Record, Running, claim_output, parse_field};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Waits (bounded, generously: the box may be loaded) until the monitor has recorded `n` samples, so that the
/// summary is about something; a broken monitor fails the assertion instead of hanging.
fn wait_for_samples(running: &Running, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while running.gpu_samples() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        running.gpu_samples() >= n,
        "the monitor recorded only {} samples in 60 s",
        running.gpu_samples()
    );
}

fn record_with(line: &str) -> Record {
    let t = tempfile::tempdir().expect("tempdir");
    let smi = fake_nvidia_smi(t.path(), "nvidia-smi", line);
    // 200 ms: a gap allowance of 400 ms absorbs a slow start of the fake on a loaded machine, so the region
    // counts as watched (see `provenance::MIN_COVERAGE_FRACTION`); the fake itself prints every 50 ms.
    let mut config = smi_config(smi);
    config.interval_ms = 200;
    let running = Provenance::new()
        .repo_dir(t.path())
        .monitor_config(config)
        .field("weights", "bf16")
        .expect("field")
        .start();
    wait_for_samples(&running, 3);
    running.finish()
}

#[test]
fn a_busy_power_capped_gpu_is_recorded_and_flagged() {
    let r = record_with(BUSY_POWER_CAPPED);
    assert_eq!(r.gpu_name.value().map(String::as_str), Some("NVIDIA H200"));
    assert_eq!(r.driver.value().map(String::as_str), Some("550.54.15"));
    let v = r.to_value().expect("serialises");
    // A one-shot reading has no monitor clock: no `t_s` in `before`/`after`; the streamed samples keep theirs.
    assert!(
        v["before"]["gpu"].get("t_s").is_none(),
        "{}",
        v["before"]["gpu"]
    );
    assert!(v["after"]["gpus"][0].get("t_s").is_none());
    // The streamed readings themselves are kept for the timeline: all of them (a few), with their monitor time.
    let tl = &v["during"]["timeline"];
    assert_eq!(tl["every"], 1);
    let kept = tl["samples"].as_array().expect("timeline samples");
    assert_eq!(Some(kept.len() as u64), v["during"]["n_samples"].as_u64());
    assert!(kept.len() >= 3);
    assert!(kept.iter().all(|s| s["t_s"].is_number() && s["index"] == 0));
    // 650.5 W: the fake's reading line (BUSY_POWER_CAPPED), every time.
    assert!(kept.iter().all(|s| s["power.draw"] == 650.5));
    assert_eq!(v["gpus"][0]["uuid"], "GPU-test-0000");
    assert_eq!(v["gpus"][0]["cuda_driver_version"], "12.4");
    assert_eq!(v["gpus"][0]["power_limit_w"], 700.0);
    assert_eq!(v["gpu_backend"]["backend"], "nvidia-smi");
    assert_eq!(v["before"]["gpu"]["utilization.gpu"], 97.0);
    assert_eq!(v["after"]["gpus"][0]["clocks.sm"], 1980.0);
    assert!(
        v["during"]["gpus"][0]["n_samples"]
            .as_u64()
            .is_some_and(|n| n >= 3),
        "{}",
        v["during"]
    );
    assert_eq!(
        v["during"]["gpus"][0]["throttle_reasons_seen"],
        json!(["sw_power_cap"])
    );

    let throttled = r
        .verdict
        .flags
        .iter()
        .find(|f| f.flag == Check::Throttled)
        .expect("throttled");
    assert!(
        throttled.evidence.starts_with("GPU 0: sw_power_cap in "),
        "{}",
        throttled.evidence
    );
    let busy = r
        .verdict
        .flags
        .iter()
        .find(|f| f.flag == Check::GpuBusyBeforeStart)
        .expect("busy before start");
    assert!(
        busy.evidence.contains("GPU 0 at 97 % utilisation"),
        "{}",
        busy.evidence
    );
    // nvidia-smi lists no processes: the check is reported as not made, not as passed.
    let u = r
        .verdict
        .unchecked
        .iter()
        .find(|u| u.check == Check::OtherGpuProcesses)
        .expect("unchecked");
    assert!(u.reason.contains("nvidia-smi"), "{}", u.reason);
    assert!(!r.verdict.clean);
}

#[test]
fn an_idle_gpu_raises_no_gpu_flags() {
    let r = record_with(IDLE);
    for c in [Check::Throttled, Check::GpuBusyBeforeStart] {
        assert!(!r.verdict.has(c), "{c} raised: {:?}", r.verdict.flags);
        assert!(
            !r.verdict.unchecked.iter().any(|u| u.check == c),
            "{c} not checked: {:?}",
            r.verdict.unchecked
        );
    }
}

#[test]
fn without_a_gpu_every_gpu_probe_is_null_with_a_reason() {
    let t = tempfile::tempdir().expect("tempdir");
    let r = Provenance::new()
        .repo_dir(t.path())
        .monitor_config(smi_config(t.path().join("no-such-nvidia-smi")))
        .start()
        .finish();
    let v: Value = serde_json::from_str(&r.to_json_pretty().expect("json")).expect("parses");
    for key in ["gpu_name", "driver", "gpus", "gpu_backend"] {
        assert!(v[key].is_null(), "{key}: {}", v[key]);
        // The backend's own reason is stated once, under during.rejected; the probes point there.
        assert_eq!(v["unavailable"][key], provenance::NO_GPU_BACKEND, "{key}");
    }
    let rejected = v["during"]["rejected"].as_array().expect("rejected");
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0]["backend"], "nvidia-smi");
    let why = rejected[0]["reason"].as_str().expect("a reason");
    assert!(why.contains("no-such-nvidia-smi"), "{why}");
    assert!(v["before"]["gpu"].is_null() && v["unavailable"]["before.gpu"].is_string());
    assert_eq!(v["during"]["n_samples"], 0);
    assert!(
        r.verdict
            .unchecked
            .iter()
            .any(|u| u.check == Check::Throttled)
    );
    assert!(
        !v.to_string().contains("__provenance_unavailable__"),
        "placeholders must not leak"
    );
}

#[test]
fn the_record_keeps_the_seed_keys_and_adds_a_schema_version() {
    let t = tempfile::tempdir().expect("tempdir");
    let r = Provenance::new()
        .repo_dir(t.path())
        .monitor_config(smi_config(t.path().join("none")))
        .program(provenance::program!())
        .field("weights", "fp32 + bf16 autocast")
        .expect("field")
        .start()
        .finish();
    let v = r.to_value().expect("serialises");
    for key in [
        "time_utc",
        "git",
        "gpu_name",
        "driver",
        "cpu_count",
        "before",
        "during",
        "after",
        "monitored_s",
    ] {
        assert!(v.get(key).is_some(), "seed key {key} missing");
    }
    for key in ["commit", "dirty"] {
        assert!(v["git"].get(key).is_some(), "git.{key} missing");
    }
    assert_eq!(v["schema_version"], provenance::SCHEMA_VERSION);
    #[cfg(target_os = "linux")]
    {
        // The Python tool's `during.wsl_loadavg_1m {min, max}`, from the host sampled during the region.
        let w = &v["during"]["wsl_loadavg_1m"];
        let (min, max) = (
            w["min"].as_f64().expect("min"),
            w["max"].as_f64().expect("max"),
        );
        assert!(min <= max, "{w}");
        assert_eq!(v["during"]["host"]["loadavg_1m"]["max"].as_f64(), Some(max));
    }
    assert_eq!(
        v["weights"], "fp32 + bf16 autocast",
        "user fields sit at the top level"
    );
    assert!(
        v["time_utc"]
            .as_str()
            .is_some_and(|s| s.ends_with("+00:00") && s.len() == 25),
        "{}",
        v["time_utc"]
    );
    assert!(v["cpu_count"].as_u64().is_some_and(|n| n >= 1));
    assert!(
        v["before"]["loadavg"]["1m"].is_number() || v["unavailable"]["before.loadavg"].is_string()
    );
    assert_eq!(v["build"]["program"]["name"], "provenance");
    assert_eq!(
        v["build"]["program"]["debug_assertions"],
        cfg!(debug_assertions)
    );
    assert!(v["environment"]["class"].is_string());
    assert!(v["environment"]["signals"].is_array());
    assert!(v["command_line"].is_array());
    // The order of the written keys is the documented one, starting with the version.
    let text = r.to_json_pretty().expect("json");
    let first_key = text.lines().nth(1).unwrap_or_default().trim();
    assert!(first_key.starts_with("\"schema_version\""), "{first_key}");
}

#[test]
fn reserved_and_non_finite_fields_are_refused() {
    assert!(matches!(
        Provenance::new().field("git", "x"),
        Err(Error::ReservedField { .. })
    ));
    assert!(matches!(
        Provenance::new().field("x", f64::NAN),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        Provenance::new().field("x", vec![1.0, f64::INFINITY]),
        Err(Error::NonFinite { .. })
    ));
    assert_eq!(parse_field("n=3").expect("ok"), ("n".to_owned(), json!(3)));
    assert_eq!(
        parse_field("weights=bf16").expect("ok"),
        ("weights".to_owned(), json!("bf16"))
    );
    assert_eq!(
        parse_field("v=\"3\"").expect("ok"),
        ("v".to_owned(), json!("3"))
    );
    assert_eq!(parse_field("e=").expect("ok"), ("e".to_owned(), json!("")));
    assert!(matches!(parse_field("novalue"), Err(Error::BadField(_))));
    assert!(matches!(parse_field("=x"), Err(Error::BadField(_))));
}

#[test]
fn negative_zero_is_written_as_zero() {
    let t = tempfile::tempdir().expect("tempdir");
    let r = Provenance::new()
        .repo_dir(t.path())
        .monitor_config(smi_config(t.path().join("none")))
        .field("offset", -0.0_f64)
        .expect("field")
        .field("deltas", vec![-0.0_f64, 1.5])
        .expect("field")
        .start()
        .finish();
    let text = r.to_json_pretty().expect("json");
    assert!(!text.contains("-0.0"), "{text}");
    let v: Value = serde_json::from_str(&text).expect("parses");
    assert_eq!(v["offset"], json!(0.0));
    assert_eq!(v["deltas"], json!([0.0, 1.5]));
}

#[test]
fn a_record_with_nan_is_not_written() {
    let t = tempfile::tempdir().expect("tempdir");
    let mut r = Provenance::new()
        .repo_dir(t.path())
        .monitor_config(smi_config(t.path().join("none")))
        .start()
        .finish();
    r.monitored_s = f64::NAN;
    match r.to_json_pretty() {
        Err(Error::NonFinite { path, .. }) => assert_eq!(path, "monitored_s"),
        other => panic!("expected NonFinite, got {other:?}"),
    }
    let out = claim_output(t.path().join("r.json"), false).expect("claim");
    assert!(matches!(r.write(&out), Err(Error::NonFinite { .. })));
    assert!(!out.path().exists());
    // Through the generic writer (as when embedded in a result), the refusal surfaces through serde.
    assert!(out.write_json(&json!({"provenance": 1})).is_ok());
    std::fs::remove_file(out.path()).expect("remove");
    assert!(out.write_json(&r).is_err());
    assert!(!out.path().exists());
}

#[test]
fn a_second_claim_on_the_same_name_fails_while_the_first_is_held() {
    let t = tempfile::tempdir().expect("tempdir");
    let p = t.path().join("same.json");
    let first = claim_output(&p, false).expect("first claim");
    for overwrite in [false, true] {
        let second = claim_output(&p, overwrite);
        let e = second.expect_err("the name is taken");
        // Within one process the claim is this run's own (another process is told "another run").
        assert!(e.to_string().contains("already claimed by this run"), "{e}");
    }
    let written = first.write_json(&json!({"run": 1})).expect("write");
    assert_eq!(written.path(), p);
    drop(first);
    // Written and released: the name is now an existing file, refused without overwrite.
    assert!(claim_output(&p, false).is_err());
}

#[test]
fn claim_output_refuses_an_existing_result_before_any_work() {
    let t = tempfile::tempdir().expect("tempdir");
    let p = t.path().join("result.json");
    std::fs::write(&p, "an earlier run").expect("write");
    match claim_output(&p, false) {
        Err(e @ Error::Output(_)) => {
            assert!(e.to_string().ends_with("result.json exists"), "{e}")
        }
        other => panic!("expected an existing output, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&p).expect("read"), "an earlier run");
    let out = claim_output(&p, true).expect("overwrite allowed");
    let written = out.write_json(&json!({"new": true})).expect("write");
    assert!(written.notice().is_none());
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&p).expect("read")).expect("json")["new"],
        true
    );
}

#[test]
fn record_writes_the_result_beside_the_record_and_refuses_a_taken_name() {
    let t = tempfile::tempdir().expect("tempdir");
    let p = t.path().join("result.json");
    let got = Provenance::new()
        .program(provenance::program!())
        .monitor_config(smi_config(t.path().join("none")))
        .record(&p, || json!({"tokens_per_s": 1234.5}))
        .expect("recorded");
    assert_eq!(got["tokens_per_s"], 1234.5);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
    assert_eq!(v["result"]["tokens_per_s"], 1234.5);
    assert_eq!(v["provenance"]["interrupted"], false);
    // A test run started as a background job inherits SIGINT ignored; the harness then leaves it alone.
    let ignored = common::sigint_ignored();
    if ignored {
        let w = v["interrupt_watch"].as_str().unwrap_or_default();
        assert!(w.starts_with("not watched: SIGINT is ignored"), "{w}");
    } else {
        assert_eq!(v["interrupt_watch"], "watched");
    }
    // The start cost is measured: git, host and GPU probes take more than a millisecond.
    assert!(
        v["provenance"]["recorder_s"]["start"]
            .as_f64()
            .is_some_and(|s| s > 0.0),
        "{}",
        v["provenance"]["recorder_s"]
    );
    // program!() carries this crate's directory: git is read there, whatever the current directory.
    assert_eq!(v["provenance"]["git"]["dir"], env!("CARGO_MANIFEST_DIR"));
    // The name is claimed before the work: an existing file is refused and the work does not run.
    let mut ran = false;
    let again = provenance::record(&p, || ran = true);
    assert!(again.is_err() && !ran);
}

/// This test binary running only the child test `name`, told where its record goes by the variable `var`
/// (unset, the child test returns at once: it is a no-op in a normal run).
fn child_test(name: &str, var: &str, out: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().expect("test binary"));
    c.args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(var, out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    c
}

/// The child half of the disposition test: one record, whose `interrupt_watch` the parent reads.
#[test]
fn child_for_the_disposition_test() {
    let Some(out) = std::env::var_os("PROVENANCE_DISPOSITION_CHILD") else {
        return;
    };
    let out = std::path::PathBuf::from(out);
    Provenance::new()
        .monitor_config(smi_config(out.with_extension("no-smi")))
        .record(&out, || 1)
        .expect("recorded");
}

/// The harness watches Ctrl-C when SIGINT is at its default and leaves it alone when the process was started
/// with it ignored (a background job), whichever way this test run itself was started.
#[cfg(unix)]
#[test]
fn a_process_started_with_sigint_ignored_is_not_watched_and_says_why() {
    let t = tempfile::tempdir().expect("tempdir");
    let watch = |ignored: bool| {
        let out = t.path().join(format!("ignored-{ignored}.json"));
        let mut c = child_test(
            "child_for_the_disposition_test",
            "PROVENANCE_DISPOSITION_CHILD",
            &out,
        );
        if ignored {
            common::with_sigint_ignored(&mut c);
        } else {
            common::with_default_signals(&mut c);
        }
        let status = c.status().expect("child runs");
        assert!(status.success(), "{status}");
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&out).expect("record written"))
                .expect("json");
        v["interrupt_watch"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(watch(false), "watched");
    let w = watch(true);
    assert!(
        w.starts_with("not watched: SIGINT is ignored in this process (a background job)"),
        "{w}"
    );
}

/// The child half of the Ctrl-C test: records a long piece of work, announcing that it has started.
#[test]
fn child_for_the_ctrl_c_test() {
    let Some(out) = std::env::var_os("PROVENANCE_CTRL_C_CHILD") else {
        return;
    };
    let out = std::path::PathBuf::from(out);
    let started = out.with_extension("started");
    let _ = Provenance::new()
        .monitor_config(smi_config(out.with_extension("no-smi")))
        .record(&out, || {
            std::fs::write(&started, "").expect("announce");
            std::thread::sleep(Duration::from_secs(60));
            1
        });
    panic!("the work was not interrupted");
}

#[cfg(unix)]
#[test]
fn ctrl_c_during_the_work_still_writes_the_record_marked_interrupted() {
    let t = tempfile::tempdir().expect("tempdir");
    let out = t.path().join("result.json");
    let mut child = common::with_default_signals(&mut child_test(
        "child_for_the_ctrl_c_test",
        "PROVENANCE_CTRL_C_CHILD",
        &out,
    ))
    .spawn()
    .expect("child starts");
    let started = out.with_extension("started");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(started.exists(), "the child never started its work");
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill has no memory preconditions; the pid is our live child's.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = child.wait().expect("child ends");
    assert_eq!(status.code(), Some(130));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).expect("record written"))
        .expect("json");
    assert_eq!(v["result"], Value::Null);
    assert_eq!(v["provenance"]["interrupted"], true);
    let flags = v["provenance"]["verdict"]["flags"]
        .as_array()
        .expect("flags");
    assert!(
        flags.iter().any(|f| f["flag"] == "interrupted"
            && f["evidence"].as_str().is_some_and(|e| e.contains("SIGINT"))),
        "{flags:?}"
    );
}

#[test]
fn a_record_opens_nvidia_smi_once_for_identity_readings_and_the_monitor() {
    let t = tempfile::tempdir().expect("tempdir");
    let real = fake_nvidia_smi(t.path(), "real-nvidia-smi", IDLE);
    // A wrapper that logs each invocation's arguments, then runs the fake.
    let log = t.path().join("calls");
    let wrapper = t.path().join("nvidia-smi");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .expect("write");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let mut config = smi_config(wrapper);
    config.read_processes = false;
    let one_shots = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.contains("-lms"))
            .count()
    };
    let running = Provenance::new()
        .repo_dir(t.path())
        .monitor_config(config)
        .start();
    // Before the timed region: opening (whose reading is the `before` snapshot), the identity listing and the
    // banner for the CUDA version = 3. Asking each question on its own opened nvidia-smi 5 times.
    assert_eq!(one_shots(), 3, "{:?}", std::fs::read_to_string(&log));
    wait_for_samples(&running, 2);
    let r = running.finish();
    // After it: one reading for the `after` snapshot.
    assert_eq!(one_shots(), 4, "{:?}", std::fs::read_to_string(&log));
    assert_eq!(r.gpu_name.value().map(String::as_str), Some("NVIDIA H200"));
    let v = r.to_value().expect("serialises");
    assert_eq!(v["before"]["gpu"]["pstate"], "P8");
    assert_eq!(v["after"]["gpu"]["pstate"], "P8");
}
