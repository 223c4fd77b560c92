//! The `provenance` command end to end: exit codes, the refused output file, an interrupted run, a fake
//! `nvidia-smi`, `diff` ordering and `show`.
// Helpers outside #[test] functions panic on failure too; clippy.toml's test allowance covers only the tests.
#![allow(clippy::expect_used)]

use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../crates/child-run/tests/support/signals.rs"]
mod signals;
use signals::with_default_signals;

mod common;
use common::provenance_in;
use common::stdout_policy::to_a_full_disk;
use common::tool_json::embedded_json;

/// The command in `dir` with no real GPU tools in reach ([`provenance_in`]), with the signals a shell
/// would give it.
fn provenance(dir: &Path) -> Command {
    let mut c = provenance_in(dir);
    with_default_signals(&mut c);
    c
}

fn run_args(out: &str) -> Vec<String> {
    [
        "run",
        "--out",
        out,
        "--backend",
        "nvidia-smi",
        "--gpus",
        "all",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(p).expect("record exists")).expect("record is JSON")
}

fn output(c: &mut Command) -> Output {
    c.output().expect("provenance runs")
}

#[test]
fn run_exits_with_the_commands_status_and_writes_the_record() {
    let t = tempfile::tempdir().expect("tempdir");
    let o = output(
        provenance(t.path())
            .args(run_args("r.json"))
            .args(["-f", "weights=bf16", "-f", "batch=8"])
            .args(["--", "sh", "-c", "echo out; exit 3"]),
    );
    assert_eq!(
        o.status.code(),
        Some(3),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "out\n",
        "the command's stdout passes through untouched"
    );
    let r = read(&t.path().join("r.json"));
    assert_eq!(
        r["command"]["argv"],
        json!(["sh", "-c", "echo out; exit 3"])
    );
    assert_eq!(r["command"]["exit_code"], 3);
    assert_eq!(r["interrupted"], false);
    assert_eq!(r["verdict"]["clean"], false);
    assert!(
        r["verdict"]["flags"]
            .as_array()
            .expect("flags")
            .iter()
            .any(|f| f["flag"] == "command_failed" && f["evidence"] == "`sh` exited with status 3"),
        "{}",
        r["verdict"]
    );
    assert_eq!(r["weights"], "bf16");
    assert_eq!(r["batch"], 8);
    assert!(r["gpu_name"].is_null() && r["unavailable"]["gpu_name"].is_string());
}

fn alive(pid: u64) -> bool {
    // A zombie has exited; only a process that has not is alive here.
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !matches!(
            s[s.rfind(')').expect("comm") + 2..].chars().next(),
            Some('Z' | 'X')
        )
    })
}

