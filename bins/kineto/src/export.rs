//! `kineto export …`: runs `kineto-export` (its own binary, so that `kineto` builds no Arrow).

use crate::out;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs `kineto-export` from beside this executable, else from PATH, with the same arguments, and exits
/// with its status.
pub fn run(args: &[std::ffi::OsString]) -> ExitCode {
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
