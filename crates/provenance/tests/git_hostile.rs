//! A hostile repository: every way this test knows for git to run a program during the reads a record makes
//! (filters under names `-c` misreads — `x=y`, dots, quotes — and under names only an include, a macro
//! attribute or `info/attributes` gives; diff drivers and `diff.external`; `core.fsmonitor`, `core.pager`,
//! hooks; racily clean entries that git re-hashes through their filter; a submodule with its own filter and
//! fsmonitor; `GIT_*` variables in the environment), all at once. Plain git runs them (checked first, or the
//! test would prove nothing); `git_info` must run none and still report the changes, with the diff hash that
//! `git diff HEAD` gives for the same changes in a repository that configures nothing.
//!
//! Its own test binary: it sets environment variables, which are process-wide.
// Helpers outside #[test] functions panic on failure too; clippy.toml's test allowance covers only the tests.
#![allow(clippy::expect_used)]

mod common;

use common::git;
use provenance::{Probe, git_info};
use std::fs;
use std::path::Path;
use std::process::Command;

/// Files, contents and the change made to each after the commit.
const FILES: [(&str, &str, &str); 8] = [
    ("a.txt", "alpha\n", "alpha changed\n"),
    ("b.txt", "beta\n", "beta changed\n"),
    ("c.txt", "gamma\n", "gamma changed\n"),
    ("d.txt", "delta\n", "delta changed\n"),
    ("e.txt", "epsilon\n", "epsilon changed\n"),
    ("f.txt", "zeta\n", "zeta changed\n"),
    ("dir/g.txt", "eta\n", "eta changed\n"),
    // Unchanged: racily clean only (stat matches, the index is older): plain git re-hashes it.
    ("h.txt", "theta\n", "theta\n"),
];

/// Every filter and diff driver name, with the attribute line that selects it.
const ATTRIBUTES: &str = "a.txt filter=x=y diff=d=1\n\
                          b.txt filter=a.b\n\
                          c.txt filter=q\"u\n\
                          d.txt filter=inc\n\
                          e.txt evil\n\
                          dir/g.txt filter=plain diff=plain\n\
                          h.txt filter=plain\n";

