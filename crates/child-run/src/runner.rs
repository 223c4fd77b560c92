//! Running a benchmark command: the one child runner of `gpu-monitor -- CMD` and `provenance run -- CMD`.
//!
//! [`Runner::install`] takes over SIGINT, SIGTERM and SIGHUP for the process; [`Runner::spawn`] starts the
//! command with inherited stdin, stdout and stderr, in our process group; [`Command::wait`] waits for it and
//! reaps it. A signal that reaches us is forwarded to the command, and the caller, instead of dying, gets to
//! finish its work (stop the monitor, print a summary, write a record) and exit with the command's status
//! ([`CommandEnd::exit_code`]: the command's code, or 128 + the signal that ended it, the shell's convention).
//!
//! * A signal the kernel sent on a terminal's behalf (Ctrl-C, Ctrl-\, hangup) already reached the command,
//!   which is in the terminal's foreground process group with us; on Linux it is not forwarded a second time,
//!   because a program that treats a second SIGINT as "abort the cleanup" (Python does) would lose its cleanup.
//!   A command that left our group (setsid, a job-control shell) gets it from us.
//! * A signal that arrives before the command is started is held and delivered once it is
//!   ([`Runner::received`] lets the caller decide not to start it at all).
//! * A signal this process was started with ignored (`nohup`, a background job of a non-interactive shell)
//!   stays ignored, for us and for the command.
//! * The command's pid is forgotten before it is reaped, so a late signal is never sent to a reused pid.
//! * The command's environment carries a mark ([`crate::left::MARK_VAR`]); when it has exited, the processes
//!   holding the mark are the ones it left running, and [`Command::wait`] reports, waits for or ends them
//!   ([`crate::left`]).
//!
//! Signal handlers are process-wide, so a process runs one command at a time: a second [`Runner::install`]
//! before the first runner is dropped is refused. Dropping the runner restores the previous handlers. This is
//! the only place in the crate that installs a signal handler, and only when asked to.

use std::ffi::OsString;
use std::io;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::left::{self, LeftPolicy, LeftRunning};

/// The signals forwarded to the command.
pub const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

static CHILD: AtomicI32 = AtomicI32::new(0);
// How many signals arrived, and the numbers of the first eight: a handler cannot allocate.
static COUNT: AtomicU32 = AtomicU32::new(0);
static RECEIVED: [AtomicI32; 8] = [const { AtomicI32::new(0) }; 8];
// A signal that arrived while there was no command to forward it to, delivered when one is registered.
static PENDING: AtomicI32 = AtomicI32::new(0);
/// The handlers and the statics are process-wide: one runner at a time.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The signal handlers, installed; see the [module](self) documentation.
pub struct Runner {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

/// A command started by a [`Runner`], not yet reaped.
pub struct Command<'r> {
    child: std::process::Child,
    pid: u32,
    /// Its start time in clock ticks after boot (`None`: unknown): nothing started before it is its
    /// descendant ([`crate::left`]).
    started: Option<u64>,
    /// Its mark in the environment of everything it starts ([`crate::left`]).
    mark: String,
    runner: &'r Runner,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandEnd {
    /// Its pid.
    pub pid: u32,
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it (`SIGTERM`, `signal 34`), when one did.
    pub signal: Option<String>,
    /// Every signal this process received while the runner was installed, by name, in order (eight at most).
    pub signals_received: Vec<String>,
    /// What the caller should exit with: `code`, or 128 + the signal's number, or 1 when neither is known.
    pub exit_code: i32,
    /// The processes it left running when it exited, and what became of them; `None` where that cannot be
    /// known (no `/proc`).
    pub left_running: Option<LeftRunning>,
}

