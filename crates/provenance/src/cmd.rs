//! Running a probe's helper program (git, nvidia-smi, powershell.exe) with a deadline.
//!
//! A probe must never hang the benchmark: a tool that stalls (a wedged driver, a network filesystem under git)
//! is killed at its deadline and the probe reports why.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// What a helper program printed, when it exited successfully.
#[derive(Debug)]
pub(crate) struct Output {
    pub stdout: Vec<u8>,
}

impl Output {
    /// Stdout as trimmed text; invalid UTF-8 is replaced rather than refused, since it only feeds records.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_owned()
    }
}

/// Why a helper program gave no output: a one-line reason fit for a record, and the exit code when it ran.
#[derive(Debug)]
pub(crate) struct Failure {
    pub reason: String,
    pub code: Option<i32>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Failure { reason, code: None }
    }
}

/// Runs `cmd` to completion within `timeout`. On any failure the reason says which: the program missing, a
/// non-zero exit with the first line of stderr, or the deadline.
pub(crate) fn run(cmd: Command, timeout: Duration) -> Result<Output, Failure> {
    run_with_grace(cmd, timeout, GRACE)
}

/// How long the output pipes may stay open after the program exited (see [`run_with_grace`]).
const GRACE: Duration = Duration::from_secs(2);

fn run_with_grace(mut cmd: Command, timeout: Duration, grace: Duration) -> Result<Output, Failure> {
    let shown = describe(&cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| Failure::from(spawn_reason(cmd.get_program(), &e)))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = match wait_deadline(&mut child, timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            // The readers end once the killed child's pipes close.
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "`{shown}` did not finish within {} s and was killed",
                timeout.as_secs_f64()
            )
            .into());
        }
        Err(e) => return Err(format!("waiting for `{shown}` failed: {e}").into()),
    };
    // A grandchild that inherited the pipes (a daemon the tool started) would keep them open forever, so they
    // are not waited for past a short grace period. What was read by then may be only part of the output: a
    // truncated `git diff` would hash as another change (an empty one as a clean tree), so a successful exit
    // with its stdout still open is a failure, not an empty success. Stderr only feeds a failure's message.
    let deadline = Instant::now() + grace;
    let stdout = stdout.recv_timeout(grace);
    let stderr = stderr
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .unwrap_or_default();
    if status.success() {
        match stdout {
            Ok(stdout) => Ok(Output { stdout }),
            Err(_) => Err(Failure {
                reason: format!(
                    "`{shown}` exited, but its output stayed open {} s longer (held by a process it \
                     started?): output incomplete",
                    grace.as_secs_f64()
                ),
                code: status.code(),
            }),
        }
    } else {
        let err = String::from_utf8_lossy(&stderr);
        let first = err
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no message");
        Err(Failure {
            reason: format!("`{shown}` failed ({status}): {first}"),
            code: status.code(),
        })
    }
}

/// Polls the child until it exits or the deadline passes; `Ok(None)` means the deadline passed.
fn wait_deadline(
    child: &mut Child,
    timeout: Duration,
) -> io::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + timeout;
    // Short first naps keep a fast tool (git rev-parse: ~2 ms) fast; longer ones keep a slow one cheap.
    let mut nap = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(Duration::from_millis(50));
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    rx
}

fn spawn_reason(program: &OsStr, e: &io::Error) -> String {
    let name = Path::new(program).display();
    if e.kind() == io::ErrorKind::NotFound {
        format!("{name} not found (not installed or not on PATH)")
    } else {
        format!("cannot run {name}: {e}")
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Finds `name` on PATH the way a shell would, without running it.
pub(crate) fn which(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_gives_a_reason_not_an_error() {
        let r = run(
            Command::new("/nonexistent/definitely-not-here"),
            Duration::from_secs(5),
        );
        let reason = r.expect_err("must fail").reason;
        assert!(reason.contains("not found"), "{reason}");
    }

    #[cfg(unix)]
    #[test]
    fn a_failing_program_reports_its_stderr() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo 'bad thing' >&2; exit 3"]);
        let f = run(c, Duration::from_secs(10)).expect_err("must fail");
        assert!(f.reason.contains("bad thing"), "{}", f.reason);
        assert_eq!(f.code, Some(3));
    }

    #[cfg(unix)]
    #[test]
    fn output_held_open_past_the_grace_period_is_a_failure_not_empty_success() {
        // The background `sleep` inherits stdout and keeps it open after `sh` has exited successfully.
        let mut c = Command::new("sh");
        c.args(["-c", "printf partial; sleep 5 & exit 0"]);
        let f = run_with_grace(c, Duration::from_secs(10), Duration::from_millis(200))
            .expect_err("an incomplete output must not pass as success");
        assert!(f.reason.contains("output incomplete"), "{}", f.reason);
        assert_eq!(f.code, Some(0));
    }

    #[cfg(unix)]
    #[test]
    fn output_closed_in_time_is_complete() {
        let mut c = Command::new("sh");
        c.args(["-c", "printf 'all of it'"]);
        let o = run_with_grace(c, Duration::from_secs(10), Duration::from_secs(10)).expect("runs");
        assert_eq!(o.text(), "all of it");
    }

    #[cfg(unix)]
    #[test]
    fn a_hanging_program_is_killed_at_the_deadline() {
        let mut c = Command::new("sleep");
        c.arg("30");
        let t = Instant::now();
        let reason = run(c, Duration::from_millis(200))
            .expect_err("must time out")
            .reason;
        assert!(reason.contains("did not finish"), "{reason}");
        // Generous bound: the point is "not 30 s", even on a loaded machine.
        assert!(t.elapsed() < Duration::from_secs(20));
    }
}
