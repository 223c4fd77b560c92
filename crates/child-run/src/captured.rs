//! A child process we can always get rid of: its own process group, a death signal tied to its parent, one
//! pipe for stdout and stderr read with `poll(2)`, and reaping with `wait4` so its CPU time is known.
//!
//! Why each piece: the group lets one `kill(-pgid)` take down whatever the child started (a wrapper script's
//! `sleep` would otherwise hold the pipe open, and a read would never see EOF); the death signal
//! (`PR_SET_PDEATHSIG`) kills it if this process dies without running any cleanup, e.g. on an unhandled
//! Ctrl-C — being in its own group it does not get the terminal's SIGINT itself; stderr shares the pipe because
//! nvidia-smi writes its reasons for failing there and an unread second pipe could fill and stall it; `poll`
//! with a wake-up pipe lets a stop interrupt a read without a thread per pipe or a periodic timer.

use std::io::{self, PipeReader, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A child in its own process group, its stdout and stderr on one pipe; killed (the whole group) and reaped
/// when dropped.
pub struct Child {
    pid: libc::pid_t,
    out: PipeReader,
    exit: Option<Exit>,
}

/// How a reaped child ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Exit {
    /// `exit status N`, `killed by signal N`, or `reaped elsewhere`.
    pub status: String,
    /// It exited with status 0.
    pub success: bool,
    /// Its user plus system CPU seconds (0 when it was reaped elsewhere).
    pub cpu_s: f64,
}

/// What one wait on the child's output produced.
pub enum Event {
    /// Bytes were appended to the buffer.
    Data,
    /// The child closed its end (usually: it exited).
    Eof,
    /// The wake-up descriptor became readable.
    Woken,
    /// The timeout passed.
    Timeout,
}

