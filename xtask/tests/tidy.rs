//! Conventions checked mechanically (as rust-analyzer's tidy does), so they hold without a reviewer:
//!
//! 1. ARCHITECTURE.md is a map a newcomer reads in minutes: at most [`MAX_ARCHITECTURE_LINES`] lines,
//!    naming every crate (`crates/*`, `bins/*` by their directory) and every module folder (a directory
//!    under a crate's `src`, as `name/`); what each source file does is said in its own opening `//!`
//!    comment, which every source file (`crates/*/src`, `bins/*/src`, `python/src`,
//!    `python/provenance/src`, `xtask/src`, any depth) has.
//! 2. Library crates (`crates/*/src`, the Python modules' `src`; binaries' `main.rs` and `src/bin/` excepted)
//!    hold no CLI flag text: no string literal contains `--x` (a letter after two dashes). Libraries return
//!    data; the binary knows its options. Exceptions are listed in [`FLAG_TEXT_ALLOWED`] with their reason.
//! 3. Result files are written only through `tool-io`: outside `crates/tool-io/src`, no source file under
//!    `crates/` or `bins/` calls `fs::rename`, `fs::write`, `File::create`, `OpenOptions`, or tempfile's
//!    `persist`. Tests, `xtask/` and `fuzz/` are not checked (they write scratch files and generated
//!    data). Exceptions are listed in [`WRITES_ALLOWED`] with their reason.
//!
//! 4. Every dependency a workspace crate declares (`[dependencies]`, `[dev-dependencies]`,
//!    `[build-dependencies]`) is used: its crate name (`-` → `_`) appears as a path (`name::`), a `use`,
//!    an `extern crate` or a macro call (`name!`) in one of the crate's `.rs` files. The same check
//!    `cargo-machete` makes, without installing it. A Python module's `[target.'cfg(all())'.…]` tables
//!    are not checked: they name crates for their features (xtask/tests/feature_unification.rs).
//! 5. The crates keep their layers ([`LAYERS`]): no crate reaches, through its declared dependencies, a
//!    workspace crate ARCHITECTURE.md's layering rule keeps it from (the trace crate no model, the model
//!    table no trace, the roofline not the KL1 spec).
//! 6. No library source file (`crates/*/src`, `python/src`, any depth) is over [`MAX_LIBRARY_LINES`] lines:
//!    past that a file holds more than one job, and is split by job. Files over it today are
//!    [`PENDING_LONG_FILES`], each named with the branch that splits it.
//! 7. One column list per table: the tables `kineto` prints and exports are column lists in
//!    `crates/kineto-tables/src` only — no other source file builds a column (`Col {` or `col!(`) — and
//!    each list is the one `Table::columns` names for its table, once.
//!
//! 8. Functions of one job: no non-test function (`crates/`, `bins/`, `python/`, `xtask/src`, examples and
//!    build scripts included) is over [`MAX_FUNCTION_LINES`] lines, counted from its `fn` line to its
//!    closing brace. Test code is not checked: files under `tests/` and `benches/`, `*_tests.rs` files, and
//!    items under `#[cfg(test)]` (the `mod tests` blocks). Longer ones today are [`PENDING_LONG_FUNCTIONS`].
//!
//! Comments and everything after a file's first `#[cfg(test)]` are not checked by 2 and 3.
//!
//! Each check has two lists: exceptions that stay (with the reason), and `PENDING_*` gaps that exist today
//! and are to be fixed by the file's owner. A pending entry that no longer fails is itself an error, so the
//! pending lists only shrink.

use std::fs;
use std::path::{Path, PathBuf};

/// (file, flag or `*` for every flag, why) — library text that names options of *other* programs.
const FLAG_TEXT_ALLOWED: &[(&str, &str, &str)] = &[
    (
        "crates/gpu-monitor/src/backend/smi.rs",
        "*",
        "arguments of the nvidia-smi child process",
    ),
    (
        "crates/provenance/src/git.rs",
        "*",
        "arguments of the git child process",
    ),
    (
        "crates/provenance/src/git_tree.rs",
        "*",
        "arguments of the git child process",
    ),
    (
        "crates/provenance/src/environment.rs",
        "*",
        "arguments of the systemd-detect-virt child process",
    ),
    (
        "crates/provenance/src/verdict.rs",
        "--release",
        "cargo's option, naming how a measured program was built",
    ),
    (
        "crates/kineto-sqlite/src/nsys.rs",
        "--cuda-graph-trace",
        "nsys's own option, naming how to capture every kernel of a graph replay",
    ),
];

