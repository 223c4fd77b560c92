//! Where the Rust tests find the shared trace corpus (`../shared/traces` beside the clone): real traces from
//! other public repositories, kept out of this one. Included by every test that reads it
//! (`#[path = "…/tests/corpus/mod.rs"] mod corpus;`), beside the build script `tests/corpus/build.rs`
//! that marks those tests ignored when the corpus is absent. A file keeps its path relative to the corpus
//! (`param/dlrm_kineto/…`, `native/rpd/…`).
#![allow(dead_code)] // Each test binary uses its own subset.

use std::path::{Path, PathBuf};

/// The reason a test that needs the corpus gives when it is ignored (the attribute takes a literal, so
/// the tests spell it out: `#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]`).
pub const NEEDS_CORPUS: &str = "needs ../shared/traces (the shared corpus)";

/// The repository root (the nearest folder above the package that holds `testdata/` and `Cargo.lock`).
pub fn repository_root() -> PathBuf {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    package
        .ancestors()
        .find(|d| d.join("testdata").is_dir() && d.join("Cargo.lock").is_file())
        .unwrap_or(package)
        .to_path_buf()
}

/// Where the corpus is, or would be: `../shared/traces` beside the clone.
pub fn corpus_root() -> PathBuf {
    repository_root().join("../shared/traces")
}

/// The corpus, or `None` when it is absent. Absent with KL1_REQUIRE_CORPUS set (CI) fails the test. A test
/// that needs the corpus for all it checks is marked ignored instead (`cfg(corpus_absent)`); this is for
/// tests that check the corpus on top of generated data.
pub fn corpus() -> Option<PathBuf> {
    let root = corpus_root();
    if root.join("INVENTORY.csv").is_file() {
        return Some(root);
    }
    assert!(
        std::env::var_os("KL1_REQUIRE_CORPUS").is_none(),
        "KL1_REQUIRE_CORPUS is set but {} is missing",
        root.display()
    );
    None
}

/// A file or folder of the corpus, by its path there. For tests marked ignored without the corpus: a
/// missing one fails the test, naming it.
pub fn corpus_file(rel: &str) -> PathBuf {
    let p = corpus_root().join(rel);
    assert!(
        p.exists(),
        "{} is missing ({NEEDS_CORPUS}; KL1_REQUIRE_CORPUS={:?})",
        p.display(),
        std::env::var_os("KL1_REQUIRE_CORPUS")
    );
    p
}

/// The corpus, for tests marked ignored without it: a missing one fails the test, naming where it was
/// looked for.
pub fn required() -> PathBuf {
    corpus_file("INVENTORY.csv")
        .parent()
        .map_or_else(corpus_root, Path::to_path_buf)
}
