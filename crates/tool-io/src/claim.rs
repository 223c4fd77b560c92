//! Result files: claimed before the work starts, written atomically after it ends.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use crate::identity::{self, FileId};
use crate::{Error, check_finite, kind_name};

/// A result path reserved for this run.
///
/// [`Claim::new`] checks the path (refusing a non-regular file, or an existing file without `overwrite`),
/// creates the missing parent directories, and takes an exclusive lock on a claim file beside the result
/// (`.NAME.claim`, an advisory `flock`): a second run claiming the same name fails at once with
/// [`Error::Busy`] instead of doing its whole work and finding the name taken at the end. The lock is the
/// kernel's, so a run that crashes releases it; the claim file is removed when the claim is dropped.
///
/// A symlink to a regular file is followed: the file it points to is replaced (atomically, in its own
/// directory) and the link stays a link.
///
/// A claim never replaces a file this process reads as an input, whatever its name ([`Error::ResultIsInput`],
/// and [`Error::InputIsResult`] when the input is opened after the claim; see `identity.rs`), and two claims
/// of one process on one file are refused as such ([`Error::ClaimedTwice`]).
#[derive(Debug)]
pub struct Claim {
    /// Where the bytes go: absolute, with a symlink at the given path resolved.
    target: PathBuf,
    /// The path as given (made absolute), for messages.
    path: PathBuf,
    overwrite: bool,
    /// The file at the target when the claim was made (`None`: nothing was there), and after each write the
    /// file written. Only that file is ever replaced: one that appears or replaces it during the run is
    /// someone else's, and is kept.
    found: Mutex<Option<FileId>>,
    lock_path: PathBuf,
    /// Held open for the claim's life: the lock lives as long as this descriptor.
    lock: Option<File>,
    /// This claim in the process's registry of claims (`identity.rs`).
    serial: u64,
}

/// Where a result's bytes went.
///
/// Normally the claimed path ([`Written::path`]). When a file appeared at that path during the run (the
/// wrapped command wrote it, another program did), that file is kept and the result goes beside it under a
/// derived name (`NAME.1.EXT`, the first free one): nothing is lost, and [`Written::notice`] is the line a
/// tool prints on stderr to say so.
#[must_use = "a result written beside its name must be said (Written::notice)"]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    path: PathBuf,
    /// The claimed path, when the result could not go there.
    taken: Option<PathBuf>,
}

impl Written {
    /// Where the bytes are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The claimed path, when a file that appeared there during the run made the result go beside it.
    pub fn taken(&self) -> Option<&Path> {
        self.taken.as_deref()
    }

    /// The line to print on stderr when the result went beside its name; `None` when it is where asked.
    pub fn notice(&self) -> Option<String> {
        self.taken.as_ref().map(|taken| {
            format!(
                "{} was created by someone else during the run and is kept; the result was written beside it, to {}",
                taken.display(),
                self.path.display()
            )
        })
    }
}

/// `dir/NAME.N.EXT` for `dir/NAME.EXT` (`dir/NAME.N` without an extension; a leading dot is part of the name).
/// Built from the name's own bytes (`file_stem` and `extension` split it at the last dot, as described), so
/// two names that are not UTF-8 never meet in a lossy rendering.
pub(crate) fn beside_name(target: &Path, n: u32) -> PathBuf {
    let mut derived = target.file_stem().unwrap_or_default().to_owned();
    derived.push(format!(".{n}"));
    if let Some(ext) = target.extension() {
        derived.push(".");
        derived.push(ext);
    }
    parent_dir(target).join(derived)
}

/// `.NAME` followed by `suffix`, for `target`'s file name NAME, from its bytes (never a lossy rendering: two
/// names that differ only in bytes that are not UTF-8 keep different claim and temporary files).
fn hidden_name(target: &Path, suffix: &str) -> OsString {
    let mut name = OsString::from(".");
    name.push(target.file_name().unwrap_or_default());
    name.push(suffix);
    name
}

/// How many derived names are tried before giving up.
const BESIDE_TRIES: u32 = 1000;

/// What [`inspect`] found at a result path.
enum Found {
    Nothing,
    /// A regular file (followed through symlinks): its resolved path.
    Regular(PathBuf),
}