/// (file, flag, what to do) — this tool's own options named in a library today; to be fixed by the owner.
const PENDING_FLAG_TEXT: &[(&str, &str, &str)] = &[(
    "crates/kineto-trace/src/error.rs",
    "--salvage",
    "the kineto binary adds the advice to a Truncated error",
)];

/// (file, why) — files that may write files without tool-io.
const WRITES_ALLOWED: &[(&str, &str)] = &[
    (
        "crates/provenance/src/git_tree.rs",
        "git objects and an index copy in a private temporary directory, never a result file",
    ),
    (
        "crates/kineto-trace/src/stored/whole.rs",
        "an SQLite trace's copy (with its log or journal) in a private temporary directory, never a result file",
    ),
];

/// (file, pattern, what to do) — writes outside tool-io today; to be fixed by the owner.
const PENDING_WRITES: &[(&str, &str, &str)] = &[];

/// The most lines a library source file may have.
const MAX_LIBRARY_LINES: usize = 800;

/// (file, who splits it) — library files over [`MAX_LIBRARY_LINES`] today; each is split by job by its
/// owner and comes off this list (none is pending now).
const PENDING_LONG_FILES: &[(&str, &str)] = &[];

/// The most lines a non-test function may have, from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 150;

/// (file, function, who splits it) — functions over [`MAX_FUNCTION_LINES`] today; each is split into the
/// steps it performs by its owner and comes off this list.
const PENDING_LONG_FUNCTIONS: &[(&str, &str, &str)] = &[];

/// Where the tables' column lists live, and the file that names each table's list.
const TABLES_SRC: &str = "crates/kineto-tables/src";
const TABLES_REGISTRY: &str = "crates/kineto-tables/src/table.rs";

/// The longest ARCHITECTURE.md may be: a map, not a catalogue of files.
const MAX_ARCHITECTURE_LINES: usize = 300;

/// Fails on what `found` has beyond `pending`, and on `pending` entries no longer found (fixed: remove them).
fn check_with_pending(what: &str, found: &[String], pending: &[String]) {
    let new: Vec<&String> = found.iter().filter(|f| !pending.contains(f)).collect();
    let fixed: Vec<&String> = pending.iter().filter(|p| !found.contains(p)).collect();
    assert!(
        new.is_empty() && fixed.is_empty(),
        "{what}:\n  {}{}",
        new.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
        if fixed.is_empty() {
            String::new()
        } else {
            format!(
                "\nfixed, so remove from the PENDING list in xtask/tests/tidy.rs:\n  {}",
                fixed
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n  ")
            )
        }
    );
}

/// The `--flag` tokens in a string (see [`has_flag_text`]).
fn flags(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut v = Vec::new();
    for i in 0..b.len().saturating_sub(2) {
        if b[i] == b'-'
            && b[i + 1] == b'-'
            && b[i + 2].is_ascii_lowercase()
            && (i == 0 || !(b[i - 1] == b'-' || b[i - 1].is_ascii_alphanumeric()))
        {
            let end = (i + 2..b.len())
                .find(|&j| !(b[j].is_ascii_lowercase() || b[j].is_ascii_digit() || b[j] == b'-'))
                .unwrap_or(b.len());
            v.push(s[i..end].to_string());
        }
    }
    v
}

