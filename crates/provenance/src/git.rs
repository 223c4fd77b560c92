//! The state of the code: commit, branch, modified tracked files, and a hash of the diff against HEAD, read
//! without letting git run a program the repository, the user's configuration or the environment names.

use serde::Serialize;
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::Probe;
use crate::cmd;
use crate::git_tree;

/// Repository state at the start of the run. Every field is a probe: no git, no repository or no commit yet
/// each give `null` with the reason.
#[derive(Debug, Clone, Serialize)]
pub struct GitInfo {
    /// The directory git was asked about (the repository containing it is the one read).
    pub dir: String,
    /// `git rev-parse HEAD`.
    pub commit: Probe<String>,
    /// Whether any tracked file differs from HEAD (staged or not). Untracked files do not count: they rarely
    /// change what a benchmark runs, and a scratch file must not mark every run dirty (the seed's rule).
    pub dirty: Probe<bool>,
    /// The tracked paths that differ from HEAD, in the index or the work tree, sorted (at most [`MAX_LISTED`];
    /// a rename is its two paths). A work-tree file counts when its bytes as stored differ from the index's.
    pub modified: Probe<Vec<String>>,
    /// Number of untracked entries (files, or directories with no tracked file), for information only.
    pub untracked: Probe<usize>,
    /// The checked-out branch; unavailable on a detached HEAD.
    pub branch: Probe<String>,
    /// SHA-256 of the diff of HEAD against the tracked files (binary-safe, independent of the user's diff
    /// settings): what `git diff HEAD` prints for files no filter converts, the stored bytes for those one
    /// would (`git_tree.rs`). A clean tree hashes the empty diff: `e3b0c442…b855`.
    pub diff_sha256: Probe<String>,
    /// Size of that diff in bytes.
    pub diff_bytes: Probe<u64>,
}

/// How many modified paths a record lists; the count of the rest is appended as `… and N more`.
pub const MAX_LISTED: usize = 50;

const TIMEOUT: Duration = Duration::from_secs(30);

/// The `git diff` options that pin every output setting user or repository configuration could change
/// (`diff.orderFile`, `diff.indentHeuristic`, `diff.algorithm`, `diff.context`, `diff.interHunkContext`,
/// `diff.renames`, `diff.relative`, `diff.noprefix`/`diff.mnemonicPrefix`, `diff.submodule`, `diff.external`,
/// textconv drivers, colour, abbreviation), so that the same change hashes the same on every machine.
pub(crate) const DIFF_PINS: [&str; 16] = [
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--binary",
    "--full-index",
    "--no-renames",
    "--no-relative",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    // The order of files as git sorts them, whatever `diff.orderFile` says.
    "-O/dev/null",
    "--unified=3",
    "--inter-hunk-context=0",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--ignore-submodules=none",
    "--submodule=short",
];

/// A field that failed with `git.<field>`, pointing there: a record states git's words once, not seven times.
fn failed_as<T>(field: &str) -> Probe<T> {
    Probe::unavailable(format!("git could not say (why: git.{field})"))
}

/// Reads the state of the repository containing `dir`, running no program the repository configures.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let g = provenance::git_info(dir.path());
/// assert!(g.commit.reason().is_some()); // not a repository: a reason, not an error
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn git_info(dir: &Path) -> GitInfo {
    // One question first: is there a work tree at all? Otherwise each probe would fail in its own words (`git
    // diff` outside a repository talks about --no-index), and more processes would be spawned for nothing.
    if let Err(f) = git_in(dir, &["rev-parse", "--show-toplevel"], &[]) {
        // Git's words once, under `commit`; the fields that fail with it point there.
        return GitInfo {
            dir: dir.display().to_string(),
            commit: Probe::unavailable(f.reason),
            dirty: failed_as("commit"),
            modified: failed_as("commit"),
            untracked: failed_as("commit"),
            branch: failed_as("commit"),
            diff_sha256: failed_as("commit"),
            diff_bytes: failed_as("commit"),
        };
    }
    let commit = git_in(dir, &["rev-parse", "--verify", "HEAD"], &[])
        .map(|o| o.text())
        .map_err(|f| f.reason);
    let branch = match git_in(dir, &["symbolic-ref", "--quiet", "--short", "HEAD"], &[]) {
        Ok(o) => Probe::Value(o.text()),
        // `symbolic-ref --quiet` exits 1 with no message exactly when HEAD is detached.
        Err(f) if f.code == Some(1) => Probe::unavailable("detached HEAD"),
        Err(f) => Probe::unavailable(f.reason),
    };
    let (dirty, modified, untracked, diff_sha256, diff_bytes) = match git_tree::changes(dir) {
        Ok(c) => {
            let mut listed: Vec<String> = c.modified.iter().take(MAX_LISTED).cloned().collect();
            if c.modified.len() > MAX_LISTED {
                listed.push(format!("… and {} more", c.modified.len() - MAX_LISTED));
            }
            (
                Probe::Value(!c.modified.is_empty()),
                Probe::Value(listed),
                Probe::Value(c.untracked),
                Probe::Value(sha256_hex(&c.patch)),
                Probe::Value(c.patch.len() as u64),
            )
        }
        Err(r) => (
            Probe::unavailable(r),
            failed_as("dirty"),
            failed_as("dirty"),
            failed_as("dirty"),
            failed_as("dirty"),
        ),
    };
    GitInfo {
        dir: dir.display().to_string(),
        commit: commit.into(),
        dirty,
        modified,
        untracked,
        branch,
        diff_sha256,
        diff_bytes,
    }
}

/// Runs git on the repository containing `dir`, with `env` added, so that it runs no program anyone but git
/// wrote. What is named here is only what these reading commands could otherwise run; the work-tree reads
/// that would run filters are not asked of git at all (`git_tree.rs`):
///
/// - every inherited `GIT_*` variable is dropped (`GIT_EXTERNAL_DIFF`, `GIT_CONFIG_PARAMETERS`, `GIT_DIR`, a
///   hook's `GIT_INDEX_FILE`…): the question is "the repository at `dir`", as configured there;
/// - `core.fsmonitor=false` (a hook program `git status` and `git diff-files` run), `core.hooksPath=/dev/null`;
/// - `protocol.allow=never` and `GIT_NO_LAZY_FETCH=1`: a partial clone's missing object is never fetched (a
///   fetch runs transports, `core.sshCommand`, credential helpers);
/// - `--no-pager`, no terminal prompts, no optional locks (reading must not race a user's own git command).
pub(crate) fn git_in(
    dir: &Path,
    args: &[&str],
    env: &[(&str, OsString)],
) -> Result<cmd::Output, cmd::Failure> {
    let mut c = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.as_encoded_bytes().starts_with(b"GIT_") {
            c.env_remove(&k);
        }
    }
    c.arg("--no-pager")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "protocol.allow=never",
        ])
        .args(args);
    c.env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
    for (k, v) in env {
        c.env(k, v);
    }
    cmd::run(c, TIMEOUT)
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_pins_cover_order_file_and_indent_heuristic() {
        assert!(DIFF_PINS.contains(&"-O/dev/null"));
        assert!(DIFF_PINS.contains(&"--indent-heuristic"));
    }

    #[test]
    fn sha_of_empty_is_the_known_constant() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
