//! The work tree against HEAD, compared so that git never reads a work-tree file's content.
//!
//! `git status` and `git diff` run the programs a repository configures: a clean filter (`filter.<name>.clean`
//! or `.process`, Git LFS) on every work-tree file they hash, `core.fsmonitor`, `git status` inside each
//! submodule under the submodule's own configuration. Neutralising them by name cannot be complete (a driver
//! named `x=y` is read by `-c` as another key), so nothing here asks git to read a work-tree file at all:
//!
//! - **what changed in the index** is `git diff-index --cached` (HEAD against the index: objects only);
//! - **which work-tree files may differ from the index** is `git diff-files` on a private copy of the index
//!   whose timestamp is the epoch: git then compares stat data only (an entry is "racily clean", and so
//!   hashed through its filter, only when the index's own timestamp is not zero), and with
//!   `--ignore-submodules=dirty` it runs no git inside a submodule; the racy-clean check that the zero
//!   timestamp turns off is made here instead (`racily_clean`: files written at or after the index);
//! - **whether such a file really differs** is decided here: its bytes as stored (no filter, no end-of-line
//!   conversion) hashed as a git blob and compared with the index's;
//! - **the diff** is `git diff-tree -p` between HEAD's tree and a tree built here from the index and the
//!   work tree's bytes, written as loose objects into a temporary object directory (the repository's is an
//!   alternate): objects only again, and nothing written into the repository.
//!
//! For a file with no conversion, the diff is byte for byte what `git diff HEAD` prints. A file that a filter
//! or an end-of-line rule converts is compared and diffed as stored in the work tree: converting it is the
//! very program this module does not run.

use sha2::Digest;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::git::{DIFF_PINS, git_in};

/// Tracked changes against HEAD, as the record reports them.
pub(crate) struct Changes {
    /// Tracked paths that differ from HEAD, in the index or in the work tree, sorted.
    pub modified: Vec<String>,
    /// Untracked entries (files, or directories holding no tracked file).
    pub untracked: usize,
    /// The patch of HEAD against the work tree's tracked content.
    pub patch: Vec<u8>,
}

/// The object format of the repository.
#[derive(Clone, Copy)]
enum Format {
    Sha1,
    Sha256,
}

impl Format {
    fn hash(self, kind: &str, body: &[u8]) -> String {
        let header = format!("{kind} {}\0", body.len());
        match self {
            Format::Sha1 => {
                let mut h = sha1::Sha1::new();
                h.update(header.as_bytes());
                h.update(body);
                hex(&h.finalize())
            }
            Format::Sha256 => {
                let mut h = sha2::Sha256::new();
                h.update(header.as_bytes());
                h.update(body);
                hex(&h.finalize())
            }
        }
    }

    fn empty_tree(self) -> &'static str {
        match self {
            Format::Sha1 => "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            Format::Sha256 => "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
        }
    }
}

/// The object name of `header` followed by what `r` holds, and how many bytes `r` gave.
fn stream_hash<D: Digest>(mut h: D, header: &str, r: &mut impl Read) -> io::Result<(String, u64)> {
    h.update(header.as_bytes());
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = r.read(&mut buf)?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    Ok((hex(&h.finalize()), n))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A tree entry: its mode as git writes it in a tree (`100644`, `40000`, …) and its object name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    mode: String,
    oid: String,
}

impl Entry {
    fn new(mode: &str, oid: &str) -> Entry {
        let m = mode.trim_start_matches('0');
        Entry {
            mode: if m.is_empty() { "0".into() } else { m.into() },
            oid: oid.to_owned(),
        }
    }

    fn is_tree(&self) -> bool {
        self.mode == "40000"
    }
}

/// One record of `git diff-* -z` raw output.
struct Raw {
    src: Entry,
    dst: Entry,
    status: u8,
    path: Vec<u8>,
}

