//! Wrapping a command: `provenance run -- CMD ARGS…` gives a program in any language the same record a Rust
//! benchmark gets by linking the crate.
//!
//! The wrapper claims the output file, reads the static part and the `before` snapshot, starts the GPU monitor,
//! runs the command with inherited stdin/stdout/stderr, and after it ends stops the monitor, reads `after`,
//! writes the record and returns the command's exit status.
//!
//! Signals: SIGINT, SIGTERM and SIGHUP received by the wrapper are forwarded to the command and the record is
//! still written, marked `interrupted`. A Ctrl-C typed at a terminal already reaches the command (it is in the
//! terminal's foreground process group), so on Linux a signal the kernel sent on the terminal's behalf is not
//! forwarded a second time: a program that treats a second SIGINT as "abort the cleanup" (Python does) would
//! otherwise lose its cleanup.
//!
//! A signal the wrapper was started with ignored (`nohup`, a background job of a non-interactive shell) stays
//! ignored, for the wrapper and the command alike.
//!
//! The handlers are process-wide, so a process wraps one command at a time ([`run`] refuses a second).

use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, SystemTime};

use crate::{Claim, CommandRun, Error, Probe, Provenance, Record, claim_output};

/// What to run and where to write the record.
#[derive(Debug, Clone, Default)]
pub struct WrapOptions {
    /// The record's path; by default `provenance-<UTC time>.json` in the current directory.
    pub out: Option<PathBuf>,
    /// Replace an existing record file.
    pub overwrite: bool,
    /// The GPU monitor's interval; the monitor's default when absent.
    pub interval_ms: Option<u64>,
    /// User fields, already parsed (see [`crate::parse_field`]).
    pub fields: Vec<(String, Value)>,
    /// The command and its arguments; must not be empty.
    pub command: Vec<OsString>,
    /// The GPU backend; `auto` when absent.
    pub backend: Option<gpu_monitor::BackendChoice>,
    /// The GPUs in use; when absent, those `CUDA_VISIBLE_DEVICES` names (all when it is unset).
    pub gpus: Option<gpu_monitor::GpuSelection>,
    /// The repository whose git state is recorded; the current directory when absent.
    pub repo_dir: Option<PathBuf>,
}

/// The outcome of a wrapped run.
#[derive(Debug)]
pub struct WrapOutcome {
    /// Where the record went.
    pub out: PathBuf,
    /// The record as written.
    pub record: Record,
    /// The status the wrapper should exit with: the command's exit code, or 128 + the signal that ended it.
    pub exit_code: i32,
    /// Whether the record reached `out`. The command has run either way, so this is reported beside its exit
    /// code rather than in place of it.
    pub written: Result<(), Error>,
}

/// The default record name for a run started at `t`.
///
/// ```
/// let p = provenance::wrap::default_out(std::time::UNIX_EPOCH);
/// assert_eq!(p, std::path::Path::new("provenance-19700101T000000Z.json"));
/// ```
pub fn default_out(t: SystemTime) -> PathBuf {
    PathBuf::from(format!("provenance-{}.json", crate::time::compact_utc(t)))
}

/// Checks the options and claims the output file. Separate from [`run`] so that a caller can report a bad
/// output path before printing anything else.
pub fn prepare(opts: &WrapOptions) -> Result<Claim, Error> {
    if opts.command.is_empty() {
        return Err(Error::Usage("no command given".to_owned()));
    }
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| default_out(SystemTime::now()));
    claim_output(out, opts.overwrite)
}

