//! The Python modules build with the features the whole workspace builds its dependencies with.
//!
//! Cargo resolves a dependency's features per set of selected packages. `maturin` builds one module
//! (`-p`-like, through its manifest), so any feature the rest of the workspace turns on and the module does
//! not (clap's `env` from the binaries, getrandom's `std` from tempfile, serde's `alloc`) gave that crate a
//! second build, and everything above it too: the kineto_trace wheel rebuilt ~40 crates, Arrow and
//! kineto-trace included (85 s wall, 155 CPU-s on 2 cores right after `cargo test --workspace --no-run`
//! in a fresh clone, 2026-12-03), though that had just built them. Each module's `[target.'cfg(all())'.dependencies]` table names those crates with
//! those features only to unify them (tidy's unused-dependency check skips that table). This test says
//! which are missing when a dependency changes: for every crate in a module's build, its features equal
//! the workspace's (`cargo tree`, as `cargo test --workspace` resolves: normal, build and dev edges).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

/// The module packages maturin builds, with their directories.
const MODULES: &[(&str, &str)] = &[
    ("kineto-trace-py", "python"),
    ("kl1-provenance-py", "python/provenance"),
];

/// Crate (`name vX.Y.Z`, with its path or `(proc-macro)` where cargo prints one) → its features, over
/// every instance `cargo tree` prints.
fn features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["tree", "--prefix", "none", "--format", "{p}|{f}"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cargo tree {args:?}: {e}"));
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim().trim_end_matches("(*)").trim_end();
        let Some((krate, feats)) = line.split_once('|') else {
            continue;
        };
        map.entry(krate.trim().to_string()).or_default().extend(
            feats
                .split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(String::from),
        );
    }
    map
}

#[test]
fn the_python_modules_build_their_dependencies_as_the_workspace_does() {
    let workspace = features(&["--workspace", "--edges", "normal,build,dev"]);
    let mut differ = Vec::new();
    for (package, dir) in MODULES {
        let module = features(&["--package", package, "--edges", "normal,build"]);
        assert!(
            module.len() > 10,
            "{package}: cargo tree printed {module:?}"
        );
        for (krate, feats) in &module {
            let Some(all) = workspace.get(krate) else {
                continue;
            };
            let lacks: Vec<&String> = all.difference(feats).collect();
            let adds: Vec<&String> = feats.difference(all).collect();
            if !lacks.is_empty() || !adds.is_empty() {
                differ.push(format!(
                    "{dir}/Cargo.toml: {krate}: lacks {lacks:?}, adds {adds:?}"
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "a module's build resolves these crates with other features than the workspace's, so maturin \
         compiles them (and what uses them) again; name them with the lacking features in the module's \
         [target.'cfg(all())'.dependencies]:\n  {}",
        differ.join("\n  ")
    );
}
