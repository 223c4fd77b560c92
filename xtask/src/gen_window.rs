//! `cargo xtask gen-window [--out DIR] [--force] [kl1-gen-window options]`: writes a synthetic two-rank KL1
//! profiler window with known GB/s per kernel family (docs/kl1-window.md, the `kl1-window-gen` crate).
//!
//! With no `--out` it regenerates the demo window, `testdata/windows/demo` (replacing its files). The work is
//! done by the `kl1-gen-window` binary of `kl1-window-gen`, built in release mode here, so xtask needs no
//! dependency on the analysis crates.

use crate::{build_release_bin, workspace_root};

pub fn run(args: &[String]) -> Result<(), String> {
    let bin = build_release_bin("kl1-window-gen", "kl1-gen-window")?;
    let mut argv: Vec<String> = args.to_vec();
    if !argv.iter().any(|a| a == "--out" || a.starts_with("--out=")) {
        let demo = workspace_root().join("testdata/windows/demo");
        argv.push("--out".to_string());
        argv.push(demo.display().to_string());
        if !argv.iter().any(|a| a == "--force") {
            argv.push("--force".to_string());
        }
    }
    let status = std::process::Command::new(&bin)
        .args(&argv)
        .status()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kl1-gen-window exited with {status}"))
    }
}
