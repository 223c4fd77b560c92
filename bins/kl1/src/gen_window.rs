//! `kl1-gen-window`: writes a synthetic two-rank KL1 window whose true GB/s per kernel family is known
//! (`kl1_bandwidth::synth`). Run as `cargo xtask gen-window`; `--out testdata/windows/demo --force`
//! regenerates the demo window.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kl1_bandwidth::Rules;
use kl1_bandwidth::synth::{Plan, write_window};
use kl1_shapes::Spec;

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
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kl1-gen-window: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<(), kl1_bandwidth::Error> {
    let spec = match &cli.spec {
        Some(p) => Spec::from_file(p)?,
        None => Spec::builtin(),
    };
    let rules = match &cli.rules {
        Some(p) => Rules::from_file(p)?,
        None => Rules::builtin(),
    };
    let mut plan = Plan::demo();
    for r in &cli.rates {
        let Some((name, v)) = r.split_once('=') else {
            return Err(kl1_bandwidth::Error::Generate {
                reason: format!("--rate {r}: write NAME=GBPS"),
            });
        };
        let gbps: f64 = v
            .trim()
            .parse()
            .map_err(|e| kl1_bandwidth::Error::Generate {
                reason: format!("--rate {r}: {e}"),
            })?;
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
    println!(
        "wrote {} traces ({:.1} MB) for spec {} to {}",
        truth.traces.len(),
        bytes as f64 / 1e6,
        spec.name(),
        cli.out.display()
    );
    let r = plan.rates;
    println!(
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
    );
    println!(
        "per-step truth: {}",
        cli.out.join(kl1_bandwidth::synth::TRUTH_FILE).display()
    );
    Ok(())
}
