//! Project chores, run as `cargo xtask <task>` (an alias in `.cargo/config.toml`).
//!
//! Benchmarks live here, never in timed tests: each measures its baseline in the same run and prints the
//! ratio, so a figure is always relative to this machine on this day.

mod bench_monitor;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!("usage: cargo xtask <task> [args]\ntasks: bench-monitor");
        std::process::exit(2);
    };
    let rest = &args[1..];
    let result = match task.as_str() {
        "bench-monitor" => bench_monitor::run(rest),
        other => Err(format!("unknown task {other}")),
    };
    if let Err(e) = result {
        eprintln!("xtask {task}: {e}");
        std::process::exit(1);
    }
}
