//! Project chores, run as `cargo xtask <task>` (an alias in `.cargo/config.toml`).
//!
//! Benchmarks live here, never in timed tests: each measures its baseline in the same run and prints the
//! ratio, so a figure is always relative to this machine on this day.

mod bench_monitor;
mod bench_native;
mod bench_parse;
mod bench_ranks;
mod gen_window;
mod model_columnar;

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!(
            "usage: cargo xtask <task> [args]\ntasks: bench-parse, bench-native, bench-ranks, bench-monitor, gen-window, model-columnar"
        );
        std::process::exit(2);
    };
    let rest = &args[1..];
    let result = match task.as_str() {
        "bench-parse" => bench_parse::run(rest),
        "bench-parse-generate" => bench_parse::generate_task(rest),
        "bench-native" => bench_native::run(rest),
        "bench-native-model" => bench_native::model_task(rest),
        "bench-ranks" => bench_ranks::run(rest),
        "bench-ranks-generate" => bench_ranks::generate_task(rest),
        "bench-monitor" => bench_monitor::run(rest),
        "gen-window" => gen_window::run(rest),
        "model-columnar" => model_columnar::run(rest),
        other => Err(format!("unknown task {other}")),
    };
    if let Err(e) = result {
        eprintln!("xtask {task}: {e}");
        std::process::exit(1);
    }
}

/// The session `kineto` reads through, every reader installed (the native SQLite, XPlane and
/// Perfetto readers come through seams), `sha256` as asked: for the tasks that read a file in this
/// process.
pub(crate) fn kineto_session(sha256: bool) -> Result<kineto_trace::Session, String> {
    kineto_sqlite::install();
    kineto_xplane::install();
    kineto_perfetto::install();
    let mut config = kineto_trace::SessionConfig::default();
    config.parse.sha256 = sha256;
    kineto_trace::Session::new(config).map_err(|e| e.to_string())
}

/// The workspace root (xtask lives one level below it).
pub(crate) fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map_or(here.clone(), PathBuf::from)
}

/// Builds one binary of the workspace in release mode and returns its path.
pub(crate) fn build_release_bin(package: &str, bin: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let root = workspace_root();
    let status = std::process::Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--release", "--quiet", "-p", package, "--bin", bin])
        .status()
        .map_err(|e| format!("cargo build: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build -p {package} failed"));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(root.join("target"), PathBuf::from);
    Ok(target.join("release").join(bin))
}