fn root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map_or(here.clone(), Path::to_path_buf)
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The `src` directories of every crate: (crate directory relative to the root, is a library crate dir).
fn src_dirs(root: &Path) -> Vec<(PathBuf, bool)> {
    let mut v = Vec::new();
    for (group, library) in [("crates", true), ("bins", false)] {
        let Ok(entries) = fs::read_dir(root.join(group)) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for d in dirs {
            if d.join("src").is_dir() {
                v.push((d.join("src"), library));
            }
        }
    }
    // The Python modules' native halves are library crates too.
    v.push((root.join("python/src"), true));
    v.push((root.join("python/provenance/src"), true));
    v.push((root.join("xtask/src"), false));
    v
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

/// The code of a Rust file with comments blanked and everything from the first `#[cfg(test)]` dropped, as
/// (code, string literals with their line numbers).
fn code_and_strings(text: &str) -> (String, Vec<(usize, String)>) {
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    blank_comments_and_strings(text)
}

/// `text` with comments dropped and string and char literals blanked (`""`, `' '`), newlines kept so lines
/// keep their numbers, as (code, string literals with their line numbers).
fn blank_comments_and_strings(text: &str) -> (String, Vec<(usize, String)>) {
    let b = text.as_bytes();
    let mut code = String::with_capacity(text.len());
    let mut strings = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            code.push('\n');
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    line += 1;
                    code.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // Raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                code.push('r');
                i += 1;
                continue;
            }
            let start = j + 1;
            let mut k = start;
            let start_line = line;
            loop {
                if k >= b.len() {
                    break;
                }
                if b[k] == b'"'
                    && b[k + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == b'#')
                        .count()
                        == hashes
                {
                    break;
                }
                if b[k] == b'\n' {
                    line += 1;
                }
                k += 1;
            }
            let literal = &text[start..k.min(b.len())];
            strings.push((start_line, literal.to_string()));
            push_blank_literal(&mut code, literal);
            i = k + 1 + hashes;
        } else if c == b'"' {
            let start_line = line;
            let mut k = i + 1;
            while k < b.len() && b[k] != b'"' {
                if b[k] == b'\\' {
                    k += 1;
                }
                if k < b.len() && b[k] == b'\n' {
                    line += 1;
                }
                k += 1;
            }
            let literal = &text[i + 1..k.min(b.len())];
            strings.push((start_line, literal.to_string()));
            push_blank_literal(&mut code, literal);
            i = k + 1;
        } else if c == b'\'' && (b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\')) {
            // A char literal ('"', '\''), not a lifetime.
            let mut k = i + 1;
            if b.get(k) == Some(&b'\\') {
                k += 1;
            }
            k += 1;
            while k < b.len() && b[k] != b'\'' {
                k += 1;
            }
            code.push_str("' '");
            i = k + 1;
        } else {
            // Copy one whole UTF-8 character.
            let ch = text[i..].chars().next().unwrap_or(' ');
            code.push(ch);
            i += ch.len_utf8();
        }
    }
    (code, strings)
}

/// A string literal blanked: `""` with the literal's newlines between the quotes, so the code's lines keep
/// their numbers.
fn push_blank_literal(code: &mut String, literal: &str) {
    code.push('"');
    code.extend(literal.chars().filter(|&c| c == '\n'));
    code.push('"');
}

/// Whether `s` holds CLI flag text: two dashes, then a lowercase letter, not preceded by a third dash or a
/// letter (so `---` rules and `a--b` are not flags).
fn has_flag_text(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(2)).any(|i| {
        b[i] == b'-'
            && b[i + 1] == b'-'
            && b[i + 2].is_ascii_lowercase()
            && (i == 0 || !(b[i - 1] == b'-' || b[i - 1].is_ascii_alphanumeric()))
    })
}

