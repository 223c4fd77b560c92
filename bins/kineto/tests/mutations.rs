//! The renderers under mutated input: a trace (real, or generated without the corpus) cut, flipped or spliced at random is fed to every
//! listing of the `kineto` binary; it may be refused (status 1 or 2, with a message), but no command panics
//! (status 101), and what a command prints as JSON lines is JSON. The parser and the analysis under the
//! same mutations are kineto-trace's `tests/mutations.rs` and the fuzz target.
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use std::path::Path;

use proptest::prelude::*;

// The mutations, shared with kineto-trace's parser test: one generator for both.
#[path = "../../../crates/kineto-trace/tests/property/mutate.rs"]
mod mutate;
use mutate::{cuts, flips, splices};
mod common;
// kineto-trace's helpers include tests/corpus/mod.rs as ours do: two copies of its items, never mixed.
#[allow(clippy::duplicate_mod)]
#[path = "../../../crates/kineto-trace/tests/common/mod.rs"]
mod trace_common;
use common::kineto;

/// The seed trace, decompressed once: a real one of the shared corpus, or without it a generated one
/// (kineto-trace's `common::mutation_seed`, the one choice for both mutation tests).
fn real() -> Vec<u8> {
    static DATA: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    DATA.get_or_init(trace_common::mutation_seed).clone()
}

/// Every listing, in each of its formats that a script reads.
const COMMANDS: &[&[&str]] = &[
    &["summary", "--json"],
    &["steps", "--json"],
    &["kernels", "--csv"],
    &["kernels"],
    &["budget", "--json"],
    &["budget"],
    &["top", "--json", "--by", "family"],
    &["annotations", "--json"],
    &["ranks", "--json"],
];

fn check(data: &[u8]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace: &Path = &dir.path().join("mutated.json");
    std::fs::write(trace, data).expect("write");
    for args in COMMANDS {
        let out = kineto()
            .args(*args)
            .arg(trace)
            .output()
            .expect("run kineto");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=2)) && !stderr.contains("panicked"),
            "kineto {args:?} on a mutated trace: status {code:?}\n{stderr}"
        );
        if code == Some(0) && args.contains(&"--json") {
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                assert!(
                    serde_json::from_str::<serde_json::Value>(line).is_ok(),
                    "kineto {args:?} printed a line that is not JSON: {line}"
                );
            }
        }
        if code != Some(0) {
            assert!(
                !stderr.trim().is_empty(),
                "kineto {args:?} failed without a word"
            );
        }
    }
}

proptest! {
    // Each case runs the binary 9 times: few cases, three kinds of damage.
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn flipped_bytes(m in flips()) {
        check(&m.apply(&real()));
    }

    #[test]
    fn cut_anywhere(m in cuts()) {
        check(&m.apply(&real()));
    }

    #[test]
    fn spliced(m in splices()) {
        check(&m.apply(&real()));
    }
}

#[test]
fn the_unmutated_trace_passes_every_listing() {
    check(&real());
}