impl Runner {
    /// Installs the handlers. Fails when another runner is installed in this process, or a handler cannot be.
    pub fn install() -> io::Result<Runner> {
        if ACTIVE.swap(true, Ordering::SeqCst) {
            return Err(io::Error::other(
                "another command is already running under a runner in this process",
            ));
        }
        COUNT.store(0, Ordering::SeqCst);
        PENDING.store(0, Ordering::SeqCst);
        CHILD.store(0, Ordering::SeqCst);
        let mut runner = Runner { old: Vec::new() };
        for sig in FORWARDED {
            // SAFETY: zeroed sigaction is a valid value to read the current action into.
            let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: `current` is a valid sigaction to write into; a null new action only reads.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut current) } == 0
                && current.sa_sigaction == libc::SIG_IGN
            {
                // Installing a handler would reset it to the default in the command, and let a Ctrl-C meant for
                // the foreground job kill a background one.
                continue;
            }
            // SAFETY: zeroed sigaction is a valid "no flags, empty mask" value that is filled in below.
            let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
            act.sa_sigaction = handler as *const () as usize;
            // SA_RESTART: our own waits resume after the handler instead of failing.
            act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            // SAFETY: act.sa_mask is a valid sigset_t owned by `act`.
            unsafe { libc::sigemptyset(&mut act.sa_mask) };
            // SAFETY: zeroed sigaction is valid storage for the previous action.
            let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are to valid sigaction values; the handler is async-signal-safe.
            if unsafe { libc::sigaction(sig, &act, &mut prev) } != 0 {
                let err = io::Error::last_os_error();
                // Dropping the runner restores what was installed and releases ACTIVE.
                drop(runner);
                return Err(io::Error::new(
                    err.kind(),
                    format!("cannot install a handler for {}: {err}", signal_name(sig)),
                ));
            }
            runner.old.push((sig, prev));
        }
        Ok(runner)
    }

    /// The signals received since [`install`](Self::install), by name, in order (at most eight are named).
    pub fn received(&self) -> Vec<String> {
        let n = (COUNT.load(Ordering::SeqCst) as usize).min(RECEIVED.len());
        RECEIVED[..n]
            .iter()
            .map(|s| signal_name(s.load(Ordering::SeqCst)))
            .collect()
    }

    /// Starts `argv` (program and arguments) with inherited stdin, stdout and stderr; signals are forwarded to
    /// it from now until it is reaped, and one that arrived before is delivered now.
    pub fn spawn(&self, argv: &[OsString]) -> io::Result<Command<'_>> {
        self.spawn_with(argv, |_| {})
    }

    /// As [`spawn`](Self::spawn), letting the caller set up the [`std::process::Command`] (environment,
    /// directory, output) first.
    pub fn spawn_with(
        &self,
        argv: &[OsString],
        setup: impl FnOnce(&mut std::process::Command),
    ) -> io::Result<Command<'_>> {
        let Some((program, args)) = argv.split_first() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no command given",
            ));
        };
        let mut cmd = std::process::Command::new(program);
        cmd.args(args)
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit());
        setup(&mut cmd);
        // After the caller's set-up, so that clearing the environment there cannot drop it.
        let mark = left::new_mark();
        cmd.env(left::MARK_VAR, left::mark_value(&mark));
        let child = cmd.spawn()?;
        let pid = child.id();
        set_child(pid);
        Ok(Command {
            child,
            pid,
            started: left::start_time(pid),
            mark,
            runner: self,
        })
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        CHILD.store(0, Ordering::SeqCst);
        for (sig, prev) in &self.old {
            // SAFETY: restoring an action previously returned by sigaction.
            unsafe {
                libc::sigaction(*sig, prev, std::ptr::null_mut());
            }
        }
        ACTIVE.store(false, Ordering::SeqCst);
    }
}

impl Command<'_> {
    /// The command's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits for the command to end, calling `tick` every `every` meanwhile (to note its descendants, say), then
    /// reaps it. Signals keep being forwarded until it has ended. Then finds what it left running and treats
    /// it by `left` ([`crate::left`]; a signal arriving stops a wait).
    pub fn wait(
        mut self,
        every: Duration,
        mut tick: impl FnMut(),
        left: LeftPolicy,
    ) -> io::Result<CommandEnd> {
        let pid = self.pid;
        let (tx, rx) = mpsc::channel();
        // The waiting thread only learns that the command has ended (WNOWAIT): it stays unreaped, so its pid
        // cannot be reused, until this thread has stopped forwarding to it.
        std::thread::Builder::new()
            .name("runner-wait".into())
            .spawn(move || {
                let _ = tx.send(wait_exited(pid));
            })?;
        let waited = loop {
            match rx.recv_timeout(every) {
                Ok(r) => break r,
                Err(mpsc::RecvTimeoutError::Timeout) => tick(),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(io::Error::other(
                        "the thread waiting for the command ended without a status",
                    ));
                }
            }
        };
        set_child(0);
        waited?;
        let status = self.child.wait()?;
        let signals_before = COUNT.load(Ordering::SeqCst);
        let left_running = left::settle(&self.mark, self.started, left, || {
            COUNT.load(Ordering::SeqCst) != signals_before
        });
        Ok(self.end(status, left_running))
    }

    fn end(
        &self,
        status: std::process::ExitStatus,
        left_running: Option<LeftRunning>,
    ) -> CommandEnd {
        use std::os::unix::process::ExitStatusExt;
        let (code, signal, exit_code) = match (status.code(), status.signal()) {
            (Some(c), _) => (Some(c), None, c),
            (None, Some(sig)) => (None, Some(signal_name(sig)), 128 + sig),
            (None, None) => (None, None, 1),
        };
        CommandEnd {
            pid: self.pid,
            code,
            signal,
            signals_received: self.runner.received(),
            exit_code,
            left_running,
        }
    }
}