#[test]
fn architecture_md_is_a_short_map_of_every_crate_and_module_folder() {
    let root = root();
    let arch = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let lines = arch.lines().count();
    assert!(
        lines <= MAX_ARCHITECTURE_LINES,
        "ARCHITECTURE.md has {lines} lines, over {MAX_ARCHITECTURE_LINES}: per-file detail belongs in the files' `//!` comments"
    );
    let mut missing = Vec::new();
    for (src, _) in src_dirs(&root) {
        let krate = src.parent().unwrap_or(&src);
        let name = format!(
            "{}/",
            krate.file_name().unwrap_or_default().to_string_lossy()
        );
        if !arch.contains(&name) && krate != root.join("xtask") && krate != root.join("python") {
            missing.push(format!("crate {}", rel(&root, krate)));
        }
        for folder in module_folders(&src) {
            let f = format!(
                "{}/",
                folder.file_name().unwrap_or_default().to_string_lossy()
            );
            if !arch.contains(&f) {
                missing.push(format!("module folder {}", rel(&root, &folder)));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's map does not name:\n  {}",
        missing.join("\n  ")
    );
}

/// The directories under `src` (any depth), sorted.
fn module_folders(src: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![src.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                out.push(p.clone());
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_source_file_says_what_it_is() {
    let root = root();
    let mut silent = Vec::new();
    for (src, _) in src_dirs(&root) {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let text = fs::read_to_string(&f).unwrap_or_default();
            if !text.trim_start().starts_with("//!") {
                silent.push(rel(&root, &f));
            }
        }
    }
    assert!(
        silent.is_empty(),
        "source files without an opening `//!` comment saying what they are:\n  {}",
        silent.join("\n  ")
    );
}

/// Every `.rs` file of the library crates' `src` directories (`crates/*/src`, `python/src`), sorted.
fn library_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for (src, library) in src_dirs(root) {
        if library {
            rust_files(&src, &mut files);
        }
    }
    files
}

#[test]
fn library_files_hold_one_job() {
    let root = root();
    let long: Vec<String> = library_files(&root)
        .into_iter()
        .filter(|f| fs::read_to_string(f).map_or(0, |t| t.lines().count()) > MAX_LIBRARY_LINES)
        .map(|f| rel(&root, &f))
        .collect();
    let pending: Vec<String> = PENDING_LONG_FILES
        .iter()
        .map(|(f, _)| f.to_string())
        .collect();
    check_with_pending(
        &format!(
            "library files over {MAX_LIBRARY_LINES} lines (split them by job, as ARCHITECTURE.md's code map lists them)"
        ),
        &long,
        &pending,
    );
}

/// Every non-test `.rs` file of the workspace's crates (`crates/`, `bins/`, `python/`, `xtask/`, any depth),
/// sorted: files under `tests/`, `benches/` and `target/` and `*_tests.rs` files are test code or output.
fn non_test_rust_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for top in ["crates", "bins", "python", "xtask"] {
        rust_files(&root.join(top), &mut files);
    }
    files.retain(|f| {
        let r = rel(root, f);
        !r.ends_with("_tests.rs")
            && !r
                .split('/')
                .any(|part| ["tests", "benches", "target"].contains(&part))
    });
    files
}

/// The byte just past the item that starts at `from` in blanked code: its `;`, or the brace closing its
/// first `{` (brackets and parentheses before it, as in `[u8; 4]`, are passed over).
fn item_end(code: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i < code.len() {
        match code[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => return i + 1,
            b'{' if depth == 0 => return block_end(code, i),
            _ => {}
        }
        i += 1;
    }
    code.len()
}

/// The byte just past the `}` that closes the `{` at `open`.
fn block_end(code: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, &c) in code.iter().enumerate().skip(open) {
        if c == b'{' {
            depth += 1;
        } else if c == b'}' {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    code.len()
}

/// (name, lines from the `fn` line to the closing brace) of every function with a body in a Rust file,
/// items under `#[cfg(test)]` left out.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let (code, _) = blank_comments_and_strings(text);
    let b = code.as_bytes();
    let line_of = |i: usize| b[..i].iter().filter(|&&c| c == b'\n').count() + 1;
    let test_items: Vec<(usize, usize)> = code
        .match_indices("#[cfg(test)]")
        .map(|(i, a)| (i, item_end(b, i + a.len())))
        .collect();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn") {
        let word_starts = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let after = &code[at + 2..];
        let name: String = after
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // `fn(u8)` is a pointer type, `fnx` another word; a function is `fn` space name.
        let is_function = word_starts
            && after.starts_with(char::is_whitespace)
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        if !is_function || test_items.iter().any(|&(s, e)| at > s && at < e) {
            continue;
        }
        let end = item_end(b, at);
        if b[end - 1] == b'}' {
            out.push((name, line_of(end - 1) - line_of(at) + 1));
        }
    }
    out
}

