//! `gpu-monitor`: streams GPU samples like `nvidia-smi dmon` until Ctrl-C or until a command exits, then
//! prints a summary. Everything but argument parsing and printing is the `gpu-monitor` library.

mod render;

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use child_run::left::{LeftPolicy, LeftRunning};
use child_run::runner::{self, Runner};
use clap::{Parser, ValueEnum};
use gpu_monitor::{
    BackendChoice, GpuSelection, Monitor, MonitorConfig, Sample, SourceEnd, StopHandle,
};
use tool_io::{Claim, Stream};

/// Added to the line about processes CMD left running when nothing was done about them.
const REPORT_HINT: &str = " (--left-running wait or end to change that)";

const PROGRAM: &str = "gpu-monitor";

/// One line on stderr, control characters from inputs escaped (`tool_io::terminal`).
macro_rules! say {
    ($($t:tt)*) => {
        tool_io::terminal::note(&format!($($t)*))
    };
}
/// How often a run without a command looks for a signal asking it to stop.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

#[derive(Parser)]
#[command(
    name = "gpu-monitor",
    version,
    about = "Sample NVIDIA GPUs (NVML, else nvidia-smi) beside a command, then summarise",
    after_help = "Without a command, samples go to stdout (or --output FILE); the readable summary to stderr, the \
                  JSON one (--summary) to stdout after the samples — add -q for JSON alone.\n\
                  With a command (gpu-monitor [OPTIONS] -- CMD ARGS…), the command keeps stdout and stderr to \
                  itself: samples are written only to --output FILE (without it, only the summary is kept), \
                  SIGINT/SIGTERM/SIGHUP are forwarded to the command, and gpu-monitor exits with its exit code \
                  (128 + N when signal N ended it)."
)]
struct Args {
    /// Requested interval between readings of each GPU, in milliseconds (1 to 60000).
    #[arg(long, default_value_t = 500, value_name = "N")]
    interval_ms: u64,
    /// auto | nvml | nvidia-smi | replay:FILE.
    // Two values only for the old spelling `--backend replay FILE`, kept as an alias.
    #[arg(long, num_args = 1..=2, value_name = "KIND", default_value = "auto")]
    backend: Vec<String>,
    /// cuda (the GPUs CUDA_VISIBLE_DEVICES names; all when unset) | all | a comma list of indices and UUIDs.
    #[arg(long, default_value = "cuda", value_name = "GPUS")]
    gpus: String,
    /// How samples are written.
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    format: Format,
    /// Print the summary as JSON (to stdout) instead of readable text (to stderr).
    #[arg(long, visible_alias = "json")]
    summary: bool,
    /// Do not stream samples to stdout; only the summary (and --output, if given).
    #[arg(short, long)]
    quiet: bool,
    /// Write the samples to this file (renamed into place when the run ends; refuses an existing file).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write a self-contained HTML report: clocks, power, utilisation and temperature over time per
    /// GPU, throttle reasons shaded, the command's start and end marked.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Replace an existing --output (or --html) file.
    #[arg(long)]
    overwrite: bool,
    /// The nvidia-smi to run (default: $KL1_NVIDIA_SMI, else nvidia-smi on PATH).
    #[arg(long, value_name = "PATH")]
    nvidia_smi: Option<PathBuf>,
    /// What to do with processes CMD leaves running when it exits (background workers): report them (summary
    /// and stderr), wait until they have exited (monitoring goes on), or end them (SIGTERM, then SIGKILL
    /// after 3 s).
    #[arg(long, value_name = "WHAT", default_value = "report", value_parser = |s: &str| s.parse::<LeftPolicy>())]
    left_running: LeftPolicy,
    /// Command to run while monitoring; monitoring ends when it exits.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// CSV rows after a `# t_s,index,…` header (replayable with --backend replay:FILE).
    Csv,
    /// One JSON object per sample (replayable).
    Jsonl,
}