fn prog(markers: &Path, name: &str) -> String {
    // Passes the content through (a working filter), leaving a marker behind.
    format!("sh -c 'touch {}/{name}; cat'", markers.display())
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The files committed and then changed, in `dir` (a fresh repository), with `.gitattributes` committed.
fn populate(home: &Path, dir: &Path) {
    fs::create_dir_all(dir.join("dir")).expect("dir");
    git(home, dir, &["init", "-q"]);
    fs::write(dir.join(".gitattributes"), ATTRIBUTES).expect("attributes");
    for (f, before, _) in FILES {
        fs::write(dir.join(f), before).expect("write");
    }
    git(home, dir, &["add", "."]);
    git(home, dir, &["commit", "-q", "-m", "first"]);
    for (f, _, after) in FILES {
        if before_differs(f) {
            fs::write(dir.join(f), after).expect("write");
        }
    }
    fs::remove_file(dir.join("f.txt")).expect("rm");
}

/// A staged new file (after the last commit).
fn stage_new(home: &Path, dir: &Path) {
    fs::write(dir.join("new.txt"), "new\n").expect("write");
    git(home, dir, &["add", "new.txt"]);
}

fn before_differs(f: &str) -> bool {
    FILES.iter().any(|(n, b, a)| *n == f && b != a)
}

#[test]
fn reading_git_state_runs_no_program_whatever_the_names() {
    let t = tempfile::tempdir().expect("tempdir");
    let home = t.path().join("home");
    fs::create_dir_all(&home).expect("home");
    let markers = t.path().join("markers");
    fs::create_dir_all(&markers).expect("markers");

    // The twin: the same changes, nothing configured. Its `git diff HEAD` is the expected diff.
    let twin = t.path().join("twin");
    populate(&home, &twin);
    let pinned = |dir: &Path| {
        let out = Command::new("git")
            .args([
                "--no-pager",
                "-c",
                "core.quotePath=true",
                "-c",
                "diff.suppressBlankEmpty=false",
            ])
            .args([
                "diff",
                "HEAD",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "--binary",
                "--full-index",
            ])
            .args([
                "--no-renames",
                "--no-relative",
                "--diff-algorithm=myers",
                "--indent-heuristic",
                "-O/dev/null",
            ])
            .args([
                "--unified=3",
                "--inter-hunk-context=0",
                "--src-prefix=a/",
                "--dst-prefix=b/",
            ])
            .args(["--ignore-submodules=none", "--submodule=short"])
            .current_dir(dir)
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git diff");
        assert!(out.status.success());
        out.stdout
    };

    // The hostile one.
    let dir = t.path().join("repo");
    populate(&home, &dir);
    // A submodule with its own filter and fsmonitor, and a change inside it.
    let sub_src = t.path().join("sub-src");
    fs::create_dir_all(&sub_src).expect("sub");
    git(&home, &sub_src, &["init", "-q"]);
    fs::write(sub_src.join("s.txt"), "sub\n").expect("write");
    git(&home, &sub_src, &["add", "s.txt"]);
    git(&home, &sub_src, &["commit", "-q", "-m", "sub"]);
    git(
        &home,
        &dir,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            sub_src.to_str().expect("utf-8"),
            "sub",
        ],
    );
    git(&home, &dir, &["commit", "-q", "-m", "sub"]);
    // The twin gets the same submodule so that the diffs compare (the submodule's HEAD is unchanged).
    git(
        &home,
        &twin,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            sub_src.to_str().expect("utf-8"),
            "sub",
        ],
    );
    git(&home, &twin, &["commit", "-q", "-m", "sub"]);
    stage_new(&home, &dir);
    stage_new(&home, &twin);
    let expected = pinned(&twin);
    assert!(!expected.is_empty());
    fs::write(dir.join("sub/s.txt"), "sub changed\n").expect("write");
    let sub_git = dir.join(".git/modules/sub");
    let mut sub_config = fs::read_to_string(sub_git.join("config")).expect("sub config");
    sub_config.push_str(&format!(
        "[core]\n\tfsmonitor = \"{}\"\n[filter \"subf\"]\n\tclean = \"{}\"\n\tprocess = \"{}\"\n",
        prog(&markers, "sub-fsmonitor"),
        prog(&markers, "sub-clean"),
        prog(&markers, "sub-process"),
    ));
    fs::write(sub_git.join("config"), sub_config).expect("sub config");
    fs::create_dir_all(sub_git.join("info")).expect("info");
    fs::write(sub_git.join("info/attributes"), "* filter=subf\n").expect("sub attributes");

    // The repository's configuration, written as a file: names no `-c` option can spell.
    let p = |n: &str| prog(&markers, n);
    // Quoted for a config file, where `;` would start a comment.
    let q = |n: &str| format!("\"{}\"", prog(&markers, n));
    let extra = t.path().join("extra.config");
    fs::write(
        &extra,
        format!("[filter \"inc\"]\n\tclean = {}\n", q("clean-inc")),
    )
    .expect("include");
    let hooks = t.path().join("hooks");
    fs::create_dir_all(&hooks).expect("hooks");
    for h in [
        "post-index-change",
        "pre-commit",
        "post-checkout",
        "reference-transaction",
    ] {
        let path = hooks.join(h);
        fs::write(
            &path,
            format!("#!/bin/sh\ntouch {}/hook-{h}\n", markers.display()),
        )
        .expect("hook");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    }
    let mut config = fs::read_to_string(dir.join(".git/config")).expect("config");
    config.push_str(&format!(
        "[filter \"x=y\"]\n\tclean = {}\n\tsmudge = {}\n\trequired = true\n\
         [filter \"a.b\"]\n\tclean = {}\n\tprocess = {}\n\
         [filter \"q\\\"u\"]\n\tclean = {}\n\
         [filter \"plain\"]\n\tclean = {}\n\trequired = true\n\
         [filter \"macro\"]\n\tclean = {}\n\
         [diff \"d=1\"]\n\ttextconv = {}\n\tcommand = {}\n\
         [diff \"plain\"]\n\ttextconv = {}\n\tcommand = {}\n\
         [diff]\n\texternal = {}\n\
         [core]\n\tfsmonitor = {}\n\tpager = {}\n\thooksPath = {}\n\tsshCommand = {}\n\
         [credential]\n\thelper = {}\n\
         [gpg]\n\tprogram = {}\n\
         [include]\n\tpath = {}\n\
         [includeIf \"gitdir:{}/\"]\n\tpath = {}\n",
        q("clean-x=y"),
        q("smudge-x=y"),
        q("clean-a.b"),
        q("process-a.b"),
        q("clean-quote"),
        q("clean-plain"),
        q("clean-macro"),
        q("textconv-d=1"),
        q("command-d=1"),
        q("textconv-plain"),
        q("command-plain"),
        q("diff-external"),
        q("fsmonitor"),
        q("pager"),
        hooks.display(),
        q("ssh"),
        q("credential"),
        q("gpg"),
        extra.display(),
        dir.display(),
        extra.display(),
    ));
    fs::write(dir.join(".git/config"), config).expect("config");
    // A macro attribute (only the top-level files may define one) and a filter only `info/attributes` names.
    fs::create_dir_all(dir.join(".git/info")).expect("info");
    fs::write(
        dir.join(".git/info/attributes"),
        "[attr]evil filter=macro diff=d=1\nnew.txt filter=x=y\n",
    )
    .expect("info attributes");
    // Every entry racily clean: the index older than every file, but not at the epoch.
    let index = fs::File::options()
        .write(true)
        .open(dir.join(".git/index"))
        .expect("index");
    index
        .set_times(
            fs::FileTimes::new()
                .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1)),
        )
        .expect("index time");
    drop(index);

    // Plain git, as `git status` and `git diff HEAD` are run by hand, runs them.
    let plain = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&dir)
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .output()
            .expect("git");
        eprintln!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    plain(&["status", "--porcelain", "--ignore-submodules=none"]);
    plain(&["diff", "HEAD"]);
    let ran: Vec<String> = fs::read_dir(&markers)
        .expect("markers")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    for m in [
        "x=y",
        "a.b",
        "quote",
        "inc",
        "macro",
        "-plain",
        "fsmonitor",
        "sub-fsmonitor",
    ] {
        assert!(
            ran.iter().any(|r| r.contains(m)),
            "plain git did not run a program of {m} ({ran:?}): this test would prove nothing"
        );
    }
    for m in &ran {
        fs::remove_file(markers.join(m)).expect("rm marker");
    }

    // And variables a user's shell or a hook may have exported.
    // SAFETY: this test binary has this one test; no other thread reads the environment meanwhile.
    unsafe {
        std::env::set_var("GIT_EXTERNAL_DIFF", p("env-external-diff"));
        std::env::set_var("GIT_PAGER", p("env-pager"));
        std::env::set_var("GIT_CONFIG_COUNT", "1");
        std::env::set_var("GIT_CONFIG_KEY_0", "core.fsmonitor");
        std::env::set_var("GIT_CONFIG_VALUE_0", p("env-fsmonitor"));
        std::env::set_var(
            "GIT_CONFIG_PARAMETERS",
            format!(
                "'filter.plain.clean'='touch {}/env-param'",
                markers.display()
            ),
        );
        std::env::set_var("GIT_INDEX_FILE", t.path().join("elsewhere-index"));
    }
    let g = git_info(&dir);
    let ran: Vec<String> = fs::read_dir(&markers)
        .expect("markers")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(ran.is_empty(), "git_info ran configured programs: {ran:?}");

    assert_eq!(g.dirty, Probe::Value(true));
    // Every change, the racily clean file not among them; the submodule's inner change is not looked at
    // (that would be git run inside it under its own configuration).
    assert_eq!(
        g.modified,
        Probe::Value(
            [
                "a.txt",
                "b.txt",
                "c.txt",
                "d.txt",
                "dir/g.txt",
                "e.txt",
                "f.txt",
                "new.txt"
            ]
            .map(String::from)
            .to_vec()
        )
    );
    assert_eq!(g.diff_sha256, Probe::Value(sha256_hex(&expected)));
    assert_eq!(g.diff_bytes, Probe::Value(expected.len() as u64));
    // Nothing was written into the repository.
    assert!(!dir.join(".git/index.lock").exists());
}
