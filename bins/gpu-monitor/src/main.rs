//! `gpu-monitor`: streams GPU samples like `nvidia-smi dmon` until Ctrl-C or until a command exits, then
//! prints a summary. Everything but argument parsing and printing is the `gpu-monitor` library.

mod render;

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use clap::{Parser, ValueEnum};
use gpu_monitor::{
    BackendChoice, GpuSelection, Monitor, MonitorConfig, Sample, SourceEnd, StopHandle,
};

#[derive(Parser)]
#[command(
    name = "gpu-monitor",
    version,
    about = "Sample NVIDIA GPUs (NVML, else nvidia-smi) beside a command, then summarise",
    after_help = "Samples go to stdout (or --output); the readable summary to stderr, the JSON one (--summary) to \
                  stdout after the samples — add -q for JSON alone. With a command, exits with its exit code."
)]
struct Args {
    /// Requested interval between readings of each GPU, in milliseconds.
    #[arg(long, default_value_t = 500, value_name = "N")]
    interval_ms: u64,
    /// auto | nvml | nvidia-smi | replay FILE.
    #[arg(long, num_args = 1..=2, value_names = ["KIND", "FILE"], default_value = "auto")]
    backend: Vec<String>,
    /// all | cuda (honour CUDA_VISIBLE_DEVICES) | a comma list of indices and UUIDs.
    #[arg(long, default_value = "all", value_name = "GPUS")]
    gpus: String,
    /// How samples are streamed.
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    format: Format,
    /// Print the summary as JSON (to stdout) instead of readable text (to stderr).
    #[arg(long)]
    summary: bool,
    /// Do not stream samples; only the summary.
    #[arg(short, long)]
    quiet: bool,
    /// Write the samples to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The nvidia-smi to run (default: $KL1_NVIDIA_SMI, else nvidia-smi on PATH).
    #[arg(long, value_name = "PATH")]
    nvidia_smi: Option<PathBuf>,
    /// Command to run while monitoring; monitoring ends when it exits.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// CSV rows after a `# t_s,index,…` header (replayable with --backend replay).
    Csv,
    /// One JSON object per sample (replayable).
    Jsonl,
}

fn backend_choice(words: &[String]) -> Result<BackendChoice, String> {
    match words {
        [kind, file] if kind == "replay" => Ok(BackendChoice::Replay(PathBuf::from(file))),
        [kind] if kind == "replay" => Err("--backend replay needs a FILE".into()),
        [kind] => kind
            .parse()
            .map_err(|e: gpu_monitor::Unavailable| e.to_string()),
        _ => Err(format!(
            "--backend {}: only replay takes a second value",
            words.join(" ")
        )),
    }
}

type Sink = Arc<Mutex<Box<dyn Write + Send>>>;

