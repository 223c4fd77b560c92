//! No file under `testdata/` is a copy of a file of the shared corpus (`../shared/traces`: real traces and
//! samples from other public repositories, which are not ours to commit; tests read them from there). Runs
//! where the corpus is beside the clone (CI); without it there is nothing to compare against, and the test
//! is listed as ignored.
#![allow(clippy::expect_used)] // A test: an unreadable file should fail it loudly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[path = "../../tests/corpus/mod.rs"]
mod corpus;

/// Every regular file below `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("a directory entry").path();
        let kind = std::fs::symlink_metadata(&p).expect("metadata").file_type();
        if kind.is_dir() {
            files(&p, out);
        } else if kind.is_file() {
            out.push(p);
        }
    }
}

/// Each file of `ours` whose bytes are those of a file of `shared`, named with it.
fn copies(ours: &[PathBuf], shared: &[PathBuf]) -> Vec<String> {
    // Same content means same size first: only files of a corpus file's size are read whole.
    let mut by_size: HashMap<u64, Vec<&PathBuf>> = HashMap::new();
    for f in shared {
        let len = std::fs::metadata(f).expect("metadata").len();
        by_size.entry(len).or_default().push(f);
    }
    let mut out = Vec::new();
    for f in ours {
        let len = std::fs::metadata(f).expect("metadata").len();
        let Some(same_size) = by_size.get(&len) else {
            continue;
        };
        let bytes = std::fs::read(f).expect("read");
        for s in same_size {
            if std::fs::read(s).expect("read") == bytes {
                out.push(format!("{} is a copy of {}", f.display(), s.display()));
            }
        }
    }
    out
}

fn corpus_files() -> Vec<PathBuf> {
    let mut shared = Vec::new();
    files(&corpus::required(), &mut shared);
    assert!(shared.len() >= 40, "{} files in the corpus", shared.len());
    shared
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn no_file_in_testdata_is_a_copy_of_a_corpus_file() {
    let mut ours = Vec::new();
    files(&corpus::repository_root().join("testdata"), &mut ours);
    let copies = copies(&ours, &corpus_files());
    assert!(
        copies.is_empty(),
        "copied upstream data in testdata/ (tests read it from ../shared/traces):\n  {}",
        copies.join("\n  ")
    );
}

/// The check finds a copy: of a copied corpus file and a generated trace, the copy alone is named.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn a_copy_is_found_and_a_generated_file_is_not() {
    let copy = std::env::temp_dir().join(format!("kl1-copied-{}.csv", std::process::id()));
    std::fs::copy(corpus::corpus_file("INVENTORY.csv"), &copy).expect("copy");
    let demo = corpus::repository_root()
        .join("testdata/windows/demo/prof-short-b1.decode.rank0.pt.trace.json.gz");
    let found = copies(&[copy.clone(), demo], &corpus_files());
    std::fs::remove_file(&copy).expect("remove");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with(&copy.display().to_string()),
        "{found:?}"
    );
    assert!(found[0].ends_with("INVENTORY.csv"), "{found:?}");
}
