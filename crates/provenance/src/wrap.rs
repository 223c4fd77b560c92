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
//! The handlers are process-wide, so a process wraps one command at a time ([`run`] refuses a second). The
//! runner is `child_run::runner`, the same one `gpu-monitor -- CMD` uses.

use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

pub use child_run::left::LeftPolicy;
use child_run::runner::{self, Runner};

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
    /// What to do with the processes the command leaves running when it exits (`child_run::left`): report
    /// them (the default), wait for them, or end them. The record's `command.left_running` says which and
    /// what became of them.
    pub left_running: LeftPolicy,
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
    /// Whether the record was written, and where: `out`, or beside it when the command (or anyone) created
    /// a file of that name during the run ([`tool_io::Written`]). The command has run either way, so this is
    /// reported beside its exit code rather than in place of it.
    pub written: Result<tool_io::Written, Error>,
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
    // A recording to replay is this run's input: noted before the claim, so that the record can never be
    // aimed at it (by any name; tool-io compares files). One that cannot be opened is the monitor's to report.
    if let Some(gpu_monitor::BackendChoice::Replay(input)) = &opts.backend {
        drop(tool_io::open_input(input, "replay recording"));
    }
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
    let Some(program) = opts.command.first() else {
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
    let runner = Runner::install().map_err(|e| Error::Unsupported(e.to_string()))?;
    let mut running = prov.start();

    // A Ctrl-C during the set-up (git, GPU identity: seconds on a slow machine) means "stop": the command is not
    // started at all, and the record says so.
    if let Some(first) = runner.received().first().cloned() {
        running.mark_interrupted(format!("{first} before the command started"));
        let mut record = running.finish();
        let code = 128 + runner::signal_number(&first);
        record.set_command(CommandRun {
            argv,
            pid: None,
            exit_code: None,
            signal: None,
            signals_received: runner.received(),
            wrapper_exit_code: code,
            left_running: None,
        });
        let written = record.write(out);
        return Ok(WrapOutcome {
            out: out.path().to_owned(),
            record,
            exit_code: code,
            written,
        });
    }

    let command = match runner.spawn(&opts.command) {
        Ok(c) => c,
        Err(source) => {
            drop(running.finish());
            return Err(Error::Spawn {
                program: program.to_string_lossy().into_owned(),
                source,
            });
        }
    };
    let pid = command.pid();
    running.add_own_pid(pid);
    // Every 2 s while it runs, note the command's descendants: a GPU process the command started and that
    // exited before the end could not be attributed afterwards. What it leaves running is treated before the
    // record is finished, so that a wait for it is inside the monitored time.
    let end = command
        .wait(
            Duration::from_secs(2),
            || running.note_own_processes(),
            opts.left_running,
        )
        .map_err(|source| Error::Io {
            path: PathBuf::from(program),
            source,
        })?;
    let received = end.signals_received.clone();
    let (exit_code, signal, wrapper_exit_code) = (end.code, end.signal, end.exit_code);
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
        left_running: end.left_running,
    });
    let written = record.write(out);
    drop(runner);
    Ok(WrapOutcome {
        out: out.path().to_owned(),
        record,
        exit_code: wrapper_exit_code,
        written,
    })
}
