//! `kl1-bandwidth`: achieved GB/s per kernel family per step, from KL1 profiler windows. Parses arguments,
//! calls the `kl1-bandwidth` library, writes its JSON (through tool-io) and prints its summary
//! ([`render`]); nothing else lives here.

mod render;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kl1_bandwidth::{Error, Kl1Rules, Prefill, analyze};
use kl1_shapes::Spec;
use tool_io::stdout::StdoutError;
use tool_io::terminal::{escape, note};

#[derive(Parser)]
#[command(
    name = "kl1-bandwidth",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    about = "Achieved GB/s per kernel family per step, from KL1 profiler windows (ESTIMATED bytes / MEASURED time)",
    long_about = "Achieved GB/s per kernel family per step, from KL1 profiler windows.\n\n\
        Every byte count is ESTIMATED from a model spec (kl1-shapes, docs/formulas.md); every duration is MEASURED \
        by Kineto in a profiled run; GB/s = ESTIMATED bytes / MEASURED time. The routed experts' bytes depend on \
        how many distinct experts a step's rows picked, which no trace records: they are given at the \
        uniform-routing count (an upper bound), at top-k per request, and as the counts the GPU's specified and \
        claimed bandwidths would allow.\n\n\
        Input: see docs/kl1-window.md. Output: see docs/kl1-bandwidth.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    analyse: Analyse,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Compare two results (OLD → NEW): per capture, rank and headline number, Δ % and whether Δ exceeds
    /// the per-step spread. Exit 0 = pass, 1 = a number failed --fail-above, 2 = error.
    Diff(DiffArgs),
}

#[derive(clap::Args)]
struct DiffArgs {
    /// The older `kl1-bandwidth` JSON result.
    old: PathBuf,
    /// The newer one.
    new: PathBuf,
    /// Fail (exit 1) when a number moved by more than PCT % (a finite number ≥ 0) and outside its per-step
    /// spread, or when a capture, rank or number is in one result only, or when they share nothing.
    #[arg(long, value_name = "PCT")]
    fail_above: Option<step_stats::Threshold>,
    /// With --fail-above: a capture, rank or number in one result only does not fail the gate (it is still
    /// listed).
    #[arg(long, requires = "fail_above")]
    allow_missing: bool,
    /// Also write a self-contained HTML page of the comparison.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Replace the HTML file if it exists.
    #[arg(long)]
    overwrite: bool,
}

#[derive(clap::Args)]
struct Analyse {
    /// A window: a directory with traces-manifest.json. Repeat for several windows.
    #[arg(long = "window", value_name = "DIR", required = true)]
    windows: Vec<PathBuf>,
    /// Where to write the JSON result (refused if it exists, unless --overwrite).
    #[arg(long, value_name = "FILE", required = true)]
    output: Option<PathBuf>,
    /// Also write a self-contained HTML report (GB/s per family, capture and rank against the GPU's
    /// bandwidths; per-step distributions with outlier steps named).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Replace the output (and HTML) file if it exists.
    #[arg(long)]
    overwrite: bool,
    /// Model spec (TOML, kl1-shapes format). Default: built-in DeepSeek-V4.1-Flash EXL3 on 2 × GB10.
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// Kernel family table (kineto-trace's rule format: families → buckets, ordered patterns). Default: the
    /// built-in KL1 table (crates/kl1-bandwidth/rules/kl1.toml).
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Step annotation regex, matched against whole annotation names, with named groups `phase`, `rows`,
    /// `requests` (and optionally `step`). Default: the KL1 server's `kl1.step#N phase=P rows=R requests=Q`.
    #[arg(long, value_name = "REGEX")]
    step_pattern: Option<String>,
    /// Prefill: MoE layers that run every prompt row (the rest run the last --prefill-suffix-rows rows).
    #[arg(long, value_name = "N", default_value_t = Prefill::default().full_layers)]
    prefill_full_layers: u64,
    /// Prefill: rows the layers after the full ones run.
    #[arg(long, value_name = "N", default_value_t = Prefill::default().suffix_rows)]
    prefill_suffix_rows: u64,
    /// Prefill: chunks with fewer rows are not analysed.
    #[arg(long, value_name = "N", default_value_t = Prefill::default().min_rows)]
    prefill_min_rows: u64,
    /// No summary on stdout and no progress line on stderr.
    #[arg(long)]
    quiet: bool,
}

/// Why the command stopped.
enum Failure {
    Analysis(Error),
    Stdout(StdoutError),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Analysis(e)
    }
}

impl From<tool_io::Error> for Failure {
    fn from(e: tool_io::Error) -> Failure {
        Failure::Analysis(Error::File(e))
    }
}

impl From<kl1_shapes::Error> for Failure {
    fn from(e: kl1_shapes::Error) -> Failure {
        Failure::Analysis(Error::from(e))
    }
}