/// Parses `:srcmode dstmode srcoid dstoid STATUS\0path\0…` (no renames, so one path each).
fn parse_raw(out: &[u8]) -> Vec<Raw> {
    let mut v = Vec::new();
    let mut parts = out.split(|&b| b == 0);
    while let Some(meta) = parts.next() {
        let Some(meta) = meta.strip_prefix(b":") else {
            continue;
        };
        let Some(path) = parts.next() else { break };
        let meta = String::from_utf8_lossy(meta);
        let f: Vec<&str> = meta.split(' ').collect();
        if f.len() < 5 {
            continue;
        }
        v.push(Raw {
            src: Entry::new(f[0], f[2]),
            dst: Entry::new(f[1], f[3]),
            status: f[4].bytes().next().unwrap_or(b'?'),
            path: path.to_vec(),
        });
    }
    v
}

/// The index entries (`git ls-files -z -s`: `mode oid stage\tpath\0…`) that diff-files did not list
/// (`listed`) whose work-tree file was last modified at or after `written`, the index's own mtime: git's
/// rule for a racily clean entry (diff-files saw equal stat data, so the file's mtime is the entry's). Each
/// as a diff-files record with the index's mode on both sides (a mode change changes the stat data).
fn racily_clean(
    top: &Path,
    stage: &[u8],
    written: std::time::SystemTime,
    listed: &[Raw],
) -> Vec<Raw> {
    let listed: std::collections::BTreeSet<&[u8]> = listed.iter().map(|r| &r.path[..]).collect();
    let mut v = Vec::new();
    for rec in stage.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let Some(tab) = rec.iter().position(|&b| b == b'\t') else {
            continue;
        };
        let (meta, path) = (String::from_utf8_lossy(&rec[..tab]), &rec[tab + 1..]);
        let f: Vec<&str> = meta.split(' ').collect();
        if f.len() < 3 || f[2] != "0" || f[0] == "160000" || listed.contains(path) {
            continue;
        }
        let recent = fs::symlink_metadata(top.join(path_of(path)))
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= written);
        if recent {
            v.push(Raw {
                src: Entry::new(f[0], f[1]),
                dst: Entry::new(f[0], ""),
                status: b'M',
                path: path.to_vec(),
            });
        }
    }
    v
}

/// What a changed path holds in the work tree's version of the tree: an entry, or nothing (deleted).
type Overlay = BTreeMap<Vec<u8>, Option<Entry>>;

/// Runs git in the repository with extra environment; its stdout, or the reason it failed.
type Git<'a> = &'a dyn Fn(&[&str], &[(&str, OsString)]) -> Result<Vec<u8>, String>;

/// The overlay's changes below one directory, grouped by the name directly in it: (rest of path, change).
type Below<'a> = BTreeMap<Vec<u8>, Vec<(&'a [u8], &'a Option<Entry>)>>;

/// Where the objects made here go, and how git is run against them.
struct Scratch {
    dir: tempfile::TempDir,
    /// The repository's object directory (an alternate of the scratch one).
    objects: PathBuf,
    format: Format,
}

impl Scratch {
    fn index(&self) -> PathBuf {
        self.dir.path().join("index")
    }

    fn odb(&self) -> PathBuf {
        self.dir.path().join("objects")
    }

