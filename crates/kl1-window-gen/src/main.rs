//! `kl1-gen-window`: writes a synthetic two-rank KL1 window whose true GB/s per kernel family is known
//! (the `kl1-window-gen` library). Run as `cargo xtask gen-window`; `--out testdata/windows/demo --force`
//! regenerates the demo window. A developer's tool: not part of the user-facing `kl1-cli` package.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kl1_bandwidth::Kl1Rules;
use kl1_shapes::Spec;
use kl1_window_gen::{Error, Plan, TRUTH_FILE, write_window};

#[derive(Parser)]
#[command(
    name = "kl1-gen-window",
    version,
    about = "Write a synthetic KL1 profiler window (docs/kl1-window.md) with known GB/s per kernel family"
)]
struct Cli {
    /// Directory to write (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace the files of a window already there.
    #[arg(long)]
    force: bool,
    /// Model spec (TOML). Default: built-in DeepSeek-V4.1-Flash EXL3 on 2 × GB10.
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// Rule table (for the step annotation and prefill structure). Default: built-in KL1 rules.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// A family's rate, e.g. `--rate dense=180` (dense, lm_head, router, mhc, smoe, tf_gu, tf_down,
    /// reconstruct, l2pf). Repeatable.
    #[arg(long = "rate", value_name = "NAME=GBPS")]
    rates: Vec<String>,
    /// Relative jitter of kernel durations, in [0, 0.5).
    #[arg(long, default_value_t = 0.04)]
    jitter: f64,
    /// Seed of the jitter.
    #[arg(long)]
    seed: Option<u64>,
    /// Write plain `.json` traces instead of `.json.gz`.
    #[arg(long)]
    plain: bool,
}

fn main() -> ExitCode {
    let cli: Cli = match tool_io::cli::parse("kl1-gen-window") {
        Ok(c) => c,
        Err(code) => return code,
    };
    let message = match run(&cli) {
        Ok(()) => return ExitCode::SUCCESS,
        Err(Failure::Stdout(e)) => return e.exit("kl1-gen-window"),
        Err(Failure::Generate(e @ Error::WindowExists { .. })) => {
            format!("{e}; pass --force to replace its files")
        }
        Err(Failure::Generate(e)) => e.to_string(),
        Err(Failure::Input(e)) => e,
    };
    tool_io::terminal::note(&format!("kl1-gen-window: {message}"));
    ExitCode::FAILURE
}

enum Failure {
    Generate(Error),
    Input(String),
    Stdout(tool_io::stdout::StdoutError),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Generate(e)
    }
}

fn run(cli: &Cli) -> Result<(), Failure> {
    let input = |e: &dyn std::fmt::Display| Failure::Input(e.to_string());
    let spec = match &cli.spec {
        Some(p) => {
            let text = tool_io::read_input_string(p, "model spec", tool_io::caps::CONFIG)
                .map_err(|e| input(&e))?;
            Spec::from_toml_str(&text, &p.display().to_string()).map_err(|e| input(&e))?
        }
        None => Spec::builtin(),
    };
    let rules = match &cli.rules {
        Some(p) => Kl1Rules::from_file(p).map_err(|e| input(&e))?,
        None => Kl1Rules::builtin(),
    };
    let mut plan = Plan::demo();
    for r in &cli.rates {
        let Some((name, v)) = r.split_once('=') else {
            return Err(Failure::Input(format!("--rate {r}: write NAME=GBPS")));
        };
        let gbps: f64 = v
            .trim()
            .parse()
            .map_err(|e| Failure::Input(format!("--rate {r}: {e}")))?;
        plan.rates.set(name.trim(), gbps)?;
    }
    plan.jitter = cli.jitter;
    if let Some(s) = cli.seed {
        plan.seed = s;
    }
    plan.gzip = !cli.plain;
    let truth = write_window(&spec, &rules, &plan, &cli.out, cli.force)?;
    let mut bytes = 0u64;
    for t in &truth.traces {
        bytes += std::fs::metadata(cli.out.join(&t.file)).map_or(0, |m| m.len());
    }
    let r = plan.rates;
    tool_io::stdout::write(|out| {
        writeln!(
            out,
            "wrote {} traces ({:.1} MB) for spec {} to {}",
            truth.traces.len(),
            bytes as f64 / 1e6,
            spec.name(),
            cli.out.display()
        )?;
        writeln!(
            out,
            "rates (GB/s): dense {} | LM head {} | router {} | mHC {} | sMoE (uniform experts) {} | prefill gate|up {} \
             down {} | reconstruct {} | L2 prefetch {}; jitter ±{} %",
            r.dense,
            r.lm_head,
            r.router,
            r.mhc,
            r.smoe,
            r.tf_gu,
            r.tf_down,
            r.reconstruct,
            r.l2pf,
            plan.jitter * 100.0
        )?;
        writeln!(out, "per-step truth: {}", cli.out.join(TRUTH_FILE).display())
    })
    .map_err(Failure::Stdout)?;
    Ok(())
}
