//! Git state in real temporary repositories: clean, dirty tracked files, untracked files only, no repository,
//! a detached HEAD and a repository without commits.
// Helpers outside #[test] functions panic on failure too; clippy.toml's test allowance covers only the tests.
#![allow(clippy::expect_used)]

mod common;

use common::{git, git_out, repo};
use provenance::{Check, Probe, Provenance, git_info};
use std::fs;

const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

#[test]
fn clean_repository() {
    let t = tempfile::tempdir().expect("tempdir");
    let (home, dir) = repo(t.path());
    let g = git_info(&dir);
    assert_eq!(
        g.commit,
        Probe::Value(git_out(&home, &dir, &["rev-parse", "HEAD"]))
    );
    assert_eq!(g.dirty, Probe::Value(false));
    assert_eq!(g.modified, Probe::Value(vec![]));
    assert_eq!(g.untracked, Probe::Value(0));
    assert_eq!(g.branch, Probe::Value("main".to_owned()));
    assert_eq!(g.diff_sha256, Probe::Value(EMPTY_SHA256.to_owned()));
    assert_eq!(g.diff_bytes, Probe::Value(0));
}

#[test]
fn modified_tracked_file_is_dirty_and_the_diff_hash_follows_the_change() {
    let t = tempfile::tempdir().expect("tempdir");
    let (home, dir) = repo(t.path());
    fs::write(dir.join("a.txt"), "alpha changed\n").expect("write");
    let g = git_info(&dir);
    assert_eq!(g.dirty, Probe::Value(true));
    assert_eq!(g.modified, Probe::Value(vec!["a.txt".to_owned()]));
    let h1 = g.diff_sha256.value().cloned().expect("hash");
    assert_ne!(h1, EMPTY_SHA256);
    assert!(g.diff_bytes.value().is_some_and(|&n| n > 0));
    assert_eq!(
        git_info(&dir).diff_sha256.value(),
        Some(&h1),
        "same tree, same hash"
    );
    fs::write(dir.join("a.txt"), "alpha changed differently\n").expect("write");
    let h2 = git_info(&dir).diff_sha256.value().cloned().expect("hash");
    assert_ne!(h1, h2, "another change must hash differently");
    // Staged changes count as much as unstaged ones.
    git(&home, &dir, &["checkout", "--", "a.txt"]);
    fs::write(dir.join("b.txt"), "beta staged\n").expect("write");
    git(&home, &dir, &["add", "b.txt"]);
    let g = git_info(&dir);
    assert_eq!(g.dirty, Probe::Value(true));
    assert_eq!(g.modified, Probe::Value(vec!["b.txt".to_owned()]));
}

#[test]
fn the_diff_hash_does_not_depend_on_diff_configuration() {
    let t = tempfile::tempdir().expect("tempdir");
    let (home, dir) = repo(t.path());
    fs::write(dir.join("a.txt"), "alpha changed\n").expect("write");
    fs::write(dir.join("b.txt"), "beta changed\n").expect("write");
    let h1 = git_info(&dir).diff_sha256.value().cloned().expect("hash");
    // Repository configuration that changes what a plain `git diff` prints: files in another order, another
    // hunk heuristic, blank context lines printed empty, merged hunks, other prefixes.
    let order = t.path().join("order");
    fs::write(&order, "b.txt\na.txt\n").expect("write");
    let plain_before = git_out(&home, &dir, &["diff", "HEAD"]);
    for (k, v) in [
        ("diff.orderFile", order.to_str().expect("utf-8 path")),
        ("diff.indentHeuristic", "false"),
        ("diff.suppressBlankEmpty", "true"),
        ("diff.interHunkContext", "10"),
        ("diff.context", "5"),
        ("diff.mnemonicPrefix", "true"),
        ("diff.algorithm", "histogram"),
    ] {
        git(&home, &dir, &["config", k, v]);
    }
    let plain_after = git_out(&home, &dir, &["diff", "HEAD"]);
    assert_ne!(
        plain_before, plain_after,
        "the configuration must change an unpinned diff, or this test proves nothing"
    );
    let h2 = git_info(&dir).diff_sha256.value().cloned().expect("hash");
    assert_eq!(
        h1, h2,
        "the same change must hash the same under any diff configuration"
    );
}

#[test]
fn untracked_files_alone_do_not_make_the_tree_dirty() {
    let t = tempfile::tempdir().expect("tempdir");
    let (_home, dir) = repo(t.path());
    fs::write(dir.join("scratch.txt"), "notes\n").expect("write");
    fs::create_dir(dir.join("out")).expect("mkdir");
    fs::write(dir.join("out/result.json"), "{}").expect("write");
    let g = git_info(&dir);
    assert_eq!(g.dirty, Probe::Value(false));
    assert_eq!(g.untracked, Probe::Value(2), "a file and a directory");
    assert_eq!(g.diff_sha256, Probe::Value(EMPTY_SHA256.to_owned()));
}

