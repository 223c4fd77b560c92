//! What the tests of the `kineto` binary share (each test file has `mod common;`): the binary as a
//! command run from the repository root, a run's exit code and text, the repository's folders, the
//! shared corpus (`tests/corpus/mod.rs`, the one rule for where it is and when its tests are ignored) and
//! the stdouts of the stdout policy and the JSON a page embeds (`tests/stdout_policy/mod.rs`,
//! `tests/tool_json/mod.rs`, shared with the other binaries).
#![allow(dead_code)] // Each test binary uses its own subset.
#![allow(clippy::expect_used)] // Test helpers: a run that cannot start fails the test loudly.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

#[path = "../../../../tests/corpus/mod.rs"]
pub mod corpus;
#[path = "../../../../tests/stdout_policy/mod.rs"]
pub mod stdout_policy;
#[path = "../../../../tests/tool_json/mod.rs"]
pub mod tool_json;

/// The repository root: where `testdata/` is, and where `kineto` runs in these tests.
pub fn root() -> PathBuf {
    corpus::repository_root()
}

/// A file or folder of `testdata/`, by its path there.
pub fn testdata(rel: &str) -> PathBuf {
    root().join("testdata").join(rel)
}

/// The `kineto` binary, run from the repository root (so `testdata/…` resolves as in a clone); a test
/// that needs another working directory sets its own.
pub fn kineto() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kineto"));
    c.current_dir(root());
    c
}

/// `kineto ARGS` run to its end (it must start): its status and bytes as printed.
pub fn output(args: &[&str]) -> Output {
    kineto().args(args).output().expect("run kineto")
}

/// `kineto ARGS`: see [`code_and_text`].
pub fn run(args: &[&str]) -> (i32, String, String) {
    code_and_text(kineto().args(args))
}

/// `cmd` run to its end: its exit code (-1 when a signal ended it), stdout and stderr, each of which
/// must be UTF-8.
pub fn code_and_text(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run kineto");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    )
}

/// Printed bytes as text, any byte that is not UTF-8 replaced (for messages and searches).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The JSON object of each line of `out` (a JSON-lines listing); a line that is not one fails the test.
pub fn json_lines(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Where each top-level field 1 of a protobuf message starts (tag `0x0A`, a varint length, the body:
/// an XPlane's planes, a Perfetto trace's packets), walked by hand, independently of the readers, up
/// to the first field that is not one (an `XSpace`'s hostnames after its planes).
pub fn field_one_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = vec![];
    let mut i = 0;
    while bytes.get(i) == Some(&0x0A) {
        starts.push(i);
        let (mut len, mut shift, mut j) = (0usize, 0, i + 1);
        loop {
            let b = bytes[j];
            len |= usize::from(b & 0x7F) << shift;
            shift += 7;
            j += 1;
            if b < 0x80 {
                break;
            }
        }
        i = j + len;
    }
    starts
}

/// `bytes` gzip-compressed, flushed (a sync flush) and never finished: a gzip stream that ends early,
/// its content whole up to the end of `bytes`.
pub fn gzip_cut_after(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).expect("gzip into memory");
    z.flush().expect("gzip into memory");
    z.get_ref().clone()
}
