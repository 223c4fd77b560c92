//! `kineto`: summaries and step analyses of Kineto traces. Parses arguments, calls `kineto-trace`,
//! prints; nothing else lives here.

use clap::{Args, Parser, Subcommand};
use kineto_trace::family::Rules;
use kineto_trace::report::{Command, Format, csv_header, render_paths_each};
use kineto_trace::step::StepPattern;
use kineto_trace::summary::{Summary, summarize_each};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kineto",
    version,
    about = "Read PyTorch-profiler (Kineto) traces"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// One summary per trace: counts, kernel time (sum and union), steps, warnings.
    Summary {
        /// One JSON object per line instead of a readable block.
        #[arg(long)]
        json: bool,
        /// On a truncated file, keep the complete events before the cut (marked "salvaged").
        #[arg(long)]
        salvage: bool,
        /// Read, inflate, hash and parse each file on one thread (default: reading, inflating and
        /// hashing run on a helper thread beside the parser).
        #[arg(long)]
        single_thread: bool,
        /// Skip the sha256 of each file (it is then null): saves a pass over the stored bytes.
        #[arg(long)]
        no_sha256: bool,
        /// Trace files (.json, .json.gz) or directories of per-rank traces.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
    },
    /// One row per step: markers, GPU bounds, period, kernel count, sum and union.
    Steps(Listing),
    /// One row per kernel: step, family, bucket, times, stream, launch, enclosing annotation.
    Kernels(Listing),
    /// One row per step: exclusive and inclusive time per bucket, idle, families, unmatched kernels.
    Budget(Listing),
}

/// The options `steps`, `kernels` and `budget` share.
#[derive(Args)]
struct Listing {
    /// One JSON object per line.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// CSV with a header line.
    #[arg(long)]
    csv: bool,
    /// Kernel rule table (TOML: [families] and [[rule]]); default: the built-in table.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Step markers: a regex matched against the whole annotation name, with optional named groups
    /// `phase`, `rows`, `requests`, `step`; default `ProfilerStep#(?P<step>\d+)`.
    #[arg(long, value_name = "RE")]
    step_pattern: Option<String>,
    /// On a truncated file, keep the complete events before the cut.
    #[arg(long)]
    salvage: bool,
    /// Trace files (.json, .json.gz) or directories of per-rank traces.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Summary {
            json,
            salvage,
            single_thread,
            no_sha256,
            traces,
        } => summary(&traces, json, salvage, single_thread, !no_sha256),
        Cmd::Steps(l) => listing(Command::Steps, &l),
        Cmd::Kernels(l) => listing(Command::Kernels, &l),
        Cmd::Budget(l) => listing(Command::Budget, &l),
    }
}

fn listing(command: Command, l: &Listing) -> ExitCode {
    let setup = || -> kineto_trace::Result<_> {
        let paths = kineto_trace::expand_paths(&l.traces)?;
        let rules = match &l.rules {
            Some(f) => Rules::load(f)?,
            None => Rules::builtin(),
        };
        let pattern = match &l.step_pattern {
            Some(p) => StepPattern::new(p)?,
            None => StepPattern::profiler_step(),
        };
        Ok((paths, rules, pattern))
    };
    let (paths, rules, pattern) = match setup() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("kineto: {e}");
            return ExitCode::from(2);
        }
    };
    let format = if l.json {
        Format::Json
    } else if l.csv {
        Format::Csv
    } else {
        Format::Table
    };
    let opts = kineto_trace::Options {
        salvage: l.salvage,
        // The listings do not print the hash; skip the pass over the stored bytes.
        sha256: false,
        ..kineto_trace::Options::default()
    };
    if format == Format::Csv {
        println!("{}", csv_header(command));
    }
    let mut failed = false;
    render_paths_each(
        &paths,
        &opts,
        &pattern,
        &rules,
        command,
        format,
        |result| match result {
            Ok(r) => {
                print!("{}", r.text);
                for n in r.notes {
                    eprintln!("kineto: note: {n}");
                }
            }
            Err(e) => {
                eprintln!("kineto: {e}");
                failed = true;
            }
        },
    );
    exit_code(failed)
}

fn summary(
    traces: &[PathBuf],
    json: bool,
    salvage: bool,
    single_thread: bool,
    sha256: bool,
) -> ExitCode {
    let paths = match kineto_trace::expand_paths(traces) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("kineto: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = kineto_trace::Options {
        salvage,
        sha256,
        feed: if single_thread {
            kineto_trace::Feed::Inline
        } else {
            kineto_trace::Feed::Threaded
        },
    };
    let mut failed = false;
    summarize_each(&paths, &opts, |result| match result {
        Ok(s) => print_summary(&s, json),
        Err(e) => {
            eprintln!("kineto: {e}");
            failed = true;
        }
    });
    exit_code(failed)
}

/// 1 when any trace failed (the others were still printed), else 0.
fn exit_code(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn print_summary(s: &Summary, json: bool) {
    if json {
        match serde_json::to_string(s) {
            Ok(line) => println!("{line}"),
            Err(e) => eprintln!("kineto: {}: cannot serialise summary: {e}", s.file),
        }
    } else {
        print!("{}", s.to_text());
    }
}