impl Child {
    /// Starts `path args` with stdin from `/dev/null`, in a process group of its own.
    pub fn spawn(path: &Path, args: &[String]) -> io::Result<Child> {
        let (reader, writer) = io::pipe()?;
        let err_writer = writer.try_clone()?;
        let mut cmd = Command::new(path);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(err_writer)
            .process_group(0);
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id();
            // SAFETY: the closure runs between fork and exec and calls only async-signal-safe functions
            // (prctl, getppid); it allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                        return Err(io::Error::last_os_error());
                    }
                    // The parent may have died between fork and prctl, in which case no signal will ever come.
                    if libc::getppid() as u32 != parent {
                        return Err(io::Error::other("parent exited while starting"));
                    }
                    Ok(())
                });
            }
        }
        let child = cmd.spawn()?;
        // `cmd` holds the write ends; dropping it here is what lets EOF reach the reader when the child exits.
        drop(cmd);
        let pid =
            libc::pid_t::try_from(child.id()).map_err(|_| io::Error::other("pid out of range"))?;
        // The std handle is not kept: reaping is done with wait4 below, and std's Child neither kills nor waits
        // on drop.
        drop(child);
        Ok(Child {
            pid,
            out: reader,
            exit: None,
        })
    }

    /// Its pid, which is also its process group's id.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Waits for output, the wake descriptor or the timeout; appends what was read to `buf`. A readable wake
    /// descriptor wins over output that is ready too.
    pub fn wait_output(
        &mut self,
        buf: &mut Vec<u8>,
        wake: Option<RawFd>,
        timeout: Option<Duration>,
    ) -> Event {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: self.out.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: wake.unwrap_or(-1),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let ms = deadline.map_or(-1, |d| {
                let left = d.saturating_duration_since(Instant::now());
                i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
            });
            // SAFETY: `fds` is a valid array of two pollfd; a negative fd is ignored by poll(2).
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if n < 0 {
                // EINTR (a signal for another thread's handler): wait again for what is left of the timeout.
                continue;
            }
            if n == 0 {
                return Event::Timeout;
            }
            // The wake descriptor first: a child that prints faster than we read keeps its pipe readable on every
            // poll, and a stop must still be seen at once (the unread output stays in the pipe for the next call).
            if fds[1].revents != 0 {
                return Event::Woken;
            }
            if fds[0].revents != 0 {
                let mut chunk = [0u8; 8192];
                match self.out.read(&mut chunk) {
                    Ok(0) => return Event::Eof,
                    Ok(k) => {
                        buf.extend_from_slice(&chunk[..k]);
                        return Event::Data;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => return Event::Eof,
                }
            }
        }
    }

    /// Sends `signal` to the child's whole process group.
    pub fn signal_group(&self, signal: libc::c_int) {
        if self.exit.is_none() {
            // SAFETY: kill(2) with a negative pid addresses the process group; its id cannot have been reused,
            // because its leader (our child) is not yet reaped.
            unsafe {
                libc::kill(-self.pid, signal);
            }
        }
    }

    /// Whether the child has exited, without reaping it: an unreaped child keeps its pid, and so its process
    /// group id, from being reused, which is what makes signalling the group safe.
    pub fn exited(&self) -> bool {
        if self.exit.is_some() {
            return true;
        }
        // SAFETY: `siginfo_t` is plain data for which zero bytes are valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: valid out-pointer; WNOWAIT leaves the child waitable.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            if r == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // SAFETY: after a successful waitid the pid field is initialised (0 when nothing has exited).
            return r == -1 || unsafe { info.si_pid() } != 0;
        }
    }

    /// Reaps the child, waiting for it to exit. Callers make sure it has exited or been killed.
    fn reap(&mut self) -> Exit {
        if let Some(e) = &self.exit {
            return e.clone();
        }
        let mut status: libc::c_int = 0;
        // SAFETY: `rusage` is plain data for which zero bytes are valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let exit = loop {
            // SAFETY: valid out-pointers; `pid` is our unreaped child.
            let r = unsafe { libc::wait4(self.pid, &mut status, 0, &mut ru) };
            if r == self.pid {
                break Exit {
                    status: describe_status(status),
                    success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                    cpu_s: crate::rusage_cpu_s(&ru),
                };
            }
            if r == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // ECHILD: reaped elsewhere (SIGCHLD set to ignore by the host program). Nothing left to wait for.
            break Exit {
                status: "reaped elsewhere".into(),
                success: false,
                cpu_s: 0.0,
            };
        };
        self.exit = Some(exit.clone());
        exit
    }

    /// Ends the child and everything in its group: SIGTERM, up to `grace` for the child to exit, then SIGKILL to
    /// the group (which also takes anything the child left running), then reaps.
    pub fn terminate(&mut self, grace: Duration) -> Exit {
        if self.exit.is_none() {
            if !self.exited() {
                self.signal_group(libc::SIGTERM);
                let deadline = Instant::now() + grace;
                while !self.exited() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            self.signal_group(libc::SIGKILL);
        }
        self.reap()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.signal_group(libc::SIGKILL);
            self.reap();
        }
    }
}

fn describe_status(status: libc::c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status}")
    }
}

/// Output and exit of a command run to completion.
pub struct Finished {
    /// What it printed on stdout and stderr (invalid UTF-8 replaced), at most about 1 MiB.
    pub output: String,
    /// How it ended.
    pub exit: Exit,
}

/// Runs `path args` to completion, at most `timeout`; `Err(None)` on timeout (the child is killed),
/// `Err(Some(e))` if it could not start.
pub fn run_once(
    path: &Path,
    args: &[String],
    timeout: Duration,
) -> Result<Finished, Option<io::Error>> {
    const MAX_OUTPUT: usize = 1 << 20;
    let mut child = Child::spawn(path, args).map_err(Some)?;
    let deadline = Instant::now() + timeout;
    let mut buf = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match child.wait_output(&mut buf, None, Some(left)) {
            Event::Data if buf.len() <= MAX_OUTPUT => {}
            Event::Eof => break,
            Event::Timeout if left.is_zero() || Instant::now() >= deadline => {
                child.terminate(Duration::ZERO);
                return Err(None);
            }
            Event::Data | Event::Woken | Event::Timeout => {
                if buf.len() > MAX_OUTPUT {
                    break;
                }
            }
        }
    }
    // Output closed; give the process what is left of the deadline to exit before it is ended.
    while !child.exited() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let exit = child.terminate(Duration::ZERO);
    Ok(Finished {
        output: String::from_utf8_lossy(&buf).into_owned(),
        exit,
    })
}