/// Where samples go, and what went wrong writing to each.
struct Sink {
    stdout: Option<io::Stdout>,
    file: Option<Stream>,
    /// The first write error on stdout; nothing more is written there after it.
    stdout_failed: Option<io::Error>,
    /// The first write error on the sample file; the file is then abandoned, never renamed into place.
    file_failed: Option<io::Error>,
    /// The HTML report's name, claimed before sampling.
    html: Option<Claim>,
    /// The command's start and end on the monitor's clock ([`gpu_monitor::Monitor::elapsed_s`]).
    command_s: Option<(f64, f64)>,
    /// What the command left running when it exited (`child_run::left`), once it has.
    left_running: Option<LeftRunning>,
}

impl Sink {
    /// Writes a line to every destination still working; `false` once stdout has failed (a run without a
    /// command then stops: its reader is gone or its disk is full).
    fn write_line(&mut self, line: &str) -> bool {
        if let Some(out) = &self.stdout
            && self.stdout_failed.is_none()
        {
            let mut out = out.lock();
            if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
                self.stdout_failed = Some(e);
            }
        }
        if let Some(f) = &mut self.file
            && self.file_failed.is_none()
            && let Err(e) = writeln!(f, "{line}")
        {
            self.file_failed = Some(e);
        }
        self.stdout_failed.is_none()
    }
}

/// A claim refused: `--overwrite` names the way out of an existing file; a result aimed at an input, or two
/// results at one file, are contradictory options (exit 2).
fn refused(e: &tool_io::Error) -> ExitCode {
    let hint = match e {
        tool_io::Error::Exists { .. } => "; pass --overwrite to replace it",
        _ => "",
    };
    say!("{PROGRAM}: {e}{hint}");
    match e {
        tool_io::Error::ResultIsInput { .. } | tool_io::Error::ClaimedTwice { .. } => {
            ExitCode::from(2)
        }
        _ => ExitCode::FAILURE,
    }
}

fn main() -> ExitCode {
    let args: Args = match tool_io::cli::parse(PROGRAM) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let usage = |msg: String| {
        say!("{PROGRAM}: {msg}");
        ExitCode::from(2)
    };
    let backend = match BackendChoice::from_words(&args.backend) {
        Ok(b) => b,
        Err(e) => return usage(format!("--backend: {e}")),
    };
    let gpus: GpuSelection = match args.gpus.parse() {
        Ok(g) => g,
        Err(e) => return usage(format!("--gpus: {e}")),
    };
    if let Err(why) = gpu_monitor::check_interval_ms(args.interval_ms) {
        return usage(format!("--interval-ms: {why}"));
    }
    // The recording is noted as this run's input before any result is claimed, so that no output flag can
    // name it (by any name: tool-io compares files, not names). A recording that cannot be opened is left
    // to the backend, which says why in the summary.
    if let BackendChoice::Replay(input) = &backend {
        drop(tool_io::open_input(input, "replay recording"));
    }
    let file = match &args.output {
        Some(path) => match Claim::new(path, args.overwrite).and_then(Claim::stream) {
            Ok(s) => Some(s),
            Err(e) => return refused(&e),
        },
        None => None,
    };
    let html = match &args.html {
        Some(path) => match Claim::new(path, args.overwrite) {
            Ok(c) => Some(c),
            Err(e) => return refused(&e),
        },
        None => None,
    };
    let with_command = !args.command.is_empty();
    // With a command, stdout is the command's: samples never share it.
    let stdout = (!args.quiet && !with_command).then(io::stdout);
    if with_command && file.is_none() && !args.quiet {
        say!(
            "{PROGRAM}: samples are not streamed while a command runs (it owns stdout); --output FILE keeps them"
        );
    }
    let streaming = stdout.is_some() || file.is_some();
    let sink = Arc::new(Mutex::new(Sink {
        stdout,
        file,
        stdout_failed: None,
        file_failed: None,
        html,
        command_s: None,
        left_running: None,
    }));
    let config = MonitorConfig {
        interval_ms: args.interval_ms,
        backend,
        gpus,
        nvidia_smi: args.nvidia_smi.clone(),
        ..MonitorConfig::default()
    };
    if with_command {
        with_command_run(&args, config, &sink, streaming)
    } else {
        alone(&args, config, &sink, streaming)
    }
}

fn lock(sink: &Mutex<Sink>) -> std::sync::MutexGuard<'_, Sink> {
    sink.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the monitor, writing each sample to the sink; a sample that cannot be written stops the monitor
