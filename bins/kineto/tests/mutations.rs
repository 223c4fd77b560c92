//! The renderers under mutated real input: a real trace cut, flipped or spliced at random is fed to every
//! listing of the `kineto` binary; it may be refused (status 1 or 2, with a message), but no command panics
//! (status 101), and what a command prints as JSON lines is JSON. The parser and the analysis under the
//! same mutations are kineto-trace's `tests/mutations.rs` and the fuzz target.
#![allow(clippy::expect_used)] // Test helpers as well as tests: a failed fixture should fail loudly.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;

/// The real trace (HTA's CUDA event-sync example, 2.9 KB gzip), decompressed once.
fn real() -> Vec<u8> {
    static DATA: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    DATA.get_or_init(|| {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
            "../../testdata/traces/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
        );
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&p).expect("open"))
            .read_to_end(&mut out)
            .expect("read");
        out
    })
    .clone()
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
        let out = Command::new(env!("CARGO_BIN_EXE_kineto"))
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
    fn flipped_bytes(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut d = real();
        for (i, b) in edits {
            let i = i.index(d.len());
            d[i] = b;
        }
        check(&d);
    }

    #[test]
    fn cut_anywhere(at in any::<prop::sample::Index>()) {
        let d = real();
        check(&d[..at.index(d.len())]);
    }

    #[test]
    fn spliced(a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let d = real();
        let (a, b) = (a.index(d.len()), b.index(d.len()));
        let mut s = d[..a].to_vec();
        s.extend_from_slice(&d[b..]);
        check(&s);
    }
}

#[test]
fn the_unmutated_trace_passes_every_listing() {
    check(&real());
}
