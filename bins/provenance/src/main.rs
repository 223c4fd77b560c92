//! `provenance`: run a command under a provenance record, compare two records, or show one.
//!
//! Only arguments and printing live here; everything else is the `provenance` library.

use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use provenance::gpu_monitor::{BackendChoice, GpuSelection};
use provenance::wrap::LeftPolicy;
use provenance::{diff, record_json, wrap};

/// Added to the line about processes CMD left running when nothing was done about them.
const REPORT_HINT: &str = " (--left-running wait or end to change that)";

mod bench_diff;
mod render_diff;
mod render_show;

/// Exit status for the wrapper's own failures (as `env` and `timeout` use it): bad options, an output file
/// that is already there, a record that could not be written.
const EXIT_OWN_FAILURE: u8 = 125;
/// The command exists but could not be run.
const EXIT_CANNOT_RUN: u8 = 126;
/// The command was not found.
const EXIT_NOT_FOUND: u8 = 127;

#[derive(Parser)]
#[command(
    name = "provenance",
    version,
    about = "Where a benchmark number came from: record, compare, show"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run CMD and write its provenance record; exit with CMD's exit status.
    Run(RunArgs),
    /// What changed between two records that could explain a changed number, most telling first. Exits 0 when
    /// nothing relevant changed (a different command line alone is listed for information only), 1 when
    /// something did, 2 on error (as diff(1)).
    ///
    /// Given two pytest-benchmark result files (`--benchmark-json`, with our plugin's records), or two
    /// criterion output directories (`target/criterion` of two runs, each benchmark's provenance.json
    /// beside its results), it judges each benchmark instead: faster, slower, unchanged or inconclusive,
    /// with Δ % and its 95 % interval from the per-round data (else the stated stats), and whether the two
    /// runs can be compared from their records (docs/verdict.md); exit 0, or 1 when `--fail-above` fails.
    Diff {
        /// The earlier record (or a result file holding one under `provenance`, a pytest-benchmark
        /// result, or a criterion output directory).
        a: PathBuf,
        /// The later record.
        b: PathBuf,
        /// Print the changes as JSON (for result files: one verdict row a line).
        #[arg(long)]
        json: bool,
        /// Result files only: fail (exit 1) when a benchmark is significantly slower by more than PCT %,
        /// when runs are not comparable, or when a benchmark is in one file only.
        #[arg(long, value_name = "PCT")]
        fail_above: Option<step_stats::Threshold>,
        /// With --fail-above: a benchmark in one file only does not fail.
        #[arg(long, requires = "fail_above")]
        allow_missing: bool,
        /// With --fail-above: runs judged not comparable do not fail.
        #[arg(long, requires = "fail_above")]
        allow_incomparable: bool,
    },
    /// A readable summary of a record.
    Show {
        /// The record (or a result file holding one under `provenance`).
        file: PathBuf,
        /// Print the record itself, as pretty JSON.
        #[arg(long)]
        json: bool,
        /// Also write a self-contained HTML page: the verdict and its evidence, the checks not made and
        /// why, the command, the monitor's summary per GPU.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Replace the HTML file if it exists.
        #[arg(long)]
        overwrite: bool,
    },
}

#[derive(Args)]
struct RunArgs {
    /// Where to write the record [default: provenance-YYYYMMDDTHHMMSSZ.json]. The name is reserved before CMD
    /// starts: an existing file is refused (unless --overwrite), and so is a second run given the same name.
    #[arg(long, short, alias = "out", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace an existing record file.
    #[arg(long)]
    overwrite: bool,
    /// GPU sampling interval, ms [default: 500].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=provenance::gpu_monitor::MAX_INTERVAL_MS))]
    interval_ms: Option<u64>,
    /// A field for the record, KEY=VALUE (VALUE read as JSON when it is JSON, else as a string); repeatable.
    #[arg(long = "field", short = 'f', value_name = "KEY=VALUE", value_parser = parse_field)]
    fields: Vec<(String, serde_json::Value)>,
    /// GPU backend: auto, nvml, nvidia-smi, replay:FILE [default: auto].
    #[arg(long, value_parser = parse_backend)]
    backend: Option<BackendChoice>,
    /// GPUs in use: all, cuda (CUDA_VISIBLE_DEVICES), or a comma list of indices and UUIDs [default: cuda].
    #[arg(long, value_parser = parse_gpus)]
    gpus: Option<GpuSelection>,
    /// The repository whose git state is recorded [default: the current directory].
    #[arg(long, value_name = "DIR")]
    repo_dir: Option<PathBuf>,
    /// What to do with processes CMD leaves running when it exits (background workers): report them in the
    /// record and on stderr, wait until they have exited, or end them (SIGTERM, then SIGKILL after 3 s).
    #[arg(long, value_name = "WHAT", default_value = "report", value_parser = |s: &str| s.parse::<LeftPolicy>())]
    left_running: LeftPolicy,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    command: Vec<OsString>,
}