    /// The environment that points git at the private index and the scratch objects.
    fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("GIT_INDEX_FILE", self.index().into_os_string()),
            ("GIT_OBJECT_DIRECTORY", self.odb().into_os_string()),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                self.objects.clone().into_os_string(),
            ),
        ]
    }

    /// Writes a work-tree file's bytes as a blob, streamed (a model file may be gigabytes): hashed in one
    /// pass, compressed in a second; a file that changes size in between is reported, not half-written.
    fn write_file(&self, path: &Path) -> Result<String, String> {
        let fail = |e: io::Error| format!("{}: {e}", path.display());
        let mut f = fs::File::open(path).map_err(fail)?;
        let len = f.metadata().map_err(fail)?.len();
        let header = format!("blob {len}\0");
        let oid = match self.format {
            Format::Sha1 => stream_hash(sha1::Sha1::new(), &header, &mut f),
            Format::Sha256 => stream_hash(sha2::Sha256::new(), &header, &mut f),
        }
        .map_err(fail)?;
        let (oid, read) = oid;
        if read != len {
            return Err(format!("{}: changed while it was read", path.display()));
        }
        let dir = self.odb().join(&oid[..2]);
        let target = dir.join(&oid[2..]);
        if target.exists() {
            return Ok(oid);
        }
        fs::create_dir_all(&dir).map_err(fail)?;
        let part = dir.join(format!("{}.part", &oid[2..]));
        let out = fs::File::create(&part).map_err(fail)?;
        let mut z =
            flate2::write::ZlibEncoder::new(io::BufWriter::new(out), flate2::Compression::fast());
        let mut f = fs::File::open(path).map_err(fail)?;
        z.write_all(header.as_bytes()).map_err(fail)?;
        let copied = io::copy(&mut (&mut f).take(len), &mut z).map_err(fail)?;
        z.finish().and_then(|mut w| w.flush()).map_err(fail)?;
        if copied != len {
            return Err(format!("{}: changed while it was read", path.display()));
        }
        fs::rename(&part, &target).map_err(fail)?;
        Ok(oid)
    }

    /// Writes an object as a loose object of the scratch directory; returns its name.
    fn write(&self, kind: &str, body: &[u8]) -> Result<String, String> {
        let oid = self.format.hash(kind, body);
        let dir = self.odb().join(&oid[..2]);
        let path = dir.join(&oid[2..]);
        if path.exists() {
            return Ok(oid);
        }
        let fail = |e: io::Error| format!("writing a scratch object: {e}");
        fs::create_dir_all(&dir).map_err(fail)?;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(format!("{kind} {}\0", body.len()).as_bytes())
            .and_then(|()| z.write_all(body))
            .map_err(fail)?;
        let bytes = z.finish().map_err(fail)?;
        fs::write(&path, bytes).map_err(fail)?;
        Ok(oid)
    }
}

/// The changes of the repository containing `dir` (whose top level `git rev-parse` found) against HEAD.
pub(crate) fn changes(dir: &Path) -> Result<Changes, String> {
    let git = |args: &[&str], env: &[(&str, OsString)]| {
        git_in(dir, args, env)
            .map(|o| o.stdout)
            .map_err(|f| f.reason)
    };
    let run: Git<'_> = &git;
    let (scratch, index, top) = open_scratch(run)?;
    let env = scratch.env();
    let head = head_tree(run, &env, scratch.format);
    let (staged, unstaged) = listed_changes(run, &env, &head, &index, &top)?;
    let (modified, overlay) = overlay_of(&staged, &unstaged, &top, &scratch)?;
    let untracked = untracked_count(run, &env)?;
    let patch = patch_of(run, &env, &head, &overlay, &scratch)?;
    Ok(Changes {
        modified: modified
            .into_keys()
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .collect(),
        untracked,
        patch,
    })
}

/// The scratch object directory and the private index copy; also the repository's index path and top level.
fn open_scratch(run: Git<'_>) -> Result<(Scratch, PathBuf, PathBuf), String> {
    let format = match run(&["rev-parse", "--show-object-format"], &[]) {
        Ok(o) if String::from_utf8_lossy(&o).trim() == "sha256" => Format::Sha256,
        _ => Format::Sha1,
    };
    let paths = run(
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "index",
            "--git-path",
            "objects",
            "--show-toplevel",
        ],
        &[],
    )?;
    let paths = String::from_utf8_lossy(&paths).into_owned();
    let mut lines = paths.lines();
    let (Some(index), Some(objects), Some(top)) = (lines.next(), lines.next(), lines.next()) else {
        return Err("`git rev-parse --git-path` gave no paths".into());
    };
    let top = PathBuf::from(top);
    let scratch = Scratch {
        dir: tempfile::tempdir().map_err(|e| format!("a scratch directory: {e}"))?,
        objects: PathBuf::from(objects),
        format,
    };
    // Git takes a directory for a repository only if its object directory exists.
    fs::create_dir_all(scratch.odb()).map_err(|e| format!("a scratch directory: {e}"))?;
    // The private index: the same entries, a zero timestamp (so git never hashes a file to settle a racily
    // clean entry: that hash would go through the file's filter).
    match fs::copy(index, scratch.index()) {
        Ok(_) => {
            let f = fs::File::options()
                .write(true)
                .open(scratch.index())
                .map_err(|e| format!("the index copy: {e}"))?;
            f.set_times(fs::FileTimes::new().set_modified(std::time::UNIX_EPOCH))
                .map_err(|e| format!("the index copy's timestamp: {e}"))?;
        }
        // No index yet: git reads a missing one as empty.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("copying the index {index}: {e}")),
    }
    Ok((scratch, PathBuf::from(index), top))
}

