//! What the tests of the `kl1-bandwidth` binary share (each test file has `mod common;`): the binary, the
//! generated demo window, printed bytes as text, the stdouts of the stdout policy and the JSON a page
//! embeds (`tests/stdout_policy/mod.rs`, `tests/tool_json/mod.rs`, shared with the other binaries).
#![allow(dead_code)] // Each test binary uses its own subset.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../../../tests/stdout_policy/mod.rs"]
pub mod stdout_policy;
#[path = "../../../../tests/tool_json/mod.rs"]
pub mod tool_json;

/// The `kl1-bandwidth` binary.
pub fn kl1_bandwidth() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kl1-bandwidth"))
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The generated demo window (testdata/windows/demo).
pub fn demo() -> PathBuf {
    root().join("testdata/windows/demo")
}

/// Printed bytes as text, any byte that is not UTF-8 replaced (for messages and searches).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
