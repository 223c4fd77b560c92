//! Result files: claimed before the work starts, written atomically after it ends.

use serde::Serialize;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::finite::check_finite;

/// A result path that was free (or explicitly given up for replacement) when the run started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedOutput {
    path: PathBuf,
    overwrite: bool,
}

impl ClaimedOutput {
    /// The claimed path, made absolute at claim time so that a benchmark changing directory still writes there.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether an existing file may be replaced.
    pub fn overwrite(&self) -> bool {
        self.overwrite
    }

    /// Writes `value` as pretty JSON, atomically (see [`write_json_atomic`]).
    pub fn write_json<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), Error> {
        write_json_atomic(&self.path, value, self.overwrite)
    }
}

/// Claims a result path before any work is done.
///
/// Fails with [`Error::OutputExists`] if something is already at `path` and `overwrite` is false: finding out
/// after an hour's run that the result has nowhere to go (or silently replaces an earlier one, as happened to
/// the seed's serving benchmark) costs the hour. Creates the parent directory and proves it writable by
/// creating and removing a temporary file in it, for the same reason.
pub fn claim_output(path: impl AsRef<Path>, overwrite: bool) -> Result<ClaimedOutput, Error> {
    let path = path.as_ref();
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let path = std::path::absolute(path).map_err(io)?;
    if path.file_name().is_none() {
        return Err(Error::OutputIsDirectory { path });
    }
    // `symlink_metadata`: a dangling symlink is still something that is there.
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => return Err(Error::OutputIsDirectory { path }),
        Ok(_) if !overwrite => return Err(Error::OutputExists { path }),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(Error::Io { path, source }),
    }
    let dir = parent_dir(&path);
    fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    tempfile::Builder::new()
        .prefix(".provenance-claim-")
        .tempfile_in(&dir)
        .map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
    Ok(ClaimedOutput { path, overwrite })
}

