//! The benchmark-command runner: exit status, 128 + N, one runner per process, a signal forwarded. One test
//! function, because a runner is process-wide and the test harness runs functions on parallel threads.

use std::ffi::OsString;
use std::time::Duration;

use child_run::left::LeftPolicy;
use child_run::runner::{Runner, signal_name, signal_number};

fn sh(script: &str) -> Vec<OsString> {
    ["/bin/sh", "-c", script].map(OsString::from).to_vec()
}

fn sigterm_ignored() -> bool {
    // SAFETY: `current` is a valid sigaction to write into; a null new action only reads.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let read = unsafe { libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut current) };
    read == 0 && current.sa_sigaction == libc::SIG_IGN
}

#[test]
fn the_runner_reports_how_each_command_ended_and_forwards_a_signal() {
    let runner = Runner::install().expect("first runner");
    assert!(Runner::install().is_err(), "a second runner is refused");

    let end = runner
        .spawn(&sh("exit 7"))
        .expect("starts")
        .wait(Duration::from_millis(50), || {}, LeftPolicy::Report)
        .expect("reaped");
    assert_eq!(
        (end.code, end.signal.clone(), end.exit_code),
        (Some(7), None, 7)
    );

    let end = runner
        .spawn(&sh("kill -TERM $$"))
        .expect("starts")
        .wait(Duration::from_millis(50), || {}, LeftPolicy::Report)
        .expect("reaped");
    // The shell's convention: 128 + 15.
    assert_eq!(end.code, None);
    assert_eq!(end.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(end.exit_code, 128 + 15);

    let err = runner.spawn(&[]).err().expect("no command");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);

    if !sigterm_ignored() {
        // SIGTERM sent to this process by kill(2) (not by a terminal) reaches the command; we survive it.
        let mut sent = false;
        let end = runner
            .spawn(&sh("sleep 30"))
            .expect("starts")
            .wait(
                Duration::from_millis(50),
                || {
                    if !sent {
                        sent = true;
                        // SAFETY: kill has no memory preconditions; the runner's handler is installed.
                        unsafe {
                            libc::kill(libc::getpid(), libc::SIGTERM);
                        }
                    }
                },
                LeftPolicy::Report,
            )
            .expect("reaped");
        assert_eq!(end.signal.as_deref(), Some("SIGTERM"));
        assert_eq!(end.signals_received, vec!["SIGTERM".to_owned()]);
        assert_eq!(end.exit_code, 143);
    }
    drop(runner);
    let again = Runner::install().expect("a runner again once the first is dropped");
    assert!(again.received().is_empty());
}

#[test]
fn signal_names_and_numbers_agree() {
    for sig in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGKILL,
        libc::SIGQUIT,
    ] {
        assert_eq!(signal_number(&signal_name(sig)), sig);
    }
    assert_eq!(signal_name(34), "signal 34");
}
