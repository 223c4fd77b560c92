//! The state of the code: commit, branch, modified tracked files, and a hash of the diff against HEAD.

use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::Probe;
use crate::cmd;

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
    /// The tracked paths that differ from HEAD, as `git status` names them (at most [`MAX_LISTED`]).
    pub modified: Probe<Vec<String>>,
    /// Number of untracked entries (files, or directories with no tracked file), for information only.
    pub untracked: Probe<usize>,
    /// The checked-out branch; unavailable on a detached HEAD.
    pub branch: Probe<String>,
    /// SHA-256 of `git diff HEAD` (tracked changes, binary-safe, independent of the user's diff settings). A
    /// clean tree hashes the empty diff: `e3b0c442…b855`.
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
    // diff` outside a repository talks about --no-index), and four more processes would be spawned for nothing.
    if let Err(f) = git(dir, &["rev-parse", "--show-toplevel"]) {
        let r = f.reason;
        return GitInfo {
            dir: dir.display().to_string(),
            commit: Probe::unavailable(r.clone()),
            dirty: Probe::unavailable(r.clone()),
            modified: Probe::unavailable(r.clone()),
            untracked: Probe::unavailable(r.clone()),
            branch: Probe::unavailable(r.clone()),
            diff_sha256: Probe::unavailable(r.clone()),
            diff_bytes: Probe::unavailable(r),
        };
    }
    let quiet = isolation(dir);
    let git = |dir: &Path, args: &[&str]| {
        let all: Vec<&str> = quiet
            .iter()
            .map(String::as_str)
            .chain(args.iter().copied())
            .collect();
        git(dir, &all)
    };
    let commit = git(dir, &["rev-parse", "--verify", "HEAD"])
        .map(|o| o.text())
        .map_err(|f| f.reason);
    let status = git(
        dir,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=normal",
            "--ignore-submodules=none",
        ],
    )
    .map(|o| parse_status(&o.stdout))
    .map_err(|f| f.reason);
    let (dirty, modified, untracked) = match status {
        Ok(s) => {
            let mut listed: Vec<String> = s.modified.iter().take(MAX_LISTED).cloned().collect();
            if s.modified.len() > MAX_LISTED {
                listed.push(format!("… and {} more", s.modified.len() - MAX_LISTED));
            }
            (
                Probe::Value(!s.modified.is_empty()),
                Probe::Value(listed),
                Probe::Value(s.untracked),
            )
        }
        Err(r) => (
            Probe::unavailable(r.clone()),
            Probe::unavailable(r.clone()),
            Probe::unavailable(r),
        ),
    };
    let branch = match git(dir, &["symbolic-ref", "--quiet", "--short", "HEAD"]) {
        Ok(o) => Probe::Value(o.text()),
        // `symbolic-ref --quiet` exits 1 with no message exactly when HEAD is detached.
        Err(f) if f.code == Some(1) => Probe::unavailable("detached HEAD"),
        Err(f) => Probe::unavailable(f.reason),
    };
    let diff = git(
        dir,
        &[
            // Every option that user or repository configuration could change is pinned, so that the same
            // change hashes the same on every machine.
            "-c",
            "core.quotePath=true",
            // Blank context lines as " " (the default), not as empty lines.
            "-c",
            "diff.suppressBlankEmpty=false",
            "diff",
            "HEAD",
        ]
        .into_iter()
        .chain(DIFF_PINS)
        .collect::<Vec<_>>(),
    );
    let (diff_sha256, diff_bytes) = match diff {
        Ok(o) => (
            Probe::Value(sha256_hex(&o.stdout)),
            Probe::Value(o.stdout.len() as u64),
        ),
        Err(f) => (
            Probe::unavailable(f.reason.clone()),
            Probe::unavailable(f.reason),
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

/// Options that keep git from running any program the repository (or the user's configuration) names: a
/// recorder must only read. Plain `git status` runs `core.fsmonitor` (a hook program), and `git status` and
/// `git diff` run clean filters (`filter.<driver>.clean`/`.process`, e.g. Git LFS) on modified files; hooks
/// are switched off too, though reading commands run none today. Each configured filter driver is emptied
/// by name (git runs no program for an empty one) and made non-required, so a required filter does not fail
/// the probe. The names are read with `git config`, which runs no program.
///
/// Not covered: a submodule's own filter drivers under names the superproject does not configure (the
/// `-c` options reach submodules, but only by name).
fn isolation(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = [
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=/dev/null",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let drivers = git(dir, &["config", "-z", "--get-regexp", r"^filter\."])
        .map(|o| filter_drivers(&o.stdout))
        .unwrap_or_default();
    for d in drivers {
        for (key, value) in [
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ] {
            out.push("-c".to_owned());
            out.push(format!("filter.{d}.{key}={value}"));
        }
    }
    out
}

/// Driver names from `git config -z --get-regexp '^filter\.'` (`filter.<name>.<key>\n<value>\0` entries; the
/// name may contain dots, the key does not).
fn filter_drivers(out: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = out
        .split(|&b| b == 0)
        .filter_map(|e| {
            let key = e.split(|&b| b == b'\n').next()?;
            let key = std::str::from_utf8(key).ok()?;
            let rest = key.strip_prefix("filter.")?;
            let (name, _) = rest.rsplit_once('.')?;
            Some(name.to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn git(dir: &Path, args: &[&str]) -> Result<cmd::Output, cmd::Failure> {
    let mut c = Command::new("git");
    c.arg("--no-pager").arg("-C").arg(dir).args(args);
    // The question is "the repository at `dir`": variables a git hook or wrapper exported would silently point
    // git at another repository or index.
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_COMMON_DIR",
        "GIT_PREFIX",
    ] {
        c.env_remove(var);
    }
    // `git status` refreshes the index and takes its lock; reading must not race a user's own git command.
    c.env("GIT_OPTIONAL_LOCKS", "0");
    c.env("LC_ALL", "C");
    cmd::run(c, TIMEOUT)
}

struct Status {
    modified: Vec<String>,
    untracked: usize,
}

/// Parses `git status --porcelain=v1 -z`: `XY path\0`, with a second `orig\0` entry after renames and copies.
fn parse_status(out: &[u8]) -> Status {
    let mut modified = Vec::new();
    let mut untracked = 0;
    let mut entries = out.split(|&b| b == 0).filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        if entry.len() < 4 {
            continue;
        }
        let (xy, path) = (&entry[..2], &entry[3..]);
        if xy == b"??" {
            untracked += 1;
            continue;
        }
        if xy == b"!!" {
            continue;
        }
        modified.push(String::from_utf8_lossy(path).into_owned());
        if xy.contains(&b'R') || xy.contains(&b'C') {
            entries.next();
        }
    }
    Status {
        modified,
        untracked,
    }
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
    fn status_parsing_counts_renames_once_and_separates_untracked() {
        let out = b" M src/a.rs\0R  new.rs\0old.rs\0?? scratch.txt\0?? tmp/\0A  added.rs\0";
        let s = parse_status(out);
        assert_eq!(s.modified, vec!["src/a.rs", "new.rs", "added.rs"]);
        assert_eq!(s.untracked, 2);
    }

    #[test]
    fn filter_driver_names_may_hold_dots() {
        let out = b"filter.lfs.clean\ngit-lfs clean -- %f\0filter.lfs.process\ngit-lfs filter-process\0filter.a.b.smudge\ncat\0";
        assert_eq!(filter_drivers(out), ["a.b", "lfs"]);
    }

    #[test]
    fn empty_status_is_clean() {
        let s = parse_status(b"");
        assert!(s.modified.is_empty());
        assert_eq!(s.untracked, 0);
    }

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