/// HEAD's tree, or the empty tree in a repository without commits.
fn head_tree(run: Git<'_>, env: &[(&str, OsString)], format: Format) -> String {
    run(&["rev-parse", "--verify", "--quiet", "HEAD^{tree}"], env)
        .ok()
        .map(|o| String::from_utf8_lossy(&o).trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| format.empty_tree().to_owned())
}

/// What git lists as changed: staged (index against HEAD) and unstaged (work tree against the index, with the
/// racily clean entries git's own check would have looked at).
fn listed_changes(
    run: Git<'_>,
    env: &[(&str, OsString)],
    head: &str,
    index: &Path,
    top: &Path,
) -> Result<(Vec<Raw>, Vec<Raw>), String> {
    let staged = parse_raw(&run(
        &[
            "diff-index",
            "--cached",
            "-z",
            "--no-renames",
            "--ignore-submodules=dirty",
            "--no-ext-diff",
            head,
        ],
        env,
    )?);
    let unstaged = parse_raw(&run(
        &[
            "diff-files",
            "-z",
            "--no-renames",
            "--ignore-submodules=dirty",
            "--no-ext-diff",
        ],
        env,
    )?);

    // The private index's zero timestamp also turns off git's racy-clean check, so it is done here: an
    // entry whose file was written in the same clock tick as the index, or later, can differ with its stat
    // data unchanged (a file replaced by one of the same size, in the same inode, within one tick); such
    // entries are compared by their bytes like the ones diff-files lists.
    let racy = match fs::metadata(index).and_then(|m| m.modified()) {
        Ok(written) => racily_clean(
            top,
            &run(&["ls-files", "-z", "-s"], env)?,
            written,
            &unstaged,
        ),
        Err(_) => Vec::new(),
    };
    let unstaged: Vec<Raw> = unstaged.into_iter().chain(racy).collect();
    Ok((staged, unstaged))
}

/// The paths that differ from HEAD, and the tree overlay that turns HEAD's tree into the work tree's: staged
/// entries, then work-tree files whose bytes differ from the index's.
fn overlay_of(
    staged: &[Raw],
    unstaged: &[Raw],
    top: &Path,
    scratch: &Scratch,
) -> Result<(BTreeMap<Vec<u8>, ()>, Overlay), String> {
    let mut modified: BTreeMap<Vec<u8>, ()> = BTreeMap::new();
    let mut overlay: Overlay = BTreeMap::new();
    for r in staged {
        modified.insert(r.path.clone(), ());
        let gone = r.status == b'D' || r.dst.mode == "0";
        overlay.insert(r.path.clone(), (!gone).then(|| r.dst.clone()));
    }
    for r in unstaged {
        let Some(now) = work_tree_entry(top, r, scratch)? else {
            continue;
        };
        if now.as_ref() == Some(&r.src) {
            // Touched, not changed: the bytes are the index's.
            continue;
        }
        modified.insert(r.path.clone(), ());
        overlay.insert(r.path.clone(), now);
    }
    Ok((modified, overlay))
}

fn untracked_count(run: Git<'_>, env: &[(&str, OsString)]) -> Result<usize, String> {
    Ok(run(
        &[
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
            "--directory",
            "--no-empty-directory",
        ],
        env,
    )?
    .split(|&b| b == 0)
    .filter(|e| !e.is_empty())
    .count())
}

