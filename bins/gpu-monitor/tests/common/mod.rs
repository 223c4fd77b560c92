//! What the tests of the `gpu-monitor` binary share (each test file has `mod common;`): the binary, kept from
//! the GPU selection and nvidia-smi of the environment the tests run in; the recordings and fake
//! nvidia-smi scripts of the gpu-monitor crate's fixtures; printed bytes as text; the stdouts of the
//! stdout policy and the JSON a page embeds (`tests/stdout_policy/mod.rs`, `tests/tool_json/mod.rs`,
//! shared with the other binaries).
#![allow(dead_code)] // Each test binary uses its own subset.

use std::path::PathBuf;
use std::process::Command;

#[path = "../../../../tests/stdout_policy/mod.rs"]
pub mod stdout_policy;
#[path = "../../../../tests/tool_json/mod.rs"]
pub mod tool_json;

/// `gpu-monitor` without `CUDA_VISIBLE_DEVICES` or `KL1_NVIDIA_SMI` from the environment: a test that
/// wants either sets it, so a GPU machine gives the same answers as any other.
pub fn gpu_monitor() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-monitor"));
    c.env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("KL1_NVIDIA_SMI");
    c
}

/// A file of `crates/gpu-monitor/tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/gpu-monitor/tests/fixtures")
        .join(name)
}

/// Printed bytes as text, any byte that is not UTF-8 replaced (for messages and searches).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