fn main() -> ExitCode {
    let args = Args::parse();
    let usage = |msg: String| {
        eprintln!("gpu-monitor: {msg}");
        ExitCode::from(2)
    };
    let backend = match backend_choice(&args.backend) {
        Ok(b) => b,
        Err(e) => return usage(e),
    };
    let gpus: GpuSelection = match args.gpus.parse() {
        Ok(g) => g,
        Err(e) => return usage(e.to_string()),
    };
    if args.interval_ms == 0 {
        return usage("--interval-ms must be at least 1".into());
    }
    let config = MonitorConfig {
        interval_ms: args.interval_ms,
        backend,
        gpus,
        nvidia_smi: args.nvidia_smi.clone(),
        ..MonitorConfig::default()
    };

    let sink: Option<Sink> = if args.quiet {
        None
    } else {
        let w: Box<dyn Write + Send> = match &args.output {
            Some(path) => match std::fs::File::create(path) {
                Ok(f) => Box::new(BufWriter::new(f)),
                Err(e) => return usage(format!("{}: {e}", path.display())),
            },
            None => Box::new(io::stdout()),
        };
        Some(Arc::new(Mutex::new(w)))
    };
    if let (Some(sink), Format::Csv) = (&sink, args.format) {
        emit(sink, &Sample::csv_header());
    }
    // The handler is installed before anything starts, so that no Ctrl-C can arrive while the default action
    // (dying without a summary) is still in place. Without a command it stops the monitor, which ends `wait`;
    // with one, Ctrl-C reaches the command through the terminal's process group and we keep monitoring until
    // it exits, so that the summary covers its whole run and its exit code is passed on.
    let interrupted = Arc::new(AtomicBool::new(false));
    let stop_slot: Arc<Mutex<Option<StopHandle>>> = Arc::new(Mutex::new(None));
    {
        let interrupted = Arc::clone(&interrupted);
        let stop_slot = Arc::clone(&stop_slot);
        let with_command = !args.command.is_empty();
        if let Err(e) = ctrlc::set_handler(move || {
            interrupted.store(true, Ordering::SeqCst);
            if !with_command
                && let Some(h) = stop_slot.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
            {
                h.stop();
            }
        }) {
            eprintln!("gpu-monitor: cannot catch Ctrl-C ({e}); an interrupt will lose the summary");
        }
    }
    let monitor = match &sink {
        Some(sink) => {
            let sink = Arc::clone(sink);
            let format = args.format;
            Monitor::start_with_observer(
                config,
                Box::new(move |s| {
                    let line = match format {
                        Format::Csv => s.to_csv_row(),
                        Format::Jsonl => serde_json::to_string(s).unwrap_or_default(),
                    };
                    emit(&sink, &line);
                }),
            )
        }
        None => Monitor::start(config),
    };
    *stop_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(monitor.stop_handle());
    if monitor.backend().is_none() {
        eprintln!("gpu-monitor: no GPU backend available; see the summary for why");
    }

    let code = if args.command.is_empty() {
        if interrupted.load(Ordering::SeqCst) {
            // Ctrl-C came while the monitor was starting, before the handler could reach it.
            monitor.stop_handle().stop();
        }
        monitor.wait();
        None
    } else if interrupted.load(Ordering::SeqCst) {
        eprintln!("gpu-monitor: interrupted before the command started; not running it");
        Some(ExitCode::from(130))
    } else {
        Some(run_command(&args.command))
    };
    let capture = monitor.stop();
    if let Some(sink) = &sink {
        let _ = gpu_monitor_flush(sink);
    }
    let summary = capture.summary();
    if args.summary {
        match serde_json::to_string_pretty(&summary) {
            Ok(json) => println!("{json}"),
            Err(e) => eprintln!("gpu-monitor: summary not serialisable: {e}"),
        }
    } else {
        eprint!("{}", render::readable(&summary));
    }
    match code {
        Some(c) => c,
        None => match capture.end {
            SourceEnd::Stopped | SourceEnd::Exhausted => ExitCode::SUCCESS,
            SourceEnd::Died { .. } | SourceEnd::NoBackend | SourceEnd::Lost { .. } => {
                ExitCode::from(1)
            }
        },
    }
}

fn emit(sink: &Sink, line: &str) {
    let mut w = sink.lock().unwrap_or_else(|p| p.into_inner());
    // A closed stdout (`| head`) must not kill the sampling thread; the samples are still in the capture.
    let _ = writeln!(w, "{line}").and_then(|()| w.flush());
}

fn gpu_monitor_flush(sink: &Sink) -> io::Result<()> {
    sink.lock().unwrap_or_else(|p| p.into_inner()).flush()
}

/// Runs the command to completion and turns its ending into our exit code (shell conventions).
fn run_command(command: &[OsString]) -> ExitCode {
    let Some((program, rest)) = command.split_first() else {
        return ExitCode::SUCCESS;
    };
    match Command::new(program).args(rest).status() {
        Ok(status) => {
            if let Some(c) = status.code() {
                ExitCode::from(u8::try_from(c & 0xff).unwrap_or(1))
            } else {
                use std::os::unix::process::ExitStatusExt;
                let sig = status.signal().unwrap_or(0);
                ExitCode::from(u8::try_from(128 + sig).unwrap_or(255))
            }
        }
        Err(e) => {
            eprintln!("gpu-monitor: cannot run {}: {e}", program.to_string_lossy());
            ExitCode::from(if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            })
        }
    }
}
