//! A window: a directory with `traces-manifest.json`, a JSON list of rows
//! `{"cell", "capture", "rank", "file", "sha256"}`, one per trace file (docs/kl1-window.md).
//!
//! Loading checks every row before any trace is read: the fields and their types, that `file` stays inside
//! the window (no absolute path, no `..`, and after resolving symlinks still under the window's own resolved
//! path), that the file exists, and that no (label, rank) appears twice. The sha256 of each file is checked
//! when it is read (the parser hashes the stored bytes as it reads them), so every file is read once; a file
//! that fails to parse is hashed on its own, so a changed file is reported as a sha256 mismatch.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::Error;
use crate::captures;

/// The manifest's file name inside a window.
pub const MANIFEST: &str = "traces-manifest.json";

/// One manifest row, as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct ManifestRow {
    /// The profiling cell, e.g. `prof-32k-b1`.
    pub cell: String,
    /// The capture within the cell, e.g. `decode`, `prefill-early`.
    pub capture: String,
    /// Tensor-parallel rank.
    pub rank: u64,
    /// Path of the trace, relative to the window.
    pub file: String,
    /// Lowercase hex sha256 of the file as stored.
    pub sha256: String,
}

impl ManifestRow {
    /// `cell:capture`.
    pub fn label(&self) -> String {
        format!("{}:{}", self.cell, self.capture)
    }
}

/// One trace of a window, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Index of its row in the manifest (0-based).
    pub row: usize,
    /// `cell:capture`.
    pub label: String,
    /// Rank.
    pub rank: u64,
    /// The file, resolved.
    pub path: PathBuf,
    /// The manifest's sha256, lowercase.
    pub sha256: String,
}

/// A window, checked.
#[derive(Debug, Clone)]
pub struct Window {
    /// The directory's name as given (not resolved through symlinks): the window's key in the output.
    pub name: String,
    /// The directory, resolved.
    pub root: PathBuf,
    /// Traces of known captures, in manifest order.
    pub entries: Vec<Entry>,
    /// Traces of captures the analysis does not know (skipped, but their sha256 is still checked).
    pub skipped: Vec<Entry>,
}

impl Window {
    /// The labels skipped, sorted, each once.
    pub fn skipped_labels(&self) -> Vec<String> {
        let mut v: Vec<String> = self.skipped.iter().map(|e| e.label.clone()).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// Reads and checks a window's manifest.
pub fn load(dir: &Path) -> Result<Window, Error> {
    let root = std::fs::canonicalize(dir).map_err(|error| Error::Io {
        path: dir.to_path_buf(),
        error,
    })?;
    let name = window_name(dir, &root);
    let bad = |reason: String| Error::Manifest {
        window: name.clone(),
        reason,
    };
    let mpath = root.join(MANIFEST);
    let text = tool_io::read_input_string(&mpath, "manifest", tool_io::caps::MANIFEST)?;
    let rows: Vec<serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| bad(format!("{MANIFEST} is not a JSON list of rows: {e}")))?;
    if rows.is_empty() {
        // An empty result with exit 0 would read as "analysed, nothing to report".
        return Err(bad(format!("{MANIFEST} lists no traces (`[]`)")));
    }
    let mut seen: BTreeMap<(String, u64), usize> = BTreeMap::new();
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    for (i, value) in rows.into_iter().enumerate() {
        let row: ManifestRow =
            serde_json::from_value(value).map_err(|e| bad(format!("{MANIFEST} row {i}: {e}")))?;
        let label = row.label();
        let at = format!("{MANIFEST} row {i} ({label} rank {})", row.rank);
        if let Some(first) = seen.insert((label.clone(), row.rank), i) {
            return Err(bad(format!(
                "{at}: {label} rank {} is already listed in row {first}",
                row.rank
            )));
        }
        let sha = row.sha256.to_ascii_lowercase();
        if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(format!(
                "{at}: sha256 `{}` is not 64 hex digits",
                row.sha256
            )));
        }
        let path = inside(&root, &row.file).map_err(|reason| bad(format!("{at}: {reason}")))?;
        let entry = Entry {
            row: i,
            label: label.clone(),
            rank: row.rank,
            path,
            sha256: sha,
        };
        if captures::capture(&label).is_some() {
            entries.push(entry);
        } else {
            skipped.push(entry);
        }
    }
    Ok(Window {
        name,
        root,
        entries,
        skipped,
    })
}

/// The window's key: the last component of `dir` as given (the seed's `Path(dir).name`), so a symlinked
/// window keeps the name it was called by; the resolved directory's name only when the given path has no
/// name of its own (`.`, `..`, `/`), and the resolved path when that has none either.
fn window_name(dir: &Path, root: &Path) -> String {
    dir.file_name()
        .filter(|n| !n.is_empty())
        .or_else(|| root.file_name())
        .map_or_else(
            || root.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
}

/// `file` resolved under `root` (itself resolved), or why it is not inside.
fn inside(root: &Path, file: &str) -> Result<PathBuf, String> {
    if file.is_empty() {
        return Err("`file` is empty".to_string());
    }
    let rel = Path::new(file);
    for c in rel.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => {
                return Err(format!(
                    "file `{file}` is an absolute path; it must be relative to the window"
                ));
            }
            Component::ParentDir => {
                return Err(format!(
                    "file `{file}` has a `..` component; it must stay inside the window"
                ));
            }
            Component::CurDir | Component::Normal(_) => {}
        }
    }
    let joined = root.join(rel);
    let resolved = std::fs::canonicalize(&joined).map_err(|e| format!("file `{file}`: {e}"))?;
    if !resolved.starts_with(root) {
        return Err(format!(
            "file `{file}` leaves the window through a symlink (it resolves to {})",
            resolved.display()
        ));
    }
    if !resolved.is_file() {
        return Err(format!("file `{file}` is not a regular file"));
    }
    Ok(resolved)
}

/// sha256 of a file's stored bytes, lowercase hex.
pub(crate) fn sha256_file(path: &Path) -> Result<String, std::io::Error> {
    // Opened through tool-io so that a file swapped for a FIFO since the manifest was checked cannot block.
    use sha2::Digest;
    use std::io::Read;
    let mut f = tool_io::open_input(path, "trace").map_err(|e| match e {
        tool_io::Error::Input { error, .. } => error,
        other => std::io::Error::other(other.to_string()),
    })?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(kineto_trace::hex(&h.finalize()))
}