/// Runs the command under a provenance record and writes the record to `out`.
///
/// ```no_run
/// use provenance::wrap::{WrapOptions, prepare, run};
/// let opts = WrapOptions { command: vec!["./bench".into()], ..WrapOptions::default() };
/// let out = prepare(&opts)?; // the name is reserved before the command starts
/// let outcome = run(opts, &out)?;
/// std::process::exit(outcome.exit_code);
/// # Ok::<(), provenance::Error>(())
/// ```
///
/// Fails only when the command cannot be started (nothing ran; no record is written). The command failing is an
/// outcome, and so is a record that could not be written ([`WrapOutcome::written`]).
pub fn run(opts: WrapOptions, out: &Claim) -> Result<WrapOutcome, Error> {
    let Some((program, args)) = opts.command.split_first() else {
        return Err(Error::Usage("no command given".to_owned()));
    };
    let argv: Vec<String> = opts
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut prov = Provenance::new();
    prov.program = Probe::unavailable("a wrapped command: its build is not known to provenance");
    if let Some(b) = opts.backend.clone() {
        prov.monitor.backend = b;
    }
    if let Some(g) = opts.gpus.clone() {
        prov.monitor.gpus = g;
    }
    if let Some(ms) = opts.interval_ms {
        prov = prov.interval_ms(ms);
    }
    if let Some(dir) = opts.repo_dir.clone() {
        prov = prov.repo_dir(dir);
    }
    for (k, v) in opts.fields.iter() {
        prov = prov.field(k.clone(), v)?;
    }
    let guard = signals::install()?;
    let mut running = prov.start();

    // A Ctrl-C during the set-up (git, GPU identity: seconds on a slow machine) means "stop": the command is not
    // started at all, and the record says so.
    if let Some(first) = guard.received().first().cloned() {
        running.mark_interrupted(format!("{first} before the command started"));
        let mut record = running.finish();
        let code = 128 + signals::number(&first);
        record.set_command(CommandRun {
            argv,
            pid: None,
            exit_code: None,
            signal: None,
            signals_received: guard.received(),
            wrapper_exit_code: code,
        });
        let written = record.write(out);
        return Ok(WrapOutcome {
            out: out.path().to_owned(),
            record,
            exit_code: code,
            written,
        });
    }

    let mut child = match Command::new(program).args(args).spawn() {
        Ok(c) => c,
        Err(source) => {
            drop(running.finish());
            return Err(Error::Spawn {
                program: program.to_string_lossy().into_owned(),
                source,
            });
        }
    };
    let pid = child.id();
    signals::set_child(pid);
    running.add_own_pid(pid);
    // The wait happens on a thread so that this one can keep noting the command's descendants while they live:
    // a GPU process the command started and that exited before the end could not be attributed afterwards.
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = loop {
        match rx.recv_timeout(Duration::from_secs(2)) {
            Ok(status) => break status,
            Err(mpsc::RecvTimeoutError::Timeout) => running.note_own_processes(),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(std::io::Error::other(
                    "the thread waiting for the command ended without a status",
                ));
            }
        }
    };
    signals::set_child(0);
    let received = guard.received();
    let status = status.map_err(|source| Error::Io {
        path: PathBuf::from(program),
        source,
    })?;

    let (exit_code, signal, wrapper_exit_code) = decode(status);
    let interrupted_by = received.first().cloned().or_else(|| {
        signal
            .as_deref()
            .filter(|s| matches!(*s, "SIGINT" | "SIGTERM" | "SIGHUP"))
            .map(|s| format!("{s} (sent to the command directly)"))
    });
    if let Some(why) = interrupted_by {
        running.mark_interrupted(why);
    }
    let mut record = running.finish();
    record.set_command(CommandRun {
        argv,
        pid: Some(pid),
        exit_code,
        signal,
        signals_received: received,
        wrapper_exit_code,
    });
    let written = record.write(out);
    drop(guard);
    Ok(WrapOutcome {
        out: out.path().to_owned(),
        record,
        exit_code: wrapper_exit_code,
        written,
    })
}

fn decode(status: std::process::ExitStatus) -> (Option<i32>, Option<String>, i32) {
    if let Some(code) = status.code() {
        return (Some(code), None, code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return (None, Some(signals::name(sig)), 128 + sig);
        }
    }
    (None, None, 1)
}

#[cfg(unix)]
mod signals {
    //! Signal handling for the wrapper. The handler only touches atomics and calls `kill`, both
    //! async-signal-safe.

    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

    use crate::Error;

    const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    static CHILD: AtomicI32 = AtomicI32::new(0);
    // How many signals arrived, and the numbers of the first eight: a handler cannot allocate.
    static COUNT: AtomicU32 = AtomicU32::new(0);
    static RECEIVED: [AtomicI32; 8] = [const { AtomicI32::new(0) }; 8];

    // A signal that arrived while there was no command to forward it to, delivered when one is registered.
    static PENDING: AtomicI32 = AtomicI32::new(0);