#[test]
fn functions_hold_one_job() {
    let root = root();
    let mut long = Vec::new();
    let mut lengths = Vec::new();
    for f in non_test_rust_files(&root) {
        let r = rel(&root, &f);
        let text = fs::read_to_string(&f).expect("read");
        for (name, lines) in function_lengths(&text) {
            if lines > MAX_FUNCTION_LINES && !long.contains(&format!("{r}: {name}")) {
                long.push(format!("{r}: {name}"));
                lengths.push(format!("{r}: {name} ({lines} lines)"));
            }
        }
    }
    let pending: Vec<String> = PENDING_LONG_FUNCTIONS
        .iter()
        .map(|(f, name, _)| format!("{f}: {name}"))
        .collect();
    check_with_pending(
        &format!(
            "functions over {MAX_FUNCTION_LINES} lines (split each into the steps it performs); all long ones now:\n  {}\nnot on the PENDING list",
            lengths.join("\n  ")
        ),
        &long,
        &pending,
    );
}

#[test]
fn the_function_scan_counts_bodies_not_tests() {
    let text = "fn short() -> [u8; 2] {\n    [1, 2]\n}\n\
        pub(crate) fn three<T: Fn(u8)>(t: T)\nwhere\n    T: Copy,\n{\n    let s = \"}}\"; // }\n    t('}' as u8);\n}\n\
        fn multi_line_string() {\n    let s = r#\"a\n{\n\"#;\n    let t = \"b\n}\";\n}\n\
        trait A {\n    fn declared(&self);\n    fn with_default(&self) {}\n}\n\
        fn outer() {\n    let f: fn(u8) = |_| {};\n    fn inner() {\n    }\n}\n\
        #[cfg(test)]\nmod tests {\n    fn in_tests() {\n    }\n}\n\
        #[cfg(test)]\nfn test_helper() {\n}\n";
    let lengths = function_lengths(text);
    let expected: Vec<(String, usize)> = [
        ("short", 3),
        ("three", 7),
        ("multi_line_string", 7),
        ("with_default", 1),
        ("outer", 5),
        ("inner", 2),
    ]
    .iter()
    .map(|&(n, l)| (n.to_string(), l))
    .collect();
    assert_eq!(lengths, expected);
    let root = root();
    let files: Vec<String> = non_test_rust_files(&root)
        .iter()
        .map(|f| rel(&root, f))
        .collect();
    assert!(files.contains(&"xtask/src/main.rs".to_string()));
    assert!(files.iter().any(|f| f.contains("/examples/")));
    assert!(!files.iter().any(|f| f.starts_with("xtask/tests/")));
    assert!(!files.contains(&"crates/kineto-trace/src/scan_tests.rs".to_string()));
}

#[test]
fn library_crates_hold_no_cli_flag_text() {
    let root = root();
    let mut found = Vec::new();
    for (src, library) in src_dirs(&root) {
        if !library {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let r = rel(&root, &f);
            if r.ends_with("src/main.rs") || r.contains("/src/bin/") {
                continue;
            }
            let text = fs::read_to_string(&f).expect("read");
            let (_, strings) = code_and_strings(&text);
            for (line, s) in strings {
                for flag in flags(&s) {
                    let allowed = FLAG_TEXT_ALLOWED
                        .iter()
                        .any(|(p, fl, _)| *p == r && (*fl == "*" || *fl == flag));
                    if !allowed {
                        found.push((format!("{r}: {flag}"), format!("{r}:{line}: {s:?}")));
                    }
                }
            }
        }
    }
    let mut keys: Vec<String> = found.iter().map(|(k, _)| k.clone()).collect();
    keys.dedup();
    let pending: Vec<String> = PENDING_FLAG_TEXT
        .iter()
        .map(|(p, fl, _)| format!("{p}: {fl}"))
        .collect();
    check_with_pending(
        "CLI flag text in library crates (return data; let the binary name its options)",
        &keys,
        &pending,
    );
}

