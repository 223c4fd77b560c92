//! What the tests of the `kineto-export` binary share (each test file has `mod common;`): the binary, the
//! shared corpus (`tests/corpus/mod.rs`) and the stdouts of the stdout policy (`tests/stdout_policy/mod.rs`),
//! both shared with the other binaries.
#![allow(dead_code)] // Each test binary uses its own subset.

use std::process::Command;

#[path = "../../../../tests/corpus/mod.rs"]
pub mod corpus;
#[path = "../../../../tests/stdout_policy/mod.rs"]
pub mod stdout_policy;

/// The `kineto-export` binary.
pub fn kineto_export() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kineto-export"))
}