#[test]
fn no_repository_gives_reasons_not_errors() {
    let t = tempfile::tempdir().expect("tempdir");
    let g = git_info(t.path());
    let why = g.commit.reason().expect("no commit outside a repository");
    assert!(why.contains("not a git repository"), "{why}");
    // Git's words once, under `commit`; every other field points there.
    for (name, reason) in [
        ("dirty", g.dirty.reason()),
        ("modified", g.modified.reason()),
        ("untracked", g.untracked.reason()),
        ("branch", g.branch.reason()),
        ("diff_sha256", g.diff_sha256.reason()),
        ("diff_bytes", g.diff_bytes.reason()),
    ] {
        let r =
            reason.unwrap_or_else(|| panic!("{name} should be unavailable outside a repository"));
        assert_eq!(r, "git could not say (why: git.commit)", "{name}");
    }
}

#[test]
fn detached_head_has_no_branch() {
    let t = tempfile::tempdir().expect("tempdir");
    let (home, dir) = repo(t.path());
    git(&home, &dir, &["checkout", "-q", "--detach", "HEAD"]);
    let g = git_info(&dir);
    assert_eq!(g.branch.reason(), Some("detached HEAD"));
    assert!(g.commit.value().is_some());
}

#[test]
fn repository_without_commits() {
    let t = tempfile::tempdir().expect("tempdir");
    let home = t.path().join("home");
    let dir = t.path().join("repo");
    fs::create_dir_all(&home).expect("home");
    fs::create_dir_all(&dir).expect("dir");
    git(&home, &dir, &["init", "-q"]);
    let g = git_info(&dir);
    assert!(
        g.commit.reason().is_some(),
        "no HEAD commit yet: {:?}",
        g.commit
    );
    assert_eq!(g.branch, Probe::Value("main".to_owned()));
}

fn record_for(dir: &std::path::Path) -> provenance::Record {
    let nowhere = dir.join("no-such-nvidia-smi");
    Provenance::new()
        .repo_dir(dir)
        .monitor_config(common::smi_config(nowhere))
        .start()
        .finish()
}

#[test]
fn the_verdict_flags_a_dirty_tree_with_the_files_and_passes_a_clean_one() {
    let t = tempfile::tempdir().expect("tempdir");
    let (_home, dir) = repo(t.path());
    let clean = record_for(&dir);
    assert!(!clean.verdict.has(Check::DirtyTree));
    assert!(
        !clean
            .verdict
            .unchecked
            .iter()
            .any(|u| u.check == Check::DirtyTree)
    );

    fs::write(dir.join("b.txt"), "beta changed\n").expect("write");
    let dirty = record_for(&dir);
    let flag = dirty
        .verdict
        .flags
        .iter()
        .find(|f| f.flag == Check::DirtyTree)
        .expect("dirty_tree flag");
    assert!(flag.evidence.contains("b.txt"), "{}", flag.evidence);
    assert!(flag.evidence.contains("diff sha256"), "{}", flag.evidence);
    let v = dirty.to_value().expect("serialises");
    assert_eq!(v["git"]["dirty"], true);
}

#[test]
fn reading_git_state_runs_no_program_the_repository_configures() {
    let t = tempfile::tempdir().expect("tempdir");
    let (home, dir) = repo(t.path());
    let marker = |name: &str| t.path().join(name);
    let hook = |name: &str| format!("sh -c 'touch {}; cat'", marker(name).display());
    // An fsmonitor hook and a required clean/smudge filter on every file, as Git LFS or a hostile repository
    // would configure them.
    git(
        &home,
        &dir,
        &["config", "core.fsmonitor", &hook("fsmonitor-ran")],
    );
    git(
        &home,
        &dir,
        &["config", "filter.mark.clean", &hook("clean-ran")],
    );
    git(
        &home,
        &dir,
        &["config", "filter.mark.smudge", &hook("smudge-ran")],
    );
    git(&home, &dir, &["config", "filter.mark.required", "true"]);
    fs::write(dir.join(".git/info/attributes"), "* filter=mark\n").expect("attributes");
    fs::write(dir.join("a.txt"), "alpha changed\n").expect("write");

    // Plain git runs them: the test would see it if the recorder did.
    git_out(&home, &dir, &["status", "--porcelain"]);
    git_out(&home, &dir, &["diff", "HEAD"]);
    assert!(marker("fsmonitor-ran").exists() && marker("clean-ran").exists());
    for m in ["fsmonitor-ran", "clean-ran", "smudge-ran"] {
        let _ = fs::remove_file(marker(m));
    }

    let g = git_info(&dir);
    for m in ["fsmonitor-ran", "clean-ran", "smudge-ran"] {
        assert!(
            !marker(m).exists(),
            "{m}: git_info ran a configured program"
        );
    }
    assert_eq!(g.dirty, Probe::Value(true));
    assert_eq!(g.modified, Probe::Value(vec!["a.txt".to_owned()]));
    assert!(g.diff_sha256.value().is_some(), "{:?}", g.diff_sha256);
}