/// (`stop_on_failure`, without a command) or is dropped from the stream (with one: the command goes on).
fn start(
    args: &Args,
    config: MonitorConfig,
    sink: &Arc<Mutex<Sink>>,
    streaming: bool,
    stop_slot: &Arc<Mutex<Option<StopHandle>>>,
    stop_on_failure: bool,
) -> Monitor {
    if !streaming {
        return Monitor::start(config);
    }
    if let Format::Csv = args.format {
        lock(sink).write_line(&Sample::csv_header());
    }
    let sink = Arc::clone(sink);
    let slot = Arc::clone(stop_slot);
    let format = args.format;
    Monitor::start_with_observer(
        config,
        Box::new(move |s| {
            let line = match format {
                Format::Csv => s.to_csv_row(),
                Format::Jsonl => serde_json::to_string(s).unwrap_or_default(),
            };
            if !lock(&sink).write_line(&line)
                && stop_on_failure
                && let Some(h) = slot.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
            {
                h.stop();
            }
        }),
    )
}

/// Without a command: sample until Ctrl-C (SIGINT, SIGTERM, SIGHUP), the source ends, or stdout closes.
fn alone(args: &Args, config: MonitorConfig, sink: &Arc<Mutex<Sink>>, streaming: bool) -> ExitCode {
    // The handlers are installed before anything starts, so that no signal can arrive while the default action
    // (dying without a summary) is still in place. With no command to forward to, a signal means "stop".
    let runner = match Runner::install() {
        Ok(r) => r,
        Err(e) => {
            say!("{PROGRAM}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stop_slot: Arc<Mutex<Option<StopHandle>>> = Arc::new(Mutex::new(None));
    let monitor = start(args, config, sink, streaming, &stop_slot, true);
    *stop_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(monitor.stop_handle());
    if monitor.backend().is_none() {
        say!("{PROGRAM}: no GPU backend available; see the summary for why");
    }
    while !monitor.wait_timeout(SIGNAL_POLL) {
        if !runner.received().is_empty() {
            monitor.stop_handle().stop();
        }
    }
    let recording = monitor.stop();
    let code = match recording.end {
        SourceEnd::Stopped | SourceEnd::Exhausted => 0,
        SourceEnd::Died { .. } | SourceEnd::NoBackend | SourceEnd::Lost { .. } => 1,
    };
    finish(args, sink, &recording, code)
}

/// With a command: run it under the one runner, forwarding signals, until it ends; exit with its status.
fn with_command_run(
    args: &Args,
    config: MonitorConfig,
    sink: &Arc<Mutex<Sink>>,
    streaming: bool,
) -> ExitCode {
    let runner = match Runner::install() {
        Ok(r) => r,
        Err(e) => {
            say!("{PROGRAM}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stop_slot = Arc::new(Mutex::new(None));
    let monitor = start(args, config, sink, streaming, &stop_slot, false);
    if monitor.backend().is_none() {
        say!("{PROGRAM}: no GPU backend available; see the summary for why");
    }
    let code = if let Some(first) = runner.received().first() {
        say!("{PROGRAM}: {first} before the command started; not running it");
        128 + runner::signal_number(first)
    } else {
        let started_s = monitor.elapsed_s();
        match runner.spawn(&args.command) {
            Ok(command) => match command.wait(Duration::from_secs(1), || {}, args.left_running) {
                Ok(end) => {
                    let mut s = lock(sink);
                    s.command_s = Some((started_s, monitor.elapsed_s()));
                    s.left_running = end.left_running;
                    end.exit_code
                }
                Err(e) => {
                    say!("{PROGRAM}: waiting for the command: {e}");
                    1
                }
            },
            Err(e) => {
                let program = args.command[0].to_string_lossy();
                say!("{PROGRAM}: cannot run {program}: {e}");
                if e.kind() == io::ErrorKind::NotFound {
                    127
                } else {
                    126
                }
            }
        }
    };
    let recording = monitor.stop();
    drop(runner);
    finish(args, sink, &recording, code)
}

/// Closes the sample file, prints the summary and turns everything into the exit code: `code`, unless
/// writing failed (then 1 where `code` was 0, so that a command's own failure still shows).
fn finish(
    args: &Args,
    sink: &Mutex<Sink>,
    recording: &gpu_monitor::Recording,
    mut code: i32,
) -> ExitCode {
    let (file, file_failed, stdout_failed) = {
        let mut s = lock(sink);
        (s.file.take(), s.file_failed.take(), s.stdout_failed.take())
    };
    let mut write_failed = false;
    if let Some(file) = file {
        let shown = file.in_progress().display().to_string();
        let target = file.path().display().to_string();
        let finished = match file_failed {
            // Dropping the stream removes the temporary file: no partial recording under the name.
            Some(e) => Err(format!(
                "writing samples to {shown}: {e}; nothing was kept as {target}"
            )),
            None => file.finish().map_err(|e| e.to_string()).map(|w| {
                if let Some(n) = w.notice() {
                    say!("{PROGRAM}: {n}");
                }
            }),
        };
        if let Err(e) = finished {
            say!("{PROGRAM}: {e}");
            write_failed = true;
        }
    }
    match stdout_failed {
        // The reader of stdout went away (`| head`): it has what it wanted; end quietly.
        Some(e) if tool_io::stdout::is_closed_pipe(&e) => {
            let code = if write_failed && code == 0 { 1 } else { code };
            return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
        }
        Some(e) => {
            say!("{PROGRAM}: writing samples to stdout: {e}; the summary covers every sample");
            write_failed = true;
        }
        None => {}
    }
    let summary = recording.summary();
    let (html, command_s, left_running) = {
        let mut s = lock(sink);
        (s.html.take(), s.command_s, s.left_running.take())
    };
    if let Some(claim) = html
        && let Err(e) = write_html(claim, recording, &summary, command_s)
    {
        say!("{PROGRAM}: {e}");
        write_failed = true;
    }
    if let Some(left) = &left_running
        && let Some(line) = left.sentence()
    {
        say!(
            "{PROGRAM}: {line}{}",
            if left.policy == LeftPolicy::Report {
                REPORT_HINT
            } else {
                ""
            }
        );
    }
    if args.summary {
        let json = match summary_json(&summary, left_running.as_ref()) {
            Ok(j) => j,
            Err(e) => {
                say!("{PROGRAM}: summary not serialisable: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Err(e) = tool_io::stdout::write(|out| writeln!(out, "{json}")) {
            return e.exit(PROGRAM);
        }
    } else {
        let _ = write!(
            io::stderr().lock(),
            "{}",
            tool_io::terminal::escape_text(&render::readable(&summary))
        );
    }
    if write_failed && code == 0 {
        code = 1;
    }
    ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1))
}

/// The JSON summary: the monitor's, with `left_running` (what the command left running) when a command ran.
fn summary_json(
    summary: &gpu_monitor::MonitorSummary,
    left_running: Option<&LeftRunning>,
) -> serde_json::Result<String> {
    let mut v = serde_json::to_value(summary)?;
    if let (Some(left), Some(o)) = (left_running, v.as_object_mut()) {
        o.insert("left_running".to_owned(), serde_json::to_value(left)?);
    }
    serde_json::to_string_pretty(&v)
}

/// The HTML report, rendered from the same JSON the samples and the summary are written as.
fn write_html(
    claim: Claim,
    recording: &gpu_monitor::Recording,
    summary: &gpu_monitor::MonitorSummary,
    command_s: Option<(f64, f64)>,
) -> Result<(), String> {
    let samples: Vec<serde_json::Value> = recording
        .samples
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("samples not serialisable for the HTML report: {e}"))?;
    let summary = serde_json::to_value(summary)
        .map_err(|e| format!("summary not serialisable for the HTML report: {e}"))?;
    let page = html_report::gpu_monitor_html(&html_report::MonitorInputs {
        samples: &samples,
        summary: Some(&summary),
        command: command_s,
    });
    let written = claim
        .write_bytes(page.as_bytes())
        .map_err(|e| e.to_string())?;
    if let Some(n) = written.notice() {
        say!("{PROGRAM}: {n}");
    }
    Ok(())
}