/// Checks what is at `path` (absolute): nothing, or a regular file the caller may replace.
fn inspect(path: &Path, overwrite: bool) -> Result<Found, Error> {
    let link = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(Error::io(path, "inspect")(e)),
    };
    let meta = if link.file_type().is_symlink() {
        match fs::metadata(path) {
            Ok(m) => m,
            // A dangling or looping symlink is something that is there; writing through it could create a
            // file anywhere, so it is refused with or without `overwrite`, as what it is.
            Err(_) => {
                return Err(Error::DanglingLink {
                    path: path.to_owned(),
                    points_to: fs::read_link(path).unwrap_or_default(),
                });
            }
        }
    } else {
        link
    };
    if meta.is_dir() {
        return Err(Error::IsDirectory {
            path: path.to_owned(),
        });
    }
    if !meta.is_file() {
        return Err(Error::NotRegular {
            path: path.to_owned(),
            kind: kind_name(meta.file_type()),
        });
    }
    if !overwrite {
        return Err(Error::Exists {
            path: path.to_owned(),
        });
    }
    let resolved = fs::canonicalize(path).map_err(Error::io(path, "resolve"))?;
    Ok(Found::Regular(resolved))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// `.NAME.claim` beside `target`.
fn lock_path_for(target: &Path) -> PathBuf {
    parent_dir(target).join(hidden_name(target, ".claim"))
}

/// Opens and locks the claim file, registering the claim (its serial is returned); retries when the file it
/// locked was removed meanwhile by the claim that held it (the lock would then be on an unlinked file nobody
/// else sees).
fn take_lock(path: &Path, lock_path: &Path) -> Result<(File, u64), Error> {
    for _ in 0..8 {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock_path)
            .map_err(Error::io(lock_path, "create the claim file"))?;
        let serial = match identity::try_lock(&f, path) {
            Ok(identity::Locked::Held(serial)) => serial,
            // Held by this very process: the same file named for two outputs.
            Ok(identity::Locked::Twice(first)) => {
                return Err(Error::ClaimedTwice {
                    path: path.to_owned(),
                    first,
                });
            }
            Ok(identity::Locked::Busy) => {
                return Err(Error::Busy {
                    path: path.to_owned(),
                    lock: lock_path.to_owned(),
                });
            }
            Err(e) => return Err(Error::io(lock_path, "lock the claim file")(e)),
        };
        if same_file(&f, lock_path) {
            return Ok((f, serial));
        }
        identity::released(serial);
    }
    Err(Error::Busy {
        path: path.to_owned(),
        lock: lock_path.to_owned(),
    })
}