/// Blocks until `pid` has exited, leaving it waitable.
fn wait_exited(pid: u32) -> io::Result<()> {
    let id = libc::id_t::from(pid);
    loop {
        // SAFETY: `siginfo_t` is plain data for which zero bytes are valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid out-pointer; WNOWAIT leaves the child waitable.
        let r = unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Registers the command's pid (0: none). A signal that arrived just before is forwarded now; the swap on
/// PENDING makes sure that exactly one of this function and the handler forwards it.
fn set_child(pid: u32) {
    let pid = i32::try_from(pid).unwrap_or(0);
    CHILD.store(pid, Ordering::SeqCst);
    if pid > 0 {
        let p = PENDING.swap(0, Ordering::SeqCst);
        if p != 0 {
            // SAFETY: kill has no memory preconditions.
            unsafe {
                libc::kill(pid, p);
            }
        }
    }
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // Only atomics and kill(2): both async-signal-safe.
    let n = COUNT.fetch_add(1, Ordering::SeqCst) as usize;
    if let Some(slot) = RECEIVED.get(n) {
        slot.store(sig, Ordering::SeqCst);
    }
    let child = CHILD.load(Ordering::SeqCst);
    // 0 before the command starts and once it has ended: never signal a pid that may be reused.
    if child > 0 {
        if !(from_terminal(info) && same_group(child)) {
            // SAFETY: kill is async-signal-safe and has no memory preconditions.
            unsafe {
                libc::kill(child, sig);
            }
        }
        return;
    }
    PENDING.store(sig, Ordering::SeqCst);
    // The command may have been registered since CHILD was read; whoever takes PENDING forwards it.
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0 {
        let p = PENDING.swap(0, Ordering::SeqCst);
        if p != 0 {
            // SAFETY: as above.
            unsafe {
                libc::kill(child, p);
            }
        }
    }
}

/// Whether the kernel sent the signal on a terminal's behalf, in which case the whole foreground process
/// group, the command included, already has it.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn from_terminal(info: *mut libc::siginfo_t) -> bool {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler; null is checked anyway.
    !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn from_terminal(_info: *mut libc::siginfo_t) -> bool {
    false
}

/// Whether the command is still in our process group, where a terminal's signal reaches it too.
fn same_group(child: libc::pid_t) -> bool {
    // SAFETY: getpgid and getpgrp are plain system calls without memory arguments.
    unsafe { libc::getpgid(child) == libc::getpgrp() }
}

/// The number of a signal named as [`signal_name`] names it (`SIGINT` for anything unknown).
pub fn signal_number(name: &str) -> i32 {
    match name {
        "SIGTERM" => libc::SIGTERM,
        "SIGHUP" => libc::SIGHUP,
        "SIGKILL" => libc::SIGKILL,
        "SIGQUIT" => libc::SIGQUIT,
        _ => libc::SIGINT,
    }
}

/// A signal's name (`SIGTERM`), or `signal N` for one without a name here.
pub fn signal_name(sig: libc::c_int) -> String {
    match sig {
        libc::SIGINT => "SIGINT".to_owned(),
        libc::SIGTERM => "SIGTERM".to_owned(),
        libc::SIGHUP => "SIGHUP".to_owned(),
        libc::SIGKILL => "SIGKILL".to_owned(),
        libc::SIGQUIT => "SIGQUIT".to_owned(),
        libc::SIGSEGV => "SIGSEGV".to_owned(),
        libc::SIGABRT => "SIGABRT".to_owned(),
        libc::SIGPIPE => "SIGPIPE".to_owned(),
        libc::SIGBUS => "SIGBUS".to_owned(),
        other => format!("signal {other}"),
    }
}
