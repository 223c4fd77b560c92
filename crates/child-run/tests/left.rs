//! What a command left running when it exited: a real shell that backgrounds sleepers and exits. Reported
//! (pids and names, left alone), waited for, ended. One test function: a runner is process-wide.

#![cfg(target_os = "linux")]
// Helpers outside `#[test]` functions panic on purpose too: a failed run is a failed test.
#![allow(clippy::expect_used)]

use std::ffi::OsString;
use std::time::{Duration, Instant};

use child_run::left::{LeftPolicy, LeftRunning};
use child_run::runner::Runner;

fn sh(script: &str) -> Vec<OsString> {
    ["/bin/sh", "-c", script].map(OsString::from).to_vec()
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; only a process that has not is alive here.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !matches!(
            s[s.rfind(')').expect("comm") + 2..].chars().next(),
            Some('Z' | 'X')
        )
    })
}

fn run(runner: &Runner, script: &str, policy: LeftPolicy) -> LeftRunning {
    let end = runner
        .spawn(&sh(script))
        .expect("starts")
        .wait(Duration::from_millis(50), || {}, policy)
        .expect("reaped");
    assert_eq!(end.exit_code, 0);
    end.left_running.expect("checked on Linux")
}

#[test]
fn what_a_command_leaves_running_is_reported_waited_for_or_ended() {
    let runner = Runner::install().expect("runner");

    // Nothing left: none found.
    let left = run(&runner, "exit 0", LeftPolicy::Report);
    assert_eq!((left.count, left.still_running), (0, 0));

    // Five sleepers in the background, one of them in a session of its own (setsid): all five reported by
    // pid and name, and still running afterwards.
    let left = run(
        &runner,
        // (The pause lets setsid exec sleep before the command exits, so that every name is `sleep`.)
        "for i in 1 2 3 4; do sleep 30 & done; setsid sleep 30 & sleep 0.2; exit 0",
        LeftPolicy::Report,
    );
    assert_eq!((left.count, left.still_running), (5, 5), "{left:?}");
    assert_eq!(left.processes.len(), 5);
    assert!(left.processes.iter().all(|p| p.name == "sleep"), "{left:?}");
    assert!(left.processes.iter().all(|p| alive(p.pid)), "{left:?}");
    let reported: Vec<u32> = left.processes.iter().map(|p| p.pid).collect();

    // Ending: every one of them gone, SIGTERM being enough for sleep (well within the grace period).
    let left = run(&runner, "sleep 30 & sleep 30 & exit 0", LeftPolicy::End);
    assert_eq!((left.count, left.still_running), (2, 0), "{left:?}");
    assert!(left.processes.iter().all(|p| !alive(p.pid)), "{left:?}");
    assert!(left.settle_s < 3.0, "{left:?}");

    // Waiting: returns once the 0.5 s sleepers are gone, not before.
    let start = Instant::now();
    let left = run(&runner, "sleep 0.5 & sleep 0.5 & exit 0", LeftPolicy::Wait);
    assert_eq!((left.count, left.still_running), (2, 0), "{left:?}");
    assert!(start.elapsed() >= Duration::from_millis(450));
    assert!(left.settle_s > 0.3, "{left:?}");

    // The first run's sleepers are another command's: untouched by the end and the wait since.
    assert!(reported.iter().all(|p| alive(*p)));
    for p in reported {
        // SAFETY: kill has no memory preconditions; the pid was just seen alive as our sleeper.
        unsafe {
            libc::kill(p as libc::pid_t, libc::SIGKILL);
        }
    }
}