fn main() -> ExitCode {
    let cli: Cli = match tool_io::cli::parse("kl1-bandwidth") {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(Command::Diff(d)) = &cli.command {
        return diff(d);
    }
    match run(&cli.analyse) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is quiet success; other stdout errors are one message and a failure.
        Err(Failure::Stdout(e)) => e.exit("kl1-bandwidth"),
        Err(Failure::Analysis(e)) => {
            let mut msg = format!("kl1-bandwidth: {e}");
            if let Error::File(tool_io::Error::Exists { .. }) = e {
                msg.push_str("; pass --overwrite to replace it");
            }
            note(&msg);
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                note(&format!("  caused by: {s}"));
                src = s.source();
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Analyse) -> Result<(), Failure> {
    let Some(output) = &cli.output else {
        unreachable!("clap requires --output without a subcommand")
    };
    // Claimed before the work: refused now if the name is taken, a device or FIFO, or being written by
    // another run, not after the analysis (the write refuses again, atomically, if a file appears meanwhile).
    let claim = tool_io::Claim::new(output, cli.overwrite)?;
    let html_claim = match &cli.html {
        Some(p) => Some(tool_io::Claim::new(p, cli.overwrite)?),
        None => None,
    };
    let spec = match &cli.spec {
        Some(p) => {
            let text = tool_io::read_input_string(p, "model spec", tool_io::caps::CONFIG)?;
            Spec::from_toml_str(&text, &p.display().to_string())?
        }
        None => Spec::builtin(),
    };
    let mut rules = match &cli.rules {
        Some(p) => Kl1Rules::from_file(p)?,
        None => Kl1Rules::builtin(),
    };
    if let Some(p) = &cli.step_pattern {
        rules = rules.with_step_pattern(p)?;
    }
    rules = rules.with_prefill(Prefill {
        full_layers: cli.prefill_full_layers,
        suffix_rows: cli.prefill_suffix_rows,
        min_rows: cli.prefill_min_rows,
    })?;
    let tty = !cli.quiet && std::io::stderr().is_terminal();
    let bar = render::Progress::new("traces");
    let progress = |done: usize, total: usize| bar.set(done, total);
    let report = analyze(
        &cli.windows,
        &spec,
        &rules,
        if tty { Some(&progress) } else { None },
    );
    // Cleared whatever the outcome.
    bar.finish();
    let report = report?;
    let mut written = vec![said(report.write(&claim)?)];
    drop(claim);
    if let Some(html_claim) = html_claim {
        // The page is rendered from the very JSON just written, so its numbers are the result's.
        let value: serde_json::Value =
            serde_json::from_str(&report.to_json()?).map_err(|e| Error::Output {
                reason: format!("re-reading the result as JSON for the HTML report: {e}"),
            })?;
        written.push(said(
            html_claim.write_bytes(html_report::kl1_bandwidth_html(&value).as_bytes())?,
        ));
    }
    if !cli.quiet {
        let gpu = spec.gpu();
        tool_io::stdout::write(|out| {
            render::summary(out, &report, gpu.spec_bandwidth_gbps, &gpu.name)?;
            for w in &written {
                writeln!(out, "wrote {}", escape(&w.display().to_string()))?;
            }
            Ok(())
        })
        .map_err(Failure::Stdout)?;
    }
    Ok(())
}

/// Says on stderr when a result went beside its name (a file appeared there during the run); returns where
/// it went.
fn said(w: tool_io::Written) -> PathBuf {
    if let Some(n) = w.notice() {
        note(&format!("kl1-bandwidth: {n}"));
    }
    w.path().to_path_buf()
}

/// `kl1-bandwidth diff OLD NEW`: exit 0 = pass, 1 = failed --fail-above, 2 = error (as `diff(1)`).
fn diff(d: &DiffArgs) -> ExitCode {
    let fail = |msg: String| {
        note(&format!("kl1-bandwidth diff: {msg}"));
        ExitCode::from(2)
    };
    let html_claim = match &d.html {
        Some(p) => match tool_io::Claim::new(p, d.overwrite) {
            Ok(c) => Some(c),
            Err(e @ tool_io::Error::Exists { .. }) => {
                return fail(format!("{e}; pass --overwrite to replace it"));
            }
            Err(e) => return fail(e.to_string()),
        },
        None => None,
    };
    let read = |p: &PathBuf| -> Result<serde_json::Value, String> {
        let text = tool_io::read_input_string(p, "kl1-bandwidth result", tool_io::caps::RECORD)
            .map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", p.display()))
    };
    let (old, new) = match (read(&d.old), read(&d.new)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) | (_, Err(e)) => return fail(e),
    };
    let result = match kl1_bandwidth::diff::diff(&old, &new, kl1_bandwidth::spread::is_headline_key)
    {
        Ok(r) => r,
        Err(e) => return fail(format!("{} / {}: {e}", d.old.display(), d.new.display())),
    };
    let gate = d.fail_above.map(|fail_above| step_stats::Gate {
        fail_above,
        allow_missing: d.allow_missing,
    });
    let verdict = gate.map(|g| result.verdict(g));
    if let Some(c) = html_claim {
        let page = html_report::kl1_diff_page(&old, &new, &result, gate);
        match c.write_bytes(page.as_bytes()) {
            Ok(w) => drop(said(w)),
            Err(e) => return fail(e.to_string()),
        }
    }
    if let Err(e) = tool_io::stdout::write(|out| render::diff(out, &result, verdict.as_ref())) {
        return if e.is_closed_pipe() {
            ExitCode::SUCCESS
        } else {
            e.exit("kl1-bandwidth diff")
        };
    }
    match verdict {
        Some(v) if !v.passed() => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    }
}