#[test]
fn result_files_are_written_only_through_tool_io() {
    let root = root();
    let patterns = [
        "fs::rename",
        "fs::write",
        "File::create",
        "OpenOptions",
        ".persist(",
        ".persist_noclobber(",
    ];
    let mut found = Vec::new();
    for (src, _) in src_dirs(&root) {
        let r = rel(&root, &src);
        if r.starts_with("xtask") || r == "crates/tool-io/src" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let r = rel(&root, &f);
            if WRITES_ALLOWED.iter().any(|(p, _)| *p == r) {
                continue;
            }
            let text = fs::read_to_string(&f).expect("read");
            let (code, _) = code_and_strings(&text);
            for l in code.lines() {
                for p in patterns.iter().filter(|p| l.contains(*p)) {
                    found.push(format!("{r}: {p}"));
                }
            }
        }
    }
    found.dedup();
    let pending: Vec<String> = PENDING_WRITES
        .iter()
        .map(|(p, pat, _)| format!("{p}: {pat}"))
        .collect();
    check_with_pending(
        "files written without tool-io (use tool_io::Claim; docs/result-files.md)",
        &found,
        &pending,
    );
}

#[test]
fn one_column_list_per_table() {
    let root = root();
    let mut outside = Vec::new();
    let mut lists: Vec<String> = Vec::new();
    for (src, _) in src_dirs(&root) {
        let in_tables = rel(&root, &src) == TABLES_SRC;
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let text = fs::read_to_string(&f).expect("read");
            let (code, _) = code_and_strings(&text);
            if in_tables {
                lists.extend(column_lists(&code));
            } else if code.contains("Col {") || code.contains("col!(") {
                outside.push(rel(&root, &f));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "column lists outside {TABLES_SRC} (a table's columns are one list there; docs/tables.md):\n  {}",
        outside.join("\n  ")
    );
    let registry = fs::read_to_string(root.join(TABLES_REGISTRY)).expect("table.rs");
    let (code, _) = code_and_strings(&registry);
    lists.sort();
    for l in &lists {
        let named = code.matches(&format!("crate::{l}()")).count();
        assert_eq!(
            named, 1,
            "{l}: Table::columns in {TABLES_REGISTRY} names it {named} times (once: one list per table)"
        );
    }
    let named = code.matches("_columns()").count();
    assert_eq!(
        named,
        lists.len(),
        "{TABLES_REGISTRY} names {named} column lists, {TABLES_SRC} defines {lists:?}"
    );
}

/// The column lists a file defines: `fn NAME<…>() -> &… [Col<…>]`.
fn column_lists(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in code.lines() {
        let t = l.trim_start();
        let Some(rest) = t.strip_prefix("pub fn ").or_else(|| t.strip_prefix("fn ")) else {
            continue;
        };
        if l.split_once("->")
            .is_some_and(|(_, ret)| ret.contains("[Col<"))
        {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

#[test]
fn the_scanner_sees_strings_not_comments() {
    let (code, strings) = code_and_strings(
        "let a = \"--out\"; // \"--comment\"\nlet b = r#\"x \"--raw\"\"#; let c = '\"'; let d: &'a str = \"e\";\n#[cfg(test)]\nlet t = \"--test\";",
    );
    let s: Vec<&str> = strings.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(s, ["--out", "x \"--raw\"", "e"]);
    assert!(!code.contains("comment") && !code.contains("--test"));
    assert_eq!(strings[1].0, 2);
    assert!(has_flag_text("pass --overwrite to"));
    assert!(has_flag_text("--x"));
    assert!(!has_flag_text("a --- b"));
    assert!(!has_flag_text("x--y"));
    assert!(!has_flag_text("--5"));
    assert_eq!(flags("a --json, --csv-x b"), ["--json", "--csv-x"]);
}

/// The tables (`…dependencies`, `…build-dependencies`) where a Python module names crates only to build
/// them with the workspace's features.
const UNIFICATION_TABLE: &str = "target.'cfg(all())'.";

/// The dependency names declared in a Cargo.toml's dependency tables.
fn declared_dependencies(toml: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            let table = t.trim_matches(|c| c == '[' || c == ']');
            // A module's feature-unification table names crates for their features, not their code
            // (xtask/tests/feature_unification.rs checks it instead).
            in_deps = !table.starts_with(UNIFICATION_TABLE)
                && (table == "dependencies"
                    || table == "dev-dependencies"
                    || table == "build-dependencies"
                    || table.ends_with(".dependencies")
                    || table.ends_with(".dev-dependencies"));
            continue;
        }
        if !in_deps || t.is_empty() || t.starts_with('#') {
            continue;
        }
        let key: String = t
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if !key.is_empty() {
            deps.push(key);
        }
    }
    deps
}

/// Whether Rust code uses crate `name` (already with `_`).
fn uses_crate(code: &str, name: &str) -> bool {
    let b = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find(name) {
        let i = from + at;
        let end = i + name.len();
        let before_ok =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
        let rest = &code[end..];
        let word_ends = rest
            .bytes()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == b'_'));
        if before_ok && word_ends {
            let head = code[..i].trim_end();
            if rest.starts_with("::")
                || rest.starts_with('!')
                || head.ends_with("use")
                || head.ends_with("extern crate")
            {
                return true;
            }
        }
        from = end;
    }
    false
}