fn parse_field(s: &str) -> Result<(String, serde_json::Value), String> {
    let (k, v) = provenance::parse_field(s).map_err(|e| e.to_string())?;
    if provenance::RESERVED_KEYS.contains(&k.as_str()) {
        return Err(format!("{k:?} is one of the record's own keys"));
    }
    Ok((k, v))
}

fn parse_backend(s: &str) -> Result<BackendChoice, String> {
    s.parse()
        .map_err(|e: provenance::gpu_monitor::ParseError| e.to_string())
}

fn parse_gpus(s: &str) -> Result<GpuSelection, String> {
    s.parse()
        .map_err(|e: provenance::gpu_monitor::ParseError| e.to_string())
}

/// One line on stderr, control characters from inputs escaped (`tool_io::terminal`).
macro_rules! say {
    ($($t:tt)*) => {
        tool_io::terminal::note(&format!($($t)*))
    };
}

fn main() -> ExitCode {
    let cli: Cli = match tool_io::cli::parse("provenance") {
        Ok(c) => c,
        Err(code) => return code,
    };
    match cli.cmd {
        Cmd::Run(args) => run(args),
        Cmd::Diff {
            a,
            b,
            json,
            fail_above,
            allow_missing,
            allow_incomparable,
        } => {
            let gate = bench_diff::BenchGate {
                fail_above,
                allow_missing,
                allow_incomparable,
            };
            diff_cmd(&a, &b, json, &gate)
        }
        Cmd::Show {
            file,
            json,
            html,
            overwrite,
        } => show_cmd(&file, json, html.as_deref(), overwrite),
    }
}

fn run(args: RunArgs) -> ExitCode {
    let opts = wrap::WrapOptions {
        out: args.output,
        overwrite: args.overwrite,
        interval_ms: args.interval_ms,
        fields: args.fields,
        command: args.command,
        backend: args.backend,
        gpus: args.gpus,
        repo_dir: args.repo_dir,
        left_running: args.left_running,
    };
    let out = match wrap::prepare(&opts) {
        Ok(o) => o,
        Err(e @ provenance::Error::Output(tool_io::Error::Exists { .. })) => {
            say!("provenance: {e}; pass --overwrite to replace it");
            return ExitCode::from(EXIT_OWN_FAILURE);
        }
        Err(e) => {
            say!("provenance: {e}");
            return ExitCode::from(EXIT_OWN_FAILURE);
        }
    };
    match wrap::run(opts, &out) {
        Ok(outcome) => {
            let v = &outcome.record.verdict;
            let verdict = if v.clean {
                "clean".to_owned()
            } else {
                let names: Vec<&str> = v.flags.iter().map(|f| f.flag.name()).collect();
                format!("flagged: {}", names.join(", "))
            };
            if let Some(line) = outcome
                .record
                .command
                .as_ref()
                .and_then(|c| c.left_running.as_ref())
                .and_then(|l| Some((l.sentence()?, l.policy)))
            {
                say!(
                    "provenance: {}{}",
                    line.0,
                    if line.1 == LeftPolicy::Report {
                        REPORT_HINT
                    } else {
                        ""
                    }
                );
            }
            match &outcome.written {
                Ok(w) => {
                    if let Some(n) = w.notice() {
                        say!("provenance: {n}");
                    }
                    say!(
                        "provenance: record written to {} ({verdict})",
                        w.path().display()
                    );
                    ExitCode::from(u8::try_from(outcome.exit_code).unwrap_or(1))
                }
                Err(e) => {
                    say!(
                        "provenance: the command exited with status {}, but its record could not be written: {e}",
                        outcome.exit_code
                    );
                    ExitCode::from(EXIT_OWN_FAILURE)
                }
            }
        }
        Err(provenance::Error::Spawn { program, source }) => {
            say!("provenance: cannot run {program}: {source}");
            let code = if source.kind() == std::io::ErrorKind::NotFound {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_RUN
            };
            ExitCode::from(code)
        }
        Err(e) => {
            say!("provenance: {e}");
            ExitCode::from(EXIT_OWN_FAILURE)
        }
    }
}