    /// Registers the command's pid (0: none). A signal that arrived just before is forwarded now; the swap on
    /// PENDING makes sure that exactly one of this function and the handler forwards it.
    pub(super) fn set_child(pid: u32) {
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

    pub(super) fn number(name: &str) -> i32 {
        match name {
            "SIGTERM" => libc::SIGTERM,
            "SIGHUP" => libc::SIGHUP,
            _ => libc::SIGINT,
        }
    }

    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
        let n = COUNT.fetch_add(1, Ordering::SeqCst) as usize;
        if let Some(slot) = RECEIVED.get(n) {
            slot.store(sig, Ordering::SeqCst);
        }
        let child = CHILD.load(Ordering::SeqCst);
        // 0 before the command starts and after it has been reaped: never signal a pid that may be reused.
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

    /// Whether the kernel sent the signal on a terminal's behalf (Ctrl-C, Ctrl-\, hangup), in which case the
    /// whole foreground process group, the command included, already has it.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn from_terminal(info: *mut libc::siginfo_t) -> bool {
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler; null is checked anyway.
        !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn from_terminal(_info: *mut libc::siginfo_t) -> bool {
        false
    }

    /// Whether the command is still in our process group, where a terminal's signal reaches it too. A command
    /// that moved to a group of its own (setsid, a job-control shell) gets the signal from us instead.
    fn same_group(child: libc::pid_t) -> bool {
        // SAFETY: getpgid and getpgrp are plain system calls without memory arguments.
        unsafe { libc::getpgid(child) == libc::getpgrp() }
    }

    /// Restores the previous handlers when dropped.
    pub(super) struct Guard {
        old: Vec<(libc::c_int, libc::sigaction)>,
    }

    /// The handlers and the statics are process-wide: one wrapped command at a time.
    static ACTIVE: AtomicBool = AtomicBool::new(false);

    pub(super) fn install() -> Result<Guard, Error> {
        if ACTIVE.swap(true, Ordering::SeqCst) {
            return Err(Error::Unsupported(
                "another wrapped command is already running in this process".to_owned(),
            ));
        }
        COUNT.store(0, Ordering::SeqCst);
        PENDING.store(0, Ordering::SeqCst);
        let mut old = Vec::new();
        for sig in FORWARDED {
            // A signal this process was started with ignored (a background job of a non-interactive shell,
            // nohup) stays ignored, for us and for the command: installing a handler would reset it to the
            // default in the command and let a Ctrl-C meant for the foreground kill it.
            // SAFETY: zeroed sigaction is valid; a null new action only reads the current one.
            let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: `current` is a valid sigaction to write into.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut current) } == 0
                && current.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            // SAFETY: zeroed sigaction is a valid "no flags, empty mask" value that is filled in below.
            let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
            act.sa_sigaction = handler as *const () as usize;
            // SA_RESTART: the wrapper's own wait for the command resumes after the handler instead of failing.
            act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            // SAFETY: act.sa_mask is a valid sigset_t owned by `act`.
            unsafe { libc::sigemptyset(&mut act.sa_mask) };
            // SAFETY: as above; the old action is written into `prev`.
            let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are to valid sigaction values; the handler is async-signal-safe.
            if unsafe { libc::sigaction(sig, &act, &mut prev) } != 0 {
                let err = std::io::Error::last_os_error();
                // Dropping the partial guard restores what was installed and releases ACTIVE.
                drop(Guard { old });
                return Err(Error::Unsupported(format!(
                    "cannot install a handler for {}: {err}",
                    name(sig)
                )));
            }
            old.push((sig, prev));
        }
        Ok(Guard { old })
    }

    impl Guard {
        /// The signals received since install, by name, in order (at most eight are named).
        pub(super) fn received(&self) -> Vec<String> {
            let n = (COUNT.load(Ordering::SeqCst) as usize).min(RECEIVED.len());
            RECEIVED[..n]
                .iter()
                .map(|s| name(s.load(Ordering::SeqCst)))
                .collect()
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            for (sig, prev) in &self.old {
                // SAFETY: restoring an action previously returned by sigaction.
                unsafe {
                    libc::sigaction(*sig, prev, std::ptr::null_mut());
                }
            }
            ACTIVE.store(false, Ordering::SeqCst);
        }
    }

    pub(crate) fn name(sig: libc::c_int) -> String {
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
}

#[cfg(not(unix))]
mod signals {
    use crate::Error;

    pub(super) struct Guard;

    pub(super) fn install() -> Result<Guard, Error> {
        Ok(Guard)
    }

    pub(super) fn set_child(_pid: u32) {}

    pub(super) fn number(_name: &str) -> i32 {
        2
    }

    impl Guard {
        pub(super) fn received(&self) -> Vec<String> {
            Vec::new()
        }
    }
}