#[test]
fn every_declared_dependency_is_used() {
    let root = root();
    let mut crate_dirs: Vec<PathBuf> = Vec::new();
    for group in ["crates", "bins"] {
        if let Ok(entries) = fs::read_dir(root.join(group)) {
            crate_dirs.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
        }
    }
    crate_dirs.push(root.join("python"));
    crate_dirs.push(root.join("python/provenance"));
    crate_dirs.push(root.join("xtask"));
    crate_dirs.sort();
    let mut unused = Vec::new();
    for dir in crate_dirs {
        let Ok(toml) = fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        // A crate nested in another's directory (python/provenance in python/) is checked on its own: its
        // code does not count as the outer crate's use of a dependency.
        files.retain(|f| owning_crate(&dir, f) == dir);
        let code: String = files
            .iter()
            .filter_map(|f| fs::read_to_string(f).ok())
            .map(|t| code_and_strings_all(&t))
            .collect::<Vec<_>>()
            .join("\n");
        for dep in declared_dependencies(&toml) {
            if !uses_crate(&code, &dep.replace('-', "_")) {
                unused.push(format!("{}: {dep}", rel(&root, &dir)));
            }
        }
    }
    assert!(
        unused.is_empty(),
        "declared dependencies no source file uses (remove them from Cargo.toml):\n  {}",
        unused.join("\n  ")
    );
}

/// (crate, workspace crates it must not reach, why) — the layering ARCHITECTURE.md states. A crate reaches
/// what it declares (any dependency table) and, through those, their `[dependencies]`.
const LAYERS: &[(&str, &[&str], &str)] = &[
    (
        "kineto-trace",
        &[
            "model-shapes",
            "kl1-shapes",
            "gpu-monitor",
            "provenance",
            "kineto-sqlite",
            "kineto-xplane",
        ],
        "the trace crate knows no model, no GPU sampling, no provenance; its heavy readers (SQLite, \
         protobuf) plug into its seam, never the other way round",
    ),
    (
        "model-shapes",
        &["kineto-trace", "kl1-shapes", "gpu-monitor", "provenance"],
        "the general model table knows no trace and no one deployment",
    ),
    (
        "kl1-shapes",
        &["kineto-trace", "gpu-monitor", "provenance"],
        "the KL1 spec knows no trace",
    ),
    (
        "roofline",
        &["kl1-shapes"],
        "the roofline serves every model through the general table",
    ),
    (
        "gpu-monitor",
        &["provenance"],
        "provenance uses gpu-monitor, never the reverse",
    ),
    (
        "kineto-doctor",
        &[
            "kl1-shapes",
            "html-report",
            "kineto-tables",
            "gpu-monitor",
            "provenance",
        ],
        "the doctor's rules compose the analyses; they render nothing (the tables and pages sit above)",
    ),
    ("step-stats", &["*"], "depends on no workspace crate"),
    (
        "child-run",
        &["*"],
        "the tools' child processes sit below the monitor and provenance",
    ),
    ("tool-io", &["*"], "sits below every crate"),
];

/// The `[package] name` of a Cargo.toml.
fn package_name(toml: &str) -> Option<String> {
    let mut in_package = false;
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_package = t == "[package]";
        } else if in_package && let Some(v) = t.strip_prefix("name") {
            return Some(
                v.trim_start()
                    .trim_start_matches('=')
                    .trim()
                    .trim_matches('"')
                    .to_string(),
            );
        }
    }
    None
}

