//! What the tests of the `provenance` binary share (each test file has `mod common;`): the binary, the
//! binary kept from the GPU tools of the machine the tests run on, printed bytes as text, the stdouts of
//! the stdout policy and the JSON a page embeds (`tests/stdout_policy/mod.rs`, `tests/tool_json/mod.rs`,
//! shared with the other binaries).
#![allow(dead_code)] // Each test binary uses its own subset.

use std::path::Path;
use std::process::Command;

#[path = "../../../../tests/stdout_policy/mod.rs"]
pub mod stdout_policy;
#[path = "../../../../tests/tool_json/mod.rs"]
pub mod tool_json;

/// The `provenance` binary.
pub fn provenance_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_provenance"))
}

/// The command in `dir` (not a git repository, so git probes end at once) with no real GPU tools in reach:
/// `KL1_NVIDIA_SMI` names a file that does not exist, so with the backend forced to nvidia-smi a test
/// gives the same answers on a GPU machine.
pub fn provenance_in(dir: &Path) -> Command {
    let mut c = provenance_bin();
    c.current_dir(dir)
        .env("KL1_NVIDIA_SMI", dir.join("no-such-nvidia-smi"));
    c
}

/// Printed bytes as text, any byte that is not UTF-8 replaced (for messages and searches).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
