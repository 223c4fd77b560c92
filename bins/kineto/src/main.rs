//! `kineto`: summaries and step analyses of Kineto traces. Parses arguments, calls `kineto-trace`,
//! prints; nothing else lives here.

use clap::{Parser, Subcommand};
use kineto_trace::summary::{Summary, summarize_paths};
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
    }
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
    for result in summarize_paths(&paths, &opts) {
        match result {
            Ok(s) => print_summary(&s, json),
            Err(e) => {
                eprintln!("kineto: {e}");
                failed = true;
            }
        }
    }
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
