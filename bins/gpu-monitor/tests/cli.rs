//! The built `gpu-monitor` binary, run against fake nvidia-smi scripts and replay files. Waits are for
//! events (a line printed, the process exiting) with generous deadlines; no test asserts on speed.

// Helpers outside #[test] functions fail the test that calls them, as the tests themselves do.
#![allow(clippy::expect_used)]

use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../crates/child-run/tests/support/signals.rs"]
mod signals;
use signals::with_default_signals;

mod common;
use common::tool_json::embedded_json;
use common::{fixture, gpu_monitor, text};

const PATIENCE: Duration = Duration::from_secs(60);

/// `gpu-monitor` with the signals a shell would give it, and `smi` as its nvidia-smi when given.
fn cmd(smi: Option<&Path>) -> Command {
    let mut c = gpu_monitor();
    with_default_signals(&mut c);
    if let Some(p) = smi {
        c.env("KL1_NVIDIA_SMI", p);
    }
    c
}

fn run(c: &mut Command) -> Output {
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_output(child)
}

fn wait_output(child: Child) -> Output {
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            // SAFETY: signalling our own child, which has not been reaped (the waiter thread is still waiting).
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            panic!("gpu-monitor did not exit");
        }
    }
}

#[test]
fn replay_jsonl_to_a_json_summary() {
    let out = run(cmd(None)
        .arg("--backend")
        .arg(format!("replay:{}", fixture("replay.jsonl").display()))
        .args(["--interval-ms", "1000", "--summary", "-q"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is the JSON summary alone");
    assert_eq!(v["backend"], "replay");
    assert_eq!(v["n_samples"], 5);
    let g = &v["gpus"][0];
    assert_eq!(g["clocks.sm"]["median"], 1850.0);
    assert_eq!(g["clocks.sm_busy"]["n"], 4);
    assert_eq!(g["energy"]["agrees"], false);
    assert_eq!(g["throttle_time_s"]["power"], 2.5);
}

#[test]
fn replay_csv_streams_rows_and_a_readable_summary() {
    let out = run(cmd(None)
        .args(["--backend", "replay"])
        .arg(fixture("replay-raw-smi.csv")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("# t_s,index,uuid,pstate,clocks.sm"),
        "{}",
        lines[0]
    );
    assert_eq!(lines.len(), 7, "{stdout}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("# gpu 1 GPU-rec-0001: 3 samples"),
        "{stderr}"
    );
    assert!(stderr.contains("replay_bad_lines=1"), "{stderr}");
}

#[test]
fn with_a_command_it_monitors_until_the_command_exits_and_passes_its_code_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let samples = dir.path().join("samples.jsonl");
    let out = run(cmd(Some(&fixture("nvidia-smi-normal.sh")))
        .args([
            "--backend",
            "nvidia-smi",
            "--interval-ms",
            "50",
            "--format",
            "jsonl",
            "--summary",
            "--output",
        ])
        .arg(&samples)
        .args(["--", "sh", "-c", "sleep 1; exit 7"]));
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    assert_eq!(v["backend"], "nvidia-smi");
    assert_eq!(v["end"]["how"], "stopped");
    assert_eq!(v["gpus"].as_array().map(Vec::len), Some(2));
    let recorded = std::fs::read_to_string(&samples).expect("samples file");
    let first: serde_json::Value =
        serde_json::from_str(recorded.lines().next().expect("a sample")).expect("jsonl");
    assert_eq!(first["uuid"], "GPU-fake-0000");
    // What was written replays.
    let again = run(cmd(None)
        .args(["--backend", "replay"])
        .arg(&samples)
        .args(["--summary", "-q"]));
    let w: serde_json::Value = serde_json::from_slice(&again.stdout).expect("replayed summary");
    assert_eq!(w["n_samples"], v["n_samples"]);
    assert_eq!(w["timestamps"], "recorded");
}

#[test]
fn gpu_selection() {
    let out = run(cmd(Some(&fixture("nvidia-smi-normal.sh"))).args([
        "--backend",
        "nvidia-smi",
        "--interval-ms",
        "50",
        "--gpus",
        "1",
        "--summary",
        "-q",
        "--",
        "sleep",
        "0.3",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["gpus"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["gpus"][0]["index"], 1);
}

#[test]
fn ctrl_c_stops_streaming_prints_the_summary_and_kills_the_child() {
    let dir = tempfile::tempdir().expect("tempdir");
    for f in ["nvidia-smi-hangs.sh", "fake-common.sh"] {
        std::fs::copy(fixture(f), dir.path().join(f)).expect("copy");
    }
    let mut child = cmd(Some(&dir.path().join("nvidia-smi-hangs.sh")))
        .args(["--backend", "nvidia-smi", "--interval-ms", "50"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + PATIENCE;
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("a sample row");
        if line.starts_with("0.") || line.starts_with("1.") {
            break;
        }
    }
    // The fake writes the pid of the `sleep` it leaves behind once that exists; wait for it, so the check
    // below is about a process that surely ran.
    let pid_file = dir.path().join("sleep.pid");
    let pid = loop {
        if let Ok(p) = std::fs::read_to_string(&pid_file)
            && p.ends_with('\n')
        {
            break p.trim().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "the fake never started its sleep"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signalling our own unreaped child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = wait_output(child);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("# gpu-monitor summary: backend nvidia-smi"),
        "{stderr}"
    );
    assert!(stderr.contains("stopped"), "{stderr}");
    let gone = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    };
    while !gone() {
        assert!(
            Instant::now() < deadline,
            "the fake's sleep survived Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn no_backend_exits_1_with_the_reason() {
    let out = run(cmd(Some(&fixture("nvidia-smi-fails.sh"))).args(["--backend", "nvidia-smi"]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no GPU backend available"), "{stderr}");
    assert!(
        stderr.contains("couldn't communicate with the NVIDIA driver"),
        "{stderr}"
    );
}

#[test]
fn a_command_still_runs_without_a_backend() {
    let out = run(cmd(Some(&fixture("nvidia-smi-fails.sh"))).args([
        "--backend",
        "nvidia-smi",
        "-q",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]));
    assert_eq!(out.status.code(), Some(3));
}

/// `gpu-monitor --summary -q --left-running POLICY -- sh -c SCRIPT` (no GPU backend): its summary JSON and
/// stderr; it must exit 0.
fn summary_of(policy: &str, script: &str) -> (serde_json::Value, String) {
    let smi = fixture("nvidia-smi-fails.sh");
    let out = run(cmd(Some(&smi))
        .args(["--backend", "nvidia-smi", "--summary", "-q"])
        .args(["--left-running", policy, "--", "sh", "-c", script]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = serde_json::from_slice(&out.stdout).expect("summary JSON");
    (v, text(&out.stderr))
}

/// A command that backgrounds two sleepers and exits: the JSON summary's `left_running` and a line on stderr
/// say so; with `--left-running wait` gpu-monitor returns only once they have exited.
#[test]
#[cfg(target_os = "linux")]
fn processes_the_command_left_running_are_reported_or_waited_for() {
    // Their output away from the test's pipes (read to their end); the pause lets each forked shell exec `sleep`.
    let (v, err) = summary_of(
        "report",
        "sleep 30 >/dev/null 2>&1 & sleep 30 >/dev/null 2>&1 & sleep 0.2; exit 0",
    );
    let left = &v["left_running"];
    assert_eq!(
        (&left["count"], &left["still_running"]),
        (&json!(2), &json!(2)),
        "{v}"
    );
    assert_eq!(left["policy"], "report");
    let pids: Vec<String> = left["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| {
            assert_eq!(p["name"], "sleep", "{left}");
            p["pid"].to_string()
        })
        .collect();
    assert!(
        err.contains("the command left 2 processes running (sleep "),
        "{err}"
    );
    for p in &pids {
        // SAFETY: kill has no memory preconditions; the pids are the test's sleepers.
        unsafe {
            libc::kill(p.parse().expect("pid"), libc::SIGKILL);
        }
    }

    let start = Instant::now();
    let (v, _) = summary_of("wait", "sleep 1 >/dev/null 2>&1 & exit 0");
    let left = &v["left_running"];
    assert_eq!(
        (&left["count"], &left["still_running"]),
        (&json!(1), &json!(0)),
        "{v}"
    );
    assert!(start.elapsed() >= Duration::from_millis(900));
}

#[test]
fn a_missing_command_exits_127() {
    let out = run(cmd(Some(&fixture("nvidia-smi-normal.sh"))).args([
        "--backend",
        "nvidia-smi",
        "-q",
        "--",
        "/nonexistent/cmd",
    ]));
    assert_eq!(out.status.code(), Some(127));
    assert!(text(&out.stderr).contains("cannot run /nonexistent/cmd"));
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        vec!["--backend", "bogus"],
        vec!["--backend", "replay"],
        vec!["--backend", "nvml", "extra"],
        vec!["--gpus", "first"],
        vec!["--interval-ms", "0"],
        // Bounded (issue 21 item 11): a grace of 2 × 2^64 − 1 ms covered a monitor that died at once.
        vec!["--interval-ms", "18446744073709551615"],
        vec!["--interval-ms", "60001"],
        vec!["--format", "xml"],
    ] {
        let out = run(cmd(None).args(&args));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// Waits until `pid` no longer runs (gone, or a zombie waiting for a parent that is not us).
fn wait_gone(pid: &str, what: &str) {
    let deadline = Instant::now() + PATIENCE;
    let gone = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    };
    while !gone() {
        assert!(Instant::now() < deadline, "{what} survived");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_pid_file(path: &Path) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(p) = std::fs::read_to_string(path)
            && p.ends_with('\n')
        {
            return p.trim().to_owned();
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_is_forwarded_to_the_command_which_is_waited_for_then_the_summary_and_143() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("cmd.pid");
    let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
    let child = cmd(Some(&fixture("nvidia-smi-normal.sh")))
        .args(["--backend", "nvidia-smi", "--interval-ms", "50", "--"])
        .args(["sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = wait_pid_file(&pid_file);
    // SAFETY: signalling our own unreaped child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let out = wait_output(child);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 15), "{stderr}");
    assert!(
        stderr.contains("# gpu-monitor summary: backend nvidia-smi"),
        "{stderr}"
    );
    // The command got the signal and was reaped before we exited: no `sleep 30` left under init.
    wait_gone(&pid, "the command (sleep 30)");
}

#[test]
fn sigterm_without_a_command_stops_and_prints_the_summary() {
    let mut child = cmd(Some(&fixture("nvidia-smi-normal.sh")))
        .args(["--backend", "nvidia-smi", "--interval-ms", "50"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let header = lines.next().expect("a line").expect("text");
    assert!(header.starts_with("# t_s"), "{header}");
    // SAFETY: signalling our own unreaped child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let out = wait_output(child);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("# gpu-monitor summary"));
}

#[test]
fn with_a_command_samples_never_reach_the_commands_stdout() {
    let out = run(cmd(Some(&fixture("nvidia-smi-normal.sh"))).args([
        "--backend",
        "nvidia-smi",
        "--interval-ms",
        "20",
        "--",
        "sh",
        "-c",
        "echo hello; sleep 0.3; echo bye",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello\nbye\n");
    assert!(text(&out.stderr).contains("--output FILE keeps them"));
}

#[test]
fn output_refuses_an_existing_file_and_the_file_being_replayed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let existing = dir.path().join("old.csv");
    std::fs::write(&existing, "keep me\n").expect("write");
    let out = run(cmd(None)
        .arg("--backend")
        .arg(format!("replay:{}", fixture("replay.jsonl").display()))
        .arg("--output")
        .arg(&existing));
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("--overwrite"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&existing).expect("read"),
        "keep me\n"
    );

    // The recording named both ways, even with --overwrite: refused before anything is truncated.
    let rec = dir.path().join("rec.jsonl");
    std::fs::copy(fixture("replay.jsonl"), &rec).expect("copy");
    let before = std::fs::read(&rec).expect("read");
    for backend in [
        vec![format!("replay:{}", rec.display())],
        vec!["replay".to_owned(), rec.display().to_string()],
    ] {
        let out = run(cmd(None)
            .arg("--backend")
            .args(&backend)
            .arg("--output")
            .arg(&rec)
            .arg("--overwrite"));
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        // tool-io's rule: a result never replaces an input of the same run, by any name.
        assert!(
            text(&out.stderr).contains("is this run's replay recording"),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(std::fs::read(&rec).expect("read"), before);
    }

    // With --overwrite an existing file is replaced by the samples.
    let out = run(cmd(None)
        .arg("--backend")
        .arg(format!("replay:{}", fixture("replay.jsonl").display()))
        .args(["-q", "--overwrite", "--output"])
        .arg(&existing));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&existing).expect("read");
    assert!(written.starts_with("# t_s,index"), "{written}");
    assert_eq!(written.lines().count(), 1 + 5);
}

#[test]
fn quiet_with_output_still_writes_the_file_and_nothing_to_stdout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("samples.csv");
    let out = run(cmd(None)
        .arg("--backend")
        .arg(format!(
            "replay:{}",
            fixture("replay-raw-smi.csv").display()
        ))
        .arg("-q")
        .arg("--output")
        .arg(&f));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    // Header and the six readings of replay_csv_streams_rows_and_a_readable_summary.
    assert_eq!(
        std::fs::read_to_string(&f)
            .expect("created")
            .lines()
            .count(),
        7
    );
}

#[test]
fn failed_writes_exit_non_zero_and_a_closed_pipe_is_quiet() {
    // A device is not a result file: refused before the run.
    let out = run(cmd(None)
        .arg("--backend")
        .arg(format!("replay:{}", fixture("replay.jsonl").display()))
        .args(["--output", "/dev/full"]));
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("/dev/full"),
        "{}",
        text(&out.stderr)
    );

    // Samples to a full stdout: one message naming stdout, exit 1, no panic.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let child = cmd(None)
        .arg("--backend")
        .arg(format!("replay:{}", fixture("replay.jsonl").display()))
        .stdout(full)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = wait_output(child);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("writing samples to stdout"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // A reader that goes away after the first line: exit 0, nothing on stderr.
    let mut child = cmd(Some(&fixture("nvidia-smi-normal.sh")))
        .args(["--backend", "nvidia-smi", "--interval-ms", "10"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).expect("line");
    // The reader is dropped here: the pipe is closed.
    let out = wait_output(child);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn a_mistyped_backend_is_a_usage_error_not_an_unavailable_backend() {
    let out = run(cmd(None).args(["--backend", "nvmll"]));
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("unknown backend \"nvmll\""), "{stderr}");
    assert!(!stderr.contains("bad monitor configuration"), "{stderr}");
}

#[test]
fn gpus_default_to_cuda_visible_devices_read_as_cuda_reads_it() {
    use std::os::unix::ffi::OsStrExt;
    let run_with = |value: &std::ffi::OsStr| {
        let out = run(cmd(Some(&fixture("nvidia-smi-normal.sh")))
            .env("CUDA_VISIBLE_DEVICES", value)
            .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
            .args([
                "--backend",
                "nvidia-smi",
                "--interval-ms",
                "50",
                "--summary",
                "-q",
            ])
            .args(["--", "sleep", "0.2"]));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON")
    };
    // The fake has GPUs 0 and 1: `1,7` is GPU 1 alone, as CUDA would use it.
    let v = run_with(std::ffi::OsStr::new("1,7"));
    let gpus: Vec<u64> = v["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .filter_map(|g| g["index"].as_u64())
        .collect();
    assert_eq!(gpus, vec![1]);
    // A value that is not UTF-8 is not "unset" (which would mean both GPUs): its entry ends the list.
    let v = run_with(std::ffi::OsStr::from_bytes(b"0,\xff"));
    assert_eq!(v["gpus"].as_array().map(Vec::len), Some(1));
    assert!(v["warnings"].to_string().contains("not valid UTF-8"), "{v}");
}

#[test]
fn a_closed_stdout_still_leaves_the_sample_file_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("samples.csv");
    let mut child = cmd(Some(&fixture("nvidia-smi-normal.sh")))
        .args(["--backend", "nvidia-smi", "--interval-ms", "10", "--output"])
        .arg(&f)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    for _ in 0..3 {
        lines.next().expect("a line").expect("text");
    }
    drop(lines);
    let out = wait_output(child);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&f).expect("the file is in place");
    assert!(written.starts_with("# t_s,index"), "{written}");
    // Every line of the file is a whole row: the header's column count in each.
    let columns = written.lines().next().expect("header").split(',').count();
    assert!(written.lines().count() >= 3);
    assert!(
        written.lines().all(|l| l.split(',').count() == columns),
        "{written}"
    );
}

#[test]
fn html_report_embeds_the_samples_and_summary_the_json_gives_and_marks_the_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page_path = dir.path().join("monitor.html");
    let replay = format!("replay:{}", fixture("replay.jsonl").display());
    let out = run(cmd(None)
        .args(["--backend", &replay, "--summary", "-q", "--html"])
        .arg(&page_path));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary JSON");
    let page = std::fs::read_to_string(&page_path).expect("the page was written");
    let embedded = embedded_json(&page);
    // The numbers in the page are the tool's: its embedded summary is the --summary JSON itself.
    assert_eq!(embedded["summary"], summary);
    // Every reading the replay kept is in the page (the fixture's lines that are sample objects).
    let lines = std::fs::read_to_string(fixture("replay.jsonl")).expect("fixture");
    let readings = lines
        .lines()
        .filter(|l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v.get("t_s").is_some())
        })
        .count();
    assert!(readings > 0);
    assert_eq!(embedded["samples"].as_array().map(Vec::len), Some(readings));
    assert!(
        !page.contains("command start"),
        "no command: first and last readings are marked"
    );
    assert!(page.contains("<svg"), "charts are drawn");
    // A second run refuses to replace the page without --overwrite.
    let again = run(cmd(None)
        .args(["--backend", &replay, "-q", "--html"])
        .arg(&page_path));
    assert_ne!(again.status.code(), Some(0));
    assert!(
        text(&again.stderr).contains("--overwrite"),
        "{}",
        text(&again.stderr)
    );
    // With a command, its start and end on the monitor's clock are in the page.
    let with_cmd = dir.path().join("cmd.html");
    let out = run(cmd(None)
        .args(["--backend", &replay, "-q", "--html"])
        .arg(&with_cmd)
        .args(["--", "true"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&with_cmd).expect("written");
    assert!(page.contains("command start") && page.contains("command end"));
}