/// `git diff HEAD` with the record's pins, run by hand: what the diff hash must be for files no filter
/// converts.
fn pinned_diff(home: &std::path::Path, dir: &std::path::Path) -> Vec<u8> {
    let out = std::process::Command::new("git")
        .args([
            "--no-pager",
            "-c",
            "core.quotePath=true",
            "-c",
            "diff.suppressBlankEmpty=false",
            "diff",
            "HEAD",
        ])
        .args([
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--binary",
            "--full-index",
            "--no-renames",
        ])
        .args([
            "--no-relative",
            "--diff-algorithm=myers",
            "--indent-heuristic",
            "-O/dev/null",
            "--unified=3",
        ])
        .args([
            "--inter-hunk-context=0",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--ignore-submodules=none",
        ])
        .arg("--submodule=short")
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git diff");
    assert!(out.status.success());
    out.stdout
}

#[test]
fn the_diff_is_git_diff_head_for_every_kind_of_change() {
    use sha2::Digest;
    let t = tempfile::tempdir().expect("tempdir");
    let (home, dir) = repo(t.path());
    let sha = |b: &[u8]| -> String {
        sha2::Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect()
    };
    // More committed state to change: a binary file, a script, a link, a file that becomes a directory, a
    // file in a directory that is emptied, a file renamed.
    fs::create_dir_all(dir.join("deep/er")).expect("dir");
    fs::write(dir.join("bin.dat"), [0u8, 1, 2, 255, 0, 7]).expect("write");
    fs::write(dir.join("run.sh"), "echo hi\n").expect("write");
    fs::write(dir.join("deep/er/x.txt"), "x\n").expect("write");
    fs::write(dir.join("becomes-dir"), "file\n").expect("write");
    fs::write(dir.join("old name.txt"), "renamed\n").expect("write");
    #[cfg(unix)]
    std::os::unix::fs::symlink("a.txt", dir.join("link")).expect("link");
    git(&home, &dir, &["add", "-A"]);
    git(&home, &dir, &["commit", "-q", "-m", "more"]);
    // A file whose stat changed but not its bytes is not a change (git diff-files lists it; the bytes decide).
    let f = fs::File::options()
        .write(true)
        .open(dir.join("b.txt"))
        .expect("open");
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .expect("touch");
    drop(f);
    assert_eq!(git_info(&dir).dirty, Probe::Value(false));
    type Step<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let steps: Vec<Step> = vec![
        (
            "edit",
            Box::new(|| fs::write(dir.join("a.txt"), "alpha\nmore\n").expect("write")),
        ),
        (
            "binary",
            Box::new(|| fs::write(dir.join("bin.dat"), [9u8, 0, 0, 1]).expect("write")),
        ),
        (
            "delete",
            Box::new(|| fs::remove_file(dir.join("b.txt")).expect("rm")),
        ),
        (
            "chmod",
            Box::new(|| {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    fs::set_permissions(dir.join("run.sh"), fs::Permissions::from_mode(0o755))
                        .expect("chmod");
                }
            }),
        ),
        (
            "relink",
            Box::new(|| {
                #[cfg(unix)]
                {
                    fs::remove_file(dir.join("link")).expect("rm");
                    std::os::unix::fs::symlink("b.txt", dir.join("link")).expect("link");
                }
            }),
        ),
        (
            "empty a directory",
            Box::new(|| fs::remove_file(dir.join("deep/er/x.txt")).expect("rm")),
        ),
        (
            "file to directory",
            Box::new(|| {
                fs::remove_file(dir.join("becomes-dir")).expect("rm");
                fs::create_dir(dir.join("becomes-dir")).expect("mkdir");
                fs::write(dir.join("becomes-dir/inner.txt"), "inner\n").expect("write");
                git(&home, &dir, &["add", "becomes-dir"]);
            }),
        ),
        (
            "staged rename",
            Box::new(|| git(&home, &dir, &["mv", "old name.txt", "new name.txt"])),
        ),
        (
            "staged then changed again",
            Box::new(|| {
                fs::write(dir.join("new file.txt"), "one\n").expect("write");
                git(&home, &dir, &["add", "new file.txt"]);
                fs::write(dir.join("new file.txt"), "one\ntwo\n").expect("write");
            }),
        ),
        (
            "touched, not changed",
            Box::new(|| {
                let f = fs::File::options()
                    .write(true)
                    .open(dir.join("run.sh"))
                    .expect("open");
                f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
                    .expect("touch");
            }),
        ),
    ];
    for (what, step) in steps {
        step();
        let g = git_info(&dir);
        let expected = pinned_diff(&home, &dir);
        assert_eq!(
            g.diff_sha256,
            Probe::Value(sha(&expected)),
            "after {what}: the diff differs from git diff HEAD:\n{}",
            String::from_utf8_lossy(&expected)
        );
        assert_eq!(
            g.diff_bytes,
            Probe::Value(expected.len() as u64),
            "after {what}"
        );
    }
    let g = git_info(&dir);
    let mut listed: Vec<String> = g.modified.value().expect("modified").clone();
    listed.sort();
    assert_eq!(
        listed,
        [
            "a.txt",
            "b.txt",
            "becomes-dir",
            "becomes-dir/inner.txt",
            "bin.dat",
            "deep/er/x.txt",
            "link",
            "new file.txt",
            "new name.txt",
            "old name.txt",
            "run.sh",
        ]
    );
}
