//! `kineto`: summaries and step analyses of GPU profiler traces. Parses arguments and calls one command's
//! module (one file per command; each reads its traces through a `kineto_trace::Session`); nothing else
//! lives here.

mod annotations;
mod args;
mod diff;
mod doctor;
mod each;
mod export;
mod listing;
mod out;
mod ranks;
mod report;
mod roofline;
mod summary;
mod top;

use args::{Listing, Plain, SummaryArgs, Top};
// The text, CSV and JSON forms of the tables live beside their column lists (`kineto-tables`).
use clap::{Parser, Subcommand};
use kineto_tables::render::{
    self, budget as render_budget, notes as render_notes, summary as render_summary, views,
};
use listing::Command;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kineto",
    version,
    about = "Read GPU profiler traces: PyTorch (Kineto) JSON, Nsight Systems SQLite, rocprofv3 JSON and CSV, rocpd and RPD SQLite, legacy rocprof (v1/v2) JSON, Chrome-trace arrays, XPlane and Perfetto protobuf"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// One summary per trace: counts, kernel time (sum and union), steps, warnings.
    Summary(SummaryArgs),
    /// One row per step: markers, GPU bounds, period, kernel count, sum and union.
    Steps(Listing),
    /// One row per kernel: step, family, bucket, times, stream, launch, enclosing annotation.
    Kernels(Listing),
    /// One row per step: exclusive and inclusive time per bucket, idle, families, unmatched kernels.
    Budget(Listing),
    /// Per step and rank: ESTIMATED bytes and FLOPs from a model config, MEASURED time, % of the GPU's peaks.
    Roofline(roofline::RooflineArgs),
    /// One row per user annotation name: count, total and mean CPU time, GPU mirrors. The names a
    /// `--step-pattern` can match.
    Annotations(Plain),
    /// Kernels grouped by name, family or bucket, most time first: count, total, %, mean, median,
    /// min, max, stddev (kernels only; copies and fills are in `summary` and `budget`).
    Top(Top),
    /// Each step across the ranks of a run: span, idle and per-bucket exclusive time (min, median,
    /// max), the slowest rank and by how much.
    Ranks(Listing),
    /// A self-contained HTML page: per-step stacked bars of bucket time and idle, ranks side by side,
    /// the sortable top kernel table, per-step spreads; with --model, the roofline chart.
    Report(report::ReportArgs),
    /// What to fix first: findings ranked by the time at stake (MEASURED µs, an upper bound on what fixing
    /// each recovers; ESTIMATED for the roofline rule with --model), each with its share of the GPU span,
    /// steps, rank, evidence, rule and the command to drill down; then trust warnings (docs/doctor.md).
    Doctor(doctor::DoctorArgs),
    /// Two runs' budgets, bucket by bucket: mean over steps old → new, Δ %, whether Δ exceeds the
    /// per-step spread. Exit 0 = pass, 1 = a bucket failed --fail-above, 2 = error.
    Diff(diff::DiffArgs),
    /// Parquet tables (gpu_ops, steps, budget, families, annotations) for DuckDB, Spark or pandas: runs
    /// `kineto-export` (its own binary, so that this one builds no Arrow), see `kineto-export --help`.
    #[command(disable_help_flag = true)]
    Export {
        /// Arguments of `kineto-export`, e.g. `--parquet DIR TRACE…`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

fn main() -> ExitCode {
    // Few malloc arenas for many parse threads, freed blocks handed back: the memory bound of a parse.
    kineto_trace::tune_malloc();
    #[cfg(feature = "sqlite")]
    kineto_sqlite::install();
    #[cfg(feature = "xplane")]
    kineto_xplane::install();
    #[cfg(feature = "perfetto")]
    kineto_perfetto::install();
    let cli: Cli = match tool_io::cli::parse("kineto") {
        Ok(c) => c,
        Err(code) => return code,
    };
    match cli.cmd {
        // A command that cannot start (options, rule file, pattern, paths) says why, status 2.
        Cmd::Summary(a) => summary::run(&a).unwrap_or_else(each::refused),
        Cmd::Steps(l) => listing::run(Command::Steps, &l).unwrap_or_else(each::refused),
        Cmd::Kernels(l) => listing::run(Command::Kernels, &l).unwrap_or_else(each::refused),
        Cmd::Budget(l) => listing::run(Command::Budget, &l).unwrap_or_else(each::refused),
        Cmd::Roofline(a) => roofline::run(&a),
        Cmd::Annotations(l) => annotations::run(&l).unwrap_or_else(each::refused),
        Cmd::Top(t) => top::run(&t).unwrap_or_else(each::refused),
        Cmd::Ranks(l) => ranks::run(&l).unwrap_or_else(each::refused),
        Cmd::Report(r) => report::report(&r),
        Cmd::Doctor(d) => doctor::run(&d),
        Cmd::Diff(d) => diff::diff(&d),
        Cmd::Export { args } => export::run(&args),
    }
}