/// The patch of HEAD against the overlaid tree, with every option configuration could change pinned.
fn patch_of(
    run: Git<'_>,
    env: &[(&str, OsString)],
    head: &str,
    overlay: &Overlay,
    scratch: &Scratch,
) -> Result<Vec<u8>, String> {
    Ok(if overlay.is_empty() {
        Vec::new()
    } else {
        let tree = build(head, b"", overlay, scratch, run)?.unwrap_or_else(|| {
            // Everything deleted: the empty tree (git knows it without an object).
            scratch.format.empty_tree().to_owned()
        });
        let mut args = vec![
            // Every option that user or repository configuration could change is pinned, so that the same
            // change hashes the same on every machine.
            "-c",
            "core.quotePath=true",
            // Blank context lines as " " (the default), not as empty lines.
            "-c",
            "diff.suppressBlankEmpty=false",
            "diff-tree",
            "-r",
            "-p",
        ];
        args.extend(DIFF_PINS);
        args.push(head);
        args.push(&tree);
        run(&args, env)?
    })
}

/// The work tree's version of a path `git diff-files` listed: `Some(None)` when it is gone, `Some(entry)`
/// with its bytes written as a scratch object, `None` when it cannot be told (left as the index has it).
fn work_tree_entry(
    top: &Path,
    r: &Raw,
    scratch: &Scratch,
) -> Result<Option<Option<Entry>>, String> {
    let path = top.join(path_of(&r.path));
    if r.status == b'D' {
        return Ok(Some(None));
    }
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Some(None)),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    // The mode git gives the work-tree side (core.fileMode and core.symlinks applied); for an unmerged
    // entry (no mode there), the file's own.
    let mode = if r.dst.mode != "0" {
        r.dst.mode.clone()
    } else if meta.file_type().is_symlink() {
        "120000".into()
    } else if is_executable(&meta) {
        "100755".into()
    } else {
        "100644".into()
    };
    let oid = match mode.as_str() {
        "120000" => scratch.write("blob", &link_bytes(&path)?)?,
        "100644" | "100755" => scratch.write_file(&path)?,
        "160000" => {
            // A submodule whose checked-out commit moved: its HEAD, read by git in the submodule (rev-parse
            // runs no configured program).
            return Ok(
                git_in(&path, &["rev-parse", "--verify", "--quiet", "HEAD"], &[])
                    .ok()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                    .filter(|c| !c.is_empty())
                    .map(|c| Some(Entry::new("160000", &c))),
            );
        }
        _ => return Ok(None),
    };
    Ok(Some(Some(Entry { mode, oid })))
}

#[cfg(unix)]
fn path_of(raw: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(OsStr::from_bytes(raw))
}

#[cfg(not(unix))]
fn path_of(raw: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(raw).into_owned())
}

