//! The two stdouts every binary's tests hold it to the stdout policy on (docs/result-files.md): a full disk
//! (`> /dev/full`: one message naming stdout, exit 1) and a pipe whose reader is gone (`| head`: quiet,
//! exit 0). Each binary's `tests/common/mod.rs` includes it (`#[path = "…/tests/stdout_policy/mod.rs"]`);
//! what a program must do there stays in the tests, which differ by program.
#![allow(dead_code)] // Each test binary uses its own subset.
#![allow(clippy::expect_used)] // Test helpers: a run that cannot start fails the test loudly.

use std::fs::OpenOptions;
use std::process::{Command, Output, Stdio};

/// `cmd > /dev/full`, run to its end: its status and stderr.
pub fn to_a_full_disk(cmd: &mut Command) -> Output {
    let full = OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    cmd.stdout(full).output().expect("run")
}

/// `cmd | (closed at once)`: stdout a pipe whose reading end is closed before the program starts; its
/// status and stderr.
pub fn to_a_closed_pipe(cmd: &mut Command) -> Output {
    let (r, w) = std::io::pipe().expect("pipe");
    drop(r);
    cmd.stdout(Stdio::from(w)).output().expect("run")
}