#[cfg(unix)]
fn same_file(f: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

impl Claim {
    /// Reserves `path` for a result, before any work is done.
    ///
    /// Fails with [`Error::NotRegular`] for anything but a regular file (or a symlink to one) at `path`,
    /// [`Error::IsDirectory`] for a directory, [`Error::Exists`] for an existing file (or a dangling symlink)
    /// without `overwrite`, [`Error::Busy`] while another claim on the same file is held, and
    /// [`Error::Io`] when the directory cannot be created or written. A relative path is made absolute now,
    /// so a run that changes directory still writes where it was asked to.
    pub fn new(path: impl AsRef<Path>, overwrite: bool) -> Result<Claim, Error> {
        let given = path.as_ref();
        let path = std::path::absolute(given).map_err(Error::io(given, "resolve"))?;
        if path.file_name().is_none() || given.as_os_str().as_encoded_bytes().ends_with(b"/") {
            return Err(Error::IsDirectory { path });
        }
        // Checked before creating directories or the claim file, so a refusal leaves nothing behind …
        let target = match inspect(&path, overwrite)? {
            Found::Nothing => path.clone(),
            Found::Regular(resolved) => resolved,
        };
        let found = FileId::at(&target);
        // An input of this run is refused before anything is created.
        identity::replacing(&path, found)?;
        let dir = parent_dir(&target);
        fs::create_dir_all(&dir).map_err(Error::io(&dir, "create the directory"))?;
        let lock_path = lock_path_for(&target);
        let (lock, serial) = take_lock(&path, &lock_path)?;
        // From here, dropping the claim on an error releases it and removes the claim file it made.
        let mut claim = Claim {
            target,
            path,
            overwrite,
            found: Mutex::new(found),
            lock_path,
            lock: Some(lock),
            serial,
        };
        // … and again under the lock: a run that held it may have just written the file.
        inspect(&claim.path, overwrite)?;
        let found = FileId::at(&claim.target);
        *claim
            .found
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner) = found;
        identity::confirm(serial, &claim.path, found)?;
        Ok(claim)
    }

    /// The claimed path (absolute, as given: a symlink is not resolved here).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether an existing file may be replaced.
    pub fn overwrite(&self) -> bool {
        self.overwrite
    }

    /// A temporary file beside the target, with the mode the result will have.
    fn temp(&self) -> Result<tempfile::NamedTempFile, Error> {
        let dir = parent_dir(&self.target);
        let prefix = hidden_name(&self.target, ".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // tempfile creates its files 0600; a result is meant to be read like any file a program writes.
        // Asking for 0666 lets the kernel apply the process umask (0644 under the usual 022) without reading
        // the umask, which cannot be done without changing it for every thread for a moment.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(fs::Permissions::from_mode(0o666));
        }
        let tmp = builder
            .tempfile_in(&dir)
            .map_err(Error::io(&dir, "create a temporary file"))?;
        // A file being replaced keeps its mode: someone may have narrowed or widened it on purpose.
        if self.overwrite
            && let Ok(m) = fs::metadata(&self.target)
            && m.is_file()
        {
            tmp.as_file()
                .set_permissions(m.permissions())
                .map_err(Error::io(tmp.path(), "set the mode"))?;
        }
        Ok(tmp)
    }

    /// Renames a finished, fsynced temporary file into place and makes the rename durable.
    ///
    /// Only the file found at claim time (or nothing) is replaced: a file that appeared at the name since, or
    /// replaced the one found, is someone else's and is kept, and the result goes beside it ([`Written`]).
    fn persist(&self, tmp: tempfile::NamedTempFile) -> Result<Written, Error> {
        let now = match inspect(&self.target, true) {
            Ok(Found::Nothing) => None,
            Ok(Found::Regular(_)) | Err(Error::Exists { .. }) => FileId::at(&self.target),
            // What is there now must still be a regular file (or nothing): a rename over a device or FIFO
            // that appeared since the claim would replace it.
            Err(e) => return Err(e),
        };
        identity::replacing(&self.path, now)?;
        let mut found = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        // The file found at claim time (with `overwrite`), or the one this claim wrote last (a second write).
        let ours = now.is_none() || now == *found;
        let written = if ours && now.is_some() {
            tmp.persist(&self.target)
                .map_err(|e| Error::io(&self.target, "rename into place")(e.error))?;
            Written {
                path: self.path.clone(),
                taken: None,
            }
        } else {
            self.persist_new(tmp)?
        };
        if written.taken.is_none() {
            *found = FileId::at(&self.target);
        }
        drop(found);
        // The rename is durable only once the directory entry is; a directory that cannot be fsynced (some
        // file systems refuse) is not worth losing the result over.
        if let Ok(d) = File::open(parent_dir(&self.target)) {
            let _ = d.sync_all();
        }
        Ok(written)
    }

    /// Renames `tmp` to the target where nothing is there (atomically: never over a file that appears at the
    /// last moment), else to the first free derived name beside it.
    fn persist_new(&self, tmp: tempfile::NamedTempFile) -> Result<Written, Error> {
        let mut tmp = match tmp.persist_noclobber(&self.target) {
            Ok(_) => {
                return Ok(Written {
                    path: self.path.clone(),
                    taken: None,
                });
            }
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => e.file,
            Err(e) => return Err(Error::io(&self.target, "rename into place")(e.error)),
        };
        for n in 1..=BESIDE_TRIES {
            let beside = beside_name(&self.target, n);
            match tmp.persist_noclobber(&beside) {
                Ok(_) => {
                    return Ok(Written {
                        path: beside,
                        taken: Some(self.path.clone()),
                    });
                }
                Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => tmp = e.file,
                Err(e) => return Err(Error::io(&beside, "rename into place")(e.error)),
            }
        }
        Err(Error::Exists {
            path: beside_name(&self.target, BESIDE_TRIES),
        })
    }

    /// Writes `bytes` as the result: temporary file in the same directory, fsync, rename, fsync of the
    /// directory. A file that appeared at the path since the claim is not replaced, `overwrite` or not: the
    /// result goes beside it ([`Written`]). On any error no temporary file is left behind.
    pub fn write_bytes(&self, bytes: &[u8]) -> Result<Written, Error> {
        let mut tmp = self.temp()?;
        tmp.write_all(bytes)
            .map_err(Error::io(&self.target, "write"))?;
        tmp.as_file()
            .sync_all()
            .map_err(Error::io(&self.target, "fsync"))?;
        self.persist(tmp)
    }

    /// Writes `value` as pretty JSON ending in a newline (see [`Claim::write_bytes`]), after checking that
    /// every number in it is finite ([`Error::NonFinite`] names the JSON path; nothing is written).
    pub fn write_json<T: Serialize + ?Sized>(&self, value: &T) -> Result<Written, Error> {
        let bytes = self.json_bytes(value)?;
        self.write_bytes(&bytes)
    }

    /// The JSON text [`Claim::write_json`] would write.
    pub fn json_bytes<T: Serialize + ?Sized>(&self, value: &T) -> Result<Vec<u8>, Error> {
        check_finite(value).map_err(|e| Error::NonFinite {
            path: self.path.clone(),
            json_path: e.json_path,
            value: e.value,
        })?;
        let mut text = serde_json::to_vec_pretty(value).map_err(|e| Error::Serialize {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        text.push(b'\n');
        Ok(text)
    }

    /// Starts a result that is written as it comes (a long sample file): the bytes go to a temporary file
    /// beside the target ([`Stream::in_progress`]), which [`Stream::finish`] fsyncs and renames into place.
    /// Dropping the stream unfinished removes the temporary file; the claim is held until then.
    pub fn stream(self) -> Result<Stream, Error> {
        let tmp = self.temp()?;
        let in_progress = tmp.path().to_owned();
        let (file, tmp_path) = tmp.into_parts();
        Ok(Stream {
            writer: BufWriter::new(file),
            tmp_path: Some(tmp_path),
            in_progress,
            claim: self,
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Removed while still locked, then unlocked by closing: a claim racing with this one either fails on
        // the lock or finds (in `take_lock`) that the file it locked is gone, and makes a new one.
        if let Some(lock) = self.lock.take() {
            identity::released(self.serial);
            let _ = fs::remove_file(&self.lock_path);
            drop(lock);
        }
    }
}

/// A result file being written as its data comes; see [`Claim::stream`].
#[derive(Debug)]
pub struct Stream {
    writer: BufWriter<File>,
    /// Removes the temporary file if the stream is dropped unfinished.
    tmp_path: Option<tempfile::TempPath>,
    in_progress: PathBuf,
    claim: Claim,
}

impl Stream {
    /// The temporary file the data goes to until [`Stream::finish`] (to follow a long run with `tail -f`).
    pub fn in_progress(&self) -> &Path {
        &self.in_progress
    }

    /// The claimed result path.
    pub fn path(&self) -> &Path {
        self.claim.path()
    }

    /// Flushes what was written so far to the file (not to disk), so that a reader of
    /// [`Stream::in_progress`] sees it.
    pub fn flush_to_file(&mut self) -> Result<(), Error> {
        self.writer
            .flush()
            .map_err(Error::io(&self.in_progress, "write"))
    }

    /// Flushes, fsyncs and renames the file into place (the same rules as [`Claim::write_bytes`]).
    pub fn finish(mut self) -> Result<Written, Error> {
        self.flush_to_file()?;
        self.writer
            .get_ref()
            .sync_all()
            .map_err(Error::io(&self.in_progress, "fsync"))?;
        let Some(tmp_path) = self.tmp_path.take() else {
            return Err(Error::io(&self.in_progress, "finish")(io::Error::other(
                "finished twice",
            )));
        };
        // Reassemble the named temporary file (same path, same descriptor) to reuse the claim's rename.
        let file = self
            .writer
            .get_ref()
            .try_clone()
            .map_err(Error::io(&self.in_progress, "finish"))?;
        let tmp = tempfile::NamedTempFile::from_parts(file, tmp_path);
        self.claim.persist(tmp)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_keep_the_extension() {
        let n = |p: &str| beside_name(Path::new(p), 1);
        assert_eq!(n("/r/rec.json"), Path::new("/r/rec.1.json"));
        assert_eq!(n("/r/trace.json.gz"), Path::new("/r/trace.json.1.gz"));
        assert_eq!(n("/r/out"), Path::new("/r/out.1"));
        assert_eq!(n("/r/.hidden"), Path::new("/r/.hidden.1"));
        assert_eq!(n("/r/.hidden.json"), Path::new("/r/.hidden.1.json"));
        assert_eq!(n("/r/dot."), Path::new("/r/dot.1."));
        assert_eq!(
            beside_name(Path::new("/r/s.csv"), 12),
            Path::new("/r/s.12.csv")
        );
    }
}