#[cfg(unix)]
fn link_bytes(path: &Path) -> Result<Vec<u8>, String> {
    use std::os::unix::ffi::OsStrExt;
    fs::read_link(path)
        .map(|t| t.as_os_str().as_bytes().to_vec())
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(not(unix))]
fn link_bytes(path: &Path) -> Result<Vec<u8>, String> {
    fs::read_link(path)
        .map(|t| t.to_string_lossy().into_owned().into_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(unix)]
fn is_executable(m: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &fs::Metadata) -> bool {
    false
}

/// The tree `tree` (at `prefix`) with the overlay's entries under `prefix` applied, written as a scratch
/// object; `None` when it ends up empty.
fn build(
    tree: &str,
    prefix: &[u8],
    overlay: &Overlay,
    scratch: &Scratch,
    run: Git<'_>,
) -> Result<Option<String>, String> {
    let mut entries: BTreeMap<Vec<u8>, Entry> = BTreeMap::new();
    if tree != scratch.format.empty_tree() {
        let out = run(&["ls-tree", "-z", "--full-tree", tree], &scratch.env())?;
        for rec in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let Some(tab) = rec.iter().position(|&b| b == b'\t') else {
                continue;
            };
            let meta = String::from_utf8_lossy(&rec[..tab]);
            let f: Vec<&str> = meta.split(' ').collect();
            if f.len() == 3 {
                entries.insert(rec[tab + 1..].to_vec(), Entry::new(f[0], f[2]));
            }
        }
    }
    // The overlay's paths under this prefix, by their first component.
    let mut here: Below<'_> = BTreeMap::new();
    for (path, e) in overlay.range(prefix.to_vec()..) {
        let Some(rest) = path.strip_prefix(prefix) else {
            break;
        };
        let (first, tail) = match rest.iter().position(|&b| b == b'/') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        here.entry(first.to_vec()).or_default().push((tail, e));
    }
    for (name, changes) in here {
        let direct = changes.iter().find(|(tail, _)| tail.is_empty());
        let deeper = changes.iter().any(|(tail, _)| !tail.is_empty());
        if deeper {
            // A directory: rebuilt from what it holds now (a file in its place is replaced by it).
            let sub = match entries.get(&name) {
                Some(e) if e.is_tree() => e.oid.clone(),
                _ => scratch.format.empty_tree().to_owned(),
            };
            let mut child_prefix = prefix.to_vec();
            child_prefix.extend_from_slice(&name);
            child_prefix.push(b'/');
            match build(&sub, &child_prefix, overlay, scratch, run)? {
                Some(oid) => {
                    entries.insert(name.clone(), Entry::new("40000", &oid));
                }
                None => {
                    entries.remove(&name);
                }
            }
        } else if let Some((_, e)) = direct {
            match e {
                Some(e) => entries.insert(name.clone(), e.clone()),
                None => entries.remove(&name),
            };
        }
    }
    if entries.is_empty() {
        return Ok(None);
    }
    // Git's order: by name, a tree's name compared as if it ended in `/`.
    let mut sorted: Vec<(Vec<u8>, Entry)> = entries.into_iter().collect();
    sorted.sort_by_cached_key(|(name, e)| {
        let mut k = name.clone();
        if e.is_tree() {
            k.push(b'/');
        }
        k
    });
    let mut body = Vec::new();
    for (name, e) in &sorted {
        body.extend_from_slice(e.mode.as_bytes());
        body.push(b' ');
        body.extend_from_slice(name);
        body.push(0);
        body.extend(unhex(&e.oid).ok_or_else(|| format!("object name `{}`", e.oid))?);
    }
    scratch.write("tree", &body).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_records_are_parsed_with_their_paths() {
        let out = b":100644 100644 aaaa 0000 M\0src/a b.rs\0:100644 000000 bbbb 0000 D\0gone\0";
        let v = parse_raw(out);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].path, b"src/a b.rs");
        assert_eq!(v[0].status, b'M');
        assert_eq!(v[1].dst.mode, "0");
        assert_eq!(v[1].status, b'D');
    }

    #[test]
    fn racily_clean_entries_are_the_stage_0_files_written_at_or_after_the_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        for f in ["a b.txt", "listed"] {
            fs::write(dir.path().join(f), "x\n").expect("write");
        }
        let stage = [
            "100644 aaaa 0\ta b.txt",
            "160000 bbbb 0\tsub",
            "100644 cccc 1\tconflict",
            "100644 dddd 0\tlisted",
            "100644 eeee 0\tgone",
        ]
        .map(|r| format!("{r}\0"))
        .concat();
        let stage = stage.as_bytes();
        let listed = parse_raw(b":100644 100644 dddd 0000 M\0listed\0");
        let now = std::time::SystemTime::now();
        // Index written before the files: the one stage-0 regular file diff-files did not list (a gitlink,
        // an unmerged entry, a listed and a missing file are not).
        let v = racily_clean(dir.path(), stage, std::time::UNIX_EPOCH, &listed);
        let paths: Vec<&[u8]> = v.iter().map(|r| &r.path[..]).collect();
        assert_eq!(paths, [&b"a b.txt"[..]]);
        assert_eq!(v[0].src, Entry::new("100644", "aaaa"));
        assert_eq!(v[0].dst.mode, "100644");
        // Index written after them: nothing is racy.
        let later = now + std::time::Duration::from_secs(3600);
        assert!(racily_clean(dir.path(), stage, later, &listed).is_empty());
    }

    #[test]
    fn object_names_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`, and the empty tree.
        assert_eq!(
            Format::Sha1.hash("blob", b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(Format::Sha1.hash("tree", b""), Format::Sha1.empty_tree());
        assert_eq!(
            Format::Sha256.hash("tree", b""),
            Format::Sha256.empty_tree()
        );
    }
}
