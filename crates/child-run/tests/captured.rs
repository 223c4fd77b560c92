//! A helper program run to completion or ended: its output, how it ended, its process group.

use std::path::Path;
use std::time::{Duration, Instant};

use child_run::captured::{Child, run_once};

fn sh(script: &str) -> (std::path::PathBuf, Vec<String>) {
    (
        Path::new("/bin/sh").to_owned(),
        vec!["-c".to_owned(), script.to_owned()],
    )
}

#[test]
fn stdout_and_stderr_share_the_pipe_and_the_exit_status_is_kept() {
    let (path, args) = sh("echo out; echo err >&2; exit 3");
    let done = run_once(&path, &args, Duration::from_secs(20)).expect("sh runs");
    // One pipe, written in this order by one process: the order is kept.
    assert_eq!(done.output, "out\nerr\n");
    assert_eq!(done.exit.status, "exit status 3");
    assert!(!done.exit.success);
    assert!(done.exit.cpu_s >= 0.0);
}

#[test]
fn a_child_killed_by_a_signal_says_which() {
    let (path, args) = sh("kill -TERM $$");
    let done = run_once(&path, &args, Duration::from_secs(20)).expect("sh runs");
    assert_eq!(
        done.exit.status,
        format!("killed by signal {}", libc::SIGTERM)
    );
    assert!(!done.exit.success);
}

#[test]
fn a_timeout_kills_the_child_and_says_so() {
    let (path, args) = sh("sleep 30");
    let t = Instant::now();
    let r = run_once(&path, &args, Duration::from_millis(200));
    assert!(matches!(r, Err(None)), "a timeout is Err(None)");
    // Killed, not waited for: far less than the 30 s it asked to sleep.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn a_program_that_does_not_exist_is_a_start_error() {
    let r = run_once(
        Path::new("/nonexistent/child-run-test"),
        &[],
        Duration::from_secs(5),
    );
    match r {
        Err(Some(e)) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
        Err(None) => panic!("a start error, not a timeout"),
        Ok(f) => panic!("started: {}", f.exit.status),
    }
}

/// Whether `pid` is still running (absent or a zombie both count as ended: a killed grandchild waits for
/// whoever reaps orphans here).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the command name in parentheses, which may itself hold spaces.
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
        }
        Err(_) => false,
    }
}

#[test]
fn terminate_takes_down_what_the_child_started() {
    let (path, args) = sh("sleep 30 & echo $!; wait");
    let mut child = Child::spawn(&path, &args).expect("sh starts");
    let mut buf = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !buf.ends_with(b"\n") && Instant::now() < deadline {
        child.wait_output(&mut buf, None, Some(Duration::from_secs(1)));
    }
    let grandchild: i32 = String::from_utf8_lossy(&buf)
        .trim()
        .parse()
        .expect("the shell printed its background job's pid");
    assert!(running(grandchild), "the background sleep runs");
    let exit = child.terminate(Duration::from_secs(5));
    assert!(!exit.success, "{}", exit.status);
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(grandchild) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !running(grandchild),
        "the group's SIGTERM/SIGKILL reached the background sleep"
    );
}