/// A command that backgrounds three sleepers and exits: the record says so (count, pids and names) and they
/// are left running (the default); with `--left-running end` they are ended and the record says none is left.
#[test]
#[cfg(target_os = "linux")]
fn processes_the_command_left_running_are_in_the_record() {
    let t = tempfile::tempdir().expect("tempdir");
    // The sleepers' output away from the test's pipes, which `output()` reads to their end; the pause lets
    // each forked shell exec `sleep` before the command exits, so that every name is `sleep`.
    let script = "for i in 1 2 3; do sleep 30 >/dev/null 2>&1 & done; sleep 0.2; exit 0";
    let o = output(
        provenance(t.path())
            .args(run_args("r.json"))
            .args(["--", "sh", "-c", script]),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let r = read(&t.path().join("r.json"));
    let left = &r["command"]["left_running"];
    assert_eq!(left["count"], 3, "{r}");
    assert_eq!(
        (&left["policy"], &left["still_running"]),
        (&json!("report"), &json!(3))
    );
    let pids: Vec<u64> = left["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| {
            assert_eq!(p["name"], "sleep");
            p["pid"].as_u64().expect("pid")
        })
        .collect();
    assert_eq!(pids.len(), 3);
    assert!(pids.iter().all(|p| alive(*p)), "reported, not ended");
    assert!(
        err.contains("the command left 3 processes running"),
        "{err}"
    );
    for p in &pids {
        // SAFETY: kill has no memory preconditions; the pids are the test's sleepers, alive just now.
        unsafe {
            libc::kill(*p as libc::pid_t, libc::SIGKILL);
        }
    }

    let o = output(provenance(t.path()).args(run_args("e.json")).args([
        "--left-running",
        "end",
        "--",
        "sh",
        "-c",
        script,
    ]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let left = &read(&t.path().join("e.json"))["command"]["left_running"];
    assert_eq!(
        (&left["count"], &left["still_running"]),
        (&json!(3), &json!(0)),
        "{left}"
    );
    assert_eq!(left["policy"], "end");
    let ended = left["processes"].as_array().expect("processes");
    assert!(
        ended
            .iter()
            .all(|p| !alive(p["pid"].as_u64().expect("pid"))),
        "{left}"
    );

    // A command that leaves nothing: a count of 0, and no line about it.
    let o = output(
        provenance(t.path())
            .args(run_args("n.json"))
            .args(["--", "sh", "-c", "exit 0"]),
    );
    let left = &read(&t.path().join("n.json"))["command"]["left_running"];
    assert_eq!(
        (&left["count"], &left["processes"]),
        (&json!(0), &json!([])),
        "{left}"
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("processes running"));
}

/// How many times `reason` occurs in a record's JSON text, as JSON writes it (escaped), whole or inside a longer
/// string (the old records joined the backends' reasons into each field's).
fn occurrences(json_text: &str, reason: &str) -> usize {
    let escaped = serde_json::to_string(reason).expect("a string serialises");
    json_text.matches(&escaped[1..escaped.len() - 1]).count()
}

#[test]
fn a_record_without_a_gpu_or_a_repository_states_each_reason_once() {
    let t = tempfile::tempdir().expect("tempdir");
    let o = output(
        provenance(t.path())
            .args(run_args("r.json"))
            .args(["--", "true"]),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = fs::read_to_string(t.path().join("r.json")).expect("record written");
    let r: Value = serde_json::from_str(&text).expect("record is JSON");

    // The backend's reason, once: in during.rejected (before: in 8 `unavailable` entries and 3 unchecked checks).
    let rejected = r["during"]["rejected"].as_array().expect("rejected");
    assert_eq!(rejected.len(), 1, "nvidia-smi forced: one backend tried");
    let smi = rejected[0]["reason"].as_str().expect("a reason");
    assert!(smi.contains("no-such-nvidia-smi"), "{smi}");
    assert_eq!(occurrences(&text, smi), 1, "{text}");
    let gpu_fields = ["gpus", "gpu_name", "driver", "gpu_backend"];
    let snapshot_fields = ["before.gpu", "before.gpus", "after.gpu", "after.gpus"];
    for key in gpu_fields.iter().chain(&snapshot_fields) {
        assert_eq!(r["unavailable"][key], provenance::NO_GPU_BACKEND, "{key}");
    }
    let unchecked = r["verdict"]["unchecked"].as_array().expect("unchecked");
    let reason_of = |check: &str| {
        unchecked
            .iter()
            .find(|u| u["check"] == check)
            .map(|u| u["reason"].clone())
    };
    for check in ["throttled", "other_gpu_processes", "gpu_busy_before_start"] {
        assert_eq!(
            reason_of(check),
            Some(json!(provenance::NO_GPU_BACKEND)),
            "{check}"
        );
    }

    // Git's words once, under git.commit (before: 7 fields and the dirty_tree check).
    let git = r["unavailable"]["git.commit"]
        .as_str()
        .expect("no commit here");
    assert!(git.contains("not a git repository"), "{git}");
    assert_eq!(occurrences(&text, git), 1);
    let pointer = "git could not say (why: git.commit)";
    for f in [
        "dirty",
        "modified",
        "untracked",
        "branch",
        "diff_sha256",
        "diff_bytes",
    ] {
        assert_eq!(r["unavailable"][format!("git.{f}")], pointer, "git.{f}");
    }
    assert_eq!(reason_of("dirty_tree"), Some(json!(pointer)));

    // And no reason longer than a pointer to it is written twice.
    let mut reasons: Vec<&str> = r["unavailable"]
        .as_object()
        .expect("unavailable")
        .values()
        .chain(unchecked.iter().map(|u| &u["reason"]))
        .chain(rejected.iter().map(|x| &x["reason"]))
        .filter_map(Value::as_str)
        .filter(|s| s.len() > provenance::NO_GPU_BACKEND.len())
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    assert!(reasons.len() >= 2, "{reasons:?}");
    for why in reasons {
        assert_eq!(occurrences(&text, why), 1, "{why}");
    }
}

/// A gate that compared nothing fails: two records holding only their times exit 2, and a record of a
/// newer schema than this build reads is refused naming its version, not read as one it knows.
#[test]
fn diff_refuses_records_with_nothing_to_compare_and_unknown_schema_versions() {
    let tmp = tempfile::tempdir().expect("tmp");
    let empty = tmp.path().join("empty.json");
    fs::write(&empty, r#"{"time_utc": "2026-12-06T00:00:00Z", "git": {}}"#).expect("write");
    let out = output(
        provenance(tmp.path())
            .args(["diff"])
            .arg(&empty)
            .arg(&empty),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to compare"), "{err}");
    // A real record against itself still passes.
    let rec = tmp.path().join("rec.json");
    let run = output(
        provenance(tmp.path())
            .args(run_args(rec.to_str().expect("utf8")))
            .args(["--", "true"]),
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let same = output(provenance(tmp.path()).args(["diff"]).arg(&rec).arg(&rec));
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    // The same record claiming a newer schema.
    let mut v = read(&rec);
    v["schema_version"] = serde_json::json!(99);
    let newer = tmp.path().join("newer.json");
    fs::write(&newer, v.to_string()).expect("write");
    let out = output(provenance(tmp.path()).args(["diff"]).arg(&rec).arg(&newer));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("schema_version 99") && err.contains("newer"),
        "{err}"
    );
}

#[test]
fn an_existing_output_is_refused_before_the_command_runs() {
    let t = tempfile::tempdir().expect("tempdir");
    fs::write(t.path().join("r.json"), "earlier result").expect("write");
    let o = output(
        provenance(t.path())
            .args(run_args("r.json"))
            .args(["--", "touch", "ran"]),
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("exists; pass --overwrite"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !t.path().join("ran").exists(),
        "the command must not have run"
    );
    assert_eq!(
        fs::read_to_string(t.path().join("r.json")).expect("read"),
        "earlier result"
    );

    let o = output(provenance(t.path()).args(run_args("r.json")).args([
        "--overwrite",
        "--",
        "touch",
        "ran",
    ]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(t.path().join("ran").exists());
    let r = read(&t.path().join("r.json"));
    assert_eq!(r["command"]["exit_code"], 0);
    assert!(
        !r["verdict"]["flags"]
            .as_array()
            .expect("flags")
            .iter()
            .any(|f| f["flag"] == "command_failed"),
        "{}",
        r["verdict"]
    );
}

#[test]
fn a_missing_command_exits_127_and_a_reserved_field_is_a_usage_error() {
    let t = tempfile::tempdir().expect("tempdir");
    let o = output(
        provenance(t.path())
            .args(run_args("r.json"))
            .args(["--", "/no/such/command"]),
    );
    assert_eq!(
        o.status.code(),
        Some(127),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = output(
        provenance(t.path())
            .args(run_args("s.json"))
            .args(["-f", "git=x", "--", "true"]),
    );
    assert_eq!(o.status.code(), Some(2), "clap's usage error");
    assert!(!t.path().join("s.json").exists());
}

/// Children of `pid`, from /proc.
#[cfg(target_os = "linux")]
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        if stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u32>().ok())
            == Some(pid)
        {
            out.push(p);
        }
    }
    out
}

#[cfg(target_os = "linux")]
fn comm(pid: u32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Runs `provenance run -- sleep 300`, sends `sig` to provenance (not to sleep) once sleep runs, and checks that
/// the signal reached sleep and the record was written, marked interrupted.
#[cfg(target_os = "linux")]
fn interrupted_run(sig: libc::c_int, name: &str) {
    let t = tempfile::tempdir().expect("tempdir");
    let mut child = provenance(t.path())
        .args(run_args("r.json"))
        .args(["--", "sleep", "300"])
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    // The signal is sent only once `sleep` runs: the handlers are installed before it is started, so this waits
    // on the event itself, not on a guess of how long set-up takes on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(120);
    let sleep_pid = loop {
        if let Some(p) = children(pid).into_iter().find(|&p| comm(p) == "sleep") {
            break p;
        }
        assert!(Instant::now() < deadline, "sleep was never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: kill has no memory preconditions; `pid` is our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
    // Bounded wait: if the signal were not forwarded, `sleep 300` would hold the test for five minutes.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            // SAFETY: as above; cleaning up before failing.
            unsafe {
                libc::kill(sleep_pid as libc::pid_t, libc::SIGKILL);
            }
            let _ = child.kill();
            panic!("provenance did not end within 120 s of {name}: not forwarded?");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(128 + sig), "128 + {name}");
    let r = read(&t.path().join("r.json"));
    assert_eq!(r["interrupted"], true);
    assert_eq!(r["command"]["pid"], sleep_pid);
    assert_eq!(
        r["command"]["signal"], name,
        "sleep itself died of the forwarded signal"
    );
    assert_eq!(r["command"]["signals_received"], json!([name]));
    assert_eq!(r["command"]["wrapper_exit_code"], 128 + sig);
    let flags: Vec<&Value> = r["verdict"]["flags"]
        .as_array()
        .expect("flags")
        .iter()
        .collect();
    let evidence = format!("interrupted by {name}");
    assert!(
        flags
            .iter()
            .any(|f| f["flag"] == "interrupted" && f["evidence"] == evidence.as_str()),
        "{flags:?}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn sigint_is_forwarded_and_the_record_is_still_written_marked_interrupted() {
    interrupted_run(libc::SIGINT, "SIGINT");
}

#[cfg(target_os = "linux")]
#[test]
fn sigterm_is_forwarded_too() {
    interrupted_run(libc::SIGTERM, "SIGTERM");
}

fn write_fake_smi(dir: &Path) -> PathBuf {
    write_fake_smi_with(
        dir,
        "0, GPU-cli-0000, P0, 1980, 2619, 61, 650.5, 97, 70123, 0x0000000000000004",
        "while :; do echo \"$line\"; sleep 0.05; done",
    )
}

/// A fake `nvidia-smi` reading `line` (the query's fields in order) whose streamed mode runs `stream`.
fn write_fake_smi_with(dir: &Path, line: &str, stream: &str) -> PathBuf {
    let p = dir.join("nvidia-smi");
    let script = r#"#!/bin/sh
query=""; lms=""
for a in "$@"; do
  case "$a" in
    --query-gpu=*) query="${a#--query-gpu=}" ;;
    -lms=*) lms="${a#-lms=}" ;;
  esac
done
if [ $# -eq 0 ]; then echo "| Driver Version: 550.54.15      CUDA Version: 12.4 |"; exit 0; fi
case "$query" in
  index,uuid,name,*)
    echo "0, GPU-cli-0000, NVIDIA H200, 00000000:19:00.0, 550.54.15, 96.00.99.00.01, 700.00, Enabled"
    exit 0 ;;
esac
line="LINE"
if [ -z "$lms" ]; then echo "$line"; exit 0; fi
STREAM
"#
    .replace("LINE", line)
    .replace("STREAM", stream);
    fs::write(&p, script).expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    p
}

#[test]
fn a_fake_nvidia_smi_fills_the_gpu_part() {
    let t = tempfile::tempdir().expect("tempdir");
    let smi = write_fake_smi(t.path());
    // `sleep 0.3` only gives the monitor a region; what is asserted (identity, the one-shot `before` reading and
    // the flag it raises) does not depend on how many streamed samples arrive in it.
    let o = output(
        provenance(t.path())
            .env("KL1_NVIDIA_SMI", &smi)
            .args(run_args("r.json"))
            .args(["--interval-ms", "50", "--", "sleep", "0.3"]),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read(&t.path().join("r.json"));
    assert_eq!(r["gpu_name"], "NVIDIA H200");
    assert_eq!(r["driver"], "550.54.15");
    assert_eq!(r["gpus"][0]["uuid"], "GPU-cli-0000");
    assert_eq!(r["before"]["gpu"]["utilization.gpu"], 97.0);
    assert_eq!(r["during"]["backend"], "nvidia-smi");
    let flags: Vec<String> = r["verdict"]["flags"]
        .as_array()
        .expect("flags")
        .iter()
        .map(|f| f["flag"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        flags.contains(&"gpu_busy_before_start".to_owned()),
        "{flags:?}"
    );
}

fn record(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, serde_json::to_string_pretty(v).expect("json")).expect("write");
    p
}

#[test]
fn diff_puts_the_most_telling_change_first_and_exits_1() {
    let t = tempfile::tempdir().expect("tempdir");
    let base = json!({
        "schema_version": 1, "time_utc": "2026-01-01T00:00:00+00:00", "cpu_count": 8,
        "git": {"commit": "aaaa", "dirty": false},
        "gpus": [{
            "index": 0, "name": "NVIDIA H200", "uuid": "GPU-1",
            "driver_version": "550.54.15", "power_limit_w": 700.0
        }],
        "during": {"gpus": [{
            "index": 0, "n_samples": 100,
            "clocks.sm_busy": {"min": 1980.0, "median": 1980.0, "max": 1980.0, "n": 100}
        }]},
        "before": {"loadavg": {"1m": 0.5}},
        "verdict": {"clean": true, "flags": []}
    });
    let mut changed = base.clone();
    changed["git"]["commit"] = json!("bbbb");
    changed["gpus"][0]["power_limit_w"] = json!(500.0);
    changed["during"]["gpus"][0]["clocks.sm_busy"]["median"] = json!(1700.0);
    changed["before"]["loadavg"]["1m"] = json!(9.0);
    changed["verdict"] =
        json!({"clean": false, "flags": [{"flag": "throttled", "evidence": "GPU 0: power limit"}]});
    let a = record(t.path(), "a.json", &base);
    let b = record(t.path(), "b.json", &changed);

    let o = output(provenance(t.path()).args(["diff"]).arg(&a).arg(&b));
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    let firsts: Vec<&str> = text
        .lines()
        .map(|l| l.split("  ").next().unwrap_or_default().trim())
        .collect();
    assert_eq!(
        firsts,
        [
            "commit",
            "GPU 0 power limit (W)",
            "verdict: throttled",
            "GPU 0 SM clock while busy (median)",
            "1-minute load before start"
        ],
        "{text}"
    );
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.contains("aaaa → bbbb")),
        "{text}"
    );

    let o = output(
        provenance(t.path())
            .args(["diff", "--json"])
            .arg(&a)
            .arg(&b),
    );
    let changes: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(changes[0]["what"], "commit");

    let o = output(provenance(t.path()).args(["diff"]).arg(&a).arg(&a));
    assert_eq!(o.status.code(), Some(0));

    let o = output(
        provenance(t.path())
            .args(["diff"])
            .arg(&a)
            .arg(t.path().join("missing.json")),
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn diff_exits_0_when_only_the_output_path_in_the_command_line_differs() {
    let t = tempfile::tempdir().expect("tempdir");
    let base = json!({
        "schema_version": 1, "time_utc": "2026-01-01T00:00:00+00:00", "cpu_count": 8,
        "git": {"commit": "aaaa", "dirty": false},
        "command_line": ["bench", "--batch", "8", "--out", "run1.json"],
        "verdict": {"clean": true, "flags": []}
    });
    let mut other = base.clone();
    other["command_line"] = json!(["bench", "--batch", "8", "--out", "run2.json"]);
    let a = record(t.path(), "a.json", &base);
    let b = record(t.path(), "b.json", &other);
    let o = output(provenance(t.path()).args(["diff"]).arg(&a).arg(&b));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("no differences") && text.contains("run1.json"),
        "the informational change is still shown: {text}"
    );
    let o = output(
        provenance(t.path())
            .args(["diff", "--json"])
            .arg(&a)
            .arg(&b),
    );
    assert_eq!(o.status.code(), Some(0));
    let changes: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(changes[0]["what"], "command line");
    assert_eq!(changes[0]["informational"], true);
}

#[test]
fn show_summarises_a_record_written_by_run() {
    let t = tempfile::tempdir().expect("tempdir");
    let o = output(provenance(t.path()).args(run_args("r.json")).args([
        "-f",
        "weights=bf16",
        "--",
        "true",
    ]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = output(provenance(t.path()).args(["show", "r.json"]));
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "time",
        "command    true → exit 0",
        "verdict",
        "weights=bf16",
        "during     not monitored",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    // A result file that embeds the record under `provenance` shows the same way.
    let embedded = json!({"tokens_per_s": 1.0, "provenance": read(&t.path().join("r.json"))});
    let p = record(t.path(), "result.json", &embedded);
    let o = output(provenance(t.path()).arg("show").arg(&p));
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("weights=bf16"));
    // --html writes a page that embeds the record itself (the numbers shown are the record's).
    let o = output(provenance(t.path()).args(["show", "r.json", "--html", "r.html"]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let page = std::fs::read_to_string(t.path().join("r.html")).expect("page written");
    let embedded = embedded_json(&page);
    assert_eq!(embedded, read(&t.path().join("r.json")));
    assert!(page.contains("weights"));
    // Not replaced without --overwrite.
    let o = output(provenance(t.path()).args(["show", "r.json", "--html", "r.html"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--overwrite"));
}

#[test]
fn a_second_run_with_the_same_output_is_refused_before_its_command_starts() {
    let t = tempfile::tempdir().expect("tempdir");
    // The first run holds the name while its command sleeps; the second must fail at once, without running
    // its command (which would leave a marker file).
    let mut first = provenance(t.path())
        .args(run_args("same.json"))
        .args(["--", "sh", "-c", "sleep 3"])
        .stderr(Stdio::null())
        .spawn()
        .expect("first run starts");
    let claim = t.path().join(".same.json.claim");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !claim.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(claim.exists(), "the first run never claimed its name");
    let o = output(provenance(t.path()).args(run_args("same.json")).args([
        "--overwrite",
        "--",
        "sh",
        "-c",
        "touch second-ran",
    ]));
    assert_eq!(o.status.code(), Some(125));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("another run"), "{err}");
    assert!(!t.path().join("second-ran").exists());
    assert!(first.wait().expect("first run ends").success());
    assert_eq!(read(&t.path().join("same.json"))["command"]["exit_code"], 0);
}

#[test]
fn show_and_diff_refuse_a_fifo_and_end_quietly_on_a_closed_pipe() {
    let t = tempfile::tempdir().expect("tempdir");
    let fifo = t.path().join("record.fifo");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8 path")).expect("no NUL");
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let o = output(provenance(t.path()).args(["show"]).arg(&fifo));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("FIFO") && err.contains("record.fifo"), "{err}");

    let r = record(
        t.path(),
        "a.json",
        &json!({"time_utc": "t", "git": {"commit": "abc"}, "verdict": {"clean": true, "flags": []}}),
    );
    // A reader that closes at once: no panic, no message, exit 0.
    let mut child = provenance(t.path())
        .args(["show", "--json"])
        .arg(&r)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("show starts");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("show ends");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error_naming_stdout() {
    let t = tempfile::tempdir().expect("tempdir");
    let r = record(
        t.path(),
        "a.json",
        &json!({"time_utc": "t", "git": {"commit": "abc"}}),
    );
    for args in [vec!["show"], vec!["diff"]] {
        let mut c = provenance(t.path());
        c.args(&args).arg(&r);
        if args[0] == "diff" {
            c.arg(&r);
        }
        let o = to_a_full_disk(&mut c);
        assert_eq!(o.status.code(), Some(if args[0] == "diff" { 2 } else { 1 }));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("stdout") && !err.contains("panicked"), "{err}");
    }
}

#[cfg(unix)]
#[test]
fn overwrite_never_replaces_a_device_or_fifo() {
    let t = tempfile::tempdir().expect("tempdir");
    let fifo = t.path().join("out.fifo");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8 path")).expect("no NUL");
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for target in [fifo.as_path(), Path::new("/dev/null")] {
        let o = output(
            provenance(t.path())
                .args(["run", "--output"])
                .arg(target)
                .args([
                    "--overwrite",
                    "--backend",
                    "nvidia-smi",
                    "--",
                    "touch",
                    "ran",
                ]),
        );
        assert_eq!(o.status.code(), Some(125));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("not a regular file"), "{err}");
        assert!(!t.path().join("ran").exists());
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::metadata(&fifo).expect("fifo").file_type().is_fifo());
    assert!(
        fs::metadata("/dev/null")
            .expect("null")
            .file_type()
            .is_char_device()
    );
}

#[test]
fn a_monitor_dying_a_third_into_the_run_is_never_clean() {
    let t = tempfile::tempdir().expect("tempdir");
    // An idle GPU (nothing to flag), whose streamed readings stop 1.2 s after they started, as when a GPU is lost.
    let smi = write_fake_smi_with(
        t.path(),
        "0, GPU-cli-0000, P8, 345, 405, 38, 75.25, 0, 512, 0x0000000000000001",
        r#"start=$(date +%s%N)
while :; do
  echo "$line"; sleep 0.05
  if [ $(( ($(date +%s%N) - start) / 1000000 )) -ge 1200 ]; then
    echo "Unable to determine the device handle for GPU0000:19:00.0: GPU is lost" >&2; exit 3
  fi
done"#,
    );
    let o = output(
        provenance(t.path())
            .env("KL1_NVIDIA_SMI", &smi)
            .args(run_args("r.json"))
            .args(["--interval-ms", "50", "--", "sleep", "3"]),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read(&t.path().join("r.json"));
    let cov = &r["during"]["region_coverage"];
    assert_eq!(cov["sufficient"], false, "{cov}");
    assert_eq!(cov["monitor_end"], "died", "{cov}");
    // About 1.2 s of 3 s watched: well under the 90 % needed (timing on a loaded machine only lowers it).
    let f = cov["gpus"][0]["fraction"].as_f64().expect("fraction");
    assert!(f < 0.7, "{cov}");
    let unchecked = r["verdict"]["unchecked"].as_array().expect("unchecked");
    let throttled = unchecked
        .iter()
        .find(|u| u["check"] == "throttled")
        .expect("throttled is not checked");
    assert!(
        throttled["reason"]
            .as_str()
            .is_some_and(|w| w.contains("died before the end")),
        "{throttled}"
    );

    let o = output(provenance(t.path()).args(["show", "r.json"]));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("WARNING    GPU monitor coverage too low"),
        "{text}"
    );
    assert!(!text.contains("CLEAN"), "{text}");
    // Flagged or not (a loaded machine raises host_load_above_cores), throttling is listed as not checked.
    assert!(text.contains("unchecked  throttled"), "{text}");
}

#[test]
fn repo_dir_names_the_repository_whose_git_state_is_recorded() {
    let t = tempfile::tempdir().expect("tempdir");
    // This crate's directory is inside the project's repository; the current directory (a temp dir) is not.
    let repo = env!("CARGO_MANIFEST_DIR");
    let o = output(provenance(t.path()).args(run_args("r.json")).args([
        "--repo-dir",
        repo,
        "--",
        "true",
    ]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read(&t.path().join("r.json"));
    assert_eq!(r["git"]["dir"], repo);
    assert!(
        r["git"]["commit"].as_str().is_some_and(|c| c.len() == 40),
        "{}",
        r["git"]
    );
    assert!(r["during"]["host"].is_object(), "{}", r["during"]);
}
