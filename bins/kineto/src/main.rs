//! `kineto`: summaries and step analyses of Kineto traces. Parses arguments, calls `kineto-trace`,
//! prints; nothing else lives here.

mod doctor;
mod out;
mod render;
mod render_budget;
mod render_notes;
mod render_summary;
mod report;
mod roofline;
mod views;

use clap::{Args, Parser, Subcommand};
use kineto_trace::Parsed;
use kineto_trace::analysis::Analysis;
use kineto_trace::budget::StepBudget;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use kineto_trace::summary::Summary;
use render::{Ctx, Format};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kineto",
    version,
    about = "Read GPU profiler traces: PyTorch (Kineto) JSON, Nsight Systems SQLite, rocprofv3 JSON and CSV, rocpd and RPD SQLite, legacy rocprof (v1/v2) JSON, Chrome-trace arrays"
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
        /// Threads parsing one file's events (default: every core, shared among the files read at
        /// once; 1: the serial parse). The result is the same whatever the count.
        #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
        threads: usize,
        /// Skip the sha256 of each file (it is then null): saves a pass over the stored bytes.
        #[arg(long)]
        no_sha256: bool,
        /// Trace files (Kineto or Chrome-trace JSON, rocprofv3 JSON or CSV, Nsight Systems, rocpd or RPD
        /// SQLite; any of them .gz) or directories of per-rank traces.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
    },
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
    Diff(report::DiffArgs),
    /// Parquet tables (gpu_ops, steps, budget, families, annotations) for DuckDB, Spark or pandas: runs
    /// `kineto-export` (its own binary, so that this one builds no Arrow), see `kineto-export --help`.
    #[command(disable_help_flag = true)]
    Export {
        /// Arguments of `kineto-export`, e.g. `--parquet DIR TRACE…`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

/// `kineto top`'s options.
#[derive(Args)]
struct Top {
    /// What to group kernels by.
    #[arg(long, value_enum, default_value = "name")]
    by: By,
    /// Rows per table (0: all).
    #[arg(short = 'n', long = "limit", default_value_t = 20)]
    n: usize,
    /// One table per step (kernels launched in it); default: one per trace, every kernel.
    #[arg(long)]
    per_step: bool,
    #[command(flatten)]
    listing: Listing,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum By {
    Name,
    Family,
    Bucket,
}

/// The options of listings that need no rules or steps.
#[derive(Args)]
struct Plain {
    /// One JSON object per line.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// CSV with a header line.
    #[arg(long)]
    csv: bool,
    /// On a truncated file, keep the complete events before the cut.
    #[arg(long)]
    salvage: bool,
    /// Trace files (Kineto or Chrome-trace JSON, rocprofv3 JSON or CSV, Nsight Systems, rocpd or RPD
    /// SQLite; any of them .gz) or directories of per-rank traces.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
}

fn format_of(json: bool, csv: bool) -> Format {
    if json {
        Format::Json
    } else if csv {
        Format::Csv
    } else {
        Format::Table
    }
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
    /// Kernel rule table (TOML: `[families]` and `[[rule]]`); default: the built-in table.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Step markers: a regex matched against the whole annotation name, with optional named groups
    /// `phase`, `rows`, `requests`, `step`, `tokens` and per-phase token groups
    /// (docs/steps-and-budgets.md); default: the built-in profiles (KL1, TraceLens `execute_…`,
    /// SGLang `step[…]`, `ProfilerStep#N`). With no marker, the whole GPU window is one step.
    #[arg(long, value_name = "RE")]
    step_pattern: Option<String>,
    /// Ignore step markers: each trace is one step over its whole GPU window (first to last
    /// kernel, copy or fill), as HTA's temporal breakdown sees it.
    #[arg(long, conflicts_with = "step_pattern")]
    whole_trace: bool,
    /// On a truncated file, keep the complete events before the cut.
    #[arg(long)]
    salvage: bool,
    /// Trace files (Kineto or Chrome-trace JSON, rocprofv3 JSON or CSV, Nsight Systems, rocpd or RPD
    /// SQLite; any of them .gz) or directories of per-rank traces.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
}

fn main() -> ExitCode {
    // Many parse threads, few malloc arenas: the memory bound of a parse on every core.
    kineto_trace::limit_malloc_arenas();
    #[cfg(feature = "sqlite")]
    kineto_sqlite::install();
    let cli: Cli = match tool_io::cli::parse("kineto") {
        Ok(c) => c,
        Err(code) => return code,
    };
    match cli.cmd {
        Cmd::Summary {
            json,
            salvage,
            single_thread,
            threads,
            no_sha256,
            traces,
        } => {
            let opts = kineto_trace::Options {
                salvage,
                sha256: !no_sha256,
                feed: if single_thread {
                    kineto_trace::Feed::Inline
                } else {
                    kineto_trace::Feed::Threaded
                },
                threads,
                ..kineto_trace::Options::default()
            };
            summary(&traces, json, &opts)
        }
        Cmd::Steps(l) => listing(Command::Steps, &l),
        Cmd::Kernels(l) => listing(Command::Kernels, &l),
        Cmd::Budget(l) => listing(Command::Budget, &l),
        Cmd::Roofline(a) => roofline::run(&a),
        Cmd::Annotations(l) => annotations(&l),
        Cmd::Top(t) => top(&t),
        Cmd::Ranks(l) => ranks(&l),
        Cmd::Report(r) => report::report(&r),
        Cmd::Doctor(d) => doctor::run(&d),
        Cmd::Diff(d) => report::diff(&d),
        Cmd::Export { args } => export(&args),
    }
}

fn ranks(l: &Listing) -> ExitCode {
    use kineto_trace::analysis::{RankStep, RankSteps};
    /// A trace's file, rank and world size.
    type RankOf = (std::path::PathBuf, Option<u64>, Option<u64>);
    let (paths, rules, pattern) = match setup(l) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let format = format_of(l.json, l.csv);
    let opts = kineto_trace::Options {
        salvage: l.salvage,
        sha256: false,
        ..kineto_trace::Options::default()
    };
    let work = |path: &std::path::Path| -> kineto_trace::Result<(RankSteps, RankOf)> {
        let p = kineto_trace::parse_file(path, &opts)?;
        let claim = (
            path.to_path_buf(),
            p.trace.header.rank,
            p.trace.header.world_size,
        );
        let a = Analysis::at(&p, &pattern, &rules)?;
        for n in render_notes::notes(&p, &a) {
            out::note(&format!("kineto: note: {n}"));
        }
        let budgets = a.budgets(&p.trace, &rules);
        let steps = RankSteps {
            rank: p
                .trace
                .header
                .rank
                .map_or_else(|| p.path.display().to_string(), |r| r.to_string()),
            steps: a
                .steps
                .steps
                .into_iter()
                .zip(&budgets)
                .map(|(s, b)| RankStep::of(s.name, s.number, b))
                .collect(),
        };
        Ok((steps, claim))
    };
    let mut failed = false;
    let mut all = Vec::new();
    let mut claims = Vec::new();
    kineto_trace::each_in_order(&paths, work, |r| match r {
        Ok((r, claim)) => {
            all.push(r);
            claims.push(claim);
        }
        Err(e) => {
            out::note(&format!("kineto: {e}"));
            failed = true;
        }
    });
    // Two traces of one rank are never lined up as two ranks: refused, naming both (the rank rule).
    let checked =
        kineto_trace::ranks::check_ranks(claims.iter().map(|(file, rank, world_size)| {
            kineto_trace::ranks::RankClaim {
                file,
                rank: *rank,
                world_size: *world_size,
            }
        }));
    match checked {
        Ok(warnings) => {
            for w in warnings {
                out::note(&format!("kineto: note: {w}"));
            }
        }
        Err(e) => {
            out::note(&format!("kineto: {e}"));
            return exit_code(true);
        }
    }
    let steps = kineto_trace::analysis::compare_ranks(&all);
    let mut w = out::stdout();
    let listing = render::Listing::new(kineto_tables::rank_columns(), views::RANKS);
    let ctx = Ctx::default();
    let r = (|| -> std::io::Result<()> {
        use std::io::Write;
        if format == Format::Csv {
            listing.csv_header(&mut w)?;
        }
        if format == Format::Table {
            writeln!(w, "{} ranks", all.len())?;
        }
        for s in &steps {
            if format == Format::Table {
                let sp = &s.span;
                let over = sp.max_over_median_ns();
                let pct = if sp.median_ns > 0.0 {
                    format!(" ({:.1} %)", 100.0 * over / sp.median_ns)
                } else {
                    String::new()
                };
                writeln!(
                    w,
                    "step {} `{}` on {} ranks: slowest rank {} at {} µs, {:.3} µs{pct} over the median",
                    s.key,
                    out::escape(&s.name),
                    s.ranks,
                    out::escape(&sp.max_rank),
                    kineto_trace::ns_to_us_string(sp.max_ns),
                    over / 1000.0,
                )?;
                listing.table_header(&mut w)?;
            }
            for row in kineto_tables::rank_rows(s) {
                listing.row(&mut w, format, &row, &ctx)?;
            }
        }
        Ok(())
    })();
    if let Err(e) = r {
        out::write_failed(e);
    }
    out::finish(&mut w);
    exit_code(failed)
}

fn top(t: &Top) -> ExitCode {
    let l = &t.listing;
    let (paths, rules, pattern) = match setup(l) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let by = match t.by {
        By::Name => kineto_trace::analysis::GroupBy::Name,
        By::Family => kineto_trace::analysis::GroupBy::Family,
        By::Bucket => kineto_trace::analysis::GroupBy::Bucket,
    };
    let format = format_of(l.json, l.csv);
    let opts = kineto_trace::Options {
        salvage: l.salvage,
        sha256: false,
        ..kineto_trace::Options::default()
    };
    let per_step = t.per_step;
    let work = |path: &std::path::Path| -> kineto_trace::Result<_> {
        let parsed = kineto_trace::parse_file(path, &opts)?;
        let a = Analysis::at(&parsed, &pattern, &rules)?;
        let tables = kineto_trace::analysis::top_tables(&parsed.trace, &a, &rules, by, per_step);
        Ok((parsed, a, tables))
    };
    let n = if t.n == 0 { usize::MAX } else { t.n };
    let print =
        |w: &mut out::Stdout,
         (p, a, tables): (Parsed, Analysis, kineto_trace::analysis::TopTables)| {
            use std::io::Write;
            notes_unless_table(format, &p, &a);
            let file = p.path.display().to_string();
            let listing = render::Listing::new(kineto_tables::top_columns(), views::TOP);
            let ctx = Ctx::default();
            if format == Format::Table {
                render_notes::table_header(w, &p, &a, "")?;
            }
            for (step, groups) in &tables {
                if format == Format::Table {
                    match step {
                        Some(s) => writeln!(
                            w,
                            "  step {s} `{}`: {} groups",
                            out::escape(&a.steps.steps[*s].name),
                            groups.len()
                        )?,
                        None => writeln!(w, "  all kernels: {} groups", groups.len())?,
                    }
                    listing.table_header(w)?;
                }
                for g in groups.iter().take(n) {
                    let row = kineto_tables::TopRow {
                        file: &file,
                        rank: p.trace.header.rank,
                        step: step.map(|s| s as u32),
                        group: g,
                    };
                    listing.row(w, format, &row, &ctx)?;
                }
            }
            Ok(())
        };
    each_trace(
        &paths,
        csv_header_if(format, kineto_tables::top_columns()),
        work,
        print,
    )
}

fn annotations(l: &Plain) -> ExitCode {
    let paths = match kineto_trace::expand_paths(&l.traces) {
        Ok(p) => p,
        Err(e) => {
            out::note(&format!("kineto: {e}"));
            return ExitCode::from(2);
        }
    };
    let format = format_of(l.json, l.csv);
    let opts = kineto_trace::Options {
        salvage: l.salvage,
        sha256: false,
        ..kineto_trace::Options::default()
    };
    let work = |path: &std::path::Path| {
        kineto_trace::parse_file(path, &opts).map(|p| {
            let stats = kineto_trace::analysis::annotation_stats(&p.trace);
            (p, stats)
        })
    };
    let print = |w: &mut out::Stdout, (p, stats): (Parsed, Vec<_>)| {
        let file = p.path.display().to_string();
        let listing = render::Listing::new(
            kineto_tables::annotation_stats_columns(),
            views::ANNOTATIONS,
        );
        if format == Format::Table {
            use std::io::Write;
            writeln!(
                w,
                "{}  rank {}  {} annotation names",
                out::escape(&file),
                p.trace
                    .header
                    .rank
                    .map_or("-".to_string(), |r| r.to_string()),
                stats.len()
            )?;
            listing.table_header(w)?;
        }
        let stats: &Vec<kineto_trace::analysis::AnnotationStats> = &stats;
        for s in stats {
            let row = kineto_tables::AnnotationStatsRow {
                file: &file,
                rank: p.trace.header.rank,
                stats: s,
            };
            listing.row(w, format, &row, &Ctx::default())?;
        }
        Ok(())
    };
    each_trace(
        &paths,
        csv_header_if(format, kineto_tables::annotation_stats_columns()),
        work,
        print,
    )
}

/// Which listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Steps,
    Kernels,
    Budget,
}

/// One trace, analysed, ready to print.
struct Done {
    parsed: Parsed,
    analysis: Analysis,
    budgets: Vec<StepBudget>,
}

/// Reads the paths, the rule table and the step pattern, or says what is wrong (status 2).
fn setup(l: &Listing) -> Result<(Vec<PathBuf>, Rules, StepPattern), ExitCode> {
    let r = || -> kineto_trace::Result<_> {
        let paths = kineto_trace::expand_paths(&l.traces)?;
        let rules = Rules::load_or_builtin(l.rules.as_deref())?;
        let pattern = StepPattern::from_options(l.step_pattern.as_deref(), l.whole_trace)?;
        Ok((paths, rules, pattern))
    };
    r().map_err(|e| {
        out::note(&format!("kineto: {e}"));
        ExitCode::from(2)
    })
}

fn listing(command: Command, l: &Listing) -> ExitCode {
    let (paths, rules, pattern) = match setup(l) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let format = format_of(l.json, l.csv);
    let opts = kineto_trace::Options {
        salvage: l.salvage,
        // The listings do not print the hash; skip the pass over the stored bytes.
        sha256: false,
        ..kineto_trace::Options::default()
    };
    let header = |w: &mut out::Stdout| match (format, command) {
        (Format::Csv, Command::Steps) => render::csv_header(w, kineto_tables::step_columns()),
        (Format::Csv, Command::Kernels) => render::csv_header(w, kineto_tables::gpu_op_columns()),
        (Format::Csv, Command::Budget) => render_budget::csv_header(w),
        _ => Ok(()),
    };
    let work = |path: &std::path::Path| -> kineto_trace::Result<Done> {
        let parsed = kineto_trace::parse_file(path, &opts)?;
        let analysis = Analysis::at(&parsed, &pattern, &rules)?;
        // `steps` and `budget` print the `steps` table, which carries each step's budget totals.
        let budgets = if command == Command::Kernels {
            Vec::new()
        } else {
            analysis.budgets(&parsed.trace, &rules)
        };
        Ok(Done {
            parsed,
            analysis,
            budgets,
        })
    };
    let print = |w: &mut out::Stdout, d: Done| {
        notes_unless_table(format, &d.parsed, &d.analysis);
        write_trace(w, command, format, &d, &rules)
    };
    each_trace(&paths, header, work, print)
}

/// Writes one trace's rows, one at a time.
fn write_trace(
    w: &mut out::Stdout,
    command: Command,
    format: Format,
    d: &Done,
    rules: &Rules,
) -> std::io::Result<()> {
    let (p, a) = (&d.parsed, &d.analysis);
    let t = &p.trace;
    let file = p.path.display().to_string();
    let ctx = Ctx {
        t0_ns: t.time_bounds.map_or(0, |b| b.0),
    };
    let rows = || {
        a.steps
            .steps
            .iter()
            .zip(&d.budgets)
            .map(|(s, b)| kineto_tables::StepRow {
                file: &file,
                rank: t.header.rank,
                step: s,
                budget: b,
            })
    };
    match command {
        Command::Steps => {
            let listing = render::Listing::new(kineto_tables::step_columns(), views::STEPS);
            if format == Format::Table {
                render_notes::table_header(w, p, a, "")?;
                listing.table_header(w)?;
            }
            for row in rows() {
                listing.row(w, format, &row, &ctx)?;
            }
        }
        Command::Kernels => {
            let listing = render::Listing::new(kineto_tables::gpu_op_columns(), views::KERNELS);
            if format == Format::Table {
                let what = format!(", rules {}", rules.origin().display());
                render_notes::table_header(w, p, a, &what)?;
                listing.table_header(w)?;
            }
            let ops = kineto_tables::GpuOps::new(&file, t, a, rules);
            for row in ops.rows(kineto_trace::GpuKind::Kernel) {
                listing.row(w, format, &row, &ctx)?;
            }
        }
        Command::Budget => match format {
            Format::Json => {
                for r in rows() {
                    render_budget::json_row(w, &r, rules, &ctx)?;
                }
            }
            Format::Csv => {
                for r in rows() {
                    render_budget::csv_rows(w, &r, rules, &ctx)?;
                }
            }
            Format::Table => {
                let what = format!(
                    ", rules {} ({} rules, {} families)",
                    rules.origin().display(),
                    rules.rules().len(),
                    rules.families().len()
                );
                render_notes::table_header(w, p, a, &what)?;
                render_budget::table(w, p, a, &d.budgets, rules, &ctx)?;
            }
        },
    }
    Ok(())
}

fn summary(traces: &[PathBuf], json: bool, opts: &kineto_trace::Options) -> ExitCode {
    let paths = match kineto_trace::expand_paths(traces) {
        Ok(p) => p,
        Err(e) => {
            out::note(&format!("kineto: {e}"));
            return ExitCode::from(2);
        }
    };
    let work = |p: &std::path::Path| kineto_trace::parse_file(p, opts).map(|p| Summary::of(&p));
    let print = |w: &mut out::Stdout, s: Summary| render_summary::write(w, &s, json);
    each_trace(&paths, |_| Ok(()), work, print)
}

/// Works on every trace in parallel and prints each result on stdout in the order of `paths` as soon
/// as it and the earlier ones are done: `header` first, then `print` per trace. A trace that fails
/// is reported on stderr (the others still print) and makes the status 1; a write error ends the
/// program by the stdout policy ([`out::write_failed`]).
fn each_trace<T: Send>(
    paths: &[PathBuf],
    header: impl FnOnce(&mut out::Stdout) -> std::io::Result<()>,
    work: impl Fn(&std::path::Path) -> kineto_trace::Result<T> + Sync,
    mut print: impl FnMut(&mut out::Stdout, T) -> std::io::Result<()>,
) -> ExitCode {
    let mut w = out::stdout();
    if let Err(e) = header(&mut w) {
        out::write_failed(e);
    }
    let mut failed = false;
    kineto_trace::each_in_order(paths, work, |r| match r {
        Ok(v) => {
            if let Err(e) = print(&mut w, v) {
                out::write_failed(e);
            }
        }
        Err(e) => {
            out::note(&format!("kineto: {e}"));
            failed = true;
        }
    });
    out::finish(&mut w);
    exit_code(failed)
}

/// The CSV header of a column list when the format is CSV.
fn csv_header_if<R>(
    format: Format,
    cols: &[kineto_tables::Col<R>],
) -> impl FnOnce(&mut out::Stdout) -> std::io::Result<()> {
    move |w| {
        if format == Format::Csv {
            render::csv_header(w, cols)
        } else {
            Ok(())
        }
    }
}

/// Notes on stderr for the machine-readable formats (tables print them in their header).
fn notes_unless_table(format: Format, p: &Parsed, a: &Analysis) {
    if format != Format::Table {
        for n in render_notes::notes(p, a) {
            out::note(&format!("kineto: note: {n}"));
        }
    }
}

/// 1 when any trace failed (the others were still printed), else 0.
fn exit_code(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `kineto export …`: runs `kineto-export` from beside this executable, else from PATH, with the same
/// arguments, and exits with its status.
fn export(args: &[std::ffi::OsString]) -> ExitCode {
    const NAME: &str = "kineto-export";
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(NAME)))
        .filter(|p| p.is_file());
    let program = beside.unwrap_or_else(|| PathBuf::from(NAME));
    match std::process::Command::new(&program).args(args).status() {
        Ok(s) => ExitCode::from(s.code().map_or(1, |c| u8::try_from(c & 0xff).unwrap_or(1))),
        Err(e) => {
            out::note(&format!(
                "kineto export: cannot run {}: {e}; build it with `cargo build --release -p kineto-export-cli` \
                 (it lives apart so that `kineto` builds no Arrow)",
                program.display()
            ));
            ExitCode::from(2)
        }
    }
}
