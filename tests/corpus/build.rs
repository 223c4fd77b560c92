//! The build script of every package whose tests read the shared trace corpus (`../shared/traces` beside the
//! clone; real traces from other public repositories, never copied into this one). Where the corpus is
//! absent, it sets `cfg(corpus_absent)`, and the tests that need the corpus, marked
//! `#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]`, are listed by
//! `cargo test` as ignored with that reason instead of passing without having checked anything.
//! With KL1_REQUIRE_CORPUS set (CI, and tests/run-all.sh when the corpus is there) the cfg is never set, so
//! that a missing corpus fails those tests (`tests/corpus/mod.rs`) rather than skipping them.

use std::path::{Path, PathBuf};

/// The repository root: the nearest folder above the package that holds `testdata/` (the packages sit at
/// different depths: `crates/x`, `bins/x`, `xtask`).
fn repository_root() -> PathBuf {
    let package = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    package
        .ancestors()
        .find(|d| d.join("testdata").is_dir() && d.join("Cargo.lock").is_file())
        .map_or(package.clone(), Path::to_path_buf)
}

/// `rel` (a path from the repository root) as a path from the package: cargo reads a relative
/// `rerun-if-changed` path from the package, so a target directory copied to another clone checks that
/// clone's files, not the first one's.
fn from_package(root: &Path, rel: &str) -> PathBuf {
    let package = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let depth = package
        .strip_prefix(root)
        .map_or(0, |p| p.components().count());
    let mut out: PathBuf = std::iter::repeat_n("..", depth).collect();
    out.push(rel);
    out
}

fn main() {
    let root = repository_root();
    let inventory = root.join("../shared/traces/INVENTORY.csv");
    println!("cargo::rustc-check-cfg=cfg(corpus_absent)");
    if inventory.is_file() {
        // Removing the corpus (or its inventory) reruns this script. KL1_REQUIRE_CORPUS changes nothing
        // here, and is not watched: a rerun rebuilds the package and its dependents.
        println!(
            "cargo::rerun-if-changed={}",
            from_package(&root, "../shared/traces/INVENTORY.csv").display()
        );
        return;
    }
    // Watching a path that does not exist would rerun this script, and rebuild the package, on every
    // build; so an absent corpus is looked for again when this script or KL1_REQUIRE_CORPUS changes
    // (tests/run-all.sh sets it whenever the corpus is there).
    println!("cargo::rerun-if-env-changed=KL1_REQUIRE_CORPUS");
    println!(
        "cargo::rerun-if-changed={}",
        from_package(&root, "tests/corpus/build.rs").display()
    );
    if std::env::var_os("KL1_REQUIRE_CORPUS").is_none() {
        println!("cargo::rustc-cfg=corpus_absent");
    }
}