/// Writes `value` to `path` as pretty JSON: first to a temporary file in the same directory, flushed to disk,
/// then renamed into place, so that a reader (or a crash) sees the old file or the whole new one, never half.
///
/// Refuses NaN and infinity ([`Error::NonFinite`]) instead of writing them as `null`. Without `overwrite`, a
/// file that appeared at `path` since it was claimed is not replaced ([`Error::OutputExists`]).
pub fn write_json_atomic<T: Serialize + ?Sized>(
    path: &Path,
    value: &T,
    overwrite: bool,
) -> Result<(), Error> {
    check_finite(value, "")?;
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| Error::Serialize {
        what: path.display().to_string(),
        message: e.to_string(),
    })?;
    text.push(b'\n');
    let dir = parent_dir(path);
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".provenance-").suffix(".tmp");
    // tempfile creates its files 0600; a result file is meant to be read by others, like any file a program
    // writes. Asking for 0666 at creation lets the kernel apply the process umask (0644 under the usual 022)
    // without reading the umask, which cannot be done without briefly changing it for every thread.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(&dir).map_err(io)?;
    // A file being replaced keeps its mode (someone may have narrowed or widened it on purpose).
    #[cfg(unix)]
    if overwrite
        && let Ok(m) = fs::metadata(path)
        && m.is_file()
    {
        tmp.as_file().set_permissions(m.permissions()).map_err(io)?;
    }
    tmp.write_all(&text).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    if overwrite {
        tmp.persist(path).map_err(|e| io(e.error))?;
    } else {
        tmp.persist_noclobber(path).map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                Error::OutputExists {
                    path: path.to_owned(),
                }
            } else {
                io(e.error)
            }
        })?;
    }
    // The rename is durable only once the directory entry is; failure here is not worth losing the result over.
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claim_refuses_an_existing_file_unless_overwrite() -> Result<(), Box<dyn std::error::Error>> {
        let d = tempfile::tempdir()?;
        let p = d.path().join("result.json");
        fs::write(&p, "precious")?;
        match claim_output(&p, false) {
            Err(Error::OutputExists { path }) => assert_eq!(path, p),
            other => panic!("expected OutputExists, got {other:?}"),
        }
        assert_eq!(
            fs::read_to_string(&p)?,
            "precious",
            "a refused claim must not touch the file"
        );
        let c = claim_output(&p, true)?;
        assert!(c.overwrite());
        Ok(())
    }

    #[test]
    fn claim_creates_missing_directories_and_leaves_no_litter()
    -> Result<(), Box<dyn std::error::Error>> {
        let d = tempfile::tempdir()?;
        let p = d.path().join("a/b/result.json");
        let c = claim_output(&p, false)?;
        assert!(p.parent().is_some_and(Path::is_dir));
        assert_eq!(fs::read_dir(d.path().join("a/b"))?.count(), 0);
        c.write_json(&json!({"x": 1}))?;
        let back: serde_json::Value = serde_json::from_str(&fs::read_to_string(&p)?)?;
        assert_eq!(back, json!({"x": 1}));
        Ok(())
    }

    #[test]
    fn claim_refuses_a_directory_even_with_overwrite() -> Result<(), Box<dyn std::error::Error>> {
        let d = tempfile::tempdir()?;
        assert!(matches!(
            claim_output(d.path(), true),
            Err(Error::OutputIsDirectory { .. })
        ));
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn claim_refuses_a_dangling_symlink() -> Result<(), Box<dyn std::error::Error>> {
        let d = tempfile::tempdir()?;
        let p = d.path().join("link.json");
        std::os::unix::fs::symlink(d.path().join("nowhere"), &p)?;
        assert!(matches!(
            claim_output(&p, false),
            Err(Error::OutputExists { .. })
        ));
        Ok(())
    }

    /// The mode a plain `File::create` gets here (0666 less the umask), for comparison without reading the umask.
    #[cfg(unix)]
    fn default_mode(dir: &Path) -> Result<u32, Box<dyn std::error::Error>> {
        use std::os::unix::fs::PermissionsExt;
        let reference = dir.join("reference");
        fs::File::create(&reference)?;
        let mode = fs::metadata(&reference)?.permissions().mode() & 0o777;
        fs::remove_file(&reference)?;
        Ok(mode)
    }

    #[cfg(unix)]
    #[test]
    fn results_get_the_mode_of_an_ordinary_file_not_0600() -> Result<(), Box<dyn std::error::Error>>
    {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir()?;
        let expected = default_mode(d.path())?;
        let p = d.path().join("r.json");
        claim_output(&p, false)?.write_json(&json!({"x": 1}))?;
        let mode = fs::metadata(&p)?.permissions().mode() & 0o777;
        assert_eq!(mode, expected, "{mode:o} vs {expected:o}");
        // Under any umask that lets group or others read (the usual 022, 002), so does the result.
        if expected & 0o044 != 0 {
            assert_ne!(mode, 0o600);
        }
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn an_overwritten_result_keeps_its_mode() -> Result<(), Box<dyn std::error::Error>> {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir()?;
        let p = d.path().join("r.json");
        fs::write(&p, "old")?;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640))?;
        claim_output(&p, true)?.write_json(&json!({"x": 2}))?;
        assert_eq!(fs::metadata(&p)?.permissions().mode() & 0o777, 0o640);
        assert_eq!(fs::read_to_string(&p)?.trim(), "{\n  \"x\": 2\n}");
        Ok(())
    }

    #[test]
    fn nan_is_refused_and_nothing_is_written() -> Result<(), Box<dyn std::error::Error>> {
        let d = tempfile::tempdir()?;
        let p = d.path().join("r.json");
        let err = write_json_atomic(&p, &vec![1.0, f64::NAN], false);
        assert!(matches!(err, Err(Error::NonFinite { .. })), "{err:?}");
        assert!(!p.exists());
        assert_eq!(
            fs::read_dir(d.path())?.count(),
            0,
            "no temporary file left behind"
        );
        Ok(())
    }

    #[test]
    fn a_file_that_appeared_after_the_claim_is_not_replaced()
    -> Result<(), Box<dyn std::error::Error>> {
        let d = tempfile::tempdir()?;
        let p = d.path().join("r.json");
        let c = claim_output(&p, false)?;
        fs::write(&p, "someone else's")?;
        assert!(matches!(
            c.write_json(&json!({})),
            Err(Error::OutputExists { .. })
        ));
        assert_eq!(fs::read_to_string(&p)?, "someone else's");
        Ok(())
    }
}