/// The dependency names of a Cargo.toml's `[dependencies]` table alone.
fn normal_dependencies(toml: &str) -> Vec<String> {
    let kept: String = {
        let mut out = String::new();
        let mut keep = false;
        for line in toml.lines() {
            let t = line.trim();
            if t.starts_with('[') {
                keep = t == "[dependencies]";
            }
            if keep {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    };
    declared_dependencies(&kept)
}

#[test]
fn crates_keep_their_layers() {
    let root = root();
    // package name → (declared anywhere, declared in [dependencies]), workspace crates only.
    let mut crates: std::collections::BTreeMap<String, (Vec<String>, Vec<String>)> =
        std::collections::BTreeMap::new();
    for group in ["crates", "bins"] {
        let Ok(entries) = fs::read_dir(root.join(group)) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let Ok(toml) = fs::read_to_string(e.path().join("Cargo.toml")) else {
                continue;
            };
            if let Some(name) = package_name(&toml) {
                crates.insert(
                    name,
                    (declared_dependencies(&toml), normal_dependencies(&toml)),
                );
            }
        }
    }
    let workspace: Vec<String> = crates.keys().cloned().collect();
    let mut broken = Vec::new();
    for (name, forbidden, why) in LAYERS {
        let Some((direct, _)) = crates.get(*name) else {
            broken.push(format!("{name}: not a workspace crate (update LAYERS)"));
            continue;
        };
        let mut reached: Vec<String> = Vec::new();
        let mut todo: Vec<String> = direct
            .iter()
            .filter(|d| workspace.contains(d))
            .cloned()
            .collect();
        while let Some(d) = todo.pop() {
            if reached.contains(&d) {
                continue;
            }
            if let Some((_, normal)) = crates.get(&d) {
                todo.extend(normal.iter().filter(|n| workspace.contains(n)).cloned());
            }
            reached.push(d);
        }
        for r in &reached {
            if forbidden.contains(&"*") || forbidden.contains(&r.as_str()) {
                broken.push(format!("{name} reaches {r}: {why}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "layering broken:\n  {}",
        broken.join("\n  ")
    );
}

/// The directory of the crate `file` belongs to: the nearest directory from `file` up to `top` holding a
/// Cargo.toml.
fn owning_crate(top: &Path, file: &Path) -> PathBuf {
    let mut d = file.parent();
    while let Some(dir) = d {
        if dir == top || dir.join("Cargo.toml").is_file() {
            return dir.to_path_buf();
        }
        d = dir.parent();
    }
    top.to_path_buf()
}

/// The code of a whole file (tests included) with comments and strings blanked.
fn code_and_strings_all(text: &str) -> String {
    // Unlike `code_and_strings`, tests are kept: a dependency used only in tests counts.
    blank_comments_and_strings(text).0
}

#[test]
fn the_dependency_scan_reads_cargo_toml_and_paths() {
    let toml = "[package]\nname = \"x\"\n[dependencies]\nkl1-shapes.workspace = true\nserde = { version = \"1\" }\n# c\n[dev-dependencies]\ntempfile = \"3\"\n[lints]\nworkspace = true\n";
    assert_eq!(
        declared_dependencies(toml),
        ["kl1-shapes", "serde", "tempfile"]
    );
    let unify = "[dependencies]\npyo3 = \"0.30\"\n[target.'cfg(all())'.dependencies]\ngetrandom = \"0.4\"\n[target.'cfg(all())'.build-dependencies]\nsyn = \"2\"\n[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n";
    assert_eq!(declared_dependencies(unify), ["pyo3", "libc"]);
    assert!(uses_crate(
        "let s = kl1_shapes::Spec::builtin();",
        "kl1_shapes"
    ));
    assert!(uses_crate("use serde;", "serde"));
    assert!(uses_crate("#[derive(serde::Serialize)]", "serde"));
    assert!(!uses_crate("let serde_json = 1;", "serde"));
    assert!(!uses_crate("my_tempfile::x()", "tempfile"));
    assert!(!uses_crate("a::tempfile::x()", "tempfile"));
}
