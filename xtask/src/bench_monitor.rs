//! `cargo xtask bench-monitor`: being written with the gpu-monitor issue.

/// Runs the benchmark.
pub fn run(_args: &[String]) -> Result<(), String> {
    Err("bench-monitor is not written yet".to_string())
}