/// A diff input read once: its JSON (or why it could not be read), and whether it is a pytest-benchmark
/// result.
fn diff_input(path: &std::path::Path) -> (Result<serde_json::Value, provenance::Error>, bool) {
    let v = record_json::read_json(path);
    let bench = v
        .as_ref()
        .is_ok_and(run_compare::bench::is_pytest_benchmark);
    (v, bench)
}

fn diff_cmd(
    a: &std::path::Path,
    b: &std::path::Path,
    json: bool,
    gate: &bench_diff::BenchGate,
) -> ExitCode {
    match (a.is_dir(), b.is_dir()) {
        (true, true) => {
            let results = (
                bench_diff::criterion_results(a),
                bench_diff::criterion_results(b),
            );
            return bench_diff::diff((a, b), results, json, gate);
        }
        (true, false) | (false, true) => {
            say!(
                "provenance diff: one of {} and {} is a directory (a criterion harness's results) and the \
                 other is not: compare two directories, two result files, or two records",
                a.display(),
                b.display()
            );
            return ExitCode::from(2);
        }
        (false, false) => {}
    }
    let ((va, bench_a), (vb, bench_b)) = (diff_input(a), diff_input(b));
    match (bench_a, bench_b) {
        (true, true) => {
            if let (Ok(va), Ok(vb)) = (&va, &vb) {
                let results = (
                    bench_diff::pytest_results(a, va),
                    bench_diff::pytest_results(b, vb),
                );
                return bench_diff::diff((a, b), results, json, gate);
            }
        }
        (true, false) | (false, true) => {
            say!(
                "provenance diff: one of {} and {} is a pytest-benchmark result and the other is not: \
                 compare two results, or two records",
                a.display(),
                b.display()
            );
            return ExitCode::from(2);
        }
        (false, false) => {}
    }
    if gate.fail_above.is_some() {
        say!("provenance diff: --fail-above gates two benchmark result files, not two records");
        return ExitCode::from(2);
    }
    let records = va
        .and_then(|v| record_json::record_of(a, v))
        .and_then(|ra| Ok((ra, vb.and_then(|v| record_json::record_of(b, v))?)));
    let (ra, rb) = match records {
        Ok(r) => r,
        Err(e) => {
            say!("provenance diff: {e}");
            return ExitCode::from(2);
        }
    };
    if record_json::holds_nothing_to_compare(&ra) && record_json::holds_nothing_to_compare(&rb) {
        say!(
            "provenance diff: {} and {} hold nothing to compare (no key but their times): nothing was compared",
            a.display(),
            b.display()
        );
        return ExitCode::from(2);
    }
    let changes = diff::diff(&ra, &rb);
    let written = tool_io::stdout::write(|out| {
        if json {
            serde_json::to_writer_pretty(&mut *out, &changes)?;
            writeln!(out)
        } else {
            out.write_all(render_diff::render(&changes).as_bytes())
        }
    });
    if let Err(e) = written {
        if e.is_closed_pipe() {
            return ExitCode::SUCCESS;
        }
        e.exit("provenance diff");
        return ExitCode::from(2);
    }
    // Informational changes (the command line) are listed but do not count.
    if !diff::telling(&changes) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn show_cmd(
    file: &std::path::Path,
    json: bool,
    html: Option<&std::path::Path>,
    overwrite: bool,
) -> ExitCode {
    let html_claim = match html.map(|p| tool_io::Claim::new(p, overwrite)).transpose() {
        Ok(c) => c,
        Err(e) => {
            let hint = match e {
                tool_io::Error::Exists { .. } => "; pass --overwrite to replace it",
                _ => "",
            };
            say!("provenance show: {e}{hint}");
            return ExitCode::from(2);
        }
    };
    let r = match record_json::read_record(file) {
        Ok(r) => r,
        Err(e) => {
            say!("provenance show: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(claim) = html_claim {
        let page = html_report::provenance_html(&r);
        match claim.write_bytes(page.as_bytes()) {
            Ok(w) => {
                if let Some(n) = w.notice() {
                    say!("provenance show: {n}");
                }
            }
            Err(e) => {
                say!("provenance show: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let written = tool_io::stdout::write(|out| {
        if json {
            serde_json::to_writer_pretty(&mut *out, &r)?;
            writeln!(out)
        } else {
            out.write_all(render_show::render(&r).as_bytes())
        }
    });
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.exit("provenance show"),
    }
}
